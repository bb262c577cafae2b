// The module rules of docs/architecture.md, checked on the sources: which module may include
// which (no upward include), and the pure core includes no I/O (no HTTP, Asio, libcurl,
// OpenSSL, libpq, sockets).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/testing.h"

namespace medic {
namespace {

namespace fs = std::filesystem;

// The modules each module may include (besides itself), lowest first: the order of
// docs/architecture.md's drawing.
const std::map<std::string, std::set<std::string>>& allowed() {
  static const std::map<std::string, std::set<std::string>> a = {
      {"common", {}},
      {"fabric", {"common"}},
      {"telemetry", {"common", "fabric"}},
      {"probes", {"common", "fabric"}},
      {"slo", {"common"}},
      {"detectors", {"common", "fabric", "telemetry", "probes"}},
      {"triage", {"common", "fabric", "detectors"}},
      {"pipeline", {"common", "fabric", "telemetry", "probes", "detectors", "triage"}},
      {"remediation", {"common", "fabric", "detectors", "triage"}},
      {"snapshot", {"common", "fabric", "telemetry", "detectors", "remediation"}},
      {"db", {"common", "fabric", "detectors", "triage", "remediation", "snapshot", "slo"}},
      {"sim", {"common", "fabric", "probes"}},
      {"service", {"common", "fabric", "telemetry", "probes", "detectors", "triage", "pipeline", "remediation",
                   "snapshot", "slo", "db"}},
      {"cli", {"common", "fabric", "telemetry", "probes", "detectors", "triage", "pipeline", "remediation", "snapshot",
               "slo", "db"}},
  };
  return a;
}

// Headers of a higher module a lower one may still include, each with its reason.
const std::map<std::string, std::set<std::string>>& exceptions() {
  static const std::map<std::string, std::set<std::string>> e = {
      // The repair queue as people see it, shared by medicd's API and `medic queue`.
      // medicd's options and settings, declared once, so that `medic config check` reads a
      // config file exactly as medicd does (medic_daemon_config, not the daemon).
      {"cli", {"service/queue_view.h", "service/options.h"}},
  };
  return e;
}

// Files that are I/O shells inside otherwise pure modules.
bool io_shell(const std::string& module, const std::string& file) {
  static const std::set<std::string> shells = {
      "common/http_server.h", "common/http_server.cpp", "common/http_client.h", "common/http_client.cpp",
      "common/asio.h",        "telemetry/collector.h",  "telemetry/collector.cpp",
      "telemetry/snmp_collector.h", "telemetry/snmp_collector.cpp",  // net-snmp's sessions
      "telemetry/snmp_traps.h", "telemetry/snmp_traps.cpp",          // and its notification receiver
      "telemetry/netsnmp.h", "telemetry/netsnmp.cpp",                // their shared set-up
      "probes/packet.h",      "probes/packet.cpp",      "probes/udp.h",          "probes/udp.cpp",
      "probes/reflector.h",   "probes/reflector.cpp",   "probes/reflector_main.cpp", "probes/sender.h",
      "probes/sender.cpp",    "probes/scheduler.h",     "probes/scheduler.cpp",   "probes/reply_index.h",
      "probes/reply_index.cpp",  // the prober's reply lookup by socket and address
      "remediation/driver.h", "remediation/driver.cpp", "remediation/netns_driver.h",
      "remediation/netns_driver.cpp", "remediation/actions.h", "remediation/actions.cpp",
      "common/token.cpp"};  // the OS's random source and OpenSSL's SHA-256
  return shells.count(module + "/" + file) != 0;
}

// The modules whose code is the functional core: no I/O but in the shells above.
const std::set<std::string> kCore = {"common", "fabric", "telemetry", "probes", "slo", "detectors",
                                     "triage", "pipeline", "remediation", "snapshot"};

// What a core file may not include (Boost.Math is arithmetic: the core may use it).
bool io_include(const std::string& inc) {
  static const std::regex re(
      R"(^(boost/(?!math/)|curl/|openssl/|pqxx|libpq|sys/socket\.h|netinet/|common/asio\.h|common/http_(server|client)\.h|telemetry/(snmp_)?collector\.h|net-snmp/|probes/(packet|udp|reflector|sender|scheduler)\.h|db/))");
  return std::regex_search(inc, re);
}

struct Include {
  std::string file, header;
};

std::vector<Include> includes_of(const std::string& module) {
  std::vector<Include> out;
  const fs::path dir = fs::path(testing::source_dir()) / module;
  static const std::regex inc(R"(^\s*#\s*include\s*[<"]([^>"]+)[>"])");
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string ext = e.path().extension().string();
    if (ext != ".h" && ext != ".cpp") continue;
    std::ifstream in(e.path());
    std::string line;
    while (std::getline(in, line)) {
      std::smatch m;
      if (std::regex_search(line, m, inc)) out.push_back({e.path().filename().string(), m[1].str()});
    }
  }
  return out;
}

TEST(Architecture, NoModuleIncludesAModuleAboveIt) {
  std::vector<std::string> upward;
  size_t checked = 0;
  for (const auto& [module, may] : allowed()) {
    for (const Include& i : includes_of(module)) {
      const size_t slash = i.header.find('/');
      if (slash == std::string::npos) continue;  // a system header
      const std::string target = i.header.substr(0, slash);
      if (allowed().count(target) == 0) continue;  // not one of ours (nlohmann/, prometheus/, ...)
      ++checked;
      if (target == module || may.count(target) != 0) continue;
      const auto ex = exceptions().find(module);
      if (ex != exceptions().end() && ex->second.count(i.header) != 0) continue;
      upward.push_back(module + "/" + i.file + " includes " + i.header);
    }
  }
  EXPECT_GT(checked, 300u) << "the scan found too few includes to mean anything";
  EXPECT_THAT(upward, ::testing::IsEmpty());
}

TEST(Architecture, TheCoreIncludesNoIo) {
  std::vector<std::string> io;
  for (const std::string& module : kCore) {
    for (const Include& i : includes_of(module)) {
      if (io_shell(module, i.file)) continue;
      if (io_include(i.header)) io.push_back(module + "/" + i.file + " includes " + i.header);
    }
  }
  EXPECT_THAT(io, ::testing::IsEmpty());
}

// The rule itself catches what it should (a check that cannot fail proves nothing).
TEST(Architecture, TheRulesCatchAnUpwardIncludeAndIo) {
  EXPECT_TRUE(io_include("boost/asio.hpp"));
  EXPECT_TRUE(io_include("boost/beast/http.hpp"));
  EXPECT_FALSE(io_include("boost/math/special_functions/gamma.hpp"));  // arithmetic, no I/O
  EXPECT_TRUE(io_include("net-snmp/net-snmp-includes.h"));
  EXPECT_TRUE(io_include("telemetry/snmp_collector.h"));
  EXPECT_FALSE(io_include("telemetry/snmp.h"));  // addresses, credentials, decoding: no I/O
  EXPECT_TRUE(io_include("common/http_client.h"));
  EXPECT_TRUE(io_include("probes/scheduler.h"));
  EXPECT_TRUE(io_include("db/incident_store.h"));
  EXPECT_FALSE(io_include("probes/round.h"));
  EXPECT_FALSE(io_include("common/metrics.h"));
  EXPECT_EQ(allowed().at("detectors").count("triage"), 0u);
  EXPECT_EQ(allowed().at("cli").count("service"), 0u);
  EXPECT_FALSE(io_shell("detectors", "probe.cpp"));
}

// What CMake links each library with, followed through every target (written at configure
// time by tests/architecture/CMakeLists.txt): "LIB: DEP DEP ...".
std::map<std::string, std::set<std::string>> link_closures() {
  std::map<std::string, std::set<std::string>> out;
  std::istringstream in(testing::read_file(MEDIC_LINK_CLOSURES_FILE));
  std::string line;
  while (std::getline(in, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::istringstream deps(line.substr(colon + 1));
    std::string d;
    auto& set = out[line.substr(0, colon)];
    while (deps >> d) set.insert(d);
  }
  return out;
}

bool links_io(const std::set<std::string>& closure, std::string* which) {
  for (const std::string& d : closure) {
    // Boost::headers is header-only: what a core file takes from it is io_include's to judge.
    const bool boost_io = d.rfind("Boost::", 0) == 0 && d != "Boost::headers";
    if (d.rfind("OpenSSL::", 0) == 0 || boost_io || d.rfind("CURL::", 0) == 0 ||
        d == "medic_http" || d == "PkgConfig::PQ" || d == "PkgConfig::PQXX" || d == "medic_collector" ||
        d == "medic_probes") {
      *which = d;
      return true;
    }
  }
  return false;
}

TEST(Architecture, TheDetectorsAndThePipelineLinkNoIo) {
  const auto closures = link_closures();
  ASSERT_EQ(closures.count("medic_detectors"), 1u);
  std::string which;
  for (const char* lib : {"medic_detectors", "medic_pipeline"}) {
    const auto& c = closures.at(lib);
    EXPECT_EQ(c.count("medic_telemetry"), 1u) << lib;
    EXPECT_EQ(c.count("medic_probes_core"), 1u) << lib;
    EXPECT_FALSE(links_io(c, &which)) << lib << " links " << which;
  }
  // The check sees I/O where it is: the daemon links it.
  EXPECT_TRUE(links_io(closures.at("medic_service"), &which));
}

TEST(Architecture, TheCliDoesNotLinkTheDaemon) {
  const auto closures = link_closures();
  const auto& cli = closures.at("medic_cli");
  EXPECT_EQ(cli.count("medic_pipeline"), 1u);
  EXPECT_EQ(cli.count("medic_service"), 0u);
  EXPECT_EQ(cli.count("medic_daemon_config"), 1u);
  EXPECT_EQ(closures.at("medic_service").count("medic_pipeline"), 1u);
}

}  // namespace
}  // namespace medic
