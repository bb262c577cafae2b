// Config files medicd must refuse at start-up, each with the one message it prints after
// "PROGRAM: " and status 2: shared by medicd's own test (the real binary, before any
// database) and `medic config check`'s, which must say exactly the same.
#pragma once

#include <string>
#include <vector>

namespace medic::testing {

// In `file` and `message`, {DIR} stands for the test's directory (which holds demo.json, a
// good topology) and {FILE} for the config file. `flags` follow `--config FILE` on medicd's
// command line: a case with flags is medicd's alone (`medic config check` takes none).
struct BadConfig {
  std::string name;
  std::string file;  // "": no file at all
  std::vector<std::string> flags;
  std::string message;
};

inline const std::vector<BadConfig>& bad_configs() {
  static const std::string topo = "topology = \"{DIR}/demo.json\"\n";
  static const std::vector<BadConfig> cases = {
      {"UnknownKey", topo + "pol-interval = 1.0\n", {},
       "{FILE}:2: unknown key \"pol-interval\" (did you mean \"poll-interval\"?)"},
      {"UnknownKeyNearNone", topo + "# nothing like it\nzzz = 1\n", {}, "{FILE}:3: unknown key \"zzz\""},
      {"UnknownKeyShortOfItsName", topo + "webhook-secret = \"s3cret\"\n", {},
       "{FILE}:2: unknown key \"webhook-secret\" (did you mean \"webhook-secret-file\"?)"},
      {"Section", topo + "\n[notify]\nwebhook = [\"http://127.0.0.1:9/\"]\n", {},
       "{FILE}:3: [notify]: sections are not supported: every key is at the top level"},
      {"DottedKey", topo + "notify.webhook = \"http://127.0.0.1:9/\"\n", {},
       "{FILE}:2: dotted key \"notify.webhook\": sections are not supported: every key is at the top level"},
      {"StringForANumber", topo + "poll-interval = \"abc\"\n", {}, "{FILE}:2: poll-interval = \"abc\": expected a number"},
      {"BareWordForANumber", topo + "poll-interval = abc\n", {},
       "{FILE}:2: poll-interval = abc: not a TOML value (a string is written in double quotes)"},
      {"FractionForAWholeNumber", topo + "scrape-concurrency = 1.5\n", {},
       "{FILE}:2: scrape-concurrency = 1.5: expected a whole number"},
      {"NegativeCount", topo + "pending-limit = -1\n", {}, "{FILE}:2: pending-limit = -1: expected a whole number, not negative"},
      {"NotTrueOrFalse", topo + "dry-run = \"yes\"\n", {}, "{FILE}:2: dry-run = \"yes\": expected true or false"},
      {"NumberForAString", topo + "http = 9400\n", {}, "{FILE}:2: http = 9400: expected a string (in double quotes)"},
      {"ArrayForOneValue", topo + "poll-interval = [1, 2]\n", {}, "{FILE}:2: poll-interval = [1, 2]: expected a number"},
      {"ArrayOfNumbersForURLs", topo + "webhook = [1, 2]\n", {}, "{FILE}:2: webhook = [1, 2]: expected an array of strings"},
      {"NotFinite", topo + "poll-interval = nan\n", {}, "{FILE}:2: poll-interval = nan: expected a finite number"},
      {"OutOfRangeInTheFile", topo + "poll-interval = 0.001\n", {},
       "{FILE}:2: poll-interval = 0.001: must be within [0.05, 3600] seconds"},
      {"OutOfRangeFromAFlag", topo + "poll-interval = 2\n", {"--poll-interval", "0.001"},
       "--poll-interval must be within [0.05, 3600] seconds"},
      {"TooManyMapWorkers", topo + "map-workers = 100\n", {},
       "{FILE}:2: map-workers = 100: must be within [0, 64], or -1 for half the cores"},
      {"NotificationSettingOutOfRange", topo + "alert-repeat = 5\n", {},
       "{FILE}:2: alert-repeat = 5: must be within [10, 3600] seconds"},
      {"NotificationSettingOutOfRangeFromAFlag", topo, {"--notify-timeout", "90"},
       "--notify-timeout must be within [0.1, 60] seconds"},
      {"BadURLInAnArray", topo + "alertmanager = [\"http://127.0.0.1:9093\", \"ftp://am:9093\"]\n", {},
       "{FILE}:2: alertmanager = [\"http://127.0.0.1:9093\", \"ftp://am:9093\"]: ftp://am:9093: expected an http:// or "
       "https:// URL"},
      {"BadURLFromAFlag", topo, {"--webhook", "hooks.example/medic"},
       "--webhook hooks.example/medic: expected an http:// or https:// URL"},
      {"ExternalURLWithAQuery", topo + "external-url = \"https://medic.example/?x=1\"\n", {},
       "{FILE}:2: external-url = \"https://medic.example/?x=1\": a base URL takes no query or fragment"},
      {"MissingSecretFile",
       topo + "webhook = [\"https://hooks.example/medic\"]\nwebhook-secret-file = \"{DIR}/no-secret\"\n", {},
       "{FILE}:3: webhook-secret-file = \"{DIR}/no-secret\": {DIR}/no-secret: cannot open: No such file or directory"},
      {"BadAddress", topo + "http = \"localhost\"\n", {},
       "{FILE}:2: http = \"localhost\": expected ADDR:PORT, e.g. 127.0.0.1:9400"},
      {"BadLogLevel", topo + "log-level = \"verbose\"\n", {},
       "{FILE}:2: log-level = \"verbose\": verbose not in {trace,debug,info,warn,error}"},
      {"MissingCA", topo + "driver-ca = \"{DIR}/no-ca.pem\"\n", {},
       "{FILE}:2: driver-ca = \"{DIR}/no-ca.pem\": File does not exist: {DIR}/no-ca.pem"},
      {"MissingFile", "", {}, "{FILE}: cannot open: No such file or directory"},
      {"MalformedLine", topo + "poll-interval 1.0\n", {}, "{FILE}:2: expected KEY = VALUE, found: poll-interval 1.0"},
      {"NoValue", topo + "poll-interval =  # later\n", {}, "{FILE}:2: poll-interval: no value after \"=\""},
      {"UnterminatedString", "topology = \"{DIR}/demo.json\n", {},
       "{FILE}:1: topology = \"{DIR}/demo.json: unterminated string"},
      {"UnterminatedArray", topo + "alertmanager = [\"http://127.0.0.1:9093\",\n  # more to come\n", {},
       "{FILE}:2: alertmanager: unterminated array (no \"]\")"},
      {"TextAfterTheValue", topo + "poll-interval = 1.0 2.0\n", {},
       "{FILE}:2: poll-interval = 1.0: unexpected text after the value: 2.0"},
      {"SetTwice", topo + "poll-interval = 1\npoll-interval = 2\n", {},
       "{FILE}:3: poll-interval is set twice (first on line 2)"},
      {"ConfigInTheFile", topo + "config = \"/etc/medic/other.toml\"\n", {},
       "{FILE}:2: config: not allowed in a config file (--config is for the command line)"},
      {"NoTopology", "poll-interval = 2\n", {}, "{FILE}: topology is required: set it in the file or pass --topology"},
      {"NotUTF8", topo + "name = \"\xff\"\n", {}, "{FILE}:2: not UTF-8 (a TOML file is UTF-8 text)"},
      {"ArrayOfArrays", topo + "webhook = [[[[[[\"http://127.0.0.1:9/\"]]]]]]\n", {},
       "{FILE}:2: webhook[0]: an array inside an array: no option takes one"},
      {"ASecretIsNeverShown", topo + "api-token = 12345\n", {},
       "{FILE}:2: api-token = (not shown): expected a string (in double quotes)"},
      {"AURLsPasswordIsNeverShown", topo + "alertmanager = [\"ftp://am:pa55w0rd@am.example:9093\"]\n", {},
       "{FILE}:2: alertmanager = [\"ftp://am:***@am.example:9093\"]: ftp://am:***@am.example:9093: expected an http:// or "
       "https:// URL"},
      {"TopologyFileMissing", "topology = \"{DIR}/nope.json\"\n", {},
       "{DIR}/nope.json: cannot open: No such file or directory"},
  };
  return cases;
}

inline std::string expand(std::string text, const std::string& dir, const std::string& file) {
  for (const auto& [from, to] : {std::pair<std::string, std::string>{"{DIR}", dir}, {"{FILE}", file}}) {
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
      text.replace(at, from.size(), to);
    }
  }
  return text;
}

}  // namespace medic::testing
