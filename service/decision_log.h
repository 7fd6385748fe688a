#ifndef MEMGATE_SERVICE_DECISION_LOG_H_
#define MEMGATE_SERVICE_DECISION_LOG_H_

// The audit trail of admission decisions: one JSON object per line, flushed
// as it is written, so `tail -f` and log shippers see every refusal at once
// and a crash loses nothing already decided.

#include <cstdio>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
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

  // The log line for `decision` (time stamped now). Thread-safe.
  void Record(const v1::Decision& decision, const std::string& peer);

  // The entry Record writes, for tests and other sinks.
  static v1::DecisionLogEntry EntryFor(const v1::Decision& decision,
                                       const std::string& peer);

 private:
  DecisionLog(FILE* file, bool owned) : file_(file), owned_(owned) {}

  absl::Mutex mu_;
  FILE* const file_ ABSL_PT_GUARDED_BY(mu_);
  const bool owned_;
};

}  // namespace memgate

#endif  // MEMGATE_SERVICE_DECISION_LOG_H_
