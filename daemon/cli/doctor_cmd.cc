// `topotune doctor` (doctor_cmd.h): the checks, their findings and advice,
// and the two renderings.
#include "daemon/cli/doctor_cmd.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <future>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <sstream>

#include "daemon/cli/db_cmd.h"
#include "daemon/discovery/snmp_source.h"
#include "daemon/topotuned/snmp_config.h"
#include "proto/limits.h"
#include "proto/names.h"
#include "tuner/topology_io.h"

namespace topotune::cli {

namespace {

using Level = DoctorCheck::Level;
using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

std::string MsOneDecimal(double seconds) { return fmt::format("{:.1f} ms", seconds * 1000); }

// "3 h", "12 min", "40 s".
std::string Age(double seconds) {
  if (seconds >= 7200) return fmt::format("{:.0f} h", seconds / 3600);
  if (seconds >= 120) return fmt::format("{:.0f} min", seconds / 60);
  return fmt::format("{:.0f} s", seconds);
}

// A listen address as a client dials it: a wildcard host becomes loopback.
std::string DialAddress(const std::string& listen) {
  if (listen.starts_with("0.0.0.0:")) return "127.0.0.1:" + listen.substr(8);
  if (listen.starts_with("[::]:")) return "[::1]:" + listen.substr(5);
  if (listen.starts_with(":")) return "127.0.0.1" + listen;
  return listen;
}

// Splits "HOST:PORT" or "[V6]:PORT".
std::optional<std::pair<std::string, std::string>> SplitHostPort(const std::string& address) {
  size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon + 1 >= address.size()) return std::nullopt;
  std::string host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return std::pair{host, address.substr(colon + 1)};
}

// GET http://ADDRESS/metrics with a deadline for the whole exchange. The body,
// or an error saying what failed.
StatusOr<std::string> HttpGetMetrics(const std::string& address, double timeout_s) {
  auto hp = SplitHostPort(address);
  if (!hp) return Status::InvalidArgument(fmt::format("'{}' is not HOST:PORT", address));
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (int rc = getaddrinfo(hp->first.c_str(), hp->second.c_str(), &hints, &res); rc != 0)
    return Status::IoError(fmt::format("{}: {}", address, gai_strerror(rc)));
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  auto remaining_ms = [&] {
    return static_cast<int>(
        std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count()));
  };
  int fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    freeaddrinfo(res);
    return Status::IoError(fmt::format("socket: {}", std::strerror(errno)));
  }
  std::string failure;
  int rc = connect(fd, res->ai_addr, res->ai_addrlen);
  freeaddrinfo(res);
  pollfd p{fd, POLLOUT, 0};
  if (rc != 0 && errno != EINPROGRESS) {
    failure = std::strerror(errno);
  } else if (rc != 0) {
    if (poll(&p, 1, remaining_ms()) <= 0) {
      failure = fmt::format("no connection within {:.1f} s", timeout_s);
    } else {
      int so_error = 0;
      socklen_t len = sizeof so_error;
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &len);
      if (so_error != 0) failure = std::strerror(so_error);
    }
  }
  std::string response;
  if (failure.empty()) {
    const std::string request = fmt::format("GET /metrics HTTP/1.0\r\nHost: {}\r\n\r\n", address);
    if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request.size())) {
      failure = fmt::format("send: {}", std::strerror(errno));
    }
    char buf[65536];
    while (failure.empty()) {
      p = {fd, POLLIN, 0};
      if (poll(&p, 1, remaining_ms()) <= 0) {
        failure = fmt::format("no complete answer within {:.1f} s", timeout_s);
        break;
      }
      ssize_t n = recv(fd, buf, sizeof buf, 0);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (n < 0) failure = fmt::format("recv: {}", std::strerror(errno));
      if (n <= 0) break;
      response.append(buf, static_cast<size_t>(n));
      if (response.size() > (size_t{64} << 20)) failure = "more than 64 MiB";
    }
  }
  close(fd);
  if (!failure.empty()) return Status::IoError(fmt::format("{}: {}", address, failure));
  size_t body = response.find("\r\n\r\n");
  size_t eol = response.find("\r\n");
  if (!response.starts_with("HTTP/1.") || body == std::string::npos)
    return Status::IoError(fmt::format("{}: not an HTTP answer", address));
  if (response.substr(0, eol).find(" 200") == std::string::npos)
    return Status::IoError(fmt::format("{}: {}", address, response.substr(0, eol)));
  return response.substr(body + 4);
}

// The value of the sample `name` (with `label`, e.g. result="ok", when not
// empty) in a Prometheus text exposition; nullopt when absent.
std::optional<double> MetricValue(const std::string& text, std::string_view name, std::string_view label = "") {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.starts_with(name) || line.size() <= name.size()) continue;
    char next = line[name.size()];
    if (next != ' ' && next != '{') continue;
    if (!label.empty() && line.find(label) == std::string::npos) continue;
    size_t space = line.rfind(' ');
    try {
      return std::stod(line.substr(space + 1));
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

double Percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

class Doctor {
 public:
  Doctor(const DoctorArgs& args, std::ostream& err) : args_(args), err_(err) {}
  int Run(std::ostream& out);

 private:
  void Add(Level level, std::string name, std::string finding, std::string action = "") {
    checks_.push_back({level, std::move(name), std::move(finding), std::move(action)});
  }
  void CheckConfig();
  bool CheckDaemon();  // False when topotuned cannot be reached.
  void CheckMetrics();
  void CheckDatabase();
  void CheckSnmp();
  void CheckDiscovery();
  void CheckAgents();
  void CheckTuning();
  void CheckPlanLatency();
  // One RPC through conn_; on failure its message (what Connection prints).
  int Call(std::string_view rpc, const std::function<grpc::Status(grpc::ClientContext*)>& call, std::string* error);

  const DoctorArgs& args_;
  std::ostream& err_;
  std::vector<DoctorCheck> checks_;
  daemon::Config config_;
  bool config_from_file_ = false;
  ServerOptions server_;
  std::unique_ptr<Connection> conn_;
  std::optional<v1::GetTopologyResponse> topology_;
  std::optional<std::string> metrics_;  // The /metrics text, when it answered.
  std::string metrics_error_;
};

int Doctor::Call(std::string_view rpc, const std::function<grpc::Status(grpc::ClientContext*)>& call,
                 std::string* error) {
  std::ostringstream msg;
  int code = conn_->Call(rpc, call, msg);
  std::string text = msg.str();
  // Connection's first line is the failure; its hints follow.
  if (size_t nl = text.find('\n'); nl != std::string::npos) text.resize(nl);
  if (text.starts_with("topotune: ")) text = text.substr(10);
  *error = text;
  return code;
}

void Doctor::CheckConfig() {
  std::error_code ec;
  const std::string path = args_.config_path.empty() ? kDefaultConfigPath : args_.config_path;
  config_from_file_ = !args_.config_path.empty() || std::filesystem::exists(kDefaultConfigPath, ec);
  auto loaded = LoadDaemonConfig(args_.config_path);
  if (!loaded.ok()) {
    Add(Level::kFail, "config", loaded.status().message(),
        fmt::format("fix {}; topotuned refuses to start with it (see deploy/topotuned.yaml for every key)", path));
    config_ = *daemon::ParseConfig("{}", "(defaults)");
    config_from_file_ = false;
    return;
  }
  config_ = std::move(loaded).value();
  if (Status st = daemon::ValidateConfig(config_); !st.ok()) {
    Add(Level::kFail, "config", st.message(), fmt::format("fix {}; topotuned refuses to start with it", path));
    return;
  }
  if (!config_from_file_) {
    Add(Level::kWarn, "config", fmt::format("{} does not exist: checking topotuned's built-in defaults", path),
        "give --config FILE when topotuned runs with another configuration");
    return;
  }
  Add(Level::kOk, "config",
      fmt::format("{} parsed (listen {}, metrics {}, {} discovery seed{})", config_.source, config_.listen,
                  config_.metrics_listen, config_.discovery.seeds.size(),
                  config_.discovery.seeds.size() == 1 ? "" : "s"));
}

bool Doctor::CheckDaemon() {
  ServerOptions o = args_.server;
  o.timeout_s = args_.timeout_s;
  if (o.server.empty() && config_from_file_) o.server = DialAddress(config_.listen);
  if (o.token_file.empty() && config_from_file_) o.token_file = config_.token_file;
  if (o.tls_ca.empty() && config_from_file_ && !config_.tls_cert.empty())
    o.tls_ca = config_.tuning.agent_tls_ca.empty() ? config_.tls_cert : config_.tuning.agent_tls_ca;
  server_ = o.Resolved();
  int code = kExitOk;
  std::ostringstream usage;
  conn_ = Connection::Open(server_, usage, &code);
  if (!conn_) {
    std::string text = usage.str();
    if (text.starts_with("topotune: ")) text = text.substr(10);
    while (!text.empty() && text.back() == '\n') text.pop_back();
    Add(Level::kFail, "daemon", text, "fix the connection options (--server, --token-file, --tls-ca)");
    return false;
  }
  v1::GetTopologyResponse topo;
  std::string error;
  const auto start = Clock::now();
  code = Call(
      "GetTopology",
      [&](grpc::ClientContext* c) { return conn_->admin().GetTopology(c, v1::GetTopologyRequest(), &topo); }, &error);
  const double took = SecondsSince(start);
  const std::string tls = server_.tls_ca.empty() ? "" : " (TLS)";
  if (code == kExitUnavailable) {
    Add(Level::kFail, "daemon", error,
        fmt::format("is topotuned running? systemctl status topotuned; journalctl -u topotuned. Else give "
                    "--server HOST:PORT{}",
                    server_.tls_ca.empty() ? "" : " and --tls-ca"));
    conn_.reset();
    return false;
  }
  if (code != kExitOk) {
    if (error.find("UNAVAILABLE") != std::string::npos) {
      Add(Level::kWarn, "daemon",
          fmt::format("topotuned at {}{} answers in {} but has no topology yet ({})", server_.server, tls,
                      MsOneDecimal(took), error),
          "set topology_file or discovery.seeds in the configuration, or run 'topotune discover --remote'");
    } else {
      Add(Level::kFail, "daemon",
          fmt::format("topotuned at {}{} answered GetTopology with {}", server_.server, tls, error),
          "see topotuned's log: journalctl -u topotuned");
    }
    return true;
  }
  topology_ = topo;
  Add(Level::kOk, "daemon",
      fmt::format("topotuned at {}{} answers in {}; topology version {} ({} switches, {} hosts, from {})",
                  server_.server, tls, MsOneDecimal(took), topo.version(), topo.num_switches(), topo.num_hosts(),
                  topo.origin() == v1::TOPOLOGY_ORIGIN_DISCOVERY ? "discovery" : topo.source()));
  return true;
}

void Doctor::CheckMetrics() {
  std::string address = args_.metrics;
  if (address.empty()) {
    if (config_.metrics_listen.empty()) {
      Add(Level::kWarn, "metrics", "no metrics_listen address configured",
          "set metrics_listen in the configuration to have Prometheus scrape topotuned");
      return;
    }
    address = DialAddress(config_.metrics_listen);
  }
  const auto start = Clock::now();
  auto body = HttpGetMetrics(address, args_.timeout_s);
  if (!body.ok()) {
    metrics_error_ = body.status().message();
    Add(Level::kWarn, "metrics", fmt::format("/metrics does not answer: {}", metrics_error_),
        "check metrics_listen in the configuration (or give --metrics HOST:PORT) and that topotuned runs");
    return;
  }
  metrics_ = std::move(body).value();
  Add(Level::kOk, "metrics",
      fmt::format("http://{}/metrics answers in {} ({} bytes)", address, MsOneDecimal(SecondsSince(start)),
                  metrics_->size()));
}

void Doctor::CheckDatabase() {
  const std::string path = !args_.database.empty()
                               ? args_.database
                               : (config_.database.empty() ? daemon::DefaultDatabasePath() : config_.database);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    Add(Level::kWarn, "database", fmt::format("{} does not exist here", path),
        "run doctor on topotuned's node (as root or topotuned's user), or give --database PATH; topotuned "
        "creates it at its first start");
    return;
  }
  if (::access(path.c_str(), R_OK) != 0) {
    Add(Level::kWarn, "database", fmt::format("{} is not readable here: {}", path, std::strerror(errno)),
        "run doctor as root or as topotuned's user to check the database");
    return;
  }
  auto report = InspectDatabase(path, /*integrity=*/true, /*rows=*/false);
  if (!report.ok()) {
    Add(Level::kFail, "database", report.status().message(),
        "stop topotuned and restore the last backup: topotune db restore --force BACKUP (see topotune db --help)");
    return;
  }
  if (report->integrity != "ok") {
    Add(Level::kFail, "database", fmt::format("{}: integrity_check: {}", path, report->integrity),
        "stop topotuned and restore the last backup: topotune db restore --force BACKUP");
    return;
  }
  const std::string facts =
      fmt::format("{}: integrity ok, schema version {} (this topotune knows {}), {} + {} WAL, journal {}", path,
                  report->schema_version, report->latest_schema_version, FormatFileSize(report->file_bytes),
                  FormatFileSize(report->wal_bytes), report->journal_mode);
  if (report->schema_version > report->latest_schema_version) {
    Add(Level::kFail, "database", facts + ": newer than this topotune",
        "this topotune is older than the database: upgrade the topotune package (topotuned refuses the database "
        "otherwise)");
  } else if (report->schema_version < report->latest_schema_version) {
    Add(Level::kWarn, "database", facts + ": migrations pending",
        "restart topotuned of this version to migrate it (back it up first: topotune db backup OUT; "
        "'topotune db info' lists them)");
  } else if (report->journal_mode != "wal") {
    Add(Level::kWarn, "database", facts,
        "topotuned switches the database to WAL at start; has it run on this file yet?");
  } else {
    Add(Level::kOk, "database", facts);
  }
}

// What one seed answered.
struct SeedAnswer {
  std::string seed;
  std::string error;  // Empty when it answered.
  std::string sys_name, chassis;
  int neighbours = 0;
  int port = 0;  // The UDP port asked.
  double seconds = 0;
};

SeedAnswer AskSeed(const std::string& seed, const discovery::SnmpCredentials& creds,
                   discovery::SnmpTransport transport) {
  SeedAnswer a;
  a.seed = seed;
  auto parsed = discovery::ParseAgentAddress(seed, transport.port);
  if (!parsed.ok()) {
    a.error = parsed.status().message();
    return a;
  }
  if (!parsed->port_given) a.seed = parsed->ToString();
  a.port = parsed->port;
  const auto start = Clock::now();
  auto source = discovery::OpenNetSnmp(seed, creds, transport);
  if (!source.ok()) {
    a.error = source.status().message();
    return a;
  }
  const discovery::Oid kSysName = {1, 3, 6, 1, 2, 1, 1, 5};
  const discovery::Oid kLocChassisId = {1, 0, 8802, 1, 1, 2, 1, 3, 2};
  const discovery::Oid kRemChassisId = {1, 0, 8802, 1, 1, 2, 1, 4, 1, 1, 5};
  auto binds = (*source)->Walk({kSysName, kLocChassisId, kRemChassisId});
  a.seconds = SecondsSince(start);
  if (!binds.ok()) {
    a.error = binds.status().message();
    return a;
  }
  for (const discovery::VarBind& b : *binds) {
    if (discovery::HasPrefix(b.oid, kSysName)) {
      a.sys_name = discovery::Printable(discovery::AsText(b.value));
    } else if (discovery::HasPrefix(b.oid, kLocChassisId)) {
      auto mac = discovery::ParseMac(b.value.bytes);
      a.chassis = mac ? discovery::FormatMac(*mac) : discovery::Printable(discovery::AsText(b.value));
    } else if (discovery::HasPrefix(b.oid, kRemChassisId)) {
      ++a.neighbours;
    }
  }
  if (a.sys_name.empty() && a.chassis.empty() && a.neighbours == 0) a.error = "answered, but with no sysName";
  return a;
}

void Doctor::CheckSnmp() {
  const daemon::DiscoveryConfig& d = config_.discovery;
  if (d.seeds.empty()) {
    Add(Level::kWarn, "snmp",
        config_.topology_file.empty()
            ? "no discovery seeds and no topology_file: topotuned has no topology source"
            : fmt::format("no discovery seeds: the static topology file {} is used", config_.topology_file),
        "set discovery.seeds (a switch's address) for SNMP discovery of the switch tree");
    return;
  }
  const discovery::SnmpCredentials creds = daemon::SnmpCredentialsOf(d);
  if (Status st = discovery::ValidateCredentials(creds); !st.ok()) {
    Add(Level::kFail, "snmp", st.message(), "fix discovery.community or discovery.v3_* in the configuration");
    return;
  }
  discovery::SnmpTransport transport = daemon::SnmpTransportOf(d);
  transport.timeout_s = std::min(transport.timeout_s, args_.timeout_s);
  transport.retries = std::min(transport.retries, 1);
  const std::string creds_text =
      d.v3_user.empty() ? "v2c community from discovery.community" : fmt::format("v3 user {}", d.v3_user);
  // At most 16 seeds at a time, each bounded by its timeout and retries.
  constexpr size_t kParallel = 16;
  std::vector<SeedAnswer> answers;
  for (size_t i = 0; i < d.seeds.size(); i += kParallel) {
    std::vector<std::future<SeedAnswer>> batch;
    for (size_t j = i; j < std::min(d.seeds.size(), i + kParallel); ++j)
      batch.push_back(std::async(std::launch::async, AskSeed, d.seeds[j], creds, transport));
    for (auto& f : batch) answers.push_back(f.get());
  }
  for (const SeedAnswer& a : answers) {
    const std::string name = "snmp " + a.seed;
    if (!a.error.empty()) {
      Add(Level::kFail, name, fmt::format("no SNMP answer: {}", a.error),
          fmt::format("check the credentials ({}), the switch's SNMP access list (allow this host), that UDP "
                      "{} reaches it (firewalls), and that its SNMP agent is enabled",
                      creds_text, a.port));
      continue;
    }
    std::string finding = fmt::format(
        "sysName {}, chassis {}, {} LLDP neighbour{} ({})", a.sys_name.empty() ? "(none)" : a.sys_name,
        a.chassis.empty() ? "(none)" : a.chassis, a.neighbours, a.neighbours == 1 ? "" : "s", MsOneDecimal(a.seconds));
    if (a.neighbours == 0) {
      Add(Level::kWarn, name, finding + ": no LLDP neighbours",
          "enable LLDP on the switch and its ports (and lldpd on the hosts); discovery follows LLDP links");
    } else {
      Add(Level::kOk, name, finding);
    }
  }
}

void Doctor::CheckDiscovery() {
  if (config_.discovery.seeds.empty()) return;  // CheckSnmp said so.
  if (!metrics_) {
    Add(Level::kWarn, "discovery", "cannot tell: /metrics does not answer",
        "give --metrics HOST:PORT (topotuned's metrics_listen)");
    return;
  }
  const double ok_runs = MetricValue(*metrics_, "topotune_discovery_runs_total", "result=\"ok\"").value_or(0);
  const double err_runs = MetricValue(*metrics_, "topotune_discovery_runs_total", "result=\"error\"").value_or(0);
  const double last = MetricValue(*metrics_, "topotune_discovery_last_success_timestamp_seconds").value_or(0);
  const double warnings = MetricValue(*metrics_, "topotune_discovery_warnings").value_or(0);
  const double switches = MetricValue(*metrics_, "topotune_discovery_switches").value_or(0);
  const double hosts = MetricValue(*metrics_, "topotune_discovery_hosts").value_or(0);
  const double interval = config_.discovery.interval_s;
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  const std::string runs = fmt::format("{:.0f} ok, {:.0f} failed since topotuned started", ok_runs, err_runs);
  const std::string what = "run 'topotune discover --remote' to see the walk's errors; check the snmp lines above";
  if (ok_runs == 0 && err_runs == 0) {
    Add(Level::kWarn, "discovery", "no discovery has finished yet",
        "wait for the first walk (it starts with topotuned), or run 'topotune discover --remote'");
  } else if (last <= 0) {
    Add(Level::kFail, "discovery", fmt::format("every discovery failed ({})", runs), what);
  } else if (now - last > 2 * interval + 60 && err_runs > 0) {
    Add(Level::kFail, "discovery",
        fmt::format("last success {} ago, interval {}: the runs since failed ({})", Age(now - last), Age(interval),
                    runs),
        what);
  } else if (warnings > 0) {
    Add(Level::kWarn, "discovery",
        fmt::format("last success {} ago ({:.0f} switches, {:.0f} hosts) with {:.0f} warning{}", Age(now - last),
                    switches, hosts, warnings, warnings == 1 ? "" : "s"),
        "'topotune discover --remote' lists them: unresolved ports, switches not walked, hosts without MACs");
  } else {
    Add(Level::kOk, "discovery",
        fmt::format("last success {} ago (interval {}; {:.0f} switches, {:.0f} hosts; {})", Age(now - last),
                    Age(interval), switches, hosts, runs));
  }
}

void Doctor::CheckAgents() {
  v1::ListAgentsResponse resp;
  std::string error;
  int code = Call(
      "ListAgents",
      [&](grpc::ClientContext* c) { return conn_->admin().ListAgents(c, v1::ListAgentsRequest(), &resp); }, &error);
  if (code != kExitOk) {
    Add(Level::kWarn, "agents", fmt::format("cannot list them: {}", error),
        error.find("UNIMPLEMENTED") != std::string::npos ? "topotuned is older than this topotune: upgrade it"
                                                         : "see topotuned's log");
    return;
  }
  std::vector<std::string> strangers;
  for (const v1::AgentSummary& a : resp.agents())
    if (!a.in_topology() && resp.topology_version() > 0) strangers.push_back(a.hostname());
  auto list = [](const auto& names, int total) {
    std::vector<std::string> shown(names.begin(), names.begin() + std::min<int>(static_cast<int>(names.size()), 10));
    return fmt::format("{}{}", fmt::join(shown, ", "), total > 10 ? fmt::format(" and {} more", total - 10) : "");
  };
  std::string finding = fmt::format("{} registered, {} alive", resp.num_agents(), resp.num_alive());
  const int topo_hosts = topology_ ? topology_->num_hosts() : 0;
  if (resp.num_hosts_without_agent() > 0) {
    Add(Level::kFail, "agents",
        fmt::format("{}; {} of {} topology hosts have no live agent: {}", finding, resp.num_hosts_without_agent(),
                    topo_hosts, list(resp.hosts_without_agent(), resp.num_hosts_without_agent())),
        fmt::format("start topotune-agent on them (systemctl start topotune-agent); they must reach {} and "
                    "register under the topology's host names (--hostname){}",
                    server_.server,
                    strangers.empty() ? ""
                                      : fmt::format("; registered names not in the topology: {}",
                                                    list(strangers, static_cast<int>(strangers.size())))));
  } else if (!strangers.empty()) {
    Add(Level::kWarn, "agents",
        fmt::format("{}; agents not in the topology: {}", finding, list(strangers, static_cast<int>(strangers.size()))),
        "an agent's --hostname must be the host's name in the topology");
  } else if (resp.num_agents() == 0) {
    Add(Level::kWarn, "agents", finding + " (and no topology hosts to benchmark)",
        "install and start topotune-agent on the compute nodes");
  } else {
    Add(Level::kOk, "agents",
        fmt::format("{}; every one of the {} topology hosts has a live agent (timeout {} s)", finding, topo_hosts,
                    resp.agent_timeout().seconds()));
  }
}

void Doctor::CheckTuning() {
  if (!topology_) return;
  // The first `page_size` decision tables of `version` in *resp; whether it has any.
  auto list_decisions = [&](int64_t version, int page_size, v1::ListDecisionsResponse* resp, std::string* error) {
    v1::ListDecisionsRequest req;
    req.set_topology_version(version);
    req.set_page_size(page_size);
    int code = Call(
        "ListDecisions", [&](grpc::ClientContext* c) { return conn_->admin().ListDecisions(c, req, resp); }, error);
    return code == kExitOk ? std::optional<bool>(resp->decisions_size() > 0) : std::nullopt;
  };
  auto has_decisions = [&](int64_t version, std::string* error) {
    v1::ListDecisionsResponse resp;
    return list_decisions(version, 1, &resp, error);
  };
  std::string error;
  v1::ListDecisionsResponse tables;  // The current version's (one page).
  auto current = list_decisions(topology_->version(), 1000, &tables, &error);
  if (!current) {
    Add(Level::kWarn, "tuning", fmt::format("cannot list decision tables: {}", error), "see topotuned's log");
    return;
  }
  std::string sweeps;
  double failed = 0;
  if (metrics_) {
    failed = MetricValue(*metrics_, "topotune_tuning_sweeps_total", "result=\"failed\"").value_or(0);
    const double running = MetricValue(*metrics_, "topotune_tuning_sweeps_running").value_or(0);
    const double queued = MetricValue(*metrics_, "topotune_tuning_sweeps_queued").value_or(0);
    sweeps = fmt::format("; sweeps: {:.0f} running, {:.0f} queued, {:.0f} failed since topotuned started", running,
                         queued, failed);
  }
  const std::string start = "tune it: topotune tune start --wait (see topotune tune start --help)";
  if (*current) {
    // Choices whose run failed its A/A control (native measured twice
    // differed with confidence): too noisy to trust.
    std::vector<std::string> noisy;
    for (const v1::Decision& d : tables.decisions())
      for (const v1::SizeChoice& c : d.choices())
        if (c.noisy())
          noisy.push_back(fmt::format("{}{} {} ranks at {}", v1::CollectiveName(d.collective()),
                                      d.pattern() == v1::ALLTOALLV_PATTERN_UNSPECIFIED
                                          ? std::string()
                                          : fmt::format(" ({})", v1::PatternName(d.pattern())),
                                      d.nprocs(), FormatBytes(static_cast<double>(c.msize()))));
    if (!noisy.empty()) {
      Add(Level::kWarn, "tuning",
          fmt::format("the A/A control (native measured twice) differed with confidence at {} measured size(s): {}; "
                      "the choices there rest on a run too noisy to trust",
                      noisy.size(), fmt::join(noisy.begin(), noisy.begin() + std::min<size_t>(noisy.size(), 5), ", ")),
          "tune again when the cluster is quiet (no other jobs on the tuned hosts): " + start +
              "; 'topotune decisions show' marks the noisy sizes");
    } else if (failed > 0) {
      Add(Level::kWarn, "tuning",
          fmt::format("decision tables for topology version {}{}", topology_->version(), sweeps),
          "'topotune tune status ID' shows why a sweep failed; see topotuned's log");
    } else {
      Add(Level::kOk, "tuning", fmt::format("decision tables for topology version {}{}", topology_->version(), sweeps));
    }
    return;
  }
  // Stale: tables of an older version (the last few are enough to say so).
  int64_t stale = 0;
  for (int64_t v = topology_->version() - 1; v >= std::max<int64_t>(1, topology_->version() - 8) && stale == 0; --v) {
    std::string ignored;
    if (has_decisions(v, &ignored).value_or(false)) stale = v;
  }
  if (stale > 0) {
    Add(Level::kWarn, "tuning",
        fmt::format("decision tables are stale: tuned on topology version {}, the topology is now version {}{}", stale,
                    topology_->version(), sweeps),
        "jobs get default plans until the new topology is tuned: " + start);
  } else {
    Add(Level::kWarn, "tuning",
        fmt::format("no decision tables for topology version {}{}", topology_->version(), sweeps),
        "jobs get the MPI library's own choices until then: " + start);
  }
}

void Doctor::CheckPlanLatency() {
  if (!topology_) return;
  auto topo = ParseTopology(topology_->yaml(), fmt::format("topology version {}", topology_->version()));
  if (!topo.ok()) {
    Add(Level::kWarn, "plan latency", fmt::format("cannot read the served topology: {}", topo.status().message()));
    return;
  }
  v1::GetPlanRequest req;
  for (const Node& n : topo->nodes())
    if (n.kind == NodeKind::kHost && req.rank_hosts_size() < v1::limits::kMaxRanks) req.add_rank_hosts(n.name);
  if (req.rank_hosts_size() < 2) {
    Add(Level::kWarn, "plan latency", "the topology has fewer than 2 hosts: nothing to plan");
    return;
  }
  req.add_collectives(v1::COLLECTIVE_ALLTOALL);
  std::string error;
  v1::GetPlanResponse resp;
  auto call = [&] {
    return Call(
        "GetPlan", [&](grpc::ClientContext* c) { return conn_->plans().GetPlan(c, req, &resp); }, &error);
  };
  const auto cold_start = Clock::now();
  if (call() != kExitOk) {
    Add(Level::kFail, "plan latency", fmt::format("GetPlan for {} hosts failed: {}", req.rank_hosts_size(), error),
        "see topotuned's log; 'topotune plan show --hosts ...' shows the same call");
    return;
  }
  const double cold = SecondsSince(cold_start);
  std::vector<double> times;
  for (int i = 0; i < args_.plan_calls; ++i) {
    const auto start = Clock::now();
    if (call() != kExitOk) {
      Add(Level::kFail, "plan latency", fmt::format("GetPlan call {} failed: {}", i + 2, error), "see topotuned's log");
      return;
    }
    times.push_back(SecondsSince(start));
  }
  const double p50 = Percentile(times, 0.5), p99 = Percentile(times, 0.99);
  const std::string finding =
      fmt::format("GetPlan alltoall over {} hosts x 1 rank: p50 {}, p99 {} of {} calls (first call {}); threshold {}",
                  req.rank_hosts_size(), MsOneDecimal(p50), MsOneDecimal(p99), times.size(), MsOneDecimal(cold),
                  MsOneDecimal(args_.plan_threshold_ms / 1000));
  if (p99 * 1000 > args_.plan_threshold_ms) {
    Add(Level::kWarn, "plan latency", finding,
        "jobs wait this long at MPI_Init: check topotuned's CPU load and plan_cache_bytes, and the network between "
        "here and topotuned");
  } else {
    Add(Level::kOk, "plan latency", finding);
  }
}

int Doctor::Run(std::ostream& out) {
  CheckConfig();
  const bool reachable = CheckDaemon();
  if (reachable) CheckMetrics();
  CheckDatabase();
  CheckSnmp();
  if (reachable && conn_) {
    CheckDiscovery();
    CheckAgents();
    CheckTuning();
    CheckPlanLatency();
  }
  int code = kExitOk;
  if (!reachable) {
    code = kExitUnavailable;
  } else if (std::any_of(checks_.begin(), checks_.end(),
                         [](const DoctorCheck& c) { return c.level == Level::kFail; })) {
    code = kExitFailure;
  }
  out << (args_.json ? FormatDoctorJson(checks_, code) : FormatDoctorReport(checks_));
  if (!reachable && !args_.json) err_ << "topotune: doctor: topotuned cannot be reached; only the local checks ran\n";
  return code;
}

}  // namespace

const char* LevelName(DoctorCheck::Level level) {
  switch (level) {
    case Level::kOk:
      return "ok";
    case Level::kWarn:
      return "warn";
    case Level::kFail:
      return "FAIL";
  }
  return "?";
}

std::string FormatDoctorReport(const std::vector<DoctorCheck>& checks) {
  std::string out;
  int counts[3] = {0, 0, 0};
  for (const DoctorCheck& c : checks) {
    ++counts[static_cast<int>(c.level)];
    out += fmt::format("{:<4}  {}: {}\n", LevelName(c.level), c.name, c.finding);
    if (!c.action.empty()) out += fmt::format("      -> {}\n", c.action);
  }
  out += fmt::format("{} ok, {} warn, {} FAIL\n", counts[0], counts[1], counts[2]);
  return out;
}

std::string FormatDoctorJson(const std::vector<DoctorCheck>& checks, int exit_code) {
  nlohmann::ordered_json j;
  j["checks"] = nlohmann::ordered_json::array();
  int counts[3] = {0, 0, 0};
  for (const DoctorCheck& c : checks) {
    ++counts[static_cast<int>(c.level)];
    j["checks"].push_back(
        {{"check", c.name}, {"status", LevelName(c.level)}, {"finding", c.finding}, {"action", c.action}});
  }
  j["ok"] = counts[0];
  j["warn"] = counts[1];
  j["fail"] = counts[2];
  j["exit"] = exit_code;
  return j.dump() + "\n";
}

void AddDoctorCommand(CLI::App& app, DoctorArgs* args) {
  CLI::App* cmd = app.add_subcommand("doctor", "Check a topotune installation and say what is wrong");
  args->command = cmd;
  args->description =
      "Checks a topotune installation, one line per check: 'ok|warn|FAIL  CHECK: FINDING', and for warn and\n"
      "FAIL a line '-> ' saying what to do. The checks, in order:\n"
      "  config        topotuned's configuration parses (else the parser's message, file and line)\n"
      "  daemon        topotuned answers GetTopology over gRPC: how fast, the topology version\n"
      "  metrics       /metrics answers on metrics_listen\n"
      "  database      the file exists here and is readable, PRAGMA integrity_check (read-only: never blocks\n"
      "                the running topotuned), its schema version against this binary's, size, WAL mode;\n"
      "                a database that is not readable here (doctor on another node) is a warning\n"
      "  snmp SEED     each discovery seed answers an SNMP walk of sysName, lldpLocChassisId and the LLDP\n"
      "                neighbours (lldpRemTable), with the configured v2c community or v3 credentials\n"
      "  discovery     the daemon's last successful discovery against its interval, failed runs, warnings\n"
      "  agents        registered and alive agents (Admin.ListAgents), topology hosts with no live agent\n"
      "  tuning        decision tables for the current topology version, stale or missing; failed sweeps;\n"
      "                choices whose A/A control differed (too noisy to trust)\n"
      "  plan latency  --plan-calls GetPlan calls (alltoall, every topology host, one rank each): p50 and\n"
      "                p99 against --plan-latency-threshold (the first, cold call is shown apart)\n"
      "\n"
      "What to check comes from topotuned's configuration (--config): the gRPC address (listen; a wildcard\n"
      "address is asked on loopback), metrics_listen, database, token_file, tls_cert (as the CA), and the\n"
      "discovery seeds and SNMP credentials. The flags override each. Every network check has the --timeout\n"
      "deadline (SNMP: the configured timeout when shorter, one retry), so doctor never hangs.\n";
  cmd->add_option("--config", args->config_path,
                  fmt::format("topotuned's configuration (default {} when it exists)", kDefaultConfigPath))
      ->type_name("FILE");
  cmd->add_option("--server", args->server.server,
                  "topotuned's gRPC address (default: the configuration's listen, else $TOPOTUNE_SERVER, else "
                  "127.0.0.1:50051)")
      ->type_name("HOST:PORT");
  cmd->add_option("--token-file", args->server.token_file,
                  "The bearer token file (default: the configuration's token_file; doctor's calls are reads)")
      ->type_name("FILE");
  cmd->add_option("--tls-ca", args->server.tls_ca, "Use TLS, trusting these CA certificates (default: tls_cert)")
      ->type_name("FILE");
  cmd->add_option("--metrics", args->metrics, "topotuned's /metrics address (default: metrics_listen)")
      ->type_name("HOST:PORT");
  cmd->add_option("--database", args->database, "The database file (default: the configuration's database)")
      ->type_name("PATH");
  cmd->add_option("--timeout", args->timeout_s, "Deadline of each network check")
      ->type_name("SECONDS")
      ->check(CLI::Range(0.1, 600.0))
      ->capture_default_str();
  cmd->add_option("--plan-calls", args->plan_calls, "GetPlan calls timed for the plan latency")
      ->type_name("N")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  cmd->add_option("--plan-latency-threshold", args->plan_threshold_ms, "Warn when GetPlan's p99 is above this")
      ->type_name("MS")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_flag("--json", args->json, "Print one JSON object: {\"checks\":[{check,status,finding,action}],...}");
  cmd->footer(
      "EXIT STATUS\n"
      "  0   no check FAILed (warnings alone exit 0)\n"
      "  1   at least one check FAILed\n"
      "  2   usage error\n"
      "  69  topotuned cannot be reached at all; the local checks (config, database, snmp) are still printed\n"
      "\n"
      "EXAMPLES\n"
      "  topotune doctor\n"
      "  topotune doctor --config /etc/topotune/topotuned.yaml --timeout 2\n"
      "  topotune doctor --server head01:50051 --metrics head01:9464 --json\n"
      "  topotune doctor --plan-calls 100 --plan-latency-threshold 20\n");
}

int RunDoctor(const DoctorArgs& args, std::ostream& out, std::ostream& err) {
  if (!args.server.server.empty()) {
    if (Status st = CheckServerAddress(args.server.server); !st.ok()) {
      err << "topotune: --server: " << st.message() << "\nRun 'topotune doctor --help' for usage.\n";
      return kExitUsage;
    }
  }
  Doctor doctor(args, err);
  return doctor.Run(out);
}

}  // namespace topotune::cli
