#include "daemon/discovery/warnings.h"

#include <fmt/format.h>

#include <utility>

namespace topotune::discovery {

WarningLog::WarningLog(std::string prefix, int examples) : prefix_(std::move(prefix)), examples_(examples) {}

void WarningLog::Add(std::string_view kind, std::string line) {
  auto it = index_.find(kind);
  if (it == index_.end()) {
    it = index_.emplace(std::string(kind), kinds_.size()).first;
    kinds_.push_back({std::string(kind), 0});
  }
  if (++kinds_[it->second].count <= examples_) kept_.push_back(std::move(line));
}

std::vector<std::string> WarningLog::Lines() const {
  std::vector<std::string> lines = kept_;
  for (const Kind& k : kinds_) {
    if (k.count <= examples_) continue;
    lines.push_back(fmt::format("{}{}: {} more like these ({} in all)", prefix_.empty() ? "" : prefix_ + ": ", k.name,
                                k.count - examples_, k.count));
  }
  return lines;
}

}  // namespace topotune::discovery
