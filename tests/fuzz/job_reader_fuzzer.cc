// Fuzzes the Job reader (JSON and text format) and everything a parsed job
// reaches: estimate, admission with suggestions, plan.

#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "readers/job_reader.h"
#include "tests/fuzz/fuzz_helpers.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::StatusOr<memgate::v1::Job> job = memgate::ParseJob(
      absl::string_view(reinterpret_cast<const char*>(data), size));
  if (!job.ok()) {
    memgate::fuzz::Require(job.status().code() ==
                           absl::StatusCode::kInvalidArgument);
    return 0;
  }
  memgate::fuzz::ExerciseJob(*job);
  return 0;
}
