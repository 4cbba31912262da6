// plans_fault_server: a deliberately faulty, but real, gRPC server of
// topotune.v1.Plans and topotune.v1.Admin (ReportJob only; every other Admin
// method is UNIMPLEMENTED), the adversary of the shim's fault tests. Each
// mode answers GetPlan in one wrong way, which libtopotune-mpi.so must
// survive: the job still runs, on the MPI library's own collectives.
//
//   plans_fault_server --listen 127.0.0.1:0 --port-file PATH --mode MODE [--delay-ms N]
//
// Modes (the plan's nprocs and ranks_per_node are the request's unless
// said otherwise; collectives not named keep one range of "native"):
//   slow               sleeps --delay-ms (default 3000), then answers a
//                      well-formed plan: alltoall is one range of "pairwise".
//                      ReportJob is delayed alike.
//   gap                alltoall's table is [0, 64) pairwise, [128, end) ring:
//                      sizes 64 to 127 have no range.
//   unknown_algorithm  alltoall's table names "no_such_kernel_xyz".
//   wrong_nprocs       alltoall pairwise, but nprocs is the request's + 3.
//   bad_program        alltoall tree_scheduled with one program per rank
//                      asked for; the last one has a step that sends to a
//                      rank out of range (nprocs + 5), so that a client that
//                      checks only rank 0's program misses it.
//   bad_program_count  alltoall tree_scheduled with one program fewer than
//                      the ranks asked for (the programs themselves valid).
//   bad_ring           allgather switch_ordered_ring whose ring order is not
//                      a permutation (rank 0 twice, the last rank missing).
//   bad_subplan        the first GetPlan (the world's, at MPI_Init) gets a
//                      well-formed plan (alltoall pairwise); every later
//                      one (sub-communicators) is bad_program_count's.
//   garbage            GetPlan's response body is random bytes that do not
//                      parse as a GetPlanResponse (a generic service sends
//                      them, bypassing protobuf serialisation).
// Every request is logged to stderr ("plans_fault_server: GetPlan ...").
//
// --port-file PATH: written (atomically) once the server listens, as
// "grpc=PORT", like topotuned's. SIGTERM and SIGINT stop the server (exit 0).
// Exit status 2 on a usage error, 1 when it cannot listen.
#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "topotune/v1/admin.grpc.pb.h"
#include "topotune/v1/plans.grpc.pb.h"

namespace {

namespace v1 = topotune::v1;

const char kUsage[] =
    "Usage: plans_fault_server --listen HOST:PORT --port-file PATH --mode MODE [--delay-ms N]\n"
    "\n"
    "A gRPC server of topotune.v1.Plans (GetPlan) and topotune.v1.Admin (ReportJob) that answers\n"
    "GetPlan wrongly on purpose, to test libtopotune-mpi.so's fallbacks.\n"
    "\n"
    "  --listen HOST:PORT  address (port 0: any free port; default 127.0.0.1:0)\n"
    "  --port-file PATH    write grpc=PORT here once listening\n"
    "  --mode MODE         slow, gap, unknown_algorithm, wrong_nprocs, bad_program,\n"
    "                      bad_program_count, bad_ring, bad_subplan or garbage\n"
    "  --delay-ms N        slow: how long each answer waits (default 3000)\n"
    "\n"
    "SIGTERM or SIGINT stops it. Exit status: 0 after a stop, 1 when it cannot listen, 2 on a usage error.\n";

const std::set<std::string> kModes = {"slow",         "gap",         "unknown_algorithm",
                                      "wrong_nprocs", "bad_program", "bad_program_count",
                                      "bad_ring",     "bad_subplan", "garbage"};

std::string g_mode;
int g_delay_ms = 3000;
std::atomic<bool> g_stopping{false};
std::mutex g_log_mu;

template <typename... Args>
void Log(const char* format, Args... args) {
  std::lock_guard lock(g_log_mu);
  std::fprintf(stderr, "plans_fault_server: ");
  std::fprintf(stderr, format, args...);
  std::fputc('\n', stderr);
  std::fflush(stderr);
}

std::string Short(const google::protobuf::Message& m) {
  std::string s = m.ShortDebugString();
  if (s.size() > 400) s = s.substr(0, 400) + "...";
  return s;
}

// Sleeps `ms`, waking early when the server stops.
void Sleep(int ms) {
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (!g_stopping && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

void OneRange(v1::CollectivePlan* plan, const std::string& algorithm) {
  v1::DecisionRange* r = plan->mutable_table()->add_ranges();
  r->set_min_msize(0);
  r->set_max_msize(0);
  r->set_algorithm(algorithm);
}

// tree_scheduled programs of an alltoall of n ranks: in phase j (1 to n-1)
// rank r sends to r + j and receives from r - j (mod n), no notices.
v1::RankProgram RingProgram(int rank, int n) {
  v1::RankProgram p;
  p.set_rank(rank);
  for (int j = 1; j < n; ++j) {
    v1::RankStep* s = p.add_steps();
    s->set_phase(j - 1);
    s->set_send_to((rank + j) % n);
    s->set_recv_from((rank - j + n) % n);
  }
  return p;
}

std::atomic<int> g_requests{0};

// The wrong plan of the mode (every mode but garbage).
void FaultyPlan(const v1::GetPlanRequest& req, v1::GetPlanResponse* resp) {
  const int n = req.rank_hosts_size();
  std::string mode = g_mode;
  if (mode == "bad_subplan") mode = g_requests++ == 0 ? "slow" : "bad_program_count";
  std::map<std::string, int> per_host;
  int rpn = 0;
  for (const std::string& h : req.rank_hosts()) rpn = std::max(rpn, ++per_host[h]);
  resp->set_topology_version(1);
  resp->set_plan_id("fault-" + g_mode);
  resp->set_nprocs(mode == "wrong_nprocs" ? n + 3 : n);
  resp->set_ranks_per_node(rpn);
  std::vector<int> asked(req.ranks().begin(), req.ranks().end());
  if (asked.empty())
    for (int r = 0; r < n; ++r) asked.push_back(r);
  for (int c : req.collectives()) {
    v1::CollectivePlan* plan = resp->add_plans();
    plan->set_collective(static_cast<v1::Collective>(c));
    plan->set_source(v1::DECISION_SOURCE_TUNED);
    plan->set_tuned_nprocs(n);
    plan->set_tuned_ranks_per_node(rpn);
    if (c == v1::COLLECTIVE_ALLTOALL) {
      if (mode == "gap") {
        v1::DecisionRange* r = plan->mutable_table()->add_ranges();
        r->set_min_msize(0);
        r->set_max_msize(64);
        r->set_algorithm("pairwise");
        r = plan->mutable_table()->add_ranges();
        r->set_min_msize(128);
        r->set_max_msize(0);
        r->set_algorithm("ring");
      } else if (mode == "unknown_algorithm") {
        OneRange(plan, "no_such_kernel_xyz");
      } else if (mode == "bad_program" || mode == "bad_program_count") {
        OneRange(plan, "tree_scheduled");
        v1::CompiledSchedule* s = plan->add_schedules();
        s->set_algorithm("tree_scheduled");
        s->set_num_ranks(n);
        s->set_num_phases(n);
        size_t count = asked.size();
        if (mode == "bad_program_count") --count;
        for (size_t i = 0; i < count; ++i) {
          v1::RankProgram* p = s->add_programs();
          *p = RingProgram(asked[i], n);
          if (mode == "bad_program" && i + 1 == count) {
            v1::RankStep* bad = p->add_steps();
            bad->set_phase(n);
            bad->set_send_to(n + 5);
          }
        }
      } else {  // slow, wrong_nprocs, bad_ring
        OneRange(plan, "pairwise");
      }
    } else if (c == v1::COLLECTIVE_ALLGATHER && mode == "bad_ring") {
      OneRange(plan, "switch_ordered_ring");
      v1::RingOrder* ring = plan->mutable_ring();
      for (int r = 0; r < n; ++r) {
        ring->add_order(r == n - 1 && n > 1 ? 0 : r);
        ring->add_switch_of_rank(0);
      }
    } else {
      OneRange(plan, "native");
    }
  }
}

// Bytes that are no GetPlanResponse: 0x0F is the tag of field 1 with wire
// type 7, which does not exist, so the parse fails at the first byte
// whatever follows; then 200 seeded random bytes.
std::string Garbage() {
  std::mt19937 rng(20240611);
  std::string bytes(1, '\x0F');
  for (int i = 0; i < 200; ++i) bytes.push_back(static_cast<char>(rng() & 0xFF));
  return bytes;
}

// Finishes calls now, or in slow mode after --delay-ms on a thread of its
// own (joined when the service goes).
class Finisher {
 public:
  ~Finisher() { JoinAll(); }

  void Finish(grpc::ServerUnaryReactor* reactor, const char* what) {
    if (g_mode != "slow") {
      reactor->Finish(grpc::Status::OK);
      return;
    }
    std::lock_guard lock(mu_);
    threads_.emplace_back([reactor, what] {
      Sleep(g_delay_ms);
      Log("%s: answering after %d ms", what, g_delay_ms);
      reactor->Finish(grpc::Status::OK);
    });
  }

  void JoinAll() {
    std::vector<std::thread> threads;
    {
      std::lock_guard lock(mu_);
      threads.swap(threads_);
    }
    for (std::thread& t : threads) t.join();
  }

 private:
  std::mutex mu_;
  std::vector<std::thread> threads_;
};

class PlansService final : public v1::Plans::CallbackService {
 public:
  grpc::ServerUnaryReactor* GetPlan(grpc::CallbackServerContext* ctx, const v1::GetPlanRequest* req,
                                    v1::GetPlanResponse* resp) override {
    Log("GetPlan from %s: %s; answering as mode %s", ctx->peer().c_str(), Short(*req).c_str(), g_mode.c_str());
    grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
    FaultyPlan(*req, resp);
    finisher_.Finish(reactor, "GetPlan");
    return reactor;
  }

  void JoinAll() { finisher_.JoinAll(); }

 private:
  Finisher finisher_;
};

class AdminService final : public v1::Admin::CallbackService {
 public:
  grpc::ServerUnaryReactor* ReportJob(grpc::CallbackServerContext* ctx, const v1::ReportJobRequest* req,
                                      v1::ReportJobResponse* resp) override {
    Log("ReportJob from %s: %s", ctx->peer().c_str(), Short(*req).c_str());
    resp->set_accepted(req->stats_size());
    grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
    finisher_.Finish(reactor, "ReportJob");
    return reactor;
  }

  void JoinAll() { finisher_.JoinAll(); }

 private:
  Finisher finisher_;
};

// garbage mode: every method the typed services do not register (GetPlan
// among them) comes here; GetPlan gets Garbage(), the rest UNIMPLEMENTED.
class GarbageReactor final : public grpc::ServerGenericBidiReactor {
 public:
  explicit GarbageReactor(grpc::GenericCallbackServerContext* ctx) : ctx_(ctx) { StartRead(&request_); }

  void OnReadDone(bool ok) override {
    if (!ok) {
      Finish({grpc::StatusCode::INVALID_ARGUMENT, "plans_fault_server: no request message"});
      return;
    }
    if (ctx_->method() != "/topotune.v1.Plans/GetPlan") {
      Log("%s from %s: UNIMPLEMENTED", ctx_->method().c_str(), ctx_->peer().c_str());
      Finish({grpc::StatusCode::UNIMPLEMENTED, "plans_fault_server: " + ctx_->method() + " is not served"});
      return;
    }
    std::vector<grpc::Slice> slices;
    std::string body;
    if (request_.Dump(&slices).ok())
      for (const grpc::Slice& s : slices) body.append(reinterpret_cast<const char*>(s.begin()), s.size());
    v1::GetPlanRequest req;
    req.ParseFromString(body);
    std::string garbage = Garbage();
    Log("GetPlan from %s: %s; answering %zu garbage bytes", ctx_->peer().c_str(), Short(req).c_str(), garbage.size());
    grpc::Slice slice(garbage);
    response_ = grpc::ByteBuffer(&slice, 1);
    StartWriteAndFinish(&response_, grpc::WriteOptions(), grpc::Status::OK);
  }

  void OnDone() override { delete this; }

 private:
  grpc::GenericCallbackServerContext* ctx_;
  grpc::ByteBuffer request_, response_;
};

class GarbageService final : public grpc::CallbackGenericService {
 public:
  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* ctx) override {
    return new GarbageReactor(ctx);
  }
};

}  // namespace

int main(int argc, char** argv) {
  std::string listen = "127.0.0.1:0", port_file;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "plans_fault_server: %s needs a value\n%s", a.c_str(), kUsage);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a == "--listen") {
      listen = value();
    } else if (a == "--port-file") {
      port_file = value();
    } else if (a == "--mode") {
      g_mode = value();
    } else if (a == "--delay-ms") {
      std::string v = value();
      char* end = nullptr;
      long ms = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || ms < 0 || ms > 600000) {
        std::fprintf(stderr, "plans_fault_server: --delay-ms: '%s' is not a number from 0 to 600000\n", v.c_str());
        return 2;
      }
      g_delay_ms = static_cast<int>(ms);
    } else {
      std::fprintf(stderr, "plans_fault_server: unknown argument '%s'\n%s", a.c_str(), kUsage);
      return 2;
    }
  }
  if (!kModes.count(g_mode)) {
    std::fprintf(stderr, "plans_fault_server: --mode '%s' is not one of the modes\n%s", g_mode.c_str(), kUsage);
    return 2;
  }
  {
    v1::GetPlanResponse check;
    if (check.ParseFromString(Garbage())) {
      std::fprintf(stderr, "plans_fault_server: the garbage bytes parse as a GetPlanResponse\n");
      return 1;
    }
  }

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  PlansService plans;
  AdminService admin;
  GarbageService garbage;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(listen, grpc::InsecureServerCredentials(), &port);
  if (g_mode == "garbage")
    builder.RegisterCallbackGenericService(&garbage);
  else
    builder.RegisterService(&plans);
  builder.RegisterService(&admin);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0) {
    std::fprintf(stderr, "plans_fault_server: cannot listen on %s\n", listen.c_str());
    return 1;
  }
  Log("mode %s, listening on port %d", g_mode.c_str(), port);
  if (!port_file.empty()) {
    std::string tmp = port_file + ".tmp";
    {
      std::ofstream out(tmp);
      out << "grpc=" << port << "\n";
      if (!out) {
        std::fprintf(stderr, "plans_fault_server: cannot write %s\n", tmp.c_str());
        return 1;
      }
    }
    if (std::rename(tmp.c_str(), port_file.c_str()) != 0) {
      std::perror(port_file.c_str());
      return 1;
    }
  }

  int sig = 0;
  sigwait(&signals, &sig);
  Log("%s: stopping", strsignal(sig));
  g_stopping = true;
  plans.JoinAll();
  admin.JoinAll();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  return 0;
}
