#include "planner/starved_pipeline.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "planner/planner.h"

namespace memgate {

uint64_t GlobalBatchForMeasuredBubble(const v1::Candidate& c) {
  const uint64_t p = c.pipeline_parallel();
  const uint64_t v = std::max<uint32_t>(1, c.virtual_pipeline_stages());
  if (p <= 1 || c.data_parallel() == 0 || c.micro_batch_size() == 0) {
    return 0;
  }
  // kLargestMeasuredBubble is 3/32: m >= 32 (p - 1) / (3 v), in integers.
  // p, DP <= 2^20, v <= 2^5, MBS <= 2^10 (planner.h): under 2^57.
  static_assert(kLargestMeasuredBubble == 3.0 / 32);
  const uint64_t microbatches = (32 * (p - 1) + 3 * v - 1) / (3 * v);
  return microbatches * c.data_parallel() * c.micro_batch_size();
}

std::optional<std::string> StarvedPipelineNote(const v1::PlanRequest& request,
                                               const v1::PlanResponse& plan) {
  if (plan.candidates_size() == 0) return std::nullopt;
  const v1::Candidate& c = plan.candidates(0);
  if (c.zone() != v1::ZONE_GREEN || !(c.bubble_fraction() > kBubbleThatDoubles)) {
    return std::nullopt;
  }
  const uint64_t sequences_a_step =
      uint64_t{c.data_parallel()} * c.micro_batch_size();
  if (sequences_a_step == 0) return std::nullopt;
  const uint64_t enough = GlobalBatchForMeasuredBubble(c);
  if (enough == 0) return std::nullopt;
  std::string chunks =
      c.virtual_pipeline_stages() > 1
          ? absl::StrCat(" (", c.virtual_pipeline_stages(), " chunks each)")
          : "";
  return absl::StrFormat(
      "on %d GPUs the first layout, (TP, CP, PP, MBS) = (%d, %d, %d, %d) "
      "with DP %d, runs %d micro-batches a step (global batch %d over DP x "
      "MBS) through %d stages%s: a pipeline bubble of %.0f%% of its compute, "
      "(p - 1) / (m v). A global batch of %d or more would bring it to "
      "%.1f%%, the largest the paper measured; fewer GPUs leave each "
      "pipeline more micro-batches",
      request.num_gpus(), c.tensor_parallel(), c.context_parallel(),
      c.pipeline_parallel(), c.micro_batch_size(), c.data_parallel(),
      request.global_batch_size() / sequences_a_step,
      request.global_batch_size(), c.pipeline_parallel(), chunks,
      100 * c.bubble_fraction(), enough, 100 * kLargestMeasuredBubble);
}

}  // namespace memgate
