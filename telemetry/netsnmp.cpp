#include "telemetry/netsnmp.h"

#include <mutex>

#include <spdlog/spdlog.h>

namespace medic::telemetry {

namespace {

SnmpValue::Type type_of(u_char t) {
  switch (t) {
    case ASN_INTEGER: return SnmpValue::Type::integer;
    case ASN_COUNTER: return SnmpValue::Type::counter32;
    case ASN_COUNTER64: return SnmpValue::Type::counter64;
    case ASN_GAUGE: return SnmpValue::Type::gauge32;
    case ASN_TIMETICKS: return SnmpValue::Type::timeticks;
    case ASN_OCTET_STR: return SnmpValue::Type::octets;
    case ASN_OBJECT_ID: return SnmpValue::Type::object_id;
    case SNMP_NOSUCHOBJECT:
    case SNMP_NOSUCHINSTANCE: return SnmpValue::Type::no_such;
    case SNMP_ENDOFMIBVIEW: return SnmpValue::Type::end_of_view;
    default: return SnmpValue::Type::other;
  }
}

}  // namespace

void init_netsnmp() {
  static std::once_flag once;
  std::call_once(once, [] {
    // net-snmp's own log lines (its MIB loader's complaints about modules this machine does
    // not have: every OID here is numeric) go to medic's log at debug level, not to stderr.
    snmp_register_callback(SNMP_CALLBACK_LIBRARY, SNMP_CALLBACK_LOGGING,
                           [](int, int, void* server_arg, void*) -> int {
                             const auto* m = static_cast<const snmp_log_message*>(server_arg);
                             if (m != nullptr && m->msg != nullptr) spdlog::debug("net-snmp: {}", m->msg);
                             return 0;
                           },
                           nullptr);
    netsnmp_register_loghandler(NETSNMP_LOGHANDLER_CALLBACK, LOG_DEBUG);
    netsnmp_ds_set_boolean(NETSNMP_DS_LIBRARY_ID, NETSNMP_DS_LIB_DONT_READ_CONFIGS, 1);
    netsnmp_ds_set_boolean(NETSNMP_DS_LIBRARY_ID, NETSNMP_DS_LIB_DISABLE_PERSISTENT_LOAD, 1);
    netsnmp_ds_set_boolean(NETSNMP_DS_LIBRARY_ID, NETSNMP_DS_LIB_DISABLE_PERSISTENT_SAVE, 1);
    netsnmp_ds_set_boolean(NETSNMP_DS_LIBRARY_ID, NETSNMP_DS_LIB_MIB_ERRORS, 0);
    netsnmp_ds_set_int(NETSNMP_DS_LIBRARY_ID, NETSNMP_DS_LIB_MIB_WARNINGS, 0);
    netsnmp_ds_set_string(NETSNMP_DS_LIBRARY_ID, NETSNMP_DS_LIB_MIBDIRS, "/nonexistent");
    init_snmp("medic");
  });
}

SnmpValue value_of(const netsnmp_variable_list* v) {
  SnmpValue out;
  out.oid.assign(v->name, v->name + v->name_length);
  out.type = type_of(v->type);
  switch (out.type) {
    case SnmpValue::Type::integer:
      if (v->val.integer != nullptr) out.number = static_cast<uint64_t>(static_cast<int64_t>(*v->val.integer));
      break;
    case SnmpValue::Type::counter32:
    case SnmpValue::Type::gauge32:
    case SnmpValue::Type::timeticks:
      if (v->val.integer != nullptr) out.number = static_cast<uint32_t>(*v->val.integer);
      break;
    case SnmpValue::Type::counter64:
      if (v->val.counter64 != nullptr) {
        out.number = (static_cast<uint64_t>(v->val.counter64->high) << 32) | (v->val.counter64->low & 0xffffffffu);
      }
      break;
    case SnmpValue::Type::octets:
      if (v->val.string != nullptr) out.text.assign(reinterpret_cast<const char*>(v->val.string), v->val_len);
      break;
    case SnmpValue::Type::object_id:
      if (v->val.objid != nullptr) out.object.assign(v->val.objid, v->val.objid + v->val_len / sizeof(oid));
      break;
    default: break;
  }
  return out;
}

}  // namespace medic::telemetry
