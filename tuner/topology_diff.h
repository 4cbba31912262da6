// Differences between two topologies, by name: switches and hosts added or
// removed, links added or removed, and links whose speed, latency or slots
// changed. Used to check a discovered tree against a known one (tests, and
// `topotune topology diff` for an admin asking "did the network change?").
//
// Thread-safety: pure function.
#pragma once

#include <string>
#include <vector>

#include "tuner/topology.h"

namespace topotune {

// One line per difference, sorted: "- host h3", "+ switch s9",
// "- link h0 -- s0 1Gbps", "+ link h0 -- s0 10Gbps". Empty when the two have the
// same nodes (name, kind, slots) and the same links (endpoints, speed, latency),
// whatever their order in the files.
std::vector<std::string> DiffTopologies(const Topology& before, const Topology& after);

}  // namespace topotune
