#include "common/result.h"

namespace medic {

std::string_view to_string(ErrorKind k) {
  switch (k) {
    case ErrorKind::internal: return "internal";
    case ErrorKind::invalid: return "invalid";
    case ErrorKind::not_found: return "not_found";
    case ErrorKind::conflict: return "conflict";
    case ErrorKind::unavailable: return "unavailable";
    case ErrorKind::forbidden: return "forbidden";
    case ErrorKind::indeterminate: return "indeterminate";
  }
  return "?";
}

}  // namespace medic
