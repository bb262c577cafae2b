// Plain-text tables for terminals: columns padded to their widest cell.
#pragma once

#include <string>
#include <vector>

namespace medic::cli {

class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  std::string render() const;
  size_t size() const { return rows_.size(); }

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace medic::cli
