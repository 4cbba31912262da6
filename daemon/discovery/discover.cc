#include "daemon/discovery/discover.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <set>
#include <thread>

#include "daemon/discovery/recorded_walk.h"

namespace topotune::discovery {
namespace {

// "6 LLDP neighbours: 2 switches, 4 hosts", then ", 1 on a management port"
// when some are.
std::string NeighbourCounts(int neighbours, int switches, int management) {
  if (neighbours == 0) return "0 LLDP neighbours";
  int hosts = neighbours - switches - management;
  std::string s = fmt::format("{} LLDP neighbour{}: {} switch{}, {} host{}", neighbours, neighbours == 1 ? "" : "s",
                              switches, switches == 1 ? "" : "es", hosts, hosts == 1 ? "" : "s");
  if (management == 1) return s + ", 1 on a management port";
  if (management > 1) return s + fmt::format(", {} on management ports", management);
  return s;
}

}  // namespace

CrawlResult Crawl(const CrawlOptions& options) {
  auto start = std::chrono::steady_clock::now();
  CrawlResult result;
  SourceOpener open = options.open;
  if (!open) {
    open = [&](const std::string& address, const SnmpTransport& transport) {
      return OpenNetSnmp(address, options.credentials, transport);
    };
  }
  if (!options.save_walks_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(options.save_walks_dir, ec);
    if (ec)
      result.warnings.push_back(
          fmt::format("cannot create {} to save the walks: {}", options.save_walks_dir, ec.message()));
  }

  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::string> queue;
  std::set<std::string> queued;   // Every address ever queued.
  std::set<std::string> chassis;  // Chassis IDs already walked.
  int in_flight = 0;
  CrawlProgress progress;
  // Walk results land in slots in queue order, so the output order does not
  // depend on thread timing; so do the walks set aside by exclude_switches.
  std::map<size_t, SwitchWalk> done, excluded;
  std::map<std::string, size_t> order;
  // Switches that did not answer, walked once more when the queue runs dry
  // (CrawlOptions::retry_timeout_factor); the error of each first try.
  const bool retry = options.retry_timeout_factor > 0;
  SnmpTransport retry_transport = options.transport;
  retry_transport.timeout_s *= options.retry_timeout_factor;
  std::map<size_t, std::string> unanswered;  // By queue order, so that the retry's order is the crawl's.
  std::set<std::string> retrying;
  std::map<std::string, std::string> first_error;
  auto not_walked = [&](const std::string& address, const std::string& why) {
    ++progress.failed;
    ++result.unreachable;
    result.warnings.push_back(fmt::format("{}: not walked: {}", address, why));
    result.not_walked[address] = fmt::format("not walked: {}", why);
    progress.last = fmt::format("{}: not walked", address);
  };

  // exclude_switches: an address it names is never walked; a neighbour it
  // names (by sysName or address) is not followed; a walked switch it names
  // is set aside (CrawlResult::excluded) and not followed.
  const std::vector<std::string>& exclude = options.build.exclude_switches;
  auto excluded_address = [&](const std::string& address) {
    return std::find(exclude.begin(), exclude.end(), address) != exclude.end();
  };
  auto excluded_neighbour = [&](const LldpRemote& row) {
    return std::any_of(exclude.begin(), exclude.end(), [&](const std::string& e) { return ExcludesNeighbour(e, row); });
  };
  auto excluding_entry = [&](const SwitchWalk& walk) -> const std::string* {
    for (const std::string& e : exclude)
      if (ExcludesSwitch(e, walk)) return &e;
    return nullptr;
  };

  auto enqueue = [&](const std::string& address) {
    if (address.empty() || queued.count(address)) return;
    if (excluded_address(address)) {
      result.not_walked.emplace(address, "excluded (exclude_switches)");
      return;
    }
    if (static_cast<int>(queued.size()) >= options.max_switches) {
      if (static_cast<int>(queued.size()) == options.max_switches)
        result.warnings.push_back(
            fmt::format("more than {} switch addresses found; the rest are not walked (raise --max-switches)",
                        options.max_switches));
      queued.insert("");  // Warn once.
      result.not_walked.emplace(address, fmt::format("not queued: more than {} switch addresses found (raise "
                                                     "--max-switches)",
                                                     options.max_switches));
      return;
    }
    order.emplace(address, order.size());
    queued.insert(address);
    queue.push_back(address);
    ++progress.pending;
  };
  {
    std::lock_guard<std::mutex> lock(mu);
    for (const std::string& s : options.seeds) {
      if (!excluded_address(s)) {
        enqueue(s);
      } else if (std::find(result.excluded_seeds.begin(), result.excluded_seeds.end(), s) ==
                 result.excluded_seeds.end()) {
        result.warnings.push_back(fmt::format("seed {} is in exclude_switches; it is not walked", s));
        result.excluded_seeds.push_back(s);
      }
    }
  }

  auto worker = [&] {
    while (true) {
      std::string address;
      bool retried = false;
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return !queue.empty() || in_flight == 0; });
        bool cancelled = options.cancel && options.cancel->load();
        if (queue.empty() && in_flight == 0 && !cancelled && !unanswered.empty()) {
          // Nothing else left to walk: the switches that did not answer, once
          // more with the longer timeout.
          for (auto& [i, a] : unanswered) {
            retrying.insert(a);
            queue.push_back(a);
            ++progress.pending;
            ++result.retried;
          }
          unanswered.clear();
          cv.notify_all();
        }
        if (queue.empty() || cancelled) {
          if (cancelled && !queue.empty()) {
            progress.pending -= static_cast<int>(queue.size());
            queue.clear();
          }
          cv.notify_all();
          if (in_flight == 0 || cancelled) return;
          continue;
        }
        address = queue.front();
        queue.pop_front();
        ++in_flight;
        retried = retrying.count(address) > 0;
      }
      std::vector<VarBind> raw;
      StatusOr<SwitchWalk> walk = Status::Internal("not walked");
      int64_t requests = 0;
      auto source = open(address, retried ? retry_transport : options.transport);
      if (source.ok()) {
        walk = WalkSwitch(**source, WalkOptions{.fdb = options.walk_fdb, .data_vlan = options.build.data_vlan},
                          options.save_walks_dir.empty() ? nullptr : &raw);
        requests = (*source)->requests();
      } else {
        walk = source.status();
      }
      if (walk.ok() && !options.save_walks_dir.empty()) {
        std::ofstream(std::filesystem::path(options.save_walks_dir) / (address + ".snmprec")) << FormatSnmprec(raw);
      }
      // Rows on management ports are not followed: the management network is
      // not part of the tree (tree_builder.h).
      const std::vector<bool> on_management_port = walk.ok() ? RowsOnManagementPorts(*walk) : std::vector<bool>();
      std::lock_guard<std::mutex> lock(mu);
      --in_flight;
      --progress.pending;
      result.requests += requests;
      if (walk.ok() && retried) {
        ++result.answered_on_retry;
        result.slow.insert(address);
        result.warnings.push_back(fmt::format(
            "{} at {} answered only when tried again with a {:g} s timeout (the first try, {:g} s per request: "
            "{}); raise the SNMP timeout (--timeout, discovery.timeout) if it is this slow every time",
            walk->label(), address, retry_transport.timeout_s, options.transport.timeout_s, first_error[address]));
      }
      if (!walk.ok() && !retried && retry && IsNoResponse(walk.status())) {
        unanswered.emplace(order[address], address);
        first_error[address] = walk.status().message();
        progress.last = fmt::format("{}: no response; tried again when the crawl ends, with a {:g} s timeout", address,
                                    retry_transport.timeout_s);
      } else if (!walk.ok()) {
        not_walked(address, retried ? fmt::format("{} (tried again with a {:g} s timeout)", walk.status().message(),
                                                  retry_transport.timeout_s)
                                    : walk.status().message());
      } else if (!walk->chassis_id.empty() && chassis.count(walk->chassis_id)) {
        progress.last = fmt::format("{}: {} again (already walked at another address)", address, walk->label());
      } else if (const std::string* entry = excluding_entry(*walk)) {
        if (!walk->chassis_id.empty()) chassis.insert(walk->chassis_id);
        progress.last = fmt::format("{} at {}: excluded (exclude_switches: '{}'), not followed", walk->label(), address,
                                    Printable(*entry));
        excluded.emplace(order[address], std::move(*walk));
      } else {
        if (!walk->chassis_id.empty()) chassis.insert(walk->chassis_id);
        ++progress.walked;
        // Switches and hosts as BuildTree tells them apart: a neighbour
        // already walked, or a bridge or router, is a switch; any other one a
        // host. A neighbour with no capabilities is still followed, as a
        // switch that advertises none is one once walked.
        int switches = 0, management = 0;
        for (size_t k = 0; k < walk->remotes.size(); ++k) {
          const LldpRemote& r = walk->remotes[k];
          if (on_management_port[k]) {
            ++management;
            continue;
          }
          if (r.is_switch_like() || chassis.count(r.chassis_id)) ++switches;
          bool host_like = r.caps_enabled && !r.is_switch_like();
          if (!options.follow_lldp || host_like || chassis.count(r.chassis_id) || excluded_neighbour(r)) continue;
          for (const std::string& a : r.mgmt_addresses) enqueue(a);
        }
        progress.last = fmt::format("{} at {}: {} interfaces, {}", walk->label(), address, walk->interfaces.size(),
                                    NeighbourCounts(static_cast<int>(walk->remotes.size()), switches, management));
        done.emplace(order[address], std::move(*walk));
      }
      if (options.progress) options.progress(progress);
      cv.notify_all();
    }
  };
  int threads = std::max(1, std::min(options.concurrency, 256));
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i) pool.emplace_back(worker);
  for (std::thread& t : pool) t.join();
  // Cancelled before their retry: not walked, with the first try's error.
  for (auto& [i, a] : unanswered) not_walked(a, first_error[a]);
  for (auto& [i, w] : done) result.walks.push_back(std::move(w));
  for (auto& [i, w] : excluded) result.excluded.push_back(std::move(w));
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

StatusOr<std::vector<SwitchWalk>> WalksFromFiles(const std::vector<std::string>& paths) {
  std::vector<SwitchWalk> walks;
  for (const std::string& path : paths) {
    auto parsed = LoadRecordedWalk(path);
    if (!parsed.ok()) return parsed.status();
    bool nothing = parsed->vars.empty();
    RecordedSource source(path, std::move(parsed->vars));
    auto walk = WalkSwitch(source);
    if (!walk.ok()) return walk.status();
    walk->warnings.insert(walk->warnings.begin(), parsed->warnings.begin(), parsed->warnings.end());
    if (nothing)
      walk->warnings.push_back(parsed->lines == 0
                                   ? fmt::format("{}: the file is empty", path)
                                   : fmt::format("{}: none of its {} line(s) is an SNMP record", path, parsed->lines));
    walks.push_back(std::move(*walk));
  }
  return walks;
}

namespace {

// Phase 2 of a discovery with host MACs: walks the FDB of the switches that
// SwitchesNeedingFdb picks, `concurrency` at a time, into `crawl`.
void WalkNeededFdbs(const CrawlOptions& options, const std::vector<HostFact>& facts, CrawlResult& crawl) {
  std::vector<int> need = SwitchesNeedingFdb(crawl.walks, facts, options.build);
  auto start = std::chrono::steady_clock::now();
  SnmpTransport retry_transport = options.transport;  // For the switches that answered only when tried again.
  retry_transport.timeout_s *= options.retry_timeout_factor;
  SourceOpener open = options.open;
  if (!open) {
    open = [&](const std::string& address, const SnmpTransport& transport) {
      return OpenNetSnmp(address, options.credentials, transport);
    };
  }
  std::mutex mu;
  size_t next = 0;
  int done = 0;
  auto worker = [&] {
    while (true) {
      size_t i;
      {
        std::lock_guard<std::mutex> lock(mu);
        if (next == need.size() || (options.cancel && options.cancel->load())) return;
        i = next++;
      }
      SwitchWalk& walk = crawl.walks[need[i]];
      std::string address = walk.source.substr(0, walk.source.rfind(':'));
      std::vector<VarBind> raw;
      int64_t requests = 0;
      Status status = Status::Ok();
      auto source = open(address, crawl.slow.count(address) ? retry_transport : options.transport);
      if (source.ok()) {
        status = WalkFdb(**source, walk, options.save_walks_dir.empty() ? nullptr : &raw, options.build.data_vlan);
        requests = (*source)->requests();
      } else {
        status = source.status();
      }
      if (status.ok() && !options.save_walks_dir.empty()) {
        // Add the FDB to the walk saved in phase 1.
        std::string path = (std::filesystem::path(options.save_walks_dir) / (address + ".snmprec")).string();
        if (auto saved = LoadRecordedWalk(path); saved.ok()) {
          saved->vars.insert(saved->vars.end(), raw.begin(), raw.end());
          std::ofstream(path) << FormatSnmprec(saved->vars);
        }
      }
      std::lock_guard<std::mutex> lock(mu);
      crawl.requests += requests;
      ++done;
      if (!status.ok()) {
        crawl.warnings.push_back(fmt::format("{}: FDB not walked (hosts known only by MAC may be missing): {}",
                                             walk.label(), status.message()));
      }
      if (options.progress) {
        CrawlProgress p;
        p.walked = static_cast<int>(crawl.walks.size());
        p.pending = static_cast<int>(need.size()) - done;
        p.last = fmt::format("FDB of {}: {} entries", walk.label(), walk.fdb.size());
        options.progress(p);
      }
    }
  };
  std::vector<std::thread> pool;
  int threads = std::max(1, std::min<int>(options.concurrency, static_cast<int>(need.size())));
  for (int t = 0; t < threads; ++t) pool.emplace_back(worker);
  for (std::thread& t : pool) t.join();
  crawl.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

StatusOr<DiscoveryReport> Discover(const CrawlOptions& options, const std::vector<HostFact>& facts,
                                   Diagnostics* diagnostics) {
  if (diagnostics) *diagnostics = Diagnostics{};
  if (options.seeds.empty()) return Status::InvalidArgument("no seed address to start discovery from (--seed)");
  if (!options.open) TOPOTUNE_RETURN_IF_ERROR(ValidateCredentials(options.credentials));
  // The FDB, by far the largest table, serves only to place hosts known by
  // MAC: walk it after the rest, and only on switches with unexplained edge
  // ports (not on cores, whose FDB holds every MAC of the network).
  CrawlOptions first = options;
  first.walk_fdb = false;
  CrawlResult crawl = Crawl(first);
  if (crawl.walks.empty()) {
    std::string why;
    for (const std::string& w : crawl.warnings) why += "\n  " + w;
    for (const SwitchWalk& w : crawl.excluded)
      why += fmt::format("\n  {}: walked, but excluded (exclude_switches)", w.label());
    return Status::NotFound(fmt::format("no switch could be walked from the seeds:{}", why));
  }
  if (options.walk_fdb && !facts.empty()) WalkNeededFdbs(options, facts, crawl);
  BuildOptions build = options.build;
  build.fdb_on_request = options.walk_fdb && facts.empty();
  build.exclusions_matched.insert(build.exclusions_matched.end(), crawl.excluded_seeds.begin(),
                                  crawl.excluded_seeds.end());
  // The walks set aside go last: BuildTree leaves them out again and notes them.
  const int walked = static_cast<int>(crawl.walks.size());
  std::vector<SwitchWalk> walks = std::move(crawl.walks);
  walks.insert(walks.end(), std::make_move_iterator(crawl.excluded.begin()),
               std::make_move_iterator(crawl.excluded.end()));
  Diagnostics built;
  auto tree = BuildTree(walks, facts, build, &built);
  if (diagnostics) {
    // The crawl's reason for each address it could not reach.
    for (UnwalkedSwitch& u : built.unwalked) {
      if (!u.why.empty() || u.addresses.empty()) continue;
      for (const std::string& a : u.addresses) {
        if (auto it = crawl.not_walked.find(a); it != crawl.not_walked.end()) {
          u.why = it->second;
          break;
        }
      }
      if (u.why.empty() && !options.follow_lldp) u.why = "not crawled: LLDP management addresses are not followed";
    }
    *diagnostics = std::move(built);
    diagnostics->warnings.insert(diagnostics->warnings.begin(), crawl.warnings.begin(), crawl.warnings.end());
  }
  if (!tree.ok()) return tree.status();
  DiscoveryReport report{std::move(*tree)};
  report.tree.warnings.insert(report.tree.warnings.begin(), crawl.warnings.begin(), crawl.warnings.end());
  report.switches_walked = walked;
  report.unreachable = crawl.unreachable;
  report.retried = crawl.retried;
  report.answered_on_retry = crawl.answered_on_retry;
  report.requests = crawl.requests;
  report.seconds = crawl.seconds;
  return report;
}

}  // namespace topotune::discovery
