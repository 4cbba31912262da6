#include "daemon/topotuned/core.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/time_util.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>
#include <tuple>

#include "daemon/discovery/discover.h"
#include "daemon/discovery/tree_builder.h"
#include "daemon/topotuned/snmp_config.h"
#include "daemon/topotuned/tuning.h"
#include "daemon/topotuned/validate.h"
#include "proto/json.h"
#include "proto/limits.h"
#include "proto/names.h"
#include "tuner/allgather_orders.h"
#include "tuner/bounds.h"
#include "tuner/demand.h"
#include "tuner/hash.h"
#include "tuner/kernel_catalog.h"
#include "tuner/mpich_csel.h"
#include "tuner/ompi_rules.h"
#include "tuner/rank_tree.h"
#include "tuner/topology_io.h"

namespace topotune::daemon {

namespace limits = v1::limits;
using google::protobuf::util::TimeUtil;

grpc::Status ToGrpc(const Status& status) {
  switch (status.code()) {
    case Status::Code::kOk:
      return grpc::Status::OK;
    case Status::Code::kInvalidArgument:
      return {grpc::StatusCode::INVALID_ARGUMENT, status.message()};
    case Status::Code::kNotFound:
      return {grpc::StatusCode::NOT_FOUND, status.message()};
    case Status::Code::kFailedPrecondition:
      return {grpc::StatusCode::FAILED_PRECONDITION, status.message()};
    case Status::Code::kCancelled:
      return {grpc::StatusCode::CANCELLED, status.message()};
    case Status::Code::kInternal:
    case Status::Code::kIoError:
      break;
  }
  return {grpc::StatusCode::INTERNAL, status.message()};
}

namespace {

// "a, b, c" for up to `most` names, then " and N more".
template <typename Names>  // A sized range of strings: a vector, a set.
std::string FirstOf(const Names& names, size_t most) {
  const size_t shown = std::min(names.size(), most);
  auto end = std::next(names.begin(), static_cast<std::ptrdiff_t>(shown));
  std::string out = fmt::format("{}", fmt::join(names.begin(), end, ", "));
  if (names.size() > shown) out += fmt::format(" and {} more", names.size() - shown);
  return out;
}

google::protobuf::Timestamp ToTimestamp(db::TimePoint t) {
  return TimeUtil::MillisecondsToTimestamp(
      std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count());
}

// The smallest whole number of bytes not below `msize` (a range bound of the
// tuner, which may be a geometric mean); 0 for an infinite end.
int64_t WholeBytes(double msize) {
  if (!std::isfinite(msize)) return 0;
  return static_cast<int64_t>(std::ceil(msize));
}

void TableToProto(const std::vector<DecisionRange>& table, v1::DecisionTable* out) {
  for (const DecisionRange& r : table) {
    v1::DecisionRange* p = out->add_ranges();
    p->set_min_msize(WholeBytes(r.min_msize));
    p->set_max_msize(WholeBytes(r.max_msize));
    p->set_algorithm(r.algorithm);
  }
}

constexpr std::string_view kDiscoverySource = "discovery from ";
// Switch neighbours not walked that a failed discovery's answer lists (the
// log has them all).
constexpr size_t kUnwalkedInAnswer = 10;
// The placements of the last kRecentPlans plans handed out are kept, so that
// ReportJob can set a job's calls against the physical bound of its tree...
constexpr size_t kRecentPlans = 256;
// ...for jobs of up to kRecentPlanRanks ranks: the memory held stays bounded
// (kRecentPlans x kRecentPlanRanks host names).
constexpr int kRecentPlanRanks = 4096;

grpc::Status NoTopology() {
  return {grpc::StatusCode::UNAVAILABLE,
          "topotuned has no topology yet: set topology_file, or discovery seeds and run `topotune discover "
          "--remote`"};
}

// "mtime size" of a file, or "" when it cannot be read.
std::string FileStamp(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return "";
  return fmt::format("{}.{:09} {}", st.st_mtim.tv_sec, st.st_mtim.tv_nsec, st.st_size);
}

// The algorithms whose GetPlan entry carries a compiled schedule.
bool HasPrograms(std::string_view collective, std::string_view algorithm) {
  return FindScheduledKernel(collective, algorithm) != nullptr;
}
bool NeedsRing(std::string_view collective, std::string_view algorithm) {
  return NeedsRingOrder(collective, algorithm);
}
// The kernels a job runs from a plan's learned choices: those that need no
// context (native among them).
bool RunsWithoutPlan(std::string_view collective, std::string_view algorithm) {
  const int i = CatalogKernelIndex(collective, algorithm);
  return i >= 0 && !kKernelCatalog[i].needs_context;
}

// The discovered tree in an order that does not depend on the order the
// crawl's workers happened to finish in: the anchor switch (the first seed's)
// first, then the other switches and the hosts by name, links by their
// endpoints' new positions. Equal networks then store as equal text, and a
// rediscovery of an unchanged network keeps its topology version.
StatusOr<Topology> Canonical(const Topology& t) {
  std::vector<int> order(t.num_nodes());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin() + (order.empty() ? 0 : 1), order.end(), [&t](int a, int b) {
    const Node& x = t.nodes()[a];
    const Node& y = t.nodes()[b];
    if (x.kind != y.kind) return x.kind == NodeKind::kSwitch;
    return x.name < y.name;
  });
  std::vector<int> position(t.num_nodes());
  std::vector<Node> nodes;
  for (int i = 0; i < t.num_nodes(); ++i) {
    position[order[i]] = i;
    nodes.push_back(t.nodes()[order[i]]);
  }
  std::vector<Link> links = t.links();
  for (Link& l : links) {
    l.a = position[l.a];
    l.b = position[l.b];
    if (l.a > l.b) std::swap(l.a, l.b);
  }
  std::sort(links.begin(), links.end(),
            [](const Link& x, const Link& y) { return std::tie(x.a, x.b) < std::tie(y.a, y.b); });
  return Topology::Create(std::move(nodes), std::move(links), t.source());
}

void IntervalToProto(const RatioInterval& r, v1::RatioInterval* out) {
  out->set_estimate(r.estimate);
  out->set_lo(r.lo);
  out->set_hi(r.hi);
}

double UnixSeconds(db::TimePoint t) { return std::chrono::duration<double>(t.time_since_epoch()).count(); }

// The decision-table metrics of `version`: tables per collective (every
// configured one, 0 until tuned) and each table's speedup over native,
// computed from the samples of its key.
void SetDecisionMetrics(db::Store& store, const std::vector<std::string>& collectives, int64_t version,
                        const std::vector<db::StoredDecision>& decisions, Metrics* metrics) {
  std::map<std::string, int> tables;
  for (const std::string& c : collectives) tables[c] = 0;
  std::map<std::string, int> noisy;
  std::vector<TunedSpeedup> speedups;
  for (const db::StoredDecision& d : decisions) {
    ++tables[d.key.collective];
    for (const SizeChoice& c : d.choices) noisy[d.key.collective] += c.noisy;
    auto samples = store.Samples(d.key);
    if (!samples.ok()) {
      spdlog::warn("speedup metrics of {} nprocs {}: {}", d.key.collective, d.key.nprocs, samples.status().message());
      continue;
    }
    std::vector<TunedSpeedup> s = SpeedupsOf(d.key, d.choices, *samples);
    speedups.insert(speedups.end(), s.begin(), s.end());
  }
  metrics->SetDecisions(version, tables, speedups, noisy);
}

}  // namespace

TopologyState::TopologyState(db::StoredTopology s)
    : stored(std::move(s)),
      origin(stored.source.starts_with(kDiscoverySource) ? v1::TOPOLOGY_ORIGIN_DISCOVERY : v1::TOPOLOGY_ORIGIN_FILE),
      num_switches(stored.topology.num_nodes() - static_cast<int>(stored.topology.hosts().size())),
      num_hosts(static_cast<int>(stored.topology.hosts().size())) {}

struct Core::Decisions {
  int64_t version = 0;
  std::vector<db::StoredDecision> all;
};

Core::Core(Config config, db::Store store, Metrics* metrics, CoreOptions options)
    : config_(std::move(config)),
      store_(std::move(store)),
      metrics_(metrics),
      options_(std::move(options)),
      tuner_(std::make_unique<Tuner>(this)),
      plans_(config_, store_, metrics_) {}

Core::~Core() { Stop(); }

db::TimePoint Core::Now() const { return options_.clock ? options_.clock() : std::chrono::system_clock::now(); }

Status Core::Start() {
  auto latest = store_.LatestTopology();
  if (!latest.ok()) return latest.status();
  if (latest->has_value()) {
    Publish(std::make_shared<TopologyState>(std::move(**latest)));
  }
  if (!config_.topology_file.empty()) TOPOTUNE_RETURN_IF_ERROR(LoadTopologyFile());
  metrics_->SetDiscoveryInterval(config_.discovery.seeds.empty() ? 0 : config_.discovery.interval_s);
  tuner_->Start();
  housekeeping_ = std::thread([this] { Housekeeping(); });
  return Status::Ok();
}

void Core::Stop() {
  {
    std::lock_guard lock(stop_mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  cancel_ = true;
  stop_cv_.notify_all();
  tuner_->Stop();
  if (housekeeping_.joinable()) housekeeping_.join();
}

std::shared_ptr<const TopologyState> Core::topology() const {
  std::lock_guard lock(mu_);
  return topology_;
}

void Core::Publish(std::shared_ptr<const TopologyState> state) {
  int64_t version = state->stored.version;
  double stored_at = UnixSeconds(state->stored.created_at);
  {
    std::lock_guard lock(mu_);
    topology_ = std::move(state);
  }
  metrics_->SetTopologyVersion(version, stored_at);
  // Read, not cached: the plan cache of decisions fills at the first plan,
  // so tables stored before it (by another process too) are served.
  if (auto all = store_.ListDecisions(version); all.ok()) {
    SetDecisionMetrics(store_, config_.tuning.collectives, version, *all, metrics_);
  } else {
    spdlog::error("reading the decisions of topology version {}: {}", version, all.status().message());
  }
}

StatusOr<std::pair<int64_t, bool>> Core::SetTopology(const Topology& topo, std::string_view source) {
  auto version = store_.PutTopology(topo, source);
  if (!version.ok()) return version.status();
  auto current = topology();
  if (current && current->stored.version == *version) return std::make_pair(*version, false);
  auto stored = store_.GetTopology(*version);
  if (!stored.ok()) return stored.status();
  auto state = std::make_shared<TopologyState>(std::move(*stored));
  Publish(state);
  metrics_->CountTopologyChange();
  metrics_->SetTopologyVersion(*version, UnixSeconds(Now()));
  plans_.DropBefore(*version);
  spdlog::info("topology version {} from {}: {} switches, {} hosts{}", *version, source, state->num_switches,
               state->num_hosts, current ? fmt::format(" (was version {})", current->stored.version) : "");
  return std::make_pair(*version, true);
}

Status Core::LoadTopologyFile() {
  std::string stamp = FileStamp(config_.topology_file);
  auto topo = topotune::LoadTopologyFile(config_.topology_file);
  if (!topo.ok()) return topo.status();
  auto set = SetTopology(*topo, config_.topology_file);
  if (!set.ok()) return set.status();
  std::lock_guard lock(mu_);
  topology_file_stamp_ = stamp;
  return Status::Ok();
}

void Core::Housekeeping() {
  auto next_discovery = std::chrono::steady_clock::now();
  for (;;) {
    {
      std::unique_lock lock(stop_mu_);
      if (stop_cv_.wait_for(lock, std::chrono::seconds(2), [this] { return stopping_; })) return;
    }
    auto agents = store_.ListAgents();
    if (agents.ok()) metrics_->SetAgents(static_cast<int>(agents->size()), static_cast<int>(LiveHosts().size()));
    PlanCache::Stats ps = plans_.cache_stats();
    metrics_->SetPlanCache(static_cast<int64_t>(ps.bytes), static_cast<int64_t>(ps.entries));
    metrics_->SetResidentBytes(ResidentBytes());
    if (!config_.topology_file.empty()) {
      std::string stamp = FileStamp(config_.topology_file);
      bool changed;
      {
        std::lock_guard lock(mu_);
        changed = !stamp.empty() && stamp != topology_file_stamp_;
      }
      if (changed) {
        Status s = LoadTopologyFile();
        if (!s.ok()) {
          spdlog::error("topology file changed but cannot be loaded (keeping the current version): {}", s.message());
          std::lock_guard lock(mu_);
          topology_file_stamp_ = stamp;  // Report once per change.
        }
      }
    }
    if (!config_.discovery.seeds.empty() && std::chrono::steady_clock::now() >= next_discovery) {
      v1::DiscoverResponse ignored;
      grpc::Status s = RunDiscovery(config_.discovery.seeds, &ignored);
      if (!s.ok() && s.error_code() != grpc::StatusCode::FAILED_PRECONDITION)
        spdlog::error("periodic discovery failed: {}", s.error_message());
      next_discovery = std::chrono::steady_clock::now() +
                       std::chrono::milliseconds(static_cast<int64_t>(config_.discovery.interval_s * 1000));
    }
  }
}

std::vector<std::string> Core::LiveHosts() const {
  auto now = Now();
  auto timeout = std::chrono::milliseconds(static_cast<int64_t>(config_.agent_timeout_s * 1000));
  std::vector<std::string> out;
  std::lock_guard lock(mu_);
  for (const auto& [host, a] : agents_)
    if (now - a.last_heartbeat <= timeout && a.state != v1::AGENT_STATE_DRAINING) out.push_back(host);
  return out;
}

// --- Agents -----------------------------------------------------------------

grpc::Status Core::Register(const v1::RegisterRequest& req, v1::RegisterResponse* resp) {
  std::string facts;
  google::protobuf::util::JsonPrintOptions opts;
  opts.preserve_proto_field_names = true;
  auto st = google::protobuf::util::MessageToJsonString(req, &facts, opts);
  if (!st.ok()) return {grpc::StatusCode::INTERNAL, "cannot encode the facts: " + st.ToString()};
  const std::string& host = req.host().hostname();
  Status s = store_.RegisterAgent(host, facts);
  if (!s.ok()) return ToGrpc(s);
  auto now = Now();
  {
    std::lock_guard lock(mu_);
    agents_[host] = {now, v1::AGENT_STATE_IDLE};
  }
  spdlog::info("agent {} registered ({} MACs, {} cores, agent {})", host, req.host().macs_size(), req.host().cores(),
               req.agent_version());
  resp->set_agent_id(host);
  *resp->mutable_heartbeat_interval() =
      TimeUtil::MillisecondsToDuration(static_cast<int64_t>(config_.agent_timeout_s * 1000 / 3));
  *resp->mutable_registered_at() = ToTimestamp(now);
  return grpc::Status::OK;
}

grpc::Status Core::Heartbeat(const v1::HeartbeatRequest& req, v1::HeartbeatResponse* resp) {
  Status s = store_.Heartbeat(req.agent_id());
  if (s.code() == Status::Code::kNotFound)
    return {grpc::StatusCode::NOT_FOUND, fmt::format("agent '{}' is not registered; register again", req.agent_id())};
  if (!s.ok()) return ToGrpc(s);
  auto now = Now();
  {
    std::lock_guard lock(mu_);
    agents_[req.agent_id()] = {now, req.state() == v1::AGENT_STATE_UNSPECIFIED ? v1::AGENT_STATE_IDLE : req.state()};
  }
  *resp->mutable_heartbeat_interval() =
      TimeUtil::MillisecondsToDuration(static_cast<int64_t>(config_.agent_timeout_s * 1000 / 3));
  *resp->mutable_server_time() = ToTimestamp(now);
  return grpc::Status::OK;
}

grpc::Status Core::ListAgents(const v1::ListAgentsRequest& /*req*/, v1::ListAgentsResponse* resp) {
  auto stored = store_.ListAgents();
  if (!stored.ok()) return ToGrpc(stored.status());
  std::sort(stored->begin(), stored->end(),
            [](const db::AgentInfo& a, const db::AgentInfo& b) { return a.hostname < b.hostname; });
  const auto now = Now();
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(config_.agent_timeout_s * 1000));
  std::map<std::string, AgentState> seen;
  {
    std::lock_guard lock(mu_);
    seen = agents_;
  }
  std::set<std::string> topology_hosts;
  auto topo = topology();
  if (topo) {
    resp->set_topology_version(topo->stored.version);
    for (const Node& n : topo->stored.topology.nodes())
      if (n.kind == NodeKind::kHost) topology_hosts.insert(n.name);
  }
  std::set<std::string> alive;
  for (const db::AgentInfo& a : *stored) {
    auto it = seen.find(a.hostname);
    const bool is_alive =
        it != seen.end() && now - it->second.last_heartbeat <= timeout && it->second.state != v1::AGENT_STATE_DRAINING;
    if (is_alive) alive.insert(a.hostname);
    if (resp->agents_size() >= limits::kMaxListedAgents) continue;
    v1::AgentSummary* out = resp->add_agents();
    out->set_hostname(a.hostname);
    out->set_alive(is_alive);
    out->set_state(it == seen.end() ? v1::AGENT_STATE_UNSPECIFIED : it->second.state);
    *out->mutable_registered_at() = ToTimestamp(a.registered_at);
    *out->mutable_last_heartbeat() =
        ToTimestamp(it == seen.end() ? a.last_heartbeat : std::max(a.last_heartbeat, it->second.last_heartbeat));
    out->set_in_topology(topology_hosts.count(a.hostname) > 0);
  }
  resp->set_num_agents(static_cast<int32_t>(stored->size()));
  resp->set_num_alive(static_cast<int32_t>(alive.size()));
  int32_t without = 0;
  if (topo) {
    for (const Node& n : topo->stored.topology.nodes()) {
      if (n.kind != NodeKind::kHost || alive.count(n.name) > 0) continue;
      if (++without <= limits::kMaxListedAgents) resp->add_hosts_without_agent(n.name);
    }
  }
  resp->set_num_hosts_without_agent(without);
  *resp->mutable_agent_timeout() =
      TimeUtil::MillisecondsToDuration(static_cast<int64_t>(config_.agent_timeout_s * 1000));
  return grpc::Status::OK;
}

// --- Plans ------------------------------------------------------------------

std::shared_ptr<const Core::Decisions> Core::DecisionsOf(int64_t version) {
  {
    std::lock_guard lock(mu_);
    if (decisions_ && decisions_->version == version) return decisions_;
  }
  auto d = std::make_shared<Decisions>();
  d->version = version;
  auto all = store_.ListDecisions(version);
  if (all.ok()) {
    d->all = std::move(*all);
  } else {
    spdlog::error("reading the decisions of topology version {}: {}", version, all.status().message());
    return d;  // Not cached: the next request tries again.
  }
  std::lock_guard lock(mu_);
  decisions_ = d;
  return d;
}

std::shared_ptr<const Core::ExpectedCalls> Core::ExpectedCallsNow() {
  const auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard lock(mu_);
    if (expected_calls_ && now - expected_calls_->read_at < std::chrono::minutes(1)) return expected_calls_;
  }
  auto e = std::make_shared<ExpectedCalls>();
  e->read_at = now;
  auto totals = store_.Demand(std::chrono::hours(24 * 30));
  if (!totals.ok()) {
    spdlog::error("reading the demand for plans: {}", totals.status().message());
    return e;  // Not cached: the next request tries again.
  }
  for (const db::DemandCellTotals& c : totals->cells)
    if (c.jobs > 0)
      e->calls_per_job[{c.collective, c.nprocs, c.ranks_per_node, c.pattern, c.size_bucket}] =
          std::max<int64_t>(1, c.calls / c.jobs);
  std::lock_guard lock(mu_);
  expected_calls_ = e;
  return e;
}

void Core::DecisionsChanged(int64_t version) {
  {
    std::lock_guard lock(mu_);
    if (decisions_ && decisions_->version == version) decisions_ = nullptr;
  }
  if (auto topo = topology(); topo && topo->stored.version == version)
    SetDecisionMetrics(store_, config_.tuning.collectives, version, DecisionsOf(version)->all, metrics_);
}

grpc::Status Core::GetPlan(const v1::GetPlanRequest& req, v1::GetPlanResponse* resp, const CallContext& call) {
  auto topo = topology();
  if (!topo) return NoTopology();
  const Topology& t = topo->stored.topology;
  const auto& hosts_of_ranks = req.rank_hosts();
  const int nprocs = hosts_of_ranks.size();
  // The hosts as a vector, copied only for a compile or a new plan id (the
  // copy of 4,096 names was a fifth of a cached call's time).
  std::vector<std::string> rank_hosts;
  auto hosts_vector = [&]() -> const std::vector<std::string>& {
    if (rank_hosts.empty()) rank_hosts.assign(hosts_of_ranks.begin(), hosts_of_ranks.end());
    return rank_hosts;
  };
  // Every host must be a host of the topology; name up to kListed of those
  // that are not, and of the topology's hosts. A host's ranks are mostly
  // consecutive: each run is looked up once.
  constexpr size_t kListed = 20;
  std::map<std::string, int> per_host;
  std::set<std::string> unknown;
  for (int r = 0, end = 0; r < nprocs; r = end) {
    const std::string& host = hosts_of_ranks[r];
    for (end = r + 1; end < nprocs && hosts_of_ranks[end] == host;) ++end;
    auto node = t.Find(host);
    if (!node || !t.is_host(*node)) {
      unknown.insert(host);
      continue;
    }
    per_host[host] += end - r;
  }
  if (!unknown.empty()) {
    std::vector<std::string> hosts;
    for (int h : t.hosts()) hosts.push_back(t.nodes()[h].name);
    return {grpc::StatusCode::INVALID_ARGUMENT,
            fmt::format("rank_hosts: {} not a host of topology version {} (its {} hosts: {})",
                        FirstOf(unknown, kListed), topo->stored.version, hosts.size(), FirstOf(hosts, kListed))};
  }
  std::vector<int32_t> ranks(req.ranks().begin(), req.ranks().end());
  {
    std::set<int32_t> seen;
    for (size_t i = 0; i < ranks.size(); ++i)
      if (ranks[i] < 0 || ranks[i] >= nprocs || !seen.insert(ranks[i]).second)
        return {grpc::StatusCode::INVALID_ARGUMENT,
                fmt::format("ranks[{}]: {} is {} (ranks are 0 to {})", i, ranks[i],
                            ranks[i] >= 0 && ranks[i] < nprocs ? "given twice" : "not a rank of the placement",
                            nprocs - 1)};
  }
  int rpn = 0;
  std::vector<std::string> over;
  for (const auto& [host, n] : per_host) {
    rpn = std::max(rpn, n);
    const int slots = t.nodes()[*t.Find(host)].slots;
    if (n > slots) over.push_back(fmt::format("{} ({} ranks, {} slots)", host, n, slots));
  }
  if (!over.empty()) {
    resp->add_warnings(
        fmt::format("{} of the placement's hosts have more ranks than slots in topology version {}: "
                    "{}; their ranks share cores, and plans and tuned tables assume they do not",
                    over.size(), topo->stored.version, FirstOf(over, kListed)));
    metrics_->PlacementOversubscribed();
  }
  const uint64_t placement_hash = PlacementHash(hosts_of_ranks);
  auto decisions = DecisionsOf(topo->stored.version);

  resp->set_topology_version(topo->stored.version);
  resp->set_nprocs(nprocs);
  resp->set_ranks_per_node(rpn);
  std::string identity = fmt::format("{} {:016x}", topo->stored.version, placement_hash);
  std::optional<RankTree> tree;                              // Built once, when a ring order is needed.
  std::optional<std::vector<db::LearnedChoiceRow>> learned;  // Read once, when a table is not tuned.
  std::shared_ptr<const ExpectedCalls> expected;             // Likewise.
  resp->set_adaptation_off(!config_.adaptation.enabled);
  for (int c : req.collectives()) {
    auto collective = static_cast<v1::Collective>(c);
    std::string name(v1::CollectiveName(collective));
    v1::CollectivePlan* plan = resp->add_plans();
    plan->set_collective(collective);
    // The job's own layout, else the nearest tuned one, else native; for
    // alltoallv, per size-pattern class (the uniform one is `table`).
    auto nearest = [&](std::string_view pattern) {
      const db::StoredDecision* best = nullptr;
      double best_distance = 0;
      for (const db::StoredDecision& d : decisions->all) {
        if (d.key.collective != name || d.key.pattern != pattern) continue;
        const double distance = LayoutDistance(nprocs, rpn, d.key.nprocs, d.key.ranks_per_node);
        if (!best || distance < best_distance) best = &d, best_distance = distance;
      }
      return best;
    };
    auto source_of = [&](const db::StoredDecision& d) {
      return d.key.nprocs == nprocs && d.key.ranks_per_node == rpn ? v1::DECISION_SOURCE_TUNED
                                                                   : v1::DECISION_SOURCE_NEAREST;
    };
    // One table's TableAdaptation (the decision `d` it came from, null when
    // forced or default), and the learned choices of the buckets it explores
    // into `plan`; both enter the plan's identity.
    auto adapt = [&](const db::StoredDecision* d, v1::DecisionSource source, std::string_view pattern,
                     v1::TableAdaptation* out, v1::CollectivePlan* into) {
      if (source == v1::DECISION_SOURCE_FORCED) return;
      out->set_explore(
          source == v1::DECISION_SOURCE_DEFAULT ||
          (source == v1::DECISION_SOURCE_NEAREST && d &&
           LayoutDistance(nprocs, rpn, d->key.nprocs, d->key.ranks_per_node) > config_.adaptation.nearest_distance));
      std::set<int64_t> noisy;
      if (d)
        for (const SizeChoice& choice : d->choices)
          if (choice.noisy) noisy.insert(SizeBucket(choice.msize));
      for (int64_t b : noisy) out->add_noisy_buckets(b);
      if (!out->explore() && noisy.empty()) return;
      if (!expected) expected = ExpectedCallsNow();
      // The layout's cells are adjacent in the map, by size bucket.
      const auto& cells = expected->calls_per_job;
      for (auto it = cells.lower_bound({name, nprocs, rpn, std::string(pattern), 0});
           it != cells.end() && std::get<0>(it->first) == name && std::get<1>(it->first) == nprocs &&
           std::get<2>(it->first) == rpn && std::get<3>(it->first) == pattern;
           ++it) {
        v1::BucketCalls* e = out->add_expected_calls();
        e->set_size_bucket(std::get<4>(it->first));
        e->set_calls_per_job(it->second);
      }
      if (!learned) {
        auto rows = store_.Learned(topo->stored.version);
        learned = rows.ok() ? std::move(*rows) : std::vector<db::LearnedChoiceRow>{};
      }
      for (const db::LearnedChoiceRow& l : *learned) {
        if (l.collective != name || l.nprocs != nprocs || l.ranks_per_node != rpn || l.pattern != pattern ||
            !RunsWithoutPlan(name, l.algorithm) || (!out->explore() && !noisy.contains(l.size_bucket)))
          continue;
        v1::LearnedChoice* lc = into->add_learned();
        lc->set_size_bucket(l.size_bucket);
        lc->set_algorithm(l.algorithm);
        lc->set_jobs(l.jobs);
        lc->set_ratio(l.ratio);
        if (!pattern.empty()) lc->set_pattern(*v1::ParsePatternName(pattern));
        identity += fmt::format(" learned {}{}:{}", pattern, l.size_bucket, l.algorithm);
      }
      identity += fmt::format(" adapt {} {}", out->explore(), fmt::join(noisy, ","));
    };
    const bool classes = name == "alltoallv";
    const db::StoredDecision* best = nearest(classes ? kPatternClasses[0] : "");
    std::vector<DecisionRange> table = {{0, INFINITY, "native"}};
    auto forced = std::find_if(req.force().begin(), req.force().end(),
                               [c](const v1::ForcedAlgorithm& f) { return f.collective() == c; });
    if (forced != req.force().end()) {
      table = {{0, INFINITY, forced->algorithm()}};
      plan->set_source(v1::DECISION_SOURCE_FORCED);
    } else if (best) {
      table = best->table;
      plan->set_source(source_of(*best));
      plan->set_tuned_nprocs(best->key.nprocs);
      plan->set_tuned_ranks_per_node(best->key.ranks_per_node);
    } else {
      plan->set_source(v1::DECISION_SOURCE_DEFAULT);
    }
    if (classes && forced == req.force().end()) {
      for (size_t k = 1; k < kPatternClasses.size(); ++k) {
        // Every class, so that a class not tuned anywhere carries its
        // adaptation (DEFAULT, native's table).
        const db::StoredDecision* d = nearest(kPatternClasses[k]);
        v1::PatternTable* pt = plan->add_pattern_tables();
        pt->set_pattern(*v1::ParsePatternName(kPatternClasses[k]));
        if (!d) {
          pt->set_source(v1::DECISION_SOURCE_DEFAULT);
          TableToProto({{0, INFINITY, "native"}}, pt->mutable_table());
          identity += fmt::format(" {} default", kPatternClasses[k]);
          continue;
        }
        pt->set_source(source_of(*d));
        pt->set_tuned_nprocs(d->key.nprocs);
        pt->set_tuned_ranks_per_node(d->key.ranks_per_node);
        TableToProto(d->table, pt->mutable_table());
        identity += fmt::format(" {}", kPatternClasses[k]);
        for (const DecisionRange& r : d->table) identity += fmt::format(" {}:{}", WholeBytes(r.min_msize), r.algorithm);
      }
    }
    // Where the library explores each table, and what production jobs of
    // this layout learned there (native or kernels that need no plan).
    adapt(forced != req.force().end() ? nullptr : best, plan->source(), classes ? kPatternClasses[0] : "",
          plan->mutable_adaptation(), plan);
    for (v1::PatternTable& pt : *plan->mutable_pattern_tables())
      adapt(nearest(v1::PatternName(pt.pattern())), pt.source(), v1::PatternName(pt.pattern()), pt.mutable_adaptation(),
            plan);
    TableToProto(table, plan->mutable_table());
    identity += fmt::format(" {}", name);
    for (const DecisionRange& r : table) identity += fmt::format(" {}:{}", WholeBytes(r.min_msize), r.algorithm);
    if (req.tables_only()) continue;
    std::set<std::string> done;
    for (const DecisionRange& r : table) {
      if (!done.insert(r.algorithm).second) continue;
      if (HasPrograms(name, r.algorithm)) {
        // The cost, before any work: too large is refused when forced, else
        // sent without programs (the job runs the MPI library's algorithm).
        if (std::optional<std::string> why =
                plans_.Refusal(name, r.algorithm, nprocs, static_cast<int64_t>(per_host.size()))) {
          if (forced != req.force().end()) return {grpc::StatusCode::RESOURCE_EXHAUSTED, *why};
          v1::CompiledSchedule* omitted = plan->add_schedules();
          omitted->set_algorithm(r.algorithm);
          omitted->set_num_ranks(nprocs);
          omitted->set_omitted_reason(*why);
          continue;
        }
        std::shared_ptr<const CompiledPlan> compiled;
        grpc::Status st =
            plans_.PlanFor(topo->stored, hosts_of_ranks, placement_hash, name, r.algorithm, call, &compiled);
        if (!st.ok()) return st;
        PlanToProto(*compiled, ranks, limits::kMaxPlanSteps, plan->add_schedules());
      } else if (NeedsRing(name, r.algorithm) && !plan->has_ring()) {
        if (!tree) {
          auto placement = PlacementFromRankHosts(t, hosts_vector());
          if (!placement.ok()) return ToGrpc(placement.status());
          auto built = RankTree::Build(t, *placement);
          if (!built.ok()) return ToGrpc(built.status());
          tree.emplace(std::move(*built));
        }
        std::vector<int> order = SwitchOrderedRing(*tree);
        std::vector<int> switch_of = SwitchOfRank(*tree, order);
        plan->mutable_ring()->mutable_order()->Add(order.begin(), order.end());
        plan->mutable_ring()->mutable_switch_of_rank()->Add(switch_of.begin(), switch_of.end());
      }
    }
  }
  resp->set_plan_id(fmt::format("{:016x}", Fnv1a64(identity)));
  {
    std::lock_guard lock(mu_);
    if (nprocs <= kRecentPlanRanks && !recent_plans_.count(resp->plan_id())) {
      if (recent_order_.size() >= kRecentPlans) {
        recent_plans_.erase(recent_order_.front());
        recent_order_.pop_front();
      }
      hosts_vector();
      recent_plans_[resp->plan_id()] = {topo->stored.version, std::move(rank_hosts)};
      recent_order_.push_back(resp->plan_id());
    }
  }
  return grpc::Status::OK;
}

// --- Admin ------------------------------------------------------------------

grpc::Status Core::ResolveVersion(int64_t requested, int64_t* version) {
  auto current = topology();
  if (requested == 0) {
    if (!current) return NoTopology();
    *version = current->stored.version;
    return grpc::Status::OK;
  }
  *version = requested;
  if (current && current->stored.version == requested) return grpc::Status::OK;
  auto stored = store_.GetTopology(requested);
  if (stored.ok()) return grpc::Status::OK;
  if (stored.status().code() != Status::Code::kNotFound) return ToGrpc(stored.status());
  return {grpc::StatusCode::NOT_FOUND,
          fmt::format("topology version {} does not exist ({})", requested,
                      current ? fmt::format("the current one is {}", current->stored.version) : "there is none yet")};
}

grpc::Status Core::GetTopology(const v1::GetTopologyRequest& req, v1::GetTopologyResponse* resp) {
  auto current = topology();
  std::shared_ptr<const TopologyState> state = current;
  if (req.version() != 0 && (!current || current->stored.version != req.version())) {
    int64_t version = 0;
    if (grpc::Status st = ResolveVersion(req.version(), &version); !st.ok()) return st;
    auto stored = store_.GetTopology(version);
    if (!stored.ok()) return ToGrpc(stored.status());
    state = std::make_shared<TopologyState>(std::move(*stored));
  }
  if (!state) return NoTopology();
  resp->set_version(state->stored.version);
  resp->set_yaml(state->stored.yaml);
  resp->set_num_switches(state->num_switches);
  resp->set_num_hosts(state->num_hosts);
  resp->set_num_links(static_cast<int>(state->stored.topology.links().size()));
  resp->set_origin(state->origin);
  resp->set_source(state->stored.source);
  *resp->mutable_discovered_at() = ToTimestamp(state->stored.created_at);
  return grpc::Status::OK;
}

grpc::Status Core::Discover(const v1::DiscoverRequest& req, v1::DiscoverResponse* resp) {
  std::vector<std::string> seeds(req.seeds().begin(), req.seeds().end());
  if (seeds.empty()) seeds = config_.discovery.seeds;
  if (seeds.empty())
    return {grpc::StatusCode::FAILED_PRECONDITION,
            "no seeds: give some in the request or set discovery.seeds in the configuration"};
  return RunDiscovery(seeds, resp);
}

grpc::Status Core::RunDiscovery(const std::vector<std::string>& seeds, v1::DiscoverResponse* resp) {
  std::unique_lock running(discovery_mu_, std::try_to_lock);
  if (!running.owns_lock()) return {grpc::StatusCode::FAILED_PRECONDITION, "a discovery is already running"};
  const DiscoveryConfig& dc = config_.discovery;
  discovery::CrawlOptions options;
  options.seeds = seeds;
  options.credentials = SnmpCredentialsOf(dc);
  options.transport = SnmpTransportOf(dc);
  options.concurrency = dc.concurrency;
  options.cancel = &cancel_;
  options.build.exclude_switches = dc.exclude_switches;
  options.build.data_vlan = dc.data_vlan;
  // Host MACs and MPI NICs: the hosts file, then what agents registered,
  // merged by host name (an agent fills its host's entry of the file).
  std::vector<discovery::HostFact> facts;
  if (!config_.hosts_file.empty()) {
    auto loaded = discovery::LoadHostFacts(config_.hosts_file);
    if (!loaded.ok()) return {grpc::StatusCode::FAILED_PRECONDITION, loaded.status().message()};
    facts = std::move(*loaded);
  }
  std::vector<discovery::HostFact> from_agents;
  if (auto agents = store_.ListAgents(); agents.ok()) {
    for (const db::AgentInfo& a : *agents) {
      auto j = nlohmann::json::parse(a.facts_json, nullptr, false);
      if (j.is_discarded() || !j.contains("host") || !j["host"].is_object()) continue;
      const nlohmann::json& host = j["host"];
      discovery::HostFact f{a.hostname, {}, std::nullopt};
      for (const auto& mac : host.value("macs", nlohmann::json::array()))
        if (mac.is_string())
          if (auto m = discovery::ParseMac(mac.get<std::string>())) f.macs.push_back(*m);
      // The MAC of the NIC the agent found MPI on (agents.proto HostFacts.mpi_mac); absent when unknown.
      if (auto mpi = host.find("mpi_mac"); mpi != host.end() && mpi->is_string())
        f.mpi_mac = discovery::ParseMac(mpi->get<std::string>());
      from_agents.push_back(std::move(f));
    }
  }
  std::vector<std::string> merge_warnings;
  facts = discovery::MergeHostFacts(std::move(facts), std::move(from_agents), &merge_warnings);
  for (const std::string& w : merge_warnings) spdlog::warn("discovery: {}", w);
  spdlog::info("discovery from {} ({} known hosts)", fmt::join(seeds, ", "), facts.size());
  auto start = std::chrono::steady_clock::now();
  discovery::Diagnostics diagnostics;
  auto report = discovery::Discover(options, facts, &diagnostics);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!report.ok()) {
    metrics_->DiscoveryFailed(seconds);
    // What the run computed says why no tree came out: log all of it, and
    // give the caller the neighbours not walked with the reason.
    for (const std::string& n : diagnostics.notes) spdlog::info("discovery: note: {}", discovery::ScrubLine(n));
    for (const std::string& w : diagnostics.warnings) spdlog::warn("discovery: {}", discovery::ScrubLine(w));
    for (const std::string& line : discovery::UnwalkedLines(diagnostics.unwalked))
      spdlog::warn("discovery: {}", discovery::ScrubLine(line));
    spdlog::error("discovery failed after {:.1f} s: {}", seconds, report.status().message());
    std::string message = report.status().message();
    for (const std::string& line : discovery::UnwalkedLines(diagnostics.unwalked, kUnwalkedInAnswer))
      message += "\n" + discovery::ScrubLine(line);
    return {grpc::StatusCode::UNAVAILABLE, message};
  }
  const discovery::DiscoveredTree& tree = report->tree;
  // What was left out on purpose (the management network): not warnings.
  for (const std::string& n : tree.notes) spdlog::info("discovery: note: {}", discovery::ScrubLine(n));
  auto canonical = Canonical(tree.topology);
  if (!canonical.ok()) return ToGrpc(canonical.status());
  auto set = SetTopology(*canonical, fmt::format("{}{}", kDiscoverySource, fmt::join(seeds, ",")));
  if (!set.ok()) return ToGrpc(set.status());
  int hosts = static_cast<int>(tree.topology.hosts().size());
  metrics_->DiscoverySucceeded(seconds, UnixSeconds(Now()), report->switches_walked, hosts,
                               static_cast<int>(tree.warnings.size()));
  spdlog::info("discovery: {} switches, {} hosts, {} warnings in {:.1f} s; topology version {}{}",
               report->switches_walked, hosts, tree.warnings.size(), seconds, set->first,
               set->second ? " (new)" : " (unchanged)");
  resp->set_topology_version(set->first);
  resp->set_changed(set->second);
  for (const std::string& w : tree.warnings) resp->add_warnings(w);
  resp->set_switches_walked(report->switches_walked);
  resp->set_hosts_found(hosts);
  *resp->mutable_discovered_at() = ToTimestamp(Now());
  return grpc::Status::OK;
}

grpc::Status Core::ListDecisions(const v1::ListDecisionsRequest& req, v1::ListDecisionsResponse* resp) {
  int64_t version = 0;
  if (grpc::Status st = ResolveVersion(req.topology_version(), &version); !st.ok()) return st;
  auto decisions = DecisionsOf(version);
  std::string name(v1::CollectiveName(req.collective()));
  std::vector<const db::StoredDecision*> match;
  for (const db::StoredDecision& d : decisions->all)
    if ((name.empty() || d.key.collective == name) && (req.nprocs() == 0 || d.key.nprocs == req.nprocs()) &&
        (req.ranks_per_node() == 0 || d.key.ranks_per_node == req.ranks_per_node()))
      match.push_back(&d);
  size_t offset = 0;
  if (!req.page_token().empty()) {
    char* end = nullptr;
    unsigned long long v = std::strtoull(req.page_token().c_str(), &end, 10);
    if (*end != '\0' || v > match.size())
      return {grpc::StatusCode::INVALID_ARGUMENT,
              fmt::format("page_token: {} is not a token of this listing", Quote(req.page_token()))};
    offset = static_cast<size_t>(v);
  }
  size_t page = req.page_size() > 0 ? static_cast<size_t>(req.page_size()) : limits::kDefaultPageSize;
  size_t end = std::min(match.size(), offset + page);
  if (offset == 0) {
    auto learned = store_.Learned(version);
    if (!learned.ok()) return ToGrpc(learned.status());
    for (const db::LearnedChoiceRow& l : *learned) {
      if ((!name.empty() && l.collective != name) || (req.nprocs() != 0 && l.nprocs != req.nprocs()) ||
          (req.ranks_per_node() != 0 && l.ranks_per_node != req.ranks_per_node()))
        continue;
      const v1::Collective c = v1::ParseCollectiveName(l.collective).value_or(v1::COLLECTIVE_UNSPECIFIED);
      if (resp->learned().empty() || resp->learned().rbegin()->collective() != c ||
          resp->learned().rbegin()->nprocs() != l.nprocs ||
          resp->learned().rbegin()->ranks_per_node() != l.ranks_per_node) {
        v1::LearnedLayout* layout = resp->add_learned();
        layout->set_collective(c);
        layout->set_nprocs(l.nprocs);
        layout->set_ranks_per_node(l.ranks_per_node);
      }
      v1::LearnedChoice* choice = resp->mutable_learned()->rbegin()->add_choices();
      choice->set_size_bucket(l.size_bucket);
      choice->set_algorithm(l.algorithm);
      choice->set_jobs(l.jobs);
      choice->set_ratio(l.ratio);
    }
  }
  // Samples per layout: the runs' counts, one query for the page (loading
  // the samples themselves only to count them would read every time stored).
  std::map<std::tuple<std::string, int, int, std::string>, int64_t> samples;
  if (offset < end)
    if (auto runs = store_.ListRuns({.topology_version = version}); runs.ok())
      for (const db::BenchRun& r : *runs)
        samples[{r.key.collective, r.key.nprocs, r.key.ranks_per_node, r.key.pattern}] += r.num_samples;
  for (size_t i = offset; i < end; ++i) {
    const db::StoredDecision& d = *match[i];
    v1::Decision* out = resp->add_decisions();
    out->set_topology_version(d.key.topology_version);
    out->set_collective(v1::ParseCollectiveName(d.key.collective).value_or(v1::COLLECTIVE_UNSPECIFIED));
    out->set_nprocs(d.key.nprocs);
    out->set_ranks_per_node(d.key.ranks_per_node);
    if (!d.key.pattern.empty())
      out->set_pattern(v1::ParsePatternName(d.key.pattern).value_or(v1::ALLTOALLV_PATTERN_UNSPECIFIED));
    TableToProto(d.table, out->mutable_table());
    for (const SizeChoice& c : d.choices) {
      v1::SizeChoice* sc = out->add_choices();
      sc->set_msize(WholeBytes(c.msize));
      sc->set_chosen(c.chosen);
      sc->set_fastest(c.fastest);
      sc->set_chosen_median_s(c.chosen_median);
      sc->set_fastest_median_s(c.fastest_median);
      sc->set_regret(c.regret);
      sc->set_significant(c.significant);
      sc->set_chosen_mean_s(c.chosen_mean);
      sc->set_chosen_p95_s(c.chosen_p95);
      sc->set_reference(c.reference);
      sc->set_reference_mean_s(c.reference_mean);
      sc->set_reference_median_s(c.reference_median);
      sc->set_reference_p95_s(c.reference_p95);
      IntervalToProto(c.ratio, sc->mutable_ratio());
      sc->set_settled(c.settled);
      sc->set_calls(c.calls);
      if (c.aa_measured) IntervalToProto(c.aa, sc->mutable_aa());
      sc->set_noisy(c.noisy);
      sc->set_failed(c.failed);
      sc->set_failure(c.failure);
      sc->set_tuning_seconds(c.tuning_seconds);
      sc->set_matrices(c.matrices);
      sc->set_matrix_ratio_min(c.matrix_ratio_min);
      sc->set_matrix_ratio_max(c.matrix_ratio_max);
      for (const CandidateStats& k : c.candidates) {
        v1::CandidateStats* kc = sc->add_candidates();
        kc->set_algorithm(k.algorithm);
        kc->set_calls(k.calls);
        kc->set_mean_s(k.mean);
        kc->set_median_s(k.median);
        kc->set_p95_s(k.p95);
        IntervalToProto(k.ratio, kc->mutable_ratio());
        kc->set_pairs(k.pairs);
        kc->set_dropped(k.dropped);
      }
    }
    if (auto n = samples.find({d.key.collective, d.key.nprocs, d.key.ranks_per_node, d.key.pattern});
        n != samples.end())
      out->set_num_samples(n->second);
    *out->mutable_updated_at() = ToTimestamp(d.created_at);
  }
  if (end < match.size()) resp->set_next_page_token(std::to_string(end));
  return grpc::Status::OK;
}

grpc::Status Core::ExportRules(const v1::ExportRulesRequest& req, v1::ExportRulesResponse* resp) {
  const bool mpich = req.format() == v1::RULES_FORMAT_MPICH_CSEL;
  const std::string_view library = mpich ? "MPICH" : "Open MPI";
  OmpiRulesFormat format = req.format() == v1::RULES_FORMAT_CLASSIC_V1   ? OmpiRulesFormat::kClassicV1
                           : req.format() == v1::RULES_FORMAT_CLASSIC_V2 ? OmpiRulesFormat::kClassicV2
                                                                         : OmpiRulesFormat::kJsonV3;
  int64_t version = 0;
  if (grpc::Status st = ResolveVersion(req.topology_version(), &version); !st.ok()) return st;
  std::vector<std::string> collectives;
  for (int c : req.collectives()) {
    // A collective named twice is exported once (a rules file takes each size once).
    std::string name(v1::CollectiveName(static_cast<v1::Collective>(c)));
    if (std::find(collectives.begin(), collectives.end(), name) == collectives.end()) collectives.push_back(name);
  }
  if (collectives.empty()) collectives = {"alltoall", "alltoallv", "allgather"};
  auto decisions = DecisionsOf(version);
  std::vector<OmpiRuleSet> sets;
  std::vector<std::string> notes;
  for (const std::string& coll : collectives) {
    // One table per communicator size: the requested ranks per node, or the largest tuned.
    std::map<int, const db::StoredDecision*> by_size;
    bool other_classes = false;
    for (const db::StoredDecision& d : decisions->all) {
      if (d.key.collective != coll) continue;
      if (req.ranks_per_node() != 0 && d.key.ranks_per_node != req.ranks_per_node()) continue;
      // A rules file cannot tell alltoallv size patterns apart: the uniform class's table.
      if (!d.key.pattern.empty() && d.key.pattern != kPatternClasses[0]) {
        other_classes = true;
        continue;
      }
      const db::StoredDecision*& slot = by_size[d.key.nprocs];
      if (!slot || d.key.ranks_per_node > slot->key.ranks_per_node) slot = &d;
    }
    if (other_classes)
      notes.push_back(
          fmt::format("{}: the uniform pattern's tables; {}'s rules cannot tell skewed or sparse calls apart, "
                      "libtopotune-mpi can",
                      coll, library));
    for (const auto& [nprocs, d] : by_size) {
      if (nprocs < 2) {
        notes.push_back(
            fmt::format("{} on 1 rank left out: {}", coll,
                        mpich ? "the smallest table tuned also covers 1 rank" : "Open MPI runs no algorithm there"));
        continue;
      }
      sets.push_back({coll, nprocs, d->table, 0});
    }
  }
  if (sets.empty())
    return {grpc::StatusCode::FAILED_PRECONDITION,
            fmt::format("no decision tables for {} on topology version {}{}; run `topotune tune start` first",
                        fmt::join(collectives, ", "), version,
                        req.ranks_per_node() ? fmt::format(" with {} ranks per node", req.ranks_per_node()) : "")};
  auto exported = mpich ? ExportMpichCsel(sets, req.mpich_base()) : ExportOmpiRules(sets, format);
  if (!exported.ok()) return ToGrpc(exported.status());
  resp->set_text(exported->text);
  for (const std::string& n : notes) resp->add_notes(n);
  for (const std::string& n : exported->notes) resp->add_notes(n);
  return grpc::Status::OK;
}

namespace {

// The demand cell and source of a report's entry, as the store keys them.
using DemandKey = std::tuple<std::string, int, int, int64_t, std::string, std::string>;

DemandKey KeyOf(const db::DemandEntry& d) {
  return {d.collective, d.nprocs, d.ranks_per_node, d.size_bucket, d.pattern, d.source};
}

}  // namespace

std::optional<Core::ReportedPlacement> Core::PlacementOfPlan(const std::string& plan_id, int nprocs) {
  RecentPlan placement;
  {
    std::lock_guard lock(mu_);
    if (auto it = recent_plans_.find(plan_id); it != recent_plans_.end()) placement = it->second;
  }
  if (placement.rank_hosts.empty() || static_cast<int>(placement.rank_hosts.size()) != nprocs) return std::nullopt;
  auto current = topology();
  std::optional<Topology> topo;
  if (current && current->stored.version == placement.topology_version) {
    topo = current->stored.topology;
  } else if (auto stored = store_.GetTopology(placement.topology_version); stored.ok()) {
    topo = std::move(stored->topology);
  }
  if (!topo) return std::nullopt;
  auto p = PlacementFromRankHosts(*topo, placement.rank_hosts);
  if (!p.ok()) return std::nullopt;
  auto built = RankTree::Build(*topo, *p);
  if (!built.ok()) return std::nullopt;
  std::vector<int> host_nodes;
  for (const std::string& h : placement.rank_hosts) host_nodes.push_back(*topo->Find(h));
  ReportedPlacement out{placement.topology_version, std::move(*built), SwitchesSpanned(*topo, host_nodes), 0};
  out.hosts = static_cast<int>(std::set<int>(host_nodes.begin(), host_nodes.end()).size());
  return out;
}

grpc::Status Core::ReportJob(const v1::ReportJobRequest& req, v1::ReportJobResponse* resp) {
  std::string json;
  google::protobuf::util::JsonPrintOptions opts;
  opts.preserve_proto_field_names = true;
  auto st = google::protobuf::util::MessageToJsonString(req, &json, opts);
  if (!st.ok()) return {grpc::StatusCode::INTERNAL, "cannot encode the report: " + st.ToString()};
  // The placements of the job's plans (the world's and its communicators'),
  // when they came from here: calls are then set against their physical
  // bound, and demand knows the switches a communicator spans.
  std::map<std::string, std::optional<ReportedPlacement>> placements;
  auto placement_of = [&](const std::string& plan_id, int nprocs) -> const ReportedPlacement* {
    auto [it, fresh] = placements.try_emplace(plan_id);
    if (fresh && !plan_id.empty()) it->second = PlacementOfPlan(plan_id, nprocs);
    return it->second && it->second->tree.num_ranks() == nprocs ? &*it->second : nullptr;
  };
  std::map<DemandKey, db::DemandEntry> demand;
  for (const v1::CollectiveCallStats& s : req.stats()) {
    if (s.calls() <= 0) continue;
    const std::string_view collective = v1::CollectiveName(s.collective());
    const int nprocs = s.comm_size() > 0 ? s.comm_size() : req.nprocs();
    const int rpn = s.comm_ranks_per_node() > 0 ? s.comm_ranks_per_node() : req.ranks_per_node();
    const std::string& plan_id = s.comm_size() > 0 ? s.plan_id() : req.plan_id();
    const ReportedPlacement* where = placement_of(plan_id, nprocs);
    db::DemandEntry d;
    d.topology_version = where ? where->topology_version : 0;
    d.collective = std::string(collective);
    d.nprocs = nprocs;
    d.ranks_per_node = std::max(1, rpn);
    d.size_bucket = SizeBucket(static_cast<double>(s.msize()));
    d.pattern = s.collective() == v1::COLLECTIVE_ALLTOALLV ? std::string(v1::PatternName(s.pattern())) : "";
    d.source = std::string(v1::DecisionSourceName(s.source()));
    if (s.source() == v1::DECISION_SOURCE_NEAREST && s.tuned_nprocs() > 0 && s.tuned_ranks_per_node() > 0)
      d.distance = LayoutDistance(d.nprocs, d.ranks_per_node, s.tuned_nprocs(), s.tuned_ranks_per_node());
    d.hosts = s.comm_hosts() > 0 ? s.comm_hosts() : where ? where->hosts : 0;
    d.switches = where ? where->switches : 0;
    d.calls = s.calls();
    d.bytes = s.total_bytes();
    d.seconds = s.total_seconds();
    d.msize_calls = static_cast<double>(s.msize()) * static_cast<double>(s.calls());
    auto [it, fresh] = demand.try_emplace(KeyOf(d), d);
    if (!fresh) {
      db::DemandEntry& sum = it->second;
      sum.calls += d.calls;
      sum.bytes += d.bytes;
      sum.seconds += d.seconds;
      sum.msize_calls += d.msize_calls;
      sum.hosts = std::max(sum.hosts, d.hosts);
      sum.switches = std::max(sum.switches, d.switches);
      sum.distance = std::max(sum.distance, d.distance);
    }
    metrics_->AddJobCollectiveTime(collective, d.source, s.calls(), s.total_seconds());
    if (s.total_seconds() <= 0) continue;
    std::optional<double> fraction;
    const double per_call = s.total_seconds() / static_cast<double>(s.calls());
    if (where && s.collective() == v1::COLLECTIVE_ALLTOALL)
      fraction = AlltoallBound(where->tree, static_cast<double>(s.msize())).seconds / per_call;
    if (where && s.collective() == v1::COLLECTIVE_ALLGATHER)
      fraction = AllgatherBound(where->tree, static_cast<double>(s.msize())).seconds / per_call;
    metrics_->SetThroughput("job", collective, s.algorithm(), s.msize(), nprocs,
                            static_cast<double>(s.total_bytes()) / s.total_seconds(), fraction);
  }
  std::vector<db::DemandEntry> entries;
  for (auto& [key, d] : demand) entries.push_back(std::move(d));
  // What in-job adaptation found: production samples of their own. A plan
  // that is not recent here is taken for the current topology's.
  std::vector<db::LearnedEntry> learned;
  const auto current = topology();
  for (const v1::AdaptedBucket& b : req.adapted()) {
    const ReportedPlacement* where = placement_of(b.plan_id(), b.comm_size());
    db::LearnedEntry l;
    l.topology_version = where ? where->topology_version : current ? current->stored.version : 0;
    l.collective = std::string(v1::CollectiveName(b.collective()));
    l.nprocs = b.comm_size();
    l.ranks_per_node = b.comm_ranks_per_node();
    l.pattern = b.collective() == v1::COLLECTIVE_ALLTOALLV ? std::string(v1::PatternName(b.pattern())) : "";
    l.size_bucket = b.size_bucket();
    l.settled = b.settled();
    l.choice = b.choice();
    l.calls = b.calls();
    l.exploring_calls = b.exploring_calls();
    l.extra_seconds = b.extra_seconds();
    nlohmann::json candidates = nlohmann::json::array();
    for (const v1::ExploredCandidate& c : b.candidates()) {
      candidates.push_back(nlohmann::json::parse(v1::MessageJson(c)));
      if (c.algorithm() == b.choice() && c.native_mean_seconds() > 0)
        l.ratio = c.mean_seconds() / c.native_mean_seconds();
    }
    l.candidates_json = candidates.dump();
    learned.push_back(std::move(l));
  }
  // job_id may be empty (a job outside a batch system, as in GetPlan); the
  // store keys reports by a non-empty id, so such reports share one.
  auto id = store_.AddJobReport(req.job_id().empty() ? "(none)" : req.job_id(), json, entries, learned);
  if (!id.ok()) return ToGrpc(id.status());
  {
    std::lock_guard lock(mu_);
    expected_calls_ = nullptr;  // The next plan counts this job's calls.
  }
  resp->set_accepted(req.stats_size());
  return grpc::Status::OK;
}

grpc::Status Core::ListDemand(const v1::ListDemandRequest& req, v1::ListDemandResponse* resp) {
  constexpr int64_t kDefaultWindowSeconds = 7 * 24 * 3600;
  constexpr int kDefaultLimit = 100;
  const int64_t window_ms =
      req.has_window() ? TimeUtil::DurationToMilliseconds(req.window()) : kDefaultWindowSeconds * 1000;
  *resp->mutable_window() = TimeUtil::MillisecondsToDuration(window_ms);
  auto totals = store_.Demand(std::chrono::milliseconds(window_ms), req.collective() == v1::COLLECTIVE_UNSPECIFIED
                                                                        ? std::string_view()
                                                                        : v1::CollectiveName(req.collective()));
  if (!totals.ok()) return ToGrpc(totals.status());
  // How each cell is served now: the current topology's decisions of its
  // collective and class.
  auto current = topology();
  std::map<std::pair<std::string, std::string>, std::vector<TunedLayout>> tuned;
  if (current) {
    resp->set_topology_version(current->stored.version);
    for (const db::StoredDecision& d : DecisionsOf(current->stored.version)->all) {
      TunedLayout& t = tuned[{d.key.collective, d.key.pattern}].emplace_back();
      t.nprocs = d.key.nprocs;
      t.ranks_per_node = d.key.ranks_per_node;
      for (const SizeChoice& c : d.choices) t.measured_sizes.push_back(c.msize);
    }
  }
  const int limit = req.limit() > 0 ? req.limit() : kDefaultLimit;
  resp->set_num_cells(static_cast<int64_t>(totals->cells.size()));
  resp->set_jobs(totals->jobs);
  double seconds = 0, tuned_seconds = 0, at_stake = 0;
  for (const db::DemandCellTotals& c : totals->cells) {
    auto layouts = tuned.find({c.collective, c.pattern});
    const CellService service =
        layouts == tuned.end() ? CellService{} : ServiceOf(layouts->second, c.nprocs, c.ranks_per_node, c.size_bucket);
    const double stake = service.kind == CellService::Kind::kTuned ? 0 : c.seconds;
    seconds += c.seconds;
    tuned_seconds += c.tuned_seconds;
    at_stake += stake;
    if (resp->cells_size() >= limit) continue;
    v1::DemandCell* out = resp->add_cells();
    out->set_collective(*v1::ParseCollectiveName(c.collective));
    out->set_nprocs(c.nprocs);
    out->set_ranks_per_node(c.ranks_per_node);
    out->set_size_bucket(c.size_bucket);
    if (!c.pattern.empty()) out->set_pattern(*v1::ParsePatternName(c.pattern));
    out->set_mean_msize(c.calls > 0 ? static_cast<int64_t>(c.msize_calls / static_cast<double>(c.calls) + 0.5) : 0);
    out->set_calls(c.calls);
    out->set_jobs(c.jobs);
    out->set_seconds(c.seconds);
    out->set_tuned_seconds(c.tuned_seconds);
    out->set_nearest_seconds(c.nearest_seconds);
    out->set_default_seconds(c.default_seconds);
    out->set_forced_seconds(c.forced_seconds);
    out->set_hosts(c.hosts);
    out->set_switches(c.switches);
    switch (service.kind) {
      case CellService::Kind::kTuned:
        out->set_status(v1::DEMAND_STATUS_TUNED);
        break;
      case CellService::Kind::kOtherSizes:
        out->set_status(v1::DEMAND_STATUS_OTHER_SIZES);
        break;
      case CellService::Kind::kNearest:
        out->set_status(v1::DEMAND_STATUS_NEAREST);
        out->set_tuned_nprocs(service.nprocs);
        out->set_tuned_ranks_per_node(service.ranks_per_node);
        out->set_distance(service.distance);
        break;
      case CellService::Kind::kDefault:
        out->set_status(v1::DEMAND_STATUS_DEFAULT);
        break;
    }
    out->set_seconds_at_stake(stake);
  }
  resp->set_seconds(seconds);
  resp->set_tuned_seconds(tuned_seconds);
  resp->set_seconds_at_stake(at_stake);
  return grpc::Status::OK;
}

}  // namespace topotune::daemon
