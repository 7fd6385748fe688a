#ifndef MEMGATE_ESTIMATOR_PLANNER_H_
#define MEMGATE_ESTIMATOR_PLANNER_H_

// The whole 4D space for one model on one cluster: every valid (TP, CP, PP,
// MBS), its peak memory and zone, ranked admitted-first, then by expected
// speed (see cost_model.h), so the first candidate is the one to run.

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/memgate.pb.h"

namespace memgate {

// Largest micro-batch size tried when a request does not say.
inline constexpr uint32_t kDefaultMaxMicroBatch = 16;

// INVALID_ARGUMENT names the request field that is missing or invalid
// (model, accelerator, num_gpus, seq_length, global_batch_size, threshold).
// Candidates come back best first (all of them when top_k is 0); every one
// is a job ValidateJob accepts.
absl::StatusOr<v1::PlanResponse> PlanLayouts(const v1::PlanRequest& request);

// For a refused job: the best `count` admitted layouts on the same GPUs
// (same model, GPU, sequence and global batch).
std::vector<v1::Candidate> SuggestLayouts(const v1::Job& resolved_job,
                                          double threshold, int count);

// For a refused job: the smallest GPU count at which the same TP, CP, PP and
// MBS fit under `threshold` (more data-parallel ranks shard the optimizer
// further), or 0 when no count does.
uint32_t SmallestGpuCountThatFits(const v1::Job& resolved_job,
                                  double threshold);

}  // namespace memgate

#endif  // MEMGATE_ESTIMATOR_PLANNER_H_
