#include "agent/config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <functional>
#include <vector>

#include "tuner/read_file.h"
#include "tuner/topology.h"

namespace topotune::agent {
namespace {

// Converts one value into the config; returns "" when it is fine, else why not.
using Setter = std::function<std::string(const YAML::Node&, AgentConfig*)>;

Setter Str(std::optional<std::string> AgentConfig::*field) {
  return [field](const YAML::Node& n, AgentConfig* c) -> std::string {
    if (!n.IsScalar()) return "expected a string";
    c->*field = n.Scalar();
    return "";
  };
}

// The keys, in the order deploy/agent.yaml documents them.
const std::vector<std::pair<std::string, Setter>>& Keys() {
  static const std::vector<std::pair<std::string, Setter>> keys = {
      {"server", Str(&AgentConfig::server)},
      {"token_file", Str(&AgentConfig::token_file)},
      {"tls_ca", Str(&AgentConfig::tls_ca)},
      {"hostname", Str(&AgentConfig::hostname)},
      {"interface", Str(&AgentConfig::interface)},
      {"lldpd_socket", Str(&AgentConfig::lldpd_socket)},
      {"lldp",
       [](const YAML::Node& n, AgentConfig* c) -> std::string {
         bool v = false;
         if (!n.IsScalar() || !YAML::convert<bool>::decode(n, v)) return "expected true or false";
         c->lldp = v;
         return "";
       }},
      {"rpc_timeout",
       [](const YAML::Node& n, AgentConfig* c) -> std::string {
         if (!n.IsScalar()) return "expected a duration such as 5s";
         double s = 0;
         if (auto v = ParseLatency(n.Scalar())) {
           s = *v;
         } else if (!YAML::convert<double>::decode(n, s)) {
           return fmt::format("'{}' is not a duration (e.g. 5s, 500ms, or seconds as a number)", n.Scalar());
         }
         if (s < 0.05 || s > 3600) return fmt::format("{} s is out of range [0.05, 3600] s", s);
         c->rpc_timeout_s = s;
         return "";
       }},
      {"log_level",
       [](const YAML::Node& n, AgentConfig* c) -> std::string {
         static const std::vector<std::string> kLevels = {"trace", "debug", "info", "warn", "error"};
         if (!n.IsScalar() || std::find(kLevels.begin(), kLevels.end(), n.Scalar()) == kLevels.end())
           return fmt::format("expected one of {}", fmt::join(kLevels, ", "));
         c->log_level = n.Scalar();
         return "";
       }},
  };
  return keys;
}

}  // namespace

StatusOr<AgentConfig> ParseAgentConfig(const std::string& text, const std::string& source) {
  AgentConfig c;
  c.source = source;
  StatusOr<YAML::Node> parsed = ParseYaml(text, source);
  if (!parsed.ok()) return parsed.status();
  const YAML::Node& root = *parsed;
  if (!root || root.IsNull()) return c;  // Empty, or only comments.
  auto error = [&](const YAML::Node& at, const std::string& key, const std::string& why) {
    return Status::InvalidArgument(
        fmt::format("{}:{}: {}{}", source, at.Mark().line + 1, key.empty() ? "" : key + ": ", why));
  };
  if (!root.IsMap()) return error(root, "", "expected a mapping of keys to values");
  for (const auto& kv : root) {
    const std::string key = kv.first.Scalar();
    auto it = std::find_if(Keys().begin(), Keys().end(), [&](const auto& k) { return k.first == key; });
    if (it == Keys().end()) {
      std::vector<std::string> known;
      for (const auto& k : Keys()) known.push_back(k.first);
      return error(kv.first, key, fmt::format("unknown key; known keys: {}", fmt::join(known, ", ")));
    }
    if (std::string why = it->second(kv.second, &c); !why.empty()) return error(kv.second, key, why);
  }
  return c;
}

StatusOr<AgentConfig> LoadAgentConfig(const std::string& path) {
  StatusOr<std::string> text = ReadWholeFile(path, "the configuration file");
  if (!text.ok()) return text.status();
  return ParseAgentConfig(*text, path);
}

}  // namespace topotune::agent
