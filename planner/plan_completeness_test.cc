// The other half of "every candidate is its job" (plan_fields_test,
// plan_request_fuzzer): a job `memgate check` admits GREEN at a layout
// the plan searches (TP, CP and PP powers of two, micro-batches 1 or 2,
// plain or interleaved, EP and ETP for MoE models) is listed by the plan
// of its model, GPUs, sequence and batch, GREEN (with its best schedule,
// which may interleave and recompute where that is faster). A planner
// filter stricter than ValidateJob, or a fast path that prices a layout
// above its estimate, would leave out a layout that fits.

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "estimator/estimate.h"
#include "gtest/gtest.h"
#include "planner/planner.h"
#include "proto/memgate.pb.h"

namespace memgate {
namespace {

struct Sampled {
  v1::Job job;
  bool moe = false;
};

// A job drawn from `rng`: a catalog model (its layer count changed, at
// times, to one pipelines split unevenly or not at all), GPU, count,
// layout, micro-batch and batch. Deterministic for a seed (mt19937 and
// modulo, no distributions whose output the standard leaves open).
Sampled SampleJob(std::mt19937& rng) {
  static const char* const kModels[] = {
      "llama-3.1-8b", "llama-3.1-70b", "llama-2-13b", "nemotron-4-340b",
      "mixtral-8x7b", "qwen3-30b-a3b", "gpt-oss-20b"};
  static const char* const kGpus[] = {"h100-80gb", "a100-40gb", "h200-141gb"};
  Sampled s;
  v1::Job& job = s.job;
  const int model = static_cast<int>(rng() % 7);
  s.moe = model >= 4;
  job.mutable_model()->set_name(kModels[model]);
  job.mutable_accelerator()->set_name(kGpus[rng() % 3]);
  const uint32_t gpus = 8u << (rng() % 5);
  job.set_num_gpus(gpus);
  v1::ParallelConfig& par = *job.mutable_parallel();
  const uint32_t t = 1u << (rng() % 4), c = 1u << (rng() % 3),
                 p = 1u << (rng() % 4);
  par.set_tensor_parallel(t);
  par.set_context_parallel(c);
  par.set_pipeline_parallel(p);
  if (s.moe) {
    par.set_expert_parallel(1u << (rng() % 3));
    par.set_expert_tensor_parallel(rng() % 2 ? 1 : t);
  }
  if (p > 1 && rng() % 2) par.set_virtual_pipeline_stages(2u << (rng() % 2));
  if (rng() % 3 == 0) {
    static const uint32_t kLayers[] = {30, 31, 33, 40, 61, 62};
    job.mutable_model()->set_num_layers(kLayers[rng() % 6]);
  }
  v1::TrainingConfig& training = *job.mutable_training();
  training.set_seq_length(4096u << (rng() % 2));
  training.set_micro_batch_size(1 + rng() % 2);
  const uint32_t data = gpus % (t * c * p) == 0 ? gpus / (t * c * p) : 1;
  training.set_global_batch_size(data * training.micro_batch_size() *
                                 (1 + rng() % 8));
  training.set_precision(v1::PRECISION_BF16_FP32_GRADS);
  // Candidates turn the dataloader's mask off (planner.h).
  training.set_dataloader_attention_mask(false);
  // gpt-oss's sinks run in cuDNN's fused attention, as the job must say,
  // over an all-to-all under CP (validation.cc).
  if (std::string_view(kModels[model]) == "gpt-oss-20b") {
    training.set_flash_attention_disabled(true);
    if (c > 1) par.set_context_parallel_comm(v1::CONTEXT_PARALLEL_COMM_A2A);
  }
  return s;
}

TEST(PlanCompletenessTest, EveryJobAdmittedGreenIsAPlannedLayout) {
  std::mt19937 rng(7);
  int green = 0;
  for (int i = 0; i < 6000; ++i) {
    const Sampled s = SampleJob(rng);
    const absl::StatusOr<v1::Estimate> e = EstimateJob(s.job);
    if (!e.ok() || e->zone() != v1::ZONE_GREEN) continue;
    ++green;
    const v1::ParallelConfig& par = e->job().parallel();
    const v1::TrainingConfig& training = s.job.training();
    v1::PlanRequest request;
    *request.mutable_model() = s.job.model();
    *request.mutable_accelerator() = s.job.accelerator();
    request.set_num_gpus(s.job.num_gpus());
    request.set_seq_length(training.seq_length());
    request.set_global_batch_size(training.global_batch_size());
    request.set_precision(training.precision());
    request.mutable_training()->set_flash_attention_disabled(
        training.flash_attention_disabled());
    request.set_max_micro_batch_size(2);
    request.set_top_k(0);
    const absl::StatusOr<v1::PlanResponse> plan = PlanLayouts(request);
    ASSERT_TRUE(plan.ok()) << s.job.ShortDebugString() << ": " << plan.status();
    const auto listed = std::find_if(
        plan->candidates().begin(), plan->candidates().end(),
        [&](const v1::Candidate& c) {
          return c.tensor_parallel() == par.tensor_parallel() &&
                 c.context_parallel() == par.context_parallel() &&
                 c.pipeline_parallel() == par.pipeline_parallel() &&
                 c.micro_batch_size() == training.micro_batch_size() &&
                 (!s.moe ||
                  (c.expert_parallel() == par.expert_parallel() &&
                   c.expert_tensor_parallel() == par.expert_tensor_parallel()));
        });
    ASSERT_TRUE(listed != plan->candidates().end())
        << s.job.ShortDebugString() << ": GREEN at " << e->peak_gib()
        << " GiB, not planned";
    // GREEN, with its best schedule: where an interleaving that fits by
    // recomputing is faster than the plain schedule the job runs (a
    // bubble of scarce micro-batches), that one is listed.
    EXPECT_EQ(listed->zone(), v1::ZONE_GREEN) << s.job.ShortDebugString();
  }
  // The draw reaches hundreds of admitted jobs (a seed's count, not a
  // property: more or fewer would not make the claim weaker).
  EXPECT_GT(green, 500);
}

}  // namespace
}  // namespace memgate
