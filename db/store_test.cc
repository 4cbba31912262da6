#include "db/store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "db/sqlite.h"
#include "db/test_util.h"
#include "tuner/crossover.h"
#include "tuner/hash.h"
#include "tuner/test_trees.h"
#include "tuner/topology_io.h"

namespace topotune::db {
namespace {

using testing::FakeClock;
using ::testing::HasSubstr;
using testing::Must;
using ::testing::StartsWith;
using testing::TempDir;

constexpr double kInf = std::numeric_limits<double>::infinity();

// Slots, latencies, several speeds.
constexpr const char* kCluster = R"(switches:
  - name: core
  - name: leaf-a
  - name: leaf-b
hosts:
  - name: n0
    slots: 4
  - name: n1
  - name: n2
    slots: 2
links:
  - [core, leaf-a, 10Gbps, 2us]
  - [leaf-b, core, 10Gbps]
  - [n0, leaf-a, 1Gbps]
  - [n1, leaf-a, 2.5Gbps, 500ns]
  - [leaf-b, n2, 100Mbps, 1.5ms]
)";

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.File("topotune.db");
    StoreOptions options;
    options.clock = clock_.Fn();
    store_.emplace(Must(Store::Open(path_, options)));
    cluster_.emplace(Must(ParseTopology(kCluster, "cluster.yaml")));
    version_ = Must(store_->PutTopology(*cluster_, "cluster.yaml"));
  }
  Store& store() { return *store_; }

  // Reads with a second connection, as another process would.
  int64_t Count(const std::string& sql) {
    auto conn = Must(Connection::Open(path_, false));
    return std::stoll(Must(conn->QueryText(sql)));
  }

  TempDir dir_;
  std::string path_;
  FakeClock clock_;
  std::optional<Store> store_;
  std::optional<Topology> cluster_;
  int64_t version_ = 0;
};

// ---------------------------------------------------------------------------
// Topologies

TEST_F(StoreTest, TopologyRoundTripsByteForByte) {
  StoredTopology t = Must(store().GetTopology(version_));
  EXPECT_EQ(t.version, version_);
  EXPECT_EQ(t.yaml, DumpTopology(*cluster_));
  EXPECT_EQ(DumpTopology(t.topology), t.yaml);
  EXPECT_EQ(t.content_hash, Fnv1a64Hex(t.yaml));
  EXPECT_EQ(t.source, "cluster.yaml");
  EXPECT_EQ(t.topology.source(), "cluster.yaml");
  EXPECT_EQ(t.created_at, clock_.Now());
  ASSERT_EQ(t.topology.num_nodes(), cluster_->num_nodes());
  for (int i = 0; i < t.topology.num_nodes(); ++i) {
    EXPECT_EQ(t.topology.nodes()[i].name, cluster_->nodes()[i].name);
    EXPECT_EQ(t.topology.nodes()[i].slots, cluster_->nodes()[i].slots);
  }
  for (size_t i = 0; i < t.topology.links().size(); ++i) {
    EXPECT_EQ(t.topology.links()[i].speed_bps, cluster_->links()[i].speed_bps);
    EXPECT_EQ(t.topology.links()[i].latency_s, cluster_->links()[i].latency_s);
  }

  // The rows of the topology.
  EXPECT_EQ(Count("SELECT count(*) FROM switches WHERE topology_version = 1"), 3);
  EXPECT_EQ(Count("SELECT slots FROM hosts WHERE topology_version = 1 AND name = 'n0'"), 4);
  EXPECT_EQ(Count("SELECT position FROM hosts WHERE name = 'n2'"), 2);
  EXPECT_EQ(Count("SELECT count(*) FROM links WHERE a = 'leaf-b' AND b = 'n2' AND latency_s = 0.0015 "
                  "AND speed_bps = 1e8 AND position = 4"),
            1);
}

TEST_F(StoreTest, RandomTopologiesRoundTripByteForByte) {
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Topology t = topotune::testing::RandomTree(seed, {.min_hosts = 3, .max_hosts = 60});
    int64_t v = Must(store().PutTopology(t, "discovery"));
    StoredTopology got = Must(store().GetTopology(v));
    EXPECT_EQ(got.yaml, DumpTopology(t));
    EXPECT_EQ(DumpTopology(got.topology), DumpTopology(t));
  }
}

TEST_F(StoreTest, TopologyVersionsDedupeAgainstTheLatest) {
  // Same content, whatever the source: same version.
  EXPECT_EQ(Must(store().PutTopology(*cluster_, "discovery")), version_);
  Topology fig1 = topotune::testing::FarajYuanFigure1();
  int64_t v2 = Must(store().PutTopology(fig1, "discovery"));
  EXPECT_EQ(v2, version_ + 1);
  EXPECT_EQ(Must(store().PutTopology(fig1, "discovery")), v2);
  // Going back to the first topology is a change too.
  int64_t v3 = Must(store().PutTopology(*cluster_, "cluster.yaml"));
  EXPECT_EQ(v3, v2 + 1);
  std::optional<StoredTopology> latest = Must(store().LatestTopology());
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(latest->version, v3);
  EXPECT_EQ(latest->content_hash, Must(store().GetTopology(version_)).content_hash);
}

TEST(StoreEmptyTest, NoTopologyYet) {
  TempDir dir;
  Store store = Must(Store::Open(dir.File("t.db")));
  EXPECT_FALSE(Must(store.LatestTopology()).has_value());
  StatusOr<StoredTopology> missing = store.GetTopology(7);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), Status::Code::kNotFound);
  EXPECT_EQ(missing.status().message(), dir.File("t.db") + ": topology version 7 not found");
}

TEST(StoreMemoryTest, InMemoryDatabaseWorksWithoutWal) {
  Store store = Must(Store::Open(":memory:"));
  EXPECT_EQ(store.SchemaVersion(), Store::LatestSchemaVersion());
  Topology fig1 = topotune::testing::FarajYuanFigure1();
  int64_t v = Must(store.PutTopology(fig1, "discovery"));
  EXPECT_EQ(Must(store.GetTopology(v)).yaml, DumpTopology(fig1));
  EXPECT_TRUE(store.IntegrityCheck().ok());
}

// ---------------------------------------------------------------------------
// Agents

TEST_F(StoreTest, AgentsRegisterAndHeartbeat) {
  ASSERT_TRUE(store().RegisterAgent("n1", R"({"cores": 8, "macs": ["02:00:00:00:00:01"]})").ok());
  const TimePoint registered = clock_.Now();
  clock_.Advance(1000);
  ASSERT_TRUE(store().RegisterAgent("n0", R"({"cores": 4})").ok());
  clock_.Advance(1000);
  ASSERT_TRUE(store().Heartbeat("n1").ok());

  std::vector<AgentInfo> agents = Must(store().ListAgents());
  ASSERT_EQ(agents.size(), 2u);
  EXPECT_EQ(agents[0].hostname, "n0");
  EXPECT_EQ(agents[1].hostname, "n1");
  EXPECT_EQ(nlohmann::json::parse(agents[1].facts_json)["cores"], 8);
  EXPECT_EQ(agents[1].registered_at, registered);
  EXPECT_EQ(agents[1].last_heartbeat, clock_.Now());

  // Re-registering replaces the facts.
  ASSERT_TRUE(store().RegisterAgent("n1", R"({"cores": 16})").ok());
  agents = Must(store().ListAgents());
  EXPECT_EQ(nlohmann::json::parse(agents[1].facts_json)["cores"], 16);
  EXPECT_EQ(agents[1].registered_at, clock_.Now());

  Status unknown = store().Heartbeat("n9");
  EXPECT_EQ(unknown.code(), Status::Code::kNotFound);
  EXPECT_EQ(unknown.message(), path_ + ": agent 'n9' is not registered");
  Status bad = store().RegisterAgent("n2", "{cores: 4");
  EXPECT_EQ(bad.code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(bad.message(), StartsWith(path_ + ": facts of agent 'n2' is not valid JSON: "));
  EXPECT_THAT(store().RegisterAgent("n2", "[1, 2]").message(), HasSubstr("must be a JSON object, got array"));
  EXPECT_EQ(Must(store().ListAgents()).size(), 2u);
}

// ---------------------------------------------------------------------------
// Benchmarks

TEST_F(StoreTest, RunLifecycle) {
  TuningKey key{version_, "alltoall", 7, 1};
  int64_t queued = Must(store().StartRun(key, RunState::kQueued));
  int64_t running = Must(store().StartRun(key));
  clock_.Advance(5);
  ASSERT_TRUE(store().MarkRunning(queued).ok());
  EXPECT_EQ(store().MarkRunning(queued).code(), Status::Code::kFailedPrecondition);
  std::vector<Sample> batch = {{"ring", 8, 1e-5}};
  ASSERT_TRUE(store().AddSamples(running, batch).ok());
  clock_.Advance(5);
  ASSERT_TRUE(store().FinishRun(running, RunState::kDone, "ok").ok());
  ASSERT_TRUE(store().FinishRun(queued, RunState::kTimeout, "no answer from n1 after 600 s").ok());

  Status again = store().FinishRun(running, RunState::kFailed, "late");
  EXPECT_EQ(again.code(), Status::Code::kFailedPrecondition);
  EXPECT_EQ(again.message(), path_ + ": bench run " + std::to_string(running) + " already ended (done)");
  EXPECT_EQ(store().FinishRun(running, RunState::kRunning, "").code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(store().FinishRun(999, RunState::kDone, "").code(), Status::Code::kNotFound);
  EXPECT_EQ(store().MarkRunning(999).code(), Status::Code::kNotFound);

  std::vector<BenchRun> runs = Must(store().ListRuns());
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].id, queued);
  EXPECT_EQ(runs[0].state, RunState::kTimeout);
  EXPECT_EQ(runs[0].message, "no answer from n1 after 600 s");
  EXPECT_EQ(runs[0].started_at, clock_.Now() - std::chrono::milliseconds(5));
  EXPECT_EQ(runs[1].state, RunState::kDone);
  EXPECT_EQ(runs[1].num_samples, 1);
  EXPECT_EQ(runs[1].key.collective, "alltoall");
  EXPECT_EQ(runs[1].key.nprocs, 7);
  EXPECT_EQ(runs[1].finished_at, clock_.Now());
  EXPECT_EQ(Must(store().ListRuns({.state = RunState::kDone})).size(), 1u);
  EXPECT_EQ(Must(store().ListRuns({.topology_version = version_ + 1})).size(), 0u);

  StatusOr<int64_t> no_topology = store().StartRun({version_ + 1, "alltoall", 7, 1});
  EXPECT_EQ(no_topology.status().code(), Status::Code::kNotFound);
  EXPECT_EQ(store().StartRun({version_, "", 7, 1}).status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(store().StartRun({version_, "alltoall", 0, 1}).status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(store().StartRun(key, RunState::kDone).status().code(), Status::Code::kInvalidArgument);
}

TEST_F(StoreTest, SamplesAreGroupedBySizeAndAlgorithm) {
  TuningKey key{version_, "alltoall", 7, 1};
  int64_t r1 = Must(store().StartRun(key));
  int64_t r2 = Must(store().StartRun(key));
  int64_t other = Must(store().StartRun({version_, "alltoall", 7, 2}));
  std::vector<Sample> b1 = {{"ring", 1024, 3.0}, {"native", 1024, 2.0}, {"ring", 64, 1.0}, {"ring", 1024, 4.0}};
  std::vector<Sample> b2 = {{"ring", 1024, 5.0}, {"native", 64, 0.5}};
  std::vector<Sample> b3 = {{"ring", 1024, 99.0}};
  ASSERT_TRUE(store().AddSamples(r1, b1).ok());
  ASSERT_TRUE(store().AddSamples(r2, b2).ok());
  ASSERT_TRUE(store().AddSamples(other, b3).ok());

  std::vector<SampleSet> sets = Must(store().Samples(key));
  ASSERT_EQ(sets.size(), 4u);
  EXPECT_EQ(sets[0].algorithm, "native");
  EXPECT_EQ(sets[0].msize, 64);
  EXPECT_EQ(sets[0].seconds, std::vector<double>{0.5});
  EXPECT_EQ(sets[1].algorithm, "ring");
  EXPECT_EQ(sets[1].msize, 64);
  EXPECT_EQ(sets[2].algorithm, "native");
  EXPECT_EQ(sets[2].msize, 1024);
  EXPECT_EQ(sets[3].algorithm, "ring");
  EXPECT_EQ(sets[3].msize, 1024);
  EXPECT_EQ(sets[3].seconds, (std::vector<double>{3.0, 4.0, 5.0}));  // Recording order, across runs.
  // What the tuner consumes.
  EXPECT_TRUE(ChooseBySize(sets).ok());
  EXPECT_TRUE(Must(store().Samples({version_, "allgather", 7, 1})).empty());
}

// Each call carries its round: the run's id high, its place among the run's
// calls of that algorithm and size low, so the tuner pairs calls of one
// round and never across runs; notes give the dropped reasons (an algorithm
// dropped before its first call has a set without times) and the sizes'
// wall times, summed over runs.
TEST_F(StoreTest, SamplesCarryRoundsNotesAndSizeSeconds) {
  TuningKey key{version_, "alltoall", 8, 1};
  int64_t r1 = Must(store().StartRun(key));
  int64_t r2 = Must(store().StartRun(key));
  std::vector<Sample> native1 = {{"native", 4096, 1.0}, {"native", 4096, 1.1}, {"native", 4096, 1.2}};
  std::vector<Sample> ring1 = {{"ring", 4096, 2.0}, {"ring", 4096, 2.1}};
  EXPECT_TRUE(Must(store().AddSampleBatch(r1, 0, native1, SampleNote{"native", 4096, "", 20})));
  EXPECT_TRUE(Must(store().AddSampleBatch(
      r1, 1, ring1, SampleNote{"ring", 4096, "cannot beat native: mean ratio 1.8 [1.7, 1.9] after 2 calls", 20})));
  EXPECT_TRUE(
      Must(store().AddSampleBatch(r1, 2, {}, SampleNote{"bruck", 4096, "its fastest warm-up call took 9 s", 20})));
  std::vector<Sample> native2 = {{"native", 4096, 1.3}};
  EXPECT_TRUE(Must(store().AddSampleBatch(r2, 0, native2, SampleNote{"native", 4096, "", 7.5})));
  std::vector<Sample> ring2 = {{"ring", 4096, 2.2}};
  EXPECT_TRUE(Must(store().AddSampleBatch(r2, 1, ring2, SampleNote{"ring", 4096, "too slow", 7.5})));

  std::vector<SampleSet> sets = Must(store().Samples(key));
  ASSERT_EQ(sets.size(), 3u);
  EXPECT_EQ(sets[0].algorithm, "bruck");
  EXPECT_TRUE(sets[0].seconds.empty());
  EXPECT_EQ(sets[0].dropped, "its fastest warm-up call took 9 s");
  EXPECT_EQ(sets[1].algorithm, "native");
  EXPECT_EQ(sets[1].seconds, (std::vector<double>{1.0, 1.1, 1.2, 1.3}));
  EXPECT_EQ(sets[1].rounds, (std::vector<int64_t>{r1 << 32, (r1 << 32) | 1, (r1 << 32) | 2, r2 << 32}));
  EXPECT_TRUE(sets[1].dropped.empty());
  EXPECT_EQ(sets[2].rounds, (std::vector<int64_t>{r1 << 32, (r1 << 32) | 1, r2 << 32}));
  EXPECT_EQ(sets[2].dropped, "cannot beat native: mean ratio 1.8 [1.7, 1.9] after 2 calls; too slow");
  auto choices = ChooseBySize(sets);
  ASSERT_TRUE(choices.ok()) << choices.status().message();
  EXPECT_EQ(choices->front().chosen, "native");
  for (const CandidateStats& c : choices->front().candidates)
    if (c.algorithm == "ring") {
      EXPECT_EQ(c.pairs, 3);
    }
  EXPECT_EQ(Must(store().SizeSeconds(key)), (std::vector<std::pair<double, double>>{{4096, 27.5}}));
  EXPECT_EQ(Must(store().MeasuredSizes(r1)), std::vector<double>{4096});
  // A run whose rounds cycled through 2 matrices: each call's matrix is its place mod 2.
  int64_t r3 = Must(store().StartRun(key));
  std::vector<Sample> three = {{"native", 8192, 1.0}, {"native", 8192, 1.1}, {"native", 8192, 1.2}};
  EXPECT_TRUE(Must(store().AddSampleBatch(r3, 0, three, SampleNote{"native", 8192, "", 3, 2})));
  sets = Must(store().Samples(key));
  ASSERT_EQ(sets.size(), 4u);
  EXPECT_EQ(sets[3].msize, 8192);
  EXPECT_EQ(sets[3].matrix, (std::vector<int32_t>{0, 1, 0}));
  EXPECT_TRUE(sets[1].matrix.empty());  // One matrix: nothing to tell apart.
  EXPECT_EQ(store().AddSampleBatch(r3, 1, three, SampleNote{"native", 8192, "", 3, 0}).status().code(),
            Status::Code::kInvalidArgument);
  EXPECT_TRUE(Must(store().MeasuredSizes(Must(store().StartRun(key)))).empty());
  // A note is checked like the samples, and a bad one stores nothing of its batch.
  EXPECT_EQ(store().AddSampleBatch(r2, 9, native2, SampleNote{"", 4096, "", 1}).status().code(),
            Status::Code::kInvalidArgument);
  EXPECT_EQ(store().AddSampleBatch(r2, 9, native2, SampleNote{"native", 4096, "", -1}).status().code(),
            Status::Code::kInvalidArgument);
  EXPECT_EQ(Must(store().Samples(key))[1].seconds.size(), 4u);
}

TEST_F(StoreTest, ResentBatchesAreStoredOnce) {
  TuningKey key{version_, "alltoall", 4, 1};
  int64_t run = Must(store().StartRun(key));
  std::vector<Sample> first = {{"ring", 8, 1e-5}, {"ring", 8, 2e-5}};
  std::vector<Sample> second = {{"native", 8, 3e-5}};
  EXPECT_TRUE(Must(store().AddSampleBatch(run, 0, first)));
  EXPECT_TRUE(Must(store().AddSampleBatch(run, 1, second)));
  EXPECT_FALSE(Must(store().AddSampleBatch(run, 0, first)));  // Resent after a broken stream.
  EXPECT_FALSE(Must(store().AddSampleBatch(run, 1, first)));  // Same sequence, other content: still ignored.
  EXPECT_EQ(Count("SELECT count(*) FROM samples"), 3);
  EXPECT_EQ(Count("SELECT count(*) FROM sample_batches"), 2);
  // A bad batch stores neither its samples nor its sequence.
  std::vector<Sample> bad = {{"ring", 8, -1}};
  EXPECT_EQ(store().AddSampleBatch(run, 2, bad).status().code(), Status::Code::kInvalidArgument);
  EXPECT_TRUE(Must(store().AddSampleBatch(run, 2, second)));
  EXPECT_EQ(store().AddSampleBatch(999, 0, second).status().code(), Status::Code::kNotFound);
}

TEST_F(StoreTest, ABadSampleRejectsTheWholeBatch) {
  int64_t run = Must(store().StartRun({version_, "alltoall", 7, 1}));
  std::vector<Sample> batch = {{"ring", 64, 1.0}, {"ring", 64, 0.0}};
  Status st = store().AddSamples(run, batch);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(st.message(), path_ + ": sample 1 of the batch for run " + std::to_string(run) +
                              " has seconds 0; it must be finite and > 0");
  batch = {{"ring", 64, 1.0}, {"", 64, 1.0}};
  EXPECT_EQ(store().AddSamples(run, batch).code(), Status::Code::kInvalidArgument);
  batch = {{"ring", kInf, 1.0}};
  EXPECT_THAT(store().AddSamples(run, batch).message(), HasSubstr("has msize inf"));
  batch = {{"ring", 64, 1.0}};
  EXPECT_EQ(store().AddSamples(run + 1, batch).code(), Status::Code::kNotFound);
  EXPECT_EQ(Count("SELECT count(*) FROM samples"), 0);
}

// ---------------------------------------------------------------------------
// Decisions

std::vector<SizeChoice> Choices(std::initializer_list<std::pair<double, const char*>> picks) {
  std::vector<SizeChoice> out;
  for (const auto& [msize, algorithm] : picks) {
    out.push_back(FixedChoice(msize, algorithm, 1e-4 * msize));
  }
  out.front().regret = 1.25;  // Something other than the default.
  out.front().significant = false;
  out.front().ratio = {0.9, 0.85, 0.95};
  out.front().calls = 42;
  out.front().aa_measured = true;
  out.front().aa = {1.01, 0.98, 1.04};
  out.front().noisy = true;
  out.front().candidates = {{"native", 21, 2e-3, 1.5e-3, 4e-3, {}, 1},
                            {"native:aa", 21, 2.02e-3, 1.6e-3, 4e-3, {1.01, 0.98, 1.04}, 0.5}};
  return out;
}

TEST_F(StoreTest, DecisionsRoundTripAndReplace) {
  TuningKey key{version_, "alltoall", 7, 1};
  EXPECT_FALSE(Must(store().GetDecision(key)).has_value());

  std::vector<SizeChoice> c1 = Choices({{64, "native"}, {4096, "tree_scheduled"}});
  std::vector<DecisionRange> t1 = DecisionTable(c1);
  int64_t id1 = Must(store().PutDecision(key, t1, c1));
  std::optional<StoredDecision> d = Must(store().GetDecision(key));
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->id, id1);
  ASSERT_EQ(d->table.size(), 2u);
  EXPECT_EQ(d->table[0].algorithm, "native");
  EXPECT_EQ(d->table[0].max_msize, 512);
  EXPECT_EQ(d->table[1].min_msize, 512);
  EXPECT_EQ(d->table[1].max_msize, kInf);
  ASSERT_EQ(d->choices.size(), 2u);
  EXPECT_EQ(d->choices[0].regret, 1.25);
  EXPECT_FALSE(d->choices[0].significant);
  EXPECT_EQ(d->choices[0].ratio.lo, 0.85);
  EXPECT_EQ(d->choices[0].ratio.hi, 0.95);
  EXPECT_EQ(d->choices[0].calls, 42);
  EXPECT_TRUE(d->choices[0].aa_measured);
  EXPECT_EQ(d->choices[0].aa.hi, 1.04);
  EXPECT_TRUE(d->choices[0].noisy);
  ASSERT_EQ(d->choices[0].candidates.size(), 2u);
  EXPECT_EQ(d->choices[0].candidates[1].algorithm, "native:aa");
  EXPECT_EQ(d->choices[0].candidates[1].ratio.lo, 0.98);
  EXPECT_FALSE(d->choices[1].aa_measured);
  EXPECT_EQ(d->choices[1].chosen_median, 1e-4 * 4096);
  ASSERT_EQ(d->crossovers.size(), 1u);
  EXPECT_EQ(d->crossovers[0].msize, 512);
  EXPECT_EQ(d->crossovers[0].from_algorithm, "native");
  EXPECT_EQ(d->crossovers[0].to_algorithm, "tree_scheduled");

  // Another key is untouched by the replacement below.
  TuningKey other{version_, "allgather", 7, 1};
  ASSERT_TRUE(store().PutDecision(other, t1, c1).ok());

  std::vector<SizeChoice> c2 = Choices({{64, "native"}, {1024, "ring"}, {65536, "tree_scheduled"}});
  int64_t id2 = Must(store().PutDecision(key, DecisionTable(c2), c2));
  EXPECT_NE(id2, id1);
  d = Must(store().GetDecision(key));
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->id, id2);
  EXPECT_EQ(d->table.size(), 3u);
  ASSERT_EQ(d->crossovers.size(), 2u);
  EXPECT_EQ(d->crossovers[1].from_algorithm, "ring");
  // The old decision's crossovers went with it.
  EXPECT_EQ(Count("SELECT count(*) FROM crossovers WHERE decision_id = " + std::to_string(id1)), 0);
  EXPECT_EQ(Count("SELECT count(*) FROM decisions"), 2);
  EXPECT_EQ(Count("SELECT count(*) FROM crossovers"), 3);

  std::vector<StoredDecision> all = Must(store().ListDecisions(version_));
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].key.collective, "allgather");
  EXPECT_EQ(all[1].key.collective, "alltoall");
  EXPECT_TRUE(Must(store().ListDecisions(version_ + 1)).empty());
}

TEST_F(StoreTest, DecisionTablesMustCoverAllSizes) {
  TuningKey key{version_, "alltoall", 7, 1};
  std::vector<SizeChoice> none;
  auto put = [&](std::vector<DecisionRange> table) { return store().PutDecision(key, table, none).status(); };
  EXPECT_THAT(put({}).message(), HasSubstr("the decision table is empty"));
  EXPECT_THAT(put({{1, kInf, "ring"}}).message(), HasSubstr("range 0 starts at 1, not at 0"));
  EXPECT_THAT(put({{0, 100, "ring"}, {200, kInf, "native"}}).message(),
              HasSubstr("range 1 starts at 200, not at 100 where the previous range ends"));
  EXPECT_THAT(put({{0, 100, "ring"}}).message(), HasSubstr("ends at 100, not at infinity"));
  EXPECT_THAT(put({{0, 0, "ring"}, {0, kInf, "ring"}}).message(), HasSubstr("empty or reversed"));
  EXPECT_EQ(store().PutDecision({version_ + 5, "alltoall", 7, 1}, {{{0, kInf, "ring"}}}, none).status().code(),
            Status::Code::kNotFound);
  EXPECT_FALSE(Must(store().GetDecision(key)).has_value());
}

// Alltoallv keeps runs, samples and decisions per size-pattern class; the
// other collectives have none.
TEST_F(StoreTest, AlltoallvKeysArePerPatternClass) {
  std::vector<SizeChoice> none;
  const std::vector<DecisionRange> linear = {{0, kInf, "linear"}}, native = {{0, kInf, "native"}};
  EXPECT_THAT(store().StartRun({version_, "alltoallv", 7, 1}).status().message(),
              HasSubstr("alltoallv takes one of uniform, skewed, sparse"));
  EXPECT_THAT(store().PutDecision({version_, "alltoallv", 7, 1, "random"}, linear, none).status().message(),
              HasSubstr("pattern 'random'"));
  EXPECT_THAT(store().StartRun({version_, "alltoall", 7, 1, "skewed"}).status().message(),
              HasSubstr("only alltoallv has patterns, not alltoall"));

  int64_t uniform = Must(store().StartRun({version_, "alltoallv", 7, 1, "uniform"}));
  int64_t skewed = Must(store().StartRun({version_, "alltoallv", 7, 1, "skewed"}));
  ASSERT_TRUE(store().AddSamples(uniform, std::vector<Sample>{{"linear", 64, 1e-3}}).ok());
  ASSERT_TRUE(store().AddSamples(skewed, std::vector<Sample>{{"native", 64, 2e-3}, {"native", 64, 3e-3}}).ok());
  std::vector<SampleSet> u = Must(store().Samples({version_, "alltoallv", 7, 1, "uniform"}));
  std::vector<SampleSet> k = Must(store().Samples({version_, "alltoallv", 7, 1, "skewed"}));
  ASSERT_EQ(u.size(), 1u);
  ASSERT_EQ(k.size(), 1u);
  EXPECT_EQ(u[0].algorithm, "linear");
  EXPECT_EQ(k[0].seconds.size(), 2u);
  EXPECT_TRUE(Must(store().Samples({version_, "alltoallv", 7, 1, "sparse"})).empty());
  std::vector<BenchRun> runs = Must(store().ListRuns());
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[1].key.pattern, "skewed");

  ASSERT_TRUE(store().PutDecision({version_, "alltoallv", 7, 1, "sparse"}, native, none).ok());
  ASSERT_TRUE(store().PutDecision({version_, "alltoallv", 7, 1, "uniform"}, linear, none).ok());
  ASSERT_TRUE(store().PutDecision({version_, "alltoall", 7, 1}, native, none).ok());
  std::vector<StoredDecision> all = Must(store().ListDecisions(version_));
  ASSERT_EQ(all.size(), 3u);  // By collective, then the classes in kPatternClasses order.
  EXPECT_EQ(all[0].key.pattern, "");
  EXPECT_EQ(all[1].key.pattern, "uniform");
  EXPECT_EQ(all[1].table[0].algorithm, "linear");
  EXPECT_EQ(all[2].key.pattern, "sparse");
  EXPECT_FALSE(Must(store().GetDecision({version_, "alltoallv", 7, 1, "skewed"})).has_value());
}

// ---------------------------------------------------------------------------
// Plan cache

TEST_F(StoreTest, PlanCacheEvictsLeastRecentlyUsed) {
  auto key = [&](const char* placement) { return PlanKey{version_, placement, "alltoall", "tree_scheduled"}; };
  const std::string binary("\x00\x01\x02\xff payload", 12);
  ASSERT_TRUE(store().PutPlan(key("a"), std::string(100, 'a')).ok());
  clock_.Advance();
  ASSERT_TRUE(store().PutPlan(key("b"), std::string(200, 'b')).ok());
  clock_.Advance();
  ASSERT_TRUE(store().PutPlan(key("c"), binary).ok());
  clock_.Advance();
  EXPECT_EQ(Must(store().PlanCacheBytes()), 312);

  // Using "a" makes "b" the least recently used.
  std::optional<std::string> a = Must(store().GetPlan(key("a")));
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(*a, std::string(100, 'a'));
  clock_.Advance();
  EXPECT_EQ(Must(store().GetPlan(key("c"))), binary);
  EXPECT_FALSE(Must(store().GetPlan(key("zzz"))).has_value());
  EXPECT_FALSE(Must(store().GetPlan({version_, "a", "alltoall", "ring"})).has_value());

  EXPECT_EQ(Must(store().EvictPlansLru(1000)), 0);
  EXPECT_EQ(Must(store().EvictPlansLru(112)), 1);
  EXPECT_FALSE(Must(store().GetPlan(key("b"))).has_value());
  EXPECT_EQ(Must(store().PlanCacheBytes()), 112);
  // "c" was used last (above); "a" goes next.
  EXPECT_EQ(Must(store().EvictPlansLru(111)), 1);
  EXPECT_TRUE(Must(store().GetPlan(key("c"))).has_value());
  EXPECT_EQ(Must(store().EvictPlansLru(0)), 1);
  EXPECT_EQ(Must(store().PlanCacheBytes()), 0);
  EXPECT_EQ(store().EvictPlansLru(-1).status().code(), Status::Code::kInvalidArgument);
}

TEST_F(StoreTest, PlanCacheReplacesAndDropsOldTopologies) {
  PlanKey key{version_, "p", "alltoall", "ring"};
  ASSERT_TRUE(store().PutPlan(key, "first").ok());
  ASSERT_TRUE(store().PutPlan(key, "second, longer").ok());
  EXPECT_EQ(Must(store().GetPlan(key)), "second, longer");
  EXPECT_EQ(Must(store().PlanCacheBytes()), 14);
  ASSERT_TRUE(store().PutPlan(key, "").ok());  // An empty plan is still a hit.
  EXPECT_EQ(Must(store().GetPlan(key)), "");

  int64_t v2 = Must(store().PutTopology(topotune::testing::FarajYuanFigure1(), "discovery"));
  ASSERT_TRUE(store().PutPlan({v2, "p", "alltoall", "ring"}, "new").ok());
  EXPECT_EQ(Must(store().DeletePlansBefore(v2)), 1);
  EXPECT_FALSE(Must(store().GetPlan(key)).has_value());
  EXPECT_TRUE(Must(store().GetPlan({v2, "p", "alltoall", "ring"})).has_value());

  EXPECT_EQ(store().PutPlan({v2 + 1, "p", "alltoall", "ring"}, "x").code(), Status::Code::kNotFound);
  EXPECT_EQ(store().PutPlan({v2, "", "alltoall", "ring"}, "x").code(), Status::Code::kInvalidArgument);
}

// ---------------------------------------------------------------------------
// Job reports, integrity, moves

TEST_F(StoreTest, JobReports) {
  int64_t first = Must(store().AddJobReport("slurm-1234", R"({"alltoall": {"calls": 10, "seconds": 0.5}})"));
  int64_t second = Must(store().AddJobReport("slurm-1234", "{}"));
  EXPECT_GT(second, first);
  EXPECT_EQ(Count("SELECT count(*) FROM job_reports WHERE job_id = 'slurm-1234'"), 2);
  EXPECT_EQ(store().AddJobReport("slurm-1235", "{").status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(store().AddJobReport("", "{}").status().code(), Status::Code::kInvalidArgument);
}

TEST_F(StoreTest, DemandSumsCellsOverTheWindow) {
  auto entry = [](std::string collective, int64_t bucket, std::string pattern, std::string source, int64_t calls,
                  double seconds) {
    DemandEntry d;
    d.topology_version = 1;
    d.collective = std::move(collective);
    d.nprocs = 8;
    d.ranks_per_node = 2;
    d.size_bucket = bucket;
    d.pattern = std::move(pattern);
    d.source = std::move(source);
    d.hosts = 4;
    d.switches = 2;
    d.calls = calls;
    d.bytes = calls * 1000;
    d.seconds = seconds;
    d.msize_calls = static_cast<double>(bucket * calls);
    return d;
  };
  // An old job, then three jobs a day later: two of one cell (one of them
  // partly on a tuned table), one of another.
  const std::vector<DemandEntry> old = {entry("alltoall", 65536, "", "default", 5, 9.0)};
  Must(store().AddJobReport("old", "{}", old));
  clock_.Advance(24 * 3600 * 1000);
  const std::vector<DemandEntry> a = {entry("alltoallv", 2 << 20, "uniform", "default", 11, 31.0),
                                      entry("alltoallv", 2 << 20, "uniform", "tuned", 1, 1.0)};
  const std::vector<DemandEntry> b = {entry("alltoallv", 2 << 20, "uniform", "default", 11, 30.0)};
  const std::vector<DemandEntry> c = {entry("alltoall", 65536, "", "nearest", 7, 2.0)};
  Must(store().AddJobReport("a", "{}", a));
  Must(store().AddJobReport("b", "{}", b));
  Must(store().AddJobReport("c", "{}", c));
  Must(store().AddJobReport("no-calls", "{}"));

  DemandTotals day = Must(store().Demand(std::chrono::hours(1)));
  EXPECT_EQ(day.jobs, 3);
  ASSERT_EQ(day.cells.size(), 2u);
  const DemandCellTotals& v = day.cells[0];  // The most time first.
  EXPECT_EQ(v.collective, "alltoallv");
  EXPECT_EQ(v.pattern, "uniform");
  EXPECT_EQ(v.size_bucket, 2 << 20);
  EXPECT_EQ(v.calls, 23);
  EXPECT_EQ(v.jobs, 2);
  EXPECT_DOUBLE_EQ(v.seconds, 62.0);
  EXPECT_DOUBLE_EQ(v.default_seconds, 61.0);
  EXPECT_DOUBLE_EQ(v.tuned_seconds, 1.0);
  EXPECT_DOUBLE_EQ(v.nearest_seconds, 0.0);
  EXPECT_DOUBLE_EQ(v.msize_calls, 23.0 * (2 << 20));
  EXPECT_EQ(v.hosts, 4);
  EXPECT_EQ(v.switches, 2);
  EXPECT_EQ(day.cells[1].collective, "alltoall");
  EXPECT_DOUBLE_EQ(day.cells[1].seconds, 2.0);  // The old job is outside the window.
  EXPECT_DOUBLE_EQ(day.cells[1].nearest_seconds, 2.0);

  DemandTotals two_days = Must(store().Demand(std::chrono::hours(48), "alltoall"));
  EXPECT_EQ(two_days.jobs, 2);
  ASSERT_EQ(two_days.cells.size(), 1u);
  EXPECT_DOUBLE_EQ(two_days.cells[0].seconds, 11.0);
  EXPECT_EQ(two_days.cells[0].jobs, 2);

  // A bad entry stores nothing of its report.
  const int64_t before = Count("SELECT count(*) FROM job_reports");
  std::vector<DemandEntry> bad = {entry("alltoall", 1024, "", "tuned", 1, 0.1)};
  bad.push_back(entry("alltoall", 1024, "", "default", -1, 0.1));
  EXPECT_EQ(store().AddJobReport("bad", "{}", bad).status().code(), Status::Code::kInvalidArgument);
  bad.back() = entry("alltoall", 1024, "", "", 1, 0.1);
  EXPECT_EQ(store().AddJobReport("bad", "{}", bad).status().code(), Status::Code::kInvalidArgument);
  bad.back() = entry("alltoall", 1024, "", "tuned", 1, std::nan(""));
  EXPECT_EQ(store().AddJobReport("bad", "{}", bad).status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(Count("SELECT count(*) FROM job_reports"), before);
}

TEST_F(StoreTest, LearnedKeepsTheLatestSettledChoicePerBucket) {
  auto bucket = [](int64_t size, bool settled, std::string choice, double ratio) {
    LearnedEntry l;
    l.topology_version = 1;
    l.collective = "alltoall";
    l.nprocs = 8;
    l.ranks_per_node = 2;
    l.size_bucket = size;
    l.settled = settled;
    l.choice = std::move(choice);
    l.ratio = ratio;
    l.calls = 40;
    l.exploring_calls = 12;
    l.candidates_json = R"([{"algorithm": "pairwise", "pairs": 6}])";
    return l;
  };
  const std::vector<LearnedEntry> first = {bucket(65536, true, "pairwise", 0.8), bucket(1024, false, "", 1)};
  Must(store().AddJobReport("a", "{}", {}, first));
  clock_.Advance(1000);
  const std::vector<LearnedEntry> second = {bucket(65536, true, "native", 1)};
  Must(store().AddJobReport("b", "{}", {}, second));
  std::vector<LearnedChoiceRow> rows = Must(store().Learned(1));
  ASSERT_EQ(rows.size(), 1u);  // The unsettled 1 KiB bucket taught nothing.
  EXPECT_EQ(rows[0].size_bucket, 65536);
  EXPECT_EQ(rows[0].algorithm, "native");  // The latest job's.
  EXPECT_EQ(rows[0].jobs, 2);
  EXPECT_TRUE(Must(store().Learned(2)).empty());
  EXPECT_EQ(Count("SELECT count(*) FROM learned"), 3);
  // A settled bucket without its choice, or candidates that are no array: nothing stored.
  std::vector<LearnedEntry> bad = {bucket(4096, true, "", 1)};
  EXPECT_EQ(store().AddJobReport("c", "{}", {}, bad).status().code(), Status::Code::kInvalidArgument);
  bad = {bucket(4096, true, "ring", 1)};
  bad[0].candidates_json = "{}";
  EXPECT_EQ(store().AddJobReport("c", "{}", {}, bad).status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(Count("SELECT count(*) FROM job_reports WHERE job_id = 'c'"), 0);
}

TEST_F(StoreTest, IntegrityCheckFindsOrphans) {
  EXPECT_TRUE(store().IntegrityCheck().ok());
  {
    // Another connection without foreign keys leaves an orphan behind.
    auto conn = Must(Connection::Open(path_, false));
    ASSERT_TRUE(conn->Exec("INSERT INTO samples (run_id, algorithm, msize, seconds, recorded_at) "
                           "VALUES (42, 'ring', 8, 1.0, 0)")
                    .ok());
  }
  Status st = store().IntegrityCheck();
  EXPECT_EQ(st.code(), Status::Code::kIoError);
  EXPECT_THAT(st.message(),
              HasSubstr("foreign key check failed: row 1 of samples refers to a missing row of bench_runs"));
}

TEST_F(StoreTest, MovesKeepTheConnection) {
  Store moved = std::move(*store_);
  EXPECT_EQ(Must(moved.GetTopology(version_)).version, version_);
  Store assigned = Must(Store::Open(dir_.File("other.db")));
  assigned = std::move(moved);
  EXPECT_EQ(assigned.path(), path_);
  EXPECT_EQ(Must(assigned.GetTopology(version_)).version, version_);
}

// ---------------------------------------------------------------------------
// Concurrency

// Eight threads share one Store: writes of every kind interleave and none is
// lost.
TEST_F(StoreTest, EightThreadsShareOneStore) {
  constexpr int kThreads = 8;
  constexpr int kBatches = 25;
  constexpr int kBatchSize = 10;
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  std::vector<std::string> errors(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto fail = [&](const Status& st) {
        if (errors[t].empty()) errors[t] = st.ToString();
      };
      TuningKey key{version_, "alltoall", t + 1, 1};
      StatusOr<int64_t> run = store().StartRun(key);
      if (!run.ok()) return fail(run.status());
      std::string host = "host-" + std::to_string(t);
      if (Status st = store().RegisterAgent(host, "{}"); !st.ok()) fail(st);
      for (int b = 0; b < kBatches; ++b) {
        std::vector<Sample> batch;
        batch.reserve(kBatchSize);
        for (int i = 0; i < kBatchSize; ++i) batch.push_back({"ring", static_cast<double>(b), 1e-6 * (i + 1)});
        if (Status st = store().AddSamples(*run, batch); !st.ok()) fail(st);
        PlanKey plan{version_, host, "alltoall", std::to_string(b)};
        if (Status st = store().PutPlan(plan, std::string(10, 'x')); !st.ok()) fail(st);
        StatusOr<std::optional<std::string>> got = store().GetPlan(plan);
        if (!got.ok()) fail(got.status());
        if (got.ok() && !got->has_value()) fail(Status::Internal("plan vanished"));
        if (Status st = store().Heartbeat(host); !st.ok()) fail(st);
        if (auto s = store().Samples(key); !s.ok()) fail(s.status());
      }
      if (Status st = store().FinishRun(*run, RunState::kDone, ""); !st.ok()) fail(st);
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(errors[t], "") << "thread " << t;

  for (int t = 0; t < kThreads; ++t) {
    std::vector<SampleSet> sets = Must(store().Samples({version_, "alltoall", t + 1, 1}));
    ASSERT_EQ(sets.size(), static_cast<size_t>(kBatches));
    for (const SampleSet& s : sets) EXPECT_EQ(s.seconds.size(), static_cast<size_t>(kBatchSize));
  }
  EXPECT_EQ(Must(store().ListAgents()).size(), static_cast<size_t>(kThreads));
  EXPECT_EQ(Must(store().PlanCacheBytes()), kThreads * kBatches * 10);
  EXPECT_EQ(Must(store().ListRuns({.state = RunState::kDone})).size(), static_cast<size_t>(kThreads));
  EXPECT_TRUE(store().IntegrityCheck().ok());
}

// Eight connections to one file (as separate processes would have) write at
// once: SQLite's locks and busy_timeout serialise them without errors.
TEST_F(StoreTest, EightConnectionsShareOneFile) {
  constexpr int kThreads = 8;
  constexpr int kBatches = 20;
  std::vector<int64_t> runs;
  runs.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) runs.push_back(Must(store().StartRun({version_, "allgather", 8, 1})));
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      StoreOptions options;
      options.busy_timeout_ms = 30000;  // Generous: the machine is shared and may be slow.
      StatusOr<Store> own = Store::Open(path_, options);
      if (!own.ok()) {
        errors[t] = own.status().ToString();
        return;
      }
      for (int b = 0; b < kBatches && errors[t].empty(); ++b) {
        std::vector<Sample> batch(5, Sample{"ring", 1024.0 * t, 1e-3});
        if (Status st = own->AddSamples(runs[t], batch); !st.ok()) errors[t] = st.ToString();
        if (Status st = own->PutPlan({version_, std::to_string(t), "allgather", "ring"}, "x"); !st.ok()) {
          errors[t] = st.ToString();
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(errors[t], "") << "thread " << t;
  std::vector<SampleSet> sets = Must(store().Samples({version_, "allgather", 8, 1}));
  ASSERT_EQ(sets.size(), static_cast<size_t>(kThreads));
  for (const SampleSet& s : sets) EXPECT_EQ(s.seconds.size(), static_cast<size_t>(kBatches * 5));
  EXPECT_TRUE(store().IntegrityCheck().ok());
}

}  // namespace
}  // namespace topotune::db
