// What people are told about an incident, as bytes: Alertmanager's v2 alerts and the signed
// webhooks' JSON. Pure: the notifier (service/notifier.h) reads the outbox and sends these.
//
// An alert's labels are its identity in Alertmanager: alertname (Medic + the class in
// CamelCase), incident, class, severity, link, device, zone, plane and owner ("network" for
// link and switch faults, "host" for a host's own faults: slow receivers, PFC storms, a
// failing or silent host; "monitoring" for measurement incidents). A severity change
// resolves the alert with the old severity and fires the one with the new.
#pragma once

#include <string>
#include <vector>

#include "common/time.h"
#include "db/notify_store.h"

namespace medic::service {

std::string owner_of(const db::NotifyEvent& e);
// "link_flap" -> "MedicLinkFlap"
std::string alert_name(const std::string& incident_class);
// The incident's page under `external_url` ("" when there is no external URL).
std::string incident_url(const std::string& external_url, int64_t incident_id);
// One line for a chat room or a pager: "link_flap on rtsw0001:eth1--ctsw0001:eth1
// (critical) waits for approval: <summary>".
std::string one_line(const db::NotifyEvent& e);

// The body of POST /api/v2/alerts for `events`, in order: an open incident fires until
// `now + firing_for` (so that Alertmanager resolves it by itself if medicd stops telling it),
// a closed or dismissed one is resolved at its end. When events of one alert follow each
// other, the last one is what is sent.
std::string alertmanager_body(const std::vector<db::NotifyEvent>& events, const std::string& external_url, Time now,
                              Duration firing_for);

// The JSON body of one webhook: {"event_id", "event", "at", "text", "incident": {...}}.
std::string webhook_body(const db::NotifyEvent& e, const std::string& external_url);

}  // namespace medic::service
