// The cluster topology model: a tree of Ethernet switches with hosts at the
// leaves. Each link has a speed in bit/s and an optional latency; each host
// carries a number of MPI slots.
//
// A Topology is immutable once created and always valid: Topology::Create
// checks names, speeds, leaves, connectivity and acyclicity, and its errors
// name the source file, the line, the field and what is allowed.
//
// Thread-safety: a const Topology may be shared between threads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tuner/status.h"

namespace topotune {

// Position of an element in its source file (1-based); 0 when unknown.
struct SourcePos {
  int line = 0;
  int column = 0;
};

enum class NodeKind { kSwitch, kHost };

// Largest number of MPI slots a host may declare (keeps rank counts in int).
inline constexpr int kMaxSlots = 65536;

struct Node {
  std::string name;
  NodeKind kind = NodeKind::kSwitch;
  int slots = 1;  // MPI slots; meaningful for hosts only.
  SourcePos pos;
};

struct Link {
  int a = -1;  // Node indices.
  int b = -1;
  double speed_bps = 0;  // Bits per second, > 0; for a LAG the sum of its members' speeds.
  double latency_s = 0;  // Seconds, >= 0; 0 when not given.
  SourcePos pos;
  // Links aggregated into this one (a LAG, 1..kMaxLagMembers; 1: a plain
  // link). A message is one flow, which the switches hash onto one member:
  // it runs at flow_bps() however idle the other members are.
  int members = 1;
  double flow_bps() const { return speed_bps / members; }
};

inline constexpr int kMaxLagMembers = 64;

class Topology {
 public:
  // Validates `nodes` and `links` and builds the topology. `source` names the
  // file they came from and prefixes every error message.
  static StatusOr<Topology> Create(std::vector<Node> nodes, std::vector<Link> links, std::string source = "<memory>");

  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<Link>& links() const { return links_; }
  const std::string& source() const { return source_; }
  int num_nodes() const { return static_cast<int>(nodes_.size()); }

  // Node index by name.
  std::optional<int> Find(std::string_view name) const;
  // Host node indices, in declaration order.
  const std::vector<int>& hosts() const { return hosts_; }
  // Link indices incident to `node`, in declaration order.
  const std::vector<int>& incident(int node) const { return incident_[node]; }
  // The endpoint of `link` that is not `node`.
  int Other(int link, int node) const { return links_[link].a == node ? links_[link].b : links_[link].a; }
  bool is_host(int node) const { return nodes_[node].kind == NodeKind::kHost; }
  // Total slots over all hosts.
  int64_t total_slots() const;

 private:
  Topology() = default;
  std::vector<Node> nodes_;
  std::vector<Link> links_;
  std::string source_;
  std::vector<int> hosts_;
  std::vector<std::vector<int>> incident_;
  std::unordered_map<std::string, int> by_name_;
};

// Formats a speed in bit/s the way topology files write it: "1Gbps", "100Mbps",
// "2.5Gbps", "1500bps".
std::string FormatSpeed(double bps);
// Parses "1Gbps", "100Mbps", "10Kbps", "1500bps" (decimal prefixes, case-
// insensitive unit); returns nullopt on anything else or on a non-positive value.
std::optional<double> ParseSpeed(std::string_view text);
// Formats a latency in seconds as "5us", "1.5ms", "2s", "0".
std::string FormatLatency(double seconds);
// Parses "5us", "1.5ms", "100ns", "2s", "0"; nullopt when malformed or negative.
std::optional<double> ParseLatency(std::string_view text);
// Formats a byte count as "64KiB", "1MiB", "1500B".
std::string FormatBytes(double bytes);
// Parses "64KiB", "1MiB", "4M" (binary), "64kB" (decimal), "1500", "1500B".
std::optional<double> ParseBytes(std::string_view text);

}  // namespace topotune
