#include "agent/process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <sstream>

extern char** environ;

namespace topotune::agent {
namespace {

// Both ends close-on-exec, so that other children never inherit them.
bool MakePipe(int fds[2]) { return pipe2(fds, O_CLOEXEC) == 0; }

void CloseAll(std::initializer_list<int> fds) {
  for (int fd : fds)
    if (fd >= 0) close(fd);
}

}  // namespace

StatusOr<ProcessResult> RunProcess(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                                   size_t max_output) {
  if (argv.empty()) return Status::InvalidArgument("RunProcess: empty argv");
  int out_pipe[2] = {-1, -1};
  int err_pipe[2] = {-1, -1};
  if (!MakePipe(out_pipe)) return Status::IoError(fmt::format("pipe: {}", std::strerror(errno)));
  if (!MakePipe(err_pipe)) {
    CloseAll({out_pipe[0], out_pipe[1]});
    return Status::IoError(fmt::format("pipe: {}", std::strerror(errno)));
  }

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  // The child must not inherit the agent's blocked SIGTERM/SIGINT.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  // posix_spawn's argv is char* const[] for C's sake; the strings are not
  // written to.
  std::vector<char*> cargv(argv.size() + 1, nullptr);
  std::transform(argv.begin(), argv.end(), cargv.begin(),
                 [](const std::string& a) { return const_cast<char*>(a.c_str()); });

  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0].c_str(), &actions, &attr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  CloseAll({out_pipe[1], err_pipe[1]});
  if (rc != 0) {
    CloseAll({out_pipe[0], err_pipe[0]});
    return Status::IoError(fmt::format("cannot run {}: {}", argv[0], std::strerror(rc)));
  }

  ProcessResult result;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_fds = 2;
  bool timed_out = false;
  char buf[8192];
  while (open_fds > 0) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    const int n = poll(fds, 2, static_cast<int>(std::min<int64_t>(left, 1000)));
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t got = read(fds[i].fd, buf, sizeof(buf));
      if (got > 0) {
        const size_t keep = std::min(static_cast<size_t>(got), max_output - std::min(max_output, sinks[i]->size()));
        sinks[i]->append(buf, keep);
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  CloseAll({fds[0].fd, fds[1].fd});
  if (timed_out) kill(pid, SIGKILL);
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    return Status::Internal(fmt::format("{} did not finish within {} ms and was killed", argv[0], timeout.count()));
  }
  if (WIFEXITED(wstatus))
    result.exit_status = WEXITSTATUS(wstatus);
  else if (WIFSIGNALED(wstatus))
    result.exit_status = 128 + WTERMSIG(wstatus);
  return result;
}

std::string FindExecutable(const std::string& name) {
  if (name.find('/') != std::string::npos) return access(name.c_str(), X_OK) == 0 ? name : "";
  std::string dirs = std::getenv("PATH") ? std::getenv("PATH") : "";
  dirs += ":/usr/sbin:/sbin:/usr/local/sbin";
  std::stringstream ss(dirs);
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    if (dir.empty()) continue;
    std::string path = dir + "/" + name;
    if (access(path.c_str(), X_OK) == 0) return path;
  }
  return "";
}

}  // namespace topotune::agent
