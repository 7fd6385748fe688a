// Fuzzes the estimator and planner on arbitrary configurations: the input
// is a serialized memgate.v1.Job, so every field takes any value the wire
// format allows (zeros, 2^32 - 1, unknown enums, huge repeated fields).

#include <cstddef>
#include <cstdint>

#include "tests/fuzz/fuzz_helpers.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  memgate::v1::Job job;
  if (!job.ParseFromArray(data, static_cast<int>(size))) return 0;
  memgate::fuzz::ExerciseJob(job);
  memgate::v1::PlanRequest plan;
  *plan.mutable_model() = job.model();
  *plan.mutable_accelerator() = job.accelerator();
  plan.set_num_gpus(job.num_gpus());
  plan.set_seq_length(job.training().seq_length());
  plan.set_global_batch_size(job.training().global_batch_size());
  plan.set_max_micro_batch_size(job.training().micro_batch_size() % 64);
  plan.set_top_k(5);
  absl::StatusOr<memgate::v1::PlanResponse> response =
      memgate::PlanLayouts(plan);
  if (response.ok()) {
    for (const memgate::v1::Candidate& c : response->candidates()) {
      memgate::fuzz::Require(std::isfinite(c.peak_bytes()));
    }
  }
  return 0;
}
