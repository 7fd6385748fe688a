// Megatron-LM's global batch, settled once the job's GPU count is final
// (megatron_args.h: GlobalBatchRule, ApplyMegatronGlobalBatch).

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "readers/launch_arguments.h"
#include "readers/megatron_args.h"

namespace memgate {

absl::Status ApplyMegatronGlobalBatch(GlobalBatchRule rule, v1::Job& job,
                                      std::vector<std::string>& notes) {
  if (rule == GlobalBatchRule::kAsGiven ||
      rule == GlobalBatchRule::kScheduled) {
    return absl::OkStatus();
  }
  v1::TrainingConfig& t = *job.mutable_training();
  // memgate's flags gave the global batch the launch left out: the job's.
  if (rule == GlobalBatchRule::kMegatronDefault && t.global_batch_size() != 0) {
    return absl::OkStatus();
  }
  const v1::ParallelConfig& par = job.parallel();
  const uint64_t model_ranks = uint64_t{std::max(1u, par.tensor_parallel())} *
                               std::max(1u, par.context_parallel()) *
                               std::max(1u, par.pipeline_parallel());
  // Validation names a GPU count the layout does not divide.
  if (job.num_gpus() == 0 || job.num_gpus() % model_ranks != 0) {
    return absl::OkStatus();
  }
  // b x d: one micro-batch on every data-parallel replica.
  const uint64_t per_step = uint64_t{std::max(1u, t.micro_batch_size())} *
                            (job.num_gpus() / model_ranks);
  if (rule == GlobalBatchRule::kMegatronDefault) {
    // Past the field's range: left unknown, the most micro-batches.
    if (per_step > UINT32_MAX) return absl::OkStatus();
    // arguments.py validate_args: args.global_batch_size =
    // args.micro_batch_size * args.data_parallel_size.
    t.set_global_batch_size(static_cast<uint32_t>(per_step));
    notes.push_back(absl::StrCat(
        "no --global-batch-size: Megatron's default, micro-batch x "
        "data-parallel size = ", per_step, " (one micro-batch a step)"));
    return absl::OkStatus();
  }
  // num_microbatches_calculator.py ConstantNumMicroBatchesCalculator with
  // decrease_batch_size_if_needed: _round(global_batch_size, b x d), down.
  const uint64_t given = t.global_batch_size();
  const uint64_t rounded = given / per_step * per_step;
  if (rounded == given) return absl::OkStatus();
  if (rounded == 0) {
    return Bad("decrease-batch-size-if-needed",
               absl::StrCat("rounds --global-batch-size ", given,
                            " down to 0: below micro-batch x data-parallel "
                            "size = ", per_step, ", no micro-batch a step"));
  }
  t.set_global_batch_size(static_cast<uint32_t>(rounded));
  notes.push_back(absl::StrCat(
      "--decrease-batch-size-if-needed: Megatron rounds --global-batch-size ",
      given, " down to ", rounded, ", a multiple of micro-batch x "
      "data-parallel size = ", per_step));
  return absl::OkStatus();
}

}  // namespace memgate
