// `memgate check` end to end, as a scheduler hook pays for it: process
// spawn to exit, embedded and against a memgate_server this program starts
// on 127.0.0.1. Prints p50 and p99 of each; bounded by --runs.
//
//   bazel run //bench:check_latency -- --runs=200

#include <signal.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"

ABSL_FLAG(int, runs, 200, "checks per mode (1..10000)");
ABSL_FLAG(std::string, memgate, "client/memgate", "the memgate binary");
ABSL_FLAG(std::string, server_binary, "service/memgate_server",
          "the memgate_server binary");

extern char** environ;

namespace {

// Runs argv with stdout/stderr to /dev/null; returns exit code (or -1).
int Spawn(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid;
  const int err = posix_spawn(&pid, args[0], &actions, nullptr, args.data(),
                              environ);
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0) return -1;
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

struct Stats {
  double p50_ms, p99_ms;
  int failures;
};

Stats Measure(const std::vector<std::string>& argv, int runs) {
  std::vector<double> ms;
  int failures = 0;
  Spawn(argv);  // warm the page cache
  for (int i = 0; i < runs; ++i) {
    const auto begin = std::chrono::steady_clock::now();
    if (Spawn(argv) != 0) ++failures;
    ms.push_back(std::chrono::duration<double, std::milli>(
                     std::chrono::steady_clock::now() - begin)
                     .count());
  }
  std::sort(ms.begin(), ms.end());
  return {ms[ms.size() / 2], ms[(ms.size() * 99) / 100], failures};
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const int runs = absl::GetFlag(FLAGS_runs);
  if (runs < 1 || runs > 10000) {
    std::fprintf(stderr, "check_latency: --runs in [1, 10000]\n");
    return 2;
  }
  const std::string memgate = absl::GetFlag(FLAGS_memgate);
  const std::vector<std::string> job = {
      "--model=llama-3.1-8b", "--gpu=a100-40gb", "--gpus=16", "--tp=4",
      "--pp=2", "--seq=8192", "--gbs=1024"};

  std::vector<std::string> embedded = {memgate, "check"};
  embedded.insert(embedded.end(), job.begin(), job.end());
  const Stats e = Measure(embedded, runs);

  // A server on a free loopback port, its address read from its stdout.
  int out[2];
  if (pipe(out) != 0) return 1;
  const pid_t server = fork();
  if (server == 0) {
    dup2(out[1], 1);
    close(out[0]);
    const std::string binary = absl::GetFlag(FLAGS_server_binary);
    execl(binary.c_str(), binary.c_str(), "--listen=127.0.0.1:0",
          "--decision-log=/dev/null", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(out[1]);
  char line[256] = {0};
  FILE* stream = fdopen(out[0], "r");
  if (stream == nullptr || fgets(line, sizeof line, stream) == nullptr ||
      strrchr(line, ':') == nullptr) {
    std::fprintf(stderr, "check_latency: the server did not start\n");
    kill(server, SIGTERM);
    return 1;
  }
  const std::string port = std::to_string(atoi(strrchr(line, ':') + 1));
  std::vector<std::string> remote = {memgate, "check",
                                     "--server=127.0.0.1:" + port};
  remote.insert(remote.end(), job.begin(), job.end());
  const Stats r = Measure(remote, runs);
  kill(server, SIGTERM);
  waitpid(server, nullptr, 0);

  std::printf("embedded: p50 %.2f ms, p99 %.2f ms (%d runs, %d failed)\n",
              e.p50_ms, e.p99_ms, runs, e.failures);
  std::printf("server:   p50 %.2f ms, p99 %.2f ms (%d runs, %d failed)\n",
              r.p50_ms, r.p99_ms, runs, r.failures);
  return e.failures + r.failures == 0 ? 0 : 1;
}
