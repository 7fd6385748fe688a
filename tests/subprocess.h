#ifndef MEMGATE_TESTS_SUBPROCESS_H_
#define MEMGATE_TESTS_SUBPROCESS_H_

// Runs memgate's real binaries from tests, as a scheduler would.

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace memgate::testing {

struct RunResult {
  int exit_code = -1;  // -1: did not exit normally (signal, timeout)
  bool timed_out = false;  // killed at Run's wall-clock limit
  int signal = 0;          // the signal that ended it, if one did
  double seconds = 0;      // wall time from spawn to reaping
  std::string out;
  std::string err;
};

// Runs `argv` (argv[0] a path) with a wall-clock limit, capturing stdout and
// stderr; the child is killed at the limit so a hang fails the test.
RunResult Run(const std::vector<std::string>& argv,
              int timeout_seconds = 60);

// How a run ended, for a failing test's message: "exit 3 after 0.4 s;
// stderr: ...", "killed at its time limit after 60.0 s; ...".
std::string Describe(const RunResult& result);

// Path of a binary in this test's runfiles, e.g. "client/memgate".
std::string RunfilePath(const std::string& workspace_relative);

// A server started by a test: the process is stopped (SIGTERM, then SIGKILL
// after a grace period) when this object goes, whatever the test did.
class ServerProcess {
 public:
  // Starts `argv` and waits (up to 30 s) for its stdout line
  // {"listening":"HOST:PORT"}; port() is 0 when that never came. Its
  // stdout is drained from then on (see Stdout()).
  explicit ServerProcess(const std::vector<std::string>& argv);
  ~ServerProcess();

  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  int port() const { return port_; }
  std::string address() const;
  int pid() const { return pid_; }

  // Sends SIGTERM and waits up to `timeout_seconds`; the exit code, or -1
  // when it had to be killed or died of a signal.
  int Terminate(int timeout_seconds = 20);
  // Kills at once (a crash, as far as clients can tell).
  void Kill();
  // What the server wrote to stdout after the listening line (the last
  // 4 to 8 MiB of it): its decision log, unless that went to a file.
  std::string Stdout() const;

 private:
  int pid_ = -1;
  int port_ = 0;
  int stdout_fd_ = -1;
  bool reaped_ = false;
  mutable std::mutex mu_;
  std::string stdout_text_;
  std::atomic<bool> stop_draining_{false};
  std::thread drainer_;
};

// A fresh file under TEST_TMPDIR with `content`; returns its path.
std::string WriteTempFile(const std::string& name, const std::string& content);

}  // namespace memgate::testing

#endif  // MEMGATE_TESTS_SUBPROCESS_H_
