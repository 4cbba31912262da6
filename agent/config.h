// The agent's configuration file (default /etc/topotune/agent.yaml;
// deploy/agent.yaml documents every key). Its keys are the `serve` flags:
//
//   server, token_file, tls_ca          where topotuned is and the credentials
//   hostname, interface, lldpd_socket,  the facts registered
//   lldp
//   rpc_timeout, log_level              the serve loop
//
// A key left out keeps the built-in default; a flag given on the command line
// (or its environment variable) overrides the file (cli.cc). Loading is strict,
// like topotuned's (daemon/topotuned/config.h): an unknown key or a value of
// the wrong type or out of range is an error naming the file, the line and the
// key, so a typo never silently falls back to a default.
//
// Thread-safety: values; the functions share no state.
#pragma once

#include <optional>
#include <string>

#include "tuner/status.h"

namespace topotune::agent {

inline constexpr const char* kDefaultAgentConfig = "/etc/topotune/agent.yaml";

// What the file sets; nullopt: the key is absent.
struct AgentConfig {
  std::string source;  // The file loaded.
  std::optional<std::string> server;
  std::optional<std::string> token_file;
  std::optional<std::string> tls_ca;
  std::optional<std::string> hostname;
  std::optional<std::string> interface;
  std::optional<std::string> lldpd_socket;
  std::optional<bool> lldp;
  std::optional<double> rpc_timeout_s;   // Within [0.05, 3600] s, as --rpc-timeout.
  std::optional<std::string> log_level;  // trace, debug, info, warn or error.
};

// Parses YAML text; `source` names it in errors.
StatusOr<AgentConfig> ParseAgentConfig(const std::string& text, const std::string& source);
// Reads and parses a file; a missing or unreadable file is an error naming it.
StatusOr<AgentConfig> LoadAgentConfig(const std::string& path);

}  // namespace topotune::agent
