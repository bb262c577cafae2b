#include "common/json.h"

#include "common/strings.h"

namespace medic {

std::string line_col(std::string_view text, size_t byte) {
  size_t line = 1, col = 1;
  for (size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(col);
}

Result<nlohmann::json> parse_json(std::string_view text, const std::string& source) {
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {
    // nlohmann's byte is 1-based and points just past the offending character.
    const size_t at = e.byte > 0 ? e.byte - 1 : 0;
    std::string what = e.what();
    // nlohmann says "[json.exception.parse_error.101] parse error at line 1, column 10: syntax
    // error ..."; the place is given once, in front, and its own wording follows.
    if (const size_t p = what.find("parse error"); p != std::string::npos) what = what.substr(p);
    if (what.rfind("parse error at line ", 0) == 0) {
      if (const size_t colon = what.find(": "); colon != std::string::npos) what = what.substr(colon + 2);
    }
    return Error{source + ": " + line_col(text, at) + ": invalid JSON: " + escape_text(what, 300)};
  } catch (const nlohmann::json::exception& e) {  // numbers out of range (1e999)
    return Error{source + ": invalid JSON: " + escape_text(e.what(), 300)};
  }
}

}  // namespace medic
