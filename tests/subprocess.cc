#include "tests/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>

namespace memgate::testing {
namespace {

double NowSeconds() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

// Forks and execs argv with stdout (and stderr, when err_fd >= 0) on the
// given pipe ends; the child never returns.
pid_t Spawn(const std::vector<std::string>& argv, int out_fd, int err_fd,
            int close_fd_1, int close_fd_2) {
  const pid_t pid = fork();
  if (pid != 0) return pid;
  dup2(out_fd, STDOUT_FILENO);
  if (err_fd >= 0) dup2(err_fd, STDERR_FILENO);
  for (int fd : {out_fd, err_fd, close_fd_1, close_fd_2}) {
    if (fd > STDERR_FILENO) close(fd);
  }
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execv(args[0], args.data());
  _exit(127);
}

}  // namespace

RunResult Run(const std::vector<std::string>& argv, int timeout_seconds) {
  RunResult result;
  int out_pipe[2], err_pipe[2];
  if (pipe(out_pipe) != 0 || pipe(err_pipe) != 0) return result;
  const pid_t pid =
      Spawn(argv, out_pipe[1], err_pipe[1], out_pipe[0], err_pipe[0]);
  close(out_pipe[1]);
  close(err_pipe[1]);
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  const double deadline = NowSeconds() + timeout_seconds;
  int open_fds = 2;
  bool killed = false;
  while (open_fds > 0) {
    const int wait_ms = static_cast<int>((deadline - NowSeconds()) * 1000);
    if (wait_ms <= 0) {
      kill(pid, SIGKILL);
      killed = true;
      break;
    }
    if (poll(fds, 2, wait_ms) < 0) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP))) continue;
      char buffer[4096];
      const ssize_t n = read(fds[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        sinks[i]->append(buffer, static_cast<size_t>(n));
      } else {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (pollfd& f : fds) {
    if (f.fd >= 0) close(f.fd);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!killed && WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  return result;
}

ServerProcess::ServerProcess(const std::vector<std::string>& argv) {
  int out_pipe[2];
  if (pipe(out_pipe) != 0) return;
  pid_ = Spawn(argv, out_pipe[1], -1, out_pipe[0], -1);
  close(out_pipe[1]);
  stdout_fd_ = out_pipe[0];
  std::string seen;
  const double deadline = NowSeconds() + 30;
  while (NowSeconds() < deadline) {
    pollfd fd = {stdout_fd_, POLLIN, 0};
    if (poll(&fd, 1, 100) <= 0) continue;
    char buffer[256];
    const ssize_t n = read(stdout_fd_, buffer, sizeof buffer);
    if (n <= 0) break;  // exited before listening
    seen.append(buffer, static_cast<size_t>(n));
    // The server's first stdout line: {"listening":"HOST:PORT"}.
    const size_t at = seen.find("\"listening\":");
    const size_t eol = at == std::string::npos ? at : seen.find('\n', at);
    if (eol != std::string::npos) {
      port_ = std::atoi(seen.c_str() + seen.rfind(':', eol) + 1);
      stdout_text_ = seen.substr(eol + 1);
      break;
    }
  }
  // Keep reading: a server that logs decisions to stdout must never block
  // on a pipe nobody drains.
  drainer_ = std::thread([this] {
    char buffer[4096];
    while (true) {
      pollfd fd = {stdout_fd_, POLLIN, 0};
      if (poll(&fd, 1, 100) == 0) {
        if (stop_draining_) return;
        continue;
      }
      const ssize_t n = read(stdout_fd_, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      std::lock_guard<std::mutex> lock(mu_);
      stdout_text_.append(buffer, static_cast<size_t>(n));
      if (stdout_text_.size() > (8u << 20)) stdout_text_.erase(0, 4u << 20);
    }
  });
}

std::string ServerProcess::Stdout() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stdout_text_;
}

std::string ServerProcess::address() const {
  return "127.0.0.1:" + std::to_string(port_);
}

int ServerProcess::Terminate(int timeout_seconds) {
  if (pid_ <= 0 || reaped_) return -1;
  kill(pid_, SIGTERM);
  const double deadline = NowSeconds() + timeout_seconds;
  int status = 0;
  while (NowSeconds() < deadline) {
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      reaped_ = true;
      return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    usleep(10000);
  }
  Kill();
  return -1;
}

void ServerProcess::Kill() {
  if (pid_ <= 0 || reaped_) return;
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  reaped_ = true;
}

ServerProcess::~ServerProcess() {
  if (!reaped_) Terminate(5);
  // The server is gone, so the pipe is at its end, or goes quiet (when a
  // child it started still holds it): either stops the reader.
  stop_draining_ = true;
  if (drainer_.joinable()) drainer_.join();
  if (stdout_fd_ >= 0) close(stdout_fd_);
}

std::string RunfilePath(const std::string& workspace_relative) {
  // Tests run in the main repository's runfiles directory.
  return "./" + workspace_relative;
}

std::string WriteTempFile(const std::string& name, const std::string& content) {
  const char* dir = std::getenv("TEST_TMPDIR");
  const std::string path = std::string(dir ? dir : "/tmp") + "/" + name;
  std::ofstream(path) << content;
  return path;
}

}  // namespace memgate::testing
