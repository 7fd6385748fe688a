#ifndef MEMGATE_TESTS_SUBPROCESS_H_
#define MEMGATE_TESTS_SUBPROCESS_H_

// Runs memgate's real binaries from tests, as a scheduler would.

#include <string>
#include <vector>

namespace memgate::testing {

struct RunResult {
  int exit_code = -1;  // -1: did not exit normally (signal, timeout)
  std::string out;
  std::string err;
};

// Runs `argv` (argv[0] a path) with a wall-clock limit, capturing stdout and
// stderr; the child is killed at the limit so a hang fails the test.
RunResult Run(const std::vector<std::string>& argv,
              int timeout_seconds = 60);

// Path of a binary in this test's runfiles, e.g. "client/memgate".
std::string RunfilePath(const std::string& workspace_relative);

// A fresh file under TEST_TMPDIR with `content`; returns its path.
std::string WriteTempFile(const std::string& name, const std::string& content);

}  // namespace memgate::testing

#endif  // MEMGATE_TESTS_SUBPROCESS_H_
