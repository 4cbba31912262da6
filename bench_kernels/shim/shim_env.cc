#include "bench_kernels/shim/shim_env.h"

#include <fmt/format.h>

#include <charconv>
#include <string_view>

#include "bench_kernels/kernel.h"

namespace topotune::shim {

namespace {

std::string Value(const GetEnv& getenv, const char* name) {
  const char* v = getenv(name);
  return v ? std::string(v) : std::string();
}

// "1", "true", "yes", "on" (any case) and "0", "false", "no", "off".
bool ParseBool(std::string_view v, bool* out) {
  std::string s;
  for (char c : v) s += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  if (s == "1" || s == "true" || s == "yes" || s == "on") return *out = true, true;
  if (s == "0" || s == "false" || s == "no" || s == "off") return *out = false, true;
  return false;
}

}  // namespace

ShimConfig ConfigFromEnv(const GetEnv& getenv) {
  ShimConfig c;
  auto boolean = [&](const char* name, bool* field) {
    std::string v = Value(getenv, name);
    if (v.empty()) return;
    if (!ParseBool(v, field))
      c.problems.push_back(
          fmt::format("{}='{}' is not 1 or 0 (nor true/false, yes/no, on/off); using {}", name, v, *field ? 1 : 0));
  };
  boolean("TOPOTUNE_DISABLE", &c.disabled);
  boolean("TOPOTUNE_REPORT", &c.report);
  if (std::string v = Value(getenv, "TOPOTUNE_ADAPT"); !v.empty()) {
    if (bool adapt = false; ParseBool(v, &adapt))
      c.adapt = adapt;
    else
      c.problems.push_back(fmt::format(
          "TOPOTUNE_ADAPT='{}' is not 1 or 0 (nor true/false, yes/no, on/off); using the site's setting", v));
  }
  if (std::string v = Value(getenv, "TOPOTUNE_SERVER"); !v.empty()) c.server = v;
  if (std::string v = Value(getenv, "TOPOTUNE_TIMEOUT_MS"); !v.empty()) {
    int ms = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), ms);
    if (ec != std::errc() || end != v.data() + v.size() || ms < 1 || ms > 600000)
      c.problems.push_back(
          fmt::format("TOPOTUNE_TIMEOUT_MS='{}' is not a whole number of milliseconds from 1 to 600000; using {}", v,
                      c.timeout_ms));
    else
      c.timeout_ms = ms;
  }
  if (std::string v = Value(getenv, "TOPOTUNE_LOG"); !v.empty()) {
    static constexpr std::pair<std::string_view, LogLevel> kLevels[] = {{"off", LogLevel::kOff},
                                                                        {"error", LogLevel::kError},
                                                                        {"warn", LogLevel::kWarn},
                                                                        {"info", LogLevel::kInfo},
                                                                        {"debug", LogLevel::kDebug}};
    bool found = false;
    for (const auto& [name, level] : kLevels)
      if (v == name) c.log = level, found = true;
    if (!found)
      c.problems.push_back(fmt::format("TOPOTUNE_LOG='{}' is not off, error, warn, info or debug; using warn", v));
  }
  for (kernels::Collective k :
       {kernels::Collective::kAlltoall, kernels::Collective::kAlltoallv, kernels::Collective::kAllgather}) {
    std::string name = "TOPOTUNE_FORCE_";
    for (char ch : kernels::CollectiveName(k)) name += static_cast<char>(ch - 'a' + 'A');
    std::string v = Value(getenv, name.c_str());
    if (v.empty()) continue;
    if (kernels::FindKernel(k, v) == nullptr)
      c.problems.push_back(
          fmt::format("{}='{}' is not an algorithm ({}); the plan decides", name, v, kernels::ValidKernels(k)));
    else
      c.force[static_cast<size_t>(k)] = v;
  }
  if (std::string v = Value(getenv, "TOPOTUNE_TEST_THROW"); !v.empty()) {
    int every = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), every);
    if (ec != std::errc() || end != v.data() + v.size() || every < 0)
      c.problems.push_back(
          fmt::format("TOPOTUNE_TEST_THROW='{}' is not a whole number of calls from 0; no fault is injected", v));
    else
      c.test_throw_every = every;
  }
  c.hostname = Value(getenv, "TOPOTUNE_HOSTNAME");
  c.job_id = Value(getenv, "TOPOTUNE_JOB_ID");
  if (c.job_id.empty()) c.job_id = Value(getenv, "SLURM_JOB_ID");
  c.stats_file = Value(getenv, "TOPOTUNE_STATS_FILE");
  c.tls_ca = Value(getenv, "TOPOTUNE_TLS_CA");
  return c;
}

bool LaunchedAsRankZero(const GetEnv& getenv) {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"})
    if (const char* rank = getenv(name); rank != nullptr) return std::string_view(rank) == "0";
  return false;
}

}  // namespace topotune::shim
