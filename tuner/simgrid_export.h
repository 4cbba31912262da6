// Export of a Topology as a SimGrid platform, so that the collective kernels
// can run under SMPI (smpirun) on simulated clusters too large to emulate.
//
// The platform (SimgridPlatformXml) is one XML file, DTD version 4.1, read by
// SimGrid 3.x (checked with 3.32):
//
//   <zone id="topotune" routing="Floyd">
//     <router id="s0"/>                                   one per switch
//     <host id="n0" speed="1Gf" core="2"/>                one per host; core = slots
//     <link id="n0-s0" bandwidth="100Mbps" latency="10us" sharing_policy="SPLITDUPLEX"/>
//     <route src="n0" dst="s0" symmetrical="NO"><link_ctn id="n0-s0" direction="UP"/></route>
//     <route src="s0" dst="n0" symmetrical="NO"><link_ctn id="n0-s0" direction="DOWN"/></route>
//   </zone>
//
// Why this shape:
//   * SPLITDUPLEX models full-duplex Ethernet: SimGrid splits the link into
//     "<id>_UP" and "<id>_DOWN", each with the full bandwidth, so traffic in
//     one direction does not slow the other (the Faraj-Yuan network model,
//     §3). It is written explicitly because the DTD's default is SHARED (one
//     capacity for both directions). A SPLITDUPLEX link must be referenced
//     with a direction: UP is the direction from the link's first endpoint
//     (`a` in the topology file) to its second (`b`), DOWN the way back.
//   * Only one-hop routes between adjacent nodes are written, both directions
//     explicitly with symmetrical="NO" (so the file itself says which half of
//     each link a direction uses; SimGrid's symmetric handling would swap UP
//     and DOWN for the reverse route, which gives the same result). Floyd
//     routing composes them into the unique tree path between any two hosts.
//   * Link latencies come from the topology; a link without one (latency 0
//     in the file) gets SimgridExportOptions::default_latency_s.
//
// The ns-3 form (SimgridExportOptions::ns3, for --cfg=network/model:ns-3)
// writes each link once more plainly:
//
//     <link id="n0-s0" bandwidth="100Mbps" latency="10us"/>
//     <route src="n0" dst="s0"><link_ctn id="n0-s0"/></route>
//
// SimGrid's ns-3 binding builds one point-to-point ns-3 link (full duplex,
// with its own queues and TCP) per one-hop route it is told about, and
// ignores the sharing policy. The fluid form's two directed routes per link
// would become two parallel ns-3 links, doubling every capacity; one
// symmetrical route per link gives exactly one.
//
// The hostfile (SimgridHostfile) lists one host per rank, for
// `smpirun -hostfile`, in the order of a Placement; with DefaultPlacement it
// matches what `topotune-bench --topology` assumes without --hosts.
//
// Thread-safety: pure functions; they may run concurrently.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "tuner/rank_tree.h"
#include "tuner/status.h"
#include "tuner/topology.h"

namespace topotune {

struct SimgridExportOptions {
  std::string zone_id = "topotune";  // The <zone id>.
  double host_speed_flops = 1e9;     // Every <host speed>, in flop/s ("1Gf"); > 0 and finite.
  double default_latency_s = 10e-6;  // Latency of links that have none in the topology; >= 0 and finite.
  bool ns3 = false;                  // The ns-3 form: one symmetrical route per link (see above).
};

// InvalidArgument, naming the field, when `options` has an empty zone id, a
// non-positive or infinite host speed, or a negative or infinite latency.
Status ValidateSimgridExportOptions(const SimgridExportOptions& options);

// The SimGrid platform of `topo` (see the header comment). `options` must be
// valid (ValidateSimgridExportOptions); names are XML-escaped.
std::string SimgridPlatformXml(const Topology& topo, const SimgridExportOptions& options = {});

// The smpirun hostfile of `placement`: one host name per line, rank 0 first.
// InvalidArgument when a host name cannot appear in a hostfile (whitespace
// or ':', which smpirun reads as "HOST:COUNT").
StatusOr<std::string> SimgridHostfile(const Topology& topo, const Placement& placement);

// SimGrid value strings, exact to 1e-12 relative (else the shortest
// round-trip number in the base unit): bandwidth from bit/s ("100Mbps",
// "2.5Gbps", "1.5kbps"), latency from seconds ("10us", "1.5ms", "0s") and
// speed from flop/s ("1Gf", "500Mf").
std::string SimgridBandwidth(double bits_per_s);
std::string SimgridLatency(double seconds);
std::string SimgridSpeed(double flops);

// Parses a host speed as SimGrid writes it: a number with an optional
// decimal prefix (k, M, G, T, P) and the unit "f" or "flops" ("1Gf",
// "500Mf", "2.5e9f"). Nullopt when malformed, non-positive or infinite.
std::optional<double> ParseSimgridSpeed(std::string_view text);

}  // namespace topotune
