#include "daemon/topotuned/tuning.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <google/protobuf/util/time_util.h>
#include <signal.h>
#include <spawn.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <ranges>
#include <set>

#include "daemon/topotuned/core.h"
#include "daemon/topotuned/validate.h"
#include "proto/limits.h"
#include "proto/names.h"
#include "tuner/crossover.h"
#include "tuner/kernel_catalog.h"
#include "tuner/topology.h"

extern char** environ;

namespace topotune::daemon {

using google::protobuf::util::TimeUtil;
namespace limits = v1::limits;

namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void ReplaceAll(std::string& s, std::string_view from, const std::string& to) {
  for (size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size()))
    s.replace(pos, from.size(), to);
}

// The last `n` lines of a job's output, joined by " | ", for a failed run's
// message: topotune-agent's own lines when there are any (mpirun's closing
// banners say little), else the last lines.
std::string Tail(const std::string& path, size_t n) {
  std::ifstream in(path);
  std::vector<std::string> lines, ours;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    if (line.find("topotune-agent") != std::string::npos) ours.push_back(line);
    lines.push_back(line);
  }
  if (!ours.empty()) lines = std::move(ours);
  if (lines.size() > n) lines.erase(lines.begin(), lines.end() - static_cast<std::ptrdiff_t>(n));
  return fmt::format("{}", fmt::join(lines, " | "));
}

}  // namespace

std::string ExpandLauncher(const std::string& templ, int np, const std::string& hostfile,
                           const std::vector<std::string>& hosts, int ranks_per_node, const std::string& command) {
  std::string out = templ;
  ReplaceAll(out, "{np}", std::to_string(np));
  ReplaceAll(out, "{hostfile}", hostfile);
  ReplaceAll(out, "{hosts}", fmt::format("{}", fmt::join(hosts, ",")));
  ReplaceAll(out, "{ranks_per_node}", std::to_string(ranks_per_node));
  ReplaceAll(out, "{command}", command);
  return out;
}

Tuner::Tuner(Core* core) : core_(core) {}

Tuner::~Tuner() { Stop(); }

void Tuner::Start() {
  std::lock_guard lock(mu_);
  if (!thread_.joinable() && !stopping_) thread_ = std::thread([this] { Loop(); });
}

void Tuner::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (int pgid = launcher_pgid_.load(); pgid > 0) kill(-pgid, SIGTERM);
  if (thread_.joinable()) thread_.join();
}

std::string Tuner::ServerAddress() const {
  const Config& c = core_->config();
  if (!c.tuning.server_address.empty()) return c.tuning.server_address;
  std::string addr = c.listen;
  size_t colon = addr.rfind(':');
  std::string host = addr.substr(0, colon);
  std::string port = addr.substr(colon + 1);
  if (port == "0" && bound_port_ > 0) port = std::to_string(bound_port_);
  if (host == "0.0.0.0" || host == "[::]" || host.empty()) {
    char name[256] = {};
    gethostname(name, sizeof(name) - 1);
    host = name;
  }
  return host + ":" + port;
}

std::string Tuner::AgentCommand() const {
  const Config& c = core_->config();
  if (!c.tuning.agent_command.empty()) return c.tuning.agent_command;
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    auto beside = self.parent_path() / "topotune-agent";
    if (std::filesystem::exists(beside, ec)) return beside.string();
  }
  return "topotune-agent";
}

grpc::Status Tuner::StartTuning(const v1::StartTuningRequest& req, v1::StartTuningResponse* resp) {
  auto topo = core_->topology();
  if (!topo)
    return {grpc::StatusCode::UNAVAILABLE, "topotuned has no topology yet: set topology_file or discovery seeds"};
  const Topology& t = topo->stored.topology;
  std::vector<std::string> live;
  for (const std::string& h : core_->LiveHosts())
    if (auto n = t.Find(h); n && t.is_host(*n)) live.push_back(h);
  const TuningConfig& tc = core_->config().tuning;
  Sweep sweep;
  sweep.request = req;
  if (req.from_demand()) {
    if (grpc::Status st = PlanFromDemand(req, live.size(), &sweep); !st.ok()) return st;
    for (const Run& r : sweep.runs) resp->mutable_planned()->Add(r.cells.begin(), r.cells.end());
    for (const std::string& l : sweep.left_out) resp->add_left_out(l);
    const std::string what =
        fmt::format("from demand: {} cells planned, {} left out{}", resp->planned_size(), sweep.left_out.size(),
                    sweep.budget_ms ? fmt::format(", budget {} s", sweep.budget_ms / 1000) : "");
    return Queue(std::move(sweep), what, resp);
  }
  std::vector<std::string> collectives;
  for (int c : req.collectives()) collectives.emplace_back(v1::CollectiveName(static_cast<v1::Collective>(c)));
  if (collectives.empty()) collectives = tc.collectives;
  std::vector<int> nodes(req.node_counts().begin(), req.node_counts().end());
  if (nodes.empty()) nodes = tc.node_counts;
  if (nodes.empty()) {
    for (int n = 2; n < static_cast<int>(live.size()); n *= 2) nodes.push_back(n);
    if (live.size() >= 2) nodes.push_back(static_cast<int>(live.size()));
  }
  std::vector<int> rpns(req.ranks_per_node().begin(), req.ranks_per_node().end());
  if (rpns.empty()) rpns = tc.ranks_per_node;
  int most = nodes.empty() ? 2 : *std::max_element(nodes.begin(), nodes.end());
  if (most > static_cast<int>(live.size()))
    return {grpc::StatusCode::FAILED_PRECONDITION,
            fmt::format("the sweep needs {} hosts but {} of topology version {} have a live agent{}{}; start "
                        "`topotune-agent serve` on more hosts",
                        most, live.size(), topo->stored.version, live.empty() ? "" : ": ", fmt::join(live, ", "))};
  std::vector<std::string> patterns;
  for (int p : req.alltoallv_patterns()) patterns.emplace_back(v1::PatternName(static_cast<v1::AlltoallvPattern>(p)));
  if (patterns.empty()) patterns = tc.alltoallv_patterns;
  for (const std::string& c : collectives)
    for (int n : nodes)
      for (int r : rpns) {
        if (c != "alltoallv") {
          sweep.runs.push_back({c, n, r, ""});
          continue;
        }
        for (const std::string& p : patterns) sweep.runs.push_back({c, n, r, p});
      }
  return Queue(
      std::move(sweep),
      fmt::format("{} x node counts {} x ranks per node {}; alltoallv patterns {}", fmt::join(collectives, ","),
                  fmt::join(nodes, ","), fmt::join(rpns, ","), fmt::join(patterns, ",")),
      resp);
}

grpc::Status Tuner::Queue(Sweep sweep, const std::string& what, v1::StartTuningResponse* resp) {
  sweep.runs_total = static_cast<int>(sweep.runs.size());
  sweep.created_ms = NowMs();
  {
    std::lock_guard lock(mu_);
    if (stopping_) return {grpc::StatusCode::UNAVAILABLE, "topotuned is shutting down"};
    sweep.id = fmt::format("tune-{}-{}", sweep.created_ms, next_sweep_++);
    resp->set_tuning_id(sweep.id);
    resp->set_runs_total(sweep.runs_total);
    queue_.push_back(sweep.id);
    core_->metrics().SetSweepsQueued(static_cast<int>(queue_.size()));
    spdlog::info("{} queued: {} runs ({})", sweep.id, sweep.runs_total, what);
    sweeps_.emplace(sweep.id, std::move(sweep));
  }
  cv_.notify_all();
  return grpc::Status::OK;
}

grpc::Status Tuner::PlanFromDemand(const v1::StartTuningRequest& req, size_t live, Sweep* sweep) {
  v1::ListDemandRequest ask;
  if (req.has_demand_window()) *ask.mutable_window() = req.demand_window();
  ask.set_limit(static_cast<int32_t>(limits::kMaxPageSize));
  v1::ListDemandResponse demand;
  if (grpc::Status st = core_->ListDemand(ask, &demand); !st.ok()) return st;
  sweep->budget_ms = req.has_budget() ? TimeUtil::DurationToMilliseconds(req.budget()) : 0;
  auto wanted = [](const auto& list, auto v) {
    return list.empty() || std::find(list.begin(), list.end(), v) != list.end();
  };
  std::vector<const v1::DemandCell*> cells;
  for (const v1::DemandCell& c : demand.cells())
    if (c.seconds_at_stake() > 0) cells.push_back(&c);
  std::stable_sort(cells.begin(), cells.end(), [](const v1::DemandCell* a, const v1::DemandCell* b) {
    return a->seconds_at_stake() > b->seconds_at_stake();
  });
  std::map<std::tuple<std::string, int, int, std::string>, size_t> run_of;
  for (const v1::DemandCell* c : cells) {
    const std::string collective(v1::CollectiveName(c->collective()));
    const std::string pattern =
        c->collective() == v1::COLLECTIVE_ALLTOALLV ? std::string(v1::PatternName(c->pattern())) : std::string();
    const int rpn = c->ranks_per_node();
    const int nodes = rpn > 0 ? c->nprocs() / rpn : 0;
    const bool whole = rpn > 0 && c->nprocs() % rpn == 0;
    const std::string line = fmt::format(
        "{}{} {} ~{}: {:.3f} s at stake", collective, pattern.empty() ? "" : " " + pattern,
        whole ? fmt::format("{}x{}", nodes, rpn) : fmt::format("{} ranks at most {} per node", c->nprocs(), rpn),
        FormatBytes(static_cast<double>(c->size_bucket())), c->seconds_at_stake());
    if (!wanted(req.collectives(), static_cast<int>(c->collective())) || !wanted(req.ranks_per_node(), rpn) ||
        !wanted(req.node_counts(), nodes) ||
        (!pattern.empty() && !wanted(req.alltoallv_patterns(), static_cast<int>(c->pattern()))))
      continue;  // Filtered out by the request: neither planned nor left out.
    std::string why;
    if (!whole)
      why = "not whole nodes; a benchmark job runs node count x ranks per node";
    else if (static_cast<size_t>(nodes) > live)
      why = fmt::format("needs {} hosts, {} have a live agent", nodes, live);
    else if (c->mean_msize() < 1)
      why = "the calls move no bytes";
    else if (c->mean_msize() > limits::kMaxMsizeBytes)
      why = fmt::format("larger than the {} a benchmark measures", FormatBytes(limits::kMaxMsizeBytes));
    if (!why.empty()) {
      sweep->left_out.push_back(line + ": " + why);
      continue;
    }
    auto [it, fresh] = run_of.try_emplace({collective, nodes, rpn, pattern}, sweep->runs.size());
    if (fresh) sweep->runs.push_back({collective, nodes, rpn, pattern});
    Run& run = sweep->runs[it->second];
    run.msizes.push_back(c->mean_msize());
    run.cells.push_back(line);
  }
  for (Run& r : sweep->runs) {
    std::sort(r.msizes.begin(), r.msizes.end());
    r.msizes.erase(std::unique(r.msizes.begin(), r.msizes.end()), r.msizes.end());
  }
  return grpc::Status::OK;
}

grpc::Status Tuner::TuningStatus(const v1::TuningStatusRequest& req, v1::TuningStatusResponse* resp) {
  std::lock_guard lock(mu_);
  auto it = sweeps_.find(req.tuning_id());
  if (it == sweeps_.end())
    return {grpc::StatusCode::NOT_FOUND,
            fmt::format("no tuning sweep {} (ids are kept until topotuned restarts)", Quote(req.tuning_id()))};
  const Sweep& s = it->second;
  resp->set_tuning_id(s.id);
  resp->set_state(s.state);
  resp->set_runs_done(s.runs_done);
  resp->set_runs_total(s.runs_total);
  resp->set_samples_ingested(s.samples);
  resp->set_message(s.message);
  for (const std::string& c : s.covered) resp->add_covered(c);
  for (const std::string& l : s.left_out) resp->add_left_out(l);
  *resp->mutable_created_at() = TimeUtil::MillisecondsToTimestamp(s.created_ms);
  if (s.started_ms) *resp->mutable_started_at() = TimeUtil::MillisecondsToTimestamp(s.started_ms);
  if (s.finished_ms) *resp->mutable_finished_at() = TimeUtil::MillisecondsToTimestamp(s.finished_ms);
  return grpc::Status::OK;
}

grpc::Status Tuner::FetchBenchTask(const v1::FetchBenchTaskRequest& req, v1::FetchBenchTaskResponse* resp) {
  std::lock_guard lock(mu_);
  auto it = tasks_.find(req.task_id());
  if (it == tasks_.end()) return {grpc::StatusCode::NOT_FOUND, fmt::format("no task {}", Quote(req.task_id()))};
  const Task& task = it->second;
  if (!task.runnable)
    return {grpc::StatusCode::FAILED_PRECONDITION,
            fmt::format("task {} is no longer runnable (finished, timed out or cancelled)", Quote(req.task_id()))};
  // A rank 0 on another host of the topology than the task's first is a
  // mislaunched job; a name the topology does not know (a test machine, a
  // container) is let through.
  const std::string& first = task.task.rank_hosts(0);
  if (!req.hostname().empty() && req.hostname() != first) {
    auto topo = core_->topology();
    if (topo) {
      auto node = topo->stored.topology.Find(req.hostname());
      if (node && topo->stored.topology.is_host(*node))
        return {grpc::StatusCode::FAILED_PRECONDITION,
                fmt::format("task '{}' places rank 0 on {}, but it was fetched from {}: check the launcher "
                            "template's placement (tuning.launcher)",
                            req.task_id(), first, req.hostname())};
    }
  }
  *resp->mutable_task() = task.task;
  spdlog::info("{} fetched by {}", req.task_id(), req.hostname().empty() ? "(unnamed host)" : req.hostname());
  return grpc::Status::OK;
}

int64_t Tuner::RunOfTask(const std::string& task_id) {
  {
    std::lock_guard lock(mu_);
    if (auto it = tasks_.find(task_id); it != tasks_.end()) return it->second.run_id;
    if (auto it = known_runs_.find(task_id); it != known_runs_.end()) return it->second;
  }
  // A task of an earlier topotuned (its job outlived a restart): "run-<id>".
  if (!task_id.starts_with("run-") || task_id.size() > 24) return 0;
  char* end = nullptr;
  long long id = std::strtoll(task_id.c_str() + 4, &end, 10);
  if (*end != '\0' || id <= 0) return 0;
  auto runs = core_->store().ListRuns();
  if (!runs.ok()) return 0;
  for (const db::BenchRun& r : *runs)
    if (r.id == id) {
      std::lock_guard lock(mu_);
      known_runs_[task_id] = id;
      return id;
    }
  return 0;
}

grpc::Status Tuner::Stream::AddBytes(std::string_view bytes) {
  ++wire_messages_;
  v1::ReportSamplesRequest msg;
  if (bytes.size() > static_cast<size_t>(INT32_MAX) ||
      !msg.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return {grpc::StatusCode::INVALID_ARGUMENT,
            fmt::format("message {} of the stream is not a topotune.v1.ReportSamplesRequest", wire_messages_)};
  if (Status valid = Validate(msg); !valid.ok()) return {grpc::StatusCode::INVALID_ARGUMENT, valid.message()};
  return Add(msg);
}

grpc::Status Tuner::Stream::Add(const v1::ReportSamplesRequest& msg) {
  if (++messages_ > limits::kMaxSamplesPerStream)
    return {grpc::StatusCode::INVALID_ARGUMENT,
            fmt::format("more than kMaxSamplesPerStream ({}) messages in one stream", limits::kMaxSamplesPerStream)};
  if (task_id_.empty()) {
    run_id_ = tuner_->RunOfTask(msg.task_id());
    if (run_id_ == 0) return {grpc::StatusCode::NOT_FOUND, fmt::format("no task {}", Quote(msg.task_id()))};
    task_id_ = msg.task_id();
  } else if (msg.task_id() != task_id_) {
    return {grpc::StatusCode::INVALID_ARGUMENT, fmt::format("task_id: {} in a stream of task {} (one stream per task)",
                                                            Quote(msg.task_id()), Quote(task_id_))};
  }
  const v1::BenchSample& s = msg.sample();
  const std::string& algorithm = s.label().empty() ? s.algorithm() : s.label();
  std::vector<db::Sample> batch;
  auto add = [&](double t) { batch.push_back({algorithm, static_cast<double>(s.msize()), std::max(t, 1e-9)}); };
  for (double t : s.times_s()) add(t);
  // A summary without its times stands as one call; an algorithm dropped
  // before its first call has neither, only its note.
  if (batch.empty() && s.iterations() > 0) add(s.median_s());
  std::optional<db::SampleNote> note;
  if (!s.dropped().empty() || s.size_seconds() > 0 || s.matrices() > 1)
    note = db::SampleNote{algorithm, static_cast<double>(s.msize()), s.dropped(), s.size_seconds(),
                          std::max(1, s.matrices())};
  auto stored = tuner_->core_->store().AddSampleBatch(run_id_, msg.sequence(), batch, note);
  if (!stored.ok()) return ToGrpc(stored.status());
  if (!*stored) {
    result_.set_duplicates(result_.duplicates() + 1);
    return grpc::Status::OK;
  }
  result_.set_accepted(result_.accepted() + 1);
  Metrics& m = tuner_->core_->metrics();
  m.AddSamplesIngested(static_cast<int64_t>(batch.size()));
  if (s.has_bytes_per_s())
    m.SetThroughput("bench", v1::CollectiveName(s.collective()), algorithm, s.msize(), s.nprocs(), s.bytes_per_s(),
                    s.has_fraction_of_bound() ? std::optional<double>(s.fraction_of_bound()) : std::nullopt);
  std::lock_guard lock(tuner_->mu_);
  if (auto task = tuner_->tasks_.find(task_id_); task != tuner_->tasks_.end())
    if (auto sweep = tuner_->sweeps_.find(task->second.sweep_id); sweep != tuner_->sweeps_.end())
      sweep->second.samples += static_cast<int64_t>(batch.size());
  return grpc::Status::OK;
}

void Tuner::Progress(const std::string& sweep_id, const std::string& message, int done_delta, int total_delta) {
  std::lock_guard lock(mu_);
  auto it = sweeps_.find(sweep_id);
  if (it == sweeps_.end()) return;
  Sweep& s = it->second;
  if (!message.empty()) s.message = message;
  s.runs_done += done_delta;
  s.runs_total += total_delta;
  core_->metrics().SetTuningProgress(s.runs_done, s.runs_total);
}

void Tuner::Loop() {
  for (;;) {
    std::string id;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) {
        for (const std::string& q : queue_) {
          Sweep& s = sweeps_[q];
          s.state = v1::TUNING_STATE_CANCELLED;
          s.message = "topotuned shut down";
          s.finished_ms = NowMs();
        }
        queue_.clear();
        core_->metrics().SetSweepsQueued(0);
        return;
      }
      id = queue_.front();
      queue_.pop_front();
      Sweep& s = sweeps_[id];
      s.state = v1::TUNING_STATE_RUNNING;
      s.started_ms = NowMs();
      core_->metrics().SetSweepsQueued(static_cast<int>(queue_.size()));
      core_->metrics().SetSweepRunning(true);
    }
    RunSweep(id);
  }
}

void Tuner::RunSweep(const std::string& sweep_id) {
  std::vector<Run> runs;
  v1::StartTuningRequest req;
  int64_t budget_ms = 0, started_ms = 0;
  {
    std::lock_guard lock(mu_);
    runs = sweeps_[sweep_id].runs;
    req = sweeps_[sweep_id].request;
    budget_ms = sweeps_[sweep_id].budget_ms;
    started_ms = sweeps_[sweep_id].started_ms;
  }
  const TuningConfig& tc = core_->config().tuning;
  std::vector<int64_t> first_sizes(req.msizes().begin(), req.msizes().end());
  if (first_sizes.empty())
    for (const std::string& s : tc.sizes) first_sizes.push_back(static_cast<int64_t>(*ParseBytes(s)));
  std::sort(first_sizes.begin(), first_sizes.end());
  first_sizes.erase(std::unique(first_sizes.begin(), first_sizes.end()), first_sizes.end());
  const int iterations = req.iterations() > 0 ? req.iterations() : tc.iterations;
  std::vector<std::string> failures;
  bool cancelled = false;
  for (const Run& run : runs) {
    {
      std::lock_guard lock(mu_);
      cancelled = stopping_;
    }
    if (cancelled) break;
    auto topo = core_->topology();
    const Topology& t = topo->stored.topology;
    // Live hosts of the topology, spread round robin over their switches.
    std::map<int, std::vector<std::string>> by_switch;
    std::vector<int> switch_order;
    std::set<std::string> live;
    for (const std::string& h : core_->LiveHosts()) live.insert(h);
    for (int h : t.hosts()) {
      if (!live.count(t.nodes()[h].name)) continue;
      int sw = t.incident(h).empty() ? -1 : t.Other(t.incident(h)[0], h);
      if (!by_switch.count(sw)) switch_order.push_back(sw);
      by_switch[sw].push_back(t.nodes()[h].name);
    }
    std::vector<std::string> hosts;
    for (size_t i = 0; static_cast<int>(hosts.size()) < run.nodes; ++i) {
      bool any = false;
      for (int sw : switch_order)
        if (i < by_switch[sw].size()) {
          any = true;
          if (static_cast<int>(hosts.size()) < run.nodes) hosts.push_back(by_switch[sw][i]);
        }
      if (!any) break;
    }
    std::string what = fmt::format("{}{} {}x{}", run.collective, run.pattern.empty() ? "" : " " + run.pattern,
                                   run.nodes, run.ranks_per_node);
    if (static_cast<int>(hosts.size()) < run.nodes) {
      failures.push_back(fmt::format("{}: only {} live hosts", what, hosts.size()));
      Progress(sweep_id, failures.back(), 1, 0);
      continue;
    }
    db::TuningKey key{topo->stored.version, run.collective, run.nodes * run.ranks_per_node, run.ranks_per_node,
                      run.pattern};
    std::vector<int64_t> sizes = run.msizes.empty() ? first_sizes : run.msizes;
    if (budget_ms > 0) {
      // Each size takes about its sampling budget; launching and warming up
      // a job, a few seconds more.
      constexpr int64_t kLaunchMs = 15'000;
      const int64_t estimate = static_cast<int64_t>(sizes.size() * tc.size_budget_s * 1000) + kLaunchMs;
      const int64_t used = NowMs() - started_ms;
      if (used + estimate > budget_ms) {
        const std::string why = fmt::format("left out at the budget ({} s used of {} s, the run needs about {} s)",
                                            used / 1000, budget_ms / 1000, estimate / 1000);
        {
          std::lock_guard lock(mu_);
          for (const std::string& c : run.cells) sweeps_[sweep_id].left_out.push_back(c + ": " + why);
        }
        Progress(sweep_id, what + ": " + why, 1, 0);
        continue;
      }
    }
    std::vector<std::string> algorithms;         // Empty: every kernel.
    std::map<double, std::string> failed_sizes;  // Failed twice: native runs there, with the reason.
    for (int round = 0;; ++round) {
      Progress(
          sweep_id,
          fmt::format("{}{} sizes {}", what, round ? fmt::format(" refinement {}", round) : "", fmt::join(sizes, ",")),
          0, 0);
      const bool measured = MeasureSizes(sweep_id, run, hosts, topo->stored.version, topo->stored.yaml, sizes,
                                         algorithms, iterations, &failed_sizes, &failures);
      // Decide from every sample of the key, including earlier rounds and runs.
      std::vector<SizeChoice> choices = Decide(sweep_id, what, key, failed_sizes);
      bool last = !measured || req.skip_refinement() || req.from_demand() || round >= tc.max_refinement_rounds ||
                  choices.empty();
      std::vector<double> next;
      if (!last) next = RefinementSizes(choices);
      {
        std::lock_guard lock(mu_);
        if (stopping_) last = true;
      }
      if (last || next.empty()) {
        if (measured) {
          std::lock_guard lock(mu_);
          for (const std::string& c : run.cells) sweeps_[sweep_id].covered.push_back(c);
        }
        Progress(sweep_id, "", 1, 0);
        break;
      }
      // Bisect with the algorithms on both sides of each crossover, and native.
      std::set<std::string> algs = {"native"};
      for (size_t i = 0; i + 1 < choices.size(); ++i)
        if (choices[i].chosen != choices[i + 1].chosen)
          algs.insert({choices[i].chosen, choices[i + 1].chosen, choices[i].fastest, choices[i + 1].fastest});
      algorithms.assign(algs.begin(), algs.end());
      sizes.clear();
      for (double s : next) sizes.push_back(static_cast<int64_t>(s));
      Progress(sweep_id, "", 0, 1);  // A refinement round is one more run.
    }
  }
  std::lock_guard lock(mu_);
  Sweep& s = sweeps_[sweep_id];
  s.finished_ms = NowMs();
  if (cancelled || stopping_) {
    s.state = v1::TUNING_STATE_CANCELLED;
    s.message = "cancelled: topotuned shut down";
  } else if (!failures.empty()) {
    s.state = v1::TUNING_STATE_FAILED;
    s.message = fmt::format("{} of {} runs failed: {}", failures.size(), s.runs_total, fmt::join(failures, "; "));
  } else if (s.runs_total == 0) {
    s.state = v1::TUNING_STATE_SUCCEEDED;
    s.message = s.request.from_demand() ? "no run: no demand cell with time at stake in the window" : "no run planned";
  } else {
    s.state = v1::TUNING_STATE_SUCCEEDED;
    s.message = "every run finished; decision tables stored";
  }
  if (s.request.from_demand())
    s.message += fmt::format("; from demand: {} cells covered, {} left out", s.covered.size(), s.left_out.size());
  Metrics& m = core_->metrics();
  m.SweepFinished(s.state == v1::TUNING_STATE_SUCCEEDED ? "succeeded"
                  : s.state == v1::TUNING_STATE_FAILED  ? "failed"
                                                        : "cancelled",
                  static_cast<double>(s.finished_ms) / 1000);
  m.SetSweepRunning(false);
  spdlog::info("{} {}", sweep_id, s.message);
}

bool Tuner::MeasureSizes(const std::string& sweep_id, const Run& run, const std::vector<std::string>& hosts,
                         int64_t topology_version, const std::string& topology_yaml, const std::vector<int64_t>& sizes,
                         const std::vector<std::string>& algorithms, int iterations,
                         std::map<double, std::string>* failed_sizes, std::vector<std::string>* failures) {
  const std::string what = fmt::format("{}{} {}x{}", run.collective, run.pattern.empty() ? "" : " " + run.pattern,
                                       run.nodes, run.ranks_per_node);
  std::vector<int64_t> pending = sizes;
  std::map<int64_t, int> attempts;  // Failed runs that ended at each size.
  int empty_runs = 0;               // Failed runs in a row that measured nothing.
  while (!pending.empty()) {
    {
      std::lock_guard lock(mu_);
      if (stopping_) return false;
    }
    int64_t run_id = 0;
    auto [state, message] =
        RunJob(sweep_id, run, hosts, topology_version, topology_yaml, pending, algorithms, iterations, &run_id);
    if (state == static_cast<int>(db::RunState::kDone)) return true;
    bool stopping = false;
    {
      std::lock_guard lock(mu_);
      stopping = stopping_;
    }
    if (stopping) {  // RunJob ended the job for the shutdown.
      failures->push_back(fmt::format("{}: {}", what, message));
      return false;
    }
    auto done = core_->store().MeasuredSizes(run_id);
    std::set<int64_t> measured;
    if (done.ok())
      for (double m : *done) measured.insert(static_cast<int64_t>(m));
    // The run ended at the first size it did not measure: that size failed.
    auto at = std::find_if(pending.begin(), pending.end(), [&](int64_t m) { return !measured.count(m); });
    if (at == pending.end()) return true;  // Every size is in, whatever the launcher said at the end.
    const int64_t size = *at;
    empty_runs = measured.empty() ? empty_runs + 1 : 0;
    std::erase_if(pending, [&](int64_t m) { return measured.count(m) > 0; });
    if (++attempts[size] < 2 && empty_runs < 2) {
      spdlog::warn("{} {}: the run ended at {} ({}); trying {} once more", sweep_id, what, FormatBytes(size), message,
                   pending.size() == 1 ? "it" : fmt::format("it and the {} sizes after it", pending.size() - 1));
      Progress(sweep_id, fmt::format("{}: {} failed once; trying it again", what, FormatBytes(size)), 0, 0);
      continue;
    }
    // Failed twice (or nothing measured twice in a row: the launcher itself
    // fails): native stays at those sizes, and the sweep says so.
    std::vector<int64_t> given_up = {size};
    if (empty_runs >= 2) given_up = pending;
    for (int64_t m : given_up) {
      (*failed_sizes)[static_cast<double>(m)] =
          fmt::format("the benchmark failed twice at {}: {}", FormatBytes(m), message);
      failures->push_back(fmt::format("{} at {}: failed twice, native runs there: {}", what, FormatBytes(m), message));
      std::erase(pending, m);
    }
    spdlog::error("{} {}: {} failed twice; native runs there", sweep_id, what,
                  fmt::join(given_up | std::views::transform([](int64_t m) { return FormatBytes(m); }), ", "));
  }
  return true;
}

std::vector<SizeChoice> Tuner::Decide(const std::string& sweep_id, const std::string& what, const db::TuningKey& key,
                                      const std::map<double, std::string>& failed_sizes) {
  const TuningConfig& tc = core_->config().tuning;
  auto sets = core_->store().Samples(key);
  if (!sets.ok()) {
    spdlog::error("{} {}: reading the samples: {}", sweep_id, what, sets.status().message());
    return {};
  }
  std::vector<SizeChoice> choices;
  if (!sets->empty()) {
    ChoiceOptions options;
    options.alpha = tc.alpha;
    options.margin = tc.margin;
    options.preference = KernelsByPreference(key.collective);
    auto chosen = ChooseBySize(*sets, options);
    if (!chosen.ok()) {
      spdlog::error("{} {}: {}", sweep_id, what, chosen.status().message());
      return {};
    }
    choices = std::move(*chosen);
  }
  // A size that failed twice keeps native, said so, unless another run measured it.
  for (const auto& [msize, why] : failed_sizes)
    if (std::none_of(choices.begin(), choices.end(), [&](const SizeChoice& c) { return c.msize == msize; }))
      choices.push_back(FailedChoice(msize, "native", why));
  std::sort(choices.begin(), choices.end(), [](const SizeChoice& a, const SizeChoice& b) { return a.msize < b.msize; });
  if (choices.empty()) return choices;
  std::vector<std::string> cost;
  if (auto seconds = core_->store().SizeSeconds(key); seconds.ok())
    for (const auto& [msize, s] : *seconds)
      for (SizeChoice& c : choices)
        if (c.msize == msize) {
          c.tuning_seconds = s;
          cost.push_back(fmt::format("{} {:.1f} s", FormatBytes(msize), s));
        }
  std::vector<DecisionRange> table = DecisionTable(choices);
  auto put = core_->store().PutDecision(key, table, choices);
  if (!put.ok()) {
    spdlog::error("{} {}: storing the decision: {}", sweep_id, what, put.status().message());
    return choices;
  }
  core_->DecisionsChanged(key.topology_version);
  spdlog::info("{} {}: {}", sweep_id, what, FormatDecisionTable(table));
  if (!cost.empty()) spdlog::info("{} {}: tuning time per size: {}", sweep_id, what, fmt::join(cost, ", "));
  return choices;
}

std::pair<int, std::string> Tuner::RunJob(const std::string& sweep_id, const Run& run,
                                          const std::vector<std::string>& hosts, int64_t topology_version,
                                          const std::string& topology_yaml, const std::vector<int64_t>& msizes,
                                          const std::vector<std::string>& algorithms, int iterations,
                                          int64_t* run_id_out) {
  const Config& config = core_->config();
  const TuningConfig& tc = config.tuning;
  const int np = run.nodes * run.ranks_per_node;
  db::TuningKey key{topology_version, run.collective, np, run.ranks_per_node, run.pattern};
  auto started = core_->store().StartRun(key, db::RunState::kRunning);
  if (!started.ok()) return {static_cast<int>(db::RunState::kFailed), started.status().message()};
  const int64_t run_id = *started;
  *run_id_out = run_id;
  const std::string task_id = fmt::format("run-{}", run_id);
  auto finish = [&](db::RunState state, std::string message) {
    {
      std::lock_guard lock(mu_);
      tasks_[task_id].runnable = false;
    }
    Status s = core_->store().FinishRun(run_id, state, message);
    if (!s.ok()) spdlog::error("{}: {}", task_id, s.message());
    core_->metrics().RunFinished(db::RunStateName(state));
    if (state == db::RunState::kDone)
      spdlog::info("{} done", task_id);
    else
      spdlog::warn("{} {}: {}", task_id, db::RunStateName(state), message);
    return std::make_pair(static_cast<int>(state), std::move(message));
  };

  v1::BenchTask task;
  task.set_task_id(task_id);
  task.set_tuning_id(sweep_id);
  task.set_collective(v1::ParseCollectiveName(run.collective).value_or(v1::COLLECTIVE_UNSPECIFIED));
  for (const std::string& a : algorithms) task.add_algorithms(a);
  for (int64_t s : msizes) task.add_msizes(s);
  task.set_warmup(2);
  task.set_iterations(iterations);
  if (run.collective == "alltoallv")
    task.set_pattern(v1::ParsePatternName(run.pattern).value_or(v1::ALLTOALLV_PATTERN_UNIFORM));
  task.set_seed(1);
  task.set_nprocs(np);
  task.set_ranks_per_node(run.ranks_per_node);
  for (const std::string& h : hosts)
    for (int r = 0; r < run.ranks_per_node; ++r) task.add_rank_hosts(h);
  task.set_topology_version(topology_version);
  task.set_topology_yaml(topology_yaml);
  *task.mutable_task_timeout() = TimeUtil::MillisecondsToDuration(static_cast<int64_t>(tc.job_timeout_s * 1000));
  *task.mutable_point_timeout() = TimeUtil::MillisecondsToDuration(static_cast<int64_t>(tc.point_timeout_s * 1000));
  // Interleaved rounds with adaptive sampling and the A/A control; the
  // rounds' order seed is the run id, so a run's orders can be drawn again.
  task.set_interleave(true);
  if (tc.size_budget_s > 0)
    *task.mutable_size_budget() = TimeUtil::MillisecondsToDuration(static_cast<int64_t>(tc.size_budget_s * 1000));
  task.set_max_rounds(std::max(tc.max_rounds, iterations));
  task.set_margin(tc.margin);
  task.set_alpha(tc.alpha);
  task.set_aa_control(tc.aa_control);
  task.set_race(tc.race);
  if (const double limit = CandidateLimit(tc); limit > 0)
    *task.mutable_candidate_timeout() = TimeUtil::MillisecondsToDuration(static_cast<int64_t>(limit * 1000));
  task.set_slow_warmup_factor(tc.slow_warmup_factor);
  if (run.pattern == "skewed" || run.pattern == "sparse") task.set_matrices(tc.alltoallv_matrices);
  task.set_order_seed(static_cast<uint64_t>(run_id));
  if (Status v = Validate(task); !v.ok()) return finish(db::RunState::kFailed, "task: " + v.message());
  {
    std::lock_guard lock(mu_);
    tasks_[task_id] = {task, run_id, sweep_id, true};
  }

  // The job's files: its hostfile and its output.
  std::error_code ec;
  std::filesystem::path dir = config.database == ":memory:" || config.database.empty()
                                  ? std::filesystem::temp_directory_path() / fmt::format("topotune-{}", getpid())
                                  : std::filesystem::path(config.database).parent_path() / "bench-logs";
  std::filesystem::create_directories(dir, ec);
  const std::string hostfile = (dir / (task_id + ".hosts")).string();
  const std::string log = (dir / (task_id + ".log")).string();
  {
    std::ofstream out(hostfile);
    for (const std::string& h : hosts) out << h << " slots=" << run.ranks_per_node << "\n";
    if (!out) return finish(db::RunState::kFailed, "cannot write " + hostfile);
  }
  std::string command = fmt::format("{} bench --server {} --task {}", AgentCommand(), ServerAddress(), task_id);
  if (!config.token_file.empty()) command += " --token-file " + config.token_file;
  if (!config.tls_cert.empty()) command += " --tls-ca " + (tc.agent_tls_ca.empty() ? config.tls_cert : tc.agent_tls_ca);
  const std::string line = ExpandLauncher(tc.launcher, np, hostfile, hosts, run.ranks_per_node, command);
  spdlog::info("{} ({} {} ranks on {}; rounds in random order, seed {}): {}", task_id, run.collective, np,
               fmt::join(hosts, ","), task.order_seed(), line);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  pid_t pid = 0;
  const char* argv[] = {"/bin/sh", "-c", line.c_str(), nullptr};
  int rc = posix_spawn(&pid, "/bin/sh", &actions, &attr, const_cast<char* const*>(argv), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return finish(db::RunState::kFailed, fmt::format("cannot start the launcher: {}", strerror(rc)));
  launcher_pgid_ = pid;

  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<int64_t>(tc.job_timeout_s * 1000));
  int status = 0;
  bool timed_out = false, stopped = false;
  for (;;) {
    pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    {
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, std::chrono::milliseconds(100), [this] { return stopping_; });
      stopped = stopping_;
    }
    timed_out = std::chrono::steady_clock::now() >= deadline;
    if (!stopped && !timed_out) continue;
    // Kill the launcher's whole process group: TERM, then KILL.
    kill(-pid, SIGTERM);
    for (int i = 0; i < 50 && waitpid(pid, &status, WNOHANG) != pid; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    kill(-pid, SIGKILL);
    waitpid(pid, &status, 0);
    break;
  }
  kill(-pid, SIGKILL);  // Whatever the launcher left behind in its group.
  launcher_pgid_ = 0;
  if (stopped) return finish(db::RunState::kFailed, "cancelled: topotuned shut down");
  if (timed_out)
    return finish(db::RunState::kTimeout,
                  fmt::format("killed after job_timeout ({} s); output in {}", tc.job_timeout_s, log));
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return finish(db::RunState::kDone, "");
  std::string how = WIFEXITED(status) ? fmt::format("exit status {}", WEXITSTATUS(status))
                                      : fmt::format("signal {}", WTERMSIG(status));
  return finish(db::RunState::kFailed, fmt::format("launcher failed ({}): {} (output in {})", how, Tail(log, 3), log));
}

}  // namespace topotune::daemon
