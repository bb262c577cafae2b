#include "service/options.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <ostream>
#include <stdexcept>
#include <string_view>
#include <type_traits>

#include "common/files.h"
#include "common/strings.h"
#include "common/url.h"

namespace medic::service {

namespace {

// A value as an error shows it: a secret's never, a URL's password neither.
std::string shown_value(const std::string& key, const std::string& raw, size_t max_bytes) {
  if (key == "api-token" || key == "driver-token") return "(not shown)";
  return escape_text(hide_url_passwords(raw, "/?#\"' ,]"), max_bytes);
}

// A config file bigger than this is not a config file.
constexpr size_t kMaxConfigBytes = 1u << 20;

// What a config file gets wrong: "FILE:LINE: what".
class FileProblem : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The value kinds medicd's options take, and what a file's value must be for each.
enum class Kind { real, integer, text, texts, flag };

struct KeyKind {
  Kind kind = Kind::text;
  int64_t lo = 0, hi = 0;  // integer
};

template <class T>
KeyKind kind_of() {
  if constexpr (std::is_same_v<T, double>) {
    return {Kind::real};
  } else if constexpr (std::is_same_v<T, std::string>) {
    return {Kind::text};
  } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
    return {Kind::texts};
  } else {
    static_assert(std::is_integral_v<T>, "an option of a kind the config file cannot hold");
    const auto hi = static_cast<uint64_t>(std::numeric_limits<T>::max());
    return {Kind::integer, static_cast<int64_t>(std::numeric_limits<T>::min()),
            static_cast<int64_t>(std::min<uint64_t>(hi, std::numeric_limits<int64_t>::max()))};
  }
}

// One TOML value of the subset medicd reads: strings, integers, floats, booleans and arrays
// of them (no tables, no dates, no multi-line strings).
struct Value {
  enum Type { string, integer, real, boolean, array } type = string;
  std::string text;  // a string's characters
  int64_t integer_value = 0;
  double real_value = 0;
  bool boolean_value = false;
  std::vector<Value> items;
  std::string raw;  // as written (an array: its items as written, one line)
};

struct Entry {
  std::string key;
  int line = 0;
  Value value;
};

bool bare_key_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// Digits with TOML's underscores (each between two digits) taken out; nullopt when an
// underscore stands elsewhere.
std::optional<std::string> without_underscores(std::string_view s, bool hex) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '_') {
      out += s[i];
      continue;
    }
    const auto digit = [hex](char c) {
      return (hex ? std::isxdigit(static_cast<unsigned char>(c)) : std::isdigit(static_cast<unsigned char>(c))) != 0;
    };
    if (i == 0 || i + 1 == s.size() || !digit(s[i - 1]) || !digit(s[i + 1])) return std::nullopt;
  }
  return out;
}

// A TOML integer or float as written: 3, -7, 1_000, 0x1F, 0.5, 1e-3, inf, nan.
std::optional<Value> number(std::string_view token) {
  Value v;
  v.raw = std::string(token);
  std::string_view body = token;
  const bool negative = !body.empty() && body[0] == '-';
  const bool signed_ = !body.empty() && (body[0] == '-' || body[0] == '+');
  if (signed_) body.remove_prefix(1);
  if (body == "inf" || body == "nan") {
    v.type = Value::real;
    v.real_value = body == "inf" ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
    if (negative) v.real_value = -v.real_value;
    return v;
  }
  if (body.size() > 2 && body[0] == '0' && (body[1] == 'x' || body[1] == 'o' || body[1] == 'b')) {
    if (signed_) return std::nullopt;
    const int base = body[1] == 'x' ? 16 : body[1] == 'o' ? 8 : 2;
    const auto digits = without_underscores(body.substr(2), base == 16);
    if (!digits || digits->empty()) return std::nullopt;
    uint64_t u = 0;
    const auto [end, ec] = std::from_chars(digits->data(), digits->data() + digits->size(), u, base);
    if (ec != std::errc() || end != digits->data() + digits->size() ||
        u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return std::nullopt;
    }
    v.type = Value::integer;
    v.integer_value = static_cast<int64_t>(u);
    return v;
  }
  const auto plain = without_underscores(body, false);
  if (!plain || plain->empty() || !std::isdigit(static_cast<unsigned char>((*plain)[0]))) return std::nullopt;
  const std::string& p = *plain;
  // No leading zeros ("007"), and a point has digits on both sides ("1." and ".5" are not TOML).
  if (p.size() > 1 && p[0] == '0' && std::isdigit(static_cast<unsigned char>(p[1]))) return std::nullopt;
  if (const size_t dot = p.find('.'); dot != std::string::npos) {
    if (dot + 1 >= p.size() || !std::isdigit(static_cast<unsigned char>(p[dot + 1]))) return std::nullopt;
  }
  const std::string full = (negative ? "-" : "") + p;
  const bool is_integer = p.find_first_not_of("0123456789") == std::string::npos;
  if (is_integer) {
    int64_t i = 0;
    const auto [end, ec] = std::from_chars(full.data(), full.data() + full.size(), i);
    if (ec != std::errc() || end != full.data() + full.size()) return std::nullopt;
    v.type = Value::integer;
    v.integer_value = i;
    return v;
  }
  if (p.find_first_not_of("0123456789.eE+-") != std::string::npos) return std::nullopt;
  double d = 0;
  const auto [end, ec] = std::from_chars(full.data(), full.data() + full.size(), d);
  if (ec != std::errc() || end != full.data() + full.size()) return std::nullopt;
  v.type = Value::real;
  v.real_value = d;
  return v;
}

// Reads the TOML subset of a config file, entry by entry, each key checked (by `check_key`)
// as soon as it is read so that a misspelt key is reported before its value.
class TomlReader {
 public:
  using KeyCheck = std::function<void(const std::string& key, int line)>;

  TomlReader(std::string text, std::string file) : file_(std::move(file)) {
    // CRLF line ends read as LF; a lone CR is a control character like any other.
    text_.reserve(text.size());
    for (size_t i = 0; i < text.size(); ++i) {
      if (text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n') continue;
      text_ += text[i];
    }
    if (text_.rfind("\xEF\xBB\xBF", 0) == 0) pos_ = 3;  // a byte-order mark
  }

  std::vector<Entry> entries(const KeyCheck& check_key) {
    std::vector<Entry> out;
    if (const auto bad = utf8_error(text_)) {
      line_ = 1 + static_cast<int>(std::count(text_.begin(), text_.begin() + static_cast<ptrdiff_t>(*bad), '\n'));
      fail("not UTF-8 (a TOML file is UTF-8 text)");
    }
    while (true) {
      skip_blank();
      if (at_end()) break;
      const char c = text_[pos_];
      if (c == '\n') {
        new_line();
        continue;
      }
      if (c == '#') {
        skip_comment();
        continue;
      }
      if (c == '[') fail(escape_text(line_text(), 200) + ": sections are not supported: every key is at the top level");
      const size_t key_start = pos_;
      while (!at_end() && bare_key_char(text_[pos_])) ++pos_;
      const std::string key = text_.substr(key_start, pos_ - key_start);
      skip_blank();
      if (key.empty() || at_end() || (text_[pos_] != '=' && text_[pos_] != '.')) {
        fail("expected KEY = VALUE, found: " + shown_value(key, line_text(), 200));
      }
      if (text_[pos_] == '.') {
        fail("dotted key " + quote(trim(line_text().substr(0, line_text().find('='))), 200) +
             ": sections are not supported: every key is at the top level");
      }
      ++pos_;  // '='
      skip_blank();
      const int line = line_;
      check_key(key, line);
      if (at_end() || text_[pos_] == '\n' || text_[pos_] == '#') fail(key + ": no value after \"=\"");
      Value v = value(key);
      skip_blank();
      if (!at_end() && text_[pos_] == '#') {
        skip_comment();
      } else if (!at_end() && text_[pos_] != '\n') {
        fail(key + " = " + shown_value(key, v.raw, 200) + ": unexpected text after the value: " +
             shown_value(key, rest_of_line(), 200));
      }
      out.push_back(Entry{key, line, std::move(v)});
    }
    return out;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw FileProblem(file_ + ":" + std::to_string(line_) + ": " + what);
  }
  bool at_end() const { return pos_ >= text_.size(); }
  void new_line() {
    ++pos_;
    ++line_;
    line_start_ = pos_;
  }
  void skip_blank() {
    while (!at_end() && (text_[pos_] == ' ' || text_[pos_] == '\t')) ++pos_;
  }
  void skip_comment() {
    while (!at_end() && text_[pos_] != '\n') ++pos_;
  }
  // Blanks, comments and line ends (inside an array).
  void skip_space() {
    while (true) {
      skip_blank();
      if (at_end()) return;
      if (text_[pos_] == '#') {
        skip_comment();
      } else if (text_[pos_] == '\n') {
        new_line();
      } else {
        return;
      }
    }
  }
  std::string line_text() const {
    const size_t end = text_.find('\n', line_start_);
    return std::string(trim(std::string_view(text_).substr(line_start_, end == std::string::npos ? end : end - line_start_)));
  }
  std::string rest_of_line() const {
    const size_t end = text_.find('\n', pos_);
    return std::string(trim(std::string_view(text_).substr(pos_, end == std::string::npos ? end : end - pos_)));
  }

  Value value(const std::string& path) {
    const char c = text_[pos_];
    if (c == '"' || c == '\'') return string(path, c);
    if (c == '[') return array(path);
    if (c == '{') fail(path + " = " + shown_value(path, rest_of_line(), 200) + ": inline tables are not supported");
    const size_t start = pos_;
    while (!at_end() && std::string_view(" \t\n#,]").find(text_[pos_]) == std::string_view::npos) ++pos_;
    const std::string token = text_.substr(start, pos_ - start);
    if (token == "true" || token == "false") {
      Value v;
      v.type = Value::boolean;
      v.boolean_value = token == "true";
      v.raw = token;
      return v;
    }
    if (auto n = number(token)) return *n;
    if (token.find_first_not_of("+-0123456789_") == std::string::npos &&
        std::count_if(token.begin(), token.end(), [](char c) { return c >= '0' && c <= '9'; }) > 18) {
      fail(path + " = " + shown_value(path, token, 200) + ": not a 64-bit integer");
    }
    fail(path + " = " + shown_value(path, token, 200) + ": not a TOML value (a string is written in double quotes)");
  }

  Value string(const std::string& path, char quote_char) {
    const size_t start = pos_;
    if (text_.compare(pos_, 3, std::string(3, quote_char)) == 0) {
      fail(path + " = " + shown_value(path, rest_of_line(), 200) + ": multi-line strings are not supported");
    }
    ++pos_;
    Value v;
    v.type = Value::string;
    auto unterminated = [&] {
      pos_ = start;
      fail(path + " = " + shown_value(path, rest_of_line(), 200) + ": unterminated string");
    };
    while (true) {
      if (at_end() || text_[pos_] == '\n') unterminated();
      const char c = text_[pos_];
      if (c == quote_char) {
        ++pos_;
        break;
      }
      if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f) {
        fail(path + ": a control character in a string (write it as an escape such as \\t)");
      }
      if (c == '\\' && quote_char == '"') {
        escape(path, v.text);
        continue;
      }
      v.text += c;
      ++pos_;
    }
    v.raw = text_.substr(start, pos_ - start);
    return v;
  }

  // At a backslash inside a "string": appends what it stands for.
  void escape(const std::string& path, std::string& out) {
    const size_t start = pos_;
    ++pos_;
    if (at_end() || text_[pos_] == '\n') fail(path + ": unterminated string");
    const char e = text_[pos_++];
    switch (e) {
      case 'b': out += '\b'; return;
      case 't': out += '\t'; return;
      case 'n': out += '\n'; return;
      case 'f': out += '\f'; return;
      case 'r': out += '\r'; return;
      case '"': out += '"'; return;
      case '\\': out += '\\'; return;
      case 'u':
      case 'U': {
        const size_t n = e == 'u' ? 4 : 8;
        uint32_t cp = 0;
        const char* first = text_.data() + pos_;
        const auto [end, ec] = std::from_chars(first, first + std::min(n, text_.size() - pos_), cp, 16);
        if (ec == std::errc() && end == first + n && cp != 0 && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF)) {
          pos_ += n;
          append_utf8(out, cp);
          return;
        }
        break;
      }
      default:
        break;
    }
    const size_t shown = std::min<size_t>(e == 'u' ? 6 : e == 'U' ? 10 : 2, text_.size() - start);
    fail(path + ": invalid escape " + escape_text(text_.substr(start, shown)) + " in a string");
  }

  Value array(const std::string& path) {
    const int first_line = line_;
    ++pos_;  // '['
    Value v;
    v.type = Value::array;
    while (true) {
      skip_space();
      if (at_end()) {
        line_ = first_line;
        fail(path + ": unterminated array (no \"]\")");
      }
      if (text_[pos_] == ']') {
        ++pos_;
        break;
      }
      const std::string item_path = path + "[" + std::to_string(v.items.size()) + "]";
      // No option takes an array of arrays: refused here, before any depth can pile up.
      if (text_[pos_] == '[') fail(item_path + ": an array inside an array: no option takes one");
      v.items.push_back(value(item_path));
      skip_space();
      if (!at_end() && text_[pos_] == ',') {
        ++pos_;
      } else if (!at_end() && text_[pos_] != ']') {
        fail(item_path + " = " + shown_value(item_path, v.items.back().raw, 200) + ": expected \",\" or \"]\" after it, found: " +
             escape_text(rest_of_line(), 200));
      }
    }
    std::vector<std::string> raws;
    for (const auto& i : v.items) raws.push_back(i.raw);
    v.raw = "[" + join(raws, ", ") + "]";
    return v;
  }

  std::string text_;
  std::string file_;
  size_t pos_ = 0;
  size_t line_start_ = 0;
  int line_ = 1;
};

// What an option of kind `k` makes of `v`: the words CLI11 is handed, or why it cannot take it.
std::string inputs_for(const KeyKind& k, const Value& v, std::vector<std::string>& inputs) {
  switch (k.kind) {
    case Kind::real:
      if (v.type == Value::integer) {
        inputs = {std::to_string(v.integer_value)};
        return "";
      }
      if (v.type != Value::real) return "expected a number";
      if (!std::isfinite(v.real_value)) return "expected a finite number";
      {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.17g", v.real_value);
        inputs = {buf};
      }
      return "";
    case Kind::integer:
      if (v.type != Value::integer) return "expected a whole number";
      if (v.integer_value < k.lo) {
        return k.lo == 0 ? "expected a whole number, not negative" : "expected a whole number of at least " + std::to_string(k.lo);
      }
      if (v.integer_value > k.hi) return "expected a whole number of at most " + std::to_string(k.hi);
      inputs = {std::to_string(v.integer_value)};
      return "";
    case Kind::text:
      if (v.type != Value::string) return "expected a string (in double quotes)";
      inputs = {v.text};
      return "";
    case Kind::texts:
      if (v.type == Value::string) {
        inputs = {v.text};
        return "";
      }
      if (v.type != Value::array) return "expected an array of strings";
      inputs.clear();
      for (const auto& i : v.items) {
        if (i.type != Value::string) return "expected an array of strings";
        inputs.push_back(i.text);
      }
      return "";
    case Kind::flag:
      if (v.type != Value::boolean) return "expected true or false";
      inputs = {v.boolean_value ? "true" : "false"};
      return "";
  }
  return "";
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

}  // namespace

// CLI11's App, able to forget everything a parse left behind: App::clear() keeps the list of
// options in the order they were given (parse_order), one more entry every parse.
class ReusableApp : public CLI::App {
 public:
  using CLI::App::App;
  void clear_all() {
    clear();
    parse_order_.clear();
  }
};

struct DaemonOptions::Impl {
  std::string program;
  ReusableApp app{"medicd: finds bad links in a RoCE fabric, drains them when capacity allows, records SLOs"};
  DaemonSettings s;
  std::string log_level = "info";
  std::string driver_token_file, api_token, api_token_file, webhook_secret_file, api_token_read;
  bool no_standby = false, no_probe = false;
  std::map<std::string, KeyKind> keys;  // every key a config file may hold
  int config_given = 0;
  // The config file: read (and checked to be a regular file) when --config is parsed.
  std::string file, text;
  size_t file_settings = 0;
  struct FromFile {
    int line = 0;
    std::string raw;
    bool list = false;
  };
  std::map<std::string, FromFile> from_file;  // the keys whose value was the file's (no flag given)

  // Every value as a new DaemonOptions has it, so each parse starts from the same place
  // (the options keep their bindings: only the values bound are reset).
  void reset() {
    s = DaemonSettings{};
    if (const char* env = std::getenv("MEDIC_DB_URL")) s.db_url = env;
    log_level = "info";
    for (std::string* v : {&driver_token_file, &api_token, &api_token_file, &webhook_secret_file, &api_token_read, &file,
                           &text}) {
      v->clear();
    }
    no_standby = no_probe = false;
    config_given = 0;
    file_settings = 0;
    from_file.clear();
    app.clear_all();
  }

  template <class T>
  CLI::Option* add(const std::string& flag, T& value, const std::string& help) {
    keys[flag.substr(2)] = kind_of<T>();
    return app.add_option(flag, value, help);
  }
  CLI::Option* add_flag(const std::string& flag, bool& value, const std::string& help) {
    keys[flag.substr(2)] = {Kind::flag};
    return app.add_flag(flag, value, help);
  }

  // "FILE:LINE: key = RAW: reason" for a key the file set; a list names the one value.
  std::string at_line(const std::string& key, const std::string& value, const std::string& reason) const {
    const FromFile& f = from_file.at(key);
    return file + ":" + std::to_string(f.line) + ": " + key + " = " + shown_value(key, f.raw, 300) + ": " +
           (f.list && !value.empty() ? value + ": " : "") + reason;
  }


  // The key of `flag` ("--poll-interval") when its value came from the file.
  std::optional<std::string> file_key(const std::string& flag) const {
    if (flag.rfind("--", 0) != 0 || from_file.count(flag.substr(2)) == 0) return std::nullopt;
    return flag.substr(2);
  }

  // A secret as medicd reads it, an error about its file named by the line that gave it.
  std::string secret(const std::string& flag_value, const std::string& secret_file, const char* env,
                     const std::string& flag) const {
    auto r = read_secret(flag_value, secret_file, env, flag);
    if (r.ok()) return *r;
    const std::string prefix = flag + "-file: ";
    if (const auto key = file_key(flag + "-file"); key && r.error().rfind(prefix, 0) == 0) {
      throw std::invalid_argument(at_line(*key, "", r.error().substr(prefix.size())));
    }
    throw std::invalid_argument(r.error());
  }

  // What CLI11 refused about a value of the file, as "FILE:LINE: ..."; nullopt for the
  // command line's own errors.
  std::optional<std::string> file_message(const CLI::ParseError& e) const {
    const std::string what = e.what();
    if (dynamic_cast<const CLI::ValidationError*>(&e) != nullptr && what.rfind("--config: ", 0) == 0) {
      return what.substr(10);  // "PATH: cannot open: ...", "--config given twice: ..."
    }
    if (file.empty()) return std::nullopt;
    if (dynamic_cast<const CLI::RequiredError*>(&e) != nullptr && what.rfind("--", 0) == 0) {
      const std::string key = what.substr(2, what.find(' ') - 2);
      if (keys.count(key) != 0) return file + ": " + key + " is required: set it in the file or pass --" + key;
    }
    // CLI11 names the option in one of three places: "--key: reason" (a validator),
    // "Could not convert: --key = ..." or "... is not an allowed value for --key".
    for (const auto& [key, f] : from_file) {
      const std::string flag = "--" + key;
      if (what.rfind(flag + ": ", 0) == 0) return at_line(key, "", what.substr(flag.size() + 2));
      if (what.rfind("Could not convert: " + flag + " = ", 0) == 0) return at_line(key, "", "cannot be converted");
      const std::string tail = " for " + flag;
      if (what.size() > tail.size() && what.compare(what.size() - tail.size(), tail.size(), tail) == 0) {
        return at_line(key, "", what);
      }
    }
    return std::nullopt;
  }
};

namespace {

// CLI11's config reader for medicd: the TOML subset above, every key and value checked
// against the option it sets before CLI11 sees it.
class ConfigReader : public CLI::Config {
 public:
  explicit ConfigReader(DaemonOptions::Impl* m) : m_(m) {}

  std::string to_config(const CLI::App*, bool, bool, std::string) const override { return ""; }

  // CLI11 opens the file itself; what is parsed is the text the --config check read (a
  // regular file within the size limit: a FIFO would hang a plain reader).
  std::vector<CLI::ConfigItem> from_config(std::istream&) const override {
    auto& m = *m_;
    m.from_file.clear();
    std::map<std::string, int> seen;
    auto check_key = [&](const std::string& key, int line) {
      const auto problem = [&](const std::string& what) {
        return FileProblem(m.file + ":" + std::to_string(line) + ": " + what);
      };
      if (key == "config") throw problem("config: not allowed in a config file (--config is for the command line)");
      if (m.keys.count(key) == 0) throw problem("unknown key " + quote(key) + suggestion(key));
      if (const auto it = seen.find(key); it != seen.end()) {
        throw problem(key + " is set twice (first on line " + std::to_string(it->second) + ")");
      }
      seen.emplace(key, line);
    };
    const std::vector<Entry> entries = TomlReader(m.text, m.file).entries(check_key);
    std::vector<CLI::ConfigItem> items;
    for (const Entry& e : entries) {
      const KeyKind& k = m.keys.at(e.key);
      CLI::ConfigItem item;
      item.name = e.key;
      const std::string why = inputs_for(k, e.value, item.inputs);
      if (!why.empty()) {
        throw FileProblem(m.file + ":" + std::to_string(e.line) + ": " + e.key + " = " + shown_value(e.key, e.value.raw, 300) +
                          ": " + why);
      }
      const CLI::Option* opt = m.app.get_option_no_throw("--" + e.key);
      if (opt != nullptr && opt->empty()) {
        m.from_file[e.key] = {e.line, e.value.raw, k.kind == Kind::texts};
      }
      // An empty list sets nothing: the option keeps its default (none).
      if (!item.inputs.empty()) items.push_back(std::move(item));
    }
    m.file_settings = entries.size();
    return items;
  }

 private:
  // " (did you mean "poll-interval"?)" for the nearest key, when one is near.
  std::string suggestion(const std::string& key) const {
    const std::string lower = ascii_lower(key);
    std::string best;
    size_t best_distance = std::string::npos;
    for (const auto& [known, kind] : m_->keys) {
      size_t d = edit_distance(lower, known);
      if (known.rfind(lower + "-", 0) == 0) d = std::min<size_t>(d, 1);  // "webhook-secret" for "webhook-secret-file"
      if (d < best_distance) {
        best_distance = d;
        best = known;
      }
    }
    if (best.empty() || best_distance > std::max<size_t>(2, key.size() / 3)) return "";
    return " (did you mean " + quote(best) + "?)";
  }

  DaemonOptions::Impl* m_;
};

}  // namespace

DaemonOptions::DaemonOptions(std::string program) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.program = std::move(program);
  m.app.name("medicd");
  DaemonSettings& s = m.s;
  m.reset();
  m.app.config_formatter(std::make_shared<ConfigReader>(&m));
  m.app.set_config("--config", "",
                   "TOML file of these options, keyed by their long names (poll-interval = 1.0); a flag given here "
                   "overrides it")
      ->trigger_on_parse()
      ->check(CLI::Validator(
          [&m](std::string& path) -> std::string {
            // CLI11 says "--config: " and what this returns; the message is what this returns.
            // A second --config would quietly replace the first: one file is all there is.
            if (++m.config_given > 1) return "--config given twice: one file only";
            if (path.empty()) return "--config \"\": no file name";
            auto text = read_data_file(path, kMaxConfigBytes);
            if (!text.ok()) return text.error();
            m.file = path;
            m.text = std::move(*text);
            return "";
          },
          ""))
      ->type_name("FILE");
  m.add("--topology", s.topology_path, "topology JSON file")->required();
  m.add("--db", s.db_url, "PostgreSQL URL (default: $MEDIC_DB_URL)");
  m.add("--counter-map", s.counter_map_path, "counter name map (default: data/counter_map.json)");
  m.add("--poll-interval", s.poll_interval_s, "seconds between polls of every switch");
  m.add("--scrape-timeout", s.scrape_timeout_s, "seconds before a switch's answer is given up on");
  m.add("--scrape-concurrency", s.scrape_concurrency, "switches scraped at once");
  m.add("--map-workers", s.map_workers,
        "threads parsing and mapping the answers while the rest arrive (-1: half the cores, 1 to 8; 0: on the poll "
        "thread)");
  m.add("--detectors", s.detectors_path, "detector thresholds (default: data/detectors.json)");
  m.add("--device-fault-links", s.device_fault_links,
        "failing links of one switch within 2 minutes that make one switch_fault incident");
  m.add("--reopen-window", s.reopen_window_s, "seconds within which a closed incident's fault reopens it");
  m.add("--backoff-max", s.backoff_max_s, "longest wait in seconds before retrying a failing device");
  m.add("--run-for", s.run_for_s, "stop after this many seconds (0: until SIGINT/SIGTERM)");
  m.add_flag("--dry-run", s.dry_run, "never touch a switch: record what would be drained");
  m.add("--http", s.http_listen, "serve /healthz, /metrics, the repair queue page and API on ADDR:PORT");
  m.add("--driver-token", s.driver_token,
        "bearer token for the switches' JSON-RPC drain API (visible in ps: prefer --driver-token-file or "
        "$MEDIC_DRIVER_TOKEN)");
  m.add("--driver-token-file", m.driver_token_file, "file holding the drain API's bearer token");
  m.add("--driver-ca", s.driver_ca,
        "PEM CA bundle to verify the switches' https:// drain API with (default: the system's CAs)")
      ->check(CLI::ExistingFile);
  m.add("--capacity", s.capacity_path, "capacity floors per group kind and drain budget (default: data/capacity.json)");
  m.add("--policy", s.policy_path, "remediation policy (default: data/remediation.json)");
  m.add("--snmp-credentials", s.snmp_credentials_path,
        "JSON file of the SNMP credentials for switches polled at snmp:// (default: $MEDIC_SNMP_COMMUNITY, or "
        "$MEDIC_SNMP_USER with $MEDIC_SNMP_AUTH_PASSWORD and $MEDIC_SNMP_PRIV_PASSWORD)");
  m.add("--snmp-trap-listen", s.snmp_trap_listen,
        "receive SNMP notifications on ADDR:PORT (UDP): linkDown/linkUp from the switches polled at snmp:// count "
        "as flaps at once, until the polls confirm them (default: off)");
  m.add("--name", s.name, "this daemon's name in the leader row and its actions (default: HOST:PID)");
  m.add("--snapshot-retention", s.snapshot_retention_days, "days snapshots are kept (0: forever)");
  m.add("--incident-snapshots", s.incident_snapshots,
        "snapshots of the incidents opened in one poll, at most (the rest are counted in medic_snapshots_skipped_total)");
  m.add("--api-token", m.api_token,
        "bootstrap token: acts over HTTP as the admin \"bootstrap\" (to add the first users with "
        "POST /api/users); people use the tokens `medic users add` prints. None: users' tokens only "
        "(visible in ps: prefer --api-token-file or $MEDIC_API_TOKEN)");
  m.add("--api-token-file", m.api_token_file, "file holding the bootstrap token (see --api-token)");
  m.add_flag("--no-standby", m.no_standby, "exit (status 3) instead of waiting when another medicd leads");
  m.add_flag("--no-probe", m.no_probe, "no active probing (STAMP), even where the topology allows it");
  m.add("--probe-rate", s.probe_rate, "STAMP probes per second over all sessions");
  m.add("--probe-round", s.probe_round_s, "seconds per round (every session is probed each round)");
  m.add("--probe-per-round", s.probe_per_round, "probes per session per round");
  m.add("--probe-timeout", s.probe_timeout_s, "seconds after which an unanswered probe is lost");
  m.add("--slo-refresh", s.slo_refresh_s, "seconds between refreshes of the SLO figures on /metrics (0: none; default 60)");
  m.add("--slo-window", s.slo_window_days, "days of the trailing window of medic_slo_compliance and the budget (default 28)");
  m.add_flag("--probe-paths-unknown", s.probe_paths_unknown,
             "the fabric's ECMP hash is not fabric-medic's model: a path probe could have taken any path");
  m.add("--db-timeout", s.db_timeout_s, "seconds one database call may take before it is given up");
  m.add("--db-connect-timeout", s.db_connect_timeout_s, "seconds a database connection may take (at least 2)");
  m.add("--switch-workers", s.switch_workers,
        "threads that call the switches' drain APIs (switches are called in parallel, one call a switch at a time)");
  m.add("--pending-limit", s.pending_limit,
        "findings and incident updates kept while they cannot be recorded (oldest dropped first)");
  m.add("--log-level", m.log_level, "trace, debug, info, warn, error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}));
  m.add("--alertmanager", s.alertmanager_urls,
        "Alertmanager base URL incidents are sent to as alerts, e.g. http://127.0.0.1:9093 (repeatable)");
  m.add("--webhook", s.webhook_urls, "http(s) URL incident notifications are POSTed to (repeatable; needs a secret)");
  m.add("--webhook-secret-file", m.webhook_secret_file,
        "file holding the webhooks' shared secret (or $MEDIC_WEBHOOK_SECRET); required with --webhook");
  m.add("--external-url", s.external_url,
        "medicd's page as people's browsers reach it, for the links in alerts (default: http://ADDR:PORT of --http)");
  m.add("--alert-repeat", s.alert_repeat_s, "seconds between re-sending open incidents to Alertmanager (10 to 3600)");
  m.add("--notify-retry-max", s.notify_retry_max_s, "longest wait in seconds between delivery retries (1 to 3600)");
  m.add("--notify-timeout", s.notify_timeout_s, "seconds one delivery's HTTP request may take (0.1 to 60)");
}

DaemonOptions::~DaemonOptions() = default;

std::optional<int> DaemonOptions::parse(std::vector<std::string> args, std::ostream& out, std::ostream& err) {
  Impl& m = *impl_;
  m.reset();
  std::reverse(args.begin(), args.end());
  try {
    m.app.parse(args);
  } catch (const FileProblem& e) {
    err << m.program << ": " << e.what() << '\n';
    return 2;
  } catch (const CLI::ParseError& e) {
    if (const auto said = m.file_message(e)) {
      err << m.program << ": " << *said << '\n';
      return 2;
    }
    return m.app.exit(e, out, err);
  } catch (const std::exception& e) {
    // Nothing else is expected; whatever it is, an exact refusal rather than a crash.
    err << m.program << ": " << e.what() << '\n';
    return 2;
  }
  m.s.probe = !m.no_probe;
  m.s.standby = !m.no_standby;
  return std::nullopt;
}

std::optional<int> DaemonOptions::parse(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  return parse(std::vector<std::string>(argv + std::min(argc, 1), argv + argc), out, err);
}

DaemonSettings& DaemonOptions::settings() { return impl_->s; }
const std::string& DaemonOptions::log_level() const { return impl_->log_level; }
const std::string& DaemonOptions::api_token() const { return impl_->api_token_read; }
std::vector<std::string> DaemonOptions::keys() const {
  std::vector<std::string> out;
  for (const auto& [key, kind] : impl_->keys) out.push_back(key);
  return out;
}

const std::string& DaemonOptions::config_file() const { return impl_->file; }
size_t DaemonOptions::file_settings() const { return impl_->file_settings; }

DaemonConfig DaemonOptions::config() {
  Impl& m = *impl_;
  DaemonSettings s = m.s;
  s.driver_token = m.secret(s.driver_token, m.driver_token_file, "MEDIC_DRIVER_TOKEN", "--driver-token");
  m.api_token_read = m.secret(m.api_token, m.api_token_file, "MEDIC_API_TOKEN", "--api-token");
  s.webhook_secret = m.secret("", m.webhook_secret_file, "MEDIC_WEBHOOK_SECRET", "--webhook-secret");
  try {
    return DaemonConfig(std::move(s));
  } catch (const SettingError& e) {
    const auto key = m.file_key(e.flag());
    if (!key) throw;
    throw std::invalid_argument(m.at_line(*key, e.value(), e.reason()));
  }
}

}  // namespace medic::service
