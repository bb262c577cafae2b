-- The circuit breaker counts incidents opened in its window on every poll: an index on
-- detected_at keeps that a range scan however many incidents the table holds.
CREATE INDEX incidents_detected ON incidents (detected_at);
