// libFuzzer target for the topology file parser (tuner/topology_io.h).
//
// Topology files come from users and from discovery dumps, so ParseTopology
// must turn any bytes into either a valid Topology or an error that names the
// file and a line, without crashing or throwing. When a file parses, writing
// it back with DumpTopology and parsing that again must give the same
// topology, and dumping is then a fixed point. Any violation aborts.
//
// Seed corpus: tuner/fuzz_corpus/, dictionary: tuner/topology_fuzz.dict.
// Run with e.g.
//   cp -r tuner/fuzz_corpus /tmp/corpus &&
//   ./topology_fuzz /tmp/corpus -dict=tuner/topology_fuzz.dict -max_total_time=60
// topology_fuzz_replay (tests/fuzz/text_fuzz_replay.cc) replays both as a
// unit test.
//
// Thread-safety: libFuzzer calls the entry point from one thread.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "tuner/topology_io.h"

namespace {

constexpr const char* kSource = "fuzz.yaml";

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "topology_fuzz: %s\n%s\n", what, detail.c_str());
  std::abort();
}

// Every message must start "fuzz.yaml:<line>: " with a line >= 1.
void CheckErrorNamesFileAndLine(const std::string& msg) {
  const std::string prefix = std::string(kSource) + ":";
  if (msg.compare(0, prefix.size(), prefix) != 0) Fail("error does not name the file", msg);
  size_t i = prefix.size();
  size_t digits = 0;
  while (i < msg.size() && msg[i] >= '0' && msg[i] <= '9') ++i, ++digits;
  if (digits == 0 || msg[prefix.size()] == '0' || i >= msg.size() || msg[i] != ':')
    Fail("error does not name a line", msg);
}

bool SameTopology(const topotune::Topology& x, const topotune::Topology& y) {
  if (x.num_nodes() != y.num_nodes() || x.links().size() != y.links().size()) return false;
  for (int i = 0; i < x.num_nodes(); ++i) {
    const topotune::Node& a = x.nodes()[i];
    const topotune::Node& b = y.nodes()[i];
    if (a.name != b.name || a.kind != b.kind || a.slots != b.slots) return false;
  }
  for (size_t i = 0; i < x.links().size(); ++i) {
    const topotune::Link& a = x.links()[i];
    const topotune::Link& b = y.links()[i];
    if (a.a != b.a || a.b != b.b || a.speed_bps != b.speed_bps || a.latency_s != b.latency_s) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  topotune::StatusOr<topotune::Topology> t = topotune::ParseTopology(text, kSource);
  if (!t.ok()) {
    CheckErrorNamesFileAndLine(t.status().message());
    return 0;
  }
  const std::string dumped = topotune::DumpTopology(*t);
  topotune::StatusOr<topotune::Topology> back = topotune::ParseTopology(dumped, kSource);
  if (!back.ok()) Fail("the dump does not parse", back.status().message() + "\n--- dump:\n" + dumped);
  if (!SameTopology(*t, *back)) Fail("the dump parses to a different topology", dumped);
  const std::string again = topotune::DumpTopology(*back);
  if (again != dumped) Fail("dumping is not a fixed point", dumped + "\n--- second dump:\n" + again);
  return 0;
}
