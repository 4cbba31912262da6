// The SNMP settings of topotuned's `discovery:` configuration as the discovery
// library takes them, so that topotuned's discoveries and `topotune doctor`'s
// SNMP checks reach switches alike. Header-only: daemon_core does not link
// net-snmp; the users (daemon_service, the CLI) link topotune::discovery.
#pragma once

#include "daemon/discovery/snmp_source.h"
#include "daemon/topotuned/config.h"

namespace topotune::daemon {

// v3 authPriv when v3_user is set, else v2c with the community.
inline discovery::SnmpCredentials SnmpCredentialsOf(const DiscoveryConfig& dc) {
  discovery::SnmpCredentials creds;
  if (!dc.v3_user.empty()) {
    creds.version = discovery::SnmpVersion::kV3;
    creds.v3_user = dc.v3_user;
    creds.v3_auth_pass = dc.v3_auth;
    creds.v3_priv_pass = dc.v3_priv;
    creds.v3_auth_protocol = dc.v3_auth_protocol;
    creds.v3_priv_protocol = dc.v3_priv_protocol;
  } else {
    creds.community = dc.community;
  }
  return creds;
}

inline discovery::SnmpTransport SnmpTransportOf(const DiscoveryConfig& dc) {
  discovery::SnmpTransport transport;
  transport.port = dc.port;
  transport.timeout_s = dc.timeout_s;
  transport.retries = dc.retries;
  return transport;
}

}  // namespace topotune::daemon
