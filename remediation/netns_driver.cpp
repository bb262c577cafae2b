#include "common/files.h"
#include "remediation/netns_driver.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "common/strings.h"

extern char** environ;

namespace medic::remediation {

using nlohmann::json;

namespace netns {
namespace {

constexpr size_t kMaxOutput = 64u << 20;  // a full routing table in JSON; more is not an `ip` we know

bool has(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

const NextHop* find_path(const std::vector<NextHop>& hops, const NextHop& h) {
  for (const NextHop& x : hops) {
    if (x.same_path(h)) return &x;
  }
  return nullptr;
}

// "default" names both families' default route: spell it out where both may be listed.
std::string describe(int family, const std::string& dst) {
  if (dst == "default") return family == 6 ? "::/0" : "0.0.0.0/0";
  return dst;
}

// A string attribute as `ip` prints it; numbers (an unnamed protocol or scope) become text.
std::optional<std::string> text_of(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  return std::nullopt;
}

// Route metrics `ip route replace` takes back as plain integers. Others ("rtt" is printed
// in its own unit, "features", "congctl") make the route one we leave alone. A locked
// metric ("mtu lock 1400") prints the same as an unlocked one in JSON: the driver reads
// such routes once more as text (shows_locked_metric) and leaves locked ones alone.
const std::vector<std::string> kIntegerMetrics = {"mtu",      "advmss",   "window",   "cwnd",
                                                  "ssthresh", "reordering", "hoplimit", "initcwnd",
                                                  "initrwnd", "quickack", "fastopen_no_cookie"};

}  // namespace

bool Route::same_key(int f, const std::string& d, const std::string& t, int64_t m) const {
  return family == f && dst == d && tos == t && metric == m;
}

Result<std::vector<Route>> parse_routes(const std::string& json_text, int family) {
  const json doc = json::parse(json_text, nullptr, false);
  if (doc.is_discarded()) return Error{"output is not valid JSON"};
  if (!doc.is_array()) return Error{"expected an array, got " + std::string(doc.type_name())};
  std::vector<Route> routes;
  routes.reserve(doc.size());
  for (size_t i = 0; i < doc.size(); ++i) {
    const json& e = doc[i];
    const std::string at = "[" + std::to_string(i) + "]";
    if (!e.is_object()) return Error{at + ": expected an object, got " + std::string(e.type_name())};
    const auto d = e.find("dst");
    if (d == e.end() || !d->is_string() || d->get<std::string>().empty()) return Error{at + ": no \"dst\" string"};
    Route r;
    r.family = family;
    r.dst = d->get<std::string>();
    const std::string rat = at + " (" + r.dst + ")";
    std::string gateway, dev;
    bool have_single = false, have_multi = false, route_onlink = false, route_down = false;
    auto unsupported = [&r](const std::string& why) {
      if (r.unsupported.empty()) r.unsupported = why;
    };
    // The prefix goes back to `ip route replace` as one argument: only "default" or an
    // address with its length, never something `ip` could read as a keyword.
    if (r.dst != "default" && !std::all_of(r.dst.begin(), r.dst.end(), [](char c) {
          return std::isxdigit(static_cast<unsigned char>(c)) || c == '.' || c == ':' || c == '/';
        })) {
      unsupported("destination " + quote(r.dst));
    }
    for (const auto& [key, v] : e.items()) {
      if (key == "dst") continue;
      if (key == "metric") {
        if (!v.is_number_integer() || v.get<int64_t>() < 0) {
          return Error{rat + ": \"metric\": expected a non-negative integer, got " + v.dump()};
        }
        r.metric = v.get<int64_t>();
        r.has_metric = true;
      } else if (key == "tos" || key == "protocol" || key == "scope" || key == "prefsrc" || key == "pref" ||
                 key == "type" || key == "table" || key == "gateway" || key == "dev") {
        // Names `ip` could print as numbers (an unnamed protocol, scope or table) become text;
        // addresses and devices must be strings.
        const bool named = key == "tos" || key == "protocol" || key == "scope" || key == "type" || key == "table";
        const auto t = named ? text_of(v) : (v.is_string() ? std::optional<std::string>(v.get<std::string>()) : std::nullopt);
        if (!t) return Error{rat + ": \"" + key + "\": expected a string, got " + std::string(v.type_name())};
        if (key == "tos") r.tos = *t;
        if (key == "protocol") r.protocol = *t;
        if (key == "scope") r.scope = *t;
        if (key == "prefsrc") r.prefsrc = *t;
        if (key == "pref") r.pref = *t;
        if (key == "type" && *t != "unicast") unsupported("type " + *t);
        if (key == "table" && *t != "main") unsupported("table " + *t);
        if (key == "gateway") {
          gateway = *t;
          have_single = true;
        }
        if (key == "dev") {
          dev = *t;
          have_single = true;
        }
      } else if (key == "flags") {
        if (!v.is_array()) return Error{rat + ": \"flags\": expected an array, got " + std::string(v.type_name())};
        for (const json& f : v) {
          if (!f.is_string()) continue;
          const std::string flag = f.get<std::string>();
          if (flag == "onlink") route_onlink = true;
          if (flag == "dead" || flag == "linkdown") route_down = true;
        }
      } else if (key == "metrics") {
        if (!v.is_array()) return Error{rat + ": \"metrics\": expected an array, got " + std::string(v.type_name())};
        for (const json& m : v) {
          if (!m.is_object()) return Error{rat + ": \"metrics\": expected objects, got " + std::string(m.type_name())};
          for (const auto& [mk, mv] : m.items()) {
            if (has(kIntegerMetrics, mk) && mv.is_number_integer() && mv.get<int64_t>() >= 0) {
              r.metrics.emplace_back(mk, mv.get<int64_t>());
            } else {
              unsupported("metric " + mk);
            }
          }
        }
      } else if (key == "nexthops") {
        if (!v.is_array()) return Error{rat + ": \"nexthops\": expected an array, got " + std::string(v.type_name())};
        have_multi = true;
        for (size_t k = 0; k < v.size(); ++k) {
          const json& h = v[k];
          const std::string hat = rat + ": nexthops[" + std::to_string(k) + "]";
          if (!h.is_object()) return Error{hat + ": expected an object, got " + std::string(h.type_name())};
          const auto hd = h.find("dev");
          if (hd == h.end() || !hd->is_string()) return Error{hat + ": no \"dev\" string"};
          NextHop nh;
          nh.dev = hd->get<std::string>();
          for (const auto& [hk, hv] : h.items()) {
            if (hk == "dev") continue;
            if (hk == "gateway") {
              if (!hv.is_string()) return Error{hat + ": \"gateway\": expected a string, got " + std::string(hv.type_name())};
              nh.gateway = hv.get<std::string>();
            } else if (hk == "weight") {
              if (!hv.is_number_integer() || hv.get<int64_t>() < 1 || hv.get<int64_t>() > 256) {
                return Error{hat + ": \"weight\": expected an integer 1..256, got " + hv.dump()};
              }
              nh.weight = static_cast<int>(hv.get<int64_t>());
            } else if (hk == "flags") {
              if (!hv.is_array()) return Error{hat + ": \"flags\": expected an array, got " + std::string(hv.type_name())};
              for (const json& f : hv) {
                if (!f.is_string()) continue;
                const std::string flag = f.get<std::string>();
                if (flag == "onlink") nh.onlink = true;
                if (flag == "dead" || flag == "linkdown") nh.down = true;
              }
            } else {
              unsupported("nexthop " + hk);  // via (another family), encap, realms, ...
            }
          }
          r.nexthops.push_back(std::move(nh));
        }
      } else {
        // nhid (nexthop objects), encap, expires, src (source routing), realms, ...: a
        // replace would drop or change them, so such a route is left alone.
        unsupported(key);
      }
    }
    if (!have_multi && have_single) r.nexthops.push_back(NextHop{gateway, dev, 1, route_onlink, route_down});
    routes.push_back(std::move(r));
  }
  return routes;
}

DrainPlan plan_drain(const std::vector<Route>& routes, const std::string& interface) {
  DrainPlan plan;
  for (const Route& r : routes) {
    const bool through = std::any_of(r.nexthops.begin(), r.nexthops.end(),
                                     [&](const NextHop& h) { return h.dev == interface; });
    if (!through) continue;
    const bool elsewhere = std::any_of(r.nexthops.begin(), r.nexthops.end(),
                                       [&](const NextHop& h) { return h.dev != interface; });
    if (r.multipath() && elsewhere) {
      if (!r.unsupported.empty()) {
        plan.skipped.push_back(describe(r.family, r.dst) + ": " + r.unsupported);
        continue;
      }
      const bool alive_elsewhere = std::any_of(r.nexthops.begin(), r.nexthops.end(),
                                               [&](const NextHop& h) { return h.dev != interface && !h.down; });
      if (!alive_elsewhere) {
        plan.skipped.push_back(describe(r.family, r.dst) + ": every other next hop is down");
        continue;
      }
      RouteEdit edit{r, {}, {}};
      for (const NextHop& h : r.nexthops) (h.dev == interface ? edit.removed : edit.keep).push_back(h);
      plan.edits.push_back(std::move(edit));
    } else if (r.protocol != "kernel") {
      // Every way out of this route is the interface. Taking the route away would blackhole
      // its traffic rather than move it, so it stays (and the drained link keeps carrying it);
      // on a routed fabric the routing protocol moves such traffic, on static routes nothing does.
      plan.single_path.push_back(describe(r.family, r.dst));
    }
    // The kernel's connected routes of the interface's own addresses stay without comment:
    // the link keeps its addresses so it can still be probed.
  }
  return plan;
}

bool is_multipath_member(const std::vector<Route>& routes, const std::string& interface) {
  const DrainPlan plan = plan_drain(routes, interface);
  return !plan.edits.empty() || !plan.skipped.empty();
}

bool shows_locked_metric(const std::string& ip_route_text) {
  // "198.18.9.0/24 mtu lock 1400 advmss 1300": a metric keyword followed by "lock".
  std::istringstream in(ip_route_text);
  std::string prev, word;
  while (in >> word) {
    if (word == "lock" && has(kIntegerMetrics, prev)) return true;
    prev = word;
  }
  return false;
}

std::vector<std::string> replace_args(const Route& route, const std::vector<NextHop>& hops) {
  std::vector<std::string> a = {route.family == 6 ? "-6" : "-4", "route", "replace", route.dst};
  auto opt = [&a](const char* key, const std::string& value) {
    if (!value.empty()) {
      a.emplace_back(key);
      a.push_back(value);
    }
  };
  opt("tos", route.tos);
  opt("proto", route.protocol);
  opt("scope", route.scope);
  if (route.has_metric) opt("metric", std::to_string(route.metric));
  opt("src", route.prefsrc);
  opt("pref", route.pref);
  for (const auto& [key, value] : route.metrics) {
    a.push_back(key);
    a.push_back(std::to_string(value));
  }
  for (const NextHop& h : hops) {
    a.emplace_back("nexthop");
    opt("via", h.gateway);
    a.emplace_back("dev");
    a.push_back(h.dev);
    a.emplace_back("weight");
    a.push_back(std::to_string(h.weight));
    if (h.onlink) a.emplace_back("onlink");
  }
  return a;
}

namespace {

json hops_json(const std::vector<NextHop>& hops) {
  json a = json::array();
  for (const NextHop& h : hops) {
    a.push_back({{"gateway", h.gateway}, {"dev", h.dev}, {"weight", h.weight}, {"onlink", h.onlink}});
  }
  return a;
}

Result<std::vector<NextHop>> hops_from(const json& v, const std::string& at) {
  if (!v.is_array()) return Error{at + ": expected an array"};
  std::vector<NextHop> out;
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string hat = at + "[" + std::to_string(i) + "]";
    const json& h = v[i];
    if (!h.is_object()) return Error{hat + ": expected an object"};
    NextHop nh;
    const auto dev = h.find("dev");
    if (dev == h.end() || !dev->is_string() || dev->get<std::string>().empty()) {
      return Error{hat + ".dev: expected a string"};
    }
    nh.dev = dev->get<std::string>();
    if (const auto g = h.find("gateway"); g != h.end()) {
      if (!g->is_string()) return Error{hat + ".gateway: expected a string"};
      nh.gateway = g->get<std::string>();
    }
    if (const auto w = h.find("weight"); w != h.end()) {
      if (!w->is_number_integer() || w->get<int64_t>() < 1 || w->get<int64_t>() > 256) {
        return Error{hat + ".weight: expected an integer 1..256"};
      }
      nh.weight = static_cast<int>(w->get<int64_t>());
    }
    if (const auto o = h.find("onlink"); o != h.end()) {
      if (!o->is_boolean()) return Error{hat + ".onlink: expected a boolean"};
      nh.onlink = o->get<bool>();
    }
    out.push_back(std::move(nh));
  }
  return out;
}

}  // namespace

std::string to_json(const SavedDrain& saved) {
  json routes = json::array();
  for (const SavedRoute& r : saved.routes) {
    routes.push_back({{"family", r.family},
                      {"dst", r.dst},
                      {"tos", r.tos},
                      {"metric", r.metric},
                      {"original", hops_json(r.original)},
                      {"removed", hops_json(r.removed)}});
  }
  const json doc = {{"version", 1},
                    {"device", saved.device},
                    {"namespace", saved.netns},
                    {"interface", saved.interface},
                    {"routes", routes},
                    {"single_path", saved.single_path}};
  return doc.dump(2) + "\n";
}

Result<SavedDrain> parse_saved(const std::string& json_text) {
  const json doc = json::parse(json_text, nullptr, false);
  if (doc.is_discarded()) return Error{"not valid JSON"};
  if (!doc.is_object()) return Error{"expected an object, got " + std::string(doc.type_name())};
  if (const auto v = doc.find("version"); v == doc.end() || !v->is_number_integer() || v->get<int64_t>() != 1) {
    return Error{"version: expected 1"};
  }
  SavedDrain s;
  const std::pair<const char*, std::string*> fields[] = {
      {"device", &s.device}, {"namespace", &s.netns}, {"interface", &s.interface}};
  for (const auto& [key, out] : fields) {
    const auto f = doc.find(key);
    if (f == doc.end() || !f->is_string()) return Error{std::string(key) + ": expected a string"};
    *out = f->get<std::string>();
  }
  const auto routes = doc.find("routes");
  if (routes == doc.end() || !routes->is_array()) return Error{"routes: expected an array"};
  for (size_t i = 0; i < routes->size(); ++i) {
    const std::string at = "routes[" + std::to_string(i) + "]";
    const json& r = (*routes)[i];
    if (!r.is_object()) return Error{at + ": expected an object"};
    SavedRoute sr;
    const auto fam = r.find("family");
    if (fam == r.end() || !fam->is_number_integer() || (fam->get<int64_t>() != 4 && fam->get<int64_t>() != 6)) {
      return Error{at + ".family: expected 4 or 6"};
    }
    sr.family = static_cast<int>(fam->get<int64_t>());
    const auto dst = r.find("dst");
    if (dst == r.end() || !dst->is_string() || dst->get<std::string>().empty()) return Error{at + ".dst: expected a string"};
    sr.dst = dst->get<std::string>();
    if (const auto tos = r.find("tos"); tos != r.end()) {
      if (!tos->is_string()) return Error{at + ".tos: expected a string"};
      sr.tos = tos->get<std::string>();
    }
    const auto metric = r.find("metric");
    if (metric == r.end() || !metric->is_number_integer() || metric->get<int64_t>() < 0) {
      return Error{at + ".metric: expected a non-negative integer"};
    }
    sr.metric = metric->get<int64_t>();
    const std::pair<const char*, std::vector<NextHop>*> lists[] = {{"original", &sr.original},
                                                                   {"removed", &sr.removed}};
    for (const auto& [key, out] : lists) {
      const auto f = r.find(key);
      if (f == r.end()) return Error{at + "." + key + ": expected an array"};
      auto hops = hops_from(*f, at + "." + key);
      if (!hops.ok()) return hops.failure();
      *out = std::move(hops).value();
    }
    s.routes.push_back(std::move(sr));
  }
  if (const auto sp = doc.find("single_path"); sp != doc.end()) {
    if (!sp->is_array()) return Error{"single_path: expected an array"};
    for (const json& x : *sp) {
      if (!x.is_string()) return Error{"single_path: expected strings"};
      s.single_path.push_back(x.get<std::string>());
    }
  }
  return s;
}

SavedDrain merge(std::optional<SavedDrain> saved, const DrainPlan& plan, const std::string& device,
                 const std::string& netns, const std::string& interface) {
  SavedDrain out = saved ? std::move(*saved) : SavedDrain{};
  out.device = device;
  out.netns = netns;
  out.interface = interface;
  for (const RouteEdit& e : plan.edits) {
    const Route& r = e.route;
    auto it = std::find_if(out.routes.begin(), out.routes.end(), [&](const SavedRoute& s) {
      return r.same_key(s.family, s.dst, s.tos, s.metric);
    });
    if (it == out.routes.end()) {
      out.routes.push_back(SavedRoute{r.family, r.dst, r.tos, r.metric, r.nexthops, e.removed});
      continue;
    }
    // Saved before (a drain repeated after a crash, or the next hop came back meanwhile):
    // keep the first record of the original weights, add what is new.
    for (const NextHop& h : r.nexthops) {
      if (!find_path(it->original, h)) it->original.push_back(h);
    }
    for (const NextHop& h : e.removed) {
      if (!find_path(it->removed, h)) it->removed.push_back(h);
    }
  }
  for (const std::string& s : plan.single_path) {
    if (!has(out.single_path, s)) out.single_path.push_back(s);
  }
  return out;
}

UndrainPlan plan_undrain(const std::vector<Route>& routes, const SavedDrain& saved) {
  UndrainPlan plan;
  for (const SavedRoute& s : saved.routes) {
    const auto it = std::find_if(routes.begin(), routes.end(),
                                 [&](const Route& r) { return r.same_key(s.family, s.dst, s.tos, s.metric); });
    if (it == routes.end()) {
      plan.missing.push_back(describe(s.family, s.dst));
      continue;
    }
    const Route& r = *it;
    if (!r.unsupported.empty()) {
      plan.missing.push_back(describe(s.family, s.dst) + " (now " + r.unsupported + ")");
      continue;
    }
    std::vector<NextHop> hops;
    for (const NextHop& h : s.original) {
      // Back with its original weight: a route left with one next hop prints no weight.
      if (find_path(r.nexthops, h) || find_path(s.removed, h)) hops.push_back(h);
    }
    for (const NextHop& h : r.nexthops) {
      if (!find_path(s.original, h)) hops.push_back(h);  // added by someone else meanwhile: kept
    }
    bool whole = hops.size() == r.nexthops.size();
    for (const NextHop& h : hops) {
      const NextHop* cur = find_path(r.nexthops, h);
      whole = whole && cur && (cur->weight == h.weight || hops.size() == 1);
    }
    if (!whole) plan.restores.push_back(RouteRestore{r, std::move(hops)});
  }
  return plan;
}

Result<LinkState> parse_link(const std::string& json_text) {
  const json doc = json::parse(json_text, nullptr, false);
  if (doc.is_discarded()) return Error{"output is not valid JSON"};
  if (!doc.is_array() || doc.size() != 1 || !doc[0].is_object()) {
    return Error{"expected an array of one interface, got " + doc.dump().substr(0, 80)};
  }
  const json& l = doc[0];
  LinkState s;
  if (const auto o = l.find("operstate"); o != l.end()) {
    if (!o->is_string()) return Error{"\"operstate\": expected a string"};
    s.operstate = o->get<std::string>();
  }
  if (const auto f = l.find("flags"); f != l.end()) {
    if (!f->is_array()) return Error{"\"flags\": expected an array"};
    for (const json& x : *f) {
      if (x.is_string()) s.flags.push_back(x.get<std::string>());
    }
  }
  return s;
}

bool oper_up(const LinkState& link) {
  return link.operstate == "UP" || (link.operstate == "UNKNOWN" && has(link.flags, "LOWER_UP"));
}

bool valid_interface_name(const std::string& name) {
  if (name.empty() || name.size() > 15 || name == "." || name == "..") return false;
  return std::none_of(name.begin(), name.end(), [](char c) {
    return c == '/' || c == ':' || static_cast<unsigned char>(c) <= ' ' || c == 0x7f;
  });
}

Result<CommandOutput> run_command(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  if (argv.empty() || argv[0].empty()) return Error{"no command"};
  int out[2] = {-1, -1}, err[2] = {-1, -1};
  auto close_all = [&] {
    for (int* fd : {&out[0], &out[1], &err[0], &err[1]}) {
      if (*fd >= 0) ::close(*fd);
      *fd = -1;
    }
  };
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
    const std::string why = std::strerror(errno);
    close_all();
    return Error{"pipe: " + why};
  }
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&fa);
  posix_spawnattr_init(&attr);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);  // dup2 clears close-on-exec on 1 and 2
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  // The child starts with no blocked signals and default handlers, whatever this process set.
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int sig : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD}) sigaddset(&defaults, sig);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, argv[0].c_str(), &fa, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  ::close(out[1]);
  ::close(err[1]);
  out[1] = err[1] = -1;
  if (rc != 0) {
    close_all();
    return Error{"cannot run " + argv[0] + ": " + std::strerror(rc)};
  }

  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto kill_child = [&](const std::string& why) -> Result<CommandOutput> {
    ::kill(pid, SIGKILL);  // by its pid: it is our own child, not yet reaped
    int st = 0;
    while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    close_all();
    return Error{why};
  };
  CommandOutput result;
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      return kill_child("timed out after " + std::to_string(timeout.count()) + " ms (killed)");
    }
    const int n = ::poll(fds, 2, static_cast<int>(std::min<int64_t>(left.count() + 1, 1000)));
    if (n < 0 && errno != EINTR) return kill_child(std::string("poll: ") + std::strerror(errno));
    for (int i = 0; i < 2 && n > 0; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t got = ::read(fds[i].fd, buf, sizeof buf);
      if (got > 0) {
        sinks[i]->append(buf, static_cast<size_t>(got));
        if (sinks[i]->size() > kMaxOutput) return kill_child("more than 64 MiB of output (killed)");
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        fds[i].fd = -1;  // EOF (poll ignores negative descriptors)
        --open_fds;
      }
    }
  }
  // Both pipes closed: the child is exiting; still bounded by the deadline.
  int st = 0;
  while (true) {
    const pid_t w = ::waitpid(pid, &st, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) {
      close_all();
      return Error{std::string("waitpid: ") + std::strerror(errno)};
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return kill_child("timed out after " + std::to_string(timeout.count()) + " ms (killed)");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  close_all();
  result.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
  return result;
}

}  // namespace netns

namespace {

bool valid_netns_name(const std::string& name) {
  if (name.empty() || name.size() > 255 || name == "." || name == "..") return false;
  return std::none_of(name.begin(), name.end(),
                      [](char c) { return c == '/' || static_cast<unsigned char>(c) <= ' ' || c == 0x7f; });
}

std::string find_ip_binary() {
  for (const char* p : {"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"}) {
    if (::access(p, X_OK) == 0) return p;
  }
  return "";
}

std::string short_text(const std::string& s) {
  std::string t(trim(s));
  if (t.size() > 500) t = t.substr(0, 500) + "...";
  return t;
}

// "exit 2: Error: Nexthop has invalid gateway." (what `ip` said, trimmed).
std::string exit_text(const netns::CommandOutput& r) {
  const std::string err = short_text(r.err);
  const std::string how =
      r.exit_code >= 0 ? "exit " + std::to_string(r.exit_code) : "killed by signal " + std::to_string(-r.exit_code);
  return how + (err.empty() ? "" : ": " + err);
}

// The file and its directory entry are on disk before this returns.
Status fsync_dir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Error{"open " + dir + ": " + std::strerror(errno)};
  const int rc = ::fsync(fd);
  const int e = errno;
  ::close(fd);
  if (rc != 0) return Error{"fsync " + dir + ": " + std::strerror(e)};
  return Ok{};
}

}  // namespace

NetnsDriver::NetnsDriver(std::string device, const std::string& url, std::string state_dir,
                         std::chrono::milliseconds ip_timeout)
    : device_(std::move(device)), state_dir_(std::move(state_dir)), timeout_(ip_timeout) {
  if (url.empty()) {
    netns_ = device_;
  } else if (url.rfind("netns:", 0) == 0) {
    netns_ = url.substr(6);
  }
  if (!valid_netns_name(netns_)) {
    throw std::invalid_argument(device_ + ": netns driver url " + quote(url) + " is not netns:NAME");
  }
  ip_binary_ = find_ip_binary();
}

std::string NetnsDriver::state_file(const std::string& interface) const {
  return state_dir_ + "/" + netns_ + "/" + interface + ".json";
}

Error NetnsDriver::failure(const char* op, const std::string& interface, const std::string& what,
                           ErrorKind kind) const {
  const std::string name = netns::valid_interface_name(interface) ? interface : quote(interface);
  return Error{device_ + ": " + op + " " + name + ": " + what, kind};
}

std::string NetnsDriver::command_text(const std::vector<std::string>& args) const {
  return "ip -n " + netns_ + " " + join(args, " ");
}

Result<netns::CommandOutput> NetnsDriver::run_ip(const std::vector<std::string>& args) {
  if (ip_binary_.empty()) {
    return Error{command_text(args) + ": ip (iproute2) not found in /usr/sbin, /sbin, /usr/bin or /bin"};
  }
  std::vector<std::string> argv = {ip_binary_, "-n", netns_};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = netns::run_command(argv, timeout_);
  if (!r.ok()) return Error{command_text(args) + ": " + r.error()};
  return r;
}

Result<std::string> NetnsDriver::ip(const std::vector<std::string>& args) {
  auto r = run_ip(args);
  if (!r.ok()) return r.failure();
  if (r->exit_code != 0) return Error{command_text(args) + ": " + exit_text(*r)};
  return std::move(r->out);
}

Result<netns::LinkState> NetnsDriver::read_link(const std::string& interface) {
  const std::vector<std::string> args = {"-j", "link", "show", "dev", interface};
  auto r = run_ip(args);
  if (!r.ok()) return r.failure();
  if (r->exit_code != 0) {
    if (r->err.find("does not exist") != std::string::npos) {
      return Error{"no interface " + interface + " in namespace " + netns_};
    }
    return Error{command_text(args) + ": " + exit_text(*r)};
  }
  auto link = netns::parse_link(r->out);
  if (!link.ok()) return Error{command_text(args) + ": " + link.error()};
  return link;
}

Result<std::vector<netns::Route>> NetnsDriver::read_routes() {
  std::vector<netns::Route> all;
  for (const int family : {4, 6}) {
    const std::string fam = family == 4 ? "-4" : "-6";
    const std::vector<std::string> args = {"-j", fam, "route", "show", "table", "main"};
    auto r = run_ip(args);
    if (!r.ok()) return r.failure();
    if (r->exit_code != 0) {
      if (family == 6 && r->err.find("not supported") != std::string::npos) continue;  // a kernel without IPv6
      return Error{command_text(args) + ": " + exit_text(*r)};
    }
    // `ip -j` prints nothing at all for an empty table.
    if (trim(r->out).empty()) continue;
    auto routes = netns::parse_routes(r->out, family);
    if (!routes.ok()) return Error{command_text(args) + ": " + routes.error()};
    for (auto& route : *routes) {
      // The JSON hides metric locks: a route with metrics is read once more as text (rare:
      // fabric routes seldom carry metrics) and left alone if it has a lock.
      if (!route.metrics.empty() && route.unsupported.empty() && route.protocol != "kernel") {
        auto text = ip({fam, "route", "show", "table", "main", "exact", route.dst});
        if (!text.ok()) return text.failure();
        if (netns::shows_locked_metric(*text)) route.unsupported = "a locked metric";
      }
      all.push_back(std::move(route));
    }
  }
  return all;
}

Result<std::optional<netns::SavedDrain>> NetnsDriver::load_state(const std::string& interface) {
  const std::string path = state_file(interface);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    if (ec) return Error{"state file " + path + ": " + ec.message()};
    return std::optional<netns::SavedDrain>{};
  }
  auto text = read_data_file(path, 1 << 20);
  if (!text.ok()) return Error{"state file " + text.error()};
  auto saved = netns::parse_saved(*text);
  if (!saved.ok()) return Error{"state file " + path + ": " + saved.error()};
  if (saved->interface != interface || saved->netns != netns_) {
    return Error{"state file " + path + " is for " + saved->netns + ":" + saved->interface};
  }
  return std::optional<netns::SavedDrain>(std::move(saved).value());
}

Status NetnsDriver::write_state(const netns::SavedDrain& saved) {
  const std::string dir = state_dir_ + "/" + netns_;
  const std::string path = state_file(saved.interface);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Error{"cannot create " + dir + ": " + ec.message()};
  // Temp file, fsync, rename, fsync the directory: the file is either the old or the new
  // record, never half of one, and it is on disk before any route changes.
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Error{"cannot write state file " + tmp + ": " + std::strerror(errno)};
  const std::string text = netns::to_json(saved);
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = n < 0 ? std::strerror(errno) : "short write";
      ::close(fd);
      ::unlink(tmp.c_str());
      return Error{"cannot write state file " + tmp + ": " + why};
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    ::unlink(tmp.c_str());
    return Error{"cannot fsync state file " + tmp + ": " + why};
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    return Error{"cannot rename " + tmp + " to " + path + ": " + why};
  }
  return fsync_dir(dir);
}

Status NetnsDriver::remove_state(const std::string& interface) {
  const std::string path = state_file(interface);
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return Error{"cannot remove state file " + path + ": " + std::strerror(errno)};
  }
  return fsync_dir(state_dir_ + "/" + netns_);
}

Result<netns::LinkState> NetnsDriver::check(const std::string& interface) {
  if (!netns::valid_interface_name(interface)) return Error{"invalid interface name"};
  struct stat st;
  if (::stat(("/var/run/netns/" + netns_).c_str(), &st) != 0) {
    return Error{"namespace " + netns_ + " not found (no /var/run/netns/" + netns_ + ")"};
  }
  return read_link(interface);
}

Result<InterfaceState> NetnsDriver::state_of(const std::string& interface, const netns::LinkState& link) {
  auto routes = read_routes();
  if (!routes.ok()) return routes.failure();
  std::error_code ec;
  const bool recorded = std::filesystem::exists(state_file(interface), ec);
  if (ec) return Error{"state file " + state_file(interface) + ": " + ec.message()};
  // Drained: out of every multipath route, and drained by us (a state file says what to put
  // back). An interface that is no ECMP member but was never drained is undrained.
  return InterfaceState{interface, recorded && !netns::is_multipath_member(*routes, interface), netns::oper_up(link)};
}

Result<InterfaceState> NetnsDriver::get_state(const std::string& interface) {
  std::lock_guard lock(mu_);
  auto link = check(interface);
  if (!link.ok()) return failure("get_state", interface, link.error());
  auto st = state_of(interface, *link);
  if (!st.ok()) return failure("get_state", interface, st.error());
  return st;
}

Result<InterfaceState> NetnsDriver::drain(const std::string& interface) {
  std::lock_guard lock(mu_);
  const auto fail = [&](const std::string& m) { return failure("drain", interface, m); };
  auto link = check(interface);
  if (!link.ok()) return fail(link.error());
  auto routes = read_routes();
  if (!routes.ok()) return fail(routes.error());
  const netns::DrainPlan plan = netns::plan_drain(*routes, interface);
  // All or nothing: an interface that would stay in some ECMP route (one `ip route replace`
  // cannot reproduce, or one whose other next hops are down) is not drained at all.
  if (!plan.skipped.empty()) {
    return fail("still in route(s) that cannot be rewritten: " + join(plan.skipped, "; ") + " (nothing changed)");
  }
  auto saved = load_state(interface);
  if (!saved.ok()) return fail(saved.error());  // a damaged record is never overwritten
  const bool had_record = saved->has_value();
  const netns::SavedDrain merged = netns::merge(*saved, plan, device_, netns_, interface);
  // The record goes to disk before the first route changes: a crash anywhere after this
  // leaves a record an undrain restores from.
  if (!had_record || merged != **saved) {
    if (auto st = write_state(merged); !st.ok()) return fail(st.error());
  }
  std::vector<std::string> failures;
  for (const netns::RouteEdit& e : plan.edits) {
    if (auto r = ip(netns::replace_args(e.route, e.keep)); !r.ok()) failures.push_back(r.error());
  }
  if (!plan.edits.empty() || !had_record) {
    spdlog::info("{}: drained {} in namespace {}: {} multipath route(s) rewritten, {} single-path route(s) left in place",
                 device_, interface, netns_, plan.edits.size() - failures.size(), plan.single_path.size());
  }
  // Past this point routes may have changed: a failure says so (indeterminate), so the
  // caller puts the interface back and counts it drained until it knows.
  const auto changed = [&](const std::string& m) { return failure("drain", interface, m, ErrorKind::indeterminate); };
  if (!failures.empty()) {
    // The record stays: undrain puts back whatever was removed.
    return changed(std::to_string(failures.size()) + " of " + std::to_string(plan.edits.size()) +
                   " route(s) not rewritten: " + failures.front());
  }
  auto st = state_of(interface, *link);
  if (!st.ok()) return plan.edits.empty() ? Result<InterfaceState>(fail(st.error())) : changed(st.error());
  return st;
}

Result<InterfaceState> NetnsDriver::undrain(const std::string& interface) {
  std::lock_guard lock(mu_);
  const auto fail = [&](const std::string& m) { return failure("undrain", interface, m); };
  auto link = check(interface);
  if (!link.ok()) return fail(link.error());
  auto saved = load_state(interface);
  if (!saved.ok()) return fail(saved.error());
  // No record: never drained by us, or undrained already. Nothing to put back.
  if (saved->has_value()) {
    auto routes = read_routes();
    if (!routes.ok()) return fail(routes.error());
    const netns::UndrainPlan plan = netns::plan_undrain(*routes, **saved);
    for (const std::string& m : plan.missing) {
      spdlog::warn("{}: undrain {}: route {} is gone from namespace {}; its next hops are not restored", device_,
                   interface, m, netns_);
    }
    std::vector<std::string> failures;
    for (const netns::RouteRestore& r : plan.restores) {
      if (auto out = ip(netns::replace_args(r.route, r.hops)); !out.ok()) failures.push_back(out.error());
    }
    if (!failures.empty()) {
      // The record stays so that a retry restores the rest. Some routes may be back.
      return failure("undrain", interface,
                     std::to_string(failures.size()) + " of " + std::to_string(plan.restores.size()) +
                         " route(s) not restored: " + failures.front(),
                     ErrorKind::indeterminate);
    }
    if (auto st = remove_state(interface); !st.ok()) {
      return failure("undrain", interface, st.error(), ErrorKind::indeterminate);
    }
    spdlog::info("{}: undrained {} in namespace {}: {} route(s) restored", device_, interface, netns_,
                 plan.restores.size());
  }
  auto st = state_of(interface, *link);
  if (!st.ok()) return fail(st.error());
  return st;
}

}  // namespace medic::remediation
