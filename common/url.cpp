#include "common/url.h"

#include <algorithm>

namespace medic {

UrlAuthority url_authority(std::string_view text, size_t scheme, std::string_view stops) {
  constexpr size_t npos = std::string_view::npos;
  UrlAuthority a;
  a.start = scheme == npos ? 0 : std::min(scheme + 3, text.size());
  a.end = std::min(text.find_first_of(stops, a.start), text.size());
  const size_t at = a.end == 0 ? npos : text.rfind('@', a.end - 1);
  if (at != npos && at >= a.start) a.at = at;
  return a;
}

std::string hide_url_passwords(std::string text, std::string_view stops, bool bare) {
  constexpr size_t npos = std::string::npos;
  auto hide = [&](size_t scheme) {
    const UrlAuthority a = url_authority(text, scheme, stops);
    if (a.at == npos) return;
    const size_t colon = text.find(':', a.start);
    if (colon < a.at) text.replace(colon + 1, a.at - colon - 1, "***");
  };
  const size_t first = text.find("://");
  if (first == npos && bare) hide(npos);
  for (size_t s = first; s != npos; s = text.find("://", s + 3)) hide(s);
  return text;
}

}  // namespace medic
