// A random-schedule property test of the remediation workflow against the in-memory store:
// sequences of faults, counters that follow the switches (or lag), people approving,
// marking repaired and dismissing, switches that fail drains, cannot be read, carry calls
// out and lose their answers, or hold calls and carry them out later, after newer ones,
// and medicd crashing and starting again from what the store holds. After every step:
//   - no capacity group is below its floor (judged from what the switches really do);
//   - no link has two unfinished actions;
//   - every link drained at a switch belongs to an action under way, or the record says it
//     is drained by an incident that still owes its undrain (open, or dismissed while its
//     link is still out).
// MEDIC_WORKFLOW_SEQUENCES sets the number of sequences (10,000 by default);
// MEDIC_WORKFLOW_SEED replays one seed (printed on failure).
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "fabric/generator.h"
#include "tests/remediation/workflow_fakes.h"

namespace medic::remediation {
namespace {

using fakes::FakeSignals;
using fakes::MemoryStore;
using fakes::SwitchDriver;
using triage::IncidentClass;
using triage::IncidentState;
using namespace std::chrono_literals;

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != 0 ? std::atoi(v) : fallback;
}

bool is_closed(IncidentState s) { return s == IncidentState::closed || s == IncidentState::dismissed; }

// One sequence: a fresh fabric, store and switches; `steps` random steps.
class Sequence {
 public:
  Sequence(const fabric::Topology& topo, uint64_t seed) : topo_(topo), rng_(seed), capacity_(topo) {
    for (fabric::DeviceId d = 0; d < topo_.devices().size(); ++d) {
      if (!topo_.device(d).is_switch()) continue;
      auto drv = std::make_unique<SwitchDriver>();
      switches_[d] = drv.get();
      drivers_.replace(d, std::move(drv));
    }
    policy_.verify_window = 30s;
    policy_.soak = 20s;
    policy_.per_switch = {0, 1h};
    policy_.fabric = {0, 10min};
    policy_.modes[static_cast<size_t>(IncidentClass::optics)] = Mode::approval;
    // Uplinks of a few ToRs (their groups compete) and the spines' links above them.
    for (fabric::LinkId l = 0; l < topo_.links().size(); ++l) {
      const auto& lk = topo_.link(l);
      if (topo_.device(topo_.port(lk.a).device).is_switch() && topo_.device(topo_.port(lk.b).device).is_switch()) {
        links_.push_back(l);
      }
    }
    start();
  }

  // Runs the steps; returns "" or what broke, with the step and the history.
  std::string run(int steps) {
    for (int step = 0; step < steps; ++step) {
      const std::string did = random_step();
      log_ << step << ": " << did << "\n";
      if (const std::string broken = check(); !broken.empty()) return broken + "\nafter:\n" + log_.str() + record();
    }
    return "";
  }

 private:
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }

  void start() {
    wf_ = std::make_unique<Workflow>(topo_, capacity_, runner_, store_, signals_, policy_, clock_, registry_);
    const Status st = wf_->start();
    ASSERT_TRUE(st.ok()) << st.error();
  }

  bool end_drained(fabric::PortId p) const {
    const auto& port = topo_.port(p);
    const auto it = switches_.find(port.device);
    return it != switches_.end() && it->second->drained.count(port.name) != 0 && it->second->drained.at(port.name);
  }
  bool out_at_switch(fabric::LinkId l) const {
    const auto& lk = topo_.link(l);
    return end_drained(lk.a) || end_drained(lk.b);
  }

  // The counters as the switches make them: nothing on a drained link, traffic elsewhere.
  void counters() {
    for (const fabric::LinkId l : links_) {
      signals_.at(l).pps = out_at_switch(l) ? 0 : 1000;
      signals_.at(l).from = clock_.now();
    }
  }

  std::vector<int64_t> cases_in(std::initializer_list<IncidentState> states) {
    std::vector<int64_t> out;
    for (const auto& [id, c] : store_.cases) {
      for (const auto s : states) {
        if (c.state == s) out.push_back(id);
      }
    }
    return out;
  }

  std::string random_step() {
    const int what = pick(100);
    if (what < 20) {
      // A fault on a link with no open incident.
      const fabric::LinkId l = links_[pick(static_cast<int>(links_.size()))];
      for (const auto& [id, c] : store_.cases) {
        if (c.link == l && !is_closed(c.state)) return tick("fault on a link already open: nothing new");
      }
      const IncidentClass cls = chance(0.2) ? IncidentClass::optics : IncidentClass::link_flap;
      store_.add_incident(next_id_, l, cls);
      wf_->on_update(next_id_, l, cls, detectors::Severity::critical, 1.0, clock_.now(), clock_.now());
      return tick("incident " + std::to_string(next_id_++) + " " + std::string(triage::to_string(cls)) + " on " +
                  topo_.link(l).name);
    }
    if (what < 45) {
      clock_.advance(std::chrono::seconds(1 + pick(40)));
      for (auto& [d, sw] : switches_) sw->settle();  // a late switch's held calls land, within a bound
      if (chance(0.85)) counters();  // else the counters lag behind
      return tick("time passes");
    }
    if (what < 52) {
      const auto waiting = cases_in({IncidentState::pending_approval});
      if (waiting.empty()) return tick("nothing to approve");
      const int64_t id = waiting[pick(static_cast<int>(waiting.size()))];
      store_.cases[id].approved = true;
      return tick("approve " + std::to_string(id));
    }
    if (what < 62) {
      const auto waiting = cases_in({IncidentState::repair_requested, IncidentState::escalated});
      if (waiting.empty()) return tick("nothing to repair");
      const int64_t id = waiting[pick(static_cast<int>(waiting.size()))];
      store_.cases[id].state = IncidentState::repaired;
      return tick("repaired " + std::to_string(id));
    }
    if (what < 67) {
      std::vector<int64_t> open;
      for (const auto& [id, c] : store_.cases) {
        if (!is_closed(c.state)) open.push_back(id);
      }
      if (open.empty()) return tick("nothing to dismiss");
      const int64_t id = open[pick(static_cast<int>(open.size()))];
      store_.cases[id].state = IncidentState::dismissed;
      return tick("dismiss " + std::to_string(id));
    }
    if (what < 75) return toggle(&SwitchDriver::fail, " fails drains", " drains again");
    if (what < 78) return toggle(&SwitchDriver::unreachable, " unreachable", " reachable");
    if (what < 80) return toggle(&SwitchDriver::lost, " acts but its answers are lost", " answers again");
    if (what < 82) return toggle(&SwitchDriver::late, " holds calls and acts on them later", " on time again");
    if (what < 88) {
      // medicd dies and starts again: drain states from the record (the last finished
      // action of each link), then the workflow reloads and reconciles.
      wf_.reset();
      capacity_.clear_drains();
      std::map<fabric::LinkId, bool> drained;
      for (const auto& a : store_.actions) {
        if (!a.end.empty()) drained[a.rec.link] = a.drained_after;
      }
      for (const auto& [l, d] : drained) {
        if (d) capacity_.set_drained(l, true);
      }
      start();
      return "crash and restart";
    }
    return tick("a pass");
  }

  // A random switch starts or stops misbehaving one way.
  std::string toggle(bool SwitchDriver::*way, const char* on, const char* off) {
    auto it = switches_.begin();
    std::advance(it, pick(static_cast<int>(switches_.size())));
    bool& v = it->second->*way;
    v = !v;
    return tick(topo_.device(it->first).name + (v ? on : off));
  }

  // The store and the switches, for a failure's message.
  std::string record() const {
    std::ostringstream out;
    out << "actions:\n";
    for (const auto& a : store_.actions) {
      out << "  " << a.rec.id << " incident " << a.rec.incident_id << " " << to_string(a.rec.kind) << " "
          << topo_.link(a.rec.link).name << " " << (a.end.empty() ? a.rec.state : a.end)
          << (a.drained_after ? " drained" : "") << " " << a.reason << "\n";
    }
    out << "incidents:\n";
    for (const auto& [id, c] : store_.cases) {
      out << "  " << id << " " << topo_.link(c.link).name << " " << triage::to_string(c.state) << " " << c.blocked_reason
          << "\n";
    }
    out << "out at a switch:";
    for (const fabric::LinkId l : links_) {
      if (out_at_switch(l)) out << " " << topo_.link(l).name << (end_drained(topo_.link(l).a) ? "[a]" : "")
                                << (end_drained(topo_.link(l).b) ? "[b]" : "");
    }
    return out.str() + "\n";
  }

  std::string tick(const std::string& what) {
    wf_->tick();
    return what;
  }

  std::string check() {
    // One unfinished action per link.
    std::map<fabric::LinkId, int> unfinished;
    for (const auto& a : store_.actions) {
      if (a.end.empty() && ++unfinished[a.rec.link] > 1) {
        return "link " + topo_.link(a.rec.link).name + " has two unfinished actions";
      }
    }
    // No group below its floor, from what the switches do.
    for (fabric::GroupId g = 0; g < topo_.groups().size(); ++g) {
      const auto& group = topo_.groups()[g];
      double total = 0, in = 0;
      for (const fabric::LinkId l : group.links) {
        total += topo_.link(l).speed_gbps;
        if (!out_at_switch(l)) in += topo_.link(l).speed_gbps;
      }
      if (total > 0 && below_floor(in / total, group.floor)) {
        return "group " + group.name + " below its floor: " + std::to_string(in / total);
      }
    }
    // Every link out at a switch is owed back: an action on it is under way, or the record
    // says it is drained (its last finished action left it so) by an incident not closed.
    std::map<fabric::LinkId, int64_t> drained_by;
    for (const auto& a : store_.actions) {
      if (a.end.empty()) continue;
      if (a.drained_after) {
        drained_by[a.rec.link] = a.rec.incident_id;
      } else {
        drained_by.erase(a.rec.link);
      }
    }
    for (const fabric::LinkId l : links_) {
      if (!out_at_switch(l) || unfinished.count(l) != 0) continue;
      const auto owner = drained_by.find(l);
      if (owner == drained_by.end()) {
        return "link " + topo_.link(l).name + " is drained at a switch and the record says it is not";
      }
      const auto c = store_.cases.find(owner->second);
      if (c == store_.cases.end() || c->second.state == IncidentState::closed) {
        return "link " + topo_.link(l).name + " is drained at a switch and its incident " +
               std::to_string(owner->second) + " no longer owes its undrain";
      }
    }
    return "";
  }

  const fabric::Topology& topo_;
  std::mt19937_64 rng_;
  CapacityModel capacity_;
  DriverSet drivers_{topo_, JsonRpcOptions{}};
  InlineSwitchRunner runner_{topo_, drivers_};
  metrics::Registry registry_;
  std::map<fabric::DeviceId, SwitchDriver*> switches_;
  MemoryStore store_;
  FakeSignals signals_;
  RemediationPolicy policy_;
  SimulatedClock clock_{from_unix_seconds(1'700'000'000)};
  std::unique_ptr<Workflow> wf_;
  std::vector<fabric::LinkId> links_;
  int64_t next_id_ = 1;
  std::ostringstream log_;
};

TEST(WorkflowProperty, RandomSchedulesKeepFloorsOneActionPerLinkAndEveryDrainOwed) {
  const fabric::Topology topo = fabric::generate_clos(*fabric::preset("demo"));
  const int sequences = env_int("MEDIC_WORKFLOW_SEQUENCES", 10000);
  const char* replay = std::getenv("MEDIC_WORKFLOW_SEED");
  const bool one = replay != nullptr && *replay != 0;
  const uint64_t base = one ? std::strtoull(replay, nullptr, 10) : std::random_device{}();
  int run = 0;
  for (int i = 0; i < (one ? 1 : sequences); ++i) {
    const uint64_t seed = base + static_cast<uint64_t>(i);
    Sequence s(topo, seed);
    const std::string broken = s.run(40);
    ASSERT_EQ(broken, "") << "seed " << seed << " (replay: MEDIC_WORKFLOW_SEED=" << seed << ")";
    ++run;
  }
  EXPECT_EQ(run, one ? 1 : sequences);
}

}  // namespace
}  // namespace medic::remediation
