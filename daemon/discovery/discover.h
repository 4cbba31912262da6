// Discovery end to end: crawl the switches from seed addresses through LLDP
// management addresses, walking many at once, then build the tree
// (tree_builder.h). Also the same from recorded walks, with no socket. The
// crawl does not follow LLDP neighbours seen on management ports (ports that
// are not bridge ports), so that the management network is not walked, nor
// the switches that BuildOptions::exclude_switches names: an excluded
// address is never walked, and a walked switch whose sysName (or address) is
// excluded is set aside and not followed.
//
// The crawl never throws and never fails as a whole because of one switch:
// an unreachable seed, a switch that times out or answers garbage becomes a
// warning. A switch that did not answer in time may only be slow (a busy
// management CPU, an agent that builds its LLDP table on demand), and behind
// it lies its whole subtree: every address that failed with no response is
// walked once more when the crawl has nothing else to do, with a longer
// timeout (CrawlOptions::retry_timeout_factor), and the crawl goes on from
// those that answer. It runs on its own worker threads and can be
// cancelled, so the daemon runs it beside its other work.
//
// Thread-safety: Crawl and Discover may run concurrently with different
// options; the progress callback is called from one thread at a time.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "daemon/discovery/snmp_source.h"
#include "daemon/discovery/switch_walk.h"
#include "daemon/discovery/tree_builder.h"

namespace topotune::discovery {

struct CrawlProgress {
  int walked = 0;   // Switches walked successfully.
  int failed = 0;   // Addresses that could not be walked.
  int pending = 0;  // Addresses queued or being walked.
  // What just happened, e.g. "s3 at 127.1.0.3: 48 interfaces, 7 LLDP
  // neighbours: 2 switches, 4 hosts, 1 on a management port" (BuildTree's
  // classes: a bridge or router, or a switch already walked, is a switch; any
  // other one a host; rows on management ports, IsManagementPort, are counted
  // apart and not followed).
  std::string last;
};

// How to reach an address, with the transport of this attempt (the crawl's,
// or on the retry of a switch that did not answer, a longer timeout).
using SourceOpener =
    std::function<StatusOr<std::unique_ptr<SnmpSource>>(const std::string& address, const SnmpTransport& transport)>;

struct CrawlOptions {
  std::vector<std::string> seeds;  // Addresses to start from.
  SnmpCredentials credentials;
  SnmpTransport transport;
  int concurrency = 16;        // Switches walked at once.
  int max_switches = 4096;     // Stop queueing beyond this many addresses.
  bool follow_lldp = true;     // Crawl through neighbours' management addresses.
  bool walk_fdb = true;        // Walk the FDB (Discover: afterwards, only where a known MAC may be).
  std::string save_walks_dir;  // If set, each walk is saved as <dir>/<address>.snmprec.
  std::function<void(const CrawlProgress&)> progress;
  // Addresses that did not answer (IsNoResponse) are walked once more at the
  // end of the crawl with transport.timeout_s times this; 0: no retry.
  double retry_timeout_factor = 3;
  const std::atomic<bool>* cancel = nullptr;  // Set to stop queueing and return what was walked.
  SourceOpener open;                          // How to reach an address; default: OpenNetSnmp with the options above.
  // How to build the tree (Discover); its exclude_switches also limit the
  // crawl, and its data_vlan the FDB walk (WalkFdb).
  BuildOptions build = {};
};

struct CrawlResult {
  std::vector<SwitchWalk> walks;  // Seeds' switches first, in crawl order.
  std::vector<std::string> warnings;
  // Addresses that were queued or found but not walked, and why: the SNMP
  // error ("198.18.0.9:161: no response (timeout)"), the address limit, or
  // "excluded (exclude_switches)".
  std::map<std::string, std::string> not_walked;
  int64_t requests = 0;       // SNMP requests over all switches.
  int unreachable = 0;        // Addresses not walked in the end, on the retry too.
  int retried = 0;            // Addresses walked again because they did not answer the first time.
  int answered_on_retry = 0;  // Of those, the ones that answered (each also a warning: raise the timeout).
  // Their addresses: Discover walks their FDB with the retry's timeout too.
  std::set<std::string> slow = {};
  double seconds = 0;
  // Switches walked but excluded by name (build.exclude_switches names their
  // sysName or own address): not followed and not in `walks`, in crawl order.
  std::vector<SwitchWalk> excluded = {};
  // Seeds that build.exclude_switches names, not walked (a warning each).
  std::vector<std::string> excluded_seeds = {};
};

CrawlResult Crawl(const CrawlOptions& options);

// Walks recorded walk files (.snmprec or snmpwalk -On output), one switch per
// file, in order. A file that cannot be read is an error; bad lines in it are
// warnings of its walk, and so is a file with no SNMP record at all
// ("FILE: the file is empty", "FILE: none of its N line(s) is an SNMP
// record"; BuildTree then says that nothing could be parsed from it).
StatusOr<std::vector<SwitchWalk>> WalksFromFiles(const std::vector<std::string>& paths);

struct DiscoveryReport {
  DiscoveredTree tree;
  int switches_walked = 0;
  int unreachable = 0;
  int64_t requests = 0;
  double seconds = 0;
  int retried = 0;            // CrawlResult::retried.
  int answered_on_retry = 0;  // CrawlResult::answered_on_retry.
};

// Crawl without the FDB; then, with host facts, walk the FDB of the switches
// that SwitchesNeedingFdb picks (only build.data_vlan's part, when set; a
// switch that answered the crawl only when tried again, with the retry's
// longer timeout); then
// BuildTree with options.build, the walks the crawl set aside included (so
// that they count as matched and are noted). Crawl warnings come first in
// the tree's warnings. `diagnostics`, if given, receives them and BuildTree's
// (on failure too), and the neighbours not walked, with the crawl's reason
// for each address it could not walk. When no switch could be walked at all,
// the error lists the crawl's warnings itself and `diagnostics` stays empty.
StatusOr<DiscoveryReport> Discover(const CrawlOptions& options, const std::vector<HostFact>& facts,
                                   Diagnostics* diagnostics = nullptr);

}  // namespace topotune::discovery
