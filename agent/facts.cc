#include "agent/facts.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <ifaddrs.h>
#include <limits.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <system_error>
#include <utility>

#include "agent/lldp.h"
#include "proto/limits.h"

namespace topotune::agent {
namespace {

namespace fs = std::filesystem;

constexpr int kArphrdLoopback = 772;  // <linux/if_arp.h> ARPHRD_LOOPBACK
constexpr int64_t kRtfUp = 0x1;       // <linux/route.h> RTF_UP
constexpr std::chrono::milliseconds kLldpcliTimeout{5000};
constexpr const char* kIfIncludeVar = "OMPI_MCA_btl_tcp_if_include";
constexpr const char* kIfIncludeParam = "btl_tcp_if_include";
constexpr std::string_view kHomePrefix = "$HOME/";

// The first line of a sysfs attribute, without its newline; nullopt when it
// cannot be read (sysfs reads fail with EINVAL for attributes that do not
// apply, such as the speed of a down NIC).
std::optional<std::string> ReadAttribute(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
  return line;
}

std::optional<int64_t> ParseInt(std::string_view s, int base = 10) {
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (ec != std::errc() || ptr != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

// A whole file; nullopt when it cannot be read (a missing MCA parameter file
// is the common case, not an error).
std::optional<std::string> ReadTextFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// The lines of `text`, without their '\n'.
std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    out.push_back(text.substr(0, end));
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return out;
}

// The fields of `line` separated by runs of spaces and tabs.
std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    const size_t start = i;
    while (i < line.size() && !std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

// "198.18.0.5" in host byte order; nullopt for anything but a dotted quad.
std::optional<uint32_t> ParseIpv4(std::string_view text) {
  in_addr addr{};
  if (inet_pton(AF_INET, std::string(text).c_str(), &addr) != 1) return std::nullopt;
  return ntohl(addr.s_addr);
}

// An IPv4 network, "198.18.0.0/15"; the host bits of the address are ignored.
struct Ipv4Cidr {
  uint32_t network = 0;
  uint32_t mask = 0;
  bool Contains(uint32_t address) const { return (address & mask) == network; }
};

std::optional<Ipv4Cidr> ParseIpv4Cidr(std::string_view text) {
  const size_t slash = text.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  const std::optional<uint32_t> address = ParseIpv4(text.substr(0, slash));
  const std::optional<int64_t> bits = ParseInt(text.substr(slash + 1));
  if (!address || !bits || *bits < 0 || *bits > 32) return std::nullopt;
  const uint32_t mask = *bits == 0 ? uint32_t{0} : ~uint32_t{0} << (32 - *bits);
  return Ipv4Cidr{*address & mask, mask};
}

// Whether getifaddrs' name `label` is interface `name`: the same, or one of
// its legacy alias labels ("eth0:1").
bool IsLabelOf(std::string_view label, std::string_view name) {
  return label == name || (label.size() > name.size() && label.starts_with(name) && label[name.size()] == ':');
}

// btl_tcp_if_include as Open MPI would take it: the environment over the MCA
// parameter files, and the first file that sets it over the later ones.
// Returns {value, where it comes from}; nullopt when nothing sets it.
std::optional<std::pair<std::string, std::string>> IfIncludeSetting(const FactsOptions& options, HostEnv& env) {
  if (std::optional<std::string> v = env.Getenv(kIfIncludeVar); v && !Trim(*v).empty())
    return std::make_pair(*v, std::string(kIfIncludeVar));
  for (const std::string& entry : options.mca_param_files) {
    std::string path = entry;
    if (path.starts_with(kHomePrefix)) {
      std::optional<std::string> home = env.Getenv("HOME");
      if (!home || home->empty()) continue;
      path = *home + path.substr(kHomePrefix.size() - 1);  // Keeps the '/'.
    }
    std::optional<std::string> text = ReadTextFile(path);
    if (!text) continue;
    if (std::optional<std::string> v = McaParam(*text, kIfIncludeParam); v && !v->empty())
      return std::make_pair(*v, "mca-params file " + path);
  }
  return std::nullopt;
}

class SystemEnv final : public HostEnv {
 public:
  StatusOr<std::string> Hostname() override {
    char buf[HOST_NAME_MAX + 1] = {};
    if (gethostname(buf, sizeof(buf) - 1) != 0)
      return Status::FailedPrecondition(fmt::format("gethostname failed: {}", std::strerror(errno)));
    return std::string(buf);
  }
  int OnlineCores() override { return static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)); }
  StatusOr<std::string> LldpNeighborsJson(const std::string& lldpd_socket) override {
    return RunLldpcli(lldpd_socket, kLldpcliTimeout);
  }
  StatusOr<std::vector<InterfaceAddress>> InterfaceAddresses() override {
    ifaddrs* list = nullptr;
    if (getifaddrs(&list) != 0) return Status::IoError(fmt::format("getifaddrs failed: {}", std::strerror(errno)));
    std::vector<InterfaceAddress> out;
    for (const ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
      if (a->ifa_name == nullptr || a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
      const auto* in = reinterpret_cast<const sockaddr_in*>(a->ifa_addr);
      char text[INET_ADDRSTRLEN] = {};
      if (inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text)) == nullptr) continue;
      out.push_back(InterfaceAddress{a->ifa_name, text});
    }
    freeifaddrs(list);
    return out;
  }
  std::optional<std::string> Getenv(const std::string& name) override {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  }
};

}  // namespace

std::optional<std::string> NormalizeMac(std::string_view text) {
  std::string hex;
  if (text.size() == 17) {
    const char sep = text[2];
    if (sep != ':' && sep != '-') return std::nullopt;
    for (size_t i = 0; i < text.size(); ++i) {
      if (i % 3 == 2) {
        if (text[i] != sep) return std::nullopt;
      } else {
        hex.push_back(text[i]);
      }
    }
  } else if (text.size() == 12) {
    hex = std::string(text);
  } else {
    return std::nullopt;
  }
  std::string out;
  for (size_t i = 0; i < hex.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(hex[i]);
    if (!std::isxdigit(c)) return std::nullopt;
    if (i > 0 && i % 2 == 0) out.push_back(':');
    out.push_back(static_cast<char>(std::tolower(c)));
  }
  return out;
}

std::unique_ptr<HostEnv> SystemHostEnv() { return std::make_unique<SystemEnv>(); }

StatusOr<std::vector<NetInterface>> ListInterfaces(const std::string& sysfs_net_root) {
  std::error_code ec;
  fs::directory_iterator it(sysfs_net_root, ec);
  if (ec) return Status::IoError(fmt::format("cannot list network interfaces in {}: {}", sysfs_net_root, ec.message()));
  std::vector<NetInterface> out;
  for (const fs::directory_entry& e : it) {
    NetInterface nif;
    nif.name = e.path().filename().string();
    const fs::path dir = e.path();
    if (auto v = ReadAttribute(dir / "ifindex"); v && ParseInt(*v)) nif.ifindex = static_cast<int>(*ParseInt(*v));
    if (auto v = ReadAttribute(dir / "type"); v && ParseInt(*v)) nif.loopback = *ParseInt(*v) == kArphrdLoopback;
    // Older kernels and some fakes have no type: the IFF_LOOPBACK flag (0x8).
    if (auto v = ReadAttribute(dir / "flags"); v && v->starts_with("0x")) {
      int64_t flags = 0;
      auto [p, ec2] = std::from_chars(v->data() + 2, v->data() + v->size(), flags, 16);
      if (ec2 == std::errc() && (flags & 0x8)) nif.loopback = true;
    }
    nif.operstate = ReadAttribute(dir / "operstate").value_or("");
    if (auto v = ReadAttribute(dir / "address")) nif.mac = NormalizeMac(*v).value_or("");
    out.push_back(std::move(nif));
  }
  std::sort(out.begin(), out.end(), [](const NetInterface& a, const NetInterface& b) {
    return a.ifindex != b.ifindex ? a.ifindex < b.ifindex : a.name < b.name;
  });
  return out;
}

int64_t ReadNicSpeedBps(const std::string& sysfs_net_root, const std::string& interface) {
  if (interface.empty()) return 0;
  std::optional<std::string> v = ReadAttribute(fs::path(sysfs_net_root) / interface / "speed");
  if (!v) return 0;
  std::optional<int64_t> mbps = ParseInt(*v);
  // Up to 2^43 Mb/s, far beyond any NIC, keeps the product in int64.
  if (!mbps || *mbps <= 0 || *mbps > (int64_t{1} << 43)) return 0;
  return *mbps * 1000000;
}

std::string DefaultInterface(const std::vector<NetInterface>& interfaces) {
  auto it = std::find_if(interfaces.begin(), interfaces.end(),
                         [](const NetInterface& nif) { return !nif.loopback && nif.operstate == "up"; });
  return it == interfaces.end() ? "" : it->name;
}

std::optional<std::string> McaParam(std::string_view file_text, std::string_view key) {
  std::optional<std::string> value;
  for (std::string_view line : Lines(file_text)) {
    line = Trim(line);
    if (line.empty() || line.front() == '#') continue;
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos || Trim(line.substr(0, eq)) != key) continue;
    value = std::string(Trim(line.substr(eq + 1)));
  }
  return value;
}

std::string DefaultRouteInterface(std::string_view proc_net_route_text) {
  // Iface Destination Gateway Flags RefCnt Use Metric Mask MTU Window IRTT;
  // addresses and flags in hex, the metric in decimal.
  std::string best;
  int64_t best_metric = 0;
  for (std::string_view line : Lines(proc_net_route_text)) {
    const std::vector<std::string_view> f = Fields(line);
    if (f.size() < 8 || f[0] == "Iface") continue;
    if (f[1] != "00000000" || f[7] != "00000000") continue;
    const std::optional<int64_t> flags = ParseInt(f[3], 16);
    const std::optional<int64_t> metric = ParseInt(f[6]);
    if (!flags || !(*flags & kRtfUp) || !metric) continue;
    if (best.empty() || *metric < best_metric) {
      best = std::string(f[0]);
      best_metric = *metric;
    }
  }
  return best;
}

std::vector<std::string> ResolveIfInclude(std::string_view value, const std::vector<NetInterface>& interfaces,
                                          const std::vector<InterfaceAddress>& addresses) {
  std::vector<std::string> out;
  auto add = [&out](const std::string& name) {
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  };
  while (!value.empty()) {
    const size_t comma = value.find(',');
    const std::string_view entry = Trim(value.substr(0, comma));
    value.remove_prefix(comma == std::string_view::npos ? value.size() : comma + 1);
    if (entry.empty()) continue;
    if (entry.find('/') == std::string_view::npos) {
      for (const NetInterface& nif : interfaces)
        if (nif.name == entry) add(nif.name);
      continue;
    }
    const std::optional<Ipv4Cidr> cidr = ParseIpv4Cidr(entry);
    if (!cidr) continue;
    for (const NetInterface& nif : interfaces) {
      const bool inside = std::any_of(addresses.begin(), addresses.end(), [&](const InterfaceAddress& a) {
        const std::optional<uint32_t> ip = ParseIpv4(a.ipv4);
        return IsLabelOf(a.interface, nif.name) && ip && cidr->Contains(*ip);
      });
      if (inside) add(nif.name);
    }
  }
  return out;
}

StatusOr<MpiInterfaceChoice> ChooseMpiInterface(const FactsOptions& options, HostEnv& env,
                                                const std::vector<NetInterface>& interfaces) {
  MpiInterfaceChoice choice;
  auto exists = [&interfaces](const std::string& name) {
    return std::any_of(interfaces.begin(), interfaces.end(), [&](const NetInterface& nif) { return nif.name == name; });
  };

  if (!options.interface.empty()) {
    if (!exists(options.interface)) {
      std::string names;
      for (const NetInterface& nif : interfaces) names += (names.empty() ? "" : ", ") + nif.name;
      return Status::FailedPrecondition(fmt::format("--interface {}: no such interface under {} (there are: {})",
                                                    options.interface, options.sysfs_net_root, names));
    }
    choice.interface = options.interface;
    choice.source = "--interface";
    return choice;
  }

  // What Open MPI's TCP transport is told to use. Interface addresses are
  // read only when a CIDR needs them.
  if (std::optional<std::pair<std::string, std::string>> setting = IfIncludeSetting(options, env)) {
    const auto& [value, source] = *setting;
    std::vector<InterfaceAddress> addresses;
    if (value.find('/') != std::string::npos) {
      StatusOr<std::vector<InterfaceAddress>> read = env.InterfaceAddresses();
      if (read.ok()) {
        addresses = std::move(read).value();
      } else {
        choice.warnings.push_back(fmt::format("{}: cannot match the CIDRs of {} '{}': {}", source, kIfIncludeParam,
                                              value, read.status().message()));
      }
    }
    const std::vector<std::string> selected = ResolveIfInclude(value, interfaces, addresses);
    if (selected.empty()) {
      choice.warnings.push_back(fmt::format("{}: {} '{}' matches no interface under {}; ignored", source,
                                            kIfIncludeParam, value, options.sysfs_net_root));
    } else {
      if (selected.size() > 1)
        choice.warnings.push_back(
            fmt::format("{}: {} '{}' selects {} interfaces ({}); the first, {}, is reported as the MPI interface (set "
                        "`interface` in agent.yaml to choose)",
                        source, kIfIncludeParam, value, selected.size(), fmt::join(selected, ", "), selected.front()));
      choice.interface = selected.front();
      choice.source = source;
      return choice;
    }
  }

  if (std::optional<std::string> routes = ReadTextFile(options.proc_net_route)) {
    // A route through an interface that is not listed (only with fake
    // sysfs directories) falls through to the next step.
    const std::string name = DefaultRouteInterface(*routes);
    if (!name.empty() && exists(name)) {
      choice.interface = name;
      choice.source = "default route";
      return choice;
    }
  }

  choice.interface = DefaultInterface(interfaces);
  if (!choice.interface.empty()) choice.source = "first up interface";
  return choice;
}

StatusOr<Facts> CollectFacts(const FactsOptions& options, HostEnv& env) {
  Facts facts;
  v1::HostFacts& host = facts.host;

  if (!options.hostname.empty()) {
    host.set_hostname(options.hostname);
  } else {
    StatusOr<std::string> name = env.Hostname();
    if (!name.ok()) return name.status();
    if (name->empty()) return Status::FailedPrecondition("the host has no hostname; pass --hostname NAME");
    host.set_hostname(*name);
  }

  StatusOr<std::vector<NetInterface>> interfaces = ListInterfaces(options.sysfs_net_root);
  if (!interfaces.ok()) return interfaces.status();
  std::set<std::string> seen;
  for (const NetInterface& nif : *interfaces) {
    if (nif.loopback || nif.mac.empty() || nif.mac == "00:00:00:00:00:00") continue;
    if (!seen.insert(nif.mac).second) continue;  // Bridges, bonds and VLANs share their port's MAC.
    if (host.macs_size() >= v1::limits::kMaxMacs) {
      facts.warnings.push_back(
          fmt::format("more than {} MAC addresses; {} and later ones are left out", v1::limits::kMaxMacs, nif.name));
      break;
    }
    host.add_macs(nif.mac);
  }
  if (host.macs_size() == 0) {
    return Status::FailedPrecondition(
        fmt::format("no MAC address found: no interface under {} other than loopbacks has a six-byte, non-zero "
                    "address",
                    options.sysfs_net_root));
  }

  StatusOr<MpiInterfaceChoice> choice = ChooseMpiInterface(options, env, *interfaces);
  if (!choice.ok()) return choice.status();
  facts.interface = choice->interface;
  facts.interface_source = choice->source;
  facts.warnings.insert(facts.warnings.end(), choice->warnings.begin(), choice->warnings.end());
  if (facts.interface.empty()) {
    facts.warnings.push_back(
        fmt::format("no interface under {} is up (other than loopbacks): MPI NIC, its speed and LLDP neighbour "
                    "unknown; pass --interface IF",
                    options.sysfs_net_root));
  } else {
    host.set_mpi_interface(facts.interface);
    // Discovery looks the MPI NIC up among the MACs, so only one of them is
    // reported (validate.cc rejects any other).
    auto nif = std::find_if(interfaces->begin(), interfaces->end(),
                            [&](const NetInterface& n) { return n.name == facts.interface; });
    const bool listed = nif != interfaces->end() && !nif->mac.empty() &&
                        std::find(host.macs().begin(), host.macs().end(), nif->mac) != host.macs().end();
    if (listed) {
      host.set_mpi_mac(nif->mac);
    } else {
      facts.warnings.push_back(
          fmt::format("{} (the MPI interface, from {}) has no six-byte MAC among the host's MACs: mpi_mac is not "
                      "reported, so discovery cannot tell its switch port from the host's other NICs'",
                      facts.interface, facts.interface_source));
    }
  }

  host.set_nic_speed_bps(ReadNicSpeedBps(options.sysfs_net_root, facts.interface));
  if (!facts.interface.empty() && host.nic_speed_bps() == 0)
    facts.warnings.push_back(fmt::format("{}: speed unknown (no {}/{}/speed, or -1); reporting 0", facts.interface,
                                         options.sysfs_net_root, facts.interface));

  const int cores = env.OnlineCores();
  host.set_cores(std::clamp(cores, 1, v1::limits::kMaxCores));
  if (cores < 1) facts.warnings.push_back("the number of online cores is unknown; reporting 1");

  if (options.lldp && !facts.interface.empty()) {
    StatusOr<std::string> text = env.LldpNeighborsJson(options.lldpd_socket);
    if (!text.ok()) {
      facts.warnings.push_back(fmt::format("no LLDP neighbour: {}", text.status().message()));
    } else {
      LldpNeighbors all = ParseLldpcliJson(*text);
      facts.warnings.insert(facts.warnings.end(), all.warnings.begin(), all.warnings.end());
      if (std::optional<v1::LldpNeighbor> n = NeighborOn(all, facts.interface, &facts.warnings)) {
        *host.mutable_lldp_neighbor() = std::move(*n);
      } else {
        facts.warnings.push_back(fmt::format("lldpd has heard no LLDP neighbour on {} (yet)", facts.interface));
      }
    }
  }
  return facts;
}

std::string FactsToJson(const Facts& facts) {
  const v1::HostFacts& h = facts.host;
  nlohmann::ordered_json j;
  j["hostname"] = h.hostname();
  j["macs"] = nlohmann::ordered_json::array();
  for (const std::string& m : h.macs()) j["macs"].push_back(m);
  j["mpi_mac"] = h.mpi_mac();
  j["mpi_interface"] = h.mpi_interface();
  j["interface"] = facts.interface;
  j["interface_source"] = facts.interface_source;
  j["nic_speed_bps"] = h.nic_speed_bps();
  j["cores"] = h.cores();
  if (h.has_lldp_neighbor()) {
    const v1::LldpNeighbor& n = h.lldp_neighbor();
    nlohmann::ordered_json ln;
    ln["local_interface"] = n.local_interface();
    ln["chassis_id_subtype"] = v1::LldpChassisIdSubtype_Name(n.chassis_id_subtype());
    ln["chassis_id"] = n.chassis_id();
    ln["system_name"] = n.system_name();
    ln["port_id_subtype"] = v1::LldpPortIdSubtype_Name(n.port_id_subtype());
    ln["port_id"] = n.port_id();
    ln["port_description"] = n.port_description();
    ln["management_address"] = n.management_address();
    j["lldp_neighbor"] = std::move(ln);
  } else {
    j["lldp_neighbor"] = nullptr;
  }
  j["warnings"] = facts.warnings;
  return j.dump(2);
}

}  // namespace topotune::agent
