#ifndef MEMGATE_SERVICE_DECISION_LOG_H_
#define MEMGATE_SERVICE_DECISION_LOG_H_

// The audit trail of admission decisions: one JSON object per line (the
// fields of memgate.v1.DecisionLogEntry), so an operator can audit every
// decision. Its rule: **no decision is given that is not logged.**
//
// Lines are formatted on the request path and written by one background
// thread in batches (within about 5 ms of the decision; one write per
// batch, so lines never interleave and readers never see half a line).
// What happens when the sink cannot keep up, by design:
// - the queue is bounded (max_pending_bytes); a decision that finds it full
//   waits up to max_wait for room, then Record answers UNAVAILABLE and the
//   service refuses to give the decision (the client then exits 3 and the
//   site's --on-unavailable policy applies). Failing closed loses no
//   decision and keeps the server's memory bounded; blocking without bound
//   would hang every submission behind a full disk.
// - a write error (full disk, closed pipe) is reported once on stderr, the
//   unwritten lines stay queued and are retried every second, Healthy()
//   turns false (the server reports NOT_SERVING) and Record answers
//   UNAVAILABLE until a write succeeds again. A write blocked for longer
//   than stall_after (a reader that stopped reading) counts as a failure.
// - sync mode: Record returns only once its line is written and
//   fdatasync'd (group commit: concurrent decisions share one sync), so an
//   acknowledged decision survives a crash of the server or the machine.
// - Reopen() (SIGHUP, after logrotate moved the file) reopens the path
//   before the next write. Close(deadline) writes what is queued until the
//   deadline and no longer, so shutdown stays bounded when the sink hangs.

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "proto/memgate.pb.h"

namespace memgate {

struct DecisionLogOptions {
  // "" or "-" is standard output; anything else a file opened for appending.
  std::string path = "-";
  bool sync = false;
  size_t max_pending_bytes = 8 << 20;
  absl::Duration max_wait = absl::Milliseconds(500);
  absl::Duration stall_after = absl::Seconds(1);
  absl::Duration retry_every = absl::Seconds(1);
};

class DecisionLog {
 public:
  static absl::StatusOr<std::unique_ptr<DecisionLog>> Open(
      const DecisionLogOptions& options);
  ~DecisionLog();  // Close(now + 1 s), if not closed yet

  DecisionLog(const DecisionLog&) = delete;
  DecisionLog& operator=(const DecisionLog&) = delete;

  // Queues the line for `decision` (sync: waits until it is on disk). OK
  // means the decision may be given; UNAVAILABLE (naming the cause) means
  // it must not. Thread-safe.
  absl::Status Record(const v1::Decision& decision, const std::string& peer,
                      const std::string& client_identity);

  // False while writes fail or one has been blocked for stall_after.
  bool Healthy() const;

  // Reopens the file before the next write (no-op for standard output).
  void Reopen();

  // Writes what is queued until `deadline`, then stops the writer. Returns
  // the bytes that could not be written (also reported on stderr).
  size_t Close(absl::Time deadline);

  // The line Record writes (without the newline): a DecisionLogEntry in
  // proto3 JSON with its field names, time stamped `unix_micros`.
  static std::string LineFor(const v1::Decision& decision,
                             const std::string& peer,
                             const std::string& client_identity,
                             int64_t unix_micros);

 private:
  struct Shared;  // what the writer thread shares with the log
  explicit DecisionLog(std::shared_ptr<Shared> shared);

  std::shared_ptr<Shared> shared_;
};

}  // namespace memgate

#endif  // MEMGATE_SERVICE_DECISION_LOG_H_
