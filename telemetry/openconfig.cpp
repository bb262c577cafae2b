#include "telemetry/openconfig.h"

#include "common/strings.h"

#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>
#include <vector>

namespace medic::telemetry {

namespace {

std::string_view strip_module(std::string_view key) {
  const size_t colon = key.find(':');
  return colon == std::string_view::npos ? key : key.substr(colon + 1);
}

// One interface or component list entry. Its leaves are kept in one text arena (paths and
// values back to back) so an entry costs no allocation per leaf; entries are reused.
struct Entry {
  enum Kind { interface, component } kind = interface;
  size_t depth = 0;  // stack depth of the entry's object
  const char* base = "";
  std::string name;
  std::string transceiver;  // interface -> its transceiver component
  std::string arena;
  struct Leaf {
    uint32_t path_off, path_len, value_off, value_len;
    OcKind kind;
  };
  std::vector<Leaf> leaves;

  void clear() {
    name.clear();
    transceiver.clear();
    arena.clear();
    leaves.clear();
  }
  void add(std::string_view rel_path, std::string_view value, OcKind kind) {
    const auto po = static_cast<uint32_t>(arena.size());
    arena.append(rel_path);
    const auto vo = static_cast<uint32_t>(arena.size());
    arena.append(value);
    leaves.push_back({po, static_cast<uint32_t>(rel_path.size()), vo, static_cast<uint32_t>(value.size()), kind});
  }
};

class Walker : public nlohmann::json::json_sax_t {
 public:
  explicit Walker(OcSink& sink) : sink_(sink) {}

  bool null() override { return leaf("null", OcKind::null); }
  bool boolean(bool v) override { return leaf(v ? "true" : "false", OcKind::boolean); }
  bool number_integer(number_integer_t v) override { return leaf(std::to_string(v), OcKind::number); }
  bool number_unsigned(number_unsigned_t v) override { return leaf(std::to_string(v), OcKind::number); }
  bool number_float(number_float_t, const string_t& s) override { return leaf(s, OcKind::number); }
  bool string(string_t& s) override { return leaf(s, OcKind::string); }
  bool binary(binary_t&) override { return true; }

  bool start_object(std::size_t) override {
    // An object inside the interface or component list starts a list entry.
    if (!frames_.empty() && !frames_.back().is_object && entry_ == nullptr) {
      if (path_ == "interfaces/interface" || path_ == "components/component") {
        const bool is_if = path_ == "interfaces/interface";
        Entry& e = is_if ? iface_ : take_component();
        e.clear();
        e.kind = is_if ? Entry::interface : Entry::component;
        e.depth = frames_.size() + 1;
        e.base = is_if ? "interfaces/interface" : "components/component";
        entry_ = &e;
        base_len_ = path_.size() + 1;
      }
    }
    if (!frames_.empty()) frames_.back().items = true;
    frames_.push_back({path_.size(), true});
    return true;
  }

  bool end_object() override {
    if (entry_ != nullptr && frames_.size() == entry_->depth) finish_entry();
    pop();
    return true;
  }

  bool start_array(std::size_t) override {
    if (!frames_.empty()) frames_.back().items = true;
    frames_.push_back({path_.size(), false});
    return true;
  }

  bool end_array() override {
    // An empty array where a leaf might be is said, so that a reader expecting a number
    // there can refuse it (a leaf-list with items reports its items instead).
    const bool empty = !frames_.back().items;
    frames_.pop_back();
    if (empty && entry_ != nullptr) mark("[]", OcKind::array);  // the path still ends with its key
    path_.resize(frames_.empty() ? 0 : frames_.back().path_len);
    return true;
  }

  bool key(string_t& k) override {
    // Back to the enclosing object's path, then this key without its module prefix.
    path_.resize(frames_.back().path_len);
    const std::string_view seg = strip_module(k);
    if (frames_.size() == 1) {
      // A Get of /interfaces or /components answers with the list itself at the top.
      if (seg == "interface") {
        path_ = "interfaces/interface";
        return true;
      }
      if (seg == "component") {
        path_ = "components/component";
        return true;
      }
    }
    if (!path_.empty()) path_ += '/';
    path_ += seg;
    return true;
  }

  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& ex) override {
    std::string what = ex.what();
    if (const size_t p = what.find("] "); p != std::string::npos) what = what.substr(p + 2);
    error_ = "byte " + std::to_string(position) + ": " + escape_text(what, 300);
    return false;
  }

  void finish_document() {
    // Components resolve through the interfaces' transceiver leaves, seen anywhere.
    for (size_t i = 0; i < components_used_; ++i) {
      const Entry& c = components_[i];
      const auto it = xcvr_to_port_.find(c.name);
      emit(c, it != xcvr_to_port_.end() ? std::string_view(it->second) : std::string_view(c.name));
    }
    components_used_ = 0;
  }

  const std::string& error() const { return error_; }
  OcStats stats;
  size_t entries = 0;

 private:
  struct Frame {
    size_t path_len = 0;
    bool is_object = true;
    bool items = false;  // an array: it had items
  };

  Entry& take_component() {
    if (components_used_ == components_.size()) components_.emplace_back();
    return components_[components_used_++];
  }

  void pop() {
    frames_.pop_back();
    path_.resize(frames_.empty() ? 0 : frames_.back().path_len);
  }

  // Records what stands at the current path (an empty array) as if it were a leaf.
  void mark(std::string_view what, OcKind kind) {
    const std::string_view rel = std::string_view(path_).substr(std::min(path_.size(), base_len_));
    entry_->add(rel, what, kind);
  }

  bool leaf(std::string_view value, OcKind kind) {
    if (frames_.empty()) return true;
    frames_.back().items = true;
    if (entry_ == nullptr) {
      ++stats.orphan_leaves;
    } else {
      const std::string_view rel = std::string_view(path_).substr(std::min(path_.size(), base_len_));
      if (rel == "name" || rel == "config/name" || rel == "state/name") {
        if (entry_->name.empty() || rel == "name") entry_->name.assign(value);
      } else if (entry_->kind == Entry::interface && rel == "state/transceiver") {
        entry_->transceiver.assign(value);
      }
      entry_->add(rel, value, kind);
    }
    // A leaf in an object ends with its key; a leaf-list item keeps the array's path.
    if (frames_.back().is_object) path_.resize(frames_.back().path_len);
    return true;
  }

  void emit(const Entry& e, std::string_view port) {
    full_.assign(e.base);
    full_ += '/';
    const size_t base = full_.size();
    for (const Entry::Leaf& l : e.leaves) {
      full_.resize(base);
      full_.append(e.arena, l.path_off, l.path_len);
      sink_.on_leaf(port, full_, std::string_view(e.arena).substr(l.value_off, l.value_len), l.kind);
      if (l.kind != OcKind::array) ++stats.leaves;
    }
  }

  void finish_entry() {
    Entry& e = *entry_;
    entry_ = nullptr;
    ++entries;
    if (e.kind == Entry::interface) {
      if (!e.transceiver.empty()) xcvr_to_port_[e.transceiver] = e.name;
      emit(e, e.name);
    }
    // Components wait for the end of the document (their interfaces may come later).
  }

  OcSink& sink_;
  std::vector<Frame> frames_;
  std::string path_;
  std::string full_;
  size_t base_len_ = 0;
  Entry iface_;
  Entry* entry_ = nullptr;
  std::vector<Entry> components_;
  size_t components_used_ = 0;
  std::unordered_map<std::string, std::string> xcvr_to_port_;
  std::string error_;
};

}  // namespace

std::string_view to_string(OcKind k) {
  switch (k) {
    case OcKind::number: return "a number";
    case OcKind::string: return "a string";
    case OcKind::boolean: return "a boolean";
    case OcKind::null: return "null";
    case OcKind::array: return "an array";
  }
  return "?";
}

Status parse_openconfig(std::string_view json, OcSink& sink, OcStats* stats) {
  Walker w(sink);
  const bool ok = nlohmann::json::sax_parse(json.begin(), json.end(), &w);
  if (!ok) return Error{w.error().empty() ? "invalid JSON" : w.error()};
  w.finish_document();
  if (stats != nullptr) *stats = w.stats;
  if (w.entries == 0 && w.stats.orphan_leaves > 0) {
    // Valid JSON, but not the shape this reads: say so rather than report a silent device
    // as a healthy one with no ports.
    return Error{"no openconfig-interfaces interface or openconfig-platform component in the document (" +
                 std::to_string(w.stats.orphan_leaves) + " leaves outside them)"};
  }
  return Ok{};
}

}  // namespace medic::telemetry
