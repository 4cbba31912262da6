// Proves that the generated topotune.v1 library links and works: an
// in-process gRPC server on 127.0.0.1 (port chosen by the kernel) with a
// trivial Plans::GetPlan and Agents::ReportSamples, called by a real client
// over TCP. Also checks the bearer-token metadata round trip, the presence of
// optional peers (rank 0 versus no peer), the plan size limit a client must
// raise gRPC's receive limit to, the wire cost of a program step that
// limits.h relies on, and that the limits the .proto comments quote are the
// values of limits.h.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "proto/limits.h"
#include "topotune/v1/admin.grpc.pb.h"
#include "topotune/v1/agents.grpc.pb.h"
#include "topotune/v1/plans.grpc.pb.h"

namespace topotune::v1 {
namespace {

constexpr std::string_view kToken = "s3cret-token";

// The token of an `authorization: Bearer <token>` header, or "" when there is
// none or it is not a bearer token.
std::string BearerToken(const grpc::ServerContext& context) {
  auto it = context.client_metadata().find("authorization");
  if (it == context.client_metadata().end()) return "";
  std::string_view value(it->second.data(), it->second.size());
  constexpr std::string_view kPrefix = "Bearer ";
  if (!value.starts_with(kPrefix)) return "";
  return std::string(value.substr(kPrefix.size()));
}

// A ring all-to-all compiled by hand: in phase p, rank r sends to r+p+1 and
// receives from r-p-1 (mod n), and notifies its successor when sync is set.
RankProgram RingProgram(int rank, int n, bool sync) {
  RankProgram program;
  program.set_rank(rank);
  for (int p = 0; p < n - 1; ++p) {
    RankStep* step = program.add_steps();
    step->set_phase(p);
    step->set_send_to((rank + p + 1) % n);
    step->set_recv_from((rank - p - 1 + n) % n);
    if (sync && p > 0) step->add_wait_for((rank - 1 + n) % n);
    if (sync && p < n - 2) step->add_notify((rank + 1) % n);
  }
  return program;
}

class PlansImpl final : public Plans::Service {
 public:
  // A plan of `padding_ranks` extra programs makes the response large.
  explicit PlansImpl(int padding_ranks = 0) : padding_ranks_(padding_ranks) {}

  grpc::Status GetPlan(grpc::ServerContext* context, const GetPlanRequest* request,
                       GetPlanResponse* response) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      last_token_ = BearerToken(*context);
    }
    const int n = request->rank_hosts_size();
    if (n < 1 || n > limits::kMaxRanks) {
      return {grpc::StatusCode::INVALID_ARGUMENT,
              "rank_hosts: " + std::to_string(n) + " ranks; allowed: 1 to " + std::to_string(limits::kMaxRanks)};
    }
    // As plans.proto says the server does: plans with programs compress well.
    context->set_compression_algorithm(GRPC_COMPRESS_GZIP);
    response->set_topology_version(7);
    response->set_plan_id("plan-" + request->job_id() + "-" + std::to_string(n));
    response->set_nprocs(n);
    response->set_ranks_per_node(1);
    for (int c : request->collectives()) {
      CollectivePlan* plan = response->add_plans();
      plan->set_collective(static_cast<Collective>(c));
      plan->set_source(DECISION_SOURCE_TUNED);
      plan->set_tuned_nprocs(n);
      plan->set_tuned_ranks_per_node(1);
      DecisionRange* small = plan->mutable_table()->add_ranges();
      small->set_min_msize(0);
      small->set_max_msize(2048);
      small->set_algorithm("native");
      DecisionRange* large = plan->mutable_table()->add_ranges();
      large->set_min_msize(2048);
      large->set_algorithm("tree_scheduled");
      if (request->tables_only()) continue;
      CompiledSchedule* schedule = plan->add_schedules();
      schedule->set_algorithm("tree_scheduled");
      schedule->set_num_ranks(n);
      schedule->set_num_phases(n - 1);
      for (int r = 0; r < n + padding_ranks_; ++r) *schedule->add_programs() = RingProgram(r % n, n, true);
    }
    return grpc::Status::OK;
  }

  std::string last_token() {
    std::lock_guard<std::mutex> lock(mu_);
    return last_token_;
  }

 private:
  const int padding_ranks_;
  std::mutex mu_;
  std::string last_token_;
};

class AgentsImpl final : public Agents::Service {
 public:
  grpc::Status ReportSamples(grpc::ServerContext* context, grpc::ServerReader<ReportSamplesRequest>* reader,
                             ReportSamplesResponse* response) override {
    if (BearerToken(*context) != kToken) {
      return {grpc::StatusCode::UNAUTHENTICATED, "ReportSamples needs `authorization: Bearer <token>`"};
    }
    ReportSamplesRequest request;
    std::string task_id;
    int64_t accepted = 0;
    int64_t duplicates = 0;
    while (reader->Read(&request)) {
      if (accepted + duplicates == 0) task_id = request.task_id();
      if (request.task_id() != task_id) {
        return {grpc::StatusCode::INVALID_ARGUMENT,
                "task_id: '" + request.task_id() + "' in a stream of task '" + task_id + "'"};
      }
      std::lock_guard<std::mutex> lock(mu_);
      const bool seen = std::any_of(stored_.begin(), stored_.end(), [&](const ReportSamplesRequest& s) {
        return s.task_id() == task_id && s.sequence() == request.sequence();
      });
      if (seen) {
        ++duplicates;
      } else {
        stored_.push_back(request);
        ++accepted;
      }
    }
    response->set_accepted(accepted);
    response->set_duplicates(duplicates);
    return grpc::Status::OK;
  }

  std::vector<ReportSamplesRequest> stored() {
    std::lock_guard<std::mutex> lock(mu_);
    return stored_;
  }

 private:
  std::mutex mu_;
  std::vector<ReportSamplesRequest> stored_;
};

// A server with both services on 127.0.0.1:<free port>, and stubs to it.
class ProtoTest : public ::testing::Test {
 protected:
  void SetUp() override { Start(0); }
  void TearDown() override { Stop(); }

  void Start(int padding_ranks) {
    plans_ = std::make_unique<PlansImpl>(padding_ranks);
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(plans_.get());
    builder.RegisterService(&agents_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port_, 0);
    channel_ = grpc::CreateChannel(Address(), grpc::InsecureChannelCredentials());
    plans_stub_ = Plans::NewStub(channel_);
    agents_stub_ = Agents::NewStub(channel_);
  }

  void Stop() {
    if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
    server_.reset();
  }

  std::string Address() const { return "127.0.0.1:" + std::to_string(port_); }

  // Every call gets a deadline, so a broken server fails the test instead of
  // hanging it.
  static void SetDeadline(grpc::ClientContext* context) {
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  }

  static GetPlanRequest PlanRequest(int ranks) {
    GetPlanRequest request;
    request.set_job_id("job42");
    for (int r = 0; r < ranks; ++r) request.add_rank_hosts("n" + std::to_string(r / 2));
    request.add_collectives(COLLECTIVE_ALLTOALL);
    request.add_collectives(COLLECTIVE_ALLGATHER);
    return request;
  }

  int port_ = 0;
  std::unique_ptr<PlansImpl> plans_;
  AgentsImpl agents_;
  std::unique_ptr<grpc::Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<Plans::Stub> plans_stub_;
  std::unique_ptr<Agents::Stub> agents_stub_;
};

TEST_F(ProtoTest, GetPlanRoundTrip) {
  grpc::ClientContext context;
  SetDeadline(&context);
  GetPlanResponse response;
  grpc::Status status = plans_stub_->GetPlan(&context, PlanRequest(4), &response);
  ASSERT_TRUE(status.ok()) << status.error_code() << ": " << status.error_message();

  EXPECT_EQ(response.topology_version(), 7);
  EXPECT_EQ(response.plan_id(), "plan-job42-4");
  EXPECT_EQ(response.nprocs(), 4);
  ASSERT_EQ(response.plans_size(), 2);
  EXPECT_EQ(response.plans(0).collective(), COLLECTIVE_ALLTOALL);
  EXPECT_EQ(response.plans(1).collective(), COLLECTIVE_ALLGATHER);

  const CollectivePlan& plan = response.plans(0);
  EXPECT_EQ(plan.source(), DECISION_SOURCE_TUNED);
  ASSERT_EQ(plan.table().ranges_size(), 2);
  EXPECT_EQ(plan.table().ranges(0).max_msize(), 2048);
  EXPECT_EQ(plan.table().ranges(1).min_msize(), 2048);
  EXPECT_EQ(plan.table().ranges(1).max_msize(), 0);  // No end.
  EXPECT_EQ(plan.table().ranges(1).algorithm(), "tree_scheduled");

  ASSERT_EQ(plan.schedules_size(), 1);
  const CompiledSchedule& schedule = plan.schedules(0);
  EXPECT_EQ(schedule.num_phases(), 3);
  ASSERT_EQ(schedule.programs_size(), 4);
  for (int r = 0; r < 4; ++r) {
    const RankProgram& program = schedule.programs(r);
    EXPECT_EQ(program.rank(), r);
    ASSERT_EQ(program.steps_size(), 3);
    EXPECT_EQ(program.steps(0).send_to(), (r + 1) % 4);
    EXPECT_EQ(program.steps(2).recv_from(), (r + 1) % 4);
    EXPECT_EQ(program.steps(0).wait_for_size(), 0);
    EXPECT_EQ(program.steps(1).wait_for(0), (r + 3) % 4);
    EXPECT_EQ(program.steps(1).notify(0), (r + 1) % 4);
  }
  // Plan reads need no token; none was sent.
  EXPECT_EQ(plans_->last_token(), "");
}

TEST_F(ProtoTest, GetPlanTablesOnlyAndInvalidArgument) {
  {
    grpc::ClientContext context;
    SetDeadline(&context);
    GetPlanRequest request = PlanRequest(2);
    request.set_tables_only(true);
    GetPlanResponse response;
    ASSERT_TRUE(plans_stub_->GetPlan(&context, request, &response).ok());
    ASSERT_EQ(response.plans_size(), 2);
    EXPECT_EQ(response.plans(0).schedules_size(), 0);
    EXPECT_FALSE(response.plans(0).has_ring());
  }
  {
    grpc::ClientContext context;
    SetDeadline(&context);
    GetPlanResponse response;
    grpc::Status status = plans_stub_->GetPlan(&context, PlanRequest(0), &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(status.error_message(), "rank_hosts: 0 ranks; allowed: 1 to 65536");
  }
}

TEST_F(ProtoTest, BearerTokenReachesTheServer) {
  grpc::ClientContext context;
  SetDeadline(&context);
  context.AddMetadata("authorization", "Bearer " + std::string(kToken));
  GetPlanResponse response;
  ASSERT_TRUE(plans_stub_->GetPlan(&context, PlanRequest(2), &response).ok());
  EXPECT_EQ(plans_->last_token(), kToken);
}

ReportSamplesRequest SampleRequest(const std::string& task_id, int64_t sequence) {
  ReportSamplesRequest request;
  request.set_task_id(task_id);
  request.set_sequence(sequence);
  BenchSample* s = request.mutable_sample();
  s->set_collective(COLLECTIVE_ALLTOALL);
  s->set_algorithm(sequence % 2 == 0 ? "native" : "tree_scheduled");
  s->set_label(s->algorithm());
  s->set_nprocs(8);
  s->set_ranks_per_node(2);
  s->set_msize(int64_t{1} << sequence);
  s->set_iterations(3);
  s->set_min_s(0.001);
  s->set_median_s(0.002);
  s->set_p95_s(0.003);
  s->set_max_s(0.004);
  s->set_bytes_per_call(s->msize() * 8 * 7);  // N x (N-1) x msize.
  s->set_bytes_per_s(static_cast<double>(s->bytes_per_call()) / s->median_s());
  s->set_verified(true);
  s->set_fallbacks(sequence == 3 ? 1 : 0);
  for (double t : {0.001, 0.002, 0.004}) s->add_times_s(t);
  return request;
}

TEST_F(ProtoTest, ReportSamplesClientStreaming) {
  grpc::ClientContext context;
  SetDeadline(&context);
  context.AddMetadata("authorization", "Bearer " + std::string(kToken));
  ReportSamplesResponse response;
  std::unique_ptr<grpc::ClientWriter<ReportSamplesRequest>> writer = agents_stub_->ReportSamples(&context, &response);
  constexpr int kSamples = 20;
  for (int i = 0; i < kSamples; ++i) ASSERT_TRUE(writer->Write(SampleRequest("task-1", i)));
  ASSERT_TRUE(writer->Write(SampleRequest("task-1", 5)));  // A resent sample.
  ASSERT_TRUE(writer->WritesDone());
  grpc::Status status = writer->Finish();
  ASSERT_TRUE(status.ok()) << status.error_code() << ": " << status.error_message();
  EXPECT_EQ(response.accepted(), kSamples);
  EXPECT_EQ(response.duplicates(), 1);

  std::vector<ReportSamplesRequest> stored = agents_.stored();
  ASSERT_EQ(stored.size(), static_cast<size_t>(kSamples));
  const BenchSample& s = stored[3].sample();
  EXPECT_EQ(stored[3].sequence(), 3);
  EXPECT_EQ(s.algorithm(), "tree_scheduled");
  EXPECT_EQ(s.msize(), 8);
  EXPECT_EQ(s.fallbacks(), 1);
  EXPECT_TRUE(s.verified());
  EXPECT_TRUE(s.has_bytes_per_s());
  EXPECT_DOUBLE_EQ(s.bytes_per_s(), 8 * 7 * 8 / 0.002);
  EXPECT_FALSE(s.has_bound_s());  // Unset optionals stay unset across the wire.
  ASSERT_EQ(s.times_s_size(), 3);
  EXPECT_DOUBLE_EQ(s.times_s(2), 0.004);
}

TEST_F(ProtoTest, ReportSamplesWithoutTokenIsUnauthenticated) {
  for (const char* header : {"", "Basic czNjcmV0", "Bearer wrong"}) {
    grpc::ClientContext context;
    SetDeadline(&context);
    if (*header != '\0') context.AddMetadata("authorization", header);
    ReportSamplesResponse response;
    auto writer = agents_stub_->ReportSamples(&context, &response);
    writer->Write(SampleRequest("task-2", 0));  // May fail once the server has answered.
    writer->WritesDone();
    EXPECT_EQ(writer->Finish().error_code(), grpc::StatusCode::UNAUTHENTICATED) << "header '" << header << "'";
  }
  EXPECT_TRUE(agents_.stored().empty());
}

TEST_F(ProtoTest, ReportSamplesRejectsAMixedStream) {
  grpc::ClientContext context;
  SetDeadline(&context);
  context.AddMetadata("authorization", "Bearer " + std::string(kToken));
  ReportSamplesResponse response;
  auto writer = agents_stub_->ReportSamples(&context, &response);
  writer->Write(SampleRequest("task-3", 0));
  writer->Write(SampleRequest("task-4", 1));
  writer->WritesDone();
  grpc::Status status = writer->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(), "task_id: 'task-4' in a stream of task 'task-3'");
  // The sample before the bad one stays committed.
  ASSERT_EQ(agents_.stored().size(), 1u);
}

// A peer of rank 0 and no peer differ on the wire (proto3 optional).
TEST(ProtoMessages, OptionalPeersKeepPresence) {
  RankStep step;
  step.set_phase(3);
  step.set_send_to(0);
  RankStep parsed;
  ASSERT_TRUE(parsed.ParseFromString(step.SerializeAsString()));
  EXPECT_TRUE(parsed.has_send_to());
  EXPECT_EQ(parsed.send_to(), 0);
  EXPECT_FALSE(parsed.has_recv_from());
}

// limits.h sizes kMaxPlanSteps on 9 to 12 bytes per step, measured on real
// tree_scheduled programs, where most steps have no wait and no notice. A
// step with two peers and no syncs costs at most 11 bytes below 16384 ranks
// and phases; each wait or notice adds 2 to 4 bytes.
TEST(ProtoMessages, ProgramStepsAreCompact) {
  constexpr int kRanks = 256;
  const double steps = static_cast<double>(kRanks) * (kRanks - 1);
  CompiledSchedule plain;
  CompiledSchedule synced;  // A wait and a notice in nearly every step: the worst case.
  for (int r = 0; r < kRanks; ++r) {
    *plain.add_programs() = RingProgram(r, kRanks, false);
    *synced.add_programs() = RingProgram(r, kRanks, true);
  }
  const double plain_per_step = static_cast<double>(plain.ByteSizeLong()) / steps;
  const double synced_per_step = static_cast<double>(synced.ByteSizeLong()) / steps;
  EXPECT_LE(plain_per_step, 11.0);
  EXPECT_LE(synced_per_step, plain_per_step + 2 * 4.0);
  RecordProperty("plain_bytes_per_step", std::to_string(plain_per_step));
  RecordProperty("synced_bytes_per_step", std::to_string(synced_per_step));

  RankStep worst;  // Largest peers and phase below 16384.
  worst.set_phase(16383);
  worst.set_send_to(16383);
  worst.set_recv_from(16383);
  RankProgram one;
  *one.add_steps() = worst;
  EXPECT_LE(one.ByteSizeLong(), 11u);
}

// A plan bigger than gRPC's default 4 MiB receive limit needs the client to
// raise it to limits::kMaxPlanResponseBytes, as plans.proto says.
TEST_F(ProtoTest, LargePlanNeedsTheRaisedReceiveLimit) {
  Stop();
  Start(/*padding_ranks=*/1000);  // Twice 1256 programs of 255 steps: over 4 MiB.
  {
    grpc::ClientContext context;
    SetDeadline(&context);
    GetPlanResponse response;
    grpc::Status status = plans_stub_->GetPlan(&context, PlanRequest(256), &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(limits::kMaxPlanResponseBytes);
  auto stub = Plans::NewStub(grpc::CreateCustomChannel(Address(), grpc::InsecureChannelCredentials(), args));
  grpc::ClientContext context;
  SetDeadline(&context);
  GetPlanResponse response;
  grpc::Status status = stub->GetPlan(&context, PlanRequest(256), &response);
  ASSERT_TRUE(status.ok()) << status.error_code() << ": " << status.error_message();
  EXPECT_GT(response.ByteSizeLong(), size_t{4} << 20);
  EXPECT_LT(response.ByteSizeLong(), static_cast<size_t>(limits::kMaxPlanResponseBytes));
}

// "1 MiB" for byte limits that are whole MiB or GiB, else the decimal value:
// how the .proto comments quote a limit.
std::string QuotedLimit(std::string_view name, int64_t value) {
  if (name.ends_with("Bytes") && value % (int64_t{1} << 30) == 0) return std::to_string(value >> 30) + " GiB";
  if (name.ends_with("Bytes") && value % (int64_t{1} << 20) == 0) return std::to_string(value >> 20) + " MiB";
  return std::to_string(value);
}

// Every "kMaxName (value)" in the .proto comments names a constant of
// limits.h and quotes its value, so comments and server cannot drift apart.
TEST(ProtoLimits, ProtoCommentsQuoteLimitsH) {
  const std::map<std::string, int64_t> limits_h = {
      {"kMaxIdBytes", limits::kMaxIdBytes},
      {"kMaxHostnameBytes", limits::kMaxHostnameBytes},
      {"kMaxAlgorithmNameBytes", limits::kMaxAlgorithmNameBytes},
      {"kMaxLabelBytes", limits::kMaxLabelBytes},
      {"kMaxVersionBytes", limits::kMaxVersionBytes},
      {"kMaxMacs", limits::kMaxMacs},
      {"kMaxLldpStringBytes", limits::kMaxLldpStringBytes},
      {"kMaxCores", limits::kMaxCores},
      {"kMaxSamplesPerStream", limits::kMaxSamplesPerStream},
      {"kMaxTimesPerSample", limits::kMaxTimesPerSample},
      {"kMaxDroppedBytes", limits::kMaxDroppedBytes},
      {"kMaxMatrices", limits::kMaxMatrices},
      {"kMaxRanks", limits::kMaxRanks},
      {"kMaxCollectives", limits::kMaxCollectives},
      {"kMaxAlgorithms", limits::kMaxAlgorithms},
      {"kMaxMsizes", limits::kMaxMsizes},
      {"kMaxMsizeBytes", limits::kMaxMsizeBytes},
      {"kMaxIterations", limits::kMaxIterations},
      {"kMaxLayoutValues", limits::kMaxLayoutValues},
      {"kMaxSeeds", limits::kMaxSeeds},
      {"kMaxJobStats", limits::kMaxJobStats},
      {"kMaxPageSize", limits::kMaxPageSize},
      {"kDefaultPageSize", limits::kDefaultPageSize},
      {"kMaxTopologyYamlBytes", limits::kMaxTopologyYamlBytes},
      {"kMaxMpichBaseBytes", limits::kMaxMpichBaseBytes},
      {"kMaxPlanSteps", limits::kMaxPlanSteps},
      {"kMaxPlanResponseBytes", limits::kMaxPlanResponseBytes},
      {"kMaxListedAgents", limits::kMaxListedAgents},
  };
  // A name and its quoted value may sit on two comment lines.
  const std::regex continuation(R"(\n\s*//\s*)");
  const std::regex quoted(R"(\b(k[A-Z][A-Za-z]+) \(([^)]*)\))");
  std::set<std::string> seen;
  for (const char* file : {"common", "agents", "plans", "admin"}) {
    const std::string path = std::string(TOPOTUNE_SOURCE_DIR) + "/proto/topotune/v1/" + file + ".proto";
    std::ifstream in(path);
    ASSERT_TRUE(in) << "cannot read " << path;
    std::stringstream text;
    text << in.rdbuf();
    const std::string joined = std::regex_replace(text.str(), continuation, " ");
    for (std::sregex_iterator it(joined.begin(), joined.end(), quoted), end; it != end; ++it) {
      const std::string name = (*it)[1];
      const std::string value = (*it)[2];
      auto limit = limits_h.find(name);
      ASSERT_NE(limit, limits_h.end()) << file << ".proto quotes " << name << ", which limits.h does not define";
      EXPECT_EQ(value, QuotedLimit(name, limit->second)) << file << ".proto quotes " << name;
      seen.insert(name);
    }
  }
  EXPECT_GE(seen.size(), 15u) << "the .proto comments quote fewer limits than expected; did the pattern change?";
}

}  // namespace
}  // namespace topotune::v1
