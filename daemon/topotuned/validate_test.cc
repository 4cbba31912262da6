#include "daemon/topotuned/validate.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "proto/limits.h"

namespace topotune::daemon {
namespace {

namespace limits = v1::limits;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// --- Assertions -----------------------------------------------------------

::testing::AssertionResult Passes(const Status& s) {
  if (s.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "expected ok, got: " << s.message();
}

// Fails with InvalidArgument, a message that contains every one of `parts`,
// and a message that is one line of printable ASCII.
::testing::AssertionResult Fails(const Status& s, std::initializer_list<std::string> parts) {
  if (s.ok()) return ::testing::AssertionFailure() << "expected an error, got ok";
  if (s.code() != Status::Code::kInvalidArgument)
    return ::testing::AssertionFailure() << "expected invalid argument, got: " << s.ToString();
  for (const std::string& p : parts)
    if (s.message().find(p) == std::string::npos)
      return ::testing::AssertionFailure() << "message lacks [" << p << "]: " << s.message();
  for (const char c : s.message())
    if (c < 0x20 || c > 0x7e)
      return ::testing::AssertionFailure()
             << "message has byte " << static_cast<int>(static_cast<unsigned char>(c)) << ": " << s.message();
  return ::testing::AssertionSuccess();
}

// "kMaxRanks (65536)": a limit as messages name it.
std::string Lim(const std::string& name, int64_t value) { return name + " (" + std::to_string(value) + ")"; }

// --- Boundaries, table style ------------------------------------------------
//
// Each helper takes a valid message, the field as messages name it and a
// setter that writes a value into a copy; it checks that the bounds pass and
// that one past each fails with a message naming the field and the limit.

template <typename M>
using StringSetter = std::function<void(M&, const std::string&)>;
template <typename M>
using IntSetter = std::function<void(M&, int64_t)>;

// `min` (0 or 1) to `max` bytes of `fill`.
template <typename M>
void ExpectStringLimits(const M& valid, const std::string& field, const StringSetter<M>& set, int64_t min, int64_t max,
                        const std::string& limit, char fill = 'a') {
  SCOPED_TRACE("string field " + field);
  M m = valid;
  set(m, std::string(static_cast<size_t>(max), fill));
  EXPECT_TRUE(Passes(Validate(m)));
  m = valid;
  set(m, std::string(static_cast<size_t>(max + 1), fill));
  EXPECT_TRUE(Fails(Validate(m), {field + ": " + std::to_string(max + 1) + " bytes, more than " + limit}));
  m = valid;
  set(m, "");
  if (min == 0) {
    EXPECT_TRUE(Passes(Validate(m)));
  } else {
    EXPECT_TRUE(Fails(Validate(m), {field + ": empty"}));
  }
}

// A bound and how messages name it ("kMaxRanks (65536)", "nprocs (8)", "1").
struct Bound {
  Bound(int64_t v) : value(v), text(std::to_string(v)) {}  // NOLINT(google-explicit-constructor)
  Bound(int64_t v, std::string t) : value(v), text(std::move(t)) {}
  int64_t value;
  std::string text;
};

// An integer from `min` to `max` (no upper bound when unset).
template <typename M>
void ExpectRange(const M& valid, const std::string& field, const IntSetter<M>& set, const Bound& min,
                 const std::optional<Bound>& max) {
  SCOPED_TRACE("integer field " + field);
  M m = valid;
  set(m, min.value);
  EXPECT_TRUE(Passes(Validate(m)));
  m = valid;
  set(m, min.value - 1);
  EXPECT_TRUE(Fails(Validate(m), {field + ": " + std::to_string(min.value - 1) + ", less than " + min.text}));
  if (!max) return;
  m = valid;
  set(m, max->value);
  EXPECT_TRUE(Passes(Validate(m)));
  m = valid;
  set(m, max->value + 1);
  EXPECT_TRUE(Fails(Validate(m), {field + ": " + std::to_string(max->value + 1) + ", more than " + max->text}));
}

// `min` (0 or 1) to `max` entries; `resize` makes the field hold n valid entries.
template <typename M>
void ExpectCountLimits(const M& valid, const std::string& field, const IntSetter<M>& resize, int64_t min, int64_t max,
                       const std::string& limit) {
  SCOPED_TRACE("repeated field " + field);
  M m = valid;
  resize(m, max);
  EXPECT_TRUE(Passes(Validate(m)));
  m = valid;
  resize(m, max + 1);
  EXPECT_TRUE(Fails(Validate(m), {field + ": " + std::to_string(max + 1) + " entries, more than " + limit}));
  m = valid;
  resize(m, 0);
  if (min == 0) {
    EXPECT_TRUE(Passes(Validate(m)));
  } else {
    EXPECT_TRUE(Fails(Validate(m), {field + ": no entries"}));
  }
}

// --- Valid requests ---------------------------------------------------------

v1::RegisterRequest ValidRegister() {
  v1::RegisterRequest r;
  v1::HostFacts* h = r.mutable_host();
  h->set_hostname("node-01.cluster_a");
  h->add_macs("00:1b:21:bb:e6:f0");
  h->add_macs("00:1b:21:bb:e6:f1");
  h->set_nic_speed_bps(10'000'000'000);
  h->set_cores(32);
  v1::LldpNeighbor* n = h->mutable_lldp_neighbor();
  n->set_local_interface("eth0");
  n->set_chassis_id_subtype(v1::LLDP_CHASSIS_ID_SUBTYPE_MAC_ADDRESS);
  n->set_chassis_id("00:1b:21:00:00:01");
  n->set_system_name("leaf1");
  n->set_port_id_subtype(v1::LLDP_PORT_ID_SUBTYPE_INTERFACE_NAME);
  n->set_port_id("swp3");
  n->set_port_description("to node-01");
  n->set_management_address("198.18.0.1");
  r.set_agent_version("0.1.0");
  return r;
}

v1::BenchSample ValidSample() {
  v1::BenchSample s;
  s.set_collective(v1::COLLECTIVE_ALLTOALL);
  s.set_algorithm("tree_scheduled");
  s.set_label("tree_scheduled");
  s.set_nprocs(8);
  s.set_ranks_per_node(2);
  s.set_msize(1024);
  s.set_iterations(3);
  s.set_min_s(0.1);
  s.set_median_s(0.2);
  s.set_p95_s(0.3);
  s.set_max_s(0.3);
  s.set_bytes_per_call(int64_t{8} * 7 * 1024);
  s.set_bytes_per_s(8 * 7 * 1024 / 0.2);
  s.set_bound_s(0.05);
  s.set_fraction_of_bound(0.25);
  s.set_verified(true);
  s.set_fallbacks(1);
  s.add_times_s(0.1);
  s.add_times_s(0.3);
  s.add_times_s(0.2);
  return s;
}

v1::ReportSamplesRequest ValidReportSamples() {
  v1::ReportSamplesRequest r;
  r.set_task_id("task-1");
  r.set_sequence(0);
  *r.mutable_sample() = ValidSample();
  return r;
}

v1::BenchTask ValidTask() {
  v1::BenchTask t;
  t.set_task_id("task-1");
  t.set_tuning_id("tuning-1");
  t.set_collective(v1::COLLECTIVE_ALLTOALL);
  t.add_algorithms("native");
  t.add_algorithms("tree_scheduled");
  t.add_msizes(1);
  t.add_msizes(1024);
  t.add_msizes(65536);
  t.set_warmup(2);
  t.set_iterations(10);
  t.set_nprocs(4);
  t.set_ranks_per_node(2);
  for (const char* h : {"n0", "n0", "n1", "n1"}) t.add_rank_hosts(h);
  t.set_topology_version(3);
  t.set_topology_yaml("switches: [s0]\n");
  t.set_native_label("ompi:pairwise");
  t.mutable_task_timeout()->set_seconds(600);
  t.mutable_point_timeout()->set_seconds(60);
  return t;
}

v1::GetPlanRequest ValidPlan() {
  v1::GetPlanRequest r;
  r.set_job_id("1234");
  r.add_rank_hosts("n0");
  r.add_rank_hosts("n1");
  r.add_collectives(v1::COLLECTIVE_ALLTOALL);
  r.add_collectives(v1::COLLECTIVE_ALLGATHER);
  return r;
}

v1::StartTuningRequest ValidTuning() {
  v1::StartTuningRequest r;
  r.add_collectives(v1::COLLECTIVE_ALLTOALL);
  r.add_collectives(v1::COLLECTIVE_ALLTOALLV);
  r.add_node_counts(2);
  r.add_node_counts(4);
  r.add_ranks_per_node(1);
  r.add_ranks_per_node(8);
  r.add_msizes(1);
  r.add_msizes(1024);
  r.set_iterations(100);
  return r;
}

v1::ReportJobRequest ValidJob() {
  v1::ReportJobRequest r;
  r.set_job_id("1234");
  r.set_plan_id("plan-1");
  r.set_nprocs(8);
  r.set_ranks_per_node(2);
  r.mutable_started_at()->set_seconds(1'700'000'000);
  r.mutable_finished_at()->set_seconds(1'700'000'100);
  v1::CollectiveCallStats* s = r.add_stats();
  s->set_collective(v1::COLLECTIVE_ALLTOALL);
  s->set_algorithm("tree_scheduled");
  s->set_msize(4096);
  s->set_calls(100);
  s->set_total_bytes(int64_t{100} * 8 * 7 * 4096);
  s->set_total_seconds(1.5);
  s->set_fallbacks(2);
  return r;
}

// A list of n host names, every one valid.
template <typename M>
void SetHosts(M& m, int64_t n) {
  m.clear_rank_hosts();
  for (int64_t i = 0; i < n; ++i) m.add_rank_hosts("node" + std::to_string(i % 100));
}

// --- ValidateHostname and the shape of messages -----------------------------

TEST(ValidateHostname, AcceptsLettersDigitsDashUnderscoreDot) {
  EXPECT_TRUE(Passes(ValidateHostname("h", "node-01")));
  EXPECT_TRUE(Passes(ValidateHostname("h", "Node_01.cluster.example")));
  EXPECT_TRUE(Passes(ValidateHostname("h", "a")));
  EXPECT_TRUE(Passes(ValidateHostname("h", std::string(limits::kMaxHostnameBytes, 'a'))));
}

TEST(ValidateHostname, LengthIsOneToKMaxHostnameBytes) {
  EXPECT_TRUE(Fails(ValidateHostname("h", ""), {"h: empty", Lim("kMaxHostnameBytes", 253)}));
  EXPECT_TRUE(Fails(ValidateHostname("h", std::string(limits::kMaxHostnameBytes + 1, 'a')),
                    {"h: 254 bytes, more than kMaxHostnameBytes (253)"}));
}

TEST(ValidateHostname, RejectsOtherBytesAndShowsThemEscaped) {
  EXPECT_TRUE(Fails(ValidateHostname("h", "no de"), {"h: \"no de\" has \" \" at byte 2", "letters, digits"}));
  EXPECT_TRUE(Fails(ValidateHostname("h", "node/1"), {"\"/\" at byte 4"}));
  EXPECT_TRUE(Fails(ValidateHostname("h", "node:1"), {"\":\" at byte 4"}));
  EXPECT_TRUE(Fails(ValidateHostname("h", std::string("no\0de", 5)), {"\"no\\x00de\" has \"\\x00\" at byte 2"}));
  EXPECT_TRUE(Fails(ValidateHostname("h", "node\n"), {"\"node\\x0a\""}));
  EXPECT_TRUE(Fails(ValidateHostname("h", "node\x7f"), {"\"node\\x7f\""}));
  // Not UTF-8, and UTF-8 that is not ASCII: both rejected, both escaped.
  EXPECT_TRUE(Fails(ValidateHostname("h", "node\xff\xfe"), {"\"node\\xff\\xfe\" has \"\\xff\" at byte 4"}));
  EXPECT_TRUE(Fails(ValidateHostname("h",
                                     "n\xc3\xb6"
                                     "de"),
                    {"\"n\\xc3\\xb6de\""}));
  EXPECT_TRUE(Fails(ValidateHostname("h", "a\"b\\c"), {"\"a\\\"b\\\\c\""}));
}

TEST(ValidateMessages, QuotedValuesAreCutTo64Bytes) {
  v1::GetPlanRequest r = ValidPlan();
  r.set_job_id(std::string(64, 'x') + std::string(1000, 'z'));
  Status s = Validate(r);
  ASSERT_TRUE(Fails(s, {"job_id: 1064 bytes, more than kMaxIdBytes (128): \"" + std::string(64, 'x') + "\"..."}));
  EXPECT_EQ(s.message().find('z'), std::string::npos) << s.message();
  EXPECT_LT(s.message().size(), 200u);
}

TEST(ValidateMessages, ControlBytesStayOnOneLine) {
  v1::GetPlanRequest r = ValidPlan();
  r.set_rank_hosts(1, "n1\r\nERROR injected\x1b[31m");
  EXPECT_TRUE(Fails(Validate(r), {"rank_hosts[1]: \"n1\\x0d\\x0aERROR injected\\x1b[31m\" has \"\\x0d\" at byte 2"}));
}

// --- Agents -----------------------------------------------------------------

TEST(ValidateRegister, ValidPasses) {
  EXPECT_TRUE(Passes(Validate(ValidRegister())));
  v1::RegisterRequest r = ValidRegister();
  r.mutable_host()->clear_lldp_neighbor();
  r.mutable_host()->set_nic_speed_bps(0);  // Unknown.
  r.clear_agent_version();
  EXPECT_TRUE(Passes(Validate(r)));
}

TEST(ValidateRegister, HostIsRequired) {
  v1::RegisterRequest r = ValidRegister();
  r.clear_host();
  EXPECT_TRUE(Fails(Validate(r), {"host: not set"}));
}

TEST(ValidateRegister, StringLimits) {
  using R = v1::RegisterRequest;
  const R v = ValidRegister();
  const std::string lldp = Lim("kMaxLldpStringBytes", 255);
  ExpectStringLimits<R>(
      v, "host.hostname", [](R& r, const std::string& s) { r.mutable_host()->set_hostname(s); }, 1, 253,
      Lim("kMaxHostnameBytes", 253));
  ExpectStringLimits<R>(
      v, "agent_version", [](R& r, const std::string& s) { r.set_agent_version(s); }, 0, 64,
      Lim("kMaxVersionBytes", 64));
  auto n = [](R& r) { return r.mutable_host()->mutable_lldp_neighbor(); };
  ExpectStringLimits<R>(
      v, "host.lldp_neighbor.local_interface", [&](R& r, const std::string& s) { n(r)->set_local_interface(s); }, 0,
      255, lldp);
  ExpectStringLimits<R>(
      v, "host.lldp_neighbor.chassis_id",
      [&](R& r, const std::string& s) {
        n(r)->set_chassis_id_subtype(v1::LLDP_CHASSIS_ID_SUBTYPE_LOCAL);
        n(r)->set_chassis_id(s);
      },
      0, 255, lldp);
  ExpectStringLimits<R>(
      v, "host.lldp_neighbor.system_name", [&](R& r, const std::string& s) { n(r)->set_system_name(s); }, 0, 255, lldp);
  ExpectStringLimits<R>(
      v, "host.lldp_neighbor.port_id", [&](R& r, const std::string& s) { n(r)->set_port_id(s); }, 0, 255, lldp);
  ExpectStringLimits<R>(
      v, "host.lldp_neighbor.port_description", [&](R& r, const std::string& s) { n(r)->set_port_description(s); }, 0,
      255, lldp);
  ExpectStringLimits<R>(
      v, "host.lldp_neighbor.management_address", [&](R& r, const std::string& s) { n(r)->set_management_address(s); },
      0, 255, lldp);
}

TEST(ValidateRegister, HostnameCharacters) {
  v1::RegisterRequest r = ValidRegister();
  r.mutable_host()->set_hostname("node\x01");
  EXPECT_TRUE(Fails(Validate(r), {"host.hostname: \"node\\x01\" has \"\\x01\" at byte 4"}));
  r.mutable_host()->set_hostname("n\xe9ud");  // Latin-1, not UTF-8.
  EXPECT_TRUE(Fails(Validate(r), {"host.hostname: \"n\\xe9ud\""}));
}

TEST(ValidateRegister, MacCountIsOneToKMaxMacs) {
  using R = v1::RegisterRequest;
  ExpectCountLimits<R>(
      ValidRegister(), "host.macs",
      [](R& r, int64_t n) {
        r.mutable_host()->clear_macs();
        // The same MAC more than once is fine: bonded NICs share one.
        for (int64_t i = 0; i < n; ++i) r.mutable_host()->add_macs("02:00:00:00:00:01");
      },
      1, limits::kMaxMacs, Lim("kMaxMacs", 64));
}

TEST(ValidateRegister, MacFormat) {
  v1::RegisterRequest r = ValidRegister();
  r.mutable_host()->add_macs("00:11");
  EXPECT_TRUE(Fails(Validate(r), {"host.macs[2]: \"00:11\" is not a MAC address (six hex pairs joined by ':'"}));
  for (const char* bad : {"00-1b-21-bb-e6-f0", "001b.21bb.e6f0", "00:1b:21:bb:e6:f0:", "0g:1b:21:bb:e6:f0",
                          "00:1b:21:bb:e6:f", " 00:1b:21:bb:e6:f", "", "00:1b:21:bb:e6\xff\xff"}) {
    r.mutable_host()->set_macs(2, bad);
    EXPECT_TRUE(Fails(Validate(r), {"host.macs[2]: ", "is not a MAC address"})) << bad;
  }
  r.mutable_host()->set_macs(2, "00:1B:21:BB:E6:F0");
  EXPECT_TRUE(Fails(Validate(r), {"host.macs[2]: \"00:1B:21:BB:E6:F0\" has upper-case hex digits",
                                  "lower case (\"00:1b:21:bb:e6:f0\")"}));
}

TEST(ValidateRegister, MpiMacIsOneOfTheMacs) {
  v1::RegisterRequest r = ValidRegister();
  r.mutable_host()->set_mpi_mac("00:1b:21:bb:e6:f1");
  r.mutable_host()->set_mpi_interface("ens1f1");
  EXPECT_TRUE(Passes(Validate(r)));
  r.mutable_host()->clear_mpi_mac();  // Unknown.
  EXPECT_TRUE(Passes(Validate(r)));

  r.mutable_host()->set_mpi_mac("02:00:00:00:00:99");
  EXPECT_TRUE(Fails(Validate(r), {"host.mpi_mac: \"02:00:00:00:00:99\" is not one of host.macs",
                                  "the MAC of one of the host's NICs"}));
  r.mutable_host()->set_mpi_mac("00:1b:21:bb:e6");
  EXPECT_TRUE(Fails(Validate(r), {"host.mpi_mac: \"00:1b:21:bb:e6\" is not a MAC address"}));
  r.mutable_host()->set_mpi_mac("00:1B:21:BB:E6:F1");  // Upper case: not the form of macs.
  EXPECT_TRUE(Fails(Validate(r), {"host.mpi_mac: \"00:1B:21:BB:E6:F1\" has upper-case hex digits"}));

  using R = v1::RegisterRequest;
  ExpectStringLimits<R>(
      ValidRegister(), "host.mpi_interface", [](R& m, const std::string& s) { m.mutable_host()->set_mpi_interface(s); },
      0, 255, Lim("kMaxLldpStringBytes", 255));
}

TEST(ValidateRegister, NumbersAndEnums) {
  using R = v1::RegisterRequest;
  const R v = ValidRegister();
  ExpectRange<R>(
      v, "host.cores", [](R& r, int64_t x) { r.mutable_host()->set_cores(static_cast<int32_t>(x)); }, 1,
      Bound(limits::kMaxCores, Lim("kMaxCores", 65536)));
  ExpectRange<R>(
      v, "host.nic_speed_bps", [](R& r, int64_t x) { r.mutable_host()->set_nic_speed_bps(x); }, 0, std::nullopt);

  R r = v;
  r.mutable_host()->mutable_lldp_neighbor()->set_chassis_id_subtype(static_cast<v1::LldpChassisIdSubtype>(99));
  EXPECT_TRUE(Fails(Validate(r), {"host.lldp_neighbor.chassis_id_subtype: 99 is not a value of LldpChassisIdSubtype",
                                  "LLDP_CHASSIS_ID_SUBTYPE_LOCAL (7)"}));
  r = v;
  r.mutable_host()->mutable_lldp_neighbor()->set_port_id_subtype(static_cast<v1::LldpPortIdSubtype>(-1));
  EXPECT_TRUE(Fails(Validate(r), {"host.lldp_neighbor.port_id_subtype: -1 is not a value of LldpPortIdSubtype"}));
  r = v;
  r.mutable_host()->mutable_lldp_neighbor()->set_chassis_id_subtype(v1::LLDP_CHASSIS_ID_SUBTYPE_UNSPECIFIED);
  EXPECT_TRUE(Passes(Validate(r)));  // Not reported.
}

TEST(ValidateRegister, LldpMacsWhenTheSubtypeSaysMac) {
  v1::RegisterRequest r = ValidRegister();
  auto* n = r.mutable_host()->mutable_lldp_neighbor();
  n->set_chassis_id("leaf1");
  EXPECT_TRUE(Fails(Validate(r), {"host.lldp_neighbor.chassis_id: \"leaf1\" is not a MAC address"}));
  n->set_chassis_id_subtype(v1::LLDP_CHASSIS_ID_SUBTYPE_LOCAL);
  EXPECT_TRUE(Passes(Validate(r)));
  n->set_port_id_subtype(v1::LLDP_PORT_ID_SUBTYPE_MAC_ADDRESS);
  EXPECT_TRUE(Fails(Validate(r), {"host.lldp_neighbor.port_id: \"swp3\" is not a MAC address"}));
  n->set_port_id("00:1b:21:00:00:02");
  EXPECT_TRUE(Passes(Validate(r)));
}

TEST(ValidateHeartbeat, ValidPasses) {
  v1::HeartbeatRequest r;
  r.set_agent_id("agent-1");
  r.set_state(v1::AGENT_STATE_IDLE);
  EXPECT_TRUE(Passes(Validate(r)));
  r.set_state(v1::AGENT_STATE_BENCHMARKING);
  r.set_task_id("task-1");
  EXPECT_TRUE(Passes(Validate(r)));
  r.set_task_id("");
  r.set_state(v1::AGENT_STATE_UNSPECIFIED);  // "Not reported".
  EXPECT_TRUE(Passes(Validate(r)));
}

TEST(ValidateHeartbeat, Limits) {
  using R = v1::HeartbeatRequest;
  R v;
  v.set_agent_id("agent-1");
  v.set_state(v1::AGENT_STATE_BENCHMARKING);
  v.set_task_id("task-1");
  const std::string id = Lim("kMaxIdBytes", 128);
  ExpectStringLimits<R>(
      v, "agent_id", [](R& r, const std::string& s) { r.set_agent_id(s); }, 1, 253, Lim("kMaxHostnameBytes", 253));
  // Within the limit it may be empty, but not while benchmarking.
  ExpectStringLimits<R>(
      v, "task_id", [](R& r, const std::string& s) { r.set_task_id(s); }, 1, 128, id);

  R r = v;
  r.set_state(static_cast<v1::AgentState>(7));
  EXPECT_TRUE(Fails(Validate(r), {"state: 7 is not a value of AgentState", "AGENT_STATE_DRAINING (3)"}));
  r = v;
  r.set_state(v1::AGENT_STATE_IDLE);
  EXPECT_TRUE(Fails(Validate(r), {"task_id: \"task-1\" is set while state is AGENT_STATE_IDLE"}));
  r.clear_task_id();
  EXPECT_TRUE(Passes(Validate(r)));
}

TEST(ValidateFetchBenchTask, Limits) {
  using R = v1::FetchBenchTaskRequest;
  R v;
  v.set_task_id("task-1");
  v.set_hostname("n0");
  EXPECT_TRUE(Passes(Validate(v)));
  ExpectStringLimits<R>(
      v, "task_id", [](R& r, const std::string& s) { r.set_task_id(s); }, 1, 128, Lim("kMaxIdBytes", 128));
  ExpectStringLimits<R>(
      v, "hostname", [](R& r, const std::string& s) { r.set_hostname(s); }, 0, 253, Lim("kMaxHostnameBytes", 253));
  R r = v;
  r.set_hostname("n0\t");
  EXPECT_TRUE(Fails(Validate(r), {"hostname: \"n0\\x09\" has \"\\x09\" at byte 2"}));
}

TEST(ValidateReportSamples, ValidPasses) {
  EXPECT_TRUE(Passes(Validate(ValidReportSamples())));
  v1::ReportSamplesRequest r = ValidReportSamples();
  auto* s = r.mutable_sample();
  s->clear_times_s();
  s->clear_bytes_per_s();
  s->clear_bound_s();
  s->clear_fraction_of_bound();
  s->clear_label();
  EXPECT_TRUE(Passes(Validate(r)));
  s->set_collective(v1::COLLECTIVE_ALLTOALLV);
  s->set_pattern(v1::ALLTOALLV_PATTERN_SKEWED);
  EXPECT_TRUE(Passes(Validate(r)));
  // Times of zero (a timer's resolution) are times.
  s->set_min_s(0);
  s->set_median_s(0);
  EXPECT_TRUE(Passes(Validate(r)));
}

// An algorithm dropped before its first timed call reports no calls, with
// its reason; without a reason a sample needs a call. The reason has a limit.
TEST(ValidateReportSamples, DroppedSamples) {
  v1::ReportSamplesRequest r = ValidReportSamples();
  auto* s = r.mutable_sample();
  s->clear_times_s();
  s->set_iterations(0);
  s->set_min_s(0);
  s->set_median_s(0);
  s->set_p95_s(0);
  s->set_max_s(0);
  s->set_mean_s(0);
  s->clear_bytes_per_s();
  s->clear_fraction_of_bound();
  s->clear_bound_s();
  s->set_fallbacks(0);
  s->set_size_seconds(12.5);
  EXPECT_TRUE(Fails(Validate(r), {"sample.iterations: 0, less than 1"}));
  s->set_dropped("its fastest warm-up call took 9 s, 4.1x native's 2.2 s (over 3.0x)");
  EXPECT_TRUE(Passes(Validate(r)));
  using R = v1::ReportSamplesRequest;
  ExpectStringLimits<R>(
      ValidReportSamples(), "sample.dropped", [](R& m, const std::string& v) { m.mutable_sample()->set_dropped(v); }, 0,
      512, Lim("kMaxDroppedBytes", 512));
  s->set_size_seconds(-1);
  EXPECT_TRUE(Fails(Validate(r), {"sample.size_seconds: -1 is negative"}));
}

TEST(ValidateReportSamples, RequestLimits) {
  using R = v1::ReportSamplesRequest;
  const R v = ValidReportSamples();
  ExpectStringLimits<R>(
      v, "task_id", [](R& r, const std::string& s) { r.set_task_id(s); }, 1, 128, Lim("kMaxIdBytes", 128));
  ExpectRange<R>(
      v, "sequence", [](R& r, int64_t x) { r.set_sequence(x); }, 0, std::nullopt);
  R r = v;
  r.clear_sample();
  EXPECT_TRUE(Fails(Validate(r), {"sample: not set"}));
}

TEST(ValidateReportSamples, SampleStringsAndNumbers) {
  using R = v1::ReportSamplesRequest;
  const R v = ValidReportSamples();
  ExpectStringLimits<R>(
      v, "sample.algorithm", [](R& r, const std::string& s) { r.mutable_sample()->set_algorithm(s); }, 1, 64,
      Lim("kMaxAlgorithmNameBytes", 64));
  ExpectStringLimits<R>(
      v, "sample.label", [](R& r, const std::string& s) { r.mutable_sample()->set_label(s); }, 0, 128,
      Lim("kMaxLabelBytes", 128));
  ExpectRange<R>(
      v, "sample.nprocs",
      [](R& r, int64_t x) {
        r.mutable_sample()->set_nprocs(static_cast<int32_t>(x));
        r.mutable_sample()->set_ranks_per_node(1);
      },
      1, Bound(limits::kMaxRanks, Lim("kMaxRanks", 65536)));
  ExpectRange<R>(
      v, "sample.ranks_per_node",
      [](R& r, int64_t x) { r.mutable_sample()->set_ranks_per_node(static_cast<int32_t>(x)); }, 1,
      Bound(8, "nprocs (8)"));
  ExpectRange<R>(
      v, "sample.msize", [](R& r, int64_t x) { r.mutable_sample()->set_msize(x); }, 1,
      Bound(limits::kMaxMsizeBytes, Lim("kMaxMsizeBytes", int64_t{1} << 30)));
  ExpectRange<R>(
      v, "sample.iterations",
      [](R& r, int64_t x) {
        r.mutable_sample()->set_iterations(static_cast<int32_t>(x));
        r.mutable_sample()->clear_times_s();
        r.mutable_sample()->set_fallbacks(0);
      },
      1, std::nullopt);
  ExpectRange<R>(
      v, "sample.bytes_per_call", [](R& r, int64_t x) { r.mutable_sample()->set_bytes_per_call(x); }, 0, std::nullopt);
  ExpectRange<R>(
      v, "sample.verify_errors", [](R& r, int64_t x) { r.mutable_sample()->set_verify_errors(x); }, 0, std::nullopt);
  ExpectRange<R>(
      v, "sample.fallbacks", [](R& r, int64_t x) { r.mutable_sample()->set_fallbacks(x); }, 0,
      Bound(3, "iterations (3)"));
}

TEST(ValidateReportSamples, SampleEnums) {
  v1::ReportSamplesRequest r = ValidReportSamples();
  auto* s = r.mutable_sample();
  s->set_collective(v1::COLLECTIVE_UNSPECIFIED);
  EXPECT_TRUE(Fails(Validate(r), {"sample.collective: COLLECTIVE_UNSPECIFIED is not allowed",
                                  "COLLECTIVE_ALLTOALL (1), COLLECTIVE_ALLTOALLV (2), COLLECTIVE_ALLGATHER (3)"}));
  s->set_collective(static_cast<v1::Collective>(42));
  EXPECT_TRUE(Fails(Validate(r), {"sample.collective: 42 is not a value of Collective"}));
  s->set_collective(v1::COLLECTIVE_ALLTOALL);
  s->set_pattern(static_cast<v1::AlltoallvPattern>(5));
  EXPECT_TRUE(Fails(Validate(r), {"sample.pattern: 5 is not a value of AlltoallvPattern"}));
  s->set_pattern(v1::ALLTOALLV_PATTERN_UNIFORM);
  EXPECT_TRUE(Fails(Validate(r), {"sample.pattern: ALLTOALLV_PATTERN_UNIFORM is set for COLLECTIVE_ALLTOALL"}));
}

TEST(ValidateReportSamples, TimesAreFiniteAndNotNegative) {
  using S = v1::BenchSample;
  struct TimeField {
    const char* name;
    std::function<void(S&, double)> set;
  };
  const std::vector<TimeField> fields = {
      {"sample.min_s", [](S& s, double t) { s.set_min_s(t); }},
      {"sample.median_s", [](S& s, double t) { s.set_median_s(t); }},
      {"sample.p95_s", [](S& s, double t) { s.set_p95_s(t); }},
      {"sample.max_s", [](S& s, double t) { s.set_max_s(t); }},
      {"sample.bytes_per_s", [](S& s, double t) { s.set_bytes_per_s(t); }},
      {"sample.bound_s", [](S& s, double t) { s.set_bound_s(t); }},
      {"sample.fraction_of_bound", [](S& s, double t) { s.set_fraction_of_bound(t); }},
      {"sample.times_s[1]", [](S& s, double t) { s.set_times_s(1, t); }},
  };
  for (const TimeField& f : fields) {
    SCOPED_TRACE(f.name);
    for (const auto& [t, why] : std::initializer_list<std::pair<double, std::string>>{
             {kNaN, "nan is not a finite number"},
             {kInf, "inf is not a finite number"},
             {-kInf, "-inf is not a finite number"},
             {-0.5, "-0.5 is negative"},
             {-std::numeric_limits<double>::denorm_min(), "is negative"}}) {
      v1::ReportSamplesRequest r = ValidReportSamples();
      f.set(*r.mutable_sample(), t);
      EXPECT_TRUE(Fails(Validate(r), {std::string(f.name) + ": ", why}));
    }
  }
}

TEST(ValidateReportSamples, SummaryIsOrderedAndOptionalsAreConsistent) {
  v1::ReportSamplesRequest r = ValidReportSamples();
  r.mutable_sample()->set_min_s(0.25);
  EXPECT_TRUE(Fails(Validate(r), {"sample.median_s: 0.2 is less than sample.min_s (0.25)"}));
  r = ValidReportSamples();
  r.mutable_sample()->set_max_s(0.29);
  EXPECT_TRUE(Fails(Validate(r), {"sample.max_s: 0.29 is less than sample.p95_s (0.3)"}));
  r = ValidReportSamples();
  r.mutable_sample()->set_min_s(0);
  r.mutable_sample()->set_median_s(0);
  EXPECT_TRUE(Fails(Validate(r), {"sample.bytes_per_s: set while median_s is 0"}));
  r = ValidReportSamples();
  r.mutable_sample()->clear_bound_s();
  EXPECT_TRUE(Fails(Validate(r), {"sample.fraction_of_bound: set without bound_s"}));
}

TEST(ValidateReportSamples, TimesCountIsAtMostKMaxTimesPerSampleAndMatchesIterations) {
  using R = v1::ReportSamplesRequest;
  ExpectCountLimits<R>(
      ValidReportSamples(), "sample.times_s",
      [](R& r, int64_t n) {
        auto* s = r.mutable_sample();
        s->set_iterations(static_cast<int32_t>(std::max<int64_t>(n, 1)));
        s->clear_times_s();
        for (int64_t i = 0; i < n; ++i) s->add_times_s(i % 2 == 0 ? 0.1 : 0.3);
      },
      0, limits::kMaxTimesPerSample, Lim("kMaxTimesPerSample", 100000));
  R r = ValidReportSamples();
  r.mutable_sample()->add_times_s(0.2);
  EXPECT_TRUE(Fails(Validate(r), {"sample.times_s: 4 entries, but iterations is 3"}));
}

TEST(ValidateBenchTask, ValidPasses) {
  EXPECT_TRUE(Passes(Validate(ValidTask())));
  v1::BenchTask t = ValidTask();
  t.clear_algorithms();  // Every kernel.
  t.clear_tuning_id();
  t.clear_native_label();
  t.clear_task_timeout();
  t.clear_point_timeout();
  t.mutable_time_budget()->set_nanos(500'000'000);
  t.set_iterations(0);  // Measured against the budget.
  t.set_collective(v1::COLLECTIVE_ALLTOALLV);
  t.set_pattern(v1::ALLTOALLV_PATTERN_RANDOM);
  EXPECT_TRUE(Passes(Validate(t)));
}

TEST(ValidateBenchTask, AdaptiveSamplingFields) {
  v1::BenchTask t = ValidTask();
  t.set_interleave(true);
  t.mutable_size_budget()->set_seconds(30);
  t.set_max_rounds(2000);
  t.set_margin(0.01);
  t.set_alpha(0.05);
  t.set_aa_control(true);
  t.set_order_seed(12);
  EXPECT_TRUE(Passes(Validate(t)));
  v1::BenchTask bad = t;
  bad.set_margin(0.7);
  EXPECT_TRUE(Fails(Validate(bad), {"margin: 0.7; it must be a number from 0 to 0.5"}));
  bad = t;
  bad.set_alpha(-0.1);
  EXPECT_TRUE(Fails(Validate(bad), {"alpha: -0.1; it must be a number from 0 to 0.5"}));
  bad = t;
  bad.set_max_rounds(-1);
  EXPECT_TRUE(Fails(Validate(bad), {"max_rounds: -1, less than 0"}));
  bad = t;
  bad.mutable_size_budget()->set_seconds(-3);
  EXPECT_TRUE(Fails(Validate(bad), {"size_budget"}));
  t.set_race(true);
  t.mutable_candidate_timeout()->set_seconds(60);
  t.set_slow_warmup_factor(3);
  EXPECT_TRUE(Passes(Validate(t)));
  bad = t;
  bad.set_slow_warmup_factor(0.5);
  EXPECT_TRUE(Fails(Validate(bad), {"slow_warmup_factor: 0.5 is not 0 or 1 to 1000"}));
  bad.set_slow_warmup_factor(0);
  EXPECT_TRUE(Passes(Validate(bad)));
  bad = t;
  bad.mutable_candidate_timeout()->set_seconds(-1);
  EXPECT_TRUE(Fails(Validate(bad), {"candidate_timeout"}));
}

TEST(ValidateBenchTask, StringLimits) {
  using T = v1::BenchTask;
  const T v = ValidTask();
  const std::string id = Lim("kMaxIdBytes", 128);
  ExpectStringLimits<T>(
      v, "task_id", [](T& t, const std::string& s) { t.set_task_id(s); }, 1, 128, id);
  ExpectStringLimits<T>(
      v, "tuning_id", [](T& t, const std::string& s) { t.set_tuning_id(s); }, 0, 128, id);
  ExpectStringLimits<T>(
      v, "algorithms[1]", [](T& t, const std::string& s) { t.set_algorithms(1, s); }, 1, 64,
      Lim("kMaxAlgorithmNameBytes", 64));
  ExpectStringLimits<T>(
      v, "native_label", [](T& t, const std::string& s) { t.set_native_label(s); }, 0, 128, Lim("kMaxLabelBytes", 128));
  ExpectStringLimits<T>(
      v, "topology_yaml", [](T& t, const std::string& s) { t.set_topology_yaml(s); }, 0, int64_t{1} << 20,
      Lim("kMaxTopologyYamlBytes", 1048576), '#');
  ExpectStringLimits<T>(
      v, "rank_hosts[3]", [](T& t, const std::string& s) { t.set_rank_hosts(3, s); }, 1, 253,
      Lim("kMaxHostnameBytes", 253));
}

TEST(ValidateBenchTask, RepeatedLimits) {
  using T = v1::BenchTask;
  const T v = ValidTask();
  ExpectCountLimits<T>(
      v, "algorithms",
      [](T& t, int64_t n) {
        t.clear_algorithms();
        for (int64_t i = 0; i < n; ++i) t.add_algorithms("ring");
      },
      0, limits::kMaxAlgorithms, Lim("kMaxAlgorithms", 64));
  ExpectCountLimits<T>(
      v, "msizes",
      [](T& t, int64_t n) {
        t.clear_msizes();
        for (int64_t i = 1; i <= n; ++i) t.add_msizes(i);
      },
      0, limits::kMaxMsizes, Lim("kMaxMsizes", 256));
  ExpectCountLimits<T>(
      v, "rank_hosts",
      [](T& t, int64_t n) {
        SetHosts(t, n);
        t.set_nprocs(static_cast<int32_t>(n));
        t.set_ranks_per_node(1);
      },
      1, limits::kMaxRanks, Lim("kMaxRanks", 65536));
}

TEST(ValidateBenchTask, NumberLimits) {
  using T = v1::BenchTask;
  const T v = ValidTask();
  // The first size from 1, the last up to kMaxMsizeBytes (so that the order holds).
  ExpectRange<T>(
      v, "msizes[0]", [](T& t, int64_t x) { t.set_msizes(0, x); }, 1, std::nullopt);
  T t = v;
  t.set_msizes(2, limits::kMaxMsizeBytes);
  EXPECT_TRUE(Passes(Validate(t)));
  t.set_msizes(2, limits::kMaxMsizeBytes + 1);
  EXPECT_TRUE(Fails(Validate(t), {"msizes[2]: 1073741825, more than kMaxMsizeBytes (1073741824)"}));
  ExpectRange<T>(
      v, "warmup", [](T& x, int64_t w) { x.set_warmup(static_cast<int32_t>(w)); }, 0, std::nullopt);
  ExpectRange<T>(
      v, "iterations", [](T& x, int64_t i) { x.set_iterations(static_cast<int32_t>(i)); }, 1,
      Bound(limits::kMaxIterations, Lim("kMaxIterations", 1000000)));
  T budget = v;
  budget.mutable_time_budget()->set_seconds(1);
  ExpectRange<T>(
      budget, "iterations", [](T& x, int64_t i) { x.set_iterations(static_cast<int32_t>(i)); }, 0,
      Bound(limits::kMaxIterations, Lim("kMaxIterations", 1000000)));
  ExpectRange<T>(
      v, "ranks_per_node", [](T& x, int64_t r) { x.set_ranks_per_node(static_cast<int32_t>(r)); }, 1,
      Bound(4, "nprocs (4)"));
  ExpectRange<T>(
      v, "topology_version", [](T& x, int64_t n) { x.set_topology_version(n); }, 0, std::nullopt);
}

TEST(ValidateBenchTask, MsizesAscendWithoutDuplicates) {
  v1::BenchTask t = ValidTask();
  t.set_msizes(2, 1024);
  EXPECT_TRUE(Fails(Validate(t), {"msizes[2]: 1024 is not more than msizes[1] (1024)", "ascending"}));
  t.set_msizes(2, 512);
  EXPECT_TRUE(Fails(Validate(t), {"msizes[2]: 512 is not more than msizes[1] (1024)"}));
}

TEST(ValidateBenchTask, NprocsIsOneToKMaxRanksAndEqualsRankHosts) {
  v1::BenchTask t = ValidTask();
  t.set_nprocs(5);
  EXPECT_TRUE(Fails(Validate(t), {"nprocs: 5, but rank_hosts has 4 entries"}));
  t.set_nprocs(0);
  EXPECT_TRUE(Fails(Validate(t), {"nprocs: 0, less than 1"}));
  SetHosts(t, limits::kMaxRanks + 1);
  t.set_nprocs(limits::kMaxRanks + 1);
  EXPECT_TRUE(Fails(Validate(t), {"rank_hosts: 65537 entries, more than kMaxRanks (65536)"}));
}

TEST(ValidateBenchTask, EnumsAndPattern) {
  v1::BenchTask t = ValidTask();
  t.set_collective(v1::COLLECTIVE_UNSPECIFIED);
  EXPECT_TRUE(Fails(Validate(t), {"collective: COLLECTIVE_UNSPECIFIED is not allowed"}));
  t.set_collective(static_cast<v1::Collective>(1000));
  EXPECT_TRUE(Fails(Validate(t), {"collective: 1000 is not a value of Collective"}));
  t = ValidTask();
  t.set_pattern(static_cast<v1::AlltoallvPattern>(-3));
  EXPECT_TRUE(Fails(Validate(t), {"pattern: -3 is not a value of AlltoallvPattern"}));
  t.set_pattern(v1::ALLTOALLV_PATTERN_SKEWED);
  EXPECT_TRUE(Fails(Validate(t),
                    {"pattern: ALLTOALLV_PATTERN_SKEWED is set for COLLECTIVE_ALLTOALL", "COLLECTIVE_ALLTOALLV only"}));
}

TEST(ValidateBenchTask, DurationsArePositiveWhenSet) {
  using T = v1::BenchTask;
  struct DurationField {
    const char* name;
    std::function<google::protobuf::Duration*(T&)> get;
  };
  const std::vector<DurationField> fields = {
      {"time_budget", [](T& t) { return t.mutable_time_budget(); }},
      {"task_timeout", [](T& t) { return t.mutable_task_timeout(); }},
      {"point_timeout", [](T& t) { return t.mutable_point_timeout(); }},
  };
  for (const DurationField& f : fields) {
    SCOPED_TRACE(f.name);
    const std::string name = f.name;
    T t = ValidTask();
    f.get(t)->set_nanos(1);
    EXPECT_TRUE(Passes(Validate(t)));
    f.get(t)->set_seconds(315'576'000'000);
    f.get(t)->set_nanos(999'999'999);
    EXPECT_TRUE(Passes(Validate(t)));
    f.get(t)->Clear();
    EXPECT_TRUE(Fails(Validate(t), {name + ": 0 when set"}));
    f.get(t)->set_seconds(-5);
    EXPECT_TRUE(Fails(Validate(t), {name + ": {seconds: -5, nanos: 0} is negative"}));
    f.get(t)->set_seconds(0);
    f.get(t)->set_nanos(-1);
    EXPECT_TRUE(Fails(Validate(t), {name + ": {seconds: 0, nanos: -1} is negative"}));
    f.get(t)->set_seconds(1);
    f.get(t)->set_nanos(-1);
    EXPECT_TRUE(Fails(Validate(t), {name + ": {seconds: 1, nanos: -1} is not a valid Duration"}));
    f.get(t)->set_seconds(0);
    f.get(t)->set_nanos(1'000'000'000);
    EXPECT_TRUE(Fails(Validate(t), {name + ": {seconds: 0, nanos: 1000000000} is not a valid Duration"}));
    f.get(t)->set_seconds(315'576'000'001);
    f.get(t)->set_nanos(0);
    EXPECT_TRUE(Fails(Validate(t), {name + ": {seconds: 315576000001, nanos: 0} is not a valid Duration"}));
  }
}

// --- Plans ------------------------------------------------------------------

TEST(ValidateGetPlan, ValidPasses) {
  EXPECT_TRUE(Passes(Validate(ValidPlan())));
  v1::GetPlanRequest r = ValidPlan();
  r.clear_job_id();
  r.set_tables_only(true);
  EXPECT_TRUE(Passes(Validate(r)));
}

TEST(ValidateGetPlan, Limits) {
  using R = v1::GetPlanRequest;
  const R v = ValidPlan();
  ExpectStringLimits<R>(
      v, "job_id", [](R& r, const std::string& s) { r.set_job_id(s); }, 0, 128, Lim("kMaxIdBytes", 128));
  ExpectStringLimits<R>(
      v, "rank_hosts[1]", [](R& r, const std::string& s) { r.set_rank_hosts(1, s); }, 1, 253,
      Lim("kMaxHostnameBytes", 253));
  ExpectCountLimits<R>(v, "rank_hosts", SetHosts<R>, 1, limits::kMaxRanks, Lim("kMaxRanks", 65536));
}

TEST(ValidateGetPlan, RankHostsAreHostNames) {
  v1::GetPlanRequest r = ValidPlan();
  r.set_rank_hosts(1, "n1\xc0\xaf");  // Overlong UTF-8 for '/'.
  EXPECT_TRUE(Fails(Validate(r), {"rank_hosts[1]: \"n1\\xc0\\xaf\" has \"\\xc0\" at byte 2"}));
}

TEST(ValidateGetPlan, CollectivesAreOneToKMaxCollectivesSetKnownAndUnique) {
  v1::GetPlanRequest r = ValidPlan();
  r.clear_collectives();
  EXPECT_TRUE(Fails(Validate(r), {"collectives: no entries", Lim("kMaxCollectives", 64)}));
  r = ValidPlan();
  r.add_collectives(v1::COLLECTIVE_UNSPECIFIED);
  EXPECT_TRUE(Fails(Validate(r), {"collectives[2]: COLLECTIVE_UNSPECIFIED is not allowed"}));
  r.set_collectives(2, static_cast<v1::Collective>(9));
  EXPECT_TRUE(Fails(Validate(r), {"collectives[2]: 9 is not a value of Collective"}));
  r.set_collectives(2, v1::COLLECTIVE_ALLTOALLV);
  EXPECT_TRUE(Passes(Validate(r)));
  r.add_collectives(v1::COLLECTIVE_ALLGATHER);
  EXPECT_TRUE(Fails(Validate(r), {"collectives[3]: COLLECTIVE_ALLGATHER appears twice (also collectives[1])"}));
  // With three collectives, no duplicates caps a request at 3 entries; over
  // kMaxCollectives, the count is what the message names.
  r.clear_collectives();
  for (int i = 0; i < limits::kMaxCollectives + 1; ++i) r.add_collectives(v1::COLLECTIVE_ALLTOALL);
  EXPECT_TRUE(Fails(Validate(r), {"collectives: 65 entries, more than kMaxCollectives (64)"}));
  r.mutable_collectives()->RemoveLast();
  EXPECT_TRUE(Fails(Validate(r), {"collectives[1]: COLLECTIVE_ALLTOALL appears twice (also collectives[0])"}));
}

// --- Admin ------------------------------------------------------------------

TEST(ValidateGetTopology, VersionIsNotNegative) {
  using R = v1::GetTopologyRequest;
  EXPECT_TRUE(Passes(Validate(R())));
  ExpectRange<R>(
      R(), "version", [](R& r, int64_t x) { r.set_version(x); }, 0, std::nullopt);
  R r;
  r.set_version(std::numeric_limits<int64_t>::min());
  EXPECT_TRUE(Fails(Validate(r), {"version: -9223372036854775808, less than 0"}));
}

TEST(ValidateDiscover, Limits) {
  using R = v1::DiscoverRequest;
  R v;
  v.add_seeds("198.18.0.1");
  v.add_seeds("[fe80::1%eth0]:161");
  v.add_seeds("spine-1.example");
  EXPECT_TRUE(Passes(Validate(v)));
  ExpectCountLimits<R>(
      v, "seeds",
      [](R& r, int64_t n) {
        r.clear_seeds();
        for (int64_t i = 0; i < n; ++i) r.add_seeds("198.18.0.1");
      },
      0, limits::kMaxSeeds, Lim("kMaxSeeds", 256));
  ExpectStringLimits<R>(
      v, "seeds[2]", [](R& r, const std::string& s) { r.set_seeds(2, s); }, 1, 253, Lim("kMaxHostnameBytes", 253));
}

TEST(ValidateStartTuning, ValidPasses) { EXPECT_TRUE(Passes(Validate(ValidTuning()))); }

TEST(ValidateStartTuning, RepeatedLimits) {
  using R = v1::StartTuningRequest;
  const R v = ValidTuning();
  const std::string layout = Lim("kMaxLayoutValues", 64);
  ExpectCountLimits<R>(
      v, "collectives",
      [](R& r, int64_t n) {
        r.clear_collectives();
        for (int64_t i = 0; i < n; ++i) r.add_collectives(v1::COLLECTIVE_ALLGATHER);
      },
      1, limits::kMaxCollectives, Lim("kMaxCollectives", 64));
  ExpectCountLimits<R>(
      v, "node_counts",
      [](R& r, int64_t n) {
        r.clear_node_counts();
        for (int64_t i = 0; i < n; ++i) r.add_node_counts(static_cast<int32_t>(i + 1));
      },
      1, limits::kMaxLayoutValues, layout);
  ExpectCountLimits<R>(
      v, "ranks_per_node",
      [](R& r, int64_t n) {
        r.clear_ranks_per_node();
        for (int64_t i = 0; i < n; ++i) r.add_ranks_per_node(static_cast<int32_t>(i + 1));
      },
      1, limits::kMaxLayoutValues, layout);
  ExpectCountLimits<R>(
      v, "msizes",
      [](R& r, int64_t n) {
        r.clear_msizes();
        for (int64_t i = 0; i < n; ++i) r.add_msizes(i + 1);
      },
      0, limits::kMaxMsizes, Lim("kMaxMsizes", 256));
}

TEST(ValidateStartTuning, Numbers) {
  using R = v1::StartTuningRequest;
  const R v = ValidTuning();
  const Bound ranks(limits::kMaxRanks, Lim("kMaxRanks", 65536));
  ExpectRange<R>(
      v, "node_counts[1]",
      [](R& r, int64_t x) {
        r.set_node_counts(1, static_cast<int32_t>(x));
        r.clear_ranks_per_node();
        r.add_ranks_per_node(1);
      },
      1, ranks);
  ExpectRange<R>(
      v, "ranks_per_node[0]",
      [](R& r, int64_t x) {
        r.set_ranks_per_node(0, static_cast<int32_t>(x));
        r.set_ranks_per_node(1, 1);
        r.clear_node_counts();
        r.add_node_counts(1);
      },
      1, ranks);
  ExpectRange<R>(
      v, "msizes[1]", [](R& r, int64_t x) { r.set_msizes(1, x); }, 1,
      Bound(limits::kMaxMsizeBytes, Lim("kMaxMsizeBytes", int64_t{1} << 30)));
  ExpectRange<R>(
      v, "iterations", [](R& r, int64_t x) { r.set_iterations(static_cast<int32_t>(x)); }, 0,
      Bound(limits::kMaxIterations, Lim("kMaxIterations", 1000000)));
  R r = v;
  r.set_collectives(1, static_cast<v1::Collective>(77));
  EXPECT_TRUE(Fails(Validate(r), {"collectives[1]: 77 is not a value of Collective"}));
  r.set_collectives(1, v1::COLLECTIVE_ALLTOALL);  // Twice is allowed here.
  EXPECT_TRUE(Passes(Validate(r)));
}

TEST(ValidateStartTuning, AlltoallvPatternsArePatternClasses) {
  v1::StartTuningRequest r = ValidTuning();
  r.add_alltoallv_patterns(v1::ALLTOALLV_PATTERN_SKEWED);
  r.add_alltoallv_patterns(v1::ALLTOALLV_PATTERN_SPARSE);
  EXPECT_TRUE(Passes(Validate(r)));
  r.add_alltoallv_patterns(v1::ALLTOALLV_PATTERN_RANDOM);
  EXPECT_TRUE(Fails(Validate(r), {"alltoallv_patterns[2]: ALLTOALLV_PATTERN_RANDOM is not a pattern class"}));
  r.set_alltoallv_patterns(2, v1::ALLTOALLV_PATTERN_UNSPECIFIED);
  EXPECT_TRUE(Fails(Validate(r), {"alltoallv_patterns[2]: ALLTOALLV_PATTERN_UNSPECIFIED is not allowed here"}));
  r.set_alltoallv_patterns(2, v1::ALLTOALLV_PATTERN_UNIFORM);
  r.add_alltoallv_patterns(v1::ALLTOALLV_PATTERN_UNIFORM);
  EXPECT_TRUE(Fails(Validate(r), {"alltoallv_patterns: 4 entries, more than 3"}));
}

TEST(ValidateStartTuning, FromDemand) {
  v1::StartTuningRequest r;
  EXPECT_TRUE(Fails(Validate(r), {"collectives: "}));  // A plain sweep needs its lists.
  r.set_from_demand(true);
  EXPECT_TRUE(Passes(Validate(r)));  // From demand they only filter.
  r.mutable_budget()->set_seconds(7200);
  r.mutable_demand_window()->set_seconds(30 * 86400);
  r.add_ranks_per_node(2);
  EXPECT_TRUE(Passes(Validate(r)));
  r.add_msizes(1024);
  EXPECT_TRUE(Fails(Validate(r), {"msizes: set with from_demand"}));
  r.clear_msizes();
  r.mutable_budget()->set_seconds(0);
  EXPECT_TRUE(Fails(Validate(r), {"budget: 0 when set"}));
  r.mutable_budget()->set_seconds(400 * 86400);
  EXPECT_TRUE(Fails(Validate(r), {"budget: ", "longer than 366 days"}));
  v1::StartTuningRequest plain = ValidTuning();
  plain.mutable_budget()->set_seconds(60);
  EXPECT_TRUE(Fails(Validate(plain), {"from_demand: false, but demand_window or budget is set"}));
}

TEST(ValidateStartTuning, LargestLayoutIsAtMostKMaxRanks) {
  v1::StartTuningRequest r = ValidTuning();
  r.set_node_counts(1, 256);
  r.set_ranks_per_node(1, 256);
  EXPECT_TRUE(Passes(Validate(r)));  // 256 x 256 = 65536.
  r.set_node_counts(1, 257);
  EXPECT_TRUE(Fails(Validate(r), {"node_counts[1] x ranks_per_node[1]: 257 x 256 = 65792 ranks, more than "
                                  "kMaxRanks (65536)"}));
  // No overflow with the largest int32 values.
  r.set_node_counts(1, std::numeric_limits<int32_t>::max());
  r.set_ranks_per_node(1, std::numeric_limits<int32_t>::max());
  EXPECT_TRUE(Fails(Validate(r), {"node_counts[1]: 2147483647, more than kMaxRanks (65536)"}));
}

TEST(ValidateTuningStatus, Limits) {
  using R = v1::TuningStatusRequest;
  R v;
  v.set_tuning_id("tuning-1");
  EXPECT_TRUE(Passes(Validate(v)));
  ExpectStringLimits<R>(
      v, "tuning_id", [](R& r, const std::string& s) { r.set_tuning_id(s); }, 1, 128, Lim("kMaxIdBytes", 128));
}

TEST(ValidateListDecisions, Limits) {
  using R = v1::ListDecisionsRequest;
  const R v;  // Every filter at zero: everything.
  EXPECT_TRUE(Passes(Validate(v)));
  const Bound ranks(limits::kMaxRanks, Lim("kMaxRanks", 65536));
  ExpectRange<R>(
      v, "page_size", [](R& r, int64_t x) { r.set_page_size(static_cast<int32_t>(x)); }, 0,
      Bound(limits::kMaxPageSize, Lim("kMaxPageSize", 1000)));
  ExpectRange<R>(
      v, "nprocs", [](R& r, int64_t x) { r.set_nprocs(static_cast<int32_t>(x)); }, 0, ranks);
  ExpectRange<R>(
      v, "ranks_per_node", [](R& r, int64_t x) { r.set_ranks_per_node(static_cast<int32_t>(x)); }, 0, ranks);
  ExpectRange<R>(
      v, "topology_version", [](R& r, int64_t x) { r.set_topology_version(x); }, 0, std::nullopt);
  ExpectStringLimits<R>(
      v, "page_token", [](R& r, const std::string& s) { r.set_page_token(s); }, 0, 128, Lim("kMaxIdBytes", 128));
  R r;
  r.set_collective(v1::COLLECTIVE_ALLGATHER);
  EXPECT_TRUE(Passes(Validate(r)));
  r.set_collective(static_cast<v1::Collective>(4));
  EXPECT_TRUE(Fails(Validate(r), {"collective: 4 is not a value of Collective",
                                  "COLLECTIVE_UNSPECIFIED (0), COLLECTIVE_ALLTOALL (1)"}));
}

TEST(ValidateExportRules, Limits) {
  using R = v1::ExportRulesRequest;
  R v;
  v.set_format(v1::RULES_FORMAT_JSON_V3);
  EXPECT_TRUE(Passes(Validate(v)));
  ExpectCountLimits<R>(
      v, "collectives",
      [](R& r, int64_t n) {
        r.clear_collectives();
        for (int64_t i = 0; i < n; ++i) r.add_collectives(v1::COLLECTIVE_ALLTOALL);
      },
      0, limits::kMaxCollectives, Lim("kMaxCollectives", 64));
  ExpectRange<R>(
      v, "topology_version", [](R& r, int64_t x) { r.set_topology_version(x); }, 0, std::nullopt);
  ExpectRange<R>(
      v, "ranks_per_node", [](R& r, int64_t x) { r.set_ranks_per_node(static_cast<int32_t>(x)); }, 0,
      Bound(limits::kMaxRanks, Lim("kMaxRanks", 65536)));
  R r = v;
  r.set_format(v1::RULES_FORMAT_UNSPECIFIED);
  EXPECT_TRUE(Fails(Validate(r), {"format: RULES_FORMAT_UNSPECIFIED is not allowed", "RULES_FORMAT_CLASSIC_V1 (1)"}));
  r.set_format(static_cast<v1::RulesFormat>(5));
  EXPECT_TRUE(Fails(Validate(r), {"format: 5 is not a value of RulesFormat", "RULES_FORMAT_MPICH_CSEL (4)"}));
  r = v;
  r.add_collectives(v1::COLLECTIVE_ALLGATHER);
  r.add_collectives(v1::COLLECTIVE_UNSPECIFIED);
  EXPECT_TRUE(Fails(Validate(r), {"collectives[1]: COLLECTIVE_UNSPECIFIED is not allowed"}));
  // The Open MPI formats take no MPICH base.
  r = v;
  r.set_mpich_base("{}");
  EXPECT_TRUE(Fails(Validate(r), {"mpich_base: is set, but only RULES_FORMAT_MPICH_CSEL reads it"}));
}

TEST(ValidateExportRules, MpichCselNeedsABase) {
  v1::ExportRulesRequest v;
  v.set_format(v1::RULES_FORMAT_MPICH_CSEL);
  const std::string base = R"({"collective=bcast":{"algorithm=MPIR_Bcast_intra_binomial":{}}})";
  v.set_mpich_base(base);
  EXPECT_TRUE(Passes(Validate(v)));
  // Up to kMaxMpichBaseBytes (here padded with blanks).
  v1::ExportRulesRequest r = v;
  r.set_mpich_base(base + std::string(limits::kMaxMpichBaseBytes - base.size(), ' '));
  EXPECT_TRUE(Passes(Validate(r)));
  r.set_mpich_base(base + std::string(limits::kMaxMpichBaseBytes - base.size() + 1, ' '));
  EXPECT_TRUE(Fails(Validate(r), {"mpich_base: 1048577 bytes, more than " + Lim("kMaxMpichBaseBytes", 1048576)}));
  r.clear_mpich_base();
  EXPECT_TRUE(
      Fails(Validate(r), {"mpich_base: empty; RULES_FORMAT_MPICH_CSEL starts from MPICH's own selection JSON"}));
  // What tuner/mpich_csel.h CheckMpichBase rejects, in one printable line.
  r.set_mpich_base(R"({"collective=bcast":{"algorithm=\u0001x":1}})");
  EXPECT_TRUE(Fails(Validate(r), {"mpich_base: the MPICH base: the value of \"algorithm=\\x01x\" in "
                                  "\"collective=bcast\" is not an object"}));
  r.set_mpich_base("{\"collective=bcast\":\n\xff\xfe");
  EXPECT_TRUE(Fails(Validate(r), {"mpich_base: the MPICH base is not JSON: "}));
  r.set_mpich_base(R"({"collective=bcast":{"composition=MPIDI_Bcast_intra_composition_alpha":{}}})");
  EXPECT_TRUE(Fails(Validate(r), {"mpich_base: the MPICH base names no MPIR_ algorithm"}));
}

TEST(ValidateReportJob, ValidPasses) {
  EXPECT_TRUE(Passes(Validate(ValidJob())));
  v1::ReportJobRequest r = ValidJob();
  r.clear_plan_id();
  r.clear_started_at();
  r.clear_stats();
  EXPECT_TRUE(Passes(Validate(r)));
}

TEST(ValidateReportJob, Limits) {
  using R = v1::ReportJobRequest;
  const R v = ValidJob();
  const std::string id = Lim("kMaxIdBytes", 128);
  ExpectStringLimits<R>(
      v, "job_id", [](R& r, const std::string& s) { r.set_job_id(s); }, 0, 128, id);
  ExpectStringLimits<R>(
      v, "plan_id", [](R& r, const std::string& s) { r.set_plan_id(s); }, 0, 128, id);
  ExpectStringLimits<R>(
      v, "stats[0].algorithm", [](R& r, const std::string& s) { r.mutable_stats(0)->set_algorithm(s); }, 1, 64,
      Lim("kMaxAlgorithmNameBytes", 64));
  ExpectRange<R>(
      v, "nprocs",
      [](R& r, int64_t x) {
        r.set_nprocs(static_cast<int32_t>(x));
        r.set_ranks_per_node(1);
      },
      1, Bound(limits::kMaxRanks, Lim("kMaxRanks", 65536)));
  ExpectRange<R>(
      v, "ranks_per_node", [](R& r, int64_t x) { r.set_ranks_per_node(static_cast<int32_t>(x)); }, 1,
      Bound(8, "nprocs (8)"));
  ExpectCountLimits<R>(
      v, "stats",
      [&v](R& r, int64_t n) {
        r.clear_stats();
        for (int64_t i = 0; i < n; ++i) {
          *r.add_stats() = v.stats(0);
          r.mutable_stats(static_cast<int>(i))->set_msize(i);  // Each size once.
        }
      },
      0, limits::kMaxJobStats, Lim("kMaxJobStats", 4096));
}

TEST(ValidateReportJob, EachKindOfCallOnce) {
  v1::ReportJobRequest r = ValidJob();
  *r.add_stats() = r.stats(0);
  EXPECT_TRUE(Fails(Validate(r), {"stats[1]: COLLECTIVE_ALLTOALL \"tree_scheduled\" at msize 4096 is stats[0] again"}));
  r.mutable_stats(1)->set_msize(8192);  // Another size: another kind.
  EXPECT_TRUE(Passes(Validate(r)));
  r.mutable_stats(1)->set_algorithm("");
  EXPECT_TRUE(Fails(Validate(r), {"stats[1].algorithm: empty"}));
}

TEST(ValidateReportJob, Stats) {
  using R = v1::ReportJobRequest;
  R v = ValidJob();
  *v.add_stats() = v.stats(0);
  v.mutable_stats(1)->set_algorithm("ring");
  ExpectRange<R>(
      v, "stats[1].msize", [](R& r, int64_t x) { r.mutable_stats(1)->set_msize(x); }, 0, std::nullopt);
  ExpectRange<R>(
      v, "stats[1].total_bytes", [](R& r, int64_t x) { r.mutable_stats(1)->set_total_bytes(x); }, 0, std::nullopt);
  ExpectRange<R>(
      v, "stats[1].calls",
      [](R& r, int64_t x) {
        r.mutable_stats(1)->set_calls(x);
        r.mutable_stats(1)->set_fallbacks(0);
      },
      0, std::nullopt);
  ExpectRange<R>(
      v, "stats[1].fallbacks", [](R& r, int64_t x) { r.mutable_stats(1)->set_fallbacks(x); }, 0,
      Bound(100, "calls (100)"));
  R r = v;
  r.mutable_stats(1)->set_collective(v1::COLLECTIVE_UNSPECIFIED);
  EXPECT_TRUE(Fails(Validate(r), {"stats[1].collective: COLLECTIVE_UNSPECIFIED is not allowed"}));
  r.mutable_stats(1)->set_collective(static_cast<v1::Collective>(5));
  EXPECT_TRUE(Fails(Validate(r), {"stats[1].collective: 5 is not a value of Collective"}));
  for (const double t : {kNaN, kInf, -1.0}) {
    r = v;
    r.mutable_stats(1)->set_total_seconds(t);
    EXPECT_TRUE(Fails(Validate(r), {"stats[1].total_seconds: "})) << t;
  }
}

TEST(ValidateReportJob, CallContext) {
  using R = v1::ReportJobRequest;
  R v = ValidJob();
  v1::CollectiveCallStats& e = *v.mutable_stats(0);
  e.set_source(v1::DECISION_SOURCE_NEAREST);
  e.set_tuned_nprocs(16);
  e.set_tuned_ranks_per_node(2);
  e.set_comm_size(8);
  e.set_comm_ranks_per_node(2);
  e.set_comm_hosts(4);
  e.set_plan_id("p");
  EXPECT_TRUE(Passes(Validate(v)));
  ExpectRange<R>(
      v, "stats[0].comm_hosts", [](R& r, int64_t x) { r.mutable_stats(0)->set_comm_hosts(static_cast<int>(x)); }, 0,
      Bound(8, "comm_size (8)"));
  ExpectRange<R>(
      v, "stats[0].comm_ranks_per_node",
      [](R& r, int64_t x) { r.mutable_stats(0)->set_comm_ranks_per_node(static_cast<int>(x)); }, 0,
      Bound(8, "comm_size (8)"));
  ExpectRange<R>(
      v, "stats[0].tuned_ranks_per_node",
      [](R& r, int64_t x) { r.mutable_stats(0)->set_tuned_ranks_per_node(static_cast<int>(x)); }, 0,
      Bound(16, "tuned_nprocs (16)"));
  ExpectStringLimits<R>(
      v, "stats[0].plan_id", [](R& r, const std::string& s) { r.mutable_stats(0)->set_plan_id(s); }, 0, 128,
      Lim("kMaxIdBytes", 128));
  R r = v;
  r.mutable_stats(0)->set_source(static_cast<v1::DecisionSource>(9));
  EXPECT_TRUE(Fails(Validate(r), {"stats[0].source: 9 is not a value of DecisionSource"}));
  r = v;
  r.mutable_stats(0)->set_pattern(v1::ALLTOALLV_PATTERN_SKEWED);  // An alltoall entry.
  EXPECT_TRUE(Fails(Validate(r), {"stats[0].pattern: ALLTOALLV_PATTERN_SKEWED is set for COLLECTIVE_ALLTOALL"}));
  r.mutable_stats(0)->set_collective(v1::COLLECTIVE_ALLTOALLV);
  EXPECT_TRUE(Passes(Validate(r)));
  r.mutable_stats(0)->set_pattern(v1::ALLTOALLV_PATTERN_RANDOM);
  EXPECT_TRUE(Fails(Validate(r), {"stats[0].pattern: ALLTOALLV_PATTERN_RANDOM is not a pattern class"}));
  // The same calls on another communicator, or of another class, are another kind.
  r = v;
  *r.add_stats() = r.stats(0);
  EXPECT_TRUE(Fails(Validate(r), {"stats[1]: ", "is stats[0] again"}));
  r.mutable_stats(1)->set_plan_id("q");
  EXPECT_TRUE(Passes(Validate(r)));
}

TEST(ValidateListDemand, Fields) {
  v1::ListDemandRequest r;
  EXPECT_TRUE(Passes(Validate(r)));
  r.mutable_window()->set_seconds(3600);
  r.set_limit(1000);
  r.set_collective(v1::COLLECTIVE_ALLTOALLV);
  EXPECT_TRUE(Passes(Validate(r)));
  r.set_limit(1001);
  EXPECT_TRUE(Fails(Validate(r), {"limit: "}));
  r.set_limit(0);
  r.mutable_window()->set_seconds(0);
  EXPECT_TRUE(Fails(Validate(r), {"window: 0 when set"}));
  r.mutable_window()->set_seconds(367 * 86400);
  EXPECT_TRUE(Fails(Validate(r), {"window: ", "longer than 366 days"}));
  r.mutable_window()->set_seconds(60);
  r.set_collective(static_cast<v1::Collective>(7));
  EXPECT_TRUE(Fails(Validate(r), {"collective: 7 is not a value of Collective"}));
}

TEST(ValidateReportJob, Timestamps) {
  v1::ReportJobRequest r = ValidJob();
  r.mutable_finished_at()->set_seconds(1'699'999'999);
  EXPECT_TRUE(Fails(Validate(r), {"finished_at: {seconds: 1699999999, nanos: 0} is before started_at"}));
  r = ValidJob();
  r.mutable_finished_at()->set_seconds(r.started_at().seconds());
  EXPECT_TRUE(Passes(Validate(r)));  // A job may take no time at this resolution.
  r.mutable_started_at()->set_nanos(5);
  EXPECT_TRUE(Fails(Validate(r), {"finished_at: ", "is before started_at"}));
  r = ValidJob();
  r.mutable_started_at()->set_nanos(-1);
  EXPECT_TRUE(Fails(Validate(r), {"started_at: {seconds: 1700000000, nanos: -1} is not a valid Timestamp"}));
  r = ValidJob();
  r.mutable_finished_at()->set_seconds(253'402'300'800);  // Year 10000.
  EXPECT_TRUE(Fails(Validate(r), {"finished_at: {seconds: 253402300800, nanos: 0} is not a valid Timestamp"}));
}

}  // namespace
}  // namespace topotune::daemon
