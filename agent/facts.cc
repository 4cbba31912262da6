#include "agent/facts.h"

#include <fmt/format.h>
#include <limits.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <system_error>

#include "agent/lldp.h"
#include "proto/limits.h"

namespace topotune::agent {
namespace {

namespace fs = std::filesystem;

constexpr int kArphrdLoopback = 772;  // <linux/if_arp.h> ARPHRD_LOOPBACK
constexpr std::chrono::milliseconds kLldpcliTimeout{5000};

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

std::optional<int64_t> ParseInt(std::string_view s) {
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
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

  if (!options.interface.empty()) {
    const bool exists = std::any_of(interfaces->begin(), interfaces->end(),
                                    [&](const NetInterface& nif) { return nif.name == options.interface; });
    if (!exists) {
      std::string names;
      for (const NetInterface& nif : *interfaces) names += (names.empty() ? "" : ", ") + nif.name;
      return Status::FailedPrecondition(fmt::format("--interface {}: no such interface under {} (there are: {})",
                                                    options.interface, options.sysfs_net_root, names));
    }
    facts.interface = options.interface;
  } else {
    facts.interface = DefaultInterface(*interfaces);
    if (facts.interface.empty())
      facts.warnings.push_back(
          fmt::format("no interface under {} is up (other than loopbacks): NIC speed and LLDP neighbour unknown; pass "
                      "--interface IF",
                      options.sysfs_net_root));
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
  j["interface"] = facts.interface;
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
