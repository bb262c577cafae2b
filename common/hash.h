// Transparent string hashing so maps keyed by std::string can be probed with string_view
// without allocating (the scrape path looks up ~150,000 port names per cycle).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace medic {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  size_t operator()(const std::string& s) const { return std::hash<std::string_view>{}(s); }
  size_t operator()(const char* s) const { return std::hash<std::string_view>{}(s); }
};

template <class V>
using StringMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;

}  // namespace medic
