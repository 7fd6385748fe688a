#ifndef MEMGATE_CLIENT_CALL_WATCHDOG_H_
#define MEMGATE_CLIENT_CALL_WATCHDOG_H_

#include <string>

#include "absl/time/time.h"

namespace memgate::cli {

// Bounds a --server call's wall time in the memgate CLI whatever blocks it
// (gRPC honours its deadline, but a check whose server was killed once
// stayed alive past 60 s in CI, DyingServerTest, the cause not pinned
// down): once `limit` has passed, SIGALRM writes `message` to stderr and
// the process _exits with `exit_code`, the answer the site's policy gives
// an unanswered check. Cancelled when destroyed (before an exec: an alarm
// outlives execve). One at a time; not for libraries (it owns SIGALRM).
class CallWatchdog {
 public:
  CallWatchdog(absl::Duration limit, const std::string& message,
               int exit_code);
  ~CallWatchdog();
  CallWatchdog(const CallWatchdog&) = delete;
  CallWatchdog& operator=(const CallWatchdog&) = delete;
};

}  // namespace memgate::cli

#endif  // MEMGATE_CLIENT_CALL_WATCHDOG_H_
