// The LLDP neighbours of the host, as lldpd heard them, read from
// `lldpcli -f json show neighbors` and converted to v1::LldpNeighbor (the
// switch port a NIC is plugged into).
//
// lldpcli's "json" format changes shape with the counts (lldpd
// src/client/json_writer.c): a list of one element becomes that element, an
// object whose only key is "value" becomes that value, and an object with a
// string "name" moves under a new object keyed by the name. So
//   one interface:    "interface": {"eth0": {...}}
//   several:          "interface": [{"p1": {...}}, {"p2": {...}}]
//   named chassis:    "chassis": {"sw1": {"id": {...}, ...}}
//   unnamed chassis:  "chassis": {"id": {...}, ...}
//   one mgmt address: "mgmt-ip": "10.0.0.1"; several: ["10.0.0.1", "fe80::1"]
//   no neighbour:     "lldp": {}
// ParseLldpcliJson reads every shape; anything it cannot read becomes a
// warning and is skipped, never an exception.
//
// Thread-safety: pure functions, except RunLldpcli, which runs a process and
// shares no state.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "topotune/v1/agents.pb.h"
#include "tuner/status.h"

namespace topotune::agent {

struct LldpNeighbors {
  std::vector<v1::LldpNeighbor> neighbors;  // In lldpcli's order (interfaces, then neighbours on each).
  std::vector<std::string> warnings;        // What was skipped or changed, and why; one line each.
};

// Every neighbour in lldpcli's JSON output (see the header comment). Strings
// longer than limits::kMaxLldpStringBytes are cut (with a warning); a
// neighbour whose MAC-typed chassis or port id is not a MAC is skipped (with
// a warning), since the server would refuse the whole registration.
LldpNeighbors ParseLldpcliJson(std::string_view text);

// The neighbour heard on `interface` ("" = on any interface): the first one,
// with a warning when there are several. nullopt when there is none.
std::optional<v1::LldpNeighbor> NeighborOn(const LldpNeighbors& all, std::string_view interface,
                                           std::vector<std::string>* warnings);

// lldpcli's id type names ("mac", "ifname", "ip", "ifalias", "local",
// "unhandled") as the proto enums; UNSPECIFIED for "unhandled" (lldpd prints
// it for both component subtypes, which it cannot tell apart) and unknown
// names.
v1::LldpChassisIdSubtype ChassisIdSubtypeFromLldpcli(std::string_view type);
v1::LldpPortIdSubtype PortIdSubtypeFromLldpcli(std::string_view type);

// Runs `lldpcli [-u SOCKET] -f json show neighbors` and returns its output.
// NotFound when lldpcli is not installed; FailedPrecondition (with lldpcli's
// message) when it fails, e.g. because lldpd is not running; Internal when it
// does not finish within `timeout`.
StatusOr<std::string> RunLldpcli(const std::string& lldpd_socket, std::chrono::milliseconds timeout);

}  // namespace topotune::agent
