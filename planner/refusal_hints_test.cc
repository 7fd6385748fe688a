#include "planner/refusal_hints.h"

#include <algorithm>
#include <functional>
#include <set>
#include <tuple>
#include <vector>

#include "admission/admission.h"
#include "estimator/estimate.h"
#include "estimator/job_resolver.h"
#include "gtest/gtest.h"
#include "planner/planner.h"
#include "tests/test_util.h"

namespace memgate {
namespace {

// Whether `modules` (a candidate's or a refusal's) holds `module`.
template <typename Modules>
bool HasModule(const Modules& modules, v1::Recompute::Module module) {
  return std::find(modules.begin(), modules.end(), module) != modules.end();
}

// `job` with a suggestion's layout, micro-batch and recomputation: what the
// user runs after taking it.
v1::Job AsSuggested(const v1::Job& job, const v1::Candidate& c) {
  v1::Job as_suggested = job;
  v1::ParallelConfig& par = *as_suggested.mutable_parallel();
  par.set_tensor_parallel(c.tensor_parallel());
  par.set_context_parallel(c.context_parallel());
  par.set_pipeline_parallel(c.pipeline_parallel());
  par.set_data_parallel(0);
  par.set_virtual_pipeline_stages(c.virtual_pipeline_stages());
  par.clear_layers_per_stage();
  if (c.first_stage_layers() > 0) {
    // Its first and last stages' counts (--decoder-first/last-pipeline-
    // num-layers), the middle ones sharing the rest; chunk j of rank i
    // (entry j * p + i) a v-th of its rank's.
    EXPECT_FALSE(c.account_for_embedding() || c.account_for_loss());
    const uint32_t p = c.pipeline_parallel();
    const uint32_t v = std::max(1u, c.virtual_pipeline_stages());
    const absl::StatusOr<v1::Job> resolved = ResolveJob(job);
    EXPECT_TRUE(resolved.ok()) << resolved.status();
    const uint32_t layers =
        resolved.ok() ? resolved->model().num_layers() : 0;
    const uint32_t middle =
        p > 2 ? (layers - c.first_stage_layers() - c.last_stage_layers()) /
                    (p - 2)
              : 0;
    for (uint32_t j = 0; j < v; ++j) {
      for (uint32_t i = 0; i < p; ++i) {
        const uint32_t rank = i == 0       ? c.first_stage_layers()
                              : i + 1 == p ? c.last_stage_layers()
                                           : middle;
        par.add_layers_per_stage(rank / v);
      }
    }
  }
  as_suggested.mutable_training()->set_micro_batch_size(c.micro_batch_size());
  if (c.recompute_num_layers() > 0) {
    v1::Recompute& r = *as_suggested.mutable_training()->mutable_recompute();
    r.set_granularity(v1::Recompute::GRANULARITY_FULL);
    r.set_method(v1::Recompute::METHOD_BLOCK);
    r.set_num_layers(c.recompute_num_layers());
  }
  return as_suggested;
}

// The job, run as suggested, fits (GREEN) at the suggestion's peak.
void ExpectFitsAsSuggested(const v1::Job& job, const v1::Candidate& c) {
  absl::StatusOr<v1::Estimate> e = EstimateJob(AsSuggested(job, c));
  ASSERT_TRUE(e.ok()) << c.ShortDebugString() << ": " << e.status();
  EXPECT_EQ(e->zone(), v1::ZONE_GREEN) << c.ShortDebugString();
  EXPECT_DOUBLE_EQ(e->peak().total_bytes(), c.peak_bytes())
      << c.ShortDebugString();
}

TEST(RefusalHintsTest, RefusalsSuggestWhatFits) {
  // (4,1,2,2) on 8 A100s: 37.58 GiB, YELLOW. The paper's table says the
  // same layout is GREEN (31.97) on 16.
  absl::StatusOr<v1::Decision> d = AdmitJob(
      testing::PaperJob("llama-3.1-8b", "a100-40gb", 4, 1, 2, 2, 8, 8192),
      AdmissionPolicy());
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->verdict(), v1::VERDICT_REFUSE);
  ASSERT_GT(d->suggestions_size(), 0);
  std::set<std::tuple<uint32_t, uint32_t, uint32_t, uint32_t>> named;
  for (const v1::Candidate& c : d->suggestions()) {
    EXPECT_EQ(c.zone(), v1::ZONE_GREEN);
    EXPECT_EQ(c.num_gpus(), 8u);
    EXPECT_LE(c.peak_gib(), 32.0);
    // Each suggestion is another layout, not a schedule of one already named.
    EXPECT_TRUE(named
                    .insert({c.tensor_parallel(), c.context_parallel(),
                             c.pipeline_parallel(), c.micro_batch_size()})
                    .second);
  }
  EXPECT_EQ(d->min_gpus_that_fit(), 16u);

  d = AdmitJob(
      testing::PaperJob("llama-3.1-8b", "a100-40gb", 4, 1, 2, 1, 8, 8192),
      AdmissionPolicy());
  EXPECT_EQ(d->suggestions_size(), 0);  // admitted: nothing to suggest
  EXPECT_EQ(d->min_gpus_that_fit(), 0u);

  // Activations alone exceed the GPU: no GPU count helps.
  d = AdmitJob(
      testing::PaperJob("llama-3.1-8b", "a100-40gb", 1, 1, 1, 16, 8, 8192),
      AdmissionPolicy());
  EXPECT_EQ(d->min_gpus_that_fit(), 0u);

  // Muon's layer-wise distributed optimizer pads more as DP grows: refused
  // as the first job is, no GPU count is suggested, though 16 fit (the
  // search assumes the peak falls with DP, and would pack each count it
  // tries: refusal_hints.cc).
  v1::Job muon =
      testing::PaperJob("llama-3.1-8b", "a100-40gb", 4, 1, 2, 2, 8, 8192);
  muon.mutable_training()->set_optimizer(v1::OPTIMIZER_MUON);
  d = AdmitJob(muon, AdmissionPolicy());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->verdict(), v1::VERDICT_REFUSE);
  EXPECT_EQ(d->min_gpus_that_fit(), 0u);
  muon.set_num_gpus(16);
  EXPECT_EQ(AdmitJob(muon, AdmissionPolicy())->verdict(), v1::VERDICT_ADMIT);
}

// Interleaved over p = 2 with 6 micro-batches a step, refused under a
// 70% limit (29.83 GiB of 28): 2 data-parallel ranks would fit by memory
// but leave each 3 micro-batches, a group of 2 and a last of 1, which
// Megatron's schedule refuses; the count suggested runs (3 ranks, 2
// micro-batches each) and fits.
TEST(RefusalHintsTest, GpuCountSuggestedRunsTheInterleavedSchedule) {
  v1::Job job =
      testing::PaperJob("llama-3.1-8b", "a100-40gb", 4, 1, 2, 1, 8, 8192);
  job.mutable_parallel()->set_virtual_pipeline_stages(2);
  job.mutable_training()->set_global_batch_size(6);
  AdmissionPolicy policy;
  policy.threshold = 0.7;
  absl::StatusOr<v1::Decision> d = AdmitJob(job, policy);
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->verdict(), v1::VERDICT_REFUSE);
  v1::Job at_two = job;
  at_two.set_num_gpus(16);
  EXPECT_NE(EstimateJob(at_two).status().message().find(
                "training.global_batch_size: interleaved 1F1B's last group"),
            std::string::npos)
      << EstimateJob(at_two).status();
  ASSERT_EQ(d->min_gpus_that_fit(), 24u);
  v1::Job suggested = job;
  suggested.set_num_gpus(d->min_gpus_that_fit());
  absl::StatusOr<v1::Estimate> e = EstimateJob(suggested, 0.7);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->zone(), v1::ZONE_GREEN);
}

// A refused job with 2 distributed-optimizer instances is told layouts and
// a GPU count that keep them: data-parallel sizes they divide (an odd DP
// would be refused by Megatron), each fitting with the instances' larger
// optimizer share.
TEST(RefusalHintsTest, SuggestionsKeepTheOptimizerInstances) {
  v1::Job job =
      testing::PaperJob("llama-3.1-8b", "a100-40gb", 4, 1, 2, 2, 16, 8192);
  job.mutable_parallel()->set_distributed_optimizer_instances(2);
  job.mutable_training()->set_global_batch_size(0);
  absl::StatusOr<v1::Decision> d = AdmitJob(job, AdmissionPolicy());
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->verdict(), v1::VERDICT_REFUSE);
  ASSERT_GT(d->suggestions_size(), 0);
  for (const v1::Candidate& c : d->suggestions()) {
    EXPECT_EQ((16 / (c.tensor_parallel() * c.pipeline_parallel())) % 2, 0u)
        << c.ShortDebugString();
    ExpectFitsAsSuggested(job, c);
  }
  const uint32_t gpus = d->min_gpus_that_fit();
  ASSERT_GT(gpus, 16u);
  EXPECT_EQ((gpus / 8) % 2, 0u) << gpus;  // d, with TP 4 x PP 2
  v1::Job at = job;
  at.set_num_gpus(gpus);
  absl::StatusOr<v1::Estimate> e = EstimateJob(at);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->zone(), v1::ZONE_GREEN);
  // The next smaller count the instances allow (d - 2) does not fit.
  at.set_num_gpus(gpus - 16);
  e = EstimateJob(at);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_NE(e->zone(), v1::ZONE_GREEN);
}

// A refused job's suggestions are planned with the job's own settings
// (here Megatron's default dropout, whose masks the paper's setting does
// not store, and unfused attention's s x s scores): each one, run as that
// job, fits. They were planned with the paper's settings, so a suggestion
// could be refused again once tried.
TEST(RefusalHintsTest, SuggestionsFitWithTheJobsOwnSettings) {
  v1::Job job =
      testing::PaperJob("llama-3.1-8b", "a100-40gb", 4, 1, 2, 2, 8, 8192);
  job.mutable_training()->set_hidden_dropout(0.1f);
  job.mutable_training()->set_attention_dropout(0.1f);
  job.mutable_training()->set_attention_kernel(
      v1::ATTENTION_KERNEL_UNFUSED);
  absl::StatusOr<v1::Decision> d = AdmitJob(job, AdmissionPolicy());
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->verdict(), v1::VERDICT_REFUSE);
  ASSERT_GT(d->suggestions_size(), 0);
  for (const v1::Candidate& c : d->suggestions()) {
    ExpectFitsAsSuggested(job, c);
  }
}

// A refused Megatron-FSDP job is told Megatron-FSDP layouts: sharded as it
// shards, without a pipeline (Megatron-FSDP has none), each GREEN as the
// job with that layout.
TEST(RefusalHintsTest, FsdpRefusalsSuggestFsdpLayouts) {
  v1::Job job =
      testing::PaperJob("llama-3.1-8b", "a100-40gb", 1, 1, 1, 8, 8, 8192);
  job.mutable_parallel()->set_data_parallel_sharding(
      v1::DATA_PARALLEL_SHARDING_OPTIM_GRADS);
  absl::StatusOr<v1::Decision> d = AdmitJob(job, AdmissionPolicy());
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->verdict(), v1::VERDICT_REFUSE);
  ASSERT_GT(d->suggestions_size(), 0);
  for (const v1::Candidate& c : d->suggestions()) {
    ASSERT_EQ(c.pipeline_parallel(), 1u) << c.ShortDebugString();
    EXPECT_EQ(c.data_parallel_sharding(),
              v1::DATA_PARALLEL_SHARDING_OPTIM_GRADS);
    ExpectFitsAsSuggested(job, c);
  }
}

// The suggestions' search is counted before any layout is estimated: with
// a bound below that count the same refused job gets none, while the
// default bound (kMaxSuggestionLayouts, far above an 8-GPU plan) gives some.
TEST(RefusalHintsTest, SuggestionsAreBoundedByTheSearchSize) {
  absl::StatusOr<v1::Estimate> e = EstimateJob(
      testing::PaperJob("llama-3.1-8b", "a100-40gb", 4, 1, 2, 2, 8, 8192));
  ASSERT_TRUE(e.ok()) << e.status();
  ASSERT_NE(e->zone(), v1::ZONE_GREEN);
  EXPECT_FALSE(SuggestLayouts(e->job(), kDefaultThreshold, 3).empty());
  EXPECT_TRUE(SuggestLayouts(e->job(), kDefaultThreshold, 3, 10).empty());
  EXPECT_GT(kMaxSuggestionLayouts, 10'000u);  // a 16,384-GPU cluster's
}

// A refused job learns the least full recomputation that makes it fit as it
// is: recomputing that many layers of each stage admits it, one fewer not.
TEST(RefusalHintsTest, RefusalsNameTheLeastRecomputationThatFits) {
  v1::Job job =
      testing::PaperJob("llama-3.1-8b", "a100-40gb", 4, 1, 2, 2, 8, 8192);
  absl::StatusOr<v1::Decision> d = AdmitJob(job, AdmissionPolicy());
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->verdict(), v1::VERDICT_REFUSE);
  const uint32_t n = d->min_recompute_layers_that_fit();
  ASSERT_GT(n, 0u);
  ASSERT_LE(n, 16u);
  auto verdict_with = [&](uint32_t layers) {
    v1::Job with = job;
    v1::Recompute& r = *with.mutable_training()->mutable_recompute();
    r.set_granularity(v1::Recompute::GRANULARITY_FULL);
    r.set_method(v1::Recompute::METHOD_BLOCK);
    r.set_num_layers(layers);
    absl::StatusOr<v1::Decision> again = AdmitJob(with, AdmissionPolicy());
    EXPECT_TRUE(again.ok()) << again.status();
    return again.ok() ? again->verdict() : v1::VERDICT_UNSPECIFIED;
  };
  EXPECT_EQ(verdict_with(n), v1::VERDICT_ADMIT);
  if (n > 1) {
    EXPECT_EQ(verdict_with(n - 1), v1::VERDICT_REFUSE);
  }

  // A job that already recomputes whole layers gets no such hint.
  v1::Job recomputing = job;
  v1::Recompute& r = *recomputing.mutable_training()->mutable_recompute();
  r.set_granularity(v1::Recompute::GRANULARITY_FULL);
  r.set_method(v1::Recompute::METHOD_UNIFORM);
  r.set_num_layers(1);
  EXPECT_EQ(LeastRecomputeThatFits(recomputing, kDefaultThreshold), 0u);
  // Activations alone exceed the GPU even recomputing every layer.
  EXPECT_EQ(LeastRecomputeThatFits(
                testing::PaperJob("llama-3.1-8b", "a100-40gb", 1, 1, 1, 16,
                                  8, 8192),
                kDefaultThreshold),
            0u);
}

// DeepSeek-V3 on `gpus` H100s at 4,096 tokens a sequence and a global
// batch of 8,192, every candidate listed.
v1::PlanRequest DeepSeekV3Request(uint32_t gpus) {
  v1::PlanRequest r;
  r.mutable_model()->set_name("deepseek-v3");
  r.mutable_accelerator()->set_name("h100-80gb");
  r.set_num_gpus(gpus);
  r.set_seq_length(4096);
  r.set_global_batch_size(8192);
  r.set_top_k(0);
  return r;
}

// The first candidate of DeepSeek-V3's plan on 1,024 H100s (4k, global
// batch 8,192) whose modules `wanted` takes, as a job without its
// recomputation (`job`): refused, told exactly the candidate's modules,
// and admitted with them.
void ExpectRefusalNamesACandidatesModules(
    const std::function<bool(const v1::Candidate&)>& wanted, v1::Job& job) {
  const v1::PlanRequest r = DeepSeekV3Request(1024);
  absl::StatusOr<v1::PlanResponse> plan = PlanLayouts(r);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const v1::Candidate* fitting = nullptr;
  for (const v1::Candidate& c : plan->candidates()) {
    if (wanted(c)) {
      fitting = &c;
      break;
    }
  }
  ASSERT_NE(fitting, nullptr);
  job = JobForCandidate(r, *fitting);
  job.mutable_training()->clear_recompute();
  absl::StatusOr<v1::Decision> d = AdmitJob(job, AdmissionPolicy());
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->verdict(), v1::VERDICT_REFUSE);
  EXPECT_EQ(std::vector<int>(d->fits_with_recompute_modules().begin(),
                             d->fits_with_recompute_modules().end()),
            std::vector<int>(fitting->recompute_modules().begin(),
                             fitting->recompute_modules().end()))
      << fitting->ShortDebugString();
  v1::Job with = job;
  v1::Recompute& modules = *with.mutable_training()->mutable_recompute();
  modules.set_granularity(v1::Recompute::GRANULARITY_SELECTIVE);
  *modules.mutable_modules() = d->fits_with_recompute_modules();
  absl::StatusOr<v1::Decision> again = AdmitJob(with, AdmissionPolicy());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->verdict(), v1::VERDICT_ADMIT) << again->reason();
}

// A refused MoE job is told when the cheap selective modules make it fit,
// as the planner fits the same layout: a DeepSeek-V3 candidate that fits by
// them, run without, is refused naming them, and fits with them. A dense
// model has none of them to add (its MLP: RefusalsNameTheMlpWhere-
// ItIsTheCheaperChange); a job recomputing whole layers gets none (one
// granularity).
TEST(RefusalHintsTest, RefusalsNameTheCheapModulesThatFit) {
  v1::Job job;
  ExpectRefusalNamesACandidatesModules(
      [](const v1::Candidate& c) { return c.recompute_modules_size() > 0; },
      job);
  ASSERT_TRUE(job.has_model());
  v1::Job full = job;
  v1::Recompute& layers = *full.mutable_training()->mutable_recompute();
  layers.set_granularity(v1::Recompute::GRANULARITY_FULL);
  layers.set_method(v1::Recompute::METHOD_BLOCK);
  layers.set_num_layers(1);
  absl::StatusOr<v1::Estimate> resolved = EstimateJob(full);
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_TRUE(
      ModulesThatFit(resolved->job(), kDefaultThreshold, 0).empty());

  absl::StatusOr<v1::Decision> d = AdmitJob(
      testing::PaperJob("llama-3.1-8b", "a100-40gb", 4, 1, 2, 2, 8, 8192),
      AdmissionPolicy());
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->verdict(), v1::VERDICT_REFUSE);
  EXPECT_EQ(d->fits_with_recompute_modules_size(), 0);
}

// An MoE job the cheap modules do not fit is told its MoE layers
// recomputed whole (--recompute-modules ... moe) where that fits and costs
// less than the least full recomputation that fits, as a plan picks it:
// DeepSeek-V3 over 16 stages of 2-layer chunks on 1,024 H100s fits only
// recomputing both layers of a chunk (x 4/3) or its MoE layers.
TEST(RefusalHintsTest, RefusalsNameTheMoeLayersWhereTheyAreTheCheaperChange) {
  v1::Job job;
  ExpectRefusalNamesACandidatesModules(
      [](const v1::Candidate& c) {
        return HasModule(c.recompute_modules(), v1::Recompute::MODULE_MOE);
      },
      job);
}

// The hint prices an MoE layer recomputed whole as the plan does, its
// exchange run forward again (cost_model.h MoeRecomputeExchange): on 512
// H100s, where DeepSeek-V3's expert exchange crosses nodes, the plan
// recomputes whole layers instead for some layouts, and each of its first
// 150 recomputing layouts, run without, is refused naming the MoE layers
// exactly where the plan recomputes them (19 named them where the plan
// did not while the hint left the exchange out).
TEST(RefusalHintsTest, RefusalsNameTheMoeLayersOnlyWhereThePlanWould) {
  const v1::PlanRequest r = DeepSeekV3Request(512);
  absl::StatusOr<v1::PlanResponse> plan = PlanLayouts(r);
  ASSERT_TRUE(plan.ok()) << plan.status();
  int checked = 0, by_moe = 0, by_layers = 0;
  for (const v1::Candidate& c : plan->candidates()) {
    const bool moe =
        HasModule(c.recompute_modules(), v1::Recompute::MODULE_MOE);
    if (!moe && c.recompute_num_layers() == 0) continue;
    if (++checked > 150) break;
    v1::Job job = JobForCandidate(r, c);
    job.mutable_training()->clear_recompute();
    absl::StatusOr<v1::Decision> d = AdmitJob(job, AdmissionPolicy());
    ASSERT_TRUE(d.ok()) << d.status();
    ASSERT_EQ(d->verdict(), v1::VERDICT_REFUSE) << c.ShortDebugString();
    EXPECT_EQ(HasModule(d->fits_with_recompute_modules(),
                        v1::Recompute::MODULE_MOE),
              moe)
        << c.ShortDebugString();
    ++(moe ? by_moe : by_layers);
  }
  EXPECT_GT(by_moe, 0);
  EXPECT_GT(by_layers, 0);
}

// A dense job is told its MLP recomputed selectively (--recompute-modules
// mlp) where that fits and costs less than the least full recomputation
// that fits, as a plan picks it: Llama-3.1-405B at TP 8, PP 16 on 8,192
// H100s with 4 chunks of 2 layers a rank (one fewer on the first and last
// stages) fits by recomputing both layers of each chunk (x 4/3) or its
// MLPs (x 1.26): the MLP is named, and fits. Plain 1F1B fits by half of a
// stage's 8 layers (x 7/6), cheaper than the MLP: only the layers are.
TEST(RefusalHintsTest, RefusalsNameTheMlpWhereItIsTheCheaperChange) {
  v1::Job job = testing::PaperJob("llama-3.1-405b", "h100-80gb", 8, 1, 16, 1,
                                  8192, 8192);
  job.mutable_training()->set_global_batch_size(2048);
  v1::Job interleaved = job;
  v1::ParallelConfig& par = *interleaved.mutable_parallel();
  par.set_virtual_pipeline_stages(4);
  for (int stage = 0; stage < 64; ++stage) {
    par.add_layers_per_stage(stage == 0 || stage == 63 ? 1 : 2);
  }
  absl::StatusOr<v1::Decision> d = AdmitJob(interleaved, AdmissionPolicy());
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->verdict(), v1::VERDICT_REFUSE) << d->reason();
  EXPECT_EQ(d->min_recompute_layers_that_fit(), 2u);
  EXPECT_EQ(std::vector<int>(d->fits_with_recompute_modules().begin(),
                             d->fits_with_recompute_modules().end()),
            std::vector<int>{v1::Recompute::MODULE_MLP});
  v1::Job with = interleaved;
  v1::Recompute& r = *with.mutable_training()->mutable_recompute();
  r.set_granularity(v1::Recompute::GRANULARITY_SELECTIVE);
  r.add_modules(v1::Recompute::MODULE_MLP);
  absl::StatusOr<v1::Decision> again = AdmitJob(with, AdmissionPolicy());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->verdict(), v1::VERDICT_ADMIT) << again->reason();

  v1::Job plain = job;
  for (int stage = 0; stage < 16; ++stage) {
    plain.mutable_parallel()->add_layers_per_stage(
        stage == 0 || stage == 15 ? 7 : 8);
  }
  d = AdmitJob(plain, AdmissionPolicy());
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->verdict(), v1::VERDICT_REFUSE) << d->reason();
  EXPECT_EQ(d->min_recompute_layers_that_fit(), 4u);
  EXPECT_EQ(d->fits_with_recompute_modules_size(), 0);
  // Without the full recomputation's count to beat, the MLP that fits.
  absl::StatusOr<v1::Estimate> resolved = EstimateJob(plain);
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_EQ(ModulesThatFit(resolved->job(), kDefaultThreshold, 0),
            std::vector<v1::Recompute::Module>{v1::Recompute::MODULE_MLP});
}

// [LW] A refused Lion or Muon job is told the layouts that fit when their
// plan packs within the Admit path's bound (kMaxSuggestionLayerWiseWork, a
// thirty-second of a plan's): Llama-3.1-8B on 64 H100s is; Llama-3.1-405B on
// 1,024, which a plan takes (9.3e7 steps), is not, and gets no suggestion
// (its other hints still come).
TEST(RefusalHintsTest, LayerWiseSuggestionsAreBoundedOnTheAdmitPath) {
  v1::Job small = testing::PaperJob("llama-3.1-8b", "h100-80gb", 2, 1, 1, 8,
                                    64, 8192);
  small.mutable_training()->set_global_batch_size(256);
  small.mutable_training()->set_optimizer(v1::OPTIMIZER_MUON);
  small.mutable_training()->set_megatron_core_version("0.19.0");
  absl::StatusOr<v1::Decision> d = AdmitJob(small, AdmissionPolicy());
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->verdict(), v1::VERDICT_REFUSE) << d->reason();
  ASSERT_GT(d->suggestions_size(), 0);
  for (const v1::Candidate& c : d->suggestions()) {
    EXPECT_EQ(c.zone(), v1::ZONE_GREEN);
  }

  v1::Job large = testing::PaperJob("llama-3.1-405b", "h100-80gb", 8, 1, 16,
                                    4, 1024, 8192);
  large.mutable_training()->set_global_batch_size(512);
  large.mutable_training()->set_optimizer(v1::OPTIMIZER_MUON);
  large.mutable_training()->set_megatron_core_version("0.19.0");
  for (int stage = 0; stage < 16; ++stage) {
    large.mutable_parallel()->add_layers_per_stage(
        stage == 0 || stage == 15 ? 7 : 8);
  }
  d = AdmitJob(large, AdmissionPolicy());
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->verdict(), v1::VERDICT_REFUSE) << d->reason();
  EXPECT_EQ(d->suggestions_size(), 0);
  // Not for want of a layout that fits: a plan of the same finds them.
  v1::PlanRequest same;
  *same.mutable_model() = large.model();
  *same.mutable_accelerator() = large.accelerator();
  same.set_num_gpus(1024);
  same.set_seq_length(8192);
  same.set_global_batch_size(512);
  *same.mutable_training() = PlanTemplateOf(large.training());
  same.set_top_k(1);
  absl::StatusOr<v1::PlanResponse> plan = PlanLayouts(same);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_GT(plan->candidates_size(), 0);
  EXPECT_EQ(plan->candidates(0).zone(), v1::ZONE_GREEN);
  EXPECT_GT(d->min_recompute_layers_that_fit(), 0u);
}

// Where attention runs unfused, Megatron's default selective recomputation
// (core_attn) drops the s x s scores [K 5]: a refusal names it when it
// makes the job fit, as for Gemma 2's soft-capped scores at 8k (TP 4 on an
// H100), and not where the job already recomputes core attention, or
// FlashAttention keeps no scores.
TEST(RefusalHintsTest, UnfusedAttentionIsToldCoreAttentionRecomputation) {
  v1::Job capped = testing::PaperJob("llama-3.1-8b", "h100-80gb", 4, 1, 1, 1,
                                     4, 8192);
  capped.mutable_model()->set_attention_logit_softcapping(50);
  absl::StatusOr<v1::Decision> d = AdmitJob(capped, AdmissionPolicy());
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->verdict(), v1::VERDICT_REFUSE) << d->reason();
  EXPECT_EQ(std::vector<int>(d->fits_with_recompute_modules().begin(),
                             d->fits_with_recompute_modules().end()),
            std::vector<int>{v1::Recompute::MODULE_CORE_ATTN});
  v1::Job recomputed = capped;
  v1::Recompute& r = *recomputed.mutable_training()->mutable_recompute();
  r.set_granularity(v1::Recompute::GRANULARITY_SELECTIVE);
  r.add_modules(v1::Recompute::MODULE_CORE_ATTN);
  d = AdmitJob(recomputed, AdmissionPolicy());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->verdict(), v1::VERDICT_ADMIT) << d->reason();
  absl::StatusOr<v1::Estimate> flash = EstimateJob(
      testing::PaperJob("llama-3.1-8b", "h100-80gb", 4, 1, 1, 1, 4, 8192));
  ASSERT_TRUE(flash.ok()) << flash.status();
  EXPECT_TRUE(ModulesThatFit(flash->job(), 0.01, 0).empty());
}

// The search costs whole estimates on the Admit path: a job with more
// (virtual) stages than kMaxRecomputeProbeStages is not searched, though
// recomputation would make it fit, as it does with one stage fewer.
TEST(RefusalHintsTest, RecomputationSearchIsBoundedByTheStageCount) {
  auto job_with_stages = [](uint32_t stages) {
    v1::Job job = testing::JobFromText(R"pb(
      model {
        hidden_size: 128
        ffn_hidden_size: 512
        num_attention_heads: 2
        num_query_groups: 2
        vocab_size: 32000
      }
      parallel { tensor_parallel: 1 context_parallel: 1 }
      training { micro_batch_size: 1 seq_length: 8192 }
      accelerator { memory_bytes: 85899345920 gpus_per_node: 8 }
    )pb");
    job.mutable_model()->set_num_layers(stages);
    job.mutable_parallel()->set_pipeline_parallel(4);
    job.mutable_parallel()->set_virtual_pipeline_stages(stages / 4);
    job.mutable_training()->set_global_batch_size(stages);
    job.set_num_gpus(4);
    return job;
  };
  const v1::Job allowed = job_with_stages(kMaxRecomputeProbeStages);
  const v1::Job too_many = job_with_stages(kMaxRecomputeProbeStages + 4);
  for (const v1::Job* job : {&allowed, &too_many}) {
    absl::StatusOr<v1::Estimate> e = EstimateJob(*job);
    ASSERT_TRUE(e.ok()) << e.status();
    EXPECT_NE(e->zone(), v1::ZONE_GREEN);
  }
  EXPECT_EQ(LeastRecomputeThatFits(allowed, kDefaultThreshold), 1u);
  EXPECT_EQ(LeastRecomputeThatFits(too_many, kDefaultThreshold), 0u);
  v1::Job recomputed = too_many;
  v1::Recompute& r = *recomputed.mutable_training()->mutable_recompute();
  r.set_granularity(v1::Recompute::GRANULARITY_FULL);
  r.set_method(v1::Recompute::METHOD_BLOCK);
  r.set_num_layers(1);
  absl::StatusOr<v1::Estimate> e = EstimateJob(recomputed);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->zone(), v1::ZONE_GREEN);
}

}  // namespace
}  // namespace memgate
