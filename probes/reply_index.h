// Which session a reflected packet answers, from what arrived: the SSID the packet carries,
// the socket it came in on and the address it came from (the session's reflector). SSIDs
// are 16 bits and a prober may run more sessions than that, so an SSID alone is not enough.
// Built once when the sessions are planned; a lookup touches two cache lines or so, not the
// sessions themselves (medicd's prober does one per reply, up to tens of thousands a second).
#pragma once

#include <cstdint>
#include <vector>

#include "probes/huge_pages.h"
#include "probes/udp.h"

namespace medic::probes {

class ReplyIndex {
 public:
  static constexpr uint32_t kNoSession = UINT32_MAX;

  // Session `session` sends from socket `socket` to `target` with `ssid`. Sessions are
  // added in any order; finish() before the first find().
  void add(uint32_t session, uint16_t ssid, uint32_t socket, const Endpoint& target);
  void finish();

  // The session with that SSID, socket and reflector host (the port is not compared: a
  // reflector may answer from another); the lowest-numbered one when several match;
  // kNoSession when none does.
  uint32_t find(uint16_t ssid, uint32_t socket, const Endpoint& from) const;

  // Asks the processor for where find(ssid, ...) starts, ahead of the call.
  void prefetch(uint16_t ssid) const {
    if (!first_.empty()) __builtin_prefetch(&first_[ssid]);
  }

  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    uint32_t session = 0, socket = 0;
    uint8_t family = 0;
    uint8_t addr[16] = {};  // IPv4: the first 4
    uint16_t ssid = 0;
  };
  static bool host_of(const Endpoint& e, uint8_t& family, uint8_t (&addr)[16]);
  HugeVector<Entry> entries_;     // by SSID, then session
  HugeVector<uint32_t> first_;    // entries_ of SSID s: [first_[s], first_[s + 1])
};

}  // namespace medic::probes
