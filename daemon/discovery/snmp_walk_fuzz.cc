// libFuzzer target for SNMP value and index parsing: the input is a recorded
// walk (.snmprec or snmpwalk text, told apart as usual); it is split at the
// first "\n---\n" into two switches' walks, each decoded, then the tree is
// built from both, with its diagnostics. Nothing may crash, hang or read out
// of bounds; every outcome (a tree, or an error Status) is fine.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "daemon/discovery/recorded_walk.h"
#include "daemon/discovery/switch_walk.h"
#include "daemon/discovery/tree_builder.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace topotune::discovery;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string_view> parts;
  size_t sep = text.find("\n---\n");
  parts.push_back(text.substr(0, sep));
  if (sep != std::string_view::npos) parts.push_back(text.substr(sep + 5));
  std::vector<SwitchWalk> walks;
  for (size_t i = 0; i < parts.size(); ++i) {
    ParsedWalk parsed = ParseRecordedWalk(parts[i], "fuzz");
    RecordedSource source(i ? "198.18.0.2:161" : "198.18.0.1:161", std::move(parsed.vars));
    auto walk = WalkSwitch(source);
    if (walk.ok()) walks.push_back(std::move(*walk));
  }
  std::vector<HostFact> facts = {{"h0", {Mac{{2, 0, 0, 0, 0, 1}}}}, {"h1", {Mac{{2, 0, 0, 0, 0, 2}}}}};
  Diagnostics diagnostics;
  auto tree = BuildTree(walks, facts, {}, &diagnostics);
  if (tree.ok()) (void)FormatDiscoveredTree(*tree);
  (void)UnwalkedLines(diagnostics.unwalked, 3);
  return 0;
}
