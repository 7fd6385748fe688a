#include "tests/subprocess.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace memgate::testing {
namespace {

TEST(SubprocessTest, ExitCodeOutputAndErrorAreCaptured) {
  const RunResult r =
      testing::Run({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(Describe(r).substr(0, 6), "exit 3");
}

TEST(SubprocessTest, AHangIsKilledAtTheLimitAndSaidSo) {
  const RunResult r = testing::Run({"/bin/sleep", "30"}, /*timeout_seconds=*/1);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.exit_code, -1);
  EXPECT_LT(r.seconds, 20);
  EXPECT_NE(Describe(r).find("killed at its time limit"), std::string::npos)
      << Describe(r);
}

TEST(SubprocessTest, ASignalIsNamed) {
  const RunResult r = testing::Run({"/bin/sh", "-c", "kill -9 $$"});
  EXPECT_EQ(r.exit_code, -1);
  EXPECT_EQ(r.signal, 9);
  EXPECT_NE(Describe(r).find("died of signal 9"), std::string::npos)
      << Describe(r);
}

// Tests run commands from several threads at once (DyingServerTest). A
// child forked by one thread while another's pipes are open must not keep
// them: a long-lived child would hold the other run's end of file, and a
// command that ends at once would seem to hang as long as it lives.
TEST(SubprocessTest, ConcurrentRunsDoNotHoldEachOthersPipes) {
  // Eight threads fork a sleeper each second (killed at Run's 1 s limit)
  // while this one runs /bin/true back to back for 3 s: a sleeper forked
  // while a /bin/true's pipe is open would hold its end of file for up to
  // a second. Without O_CLOEXEC about one fork in five lands so, and 24
  // forks make that near certain.
  std::atomic<bool> done{false};
  std::vector<std::thread> sleepers;
  for (int i = 0; i < 8; ++i) {
    sleepers.emplace_back([&] {
      while (!done) testing::Run({"/bin/sleep", "5"}, /*timeout_seconds=*/1);
    });
  }
  double slowest = 0;
  int runs = 0;
  for (const auto start = std::chrono::steady_clock::now();
       std::chrono::steady_clock::now() - start < std::chrono::seconds(3);
       ++runs) {
    slowest = std::max(slowest, testing::Run({"/bin/true"}).seconds);
  }
  done = true;
  for (std::thread& t : sleepers) t.join();
  // /bin/true ends in milliseconds; a held pipe lasts about a second
  // (the sleeper forked beside it is killed 1 s after it started).
  EXPECT_LT(slowest, 0.8) << "slowest of " << runs << " runs of /bin/true";
}

}  // namespace
}  // namespace memgate::testing
