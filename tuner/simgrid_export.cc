#include "tuner/simgrid_export.h"

#include <fmt/format.h>

#include <cassert>
#include <charconv>
#include <cmath>
#include <span>
#include <unordered_set>

namespace topotune {
namespace {

struct Unit {
  double scale;
  const char* name;
};

constexpr Unit kBandwidthUnits[] = {{1e12, "Tbps"}, {1e9, "Gbps"}, {1e6, "Mbps"}, {1e3, "kbps"}};
constexpr Unit kLatencyUnits[] = {{1, "s"}, {1e-3, "ms"}, {1e-6, "us"}, {1e-9, "ns"}};
constexpr Unit kSpeedUnits[] = {{1e12, "Tf"}, {1e9, "Gf"}, {1e6, "Mf"}, {1e3, "kf"}};

// `value` in the largest unit it reaches, when six decimals say it exactly
// (to 1e-12 relative); else the shortest round-trip number in `base`.
std::string WithUnit(double value, std::span<const Unit> units, const char* base) {
  for (const Unit& u : units) {
    if (value < u.scale) continue;
    const double scaled = value / u.scale;
    std::string text = fmt::format("{:.6f}", scaled);
    while (text.back() == '0') text.pop_back();
    if (text.back() == '.') text.pop_back();
    double back = 0;
    std::from_chars(text.data(), text.data() + text.size(), back);
    if (std::abs(back - scaled) <= 1e-12 * scaled) return text + u.name;
  }
  return fmt::format("{}{}", value, base);
}

// Text safe inside a double-quoted XML attribute.
std::string XmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// Text safe inside an XML comment, which may not contain "--".
std::string CommentSafe(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '-' && !out.empty() && out.back() == '-') out += ' ';
    out += c;
  }
  if (!out.empty() && out.back() == '-') out += ' ';
  return out;
}

}  // namespace

Status ValidateSimgridExportOptions(const SimgridExportOptions& options) {
  if (options.zone_id.empty()) return Status::InvalidArgument("zone id: empty; the <zone id> must be a non-empty name");
  if (!(options.host_speed_flops > 0) || !std::isfinite(options.host_speed_flops))
    return Status::InvalidArgument(
        fmt::format("host speed: {} flop/s; it must be positive and finite (e.g. 1Gf)", options.host_speed_flops));
  if (!(options.default_latency_s >= 0) || !std::isfinite(options.default_latency_s))
    return Status::InvalidArgument(fmt::format(
        "default latency: {} s; it must be zero or positive and finite (e.g. 10us)", options.default_latency_s));
  return Status::Ok();
}

std::string SimgridBandwidth(double bits_per_s) { return WithUnit(bits_per_s, kBandwidthUnits, "bps"); }
std::string SimgridLatency(double seconds) { return WithUnit(seconds, kLatencyUnits, "s"); }
std::string SimgridSpeed(double flops) { return WithUnit(flops, kSpeedUnits, "f"); }

std::optional<double> ParseSimgridSpeed(std::string_view text) {
  double value = 0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(begin, end, value);
  if (ec != std::errc() || ptr == begin) return std::nullopt;
  const std::string_view unit(ptr, static_cast<size_t>(end - ptr));
  double scale = 0;
  if (unit == "f" || unit == "flops") {
    scale = 1;
  } else {
    for (const Unit& u : kSpeedUnits) {
      if (unit == u.name) scale = u.scale;
    }
    if (unit == "Pf") scale = 1e15;
  }
  if (scale == 0) return std::nullopt;
  value *= scale;
  if (!(value > 0) || !std::isfinite(value)) return std::nullopt;
  return value;
}

std::string SimgridPlatformXml(const Topology& topo, const SimgridExportOptions& options) {
  assert(ValidateSimgridExportOptions(options).ok());
  const std::vector<Node>& nodes = topo.nodes();
  const std::vector<Link>& links = topo.links();
  int num_switches = 0;
  for (const Node& n : nodes) num_switches += n.kind == NodeKind::kSwitch ? 1 : 0;

  // Link ids: "a-b"; made unique with "#index" should two names join to the
  // same text (names may contain '-').
  std::vector<std::string> link_ids(links.size());
  std::unordered_set<std::string> used;
  for (size_t i = 0; i < links.size(); ++i) {
    std::string id = nodes[links[i].a].name + "-" + nodes[links[i].b].name;
    if (!used.insert(id).second) {
      id += fmt::format("#{}", i);
      used.insert(id);
    }
    link_ids[i] = std::move(id);
  }

  std::string out;
  out += "<?xml version='1.0'?>\n";
  out += "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n";
  const char* link_text =
      options.ns3
          ? "     Links are ns-3 point-to-point links (full duplex, one per link: one symmetrical one-hop\n"
            "     route each), for network/model:ns-3.\n"
          : "     Links are SPLITDUPLEX (full duplex: each direction has the full bandwidth); a link's UP half\n"
            "     carries traffic from its first endpoint to its second.\n";
  out += fmt::format(
      "<!-- Exported by topotune from {}: {} switches (routers), {} hosts, {} links.\n"
      "{}"
      "     Links without a latency in the topology get {}. Floyd routing composes the one-hop routes\n"
      "     into tree paths. -->\n",
      CommentSafe(topo.source()), num_switches, topo.hosts().size(), links.size(), link_text,
      SimgridLatency(options.default_latency_s));
  out += "<platform version=\"4.1\">\n";
  out += fmt::format("  <zone id=\"{}\" routing=\"Floyd\">\n", XmlEscape(options.zone_id));
  const std::string speed = SimgridSpeed(options.host_speed_flops);
  for (const Node& n : nodes) {
    if (n.kind == NodeKind::kSwitch) out += fmt::format("    <router id=\"{}\"/>\n", XmlEscape(n.name));
  }
  for (int h : topo.hosts()) {
    out += fmt::format("    <host id=\"{}\" speed=\"{}\" core=\"{}\"/>\n", XmlEscape(nodes[h].name), speed,
                       nodes[h].slots);
  }
  const char* policy = options.ns3 ? "" : " sharing_policy=\"SPLITDUPLEX\"";
  for (size_t i = 0; i < links.size(); ++i) {
    const double latency = links[i].latency_s > 0 ? links[i].latency_s : options.default_latency_s;
    out += fmt::format("    <link id=\"{}\" bandwidth=\"{}\" latency=\"{}\"{}/>\n", XmlEscape(link_ids[i]),
                       SimgridBandwidth(links[i].speed_bps), SimgridLatency(latency), policy);
  }
  for (size_t i = 0; i < links.size(); ++i) {
    const std::string a = XmlEscape(nodes[links[i].a].name);
    const std::string b = XmlEscape(nodes[links[i].b].name);
    const std::string id = XmlEscape(link_ids[i]);
    if (options.ns3) {
      out += fmt::format("    <route src=\"{}\" dst=\"{}\"><link_ctn id=\"{}\"/></route>\n", a, b, id);
      continue;
    }
    out += fmt::format(
        "    <route src=\"{}\" dst=\"{}\" symmetrical=\"NO\"><link_ctn id=\"{}\" direction=\"UP\"/></route>\n", a, b,
        id);
    out += fmt::format(
        "    <route src=\"{}\" dst=\"{}\" symmetrical=\"NO\"><link_ctn id=\"{}\" direction=\"DOWN\"/></route>\n", b, a,
        id);
  }
  out += "  </zone>\n";
  out += "</platform>\n";
  return out;
}

StatusOr<std::string> SimgridHostfile(const Topology& topo, const Placement& placement) {
  std::string out;
  for (int rank = 0; rank < placement.num_ranks(); ++rank) {
    const int host = placement.rank_host[rank];
    if (host < 0 || host >= topo.num_nodes() || !topo.is_host(host))
      return Status::InvalidArgument(fmt::format("rank {}: node {} is not a host of {}", rank, host, topo.source()));
    const std::string& name = topo.nodes()[host].name;
    for (char c : name) {
      if (c == ':' || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f') {
        return Status::InvalidArgument(
            fmt::format("{}: host '{}' cannot be written to an smpirun hostfile: its name contains whitespace or ':' "
                        "(smpirun reads 'HOST:COUNT'); rename the host",
                        topo.source(), name));
      }
    }
    out += name;
    out += '\n';
  }
  return out;
}

}  // namespace topotune
