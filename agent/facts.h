// The facts an agent registers about its host (v1::HostFacts): hostname,
// MACs, the NIC that carries MPI traffic (its name, MAC and speed), online
// cores and the LLDP neighbour of that NIC.
//
// Where they come from:
//   hostname       --hostname, else gethostname()
//   macs           <sysfs>/*/address of every interface that is not a
//                  loopback (type 772), six-byte addresses only, all-zero
//                  ones skipped, lower-case, no duplicates, ifindex order
//   mpi_interface  the first of these that names an interface (ChooseMpiInterface):
//                  1. --interface / agent.yaml `interface` (an error when
//                     there is no such interface);
//                  2. Open MPI's btl_tcp_if_include, from the environment
//                     (OMPI_MCA_btl_tcp_if_include), else from the first MCA
//                     parameter file that sets it ($HOME/.openmpi/mca-params.conf,
//                     /etc/openmpi/openmpi-mca-params.conf): a comma list of
//                     interface names and IPv4 CIDRs ("198.18.0.0/15"), of
//                     which the first entry that matches an interface wins;
//                  3. the interface of the default IPv4 route (/proc/net/route);
//                  4. the first interface (ifindex order) whose operstate is
//                     "up" and that is not a loopback.
//                  Facts::interface_source says which ("--interface",
//                  "OMPI_MCA_btl_tcp_if_include", "mca-params file PATH",
//                  "default route", "first up interface").
//   mpi_mac        <sysfs>/IF/address of that interface, when it is one of
//                  macs; empty (with a warning) otherwise
//   nic_speed_bps  <sysfs>/IF/speed (Mb/s) x 10^6; 0 when unreadable, not a
//                  number, or -1 (virtual NICs)
//   cores          sysconf(_SC_NPROCESSORS_ONLN)
//   lldp_neighbor  lldpcli (lldp.h) on that interface, when lldpcli exists and
//                  lldpd answers
// <sysfs> (/sys/class/net), /proc/net/route and the MCA parameter files are
// paths in FactsOptions, so that tests use fake files. The rest of the OS
// (hostname, cores, lldpcli, interface addresses, environment) goes through
// HostEnv, which tests replace.
//
// Thread-safety: the functions share no state; a HostEnv is as thread-safe
// as its implementation (SystemHostEnv's is).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "topotune/v1/agents.pb.h"
#include "tuner/status.h"

namespace topotune::agent {

// "00:1B:21:bb:e6:f0", "00-1b-21-bb-e6-f0" or "001b21bbe6f0" as
// "00:1b:21:bb:e6:f0"; nullopt for anything else (other lengths included).
std::optional<std::string> NormalizeMac(std::string_view text);

// One IPv4 address of an interface, as getifaddrs lists it.
struct InterfaceAddress {
  std::string interface;  // "eth0".
  std::string ipv4;       // Dotted quad, "198.18.0.5".
};

// What the host's OS says, behind an interface that tests replace.
class HostEnv {
 public:
  virtual ~HostEnv() = default;
  virtual StatusOr<std::string> Hostname() = 0;
  virtual int OnlineCores() = 0;
  // The output of `lldpcli -f json show neighbors` (lldp.h RunLldpcli), with
  // `lldpd_socket` passed as -u when not empty.
  virtual StatusOr<std::string> LldpNeighborsJson(const std::string& lldpd_socket) = 0;
  // The IPv4 addresses of every interface, in the order the OS lists them
  // (other address families are left out).
  virtual StatusOr<std::vector<InterfaceAddress>> InterfaceAddresses() = 0;
  // The environment variable `name`; nullopt when it is not set.
  virtual std::optional<std::string> Getenv(const std::string& name) = 0;
};

// The real OS: gethostname, sysconf, lldpcli with a 5 s limit, getifaddrs,
// getenv.
std::unique_ptr<HostEnv> SystemHostEnv();

// One entry of <sysfs>.
struct NetInterface {
  std::string name;
  int ifindex = 0;  // 0 when unreadable; sorts first.
  bool loopback = false;
  std::string operstate;  // "up", "down", "unknown", ...; "" when unreadable.
  std::string mac;        // Normalised; "" when the address is not a six-byte MAC.
};

// The interfaces under `sysfs_net_root`, in ifindex order (then by name).
// IoError when the directory cannot be read.
StatusOr<std::vector<NetInterface>> ListInterfaces(const std::string& sysfs_net_root);

// <sysfs_net_root>/<interface>/speed in bits per second; 0 when unreadable,
// not a positive number of Mb/s (virtual NICs say -1 or fail with EINVAL).
int64_t ReadNicSpeedBps(const std::string& sysfs_net_root, const std::string& interface);

// The first interface that is up and not a loopback, in ifindex order; "" when
// there is none.
std::string DefaultInterface(const std::vector<NetInterface>& interfaces);

// The value of `key` in the text of an Open MPI MCA parameter file: lines
// `key = value` (spaces around '=' and the value optional), '#' starting a
// comment line; the last line that sets the key wins. nullopt when no line
// sets it.
std::optional<std::string> McaParam(std::string_view file_text, std::string_view key);

// The interface of the default IPv4 route in the text of /proc/net/route: a
// row whose Destination and Mask are 00000000 and whose Flags have RTF_UP
// (0x1); the lowest Metric when there are several. "" when there is none (a
// 0.0.0.0/1 route, as VPNs add, is not a default route).
std::string DefaultRouteInterface(std::string_view proc_net_route_text);

// The interfaces a btl_tcp_if_include value selects, in the value's order
// and without repeats: a comma-separated list of interface names (kept when
// `interfaces` has one so named) and IPv4 CIDRs ("198.18.0.0/15": every
// interface, in ifindex order, with an address of `addresses` inside it).
// Entries that are neither, IPv6 CIDRs included, select nothing.
std::vector<std::string> ResolveIfInclude(std::string_view value, const std::vector<NetInterface>& interfaces,
                                          const std::vector<InterfaceAddress>& addresses);

struct FactsOptions {
  std::string hostname;   // Non-empty: instead of gethostname().
  std::string interface;  // Non-empty: the MPI interface (--interface, agent.yaml); else ChooseMpiInterface's order.
  std::string sysfs_net_root = "/sys/class/net";
  // Open MPI's MCA parameter files, searched for btl_tcp_if_include when the
  // environment does not set it. The first file that sets it wins: Open MPI's
  // own order (mca_base_param_files), the user's file over the system's. A
  // leading "$HOME/" is HostEnv::Getenv("HOME"); such an entry is skipped when
  // HOME is not set. Missing files are skipped.
  std::vector<std::string> mca_param_files = {"$HOME/.openmpi/mca-params.conf", "/etc/openmpi/openmpi-mca-params.conf"};
  std::string proc_net_route = "/proc/net/route";  // For the default route's interface.
  std::string lldpd_socket;                        // lldpcli -u; empty: lldpd's default socket.
  bool lldp = true;                                // false: do not run lldpcli.
};

// The NIC that carries MPI traffic, and how it was found.
struct MpiInterfaceChoice {
  std::string interface;  // "" when none was found.
  // "--interface", "OMPI_MCA_btl_tcp_if_include", "mca-params file PATH",
  // "default route" or "first up interface"; "" when none was found.
  std::string source;
  std::vector<std::string> warnings;  // Settings that matched no interface, or several.
};

// Chooses the MPI interface in the order of the header comment (mpi_interface)
// among `interfaces` (ListInterfaces). Fails (FailedPrecondition, listing the
// interfaces there are) only when options.interface names none of them; a
// btl_tcp_if_include that selects nothing is a warning, and the next step is
// tried.
StatusOr<MpiInterfaceChoice> ChooseMpiInterface(const FactsOptions& options, HostEnv& env,
                                                const std::vector<NetInterface>& interfaces);

struct Facts {
  v1::HostFacts host;
  std::string interface;              // The MPI interface the speed and neighbour are of; "" when none.
  std::string interface_source;       // How `interface` was chosen (MpiInterfaceChoice::source).
  std::vector<std::string> warnings;  // Partial facts: what is missing and why; one line each.
};

// Collects the host's facts. Fails (FailedPrecondition, naming what is
// missing and where it was looked for) only when the facts could not be
// registered at all: no hostname, no MAC, or an --interface that does not
// exist. A missing speed, MPI MAC or neighbour is a warning.
StatusOr<Facts> CollectFacts(const FactsOptions& options, HostEnv& env);

// The facts as one JSON object (pretty-printed): what `topotune-agent facts`
// prints. Keys are the proto field names, plus "interface",
// "interface_source" and "warnings" of Facts.
std::string FactsToJson(const Facts& facts);

}  // namespace topotune::agent
