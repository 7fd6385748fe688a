#ifndef MEMGATE_SERVICE_DECISION_LOG_H_
#define MEMGATE_SERVICE_DECISION_LOG_H_

// The audit trail of admission decisions: one JSON object per line (the
// fields of memgate.v1.DecisionLogEntry), so an operator can audit every
// refusal. Lines are formatted on the request path (a few hundred
// nanoseconds, no reflection) and written by a background thread, which
// writes every complete line it has and flushes, within about 5 ms of the
// decision: `tail -f` sees it at once, a burst costs one write, not one per
// decision, and lines never interleave. The destructor writes
// whatever is still queued.

#include <condition_variable>
#include <cstdio>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "proto/decision_log.pb.h"
#include "proto/memgate.pb.h"

namespace memgate {

class DecisionLog {
 public:
  // "" or "-" is stderr; anything else is a file opened for appending.
  static absl::StatusOr<std::unique_ptr<DecisionLog>> Open(
      const std::string& path);
  ~DecisionLog();

  DecisionLog(const DecisionLog&) = delete;
  DecisionLog& operator=(const DecisionLog&) = delete;

  // Queues the log line for `decision` (time stamped now). Thread-safe.
  void Record(const v1::Decision& decision, const std::string& peer);

  // The line Record writes (without the newline): a DecisionLogEntry in
  // proto3 JSON with its field names, time stamped `unix_micros`.
  static std::string LineFor(const v1::Decision& decision,
                             const std::string& peer, int64_t unix_micros);

 private:
  DecisionLog(FILE* file, bool owned);
  void WriteLoop();
  void WriteAll(const std::string& batch);

  FILE* const file_;
  const bool owned_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::string pending_;  // complete lines not yet written
  bool stopping_ = false;
  std::thread writer_;
};

}  // namespace memgate

#endif  // MEMGATE_SERVICE_DECISION_LOG_H_
