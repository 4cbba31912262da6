// NetSnmpSource: SnmpSource over a live agent, through net-snmp's single-
// session API (snmp_sess_*), which is safe to use from several threads as
// long as each thread has its own session and the library is initialised
// once (README.thread in net-snmp). MIB files are never loaded: discovery
// uses numeric OIDs only.
#include <fmt/format.h>
#include <net-snmp/net-snmp-config.h>
#include <net-snmp/net-snmp-includes.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <shared_mutex>

#include "daemon/discovery/snmp_source.h"

namespace topotune::discovery {
namespace {

std::once_flag g_init_once;
// net-snmp keeps the SNMPv3 USM user list process-wide and without locks: a
// v3 session open (engine-ID probe, user creation) must not run beside any
// other v3 request. Opens take it exclusively, v3 walks shared. v2c sessions
// touch no shared state and take neither.
std::shared_mutex g_v3_mutex;
std::mutex g_open_mutex;  // Serialises opens (session list, init).

void InitNetSnmp() {
  std::call_once(g_init_once, [] {
    setenv("MIBS", "", 0);  // Load no MIB modules: OIDs are numeric.
    netsnmp_ds_set_boolean(NETSNMP_DS_LIBRARY_ID, NETSNMP_DS_LIB_DONT_PERSIST_STATE, 1);
    netsnmp_ds_set_boolean(NETSNMP_DS_LIBRARY_ID, NETSNMP_DS_LIB_DISABLE_PERSISTENT_LOAD, 1);
    netsnmp_ds_set_boolean(NETSNMP_DS_LIBRARY_ID, NETSNMP_DS_LIB_DISABLE_PERSISTENT_SAVE, 1);
    netsnmp_ds_set_boolean(NETSNMP_DS_LIBRARY_ID, NETSNMP_DS_LIB_DISABLE_CONFIG_LOAD, 1);
    netsnmp_ds_set_int(NETSNMP_DS_LIBRARY_ID, NETSNMP_DS_LIB_MIB_WARNINGS, 0);
    snmp_disable_log();
    init_snmp("topotune");
  });
}

SnmpValue ConvertValue(const netsnmp_variable_list* v) {
  SnmpValue out;
  switch (v->type) {
    case ASN_INTEGER:
      out.type = SnmpType::kInteger;
      out.integer = *v->val.integer;
      break;
    case ASN_COUNTER:
    case ASN_GAUGE:
    case ASN_TIMETICKS:
      out.type = v->type == ASN_COUNTER ? SnmpType::kCounter32
                 : v->type == ASN_GAUGE ? SnmpType::kGauge32
                                        : SnmpType::kTimeTicks;
      out.integer = static_cast<int64_t>(static_cast<uint32_t>(*v->val.integer));
      break;
    case ASN_COUNTER64:
      out.type = SnmpType::kCounter64;
      out.integer = static_cast<int64_t>((static_cast<uint64_t>(v->val.counter64->high) << 32) |
                                         static_cast<uint32_t>(v->val.counter64->low));
      break;
    case ASN_OCTET_STR:
    case ASN_OPAQUE:
    case ASN_IPADDRESS:
      out.type = v->type == ASN_OCTET_STR ? SnmpType::kOctetString
                 : v->type == ASN_OPAQUE  ? SnmpType::kOpaque
                                          : SnmpType::kIpAddress;
      out.bytes.assign(reinterpret_cast<const char*>(v->val.string), v->val_len);
      break;
    case ASN_OBJECT_ID:
      out.type = SnmpType::kObjectId;
      for (size_t i = 0; i < v->val_len / sizeof(oid); ++i) out.oid.push_back(static_cast<uint32_t>(v->val.objid[i]));
      break;
    default:
      out.type = SnmpType::kNull;
  }
  return out;
}

class NetSnmpSource : public SnmpSource {
 public:
  NetSnmpSource(void* session, std::string name, int max_repetitions, bool v3)
      : session_(session), name_(std::move(name)), max_repetitions_(max_repetitions), v3_(v3) {}
  ~NetSnmpSource() override { snmp_sess_close(session_); }
  NetSnmpSource(const NetSnmpSource&) = delete;
  NetSnmpSource& operator=(const NetSnmpSource&) = delete;

  std::string name() const override { return name_; }
  int64_t requests() const override { return requests_; }

  StatusOr<std::vector<VarBind>> Walk(const std::vector<Oid>& roots) override {
    std::shared_lock<std::shared_mutex> v3_lock(g_v3_mutex, std::defer_lock);
    if (v3_) v3_lock.lock();
    std::vector<VarBind> out;
    for (const Oid& root : roots) TOPOTUNE_RETURN_IF_ERROR(WalkOne(root, out));
    return out;
  }

 private:
  // GETBULK from `root` until a binding leaves the subtree, the agent reports
  // the end of the MIB view, or (a broken agent) the OIDs stop increasing.
  Status WalkOne(const Oid& root, std::vector<VarBind>& out) {
    std::vector<oid> cursor(root.begin(), root.end());
    int repetitions = max_repetitions_;
    while (true) {
      netsnmp_pdu* pdu = snmp_pdu_create(SNMP_MSG_GETBULK);
      pdu->non_repeaters = 0;
      pdu->max_repetitions = repetitions;
      snmp_add_null_var(pdu, cursor.data(), cursor.size());
      netsnmp_pdu* response = nullptr;
      ++requests_;
      int status = snmp_sess_synch_response(session_, pdu, &response);
      if (status != STAT_SUCCESS) {
        if (response) snmp_free_pdu(response);
        // Over v3 a timeout of the engine-ID probe comes back as STAT_ERROR
        // with net-snmp's "Timeout" as the session's error.
        std::string why = SessionError();
        if (status == STAT_TIMEOUT || why == snmp_api_errstring(SNMPERR_TIMEOUT)) why = kNoResponse;
        return Status::IoError(fmt::format("{}: {} while walking {}", name_, why, FormatOid(root)));
      }
      if (response->errstat == SNMP_ERR_TOOBIG && repetitions > 1) {
        snmp_free_pdu(response);
        repetitions = std::max(1, repetitions / 2);
        continue;
      }
      if (response->errstat != SNMP_ERR_NOERROR) {
        // noSuchName from a v1-style agent ends the walk; other errors are real.
        std::string err = snmp_errstring(static_cast<int>(response->errstat));
        long code = response->errstat;
        snmp_free_pdu(response);
        if (code == SNMP_ERR_NOSUCHNAME) return Status::Ok();
        return Status::IoError(fmt::format("{}: agent error '{}' while walking {}", name_, err, FormatOid(root)));
      }
      bool done = response->variables == nullptr;
      for (netsnmp_variable_list* v = response->variables; v && !done; v = v->next_variable) {
        Oid got(v->name, v->name + v->name_length);
        if (v->type == SNMP_ENDOFMIBVIEW || v->type == SNMP_NOSUCHOBJECT || v->type == SNMP_NOSUCHINSTANCE ||
            !HasPrefix(got, root)) {
          done = true;
          break;
        }
        if (!(std::vector<oid>(got.begin(), got.end()) > cursor)) {
          done = true;  // Not increasing: the agent is looping.
          break;
        }
        cursor.assign(v->name, v->name + v->name_length);
        out.push_back({std::move(got), ConvertValue(v)});
      }
      snmp_free_pdu(response);
      if (done) return Status::Ok();
    }
  }

  std::string SessionError() {
    int liberr = 0, syserr = 0;
    char* msg = nullptr;
    snmp_sess_error(session_, &liberr, &syserr, &msg);
    std::string s = msg ? msg : "unknown SNMP error";
    free(msg);
    return s;
  }

  void* session_;
  std::string name_;
  int max_repetitions_;
  bool v3_;
  int64_t requests_ = 0;
};

bool IEquals(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return std::tolower(x) == std::tolower(y); });
}

}  // namespace

Status ValidateCredentials(const SnmpCredentials& c) {
  if (c.version == SnmpVersion::kV2c) {
    if (c.community.empty()) return Status::InvalidArgument("SNMP v2c needs a community (--community)");
    return Status::Ok();
  }
  if (c.v3_user.empty()) return Status::InvalidArgument("SNMP v3 needs a user name (--v3-user)");
  if (!IEquals(c.v3_auth_protocol, "SHA") && !IEquals(c.v3_auth_protocol, "SHA-256") &&
      !IEquals(c.v3_auth_protocol, "MD5"))
    return Status::InvalidArgument(
        fmt::format("unknown SNMP v3 authentication protocol '{}'; use SHA, SHA-256 or MD5", c.v3_auth_protocol));
  if (!IEquals(c.v3_priv_protocol, "AES") && !IEquals(c.v3_priv_protocol, "DES"))
    return Status::InvalidArgument(
        fmt::format("unknown SNMP v3 privacy protocol '{}'; use AES or DES", c.v3_priv_protocol));
  if (c.v3_auth_pass.size() < 8 || c.v3_priv_pass.size() < 8)
    return Status::InvalidArgument("SNMP v3 pass phrases (--v3-auth, --v3-priv) need at least 8 characters");
  return Status::Ok();
}

std::string AgentAddress::ToString() const {
  return ipv6 ? fmt::format("[{}]:{}", host, port) : fmt::format("{}:{}", host, port);
}

StatusOr<AgentAddress> ParseAgentAddress(const std::string& address, int default_port) {
  auto bad = [&](std::string_view why) {
    return Status::InvalidArgument(
        fmt::format("bad SNMP agent address '{}': {} (ADDRESS, ADDRESS:PORT or [IPV6]:PORT)", address, why));
  };
  if (address.empty() || address.find_first_of(" /") != std::string::npos) return bad("empty, or a space or '/'");
  AgentAddress a;
  a.port = default_port;
  std::string port;
  const size_t colons = static_cast<size_t>(std::count(address.begin(), address.end(), ':'));
  if (address.front() == '[') {
    const size_t close = address.find(']');
    if (close == std::string::npos || close == 1) return bad("no ']' after an IPv6 address");
    a.host = address.substr(1, close - 1);
    a.ipv6 = true;
    if (close + 1 < address.size()) {
      if (address[close + 1] != ':') return bad("':PORT' expected after ']'");
      port = address.substr(close + 2);
      if (port.empty()) return bad("an empty port");
    }
  } else if (colons == 1) {
    const size_t colon = address.find(':');
    a.host = address.substr(0, colon);
    port = address.substr(colon + 1);
    if (a.host.empty() || port.empty()) return bad("an empty host or port");
  } else {
    a.host = address;
    a.ipv6 = colons > 1;
  }
  if (!port.empty()) {
    int p = 0;
    const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
    if (ec != std::errc() || end != port.data() + port.size() || p < 1 || p > 65535)
      return bad(fmt::format("port '{}' is not 1 to 65535", port));
    a.port = p;
    a.port_given = true;
  }
  return a;
}

StatusOr<std::unique_ptr<SnmpSource>> OpenNetSnmp(const std::string& address, const SnmpCredentials& creds,
                                                  const SnmpTransport& transport) {
  TOPOTUNE_RETURN_IF_ERROR(ValidateCredentials(creds));
  auto agent = ParseAgentAddress(address, transport.port);
  if (!agent.ok()) return agent.status();
  InitNetSnmp();
  // The agent as messages name it, and as net-snmp's peer name.
  const std::string where = agent->ToString();
  std::string peer = (agent->ipv6 ? "udp6:" : "udp:") + where;
  std::string community = creds.community;
  std::string user = creds.v3_user;

  std::lock_guard<std::mutex> lock(g_open_mutex);
  std::unique_lock<std::shared_mutex> v3_lock(g_v3_mutex, std::defer_lock);
  if (creds.version == SnmpVersion::kV3) v3_lock.lock();
  netsnmp_session s;
  snmp_sess_init(&s);
  s.peername = peer.data();
  s.timeout = static_cast<long>(transport.timeout_s * 1e6);
  s.retries = transport.retries;
  if (creds.version == SnmpVersion::kV2c) {
    s.version = SNMP_VERSION_2c;
    s.community = reinterpret_cast<u_char*>(community.data());
    s.community_len = community.size();
  } else {
    s.version = SNMP_VERSION_3;
    s.securityName = user.data();
    s.securityNameLen = user.size();
    s.securityLevel = SNMP_SEC_LEVEL_AUTHPRIV;
    if (IEquals(creds.v3_auth_protocol, "MD5")) {
      s.securityAuthProto = const_cast<oid*>(usmHMACMD5AuthProtocol);
      s.securityAuthProtoLen = OID_LENGTH(usmHMACMD5AuthProtocol);
    } else if (IEquals(creds.v3_auth_protocol, "SHA-256")) {
      s.securityAuthProto = const_cast<oid*>(usmHMAC192SHA256AuthProtocol);
      s.securityAuthProtoLen = OID_LENGTH(usmHMAC192SHA256AuthProtocol);
    } else {
      s.securityAuthProto = const_cast<oid*>(usmHMACSHA1AuthProtocol);
      s.securityAuthProtoLen = OID_LENGTH(usmHMACSHA1AuthProtocol);
    }
    if (IEquals(creds.v3_priv_protocol, "DES")) {
      s.securityPrivProto = const_cast<oid*>(usmDESPrivProtocol);
      s.securityPrivProtoLen = OID_LENGTH(usmDESPrivProtocol);
    } else {
      s.securityPrivProto = const_cast<oid*>(usmAESPrivProtocol);
      s.securityPrivProtoLen = OID_LENGTH(usmAESPrivProtocol);
    }
    s.securityAuthKeyLen = USM_AUTH_KU_LEN;
    std::string auth = creds.v3_auth_pass, priv = creds.v3_priv_pass;
    if (generate_Ku(s.securityAuthProto, static_cast<u_int>(s.securityAuthProtoLen),
                    reinterpret_cast<const u_char*>(auth.data()), auth.size(), s.securityAuthKey,
                    &s.securityAuthKeyLen) != SNMPERR_SUCCESS)
      return Status::InvalidArgument("cannot derive the SNMP v3 authentication key from --v3-auth");
    s.securityPrivKeyLen = USM_PRIV_KU_LEN;
    if (generate_Ku(s.securityAuthProto, static_cast<u_int>(s.securityAuthProtoLen),
                    reinterpret_cast<const u_char*>(priv.data()), priv.size(), s.securityPrivKey,
                    &s.securityPrivKeyLen) != SNMPERR_SUCCESS)
      return Status::InvalidArgument("cannot derive the SNMP v3 privacy key from --v3-priv");
  }
  void* handle = snmp_sess_open(&s);
  if (!handle) {
    int liberr = 0, syserr = 0;
    char* msg = nullptr;
    snmp_error(&s, &liberr, &syserr, &msg);
    std::string why = msg ? msg : "unknown error";
    free(msg);
    return Status::IoError(fmt::format("{}: cannot open an SNMP session: {}", where, why));
  }
  return std::unique_ptr<SnmpSource>(
      new NetSnmpSource(handle, where, transport.max_repetitions, creds.version == SnmpVersion::kV3));
}

}  // namespace topotune::discovery
