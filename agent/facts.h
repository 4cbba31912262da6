// The facts an agent registers about its host (v1::HostFacts): hostname,
// MACs, the speed of the NIC that carries MPI traffic, online cores and the
// LLDP neighbour of that NIC.
//
// Where they come from:
//   hostname       --hostname, else gethostname()
//   macs           <sysfs>/*/address of every interface that is not a
//                  loopback (type 772), six-byte addresses only, all-zero
//                  ones skipped, lower-case, no duplicates, ifindex order
//   interface      --interface, else the first interface (ifindex order)
//                  whose operstate is "up" and that is not a loopback
//   nic_speed_bps  <sysfs>/IF/speed (Mb/s) x 10^6; 0 when unreadable, not a
//                  number, or -1 (virtual NICs)
//   cores          sysconf(_SC_NPROCESSORS_ONLN)
//   lldp_neighbor  lldpcli (lldp.h) on that interface, when lldpcli exists and
//                  lldpd answers
// <sysfs> is /sys/class/net, a parameter so that tests use a fake directory.
// The rest of the OS goes through HostEnv, which tests replace.
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

// What the host's OS says, behind an interface that tests replace.
class HostEnv {
 public:
  virtual ~HostEnv() = default;
  virtual StatusOr<std::string> Hostname() = 0;
  virtual int OnlineCores() = 0;
  // The output of `lldpcli -f json show neighbors` (lldp.h RunLldpcli), with
  // `lldpd_socket` passed as -u when not empty.
  virtual StatusOr<std::string> LldpNeighborsJson(const std::string& lldpd_socket) = 0;
};

// The real OS: gethostname, sysconf, lldpcli with a 5 s limit.
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

struct FactsOptions {
  std::string hostname;   // Non-empty: instead of gethostname().
  std::string interface;  // Non-empty: the MPI interface; else DefaultInterface.
  std::string sysfs_net_root = "/sys/class/net";
  std::string lldpd_socket;  // lldpcli -u; empty: lldpd's default socket.
  bool lldp = true;          // false: do not run lldpcli.
};

struct Facts {
  v1::HostFacts host;
  std::string interface;              // The MPI interface the speed and neighbour are of; "" when none.
  std::vector<std::string> warnings;  // Partial facts: what is missing and why; one line each.
};

// Collects the host's facts. Fails (FailedPrecondition, naming what is
// missing and where it was looked for) only when the facts could not be
// registered at all: no hostname, no MAC, or an --interface that does not
// exist. A missing speed or neighbour is a warning.
StatusOr<Facts> CollectFacts(const FactsOptions& options, HostEnv& env);

// The facts as one JSON object (pretty-printed): what `topotune-agent facts`
// prints. Keys are the proto field names.
std::string FactsToJson(const Facts& facts);

}  // namespace topotune::agent
