// What the SNMP collector and the notification receiver share of net-snmp: its one-time
// process-wide set-up and the reading of a variable into an SnmpValue. net-snmp keeps
// process-wide state (its USM user table above all), so every call into it is made on one
// thread: medicd's poll loop.
#pragma once

#include <net-snmp/net-snmp-config.h>
#include <net-snmp/net-snmp-includes.h>

#include "telemetry/snmp.h"

namespace medic::telemetry {

// No configuration files, no MIB files (every OID here is numeric), no persistent state
// written, net-snmp's own log lines to medic's log at debug level. Once per process.
void init_netsnmp();

SnmpValue value_of(const netsnmp_variable_list* v);

}  // namespace medic::telemetry
