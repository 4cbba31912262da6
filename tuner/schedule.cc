#include "tuner/schedule.h"

namespace topotune {

void Schedule::SetPhases(const std::vector<std::vector<Message>>& phases) {
  messages_.clear();
  phase_begin_.assign(1, 0);
  for (const auto& phase : phases) {
    AddPhase();
    for (const Message& m : phase) Add(m);
  }
}

}  // namespace topotune
