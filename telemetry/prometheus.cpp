#include "telemetry/prometheus.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "common/strings.h"

namespace medic::telemetry {

const std::string_view* PromSample::label(std::string_view label_name) const {
  for (const auto& l : labels) {
    if (l.name == label_name) return &l.value;
  }
  return nullptr;
}

namespace {

// Up to this many labels, a new one is checked against the others as it is read.
constexpr size_t kScanLabels = 16;

// Each byte's classes, looked up once a byte: a zone-wide poll is 220 MB of text.
enum : uint8_t { kNameStart = 1, kName = 2, kLabelStart = 4, kLabel = 8, kBlank = 16 };
constexpr std::array<uint8_t, 256> kClasses = [] {
  std::array<uint8_t, 256> t{};
  for (int c = 0; c < 256; ++c) {
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    const bool digit = c >= '0' && c <= '9';
    uint8_t k = 0;
    if (alpha || c == ':') k |= kNameStart | kName;
    if (digit) k |= kName | kLabel;
    if (alpha) k |= kLabelStart | kLabel;
    if (c == ' ' || c == '\t') k |= kBlank;
    t[static_cast<size_t>(c)] = k;
  }
  return t;
}();
inline bool has(char c, uint8_t k) { return (kClasses[static_cast<unsigned char>(c)] & k) != 0; }
inline bool is_name_start(char c) { return has(c, kNameStart); }
inline bool is_name_char(char c) { return has(c, kName); }
inline bool is_label_start(char c) { return has(c, kLabelStart); }
inline bool is_label_char(char c) { return has(c, kLabel); }
inline bool is_blank(char c) { return has(c, kBlank); }

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

// The family a sample name belongs to when the family is a histogram or summary.
std::string_view family_of(std::string_view name, const StringMap<MetricType>& types,
                           MetricType& type) {
  if (const auto it = types.find(name); it != types.end()) {
    type = it->second;
    return name;
  }
  for (const std::string_view suffix : {"_bucket", "_sum", "_count"}) {
    if (name.size() > suffix.size() && name.substr(name.size() - suffix.size()) == suffix) {
      const std::string_view base = name.substr(0, name.size() - suffix.size());
      if (const auto it = types.find(base); it != types.end() &&
          (it->second == MetricType::histogram || it->second == MetricType::summary)) {
        if (suffix == "_bucket" && it->second != MetricType::histogram) continue;
        type = it->second;
        return base;
      }
    }
  }
  type = MetricType::untyped;
  return name;
}

}  // namespace

bool parse_prom_float(std::string_view s, double& out) {
  if (s.empty()) return false;
  std::string_view body = s;
  bool neg = false;
  if (body[0] == '+' || body[0] == '-') {
    neg = body[0] == '-';
    body.remove_prefix(1);
  }
  if (iequals(body, "inf") || iequals(body, "infinity")) {
    out = neg ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
    return true;
  }
  if (iequals(body, "nan")) {
    out = std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  if (body.empty() || body[0] == '+' || body[0] == '-') return false;
  // Counters are whole numbers and readings short decimals ("-2.35"). With at most 15
  // digits in all, the digits are an integer below 2^53 and the power of ten is exact, so
  // one division rounds once, to the double nearest the text: what from_chars gives, for a
  // fraction of its cost.
  if (body.size() <= 16) {
    uint64_t digits = 0;
    size_t k = 0, point = body.size(), count = 0;
    for (; k < body.size(); ++k) {
      const char c = body[k];
      if (c >= '0' && c <= '9') {
        digits = digits * 10 + static_cast<uint64_t>(c - '0');
        ++count;
      } else if (c == '.' && point == body.size()) {
        point = k;
      } else {
        break;
      }
    }
    if (k == body.size() && count > 0 && count <= 15) {
      static constexpr double kTens[] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                         1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
      const size_t decimals = point == body.size() ? 0 : body.size() - point - 1;
      const double v = static_cast<double>(digits) / kTens[decimals];
      out = neg ? -v : v;
      return true;
    }
  }
  double v = 0;
  const auto [ptr, ec] = std::from_chars(body.data(), body.data() + body.size(), v);
  if (ptr != body.data() + body.size()) return false;
  if (ec == std::errc::result_out_of_range) {
    // Go's ParseFloat returns +/-Inf for overflow and rounds underflow to 0; follow the
    // reference implementation (strtod does both, and the text is a valid decimal here).
    v = std::strtod(std::string(body).c_str(), nullptr);
  } else if (ec != std::errc()) {
    return false;
  }
  out = neg ? -v : v;
  return true;
}

Status PromParser::parse(std::string_view text, PromSink& sink, PromStats* stats) {
  types_.clear();
  seen_samples_.clear();
  last_name_ = {};
  size_t line_no = 0;
  size_t pos = 0;
  PromStats local;
  auto fail = [&](const std::string& what) -> Status {
    return Error{"line " + std::to_string(line_no) + ": " + what};
  };
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) {
      // The format ends every line with a line feed, the last one too. An answer that stops
      // inside a line was cut short (a connection closed early, with no length to tell),
      // and its last value may be a prefix of the real one: "12" of "12345" reads as a
      // counter going back, and the next whole answer as a burst of 12,333 drops.
      ++line_no;
      return fail("no line feed at the end of the payload (cut short?)");
    }
    std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    size_t i = 0;
    while (i < line.size() && is_blank(line[i])) ++i;
    if (i == line.size()) continue;
    ++local.lines;
    if (line[i] == '#') {
      // "# HELP name text", "# TYPE name type"; any other comment is ignored.
      std::string_view rest = line.substr(i + 1);
      while (!rest.empty() && is_blank(rest[0])) rest.remove_prefix(1);
      const bool is_help = rest.substr(0, 4) == "HELP" && (rest.size() == 4 || is_blank(rest[4]));
      const bool is_type = rest.substr(0, 4) == "TYPE" && (rest.size() == 4 || is_blank(rest[4]));
      if (!is_help && !is_type) continue;
      rest.remove_prefix(4);
      while (!rest.empty() && is_blank(rest[0])) rest.remove_prefix(1);
      size_t n = 0;
      if (rest.empty() || !is_name_start(rest[0])) {
        return fail(std::string(is_help ? "HELP" : "TYPE") + " line without a valid metric name");
      }
      while (n < rest.size() && is_name_char(rest[n])) ++n;
      const std::string_view name = rest.substr(0, n);
      if (n < rest.size() && !is_blank(rest[n])) {
        return fail("invalid character " + quote(rest.substr(n, 1)) + " in metric name");
      }
      std::string_view arg = rest.substr(n);
      while (!arg.empty() && is_blank(arg[0])) arg.remove_prefix(1);
      if (is_type) {
        while (!arg.empty() && is_blank(arg.back())) arg.remove_suffix(1);
        MetricType t;
        if (arg == "counter") t = MetricType::counter;
        else if (arg == "gauge") t = MetricType::gauge;
        else if (arg == "histogram") t = MetricType::histogram;
        else if (arg == "summary") t = MetricType::summary;
        else if (arg == "untyped") t = MetricType::untyped;
        else return fail("unknown metric type " + quote(arg, 64) + " for " + std::string(name));
        if (types_.find(name) != types_.end()) {
          return fail("second TYPE line for metric " + std::string(name));
        }
        if (seen_samples_.find(name) != seen_samples_.end()) {
          return fail("TYPE line for " + std::string(name) + " after its samples");
        }
        types_.emplace(std::string(name), t);
      }
      continue;
    }
    // A sample line. Samples of one family come together: a line that starts with the
    // previous sample's name, and no more of a name after it, has that name (checked once).
    const size_t name_begin = i;
    const bool repeats = !last_name_.empty() && line.size() - i > last_name_.size() &&
                         line.compare(i, last_name_.size(), last_name_) == 0 &&
                         !is_name_char(line[i + last_name_.size()]);
    if (repeats) {
      i += last_name_.size();
    } else {
      if (!is_name_start(line[i])) return fail("invalid metric name start " + quote(line.substr(i, 1)));
      while (i < line.size() && is_name_char(line[i])) ++i;
    }
    const std::string_view name = line.substr(name_begin, i - name_begin);
    labels_.clear();
    needs_unescape_.clear();
    // Blanks may separate the name from its label set, but without a label set they are
    // the separator before the value and must stay for the check below.
    size_t brace = i;
    while (brace < line.size() && is_blank(line[brace])) ++brace;
    if (brace < line.size() && line[brace] == '{') {
      i = brace + 1;
      while (true) {
        while (i < line.size() && is_blank(line[i])) ++i;
        if (i >= line.size()) return fail("unterminated label set of " + std::string(name));
        if (line[i] == '}') {
          ++i;
          break;
        }
        if (!is_label_start(line[i])) {
          return fail("invalid label name start " + quote(line.substr(i, 1)) + " in " + std::string(name));
        }
        const size_t lb = i;
        while (i < line.size() && is_label_char(line[i])) ++i;
        const std::string_view lname = line.substr(lb, i - lb);
        while (i < line.size() && is_blank(line[i])) ++i;
        if (i >= line.size() || line[i] != '=') {
          return fail("expected '=' after label " + std::string(lname) + " in " + std::string(name));
        }
        ++i;
        while (i < line.size() && is_blank(line[i])) ++i;
        if (i >= line.size() || line[i] != '"') {
          return fail("expected '\"' to open the value of label " + std::string(lname));
        }
        ++i;
        const size_t vb = i;
        bool esc = false;
        unsigned char high = 0;  // the OR of the value's bytes: UTF-8 is checked only past ASCII
        while (i < line.size() && line[i] != '"') {
          high |= static_cast<unsigned char>(line[i]);
          if (line[i] == '\\') {
            if (i + 1 >= line.size()) {
              i = line.size();  // a trailing backslash escapes nothing: unterminated
              break;
            }
            const char e = line[i + 1];
            if (e != '\\' && e != '"' && e != 'n') {
              // The escaped byte may be any byte of the payload: quoted escaped, never raw.
              return fail("invalid escape \\" + escape_text(std::string_view(&e, 1)) + " in value of label " +
                          std::string(lname));
            }
            esc = true;
            i += 2;
          } else {
            ++i;
          }
        }
        if (i >= line.size()) return fail("unterminated value of label " + std::string(lname));
        if (labels_.size() >= limits_.max_labels_per_sample) {
          return fail("more than " + std::to_string(limits_.max_labels_per_sample) + " labels on one sample of " +
                      std::string(name));
        }
        // Duplicates: a scan while the set is small; past that, one sort at its end.
        if (labels_.size() < kScanLabels) {
          for (const auto& l : labels_) {
            if (l.name == lname) return fail("duplicate label " + std::string(lname) + " in " + std::string(name));
          }
        }
        if (const auto bad = (high & 0x80) != 0 ? utf8_error(line.substr(vb, i - vb)) : std::nullopt) {
          return fail("invalid UTF-8 at byte " + std::to_string(vb + *bad + 1) + " of the line, in the value of label " +
                      std::string(lname) + " of " + std::string(name));
        }
        labels_.push_back(Label{lname, line.substr(vb, i - vb)});
        needs_unescape_.push_back(esc ? 1 : 0);
        ++i;  // closing quote
        while (i < line.size() && is_blank(line[i])) ++i;
        if (i < line.size() && line[i] == ',') {
          ++i;
          continue;
        }
        if (i < line.size() && line[i] == '}') {
          ++i;
          break;
        }
        return fail("expected ',' or '}' after the value of label " + std::string(lname));
      }
    }
    if (labels_.size() > kScanLabels) {
      names_.clear();
      for (const auto& l : labels_) names_.push_back(l.name);
      std::sort(names_.begin(), names_.end());
      const auto dup = std::adjacent_find(names_.begin(), names_.end());
      if (dup != names_.end()) return fail("duplicate label " + std::string(*dup) + " in " + std::string(name));
    }
    if (i >= line.size() || !is_blank(line[i])) {
      return fail(i >= line.size() ? "missing value for " + std::string(name)
                                   : "unexpected " + quote(line.substr(i, 1)) + " after " + std::string(name));
    }
    while (i < line.size() && is_blank(line[i])) ++i;
    const size_t vb = i;
    while (i < line.size() && !is_blank(line[i])) ++i;
    const std::string_view vtext = line.substr(vb, i - vb);
    PromSample s;
    s.name = name;
    if (!parse_prom_float(vtext, s.value)) {
      return fail("invalid value " + quote(vtext, 64) + " for " + std::string(name));
    }
    while (i < line.size() && is_blank(line[i])) ++i;
    if (i < line.size()) {
      const size_t tb = i;
      while (i < line.size() && !is_blank(line[i])) ++i;
      const std::string_view ts = line.substr(tb, i - tb);
      const auto [ptr, ec] = std::from_chars(ts.data(), ts.data() + ts.size(), s.timestamp_ms);
      if (ec != std::errc() || ptr != ts.data() + ts.size()) {
        return fail("invalid timestamp " + quote(ts, 64) + " for " + std::string(name));
      }
      s.has_timestamp = true;
      while (i < line.size() && is_blank(line[i])) ++i;
      if (i < line.size()) return fail("unexpected text after the timestamp of " + std::string(name));
    }
    // Unescape label values only when they contain escapes (rare).
    bool any_esc = false;
    for (const auto e : needs_unescape_) any_esc = any_esc || e;
    if (any_esc) {
      if (unescaped_.size() < labels_.size()) unescaped_.resize(labels_.size());
      for (size_t k = 0; k < labels_.size(); ++k) {
        if (!needs_unescape_[k]) continue;
        std::string& u = unescaped_[k];
        u.clear();
        const std::string_view raw = labels_[k].value;
        for (size_t j = 0; j < raw.size(); ++j) {
          if (raw[j] == '\\' && j + 1 < raw.size()) {
            const char e = raw[++j];
            u += e == 'n' ? '\n' : e;
          } else {
            u += raw[j];
          }
        }
        labels_[k].value = u;
      }
    }
    if (repeats) {
      s.type = last_type_;
      s.name_repeats = true;
    } else {
      const std::string_view family = family_of(name, types_, s.type);
      if (seen_samples_.find(family) == seen_samples_.end()) seen_samples_.emplace(std::string(family), true);
      last_name_ = name;
      last_type_ = s.type;
    }
    s.labels = labels_;
    ++local.samples;
    if (s.type == MetricType::histogram || s.type == MetricType::summary) ++local.skipped_histogram_summary;
    sink.on_sample(s);
  }
  if (stats != nullptr) *stats = local;
  return Ok{};
}

}  // namespace medic::telemetry
