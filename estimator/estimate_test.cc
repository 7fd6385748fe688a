#include "estimator/estimate.h"

#include <algorithm>
#include <string>

#include "absl/strings/match.h"
#include "estimator/units.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace memgate {
namespace {

using testing::PaperJob;

// The bytes of a GPU on which a process can allocate `fraction` of
// `bytes` (AllocatableBytes inverted): at 0.99 a stage and its transient
// totalling `bytes` are 1% short.
uint64_t GpuAllocating(double fraction, double bytes) {
  return static_cast<uint64_t>(fraction * (bytes + kProcessRuntimeBytes) /
                               (1 - kDriverShare));
}

// A job whose step copies its gradients to fp32 (bf16 gradients, no
// distributed optimizer) with every layer recomputed, one micro-batch a
// step on each of the data-parallel ranks, on H100s.
v1::Job CopiedGradientsJob(const std::string& model, uint32_t tp,
                           uint32_t ep, uint32_t seq, uint32_t gpus) {
  v1::Job job = testing::JobFromText(R"pb(
    parallel { pipeline_parallel: 1 context_parallel: 1 }
    training {
      micro_batch_size: 1
      precision: PRECISION_BF16_BF16_GRADS
      recompute {
        granularity: GRANULARITY_FULL
        method: METHOD_UNIFORM
        num_layers: 1
      }
    }
    accelerator { name: "h100-80gb" }
  )pb");
  job.mutable_model()->set_name(model);
  job.mutable_parallel()->set_tensor_parallel(tp);
  job.mutable_parallel()->set_expert_parallel(ep);
  job.mutable_parallel()->set_distributed_optimizer(false);
  job.mutable_training()->set_seq_length(seq);
  job.mutable_training()->set_global_batch_size(gpus / tp);
  job.set_num_gpus(gpus);
  return job;
}

// Mixtral-8x7B by name on 16 `gpu`s: TP 2, PP 2, EP 4, ETP 1, 4k.
v1::Job MixtralOverEp4(const std::string& gpu) {
  v1::Job job = PaperJob("mixtral-8x7b", gpu, 2, 1, 2, 1, 16, 4096);
  job.mutable_parallel()->set_expert_parallel(4);
  job.mutable_parallel()->set_expert_tensor_parallel(1);
  return job;
}

// An estimate's assumptions, one a line.
std::string AllAssumptions(const v1::Estimate& e) {
  std::string all;
  for (const std::string& a : e.assumptions()) all += a + "\n";
  return all;
}

TEST(EstimateTest, CatalogAndExplicitDimensionsAgree) {
  absl::StatusOr<v1::Estimate> named = EstimateJob(
      PaperJob("llama-3.1-8b", "a100-40gb", 4, 1, 2, 1, 8, 8192));
  absl::StatusOr<v1::Estimate> explicit_dims =
      EstimateJob(testing::ExplicitLlama31_8BJob());
  ASSERT_TRUE(named.ok()) << named.status();
  ASSERT_TRUE(explicit_dims.ok()) << explicit_dims.status();
  EXPECT_DOUBLE_EQ(named->peak().total_bytes(),
                   explicit_dims->peak().total_bytes());
  EXPECT_NEAR(named->peak_gib(), 27.2, 0.01);  // the paper's first cell
}

// The loss's backward casts the fp32 gradient of the logits to their 16
// bits (memory_model.cc [CE]): s x b x v / t x 2 B on the last stage, a
// transient the paper leaves to the headroom. A small model with a 256k
// vocabulary at 43k tokens a micro-batch and TP 1, every layer recomputed,
// peaks at 59 GiB, under the 80% rule on an H100, but its loss's
// backward needs 20.5 GiB more: the step would OOM, and was admitted
// (testing::SmallModelLargeVocabularyJob).
TEST(EstimateTest, TheLossGradientCastMustFitBesideTheLastStage) {
  absl::StatusOr<v1::Estimate> e = EstimateJob(
      testing::SmallModelLargeVocabularyJob(1, v1::PRECISION_BF16_FP32_GRADS));
  ASSERT_TRUE(e.ok()) << e.status();
  const double cast = 2.0 * 43008 * 256000;
  EXPECT_DOUBLE_EQ(e->peak().loss_gradient_cast_bytes(), cast);
  // The peak alone is GREEN; with the cast beside it, past what a process
  // can allocate.
  EXPECT_EQ(ZoneOf(e->peak().total_bytes(), e->capacity_bytes(),
                   e->threshold()),
            v1::ZONE_GREEN);
  EXPECT_GT(e->peak().total_bytes() + cast,
            AllocatableBytes(e->capacity_bytes()));
  EXPECT_EQ(e->zone(), v1::ZONE_RED);
  // Split over TP 2, half the cast (and a GREEN job again).
  absl::StatusOr<v1::Estimate> tp2 = EstimateJob(
      testing::SmallModelLargeVocabularyJob(2, v1::PRECISION_BF16_FP32_GRADS));
  ASSERT_TRUE(tp2.ok()) << tp2.status();
  EXPECT_DOUBLE_EQ(tp2->peak().loss_gradient_cast_bytes(), cast / 2);
  EXPECT_EQ(tp2->zone(), v1::ZONE_GREEN);
  // In fp32 training the gradient is the logits' dtype: no cast.
  absl::StatusOr<v1::Estimate> fp32 = EstimateJob(
      testing::SmallModelLargeVocabularyJob(1, v1::PRECISION_FP32));
  ASSERT_TRUE(fp32.ok()) << fp32.status();
  EXPECT_EQ(fp32->peak().loss_gradient_cast_bytes(), 0);
  // Only the last stage makes it.
  v1::Job piped = testing::SmallModelLargeVocabularyJob(
      1, v1::PRECISION_BF16_FP32_GRADS);
  piped.mutable_parallel()->set_pipeline_parallel(2);
  absl::StatusOr<v1::Estimate> two = EstimateJob(piped);
  ASSERT_TRUE(two.ok()) << two.status();
  ASSERT_EQ(two->stages_size(), 2);
  EXPECT_EQ(two->stages(0).loss_gradient_cast_bytes(), 0);
  EXPECT_DOUBLE_EQ(two->stages(1).loss_gradient_cast_bytes(), cast);
}

// Without gradient-accumulation fusion the output layer's weight gradient
// is a new tensor at its backward (memory_model.cc [OW]), v/t x h in the
// activations' dtype, beside its input's gradient, s x b x h: in fp32
// training, which has no cast at the loss, it is the last stage's
// transient (measured on an H100: bench/RESULTS.md session 38). A tied
// one-layer model whose output layer is most of its memory, on a GPU of
// its size: GREEN by the 80% rule, the weight gradient does not fit
// beside it, and the reason says which transient.
TEST(EstimateTest, TheUnfusedOutputWeightGradientMustFitBesideTheLastStage) {
  v1::Job job =
      testing::SmallModelLargeVocabularyJob(1, v1::PRECISION_FP32);
  job.mutable_model()->set_num_layers(1);
  job.mutable_model()->set_hidden_size(8192);
  job.mutable_model()->set_tie_word_embeddings(true);
  job.mutable_training()->set_seq_length(4096);
  job.mutable_training()->clear_recompute();
  absl::StatusOr<v1::Estimate> fused = EstimateJob(job);
  ASSERT_TRUE(fused.ok()) << fused.status();
  EXPECT_EQ(fused->peak().output_weight_gradient_bytes(), 0);
  job.mutable_training()->set_gradient_accumulation_unfused(true);
  absl::StatusOr<v1::Estimate> e = EstimateJob(job);
  ASSERT_TRUE(e.ok()) << e.status();
  const double wgrad = 4.0 * 8192 * (256000 + 4096);
  EXPECT_DOUBLE_EQ(e->peak().output_weight_gradient_bytes(), wgrad);
  EXPECT_EQ(e->peak().loss_gradient_cast_bytes(), 0);
  EXPECT_DOUBLE_EQ(TransientBytes(e->peak()), wgrad);
  EXPECT_DOUBLE_EQ(e->peak().total_bytes(), fused->peak().total_bytes());
  // A GPU just short of the stage and its weight gradient together.
  const double total = e->peak().total_bytes();
  job.mutable_accelerator()->set_memory_bytes(
      static_cast<uint64_t>(total + 0.95 * wgrad));
  e = EstimateJob(job);
  ASSERT_TRUE(e.ok()) << e.status();
  ASSERT_LE(total, e->threshold() * e->capacity_bytes());
  EXPECT_EQ(e->zone(), v1::ZONE_RED);
  ASSERT_NE(StageWhoseTransientOverflows(*e), nullptr);
  EXPECT_TRUE(absl::StrContains(TransientName(e->peak()),
                                "output layer's backward"));
  // Fused, the same GPU holds it GREEN.
  job.mutable_training()->clear_gradient_accumulation_unfused();
  e = EstimateJob(job);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->zone(), v1::ZONE_GREEN);
  // In 16-bit training, 2 B an element, less the loss's fp32 softmax
  // (freed) above its 16-bit gradient: the larger transient at 4,096
  // tokens (below h), not at 16,384, where the loss's cast is.
  job.mutable_training()->set_gradient_accumulation_unfused(true);
  job.mutable_training()->set_precision(v1::PRECISION_BF16_FP32_GRADS);
  e = EstimateJob(job);
  ASSERT_TRUE(e.ok()) << e.status();
  const double bf16_wgrad = wgrad / 2 - 2.0 * 4096 * 256000;
  EXPECT_DOUBLE_EQ(e->peak().output_weight_gradient_bytes(), bf16_wgrad);
  EXPECT_GT(bf16_wgrad, e->peak().loss_gradient_cast_bytes());
  EXPECT_DOUBLE_EQ(TransientBytes(e->peak()), bf16_wgrad);
  job.mutable_training()->set_seq_length(16384);
  e = EstimateJob(job);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_DOUBLE_EQ(e->peak().loss_gradient_cast_bytes(), 2.0 * 16384 * 256000);
  EXPECT_DOUBLE_EQ(TransientBytes(e->peak()),
                   e->peak().loss_gradient_cast_bytes());
  EXPECT_TRUE(absl::StrContains(TransientName(e->peak()), "loss's backward"));
}

// The first stage's embedding has a dense weight gradient, v/t x h in the
// weights' dtype, made at the end of each micro-batch's backward, when
// that micro-batch's layer activations are freed (memory_model.cc [EG]):
// above the stage's total by the difference, none where the activations
// are larger. With every layer recomputed, a 1M-entry vocabulary and
// micro-batches of 1,024 tokens (fewer than h), it is the pipeline's
// largest transient: on a GPU just short of it beside the first stage,
// RED; with one stage, the whole micro-batch is freed first.
TEST(EstimateTest, TheEmbeddingGradientMustFitBesideTheFirstStage) {
  v1::Job job = testing::SmallModelLargeVocabularyJob(
      1, v1::PRECISION_BF16_FP32_GRADS);
  job.mutable_model()->set_vocab_size(1024000);
  job.mutable_training()->set_seq_length(1024);
  job.set_num_gpus(64);  // the optimizer sharded over 32
  job.mutable_parallel()->set_pipeline_parallel(2);
  job.mutable_parallel()->add_layers_per_stage(14);
  job.mutable_parallel()->add_layers_per_stage(2);
  absl::StatusOr<v1::Estimate> e = EstimateJob(job);
  ASSERT_TRUE(e.ok()) << e.status();
  ASSERT_EQ(e->stages_size(), 2);
  const double gradient = 2.0 * 1024000 * 2048;
  const v1::StageMemory& first = e->stages(0);
  EXPECT_GT(first.embedding_gradient_bytes(), 0.9 * gradient);
  EXPECT_LT(first.embedding_gradient_bytes(), gradient);
  EXPECT_EQ(e->stages(1).embedding_gradient_bytes(), 0);
  EXPECT_DOUBLE_EQ(TransientBytes(first), first.embedding_gradient_bytes());
  // More layers on the first stage: more freed before it, a smaller one.
  v1::Job deeper = job;
  deeper.mutable_model()->set_num_layers(17);
  deeper.mutable_parallel()->set_layers_per_stage(0, 15);
  absl::StatusOr<v1::Estimate> d = EstimateJob(deeper);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_LT(d->stages(0).embedding_gradient_bytes(),
            first.embedding_gradient_bytes());
  // A GPU 1% short of the first stage and its gradient: RED, saying so.
  const double beside =
      first.total_bytes() + first.expert_imbalance_bytes() +
      first.embedding_gradient_bytes();
  job.mutable_accelerator()->set_memory_bytes(GpuAllocating(0.99, beside));
  e = EstimateJob(job);
  ASSERT_TRUE(e.ok()) << e.status();
  for (const v1::StageMemory& stage : e->stages()) {
    ASSERT_LE(stage.total_bytes(), e->threshold() * e->capacity_bytes());
  }
  EXPECT_EQ(e->zone(), v1::ZONE_RED);
  const v1::StageMemory* overflows = StageWhoseTransientOverflows(*e);
  ASSERT_NE(overflows, nullptr);
  EXPECT_EQ(overflows->stage(), 0u);
  EXPECT_TRUE(absl::StrContains(TransientName(*overflows), "embedding"));
  job.mutable_accelerator()->set_memory_bytes(GpuAllocating(1.01, beside));
  e = EstimateJob(job);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->zone(), v1::ZONE_GREEN);
  // One stage: the gradient less all of the micro-batch's activations.
  job.mutable_parallel()->set_pipeline_parallel(1);
  job.mutable_parallel()->clear_layers_per_stage();
  e = EstimateJob(job);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_DOUBLE_EQ(
      e->peak().embedding_gradient_bytes(),
      std::max(0.0, gradient - e->peak().activation_bytes()));
}

// [OS] Without the distributed optimizer, bf16 gradients
// (--grad-reduce-in-bf16) are copied to fp32 at the step, all of the
// rank's, and kept through an evaluation: Llama-3.1-8B at TP 4 with every
// layer recomputed and 2,048-token micro-batches holds about 2.1B
// parameters a GPU, 4 B each more. On a GPU just short of the stage and that
// copy, RED though the stage's figure is GREEN, the step named; with fp32
// gradients or the precision-aware optimizer's decoupled bf16 gradients
// (Megatron hands the buffer over) nothing is copied; with a current-
// scaling fp8 recipe and fp32 master weights, Megatron copies again.
TEST(EstimateTest, TheOptimizerStepsGradientCopyMustFitBesideTheStates) {
  v1::Job job = CopiedGradientsJob("llama-3.1-8b", 4, 1, 2048, 4);
  absl::StatusOr<v1::Estimate> e = EstimateJob(job);
  ASSERT_TRUE(e.ok()) << e.status();
  const v1::StageMemory stage = e->peak();
  const double copy = 4 * stage.parameters();
  EXPECT_GT(copy, 8e9);
  EXPECT_DOUBLE_EQ(stage.optimizer_step_bytes(),
                   copy - stage.activation_bytes());
  // One stage, one micro-batch in flight, every layer recomputed: an
  // evaluation's forward may hold what training did, beside the copy.
  EXPECT_DOUBLE_EQ(stage.evaluation_bytes(), copy);
  EXPECT_DOUBLE_EQ(TransientBytes(stage), stage.evaluation_bytes());
  EXPECT_TRUE(absl::StrContains(TransientName(stage), "evaluation"));
  const double beside = stage.total_bytes() + stage.evaluation_bytes();
  job.mutable_accelerator()->set_memory_bytes(GpuAllocating(0.99, beside));
  e = EstimateJob(job);
  ASSERT_TRUE(e.ok()) << e.status();
  ASSERT_LE(e->peak().total_bytes(), e->threshold() * e->capacity_bytes());
  EXPECT_EQ(e->zone(), v1::ZONE_RED);
  const v1::StageMemory* overflows = StageWhoseTransientOverflows(*e);
  ASSERT_NE(overflows, nullptr);
  EXPECT_TRUE(absl::StrContains(TransientName(*overflows), "evaluation"));
  job.mutable_accelerator()->set_memory_bytes(GpuAllocating(1.01, beside));
  e = EstimateJob(job);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->zone(), v1::ZONE_GREEN);

  job.mutable_accelerator()->clear_memory_bytes();
  auto step_bytes = [](const v1::Job& j) {
    absl::StatusOr<v1::Estimate> r = EstimateJob(j);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? r->peak().evaluation_bytes() : -1.0;
  };
  v1::Job fp32_grads = job;
  fp32_grads.mutable_training()->set_precision(
      v1::PRECISION_BF16_FP32_GRADS);
  EXPECT_EQ(step_bytes(fp32_grads), 0);
  v1::Job aware = fp32_grads;
  aware.mutable_parallel()->set_distributed_optimizer(true);
  aware.mutable_training()
      ->mutable_precision_aware_optimizer()
      ->set_main_grads_dtype(v1::DTYPE_BF16);
  EXPECT_EQ(step_bytes(aware), 0);
  aware.mutable_training()->mutable_fp8()->set_recipe(
      v1::Fp8::RECIPE_TENSORWISE);
  // Sharded over DP 1 the copy is the whole share again.
  EXPECT_GT(step_bytes(aware), 0);
}

// [OS] [EV] The step frees every activation, the expert load margin's
// too; an evaluation's forward runs beside the copies under the most
// loaded rank's load: with every layer recomputed and one micro-batch on
// one stage it holds what training did, and the whole copy stands above
// the peak, margin and all (Mixtral-8x7B, EP 4, bf16 gradients, no
// distributed optimizer).
TEST(EstimateTest, TheGradientCopyStandsWholeBesideAnExpertLoadMargin) {
  v1::Job job = CopiedGradientsJob("mixtral-8x7b", 2, 4, 4096, 8);
  absl::StatusOr<v1::Estimate> e = EstimateJob(job);
  ASSERT_TRUE(e.ok()) << e.status();
  const v1::StageMemory& stage = e->peak();
  ASSERT_GT(stage.expert_imbalance_bytes(), 0);
  const double copy = 4 * stage.parameters();
  EXPECT_DOUBLE_EQ(stage.optimizer_step_bytes(),
                   std::max(0.0, copy - stage.activation_bytes() -
                                     stage.expert_imbalance_bytes()));
  EXPECT_DOUBLE_EQ(stage.evaluation_bytes(), copy);
}

// Megatron's own attention keeps one layer's scores in its global memory
// buffer for the run (memory_model.cc [UA]): b x a/t x s x s, 4 B in fp32.
// Outside the total the 80% rule reads, but it must fit beside the stage
// in what a process can allocate. Llama-3.1-8B in fp32 at 16k tokens, TP
// 2, every layer recomputed: 60.90 GiB (GREEN by the rule, and admitted
// before the buffer was counted) beside a 16 GiB buffer is past the 76.75
// GiB a process has: RED. At TP 4 the buffer halves and the job fits.
TEST(EstimateTest, TheLocalAttentionScoreBufferMustFitBesideTheStage) {
  auto job = [](uint32_t tp) {
    v1::Job j = PaperJob("llama-3.1-8b", "h100-80gb", tp, 1, 1, 1, 8, 16384);
    j.mutable_training()->set_precision(v1::PRECISION_FP32);
    j.mutable_training()->set_attention_kernel(v1::ATTENTION_KERNEL_LOCAL);
    v1::Recompute& r = *j.mutable_training()->mutable_recompute();
    r.set_granularity(v1::Recompute::GRANULARITY_FULL);
    r.set_method(v1::Recompute::METHOD_UNIFORM);
    r.set_num_layers(1);
    return j;
  };
  absl::StatusOr<v1::Estimate> e = EstimateJob(job(2));
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_DOUBLE_EQ(e->peak().attention_score_buffer_bytes(),
                   4.0 * (32 / 2) * 16384.0 * 16384.0);
  EXPECT_EQ(ZoneOf(e->peak().total_bytes(), e->capacity_bytes(),
                   e->threshold()),
            v1::ZONE_GREEN);
  EXPECT_EQ(e->zone(), v1::ZONE_RED);
  const v1::StageMemory* stage = StageWhoseTransientOverflows(*e);
  ASSERT_NE(stage, nullptr);
  EXPECT_GT(HeldBesideTransients(*stage),
            AllocatableBytes(e->capacity_bytes()));
  absl::StatusOr<v1::Estimate> tp4 = EstimateJob(job(4));
  ASSERT_TRUE(tp4.ok()) << tp4.status();
  EXPECT_DOUBLE_EQ(tp4->peak().attention_score_buffer_bytes(),
                   e->peak().attention_score_buffer_bytes() / 2);
  EXPECT_EQ(tp4->zone(), v1::ZONE_GREEN);
  // TransformerEngine's unfused attention has no such buffer.
  v1::Job te = job(2);
  te.mutable_training()->set_attention_kernel(v1::ATTENTION_KERNEL_UNFUSED);
  absl::StatusOr<v1::Estimate> unfused = EstimateJob(te);
  ASSERT_TRUE(unfused.ok()) << unfused.status();
  EXPECT_EQ(unfused->peak().attention_score_buffer_bytes(), 0);
}

// A transient is held to what a process can allocate: the GPU less the
// process's CUDA context and NCCL (2.43 GiB) and the driver's share (1.03%)
// as measured on an H100 and an H200 (kProcessRuntimeBytes, kDriverShare):
// 76.75 GiB of 80 and at most CUDA's 139.80 GiB of an H200's 141, less
// the context. The admission figure alone keeps the paper's zones against
// the whole GPU.
TEST(EstimateTest, ATransientMustFitInWhatAProcessCanAllocate) {
  const double gpu = 80.0 * kBytesPerGiB;
  EXPECT_NEAR(AllocatableBytes(gpu) / kBytesPerGiB, 76.75, 0.01);
  EXPECT_DOUBLE_EQ(AllocatableBytes(gpu), 85017493504.0 - 2609709056.0);
  EXPECT_LE(AllocatableBytes(141.0 * kBytesPerGiB),
            150109880320.0 - 2595028992.0);
  EXPECT_EQ(AllocatableBytes(1.0 * kBytesPerGiB), 0);
  StagePeak peak;
  peak.admission = 56.0 * kBytesPerGiB;
  peak.transient = AllocatableBytes(gpu);
  EXPECT_EQ(AdmissionZone(peak, gpu, 0.8), v1::ZONE_GREEN);
  peak.transient = AllocatableBytes(gpu) + 1;
  EXPECT_EQ(AdmissionZone(peak, gpu, 0.8), v1::ZONE_RED);
  // No transient: a YELLOW peak inside the last 3.25 GiB stays YELLOW...
  peak.admission = peak.transient = 78.0 * kBytesPerGiB;
  EXPECT_EQ(AdmissionZone(peak, gpu, 0.8), v1::ZONE_YELLOW);
  // ...but a GREEN one there, under a threshold near 1, will OOM.
  EXPECT_EQ(AdmissionZone(peak, gpu, 1.0), v1::ZONE_RED);
  peak.admission = peak.transient = 76.0 * kBytesPerGiB;
  EXPECT_EQ(AdmissionZone(peak, gpu, 1.0), v1::ZONE_GREEN);
  // On a 12 GiB GPU, 80% (9.6 GiB) is more than a process can allocate
  // (9.45 GiB).
  const double small = 12.0 * kBytesPerGiB;
  EXPECT_LT(AllocatableBytes(small), 0.8 * small);
  peak.admission = peak.transient = 9.5 * kBytesPerGiB;
  EXPECT_EQ(ZoneOf(peak.admission, small, 0.8), v1::ZONE_GREEN);
  EXPECT_EQ(AdmissionZone(peak, small, 0.8), v1::ZONE_RED);
  peak.admission = peak.transient = 9.4 * kBytesPerGiB;
  EXPECT_EQ(AdmissionZone(peak, small, 0.8), v1::ZONE_GREEN);
}

// AdmissionZone and StageWhoseTransientOverflows apply one rule: a
// stage's transient beside its figure makes the zone RED only above what
// a process can allocate and above the largest figure. A first stage at
// 78 GiB of 80 (YELLOW: above the 76.75 GiB a process can allocate, below
// the GPU) beside a last stage of 70 + 7.5 GiB stays YELLOW, and no stage
// is named as overflowing (the report once printed a "RED:" line for
// it); at 70 + 9 GiB the last stage decides: RED, and it is named.
TEST(EstimateTest, TheZoneAndTheStageNamedApplyOneTransientRule) {
  const double gib = 1u << 30;
  const double capacity = 80 * gib;
  for (const double cast_gib : {7.5, 9.0}) {
    v1::Estimate e;
    e.set_capacity_bytes(capacity);
    v1::StageMemory& first = *e.add_stages();
    first.set_stage(0);
    first.set_total_bytes(78 * gib);
    v1::StageMemory& last = *e.add_stages();
    last.set_stage(1);
    last.set_total_bytes(70 * gib);
    last.set_loss_gradient_cast_bytes(cast_gib * gib);
    *e.mutable_peak() = first;
    StagePeak peak;
    peak.admission = 78 * gib;
    peak.transient = (70 + cast_gib) * gib;
    const v1::Zone zone = AdmissionZone(peak, capacity, 0.8);
    e.set_zone(zone);
    const v1::StageMemory* named = StageWhoseTransientOverflows(e);
    if (cast_gib < 8) {
      EXPECT_EQ(zone, v1::ZONE_YELLOW);
      EXPECT_EQ(named, nullptr);
    } else {
      EXPECT_EQ(zone, v1::ZONE_RED);
      ASSERT_NE(named, nullptr);
      EXPECT_EQ(named->stage(), 1u);
      EXPECT_TRUE(RedThoughItsPeakFits(e));
    }
  }
}

// A catalog MoE name brings its experts even when every dimension is
// given: a job naming mixtral-8x7b is never estimated as a dense 7B.
TEST(EstimateTest, CatalogNameBringsExpertsWithExplicitDimensions) {
  v1::Job job = MixtralOverEp4("h100-80gb");
  absl::StatusOr<v1::Estimate> named = EstimateJob(job);
  ASSERT_TRUE(named.ok()) << named.status();
  v1::ModelConfig& m = *job.mutable_model();
  m.set_num_layers(32);
  m.set_hidden_size(4096);
  m.set_ffn_hidden_size(14336);
  m.set_num_attention_heads(32);
  m.set_num_query_groups(8);
  m.set_vocab_size(32000);
  absl::StatusOr<v1::Estimate> explicit_dims = EstimateJob(job);
  ASSERT_TRUE(explicit_dims.ok()) << explicit_dims.status();
  EXPECT_TRUE(explicit_dims->job().model().has_moe());
  EXPECT_DOUBLE_EQ(named->peak().total_bytes(),
                   explicit_dims->peak().total_bytes());
  EXPECT_NEAR(named->total_parameters() / 46.7e9, 1, 0.005);
}

// [F4] NVFP4 is counted at MXFP8's bytes (an upper bound of its 4-bit
// elements and 16-element scales), the same layers and copies; Megatron
// pads each local expert's rows to 128 under fp4 where MXFP8 pads to 32.
TEST(EstimateTest, Nvfp4IsCountedAsMxfp8WithWiderExpertPadding) {
  // The job's peak stage under `recipe` (none: RECIPE_UNSPECIFIED and
  // `with_fp8` false).
  auto peak = [](v1::Job job, v1::Fp8::Recipe recipe, bool with_fp8 = true) {
    if (with_fp8) job.mutable_training()->mutable_fp8()->set_recipe(recipe);
    absl::StatusOr<v1::Estimate> e = EstimateJob(job);
    EXPECT_TRUE(e.ok()) << e.status();
    return e.ok() ? e->peak() : v1::StageMemory();
  };
  const v1::Job dense = PaperJob("llama-3.1-8b", "b200-180gb", 2, 1, 2, 1,
                                 16, 4096);
  const v1::Job moe = MixtralOverEp4("b200-180gb");
  EXPECT_DOUBLE_EQ(peak(dense, v1::Fp8::RECIPE_NVFP4).total_bytes(),
                   peak(dense, v1::Fp8::RECIPE_MXFP8).total_bytes());
  EXPECT_GT(peak(moe, v1::Fp8::RECIPE_NVFP4).total_bytes(),
            peak(moe, v1::Fp8::RECIPE_MXFP8).total_bytes());
  // Megatron sizes TransformerEngine's userbuffers by --fp8-format, off
  // under fp4: the 8 all-gathers stay bf16 (2 B where MXFP8's hold 1).
  v1::Job overlap = dense;
  overlap.mutable_parallel()->set_sequence_parallel(true);
  overlap.mutable_training()->set_tp_comm_overlap(
      v1::TrainingConfig::TP_COMM_OVERLAP_DEFAULT);
  const double nvfp4 =
      peak(overlap, v1::Fp8::RECIPE_NVFP4).te_userbuffer_bytes();
  EXPECT_DOUBLE_EQ(nvfp4, peak(overlap, v1::Fp8::RECIPE_UNSPECIFIED, false)
                              .te_userbuffer_bytes());
  EXPECT_GT(nvfp4, peak(overlap, v1::Fp8::RECIPE_MXFP8).te_userbuffer_bytes());
}

// A job naming a catalog MoE model may give expert settings without the
// experts (a plan candidate's grouped GEMMs, for moe_act): they apply over
// the catalog's experts, which are never dropped for an empty list.
TEST(EstimateTest, ExpertSettingsApplyOverTheCatalogsExperts) {
  v1::Job job = MixtralOverEp4("h100-80gb");
  absl::StatusOr<v1::Estimate> named = EstimateJob(job);
  ASSERT_TRUE(named.ok()) << named.status();
  job.mutable_model()->mutable_moe()->set_grouped_gemm(true);
  absl::StatusOr<v1::Estimate> grouped = EstimateJob(job);
  ASSERT_TRUE(grouped.ok()) << grouped.status();
  EXPECT_EQ(grouped->job().model().moe().num_experts(), 8u);
  EXPECT_TRUE(grouped->job().model().moe().grouped_gemm());
  EXPECT_DOUBLE_EQ(grouped->peak().total_bytes(), named->peak().total_bytes());
  // The settings given win over the catalog's.
  job.mutable_model()->mutable_moe()->set_router_topk(1);
  absl::StatusOr<v1::Estimate> top1 = EstimateJob(job);
  ASSERT_TRUE(top1.ok()) << top1.status();
  EXPECT_EQ(top1->job().model().moe().router_topk(), 1u);
  EXPECT_LT(top1->peak().total_bytes(), named->peak().total_bytes());
}

// [RS] By name the router's function is the config's (Mixtral: a softmax,
// counted over every expert), its kernel and losses unknown and counted at
// their largest, and said so; a job that names them counts what they keep.
TEST(EstimateTest, RouterSettingsByNameAreCountedAtTheirLargest) {
  v1::Job job = MixtralOverEp4("h100-80gb");
  absl::StatusOr<v1::Estimate> named = EstimateJob(job);
  ASSERT_TRUE(named.ok()) << named.status();
  EXPECT_TRUE(absl::StrContains(
      AllAssumptions(*named),
      "router: softmax over every expert, fused or not unknown (the larger "
      "counted), a load-balancing loss counted (unknown), the z-loss "
      "counted (unknown)"))
      << AllAssumptions(*named);
  v1::MoeConfig& moe = *job.mutable_model()->mutable_moe();
  moe.set_router_fusion(false);
  moe.set_aux_loss(false);
  moe.set_z_loss(false);
  absl::StatusOr<v1::Estimate> known = EstimateJob(job);
  ASSERT_TRUE(known.ok()) << known.status();
  EXPECT_LT(known->peak().total_bytes(), named->peak().total_bytes());
  EXPECT_TRUE(absl::StrContains(
      AllAssumptions(*known),
      "router: softmax over every expert, unfused, no load-balancing loss, "
      "no z-loss; beside the permutation's map"))
      << AllAssumptions(*known);
}

// MLA settings work the same way: DeepSeek-V3 by name with only
// mla.fused_down_projection keeps the catalog's latents, its down
// projections split over TP 2 (fewer parameters a GPU); a rotary width
// given beside it wins over the catalog's.
TEST(EstimateTest, MlaSettingsApplyOverTheCatalogsLatents) {
  v1::Job job = PaperJob("deepseek-v3", "h100-80gb", 2, 1, 1, 1, 1024, 4096);
  job.mutable_parallel()->set_expert_parallel(64);
  absl::StatusOr<v1::Estimate> named = EstimateJob(job);
  ASSERT_TRUE(named.ok()) << named.status();
  job.mutable_model()->mutable_mla()->set_fused_down_projection(true);
  absl::StatusOr<v1::Estimate> fused = EstimateJob(job);
  ASSERT_TRUE(fused.ok()) << fused.status();
  EXPECT_EQ(fused->job().model().mla().kv_lora_rank(), 512u);
  EXPECT_EQ(fused->job().model().mla().q_lora_rank(), 1536u);
  EXPECT_TRUE(fused->job().model().mla().fused_down_projection());
  EXPECT_LT(fused->peak().parameters(), named->peak().parameters());
  job.mutable_model()->mutable_mla()->set_qk_pos_emb_head_dim(32);
  absl::StatusOr<v1::Estimate> narrower = EstimateJob(job);
  ASSERT_TRUE(narrower.ok()) << narrower.status();
  EXPECT_EQ(narrower->job().model().mla().qk_pos_emb_head_dim(), 32u);
  EXPECT_EQ(narrower->job().model().mla().kv_lora_rank(), 512u);
}

// model.vocab_size_divisible_by pads as Megatron does at the job's TP:
// 128,256 with 128 x TP 8 is the job whose vocabulary is 129,024 outright,
// stage for stage and in its parameter count; at TP 2 (a multiple of 256
// already) nothing changes.
TEST(EstimateTest, TheVocabularyMultiplePadsAtTheJobsTp) {
  auto job_at = [](uint32_t tp, uint32_t vocab, uint32_t multiple) {
    v1::Job job = PaperJob("llama-3.1-8b", "h100-80gb", tp, 1, 2, 1, 64, 8192);
    job.mutable_model()->set_vocab_size(vocab);
    job.mutable_model()->set_vocab_size_divisible_by(multiple);
    absl::StatusOr<v1::Estimate> e = EstimateJob(job);
    EXPECT_TRUE(e.ok()) << e.status();
    return *e;
  };
  const v1::Estimate padded = job_at(8, 128256, 128);
  const v1::Estimate outright = job_at(8, 129024, 0);
  ASSERT_EQ(padded.stages_size(), 2);
  for (int i = 0; i < 2; ++i) {
    EXPECT_DOUBLE_EQ(padded.stages(i).total_bytes(),
                     outright.stages(i).total_bytes());
  }
  EXPECT_DOUBLE_EQ(padded.total_parameters(), outright.total_parameters());
  EXPECT_GT(padded.peak().total_bytes(),
            job_at(8, 128256, 0).peak().total_bytes());
  EXPECT_DOUBLE_EQ(job_at(2, 128256, 128).peak().total_bytes(),
                   job_at(2, 128256, 0).peak().total_bytes());
}

// The largest MoE job validation allows (65,536 layers, 4096 stages of 16
// chunks each) is estimated, and one more layer's worth is refused by
// validation before any work. Its cost (the per-layer table and the chunk
// offsets are built once, O(L + p v), never per stage) is measured by
// BM_EstimateLargestInterleavedMoeJob (bench/estimator_benchmark.cc), not
// timed here.
// The estimate's assumptions name what the unfused attention keeps, as
// its term counts it (UnfusedAttentionKeeps): Llama-3.1-8B's query groups
// are expanded; under selective recomputation the QKV output stays whole.
TEST(EstimateTest, AssumptionsSayWhatTheUnfusedAttentionKeeps) {
  v1::Job job = PaperJob("llama-3.1-8b", "h100-80gb", 1, 1, 1, 1, 1, 4096);
  job.mutable_training()->set_attention_kernel(v1::ATTENTION_KERNEL_UNFUSED);
  auto assumed = [&]() {
    absl::StatusOr<v1::Estimate> e = EstimateJob(job);
    EXPECT_TRUE(e.ok()) << e.status();
    return e.ok() ? AllAssumptions(*e) : std::string();
  };
  std::string text = assumed();
  EXPECT_NE(text.find("also keeps K and V expanded to the query heads; each "
                      "layer's s x s bool causal mask"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("QKV output"), std::string::npos) << text;
  job.mutable_training()->mutable_recompute()->set_granularity(
      v1::Recompute::GRANULARITY_SELECTIVE);
  text = assumed();
  EXPECT_NE(text.find("its scores recomputed"), std::string::npos) << text;
  EXPECT_NE(text.find("also keeps the whole QKV output"), std::string::npos)
      << text;
  EXPECT_EQ(text.find("expanded"), std::string::npos) << text;
}

// Selective recomputation's assumption names the modules the job
// recomputes (it once said "core attention" for a job recomputing only the
// experts' activation) and says core attention saves nothing only where
// core attention is among them and the attention is fused.
TEST(EstimateTest, AssumptionsNameTheModulesRecomputed) {
  v1::Job job = MixtralOverEp4("h100-80gb");
  job.mutable_model()->mutable_moe()->set_grouped_gemm(true);
  v1::Recompute& r = *job.mutable_training()->mutable_recompute();
  r.set_granularity(v1::Recompute::GRANULARITY_SELECTIVE);
  auto assumed = [&]() {
    absl::StatusOr<v1::Estimate> e = EstimateJob(job);
    EXPECT_TRUE(e.ok()) << e.status();
    return e.ok() ? AllAssumptions(*e) : std::string();
  };
  std::string text = assumed();
  EXPECT_NE(text.find("selective recomputation of core_attn (Megatron's "
                      "default): their outputs dropped, recomputed from the "
                      "inputs kept (one layer's remade at its backward, "
                      "counted once a stage); core attention saves nothing "
                      "with FlashAttention"),
            std::string::npos)
      << text;
  r.add_modules(v1::Recompute::MODULE_MOE_ACT);
  text = assumed();
  EXPECT_NE(text.find("selective recomputation of moe_act: their outputs "
                      "dropped"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("core attention"), std::string::npos) << text;
  r.add_modules(v1::Recompute::MODULE_CORE_ATTN);
  text = assumed();
  EXPECT_NE(text.find("selective recomputation of moe_act, core_attn: "),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("core attention saves nothing"), std::string::npos)
      << text;
}

// Lion's states by release (memory_model.cc [OS]): the estimate says
// which it counted, and without a release that it took the larger.
TEST(EstimateTest, AssumptionsSayWhichParametersLionTrains) {
  v1::Job job = PaperJob("llama-3.1-8b", "h100-80gb", 2, 1, 2, 1, 16, 4096);
  job.mutable_training()->set_optimizer(v1::OPTIMIZER_LION);
  job.mutable_parallel()->set_distributed_optimizer(false);
  auto assumed = [&](const char* release) {
    job.mutable_training()->set_megatron_core_version(release);
    absl::StatusOr<v1::Estimate> e = EstimateJob(job);
    EXPECT_TRUE(e.ok()) << e.status();
    return e.ok() ? AllAssumptions(*e) : std::string();
  };
  std::string text = assumed("");
  EXPECT_NE(text.find("Lion, release not given"), std::string::npos) << text;
  EXPECT_NE(text.find("the vocabulary shard included"), std::string::npos)
      << text;
  text = assumed("0.17.1");
  EXPECT_NE(text.find("Lion (Megatron core 0.17): one fp32 momentum (4 B) "
                      "for every parameter"),
            std::string::npos)
      << text;
  text = assumed("0.19.0");
  EXPECT_NE(text.find("Lion (Megatron core 0.18.0 on): one fp32 momentum "
                      "(4 B) for the matrices; the word embeddings, LM head, "
                      "norms and biases trained with Adam"),
            std::string::npos)
      << text;
}

// Muon's line says which optimizer the rest takes and which
// Newton-Schulz mode it counted, and where that came from.
TEST(EstimateTest, AssumptionsSayWhatMuonsStepCounts) {
  v1::Job job = PaperJob("llama-3.1-8b", "h100-80gb", 2, 1, 2, 1, 16, 4096);
  job.mutable_training()->set_optimizer(v1::OPTIMIZER_MUON);
  job.mutable_parallel()->set_distributed_optimizer(false);
  auto assumed = [&]() {
    absl::StatusOr<v1::Estimate> e = EstimateJob(job);
    EXPECT_TRUE(e.ok()) << e.status();
    return e.ok() ? AllAssumptions(*e) : std::string();
  };
  std::string text = assumed();
  EXPECT_NE(text.find("with Adam (m, v: 8 B); at the step, once the "
                      "activations are freed, its largest matrix's "
                      "Newton-Schulz copies (tp mode duplicated, no release "
                      "given: main's default, the larger; bf16 iteration)"),
            std::string::npos)
      << text;
  job.mutable_training()->mutable_muon()->set_scalar_optimizer(
      v1::OPTIMIZER_LION);
  text = assumed();
  EXPECT_NE(text.find("lion counted as Adam"), std::string::npos) << text;
  job.mutable_training()->set_megatron_core_version("0.19.0");
  text = assumed();
  EXPECT_NE(text.find("with Lion (4 B); at the step"), std::string::npos)
      << text;
  EXPECT_NE(text.find("tp mode blockwise, the release's default"),
            std::string::npos)
      << text;
}

// A GPU given by its capacity alone is taken for an H100: where another
// catalog GPU's kernels would keep the scores (Gemma's 256-wide heads with
// FlashAttention disabled: cuDNN trains them on Hopper only), the
// assumptions say so and name those GPUs; Llama's 128-wide heads, fused
// everywhere, need no such line.
TEST(EstimateTest, AnUnnamedGpuSaysWhereItsAttentionWasTakenForAnH100s) {
  v1::Job job = PaperJob("llama-3.1-8b", "h100-80gb", 1, 1, 1, 1, 1, 4096);
  job.mutable_accelerator()->clear_name();
  job.mutable_accelerator()->set_memory_bytes(80ull << 30);
  job.mutable_accelerator()->set_gpus_per_node(8);
  job.mutable_training()->set_flash_attention_disabled(true);
  auto assumed = [](const v1::Job& j) {
    absl::StatusOr<v1::Estimate> e = EstimateJob(j);
    EXPECT_TRUE(e.ok()) << e.status();
    return e.ok() ? AllAssumptions(*e) : std::string();
  };
  EXPECT_EQ(assumed(job).find("the GPU is not named"), std::string::npos);
  job.mutable_model()->set_head_dim(256);
  const std::string text = assumed(job);
  EXPECT_NE(text.find("the GPU is not named (accelerator.name, --gpu): its "
                      "attention kernels are taken to be an H100's"),
            std::string::npos)
      << text;
  for (const char* gpu : {"a100-80gb", "l40s-48gb", "b200-180gb"}) {
    EXPECT_NE(text.find(gpu), std::string::npos) << gpu << ": " << text;
  }
  EXPECT_EQ(text.find("h800-80gb"), std::string::npos) << text;
  // Named, the GPU's own rule applies and nothing is said.
  job.mutable_accelerator()->set_name("h100-80gb");
  EXPECT_EQ(assumed(job).find("the GPU is not named"), std::string::npos);
}

// Attention sinks on cuDNN's fused attention keep no scores: the estimate
// is the vanilla softmax's plus the learned logits (a/t a layer), and says
// which kernel runs them.
TEST(EstimateTest, SinksOnCudnnsAttentionKeepNoScores) {
  v1::Job job = PaperJob("llama-3.1-8b", "h100-80gb", 2, 1, 1, 1, 2, 4096);
  job.mutable_training()->set_flash_attention_disabled(true);
  const absl::StatusOr<v1::Estimate> vanilla = EstimateJob(job);
  job.mutable_model()->set_softmax_type(v1::SOFTMAX_TYPE_LEARNABLE);
  const absl::StatusOr<v1::Estimate> sinks = EstimateJob(job);
  ASSERT_TRUE(vanilla.ok() && sinks.ok()) << sinks.status();
  // 32 heads over TP 2, 32 layers, bf16 weight, fp32 gradient and Adam
  // (unsharded at DP 1): 16 x 32 x (2 + 4 + 12) bytes.
  EXPECT_DOUBLE_EQ(sinks->peak().total_bytes() - vanilla->peak().total_bytes(),
                   16.0 * 32 * 18);
  EXPECT_NE(AllAssumptions(*sinks).find(
                "attention sinks (SOFTMAX_TYPE_LEARNABLE) in cuDNN's fused "
                "attention"),
            std::string::npos)
      << AllAssumptions(*sinks);
}

// Deterministic, TransformerEngine takes cuDNN's fused attention from
// sinks (utils.py "Filter: Determinism") and FlashAttention has none: a
// job with sinks runs the unfused attention, with FlashAttention off or
// not, and is estimated as the same job with that kernel given (its
// scores kept, s + 1 wide), saying why. Before, with FlashAttention off it
// was taken to be cuDNN's and its scores were left out; with it on, the
// job was refused as ambiguous. A FLASH kernel given is refused.
TEST(EstimateTest, DeterministicSinksRunTheUnfusedAttention) {
  v1::Job job = PaperJob("llama-3.1-8b", "h100-80gb", 2, 1, 1, 1, 2, 4096);
  job.mutable_model()->set_softmax_type(v1::SOFTMAX_TYPE_LEARNABLE);
  job.mutable_training()->set_te_deterministic_attention(true);
  v1::Job unfused = job;
  unfused.mutable_training()->set_attention_kernel(
      v1::ATTENTION_KERNEL_UNFUSED);
  const absl::StatusOr<v1::Estimate> expected = EstimateJob(unfused);
  ASSERT_TRUE(expected.ok()) << expected.status();
  v1::Job cudnn_only = job;
  cudnn_only.mutable_training()->set_flash_attention_disabled(true);
  v1::Job unfused_cudnn_only = cudnn_only;
  unfused_cudnn_only.mutable_training()->set_attention_kernel(
      v1::ATTENTION_KERNEL_UNFUSED);
  for (const auto& [given, same] :
       {std::pair{job, unfused}, std::pair{cudnn_only, unfused_cudnn_only}}) {
    const absl::StatusOr<v1::Estimate> e = EstimateJob(given);
    const absl::StatusOr<v1::Estimate> kernel = EstimateJob(same);
    ASSERT_TRUE(e.ok() && kernel.ok()) << e.status() << kernel.status();
    EXPECT_EQ(e->peak().total_bytes(), kernel->peak().total_bytes());
    EXPECT_NE(AllAssumptions(*e).find("FlashAttention has no sinks"),
              std::string::npos)
        << AllAssumptions(*e);
  }
  v1::Job vanilla = job;
  vanilla.mutable_model()->set_softmax_type(v1::SOFTMAX_TYPE_VANILLA);
  const absl::StatusOr<v1::Estimate> flash = EstimateJob(vanilla);
  ASSERT_TRUE(flash.ok()) << flash.status();
  // 16 heads a rank x 4096 x 4097 x 2 B x 32 layers: 16 GiB of scores.
  EXPECT_GT(expected->peak().total_bytes(),
            flash->peak().total_bytes() + 15.0 * (1u << 30));
  cudnn_only.mutable_training()->set_attention_kernel(
      v1::ATTENTION_KERNEL_FLASH);
  const absl::StatusOr<v1::Estimate> refused = EstimateJob(cudnn_only);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("training.attention_kernel"),
            std::string::npos)
      << refused.status();
}

// On a B200 cuDNN's deterministic backward needs no attention dropout
// (and cuDNN 9.18.1, assumed and said): a deterministic job with
// FlashAttention off keeps its scores at dropout 0.1, not at 0.
TEST(EstimateTest, DeterministicCudnnOnABlackwellSaysWhatItAssumes) {
  v1::Job job = PaperJob("llama-3.1-8b", "b200-180gb", 2, 1, 1, 1, 2, 4096);
  job.mutable_training()->set_flash_attention_disabled(true);
  job.mutable_training()->set_te_deterministic_attention(true);
  const absl::StatusOr<v1::Estimate> cudnn = EstimateJob(job);
  ASSERT_TRUE(cudnn.ok()) << cudnn.status();
  EXPECT_NE(AllAssumptions(*cudnn).find("from cuDNN 9.18.1, assumed"),
            std::string::npos)
      << AllAssumptions(*cudnn);
  job.mutable_training()->set_attention_dropout(0.1f);
  const absl::StatusOr<v1::Estimate> dropout = EstimateJob(job);
  ASSERT_TRUE(dropout.ok()) << dropout.status();
  // 16 heads a rank x 4096^2 x 5 B x 32 layers: 40 GiB of scores.
  EXPECT_GT(dropout->peak().total_bytes(),
            cudnn->peak().total_bytes() + 35.0 * (1u << 30));
  EXPECT_NE(AllAssumptions(*dropout).find("only without dropout"),
            std::string::npos)
      << AllAssumptions(*dropout);
}

// An fp32 job that leaves the attention kernel unset runs Transformer
// Engine's unfused attention (no FlashAttention for fp32): it is estimated
// as the same job with the kernel given, with its 4-byte scores (a x s^2 x
// b x 4 a layer more than the bf16 job's twice, at least) and says why;
// with context parallelism it cannot run and is refused with that reason.
TEST(EstimateTest, Fp32JobsRunTheUnfusedAttention) {
  v1::Job job = PaperJob("llama-3.1-8b", "h100-80gb", 1, 1, 1, 1, 1, 4096);
  job.mutable_training()->set_precision(v1::PRECISION_FP32);
  job.mutable_training()->set_attention_dropout(0);
  absl::StatusOr<v1::Estimate> unset = EstimateJob(job);
  ASSERT_TRUE(unset.ok()) << unset.status();
  v1::Job given = job;
  given.mutable_training()->set_attention_kernel(
      v1::ATTENTION_KERNEL_UNFUSED);
  absl::StatusOr<v1::Estimate> unfused = EstimateJob(given);
  ASSERT_TRUE(unfused.ok()) << unfused.status();
  EXPECT_DOUBLE_EQ(unset->peak().total_bytes(), unfused->peak().total_bytes());
  v1::Job bf16 = job;
  bf16.mutable_training()->set_precision(v1::PRECISION_BF16_FP32_GRADS);
  absl::StatusOr<v1::Estimate> flash = EstimateJob(bf16);
  ASSERT_TRUE(flash.ok()) << flash.status();
  const double scores = 32.0 * 32 * 4096 * 4096 * 4;  // layers a s^2 b 4 B
  EXPECT_GE(unset->peak().activation_bytes(),
            2 * flash->peak().activation_bytes() + scores);
  const std::string assumed = AllAssumptions(*unset);
  EXPECT_NE(assumed.find("unfused attention: the softmax output, 4as^2b"),
            std::string::npos)
      << assumed;
  EXPECT_NE(assumed.find("no FlashAttention or fused attention for fp32"),
            std::string::npos)
      << assumed;

  v1::Job with_cp = PaperJob("llama-3.1-8b", "h100-80gb", 1, 2, 1, 1, 2, 4096);
  with_cp.mutable_training()->set_precision(v1::PRECISION_FP32);
  absl::StatusOr<v1::Estimate> refused = EstimateJob(with_cp);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(absl::StartsWith(refused.status().message(),
                               "training.attention_kernel: fp32 training"))
      << refused.status();
}

// A by-name job whose head dimension no fused kernel trains (512: over
// 256) resolves an unset kernel to the unfused attention and says why; an
// explicit FLASH is refused by field.
TEST(EstimateTest, HeadDimensionsOverTwoFiftySixRunTheUnfusedAttention) {
  v1::Job job = PaperJob("llama-3.1-8b", "h100-80gb", 1, 1, 1, 1, 1, 4096);
  job.mutable_model()->set_head_dim(512);
  absl::StatusOr<v1::Estimate> unset = EstimateJob(job);
  ASSERT_TRUE(unset.ok()) << unset.status();
  EXPECT_EQ(unset->job().training().attention_kernel(),
            v1::ATTENTION_KERNEL_UNFUSED);
  const std::string assumed = AllAssumptions(*unset);
  EXPECT_NE(assumed.find("a head dimension of 512"), std::string::npos)
      << assumed;
  job.mutable_training()->set_attention_kernel(v1::ATTENTION_KERNEL_FLASH);
  absl::StatusOr<v1::Estimate> flash = EstimateJob(job);
  ASSERT_FALSE(flash.ok());
  EXPECT_TRUE(absl::StartsWith(flash.status().message(),
                               "training.attention_kernel: a head dimension"))
      << flash.status();
}

// The GPU decides as well: a head dimension of 256 trains fused on an H100
// and unfused on an L40S, where an unset kernel resolves to UNFUSED and
// an explicit FLASH is refused.
TEST(EstimateTest, AnL40sRunsHeadDimensionsOver192Unfused) {
  v1::Job job = PaperJob("llama-3.1-8b", "h100-80gb", 1, 1, 1, 1, 1, 4096);
  job.mutable_model()->set_head_dim(256);
  absl::StatusOr<v1::Estimate> h100 = EstimateJob(job);
  ASSERT_TRUE(h100.ok()) << h100.status();
  EXPECT_EQ(h100->job().training().attention_kernel(),
            v1::ATTENTION_KERNEL_UNSPECIFIED);
  job.mutable_accelerator()->set_name("l40s");
  absl::StatusOr<v1::Estimate> l40s = EstimateJob(job);
  ASSERT_TRUE(l40s.ok()) << l40s.status();
  EXPECT_EQ(l40s->job().training().attention_kernel(),
            v1::ATTENTION_KERNEL_UNFUSED);
  EXPECT_NE(AllAssumptions(*l40s).find("on an l40s-48gb"), std::string::npos)
      << AllAssumptions(*l40s);
  job.mutable_training()->set_attention_kernel(v1::ATTENTION_KERNEL_FLASH);
  EXPECT_FALSE(EstimateJob(job).ok());
}

// training.fused_swiglu is validated on the resolved job: a catalog model
// whose MLP is not SwiGLU (Nemotron-4's squared ReLU) cannot take it,
// even when the job leaves model.mlp_activation unset.
TEST(EstimateTest, FusedSwigluOnACatalogSquaredReluModelIsRefused) {
  v1::Job job =
      PaperJob("nemotron-4-340b", "h100-80gb", 8, 1, 12, 1, 96, 4096);
  job.mutable_training()->set_fused_swiglu(true);
  absl::StatusOr<v1::Estimate> e = EstimateJob(job);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("training.fused_swiglu"),
            std::string::npos)
      << e.status();
}

TEST(EstimateTest, LargestInterleavedMoeJobIsBoundedWork) {
  v1::Job job = testing::LargestInterleavedMoeJob();
  absl::StatusOr<v1::Estimate> e = EstimateJob(job);
  ASSERT_TRUE(e.ok()) << e.status();
  ASSERT_EQ(e->stages_size(), 4096);
  for (const v1::StageMemory& s : e->stages()) {
    ASSERT_EQ(s.num_layers(), 16u) << s.stage();
  }
  job.mutable_model()->set_num_layers(65536 * 2);
  EXPECT_NE(EstimateJob(job).status().message().find(
                "model.num_layers: must be at most 65536 with experts"),
            std::string::npos);
}

TEST(EstimateTest, ListsEveryStageWithTheFirstAsPeak) {
  absl::StatusOr<v1::Estimate> e = EstimateJob(
      PaperJob("llama-3.1-8b", "a100-40gb", 2, 2, 4, 1, 16, 8192));
  ASSERT_TRUE(e.ok()) << e.status();
  ASSERT_EQ(e->stages_size(), 4);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(e->stages(i).stage(), static_cast<uint32_t>(i));
    EXPECT_EQ(e->stages(i).num_layers(), 8u);
    EXPECT_EQ(e->stages(i).microbatches_in_flight(), 4u - i);
    const v1::StageMemory& s = e->stages(i);
    EXPECT_DOUBLE_EQ(s.total_bytes(), s.weight_bytes() + s.gradient_bytes() +
                                          s.optimizer_bytes() +
                                          s.activation_bytes());
  }
  EXPECT_EQ(e->peak().stage(), 0u);
  EXPECT_EQ(e->data_parallel(), 1u);
  EXPECT_DOUBLE_EQ(e->capacity_fraction(),
                   e->peak().total_bytes() / e->capacity_bytes());
}

TEST(EstimateTest, EchoesTheResolvedJob) {
  absl::StatusOr<v1::Estimate> e =
      EstimateJob(PaperJob("Llama-3.1-8B", "h200", 1, 1, 1, 1, 8, 4096));
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->job().model().name(), "llama-3.1-8b");
  EXPECT_EQ(e->job().model().hidden_size(), 4096u);
  EXPECT_EQ(e->job().accelerator().name(), "h200-141gb");
  EXPECT_TRUE(e->job().parallel().sequence_parallel());
  EXPECT_TRUE(e->job().parallel().distributed_optimizer());
  EXPECT_EQ(e->job().training().precision(), v1::PRECISION_BF16_FP32_GRADS);
  EXPECT_EQ(e->data_parallel(), 8u);
}

TEST(EstimateTest, ExplicitFieldsOverrideTheCatalog) {
  v1::Job job = PaperJob("llama-3.1-8b", "a100-40gb", 4, 1, 2, 1, 8, 8192);
  job.mutable_model()->set_num_layers(16);
  job.mutable_accelerator()->set_memory_bytes(80ull << 30);
  absl::StatusOr<v1::Estimate> e = EstimateJob(job);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->job().model().num_layers(), 16u);
  EXPECT_DOUBLE_EQ(e->capacity_bytes(), 80.0 * kBytesPerGiB);
}

TEST(EstimateTest, UnevenStagesMoveThePeak) {
  v1::Job job = PaperJob("llama-3.1-8b", "a100-40gb", 4, 1, 2, 1, 8, 8192);
  v1::Job uneven = job;
  uneven.mutable_parallel()->add_layers_per_stage(12);
  uneven.mutable_parallel()->add_layers_per_stage(20);
  absl::StatusOr<v1::Estimate> even = EstimateJob(job);
  absl::StatusOr<v1::Estimate> lighter_first = EstimateJob(uneven);
  ASSERT_TRUE(lighter_first.ok()) << lighter_first.status();
  EXPECT_EQ(lighter_first->stages(0).num_layers(), 12u);
  EXPECT_EQ(lighter_first->stages(1).num_layers(), 20u);
  // 12 layers x 2 micro-batches in flight on stage 0 weigh less than 20
  // layers, the LM head and its loss on stage 1: the peak moves there.
  EXPECT_EQ(even->peak().stage(), 0u);
  EXPECT_EQ(lighter_first->peak().stage(), 1u);
  EXPECT_LT(lighter_first->stages(0).total_bytes(),
            even->stages(0).total_bytes());
}

// Under fp8 with layers kept in bf16 and interleaving, the bf16 layers
// are found by their place in the model: an even split (chunk j of rank r
// is the model's chunk j p + r) and the same split listed stage by stage
// give every stage the same memory. 8 layers over p = 2 x v = 2 (chunks
// of 2): the first 3 layers are rank 0's first chunk and one of rank 1's
// first, the last 2 rank 1's last chunk. Each bf16 layer adds to its
// rank: the stages differ from the all-fp8 run.
TEST(EstimateTest, Bf16LayersAreFoundByTheirPlaceInTheModel) {
  v1::Job job = PaperJob("llama-3.1-8b", "h100-80gb", 2, 1, 2, 1, 8, 8192);
  job.mutable_model()->set_num_layers(8);
  job.mutable_parallel()->set_virtual_pipeline_stages(2);
  job.mutable_training()->set_global_batch_size(64);
  v1::Fp8& fp8 = *job.mutable_training()->mutable_fp8();
  fp8.set_recipe(v1::Fp8::RECIPE_TENSORWISE);
  absl::StatusOr<v1::Estimate> all_fp8 = EstimateJob(job);
  fp8.set_bf16_first_layers(3);
  fp8.set_bf16_last_layers(2);
  v1::Job listed = job;
  for (int k = 0; k < 4; ++k) listed.mutable_parallel()->add_layers_per_stage(2);
  absl::StatusOr<v1::Estimate> even = EstimateJob(job);
  absl::StatusOr<v1::Estimate> by_list = EstimateJob(listed);
  ASSERT_TRUE(all_fp8.ok() && even.ok() && by_list.ok()) << even.status();
  for (int i = 0; i < 2; ++i) {
    EXPECT_DOUBLE_EQ(even->stages(i).total_bytes(),
                     by_list->stages(i).total_bytes());
    EXPECT_GT(even->stages(i).activation_bytes(),
              all_fp8->stages(i).activation_bytes());
  }
  // Rank 0 holds 2 bf16 layers in its busiest chunk, rank 1 one in its
  // first and two in its last: rank 0 gains more a layer.
  const double rank0 = even->stages(0).activation_bytes() -
                       all_fp8->stages(0).activation_bytes();
  const double rank1 = even->stages(1).activation_bytes() -
                       all_fp8->stages(1).activation_bytes();
  EXPECT_GT(rank0 / 2, rank1 / 3);
}

// The fp32-accumulating reduce-scatter's scratch (a copy of the stage's
// bf16 gradient buffer, as large as its gradients) exists from the last
// micro-batch's backward: under 1F1B it outlives every other micro-batch's
// activations, so stage 0 (4 in flight) absorbs it in what it freed and
// the last stage (1 in flight) adds it whole. Interleaved, a chunk's sync
// starts while others hold micro-batches: every stage adds it whole.
TEST(EstimateTest, ReduceScatterScratchCountsAboveTheActivationsItOutlives) {
  v1::Job job = PaperJob("llama-3.1-8b", "h100-80gb", 2, 1, 4, 1, 8, 8192);
  job.mutable_training()->set_precision(v1::PRECISION_BF16_BF16_GRADS);
  job.mutable_training()->set_global_batch_size(64);
  job.mutable_training()->set_reduce_scatter_fp32_accumulation(true);
  absl::StatusOr<v1::Estimate> e = EstimateJob(job);
  ASSERT_TRUE(e.ok()) << e.status();
  const v1::StageMemory& first = e->stages(0);
  const v1::StageMemory& last = e->stages(3);
  EXPECT_DOUBLE_EQ(first.gradient_scratch_bytes(), 0);
  EXPECT_DOUBLE_EQ(last.gradient_scratch_bytes(), last.gradient_bytes());
  EXPECT_DOUBLE_EQ(last.communication_buffer_bytes(), last.gradient_bytes());
  job.mutable_parallel()->set_virtual_pipeline_stages(2);
  e = EstimateJob(job);
  ASSERT_TRUE(e.ok()) << e.status();
  for (const v1::StageMemory& s : e->stages()) {
    EXPECT_DOUBLE_EQ(s.gradient_scratch_bytes(), s.gradient_bytes());
  }
}

TEST(EstimateTest, ZonesAtTheBoundaries) {
  EXPECT_EQ(ZoneOf(80, 100, 0.8), v1::ZONE_GREEN);
  EXPECT_EQ(ZoneOf(80.001, 100, 0.8), v1::ZONE_YELLOW);
  EXPECT_EQ(ZoneOf(100, 100, 0.8), v1::ZONE_YELLOW);
  EXPECT_EQ(ZoneOf(100.001, 100, 0.8), v1::ZONE_RED);
  EXPECT_EQ(ZoneOf(90, 100, 0.9), v1::ZONE_GREEN);
}

TEST(EstimateTest, ThresholdChangesTheZoneNotThePeak) {
  const v1::Job job = PaperJob("llama-3.1-8b", "a100-40gb", 4, 1, 1, 1, 8,
                               8192);  // 33.76 GiB of 40
  absl::StatusOr<v1::Estimate> strict = EstimateJob(job, 0.8);
  absl::StatusOr<v1::Estimate> lax = EstimateJob(job, 0.95);
  ASSERT_TRUE(strict.ok() && lax.ok());
  EXPECT_EQ(strict->zone(), v1::ZONE_YELLOW);
  EXPECT_EQ(lax->zone(), v1::ZONE_GREEN);
  EXPECT_DOUBLE_EQ(strict->peak_gib(), lax->peak_gib());
  EXPECT_FALSE(EstimateJob(job, 1.5).ok());
  // 37.58 GiB of 40 is under 95% but more than a process can allocate.
  absl::StatusOr<v1::Estimate> tight = EstimateJob(
      PaperJob("llama-3.1-8b", "a100-40gb", 4, 1, 2, 2, 8, 8192), 0.95);
  ASSERT_TRUE(tight.ok());
  EXPECT_NEAR(tight->peak_gib(), 37.58, 0.01);
  EXPECT_EQ(tight->zone(), v1::ZONE_RED);
}

TEST(EstimateTest, UnknownNamesAreInvalidArguments) {
  absl::StatusOr<v1::Estimate> e =
      EstimateJob(PaperJob("llama-9", "a100-40gb", 1, 1, 1, 1, 8, 4096));
  ASSERT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(e.status().message().rfind("model.name:", 0), 0u) << e.status();

  e = EstimateJob(PaperJob("llama-3.1-8b", "tpu-v5", 1, 1, 1, 1, 8, 4096));
  ASSERT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(e.status().message().rfind("accelerator.name:", 0), 0u)
      << e.status();
}

TEST(EstimateTest, MissingModelDimensionsNameTheField) {
  v1::Job job = testing::ExplicitLlama31_8BJob();
  job.mutable_model()->clear_ffn_hidden_size();
  absl::StatusOr<v1::Estimate> e = EstimateJob(job);
  ASSERT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(e.status().message().rfind("model.ffn_hidden_size:", 0), 0u)
      << e.status();
}

TEST(EstimateTest, AbsurdButValidSizesGiveAFiniteRedEstimate) {
  v1::Job job = testing::JobFromText(R"pb(
    model {
      num_layers: 4294967295
      hidden_size: 4294967295
      ffn_hidden_size: 4294967295
      num_attention_heads: 4294967295
      num_query_groups: 4294967295
      vocab_size: 4294967295
    }
    parallel { tensor_parallel: 1 context_parallel: 1 pipeline_parallel: 1 }
    training { micro_batch_size: 4294967295 seq_length: 4294967295 }
    accelerator { memory_bytes: 18446744073709551615 }
    num_gpus: 4294967295
  )pb");
  absl::StatusOr<v1::Estimate> e = EstimateJob(job);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_TRUE(std::isfinite(e->peak().total_bytes()));
  EXPECT_EQ(e->zone(), v1::ZONE_RED);
}

}  // namespace
}  // namespace memgate
