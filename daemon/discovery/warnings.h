// Warnings folded by kind, so that a walk with thousands of bad or repeated
// rows (a recording concatenated with itself, a switch answering garbage)
// gives a few lines with a count, not thousands: the first examples of each
// kind as they came, then one line per kind with the number of the rest.
//
// Thread-safety: a plain value; not safe for concurrent use.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace topotune::discovery {

class WarningLog {
 public:
  static constexpr int kDefaultExamples = 3;

  // `prefix` names what the warnings are about (a file, a switch) at the
  // start of each folding line; "" for none. `examples` (>= 0) lines of each
  // kind are kept.
  explicit WarningLog(std::string prefix = "", int examples = kDefaultExamples);

  // Adds one warning of kind `kind` (a short fixed phrase such as "duplicate
  // OID"). `line` is kept as it is: it names its subject itself.
  void Add(std::string_view kind, std::string line);

  // The kept lines in the order they came, then, for each kind with more
  // than `examples` warnings (kinds in first-seen order),
  // "PREFIX: KIND: N more like these (M in all)".
  std::vector<std::string> Lines() const;

 private:
  struct Kind {
    std::string name;
    int count = 0;
  };
  std::string prefix_;
  int examples_;
  std::vector<std::string> kept_;
  std::vector<Kind> kinds_;                           // First-seen order.
  std::map<std::string, size_t, std::less<>> index_;  // Kind name -> position in kinds_.
};

}  // namespace topotune::discovery
