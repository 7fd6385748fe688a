#ifndef MEMGATE_READERS_JOB_READER_H_
#define MEMGATE_READERS_JOB_READER_H_

// Jobs from files a team keeps beside its training scripts: a memgate.v1.Job
// in proto3 JSON (proto or camelCase field names) or in text format.

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/memgate.pb.h"

namespace memgate {

// JSON when the first non-blank character is '{', text format otherwise.
// INVALID_ARGUMENT carries the parser's message (field, line, column).
absl::StatusOr<v1::Job> ParseJob(absl::string_view content);

// Reads and parses `path`; errors start with the path.
absl::StatusOr<v1::Job> ReadJobFile(const std::string& path);

}  // namespace memgate

#endif  // MEMGATE_READERS_JOB_READER_H_
