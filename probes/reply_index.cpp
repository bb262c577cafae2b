#include "probes/reply_index.h"

#include <algorithm>
#include <cstring>

namespace medic::probes {

bool ReplyIndex::host_of(const Endpoint& e, uint8_t& family, uint8_t (&addr)[16]) {
  std::memset(addr, 0, sizeof addr);
  if (e.addr.ss_family == AF_INET) {
    family = 4;
    std::memcpy(addr, &reinterpret_cast<const sockaddr_in*>(&e.addr)->sin_addr, 4);
    return true;
  }
  if (e.addr.ss_family == AF_INET6) {
    family = 6;
    std::memcpy(addr, &reinterpret_cast<const sockaddr_in6*>(&e.addr)->sin6_addr, 16);
    return true;
  }
  family = 0;
  return false;
}

void ReplyIndex::add(uint32_t session, uint16_t ssid, uint32_t socket, const Endpoint& target) {
  Entry e;
  e.session = session;
  e.socket = socket;
  e.ssid = ssid;
  host_of(target, e.family, e.addr);
  entries_.push_back(e);
  first_.clear();
}

void ReplyIndex::finish() {
  std::stable_sort(entries_.begin(), entries_.end(), [](const Entry& a, const Entry& b) {
    return a.ssid != b.ssid ? a.ssid < b.ssid : a.session < b.session;
  });
  first_.assign(65536 + 1, 0);
  for (const Entry& e : entries_) ++first_[e.ssid + 1];
  for (size_t s = 1; s < first_.size(); ++s) first_[s] += first_[s - 1];
}

uint32_t ReplyIndex::find(uint16_t ssid, uint32_t socket, const Endpoint& from) const {
  if (first_.empty()) return kNoSession;
  uint8_t family;
  uint8_t addr[16];
  if (!host_of(from, family, addr)) return kNoSession;
  const size_t len = family == 4 ? 4 : 16;
  for (uint32_t i = first_[ssid]; i < first_[ssid + 1]; ++i) {
    const Entry& e = entries_[i];
    if (e.socket == socket && e.family == family && std::memcmp(e.addr, addr, len) == 0) return e.session;
  }
  return kNoSession;
}

}  // namespace medic::probes
