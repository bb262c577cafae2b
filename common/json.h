#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/result.h"

namespace medic {

// How a JSON value is named in an error message: "expected a string, got an array".
inline const char* json_type_name(const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::null: return "null";
    case nlohmann::json::value_t::object: return "an object";
    case nlohmann::json::value_t::array: return "an array";
    case nlohmann::json::value_t::string: return "a string";
    case nlohmann::json::value_t::boolean: return "a boolean";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned: return "an integer";
    case nlohmann::json::value_t::number_float: return "a number";
    default: return "an unsupported value";
  }
}

// "line 3, column 14" of a byte offset into text.
std::string line_col(std::string_view text, size_t byte);

// The document as text, never throwing: a string that is not valid UTF-8 (from a switch, a
// file, a request) has its bad bytes replaced by U+FFFD instead of aborting the caller.
inline std::string json_text(const nlohmann::json& j, int indent = -1) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Parses a JSON document; a syntax error (or a number out of range) names the source, the
// line and the column: "fabric.json: line 3, column 14: invalid JSON: parse error ...".
Result<nlohmann::json> parse_json(std::string_view text, const std::string& source);

}  // namespace medic
