// Feeding a tuning sweep from a test, in place of MPI ranks: topotuned's
// launcher is a script that records the benchmark command line and waits for
// the test's "go" file (or for the test directory to vanish), and the test
// plays the agents' part (Register, FetchBenchTask, ReportSamples) with
// synthetic samples. Shared by api_test.cc and cli_test.cc.
//
// Thread-safety: free functions; each call uses its own context.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <random>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "tests/daemon/daemon_process.h"
#include "topotune/v1/admin.grpc.pb.h"
#include "topotune/v1/agents.grpc.pb.h"

namespace topotune::testing {

// tuning.launcher: appends "{command} np={np} hosts={hosts}" to
// dir/commands, then waits until dir/go exists or dir is gone.
inline std::string RecordingLauncher(const ScratchDir& dir) {
  return fmt::format(
      "echo '{{command}} np={{np}} hosts={{hosts}}' >> {0}/commands; "
      "while [ -d {0} ] && [ ! -e {0}/go ]; do sleep 0.05; done",
      dir.path());
}

// The task id of the n-th benchmark command the launcher recorded (waits up
// to 20 s); "" when none came. The whole line goes to `line_out`.
inline std::string WaitForTask(const ScratchDir& dir, size_t n, std::string* line_out = nullptr) {
  for (int i = 0; i < 400; ++i) {
    std::ifstream in(dir.File("commands"));
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    if (lines.size() > n) {
      if (line_out) *line_out = lines[n];
      std::smatch m;
      return std::regex_search(lines[n], m, std::regex("--task (\\S+)")) ? std::string(m[1]) : "";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return "";
}

// An agent's registration: one MAC (02:00:00:00:00:<index>), 4 cores, 100 Mb/s.
inline v1::RegisterRequest Registration(const std::string& host, int index) {
  v1::RegisterRequest req;
  req.mutable_host()->set_hostname(host);
  req.mutable_host()->add_macs(fmt::format("02:00:00:00:00:{:02x}", index));
  req.mutable_host()->set_cores(4);
  req.mutable_host()->set_nic_speed_bps(100'000'000);
  req.set_agent_version("test");
  return req;
}

// One alltoall sample on 2 ranks (1 per node) of `n` times around `median`
// (+-5%, deterministic per sequence number).
inline v1::ReportSamplesRequest SampleMessage(const std::string& task, int64_t seq, const std::string& algorithm,
                                              int64_t msize, double median, int n = 20) {
  v1::ReportSamplesRequest msg;
  msg.set_task_id(task);
  msg.set_sequence(seq);
  v1::BenchSample* s = msg.mutable_sample();
  s->set_collective(v1::COLLECTIVE_ALLTOALL);
  s->set_algorithm(algorithm);
  s->set_label(algorithm);
  s->set_nprocs(2);
  s->set_ranks_per_node(1);
  s->set_msize(msize);
  s->set_iterations(n);
  std::mt19937_64 rng(static_cast<uint64_t>(seq) * 7 + 1);
  std::uniform_real_distribution<double> jitter(0.95, 1.05);
  std::vector<double> t;
  for (int i = 0; i < n; ++i) t.push_back(median * jitter(rng));
  for (double x : t) s->add_times_s(x);
  std::sort(t.begin(), t.end());
  s->set_min_s(t.front());
  s->set_median_s(t[t.size() / 2]);
  s->set_p95_s(t[t.size() * 95 / 100]);
  s->set_max_s(t.back());
  s->set_bytes_per_call(2 * msize);
  s->set_bytes_per_s(static_cast<double>(2 * msize) / t[t.size() / 2]);
  return msg;
}

// Streams `msgs` in one ReportSamples call (with a deadline of a minute:
// thousands of samples on a loaded machine take a while).
inline grpc::Status StreamSamples(v1::Agents::Stub& agents, const std::vector<v1::ReportSamplesRequest>& msgs,
                                  v1::ReportSamplesResponse* resp, const std::string& token = "") {
  auto ctx = Context(token, 60);
  auto writer = agents.ReportSamples(ctx.get(), resp);
  for (const auto& m : msgs)
    if (!writer->Write(m)) break;
  writer->WritesDone();
  return writer->Finish();
}

// The sweep's status once it left QUEUED and RUNNING (or after 20 s).
inline v1::TuningStatusResponse WaitForSweep(v1::Admin::Stub& admin, const std::string& id) {
  v1::TuningStatusRequest req;
  req.set_tuning_id(id);
  v1::TuningStatusResponse resp;
  for (int i = 0; i < 400; ++i) {
    resp.Clear();
    auto ctx = Context();
    if (!admin.TuningStatus(ctx.get(), req, &resp).ok()) break;
    if (resp.state() != v1::TUNING_STATE_QUEUED && resp.state() != v1::TUNING_STATE_RUNNING) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return resp;
}

}  // namespace topotune::testing
