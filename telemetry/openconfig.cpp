#include "telemetry/openconfig.h"

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

struct Leaf {
  std::string path;  // relative to the list entry ("state/counters/in-pkts")
  std::string value;
};

struct Entry {
  enum Kind { interface, component } kind = interface;
  size_t depth = 0;        // stack depth of the entry's object
  std::string base;        // "interfaces/interface" or "components/component"
  std::string name;
  std::string transceiver;  // interface -> its transceiver component
  std::vector<Leaf> leaves;
};

class Walker : public nlohmann::json::json_sax_t {
 public:
  explicit Walker(OcSink& sink) : sink_(sink) {}

  bool null() override { return true; }
  bool boolean(bool v) override { return leaf(v ? "true" : "false"); }
  bool number_integer(number_integer_t v) override { return leaf(std::to_string(v)); }
  bool number_unsigned(number_unsigned_t v) override { return leaf(std::to_string(v)); }
  bool number_float(number_float_t, const string_t& s) override { return leaf(s); }
  bool string(string_t& s) override { return leaf(s); }
  bool binary(binary_t&) override { return true; }

  bool start_object(std::size_t) override {
    Frame f;
    f.path_len = path_.size();
    f.is_object = true;
    // An object inside the interface or component list starts a list entry.
    if (!frames_.empty() && !frames_.back().is_object && entry_ == nullptr) {
      if (path_ == "interfaces/interface" || path_ == "components/component") {
        current_ = Entry{};
        current_.kind = path_ == "interfaces/interface" ? Entry::interface : Entry::component;
        current_.depth = frames_.size() + 1;
        current_.base = path_;
        entry_ = &current_;
      }
    }
    frames_.push_back(f);
    return true;
  }

  bool end_object() override {
    if (entry_ != nullptr && frames_.size() == entry_->depth) finish_entry();
    pop();
    return true;
  }

  bool start_array(std::size_t) override {
    Frame f;
    f.path_len = path_.size();
    f.is_object = false;
    f.array_key = pending_key_;
    frames_.push_back(f);
    return true;
  }

  bool end_array() override {
    pop();
    return true;
  }

  bool key(string_t& k) override {
    // Restore the path to the enclosing object's, then append this key.
    path_.resize(frames_.back().path_len);
    const std::string_view seg = strip_module(k);
    if (!path_.empty()) path_ += '/';
    path_ += seg;
    pending_key_ = std::string(seg);
    return true;
  }

  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& ex) override {
    error_ = "byte " + std::to_string(position) + ": " + ex.what();
    return false;
  }

  void finish_document() {
    // Components resolve through the interfaces' transceiver leaves, seen anywhere.
    for (auto& c : components_) {
      std::string port = c.name;
      if (const auto it = xcvr_to_port_.find(c.name); it != xcvr_to_port_.end()) port = it->second;
      emit(c, port);
    }
    components_.clear();
  }

  const std::string& error() const { return error_; }
  OcStats stats;

 private:
  struct Frame {
    size_t path_len = 0;
    bool is_object = true;
    std::string array_key;
  };

  void pop() {
    frames_.pop_back();
    path_.resize(frames_.empty() ? 0 : frames_.back().path_len);
    if (!frames_.empty() && !frames_.back().is_object) {
      // Back inside an array: the path is the array's own.
    }
  }

  bool leaf(std::string_view value) {
    if (frames_.empty()) return true;
    // A leaf in an array (leaf-list) keeps the array's path; in an object, the key's.
    if (entry_ == nullptr) {
      ++stats.orphan_leaves;
      restore_after_leaf();
      return true;
    }
    std::string_view rel = std::string_view(path_).substr(std::min(path_.size(), entry_->base.size() + 1));
    if (rel == "name" || rel == "config/name" || rel == "state/name") {
      if (entry_->name.empty() || rel == "name") entry_->name = std::string(value);
    } else if (entry_->kind == Entry::interface && rel == "state/transceiver") {
      entry_->transceiver = std::string(value);
    }
    entry_->leaves.push_back({std::string(rel), std::string(value)});
    restore_after_leaf();
    return true;
  }

  void restore_after_leaf() {
    if (frames_.back().is_object) path_.resize(frames_.back().path_len);
  }

  void emit(const Entry& e, const std::string& port) {
    std::string full;
    for (const Leaf& l : e.leaves) {
      full.assign(e.base);
      full += '/';
      full += l.path;
      sink_.on_leaf(port, full, l.value);
      ++stats.leaves;
    }
  }

  void finish_entry() {
    Entry e = std::move(current_);
    entry_ = nullptr;
    if (e.kind == Entry::interface) {
      if (!e.transceiver.empty()) xcvr_to_port_[e.transceiver] = e.name;
      emit(e, e.name);
    } else {
      components_.push_back(std::move(e));
    }
  }

  OcSink& sink_;
  std::vector<Frame> frames_;
  std::string path_;
  std::string pending_key_;
  Entry current_;
  Entry* entry_ = nullptr;
  std::vector<Entry> components_;
  std::unordered_map<std::string, std::string> xcvr_to_port_;
  std::string error_;
};

}  // namespace

Status parse_openconfig(std::string_view json, OcSink& sink, OcStats* stats) {
  Walker w(sink);
  const bool ok = nlohmann::json::sax_parse(json.begin(), json.end(), &w);
  if (!ok) return Error{w.error().empty() ? "invalid JSON" : w.error()};
  w.finish_document();
  if (stats != nullptr) *stats = w.stats;
  return Ok{};
}

}  // namespace medic::telemetry
