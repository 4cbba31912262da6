// topotuned: the topotune daemon on the head node. Flags override the YAML
// configuration (deploy/topotuned.yaml documents every key); with neither it
// serves on loopback with a database in the default place.
#include <fmt/format.h>
#include <prometheus/exposer.h>
#include <prometheus/registry.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "daemon/topotuned/config.h"
#include "daemon/topotuned/core.h"
#include "daemon/topotuned/metrics.h"
#include "daemon/topotuned/server.h"

namespace {

constexpr const char* kDefaultConfig = "/etc/topotune/topotuned.yaml";

int Fail(const std::string& message) {
  spdlog::critical("{}", message);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  using topotune::daemon::Config;
  CLI::App app("topotuned: discovers the switch tree, tunes MPI collectives on it and serves plans to MPI jobs");
  app.set_version_flag("--version", TOPOTUNE_VERSION);
  std::string config_path, listen, metrics_listen, database, topology_file, token_file, log_level, port_file;
  app.add_option("-c,--config", config_path,
                 fmt::format("YAML configuration; default {} when it exists, else built-in defaults", kDefaultConfig));
  app.add_option("--listen", listen, "gRPC address HOST:PORT (port 0: any free port); overrides `listen`");
  app.add_option("--metrics-listen", metrics_listen,
                 "Prometheus /metrics address HOST:PORT; overrides `metrics_listen`");
  app.add_option("--database", database, "SQLite database file; overrides `database`");
  app.add_option("--topology-file", topology_file, "static topology (YAML topology file); overrides `topology_file`");
  app.add_option("--token-file", token_file, "bearer token for agent and admin writes; overrides `token_file`");
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error, critical or off; overrides `log_level`");
  app.add_option("--port-file", port_file,
                 "write the bound ports here as grpc=PORT and metrics=PORT lines (for scripts)");
  app.footer(
      "Signals: SIGTERM and SIGINT stop it gracefully (running calls get 5 s; a running benchmark job is killed).\n"
      "Exit status: 0 after a graceful stop, 1 when it cannot start (bad configuration, database, address), 2 on a "
      "usage error.");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e%z %^%l%$ %v");

  // Configuration: the file, then the flags.
  topotune::StatusOr<Config> loaded = Config{};
  if (!config_path.empty()) {
    loaded = topotune::daemon::LoadConfig(config_path);
  } else if (std::filesystem::exists(kDefaultConfig)) {
    loaded = topotune::daemon::LoadConfig(kDefaultConfig);
  }
  if (!loaded.ok()) return Fail(loaded.status().message());
  Config config = std::move(*loaded);
  if (config.source.empty()) config.source = "(defaults)";
  if (!listen.empty()) config.listen = listen;
  if (!metrics_listen.empty()) config.metrics_listen = metrics_listen;
  if (!database.empty()) config.database = database;
  if (!topology_file.empty()) config.topology_file = topology_file;
  if (!token_file.empty()) config.token_file = token_file;
  if (!log_level.empty()) config.log_level = log_level;
  if (config.database.empty()) config.database = topotune::daemon::DefaultDatabasePath();
  if (auto s = topotune::daemon::ValidateConfig(config); !s.ok()) return Fail(s.message());
  spdlog::set_level(spdlog::level::from_str(config.log_level));

  std::string token;
  if (!config.token_file.empty()) {
    std::ifstream in(config.token_file);
    if (!in || !std::getline(in, token) || token.empty())
      return Fail(fmt::format("{}: cannot read a token from the token file (token_file)", config.token_file));
    while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) token.pop_back();
  }

  // Every thread started from here on inherits the blocked signals; the main
  // thread takes them with sigwait.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  if (config.database != ":memory:") {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(config.database).parent_path(), ec);
  }
  auto store = topotune::db::Store::Open(config.database);
  if (!store.ok()) return Fail(store.status().message());
  spdlog::info("topotuned {} (config {}, database {}, schema version {})", TOPOTUNE_VERSION, config.source,
               config.database, store->SchemaVersion());

  topotune::daemon::Metrics metrics;
  std::unique_ptr<prometheus::Exposer> exposer;
  try {
    exposer = std::make_unique<prometheus::Exposer>(config.metrics_listen);
  } catch (const std::exception& e) {
    return Fail(fmt::format("cannot serve metrics on {}: {}", config.metrics_listen, e.what()));
  }
  exposer->RegisterCollectable(std::weak_ptr<prometheus::Collectable>(metrics.registry()));
  int metrics_port = exposer->GetListeningPorts().empty() ? 0 : exposer->GetListeningPorts()[0];
  spdlog::info("serving Prometheus metrics on http://{}:{}/metrics",
               topotune::daemon::ListenHost(config.metrics_listen), metrics_port);

  topotune::daemon::CoreOptions options;
  options.token = token;
  topotune::daemon::Core core(config, std::move(*store), &metrics, options);
  if (auto s = core.Start(); !s.ok()) return Fail(s.message());
  auto server = topotune::daemon::Server::Start(&core);
  if (!server.ok()) {
    core.Stop();
    return Fail(server.status().message());
  }
  if (!port_file.empty()) {
    std::string tmp = port_file + ".tmp";
    std::ofstream(tmp) << "grpc=" << (*server)->port() << "\nmetrics=" << metrics_port << "\n";
    std::filesystem::rename(tmp, port_file);
  }

  int sig = 0;
  sigwait(&signals, &sig);
  spdlog::info("{}: shutting down", strsignal(sig));
  (*server)->Shutdown(5);
  spdlog::debug("gRPC server stopped");
  core.Stop();
  spdlog::info("stopped");
  return 0;
}
