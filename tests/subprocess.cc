#include "tests/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
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
// given pipe ends; the child never returns. Tests call this from several
// threads at once, so everything the child needs is made before fork (the
// child only dup2s and execs: async-signal-safe), and the pipes are
// O_CLOEXEC: a child forked by one thread must not carry another thread's
// pipe into its program, where it would hold that Run's EOF back.
pid_t Spawn(const std::vector<std::string>& argv, int out_fd, int err_fd) {
  std::vector<char*> args;
  for (const std::string& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = fork();
  if (pid != 0) return pid;
  // dup2 clears O_CLOEXEC on the copy; the originals close at exec.
  dup2(out_fd, STDOUT_FILENO);
  if (err_fd >= 0) dup2(err_fd, STDERR_FILENO);
  execv(args[0], args.data());
  _exit(127);
}

double SecondsSince(double start) { return NowSeconds() - start; }

}  // namespace

RunResult Run(const std::vector<std::string>& argv, int timeout_seconds) {
  RunResult result;
  const double start = NowSeconds();
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return result;
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close(out_pipe[0]);
    close(out_pipe[1]);
    return result;
  }
  const pid_t pid = Spawn(argv, out_pipe[1], err_pipe[1]);
  close(out_pipe[1]);
  close(err_pipe[1]);
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  const double deadline = start + timeout_seconds;
  int open_fds = 2;
  while (open_fds > 0) {
    const int wait_ms = static_cast<int>((deadline - NowSeconds()) * 1000);
    if (wait_ms <= 0) {
      kill(pid, SIGKILL);
      result.timed_out = true;
      break;
    }
    const int ready = poll(fds, 2, wait_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) break;
    for (int i = 0; i < 2; ++i) {
      // Any event on a pipe (data, hang-up, error) is read; an error or
      // end of file closes it, so poll never spins on a dead descriptor.
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buffer[4096];
      const ssize_t n = read(fds[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        sinks[i]->append(buffer, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
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
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.seconds = SecondsSince(start);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  if (!result.timed_out && WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  }
  return result;
}

std::string Describe(const RunResult& r) {
  std::string what = r.timed_out ? "killed at its time limit"
                     : r.signal != 0
                         ? "died of signal " + std::to_string(r.signal)
                         : "exit " + std::to_string(r.exit_code);
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.1f", r.seconds);
  return what + " after " + seconds + " s; stderr: " + r.err;
}

ServerProcess::ServerProcess(const std::vector<std::string>& argv) {
  int out_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return;
  pid_ = Spawn(argv, out_pipe[1], -1);
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
