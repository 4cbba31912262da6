// A real topotuned for tests: started as a child process on loopback with
// port 0 and a temporary database, found through its --port-file, stopped
// with SIGTERM (or killed with SIGKILL for crash tests). The child's log goes
// to <dir>/topotuned.log, which a failing test prints.
//
// Thread-safety: one thread drives a DaemonProcess; channels it hands out
// may be used from many.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "proto/limits.h"

extern char** environ;

namespace topotune::testing {

// A directory under /tmp, removed with its contents at the end of the scope.
class ScratchDir {
 public:
  ScratchDir() {
    char tmpl[] = "/tmp/topotune-daemon-test-XXXXXX";
    path_ = mkdtemp(tmpl) ? tmpl : "";
  }
  ~ScratchDir() {
    std::error_code ec;
    if (!std::getenv("TOPOTUNE_KEEP_TEST_DIRS")) std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline std::string ReadWhole(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class DaemonProcess {
 public:
  // `dir` holds the database (topotune.db), the port file and the log.
  DaemonProcess(std::string binary, std::string dir) : binary_(std::move(binary)), dir_(std::move(dir)) {}
  ~DaemonProcess() {
    if (pid_ > 0) Kill(SIGKILL);
  }
  DaemonProcess(const DaemonProcess&) = delete;
  DaemonProcess& operator=(const DaemonProcess&) = delete;

  std::string database() const { return dir_ + "/topotune.db"; }
  std::string log_path() const { return dir_ + "/topotuned.log"; }
  std::string log() const { return ReadWhole(log_path()); }
  int grpc_port() const { return grpc_port_; }
  int metrics_port() const { return metrics_port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(grpc_port_); }
  pid_t pid() const { return pid_; }

  // The gRPC address the next Start listens on: 127.0.0.1:<port>. The default
  // 0 lets the kernel choose; a fixed port lets a test restart the daemon
  // where its clients already dial (topotuned takes --listen only once, so
  // `extra` cannot override it).
  void set_listen_port(int port) { listen_port_ = port; }

  // Starts topotuned with --listen on 127.0.0.1 and the port of
  // set_listen_port (0 unless set), --metrics-listen on port 0, --database,
  // --port-file, and `extra` flags; waits until it serves. False (with the
  // log in `error`) when it exits or does not come up within 20 s.
  bool Start(const std::vector<std::string>& extra, std::string* error) {
    std::string ports = dir_ + "/ports";
    std::filesystem::remove(ports);
    std::string listen = "127.0.0.1:" + std::to_string(listen_port_);
    std::vector<std::string> args = {binary_,    "--listen",    listen, "--metrics-listen", "127.0.0.1:0", "--database",
                                     database(), "--port-file", ports,  "--log-level",      "debug"};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log_path().c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    int rc = posix_spawn(&pid_, binary_.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
      *error = "cannot start " + binary_;
      pid_ = -1;
      return false;
    }
    for (int i = 0; i < 400; ++i) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        *error = "topotuned exited with status " + std::to_string(exit_status_) + ":\n" + log();
        return false;
      }
      std::ifstream in(ports);
      std::string line;
      while (std::getline(in, line)) {
        if (line.starts_with("grpc=")) grpc_port_ = std::stoi(line.substr(5));
        if (line.starts_with("metrics=")) metrics_port_ = std::stoi(line.substr(8));
      }
      if (grpc_port_ > 0) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    *error = "topotuned did not come up in 20 s:\n" + log();
    return false;
  }

  // Sends `sig` and waits for the exit; returns the exit status (128 + signal
  // when killed by one).
  int Kill(int sig) {
    if (pid_ <= 0) return exit_status_;
    kill(pid_, sig);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    grpc_port_ = 0;
    exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return exit_status_;
  }

  std::shared_ptr<grpc::Channel> Channel() const {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(v1::limits::kMaxPlanResponseBytes);
    return grpc::CreateCustomChannel(address(), grpc::InsecureChannelCredentials(), args);
  }

 private:
  std::string binary_, dir_;
  pid_t pid_ = -1;
  int listen_port_ = 0;
  int grpc_port_ = 0, metrics_port_ = 0;
  int exit_status_ = -1;
};

// The body of http://127.0.0.1:<port><path>, or "" on any error or a status
// other than 200 (enough for /metrics: HTTP/1.0, the server closes the
// connection after the body; a 10 s receive timeout).
inline std::string HttpGet(int port, const std::string& path) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return "";
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval timeout{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  std::string response;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    std::string request = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size())) {
      char buf[65536];
      for (ssize_t n; (n = recv(fd, buf, sizeof(buf), 0)) > 0;) response.append(buf, static_cast<size_t>(n));
    }
  }
  close(fd);
  size_t body = response.find("\r\n\r\n");
  if (!response.starts_with("HTTP/1.") || response.find(" 200 ") > response.find("\r\n") || body == std::string::npos)
    return "";
  return response.substr(body + 4);
}

// A client context with a deadline and, when `token` is not empty, the bearer token.
inline std::unique_ptr<grpc::ClientContext> Context(const std::string& token = "", double seconds = 10) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000)));
  if (!token.empty()) ctx->AddMetadata("authorization", "Bearer " + token);
  return ctx;
}

}  // namespace topotune::testing
