// The topology the daemon tests serve: deploy/examples/two-switch-4x4.yaml in
// the source tree (TOPOTUNE_SOURCE_DIR, defined by tests/daemon/CMakeLists.txt).
#pragma once

#include <string>

namespace topotune::testing {

inline const std::string kTopology = std::string(TOPOTUNE_SOURCE_DIR) + "/deploy/examples/two-switch-4x4.yaml";

}  // namespace topotune::testing
