// The one interface through which discovery reads a switch: walk some OID
// subtrees, get back the variable bindings under them. Two implementations:
// NetSnmpSource (a live agent over UDP, net-snmp, v2c or v3 authPriv, GETBULK
// with a timeout and retries) and RecordedSource (recorded_walk.h, a walk
// saved as text). Everything above this interface runs the same on both.
//
// Thread-safety: one SnmpSource is used by one thread at a time; different
// sources may be walked concurrently (each NetSnmpSource has its own session).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/discovery/snmp_types.h"
#include "tuner/status.h"

namespace topotune::discovery {

class SnmpSource {
 public:
  virtual ~SnmpSource() = default;
  // Every binding whose OID lies under one of `roots`, each root's rows in OID
  // order. A root with no rows contributes none (not an error). An error means
  // the agent could not be read at all (timeout, refused, authentication).
  virtual StatusOr<std::vector<VarBind>> Walk(const std::vector<Oid>& roots) = 0;
  // For messages: "198.18.0.1:161" or the file name.
  virtual std::string name() const = 0;
  // SNMP requests sent so far (PDUs, retries not counted).
  virtual int64_t requests() const = 0;
};

// Part of the message of every error that means the agent did not answer a
// request within the timeout and its retries (over v3 too, where net-snmp
// reports the engine-ID probe's timeout as a plain error). Such an agent may
// only be slow: the crawl tries it once more with a longer timeout.
inline constexpr std::string_view kNoResponse = "no response (timeout)";
inline bool IsNoResponse(const Status& status) {
  return !status.ok() && status.message().find(kNoResponse) != std::string::npos;
}

enum class SnmpVersion { kV2c, kV3 };

// How to reach and authenticate to agents. v3 is always authPriv.
struct SnmpCredentials {
  SnmpVersion version = SnmpVersion::kV2c;
  std::string community = "public";
  std::string v3_user;
  std::string v3_auth_protocol = "SHA";  // SHA (SHA-1), SHA-256 or MD5.
  std::string v3_auth_pass;
  std::string v3_priv_protocol = "AES";  // AES (AES-128) or DES.
  std::string v3_priv_pass;
};

struct SnmpTransport {
  int port = 161;
  double timeout_s = 1.0;  // Per request.
  int retries = 2;         // Per request, after the first try.
  int max_repetitions = 25;
};

// Checks credentials before any socket is opened: v3 needs a user and pass
// phrases of at least 8 characters, known protocols; v2c a community.
Status ValidateCredentials(const SnmpCredentials& creds);

// An agent address as a seed gives it: "HOST", "HOST:PORT", an IPv6 literal,
// or "[V6]:PORT". The port is `default_port` when none is given.
// InvalidArgument for an empty host, a space or '/', or a port outside
// 1..65535.
struct AgentAddress {
  std::string host;  // Without brackets.
  int port = 161;
  bool ipv6 = false;
  bool port_given = false;  // The address named its port.
  // HOST:PORT, or [HOST]:PORT for IPv6.
  std::string ToString() const;
};
StatusOr<AgentAddress> ParseAgentAddress(const std::string& address, int default_port);

// Opens a session to the agent at `address` (ParseAgentAddress: its port, or
// else transport.port). Fails only on a bad address or bad credentials; an
// unreachable agent fails at Walk().
StatusOr<std::unique_ptr<SnmpSource>> OpenNetSnmp(const std::string& address, const SnmpCredentials& creds,
                                                  const SnmpTransport& transport);

}  // namespace topotune::discovery
