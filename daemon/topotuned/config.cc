#include "daemon/topotuned/config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <sstream>

#include "tuner/crossover.h"
#include "tuner/read_file.h"
#include "tuner/topology.h"

namespace topotune::daemon {
namespace {

// Reads one mapping strictly: each key must have a handler; a handler
// converts the node and returns an error text, or "" when it is fine.
class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  using Handler = std::function<std::string(const YAML::Node&)>;

  Status Map(const YAML::Node& node, const std::string& path, const std::map<std::string, Handler>& handlers) {
    if (!node || node.IsNull()) return Status::Ok();
    if (!node.IsMap()) return Error(node, path, "expected a mapping of keys to values");
    for (const auto& kv : node) {
      std::string key = kv.first.as<std::string>();
      std::string full = path.empty() ? key : path + "." + key;
      auto it = handlers.find(key);
      if (it == handlers.end()) {
        std::vector<std::string> known;
        for (const auto& [k, h] : handlers) known.push_back(k);
        return Error(kv.first, full, fmt::format("unknown key; known keys here: {}", fmt::join(known, ", ")));
      }
      std::string why;
      try {
        why = it->second(kv.second);
      } catch (const YAML::Exception&) {
        why = "wrong type of value";
      }
      if (!why.empty()) return Error(kv.second, full, why);
      if (!nested_.ok()) return nested_;
    }
    return Status::Ok();
  }

  // For handlers of nested mappings: remembers the nested status.
  std::string Nested(Status s) {
    nested_ = std::move(s);
    return "";
  }

  Status Error(const YAML::Node& at, const std::string& key, const std::string& why) const {
    return Status::InvalidArgument(fmt::format("{}:{}: {}: {}", source_, at.Mark().line + 1, key, why));
  }

 private:
  std::string source_;
  Status nested_;
};

Reader::Handler Str(std::string* out) {
  return [out](const YAML::Node& n) -> std::string {
    if (!n.IsScalar()) return "expected a string";
    *out = n.as<std::string>();
    return "";
  };
}

Reader::Handler StrList(std::vector<std::string>* out) {
  return [out](const YAML::Node& n) -> std::string {
    if (n.IsScalar()) {  // "a,b" is accepted as well as [a, b].
      out->clear();
      std::stringstream ss(n.as<std::string>());
      for (std::string item; std::getline(ss, item, ',');)
        if (!item.empty()) out->push_back(item);
      return "";
    }
    if (!n.IsSequence()) return "expected a list of strings";
    out->clear();
    for (const auto& item : n) out->push_back(item.as<std::string>());
    return "";
  };
}

Reader::Handler Bool(bool* out) {
  return [out](const YAML::Node& n) -> std::string {
    if (!n.IsScalar() || !YAML::convert<bool>::decode(n, *out)) return "expected true or false";
    return "";
  };
}

template <typename Num>
Reader::Handler Number(Num* out, Num lo, Num hi) {
  return [out, lo, hi](const YAML::Node& n) -> std::string {
    if (!n.IsScalar()) return "expected a number";
    Num v;
    if (!YAML::convert<Num>::decode(n, v)) return fmt::format("'{}' is not a number", n.Scalar());
    if (v < lo || v > hi) return fmt::format("{} is out of range [{}, {}]", v, lo, hi);
    *out = v;
    return "";
  };
}

Reader::Handler Bytes(int64_t* out, double lo, double hi) {
  return [out, lo, hi](const YAML::Node& n) -> std::string {
    if (!n.IsScalar()) return "expected a size such as 64MiB";
    auto v = ParseBytes(n.Scalar());
    if (!v) return fmt::format("'{}' is not a size (e.g. 4096, 64KiB, 1MiB)", n.Scalar());
    if (*v < lo || *v > hi)
      return fmt::format("{} is out of range [{}, {}]", n.Scalar(), FormatBytes(lo), FormatBytes(hi));
    *out = static_cast<int64_t>(*v);
    return "";
  };
}

Reader::Handler Seconds(double* out, double lo, double hi) {
  return [out, lo, hi](const YAML::Node& n) -> std::string {
    if (!n.IsScalar()) return "expected a duration such as 30s";
    auto v = ParseLatency(n.Scalar());  // "500ms", "30s", "0", or a bare number of seconds below.
    double d = 0;
    if (v) {
      d = *v;
    } else if (!YAML::convert<double>::decode(n, d)) {
      return fmt::format("'{}' is not a duration (e.g. 30s, 500ms, or seconds as a number)", n.Scalar());
    }
    if (d < lo || d > hi) return fmt::format("{} s is out of range [{}, {}] s", d, lo, hi);
    *out = d;
    return "";
  };
}

}  // namespace

std::string DefaultDatabasePath() {
  // systemd's StateDirectory= (deploy/systemd/topotuned.service) sets
  // STATE_DIRECTORY, a colon-separated list whose first entry is ours.
  if (const char* state = std::getenv("STATE_DIRECTORY"); state && *state) {
    const std::string first(state, std::strcspn(state, ":"));
    if (!first.empty()) return first + "/topotune.db";
  }
  if (geteuid() == 0) return "/var/lib/topotune/topotune.db";
  const char* xdg = std::getenv("XDG_DATA_HOME");
  const char* home = std::getenv("HOME");
  std::string base = xdg && *xdg ? xdg : fmt::format("{}/.local/share", home && *home ? home : ".");
  return base + "/topotune/topotune.db";
}

StatusOr<Config> ParseConfig(const std::string& text, const std::string& source) {
  Config c;
  c.source = source;
  StatusOr<YAML::Node> parsed = ParseYaml(text, source);
  if (!parsed.ok()) return parsed.status();
  const YAML::Node& root = *parsed;
  Reader r(source);
  DiscoveryConfig& d = c.discovery;
  TuningConfig& t = c.tuning;
  std::map<std::string, Reader::Handler> discovery = {
      {"seeds", StrList(&d.seeds)},
      {"community", Str(&d.community)},
      {"v3_user", Str(&d.v3_user)},
      {"v3_auth", Str(&d.v3_auth)},
      {"v3_priv", Str(&d.v3_priv)},
      {"v3_auth_protocol", Str(&d.v3_auth_protocol)},
      {"v3_priv_protocol", Str(&d.v3_priv_protocol)},
      {"port", Number<int>(&d.port, 1, 65535)},
      {"timeout", Seconds(&d.timeout_s, 0.01, 600)},
      {"retries", Number<int>(&d.retries, 0, 20)},
      {"concurrency", Number<int>(&d.concurrency, 1, 256)},
      {"interval", Seconds(&d.interval_s, 10, 7 * 86400)},
      {"exclude_switches", StrList(&d.exclude_switches)},
      {"data_vlan", Number<int>(&d.data_vlan, 1, 4094)},
  };
  auto int_list = [](std::vector<int>* out, int lo, int hi) -> Reader::Handler {
    return [out, lo, hi](const YAML::Node& n) -> std::string {
      if (!n.IsSequence()) return "expected a list of numbers";
      out->clear();
      for (const auto& v : n) {
        int k = 0;
        if (!v.IsScalar() || !YAML::convert<int>::decode(v, k)) return "expected a list of numbers";
        if (k < lo || k > hi) return fmt::format("{} is out of range [{}, {}]", k, lo, hi);
        out->push_back(k);
      }
      return "";
    };
  };
  std::map<std::string, Reader::Handler> tuning = {
      {"launcher", Str(&t.launcher)},
      {"node_counts", int_list(&t.node_counts, 1, 65536)},
      {"point_timeout", Seconds(&t.point_timeout_s, 1, 86400)},
      {"max_refinement_rounds", Number<int>(&t.max_refinement_rounds, 0, 32)},
      {"agent_command", Str(&t.agent_command)},
      {"server_address", Str(&t.server_address)},
      {"agent_tls_ca", Str(&t.agent_tls_ca)},
      {"job_timeout", Seconds(&t.job_timeout_s, 1, 7 * 86400)},
      {"collectives", StrList(&t.collectives)},
      {"ranks_per_node", int_list(&t.ranks_per_node, 1, 1024)},
      {"alltoallv_patterns", StrList(&t.alltoallv_patterns)},
      {"alltoallv_matrices", Number<int>(&t.alltoallv_matrices, 1, 16)},
      {"sizes", StrList(&t.sizes)},
      {"iterations", Number<int>(&t.iterations, 1, 100000)},
      {"alpha", Number<double>(&t.alpha, 1e-6, 0.5)},
      {"margin", Number<double>(&t.margin, 0, 0.5)},
      {"size_budget", Seconds(&t.size_budget_s, 0, 86400)},
      {"max_rounds", Number<int>(&t.max_rounds, 1, 100000)},
      {"aa_control", Bool(&t.aa_control)},
      {"race", Bool(&t.race)},
      {"candidate_timeout", Seconds(&t.candidate_timeout_s, 0, 86400)},
      {"slow_warmup_factor", Number<double>(&t.slow_warmup_factor, 0, 1000)},
  };
  std::map<std::string, Reader::Handler> adaptation = {
      {"enabled", Bool(&c.adaptation.enabled)},
      {"nearest_distance", Number<double>(&c.adaptation.nearest_distance, 0, 64)},
  };
  Status s =
      r.Map(root, "",
            {
                {"listen", Str(&c.listen)},
                {"metrics_listen", Str(&c.metrics_listen)},
                {"database", Str(&c.database)},
                {"tls_cert", Str(&c.tls_cert)},
                {"tls_key", Str(&c.tls_key)},
                {"token_file", Str(&c.token_file)},
                {"max_concurrent_rpcs", Number<int>(&c.max_concurrent_rpcs, 1, 100000)},
                {"max_message_size", Bytes(&c.max_message_bytes, 4096, 1 << 30)},
                {"topology_file", Str(&c.topology_file)},
                {"hosts_file", Str(&c.hosts_file)},
                {"plan_cache_size", Bytes(&c.plan_cache_bytes, 0, 1LL << 40)},
                {"plan_compile_max_size", Bytes(&c.plan_compile_max_bytes, 0, 1LL << 40)},
                {"plan_compile_cpu", Seconds(&c.plan_compile_cpu_s, 0.01, 86400)},
                {"plan_compiles", Number<int>(&c.plan_compiles, 1, 64)},
                {"plan_gzip", Bool(&c.plan_gzip)},
                {"reflection", Bool(&c.reflection)},
                {"agent_timeout", Seconds(&c.agent_timeout_s, 1, 86400)},
                {"log_level", Str(&c.log_level)},
                {"discovery", [&](const YAML::Node& n) { return r.Nested(r.Map(n, "discovery", discovery)); }},
                {"tuning", [&](const YAML::Node& n) { return r.Nested(r.Map(n, "tuning", tuning)); }},
                {"adaptation", [&](const YAML::Node& n) { return r.Nested(r.Map(n, "adaptation", adaptation)); }},
            });
  if (!s.ok()) return s;
  for (const std::string& size : t.sizes)
    if (!ParseBytes(size))
      return Status::InvalidArgument(fmt::format("{}: tuning.sizes: '{}' is not a size", source, size));
  TOPOTUNE_RETURN_IF_ERROR(ValidateConfig(c));
  return c;
}

StatusOr<Config> LoadConfig(const std::string& path) {
  StatusOr<std::string> text = ReadWholeFile(path, "the configuration file");
  if (!text.ok()) return text.status();
  return ParseConfig(*text, path);
}

std::string ListenHost(std::string_view listen) { return std::string(listen.substr(0, listen.rfind(':'))); }

double CandidateLimit(const TuningConfig& t) {
  return t.candidate_timeout_s > 0 ? std::min(t.candidate_timeout_s, t.point_timeout_s / 2) : 0;
}

Status ValidateConfig(const Config& c) {
  auto bad = [&](const std::string& what) { return Status::InvalidArgument(fmt::format("{}: {}", c.source, what)); };
  if (c.tls_cert.empty() != c.tls_key.empty()) return bad("tls_cert and tls_key go together: give both or neither");
  for (const auto* addr : {&c.listen, &c.metrics_listen}) {
    size_t colon = addr->rfind(':');
    if (colon == std::string::npos || colon + 1 == addr->size())
      return bad(fmt::format("listen address '{}' needs HOST:PORT (e.g. 127.0.0.1:50051)", *addr));
  }
  if (c.tuning.alltoallv_patterns.empty())
    return bad(
        fmt::format("tuning.alltoallv_patterns is empty: list at least one of {}", fmt::join(kPatternClasses, ", ")));
  for (const std::string& p : c.tuning.alltoallv_patterns)
    if (std::find(kPatternClasses.begin(), kPatternClasses.end(), p) == kPatternClasses.end())
      return bad(fmt::format("tuning.alltoallv_patterns: '{}' is not one of {}", p, fmt::join(kPatternClasses, ", ")));
  if (c.tuning.slow_warmup_factor > 0 && c.tuning.slow_warmup_factor < 1)
    return bad(
        fmt::format("tuning.slow_warmup_factor {} is below 1 (it would drop candidates faster than native); "
                    "give 0 (never) or at least 1",
                    c.tuning.slow_warmup_factor));
  if (c.tuning.launcher.find("{command}") == std::string::npos)
    return bad("tuning.launcher must contain {command}, where the benchmark command goes");
  static const char* const kLevels[] = {"trace", "debug", "info", "warn", "error", "critical", "off"};
  if (std::find(std::begin(kLevels), std::end(kLevels), c.log_level) == std::end(kLevels))
    return bad(fmt::format("log_level '{}' is not one of trace, debug, info, warn, error, critical, off", c.log_level));
  return Status::Ok();
}

}  // namespace topotune::daemon
