#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <string_view>
#include <vector>

namespace medic {

std::vector<std::string> split(std::string_view s, char sep);
std::string_view trim(std::string_view s);
// A-Z to a-z, other bytes as they are (for case-insensitive protocol words).
std::string ascii_lower(std::string_view s);
std::string join(const std::vector<std::string>& parts, std::string_view sep);
// 0.625 -> "62.5%"
std::string format_percent(double fraction);
// A number as short as it reads: 0.5 -> "0.5", 3600 -> "3600", 1e-06 -> "1e-06".
std::string format_number(double v);
// Quote for messages and logs: "name" with control characters, DEL and bytes that are not
// valid UTF-8 escaped as \xNN, so that what a stranger sent never reaches a log or a JSON
// answer raw. Long text is cut after `max_bytes` with "..." (0: no limit).
std::string quote(std::string_view s, size_t max_bytes = 0);

// The same escaping without the quotes: for messages that carry a stranger's bytes
// inside a sentence (a parser's "last read: ..."), so they are valid UTF-8 and log-safe.
std::string escape_text(std::string_view s, size_t max_bytes = 0);

// Where `s` stops being valid UTF-8 (the offset of the first bad byte), or nullopt when it
// is valid. Overlong forms, surrogates and code points past U+10FFFF are invalid.
std::optional<size_t> utf8_error(std::string_view s);

// "127.0.0.1:8080" -> {"127.0.0.1", 8080}; "[::1]:80" -> {"::1", 80}. nullopt when the port is
// missing, not a number, or above 65535.
std::optional<std::pair<std::string, uint16_t>> parse_host_port(std::string_view s);

}  // namespace medic
