#include "client/call_watchdog.h"

#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace memgate::cli {
namespace {

struct Child {
  int exit_code = -1;
  std::string stderr_text;
  absl::Duration took;
};

// Runs `body` in a child process whose stderr is captured.
template <typename Body>
Child RunChild(Body body) {
  int pipe_fds[2];
  EXPECT_EQ(pipe(pipe_fds), 0);
  const absl::Time start = absl::Now();
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(pipe_fds[1], STDERR_FILENO);
    close(pipe_fds[0]);
    body();
    _exit(7);
  }
  close(pipe_fds[1]);
  Child child;
  char buffer[256];
  ssize_t n;
  while ((n = read(pipe_fds[0], buffer, sizeof(buffer))) > 0) {
    child.stderr_text.append(buffer, static_cast<size_t>(n));
  }
  close(pipe_fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  child.took = absl::Now() - start;
  child.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return child;
}

// A call that never returns (here: a sleep of 30 s) ends at the limit with
// the policy's exit code and the message, not at the sleep's end.
TEST(CallWatchdogTest, ABlockedCallEndsAtTheLimitWithThePolicysCode) {
  const Child child = RunChild([] {
    CallWatchdog watchdog(absl::Milliseconds(200), "no answer\n", 3);
    absl::SleepFor(absl::Seconds(30));
  });
  EXPECT_EQ(child.exit_code, 3);
  EXPECT_EQ(child.stderr_text, "no answer\n");
  EXPECT_LT(child.took, absl::Seconds(10));
}

// Once destroyed, the watchdog no longer fires: what runs after the call
// (an exec'd launch) keeps its own time.
TEST(CallWatchdogTest, ADestroyedWatchdogDoesNotFire) {
  const Child child = RunChild([] {
    { CallWatchdog watchdog(absl::Milliseconds(200), "no answer\n", 3); }
    absl::SleepFor(absl::Milliseconds(600));
  });
  EXPECT_EQ(child.exit_code, 7);
  EXPECT_EQ(child.stderr_text, "");
}

}  // namespace
}  // namespace memgate::cli
