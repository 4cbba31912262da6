// Reading and writing topology files: the YAML (or JSON) description of a
// switch tree that users write by hand, that discovery dumps, and that tests
// load back. This is the boundary where outside text becomes a Topology, so
// every error says where it is (file:line), which field (e.g. links[2][2]),
// what was found and what is allowed.
//
// The format:
//
//   switches:
//     - name: s0
//   hosts:
//     - name: n0
//       slots: 2                  # optional, default 1
//   links:
//     - [n0, s0, 1Gbps]           # endpoint, endpoint, speed
//     - [n1, s0, 1Gbps, 5us]      # optional latency
//     - {a: n2, b: s0, speed: 1Gbps, latency: 5us}
//
// Speeds take bps, Kbps, Mbps or Gbps (decimal prefixes); latencies take ns,
// us, ms or s, or 0. JSON is YAML, so the same structure in JSON is accepted.
// Nodes are numbered switches first, then hosts, each in file order, whatever
// the order of the sections; links keep their file order and endpoint order.
//
// Thread-safety: the functions share no state and may run concurrently.
#pragma once

#include <string>
#include <string_view>

#include "tuner/status.h"
#include "tuner/topology.h"

namespace topotune {

// Parses a topology file's contents. `source_name` (usually the path) prefixes
// every error message and becomes Topology::source(). Never throws.
StatusOr<Topology> ParseTopology(std::string_view text, std::string source_name);

// Reads and parses the file at `path`. An unreadable file gives an IoError
// naming the path and the system's reason.
StatusOr<Topology> LoadTopologyFile(const std::string& path);

// Writes `t` in the format above. ParseTopology(DumpTopology(t)) gives back the
// same names, kinds, slots, links, endpoints, speeds and latencies, bit for bit.
// Sections are written switches before hosts, so a topology built in memory
// with kinds interleaved comes back with its nodes renumbered switches-first
// (names, host order and links are unchanged).
std::string DumpTopology(const Topology& t);

}  // namespace topotune
