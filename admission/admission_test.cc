#include "admission/admission.h"

#include "estimator/estimate.h"
#include "estimator/units.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace memgate {
namespace {

using testing::PaperJob;

// The paper's A100 table: 27.20 GiB (GREEN), 37.58 (YELLOW), 58.33 (RED).
const v1::Job kGreen = PaperJob("llama-3.1-8b", "a100-40gb", 4, 1, 2, 1, 8,
                                8192);
const v1::Job kYellow = PaperJob("llama-3.1-8b", "a100-40gb", 4, 1, 2, 2, 8,
                                 8192);
const v1::Job kRed = PaperJob("llama-3.1-8b", "a100-40gb", 4, 1, 2, 4, 8,
                              8192);

TEST(AdmissionTest, AdmitsGreen) {
  absl::StatusOr<v1::Decision> d = AdmitJob(kGreen, AdmissionPolicy());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->verdict(), v1::VERDICT_ADMIT);
  EXPECT_EQ(d->reason().rfind("ADMIT [GREEN] peak 27.20 GiB (stage 0) vs "
                              "limit 32.00 GiB (80% of 40.00 GiB a100-40gb)",
                              0),
            0u)
      << d->reason();
  EXPECT_TRUE(d->warnings().empty());
}

// The reason names the GPU as the job does: not at all where it is given
// by its memory alone, by its first bytes where a request's name is long.
TEST(AdmissionTest, TheReasonNamesTheGpuAsGiven) {
  v1::Job unnamed = kGreen;
  unnamed.mutable_accelerator()->clear_name();
  unnamed.mutable_accelerator()->set_memory_bytes(40ull << 30);
  unnamed.mutable_accelerator()->set_gpus_per_node(8);
  absl::StatusOr<v1::Decision> d = AdmitJob(unnamed, AdmissionPolicy());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_NE(d->reason().find("(80% of 40.00 GiB)"), std::string::npos)
      << d->reason();
  v1::Job long_name = unnamed;
  long_name.mutable_accelerator()->set_name(std::string(10000, 'g'));
  d = AdmitJob(long_name, AdmissionPolicy());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_NE(d->reason().find("(80% of 40.00 GiB " + std::string(64, 'g') +
                             "...)"),
            std::string::npos)
      << d->reason().substr(0, 300);
}

TEST(AdmissionTest, RefusesYellowByDefault) {
  absl::StatusOr<v1::Decision> d = AdmitJob(kYellow, AdmissionPolicy());
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->verdict(), v1::VERDICT_REFUSE);
  EXPECT_NE(d->reason().find("REFUSE [YELLOW] peak 37.58 GiB"),
            std::string::npos)
      << d->reason();
}

// The dataloader's mask is a flag away: a refusal says when dropping it
// alone fits (27.20 GiB + 8192^2 B = 27.27 at a 27.22 GiB limit), not when it
// does not (the RED job).
TEST(AdmissionTest, RefusalSaysWhenTheDataloaderMaskAloneDecides) {
  v1::Job job = kGreen;
  job.mutable_training()->set_dataloader_attention_mask(true);
  AdmissionPolicy policy;
  policy.threshold = 27.22 / 40;
  absl::StatusOr<v1::Decision> d = AdmitJob(job, policy);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->verdict(), v1::VERDICT_REFUSE) << d->reason();
  EXPECT_NE(d->reason().find("peak 27.27 GiB"), std::string::npos)
      << d->reason();
  EXPECT_TRUE(d->fits_without_dataloader_mask());
  job = kRed;
  job.mutable_training()->set_dataloader_attention_mask(true);
  d = AdmitJob(job, AdmissionPolicy());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_FALSE(d->fits_without_dataloader_mask());
  // Without the mask in the job there is nothing to drop.
  policy.threshold = 27.0 / 40;
  d = AdmitJob(kGreen, policy);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->verdict(), v1::VERDICT_REFUSE);
  EXPECT_FALSE(d->fits_without_dataloader_mask());
}

// By name a SwiGLU job is the paper's unfused count; a refusal says when
// Megatron's fused kernel (what a launch runs) alone makes it fit, and not
// when it does not, nor for a job that already counts the kernel.
TEST(AdmissionTest, RefusalSaysWhenTheFusedSwigluAloneDecides) {
  v1::Job fused = kYellow;
  fused.mutable_training()->set_fused_swiglu(true);
  const absl::StatusOr<v1::Estimate> paper = EstimateJob(kYellow);
  const absl::StatusOr<v1::Estimate> kernel = EstimateJob(fused);
  ASSERT_TRUE(paper.ok() && kernel.ok());
  const double capacity = 40.0 * (1ull << 30);
  ASSERT_LT(kernel->peak().total_bytes(), paper->peak().total_bytes());
  AdmissionPolicy between;
  between.threshold =
      (kernel->peak().total_bytes() + paper->peak().total_bytes()) / 2 /
      capacity;
  absl::StatusOr<v1::Decision> d = AdmitJob(kYellow, between);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->verdict(), v1::VERDICT_REFUSE);
  EXPECT_TRUE(d->fits_with_fused_swiglu());
  d = AdmitJob(kYellow, AdmissionPolicy());  // 37.58 GiB: too much either way
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->verdict(), v1::VERDICT_REFUSE);
  EXPECT_FALSE(d->fits_with_fused_swiglu());
  AdmissionPolicy below;
  below.threshold = kernel->peak().total_bytes() / 2 / capacity;
  d = AdmitJob(fused, below);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->verdict(), v1::VERDICT_REFUSE);
  EXPECT_FALSE(d->fits_with_fused_swiglu());
}

// Soft-capped scores (Gemma 2) count NeMo's and Megatron-Bridge's unfused
// fallback by default; a refusal says when recent Bridge's FlexAttention
// alone makes the job fit, and only where Bridge takes that path (no
// dataloader mask, no attention dropout).
TEST(AdmissionTest, RefusalSaysWhenFlexAttentionAloneDecides) {
  v1::Job capped = PaperJob("llama-3.1-8b", "h100-80gb", 4, 1, 2, 1, 8, 8192);
  capped.mutable_model()->set_attention_logit_softcapping(50);
  absl::StatusOr<v1::Decision> d = AdmitJob(capped, AdmissionPolicy());
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->verdict(), v1::VERDICT_REFUSE) << d->reason();
  EXPECT_EQ(d->estimate().job().training().attention_kernel(),
            v1::ATTENTION_KERNEL_UNFUSED);
  EXPECT_TRUE(d->fits_with_flex_attention());
  v1::Job flex = capped;
  flex.mutable_training()->set_attention_kernel(v1::ATTENTION_KERNEL_FLASH);
  d = AdmitJob(flex, AdmissionPolicy());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->verdict(), v1::VERDICT_ADMIT) << d->reason();
  // With the dataloader's mask Bridge falls back: no such hint.
  v1::Job masked = capped;
  masked.mutable_training()->set_dataloader_attention_mask(true);
  d = AdmitJob(masked, AdmissionPolicy());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->verdict(), v1::VERDICT_REFUSE);
  EXPECT_FALSE(d->fits_with_flex_attention());
  // Without the cap the kernel is FlashAttention already: no hint either.
  d = AdmitJob(kYellow, AdmissionPolicy());
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->fits_with_flex_attention());
}

// A job refused for an unfused attention TransformerEngine would not have
// picked (asked for, or left by NVTE_FLASH_ATTN=0 with deterministic
// kernels on an A100) hears that its fused attention fits; one whose
// precision leaves TE nothing fused (fp32), or whose soft-capped scores
// take Gemma 2's own attention, does not.
TEST(AdmissionTest, RefusalSaysWhenTheFusedAttentionAloneDecides) {
  v1::Job unfused = PaperJob("llama-3.1-8b", "a100-40gb", 4, 1, 2, 1, 8, 8192);
  unfused.mutable_training()->set_attention_kernel(
      v1::ATTENTION_KERNEL_UNFUSED);
  absl::StatusOr<v1::Decision> d = AdmitJob(unfused, AdmissionPolicy());
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->verdict(), v1::VERDICT_REFUSE) << d->reason();
  EXPECT_TRUE(d->fits_with_fused_attention());
  EXPECT_FALSE(d->fits_with_flex_attention());

  v1::Job switched = PaperJob("llama-3.1-8b", "a100-40gb", 4, 1, 2, 1, 8, 8192);
  switched.mutable_training()->set_flash_attention_disabled(true);
  switched.mutable_training()->set_te_deterministic_attention(true);
  d = AdmitJob(switched, AdmissionPolicy());
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->verdict(), v1::VERDICT_REFUSE) << d->reason();
  EXPECT_EQ(d->estimate().job().training().attention_kernel(),
            v1::ATTENTION_KERNEL_UNFUSED);
  EXPECT_TRUE(d->fits_with_fused_attention());
  // Deterministic alone keeps FlashAttention: admitted as without it.
  switched.mutable_training()->set_flash_attention_disabled(false);
  d = AdmitJob(switched, AdmissionPolicy());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->verdict(), v1::VERDICT_ADMIT) << d->reason();

  v1::Job fp32 = PaperJob("llama-3.1-8b", "a100-40gb", 4, 1, 2, 1, 8, 8192);
  fp32.mutable_training()->set_precision(v1::PRECISION_FP32);
  d = AdmitJob(fp32, AdmissionPolicy());
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->verdict(), v1::VERDICT_REFUSE);
  EXPECT_FALSE(d->fits_with_fused_attention());

  v1::Job capped = PaperJob("llama-3.1-8b", "h100-80gb", 4, 1, 2, 1, 8, 8192);
  capped.mutable_model()->set_attention_logit_softcapping(50);
  d = AdmitJob(capped, AdmissionPolicy());
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->verdict(), v1::VERDICT_REFUSE);
  EXPECT_FALSE(d->fits_with_fused_attention());
  EXPECT_TRUE(d->fits_with_flex_attention());
}

// A job whose peak is under the 80% rule but whose loss's 16-bit gradient
// of the logits does not fit beside it was admitted; it is refused RED,
// the reason naming the transient, and what it suggests instead fits with
// it (SmallModelLargeVocabularyJob: 58.98 GiB and 20.51 GiB on 80).
// On a GPU where the threshold leaves less than the process's runtime
// takes (under about 17 GiB), a peak under the threshold may still be more
// than a process can allocate: refused RED, saying so.
TEST(AdmissionTest, RefusesAPeakUnderTheThresholdThatCannotBeAllocated) {
  v1::Job job = PaperJob("llama-3.1-8b", "a100-40gb", 8, 1, 4, 1, 32, 4096);
  absl::StatusOr<v1::Decision> on_a100 = AdmitJob(job, AdmissionPolicy());
  ASSERT_TRUE(on_a100.ok()) << on_a100.status();
  const double peak = on_a100->estimate().peak().total_bytes();
  ASSERT_LT(peak, 9.0 * kBytesPerGiB);
  // A GPU of which the peak is 79%: GREEN by the threshold alone.
  job.mutable_accelerator()->clear_name();
  job.mutable_accelerator()->set_memory_bytes(
      static_cast<uint64_t>(peak / 0.79));
  job.mutable_accelerator()->set_gpus_per_node(8);
  absl::StatusOr<v1::Decision> d = AdmitJob(job, AdmissionPolicy());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_GT(peak, AllocatableBytes(d->estimate().capacity_bytes()));
  EXPECT_EQ(d->verdict(), v1::VERDICT_REFUSE);
  EXPECT_EQ(d->estimate().zone(), v1::ZONE_RED);
  EXPECT_NE(d->reason().find("GiB a process can allocate)"),
            std::string::npos)
      << d->reason();
}

TEST(AdmissionTest, RefusesAJobWhoseLossTransientDoesNotFit) {
  const v1::Job job = testing::SmallModelLargeVocabularyJob(
      1, v1::PRECISION_BF16_FP32_GRADS);
  for (const AdmissionPolicy& policy :
       {AdmissionPolicy(), AdmissionPolicy{0.8, true}}) {
    absl::StatusOr<v1::Decision> d = AdmitJob(job, policy);
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_EQ(d->verdict(), v1::VERDICT_REFUSE);
    EXPECT_EQ(d->estimate().zone(), v1::ZONE_RED);
    EXPECT_NE(d->reason().find("REFUSE [RED] peak 58.98 GiB"),
              std::string::npos)
        << d->reason();
    EXPECT_NE(d->reason().find("(the loss's backward casts the logits' "
                               "gradient to 16 bits, 20.51 GiB beside "
                               "stage 0's 58.98 GiB, more than the 76.75 "
                               "GiB a process can allocate)"),
              std::string::npos)
        << d->reason();
    ASSERT_GT(d->suggestions_size(), 0);
    for (const v1::Candidate& c : d->suggestions()) {
      EXPECT_EQ(c.zone(), v1::ZONE_GREEN) << c.ShortDebugString();
      // Its last stage's cast fits beside its peak, in what a process can
      // allocate.
      const double cast = 2.0 * 43008 * c.micro_batch_size() /
                          c.context_parallel() * 256000 / c.tensor_parallel();
      EXPECT_LE(c.peak_bytes() + cast,
                AllocatableBytes(d->estimate().capacity_bytes()))
          << c.ShortDebugString();
    }
  }
}

TEST(AdmissionTest, PolicyMayAdmitYellowWithAWarning) {
  AdmissionPolicy policy;
  policy.admit_yellow = true;
  absl::StatusOr<v1::Decision> d = AdmitJob(kYellow, policy);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->verdict(), v1::VERDICT_ADMIT);
  ASSERT_EQ(d->warnings_size(), 1);
  EXPECT_NE(d->warnings(0).find("YELLOW"), std::string::npos);
}

TEST(AdmissionTest, RefusesRedWhateverThePolicy) {
  AdmissionPolicy policy;
  policy.admit_yellow = true;
  absl::StatusOr<v1::Decision> d = AdmitJob(kRed, policy);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->verdict(), v1::VERDICT_REFUSE);
  EXPECT_NE(d->reason().find("will OOM"), std::string::npos) << d->reason();
}

// A site's threshold moves the limit: at 95% of an A100 40 GB the paper's
// YELLOW cell of 33.76 GiB, which ran, is admitted; its 37.58 GiB one,
// which ran out of memory, is under the threshold but more than a process
// can allocate (37.16 GiB): refused RED.
TEST(AdmissionTest, ThresholdMovesTheLimit) {
  AdmissionPolicy policy;
  policy.threshold = 0.95;  // 38 GiB on an A100 40 GB
  const v1::Job ran = PaperJob("llama-3.1-8b", "a100-40gb", 4, 1, 1, 1, 8,
                               8192);
  absl::StatusOr<v1::Decision> d = AdmitJob(ran, policy);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->verdict(), v1::VERDICT_ADMIT) << d->reason();
  EXPECT_NE(d->reason().find("limit 38.00 GiB (95%"), std::string::npos)
      << d->reason();
  d = AdmitJob(kYellow, policy);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->verdict(), v1::VERDICT_REFUSE);
  EXPECT_EQ(d->estimate().zone(), v1::ZONE_RED);
  EXPECT_NE(d->reason().find("(more than the 37.16 GiB a process can "
                             "allocate)"),
            std::string::npos)
      << d->reason();
}

TEST(AdmissionTest, InvalidJobIsAnError) {
  v1::Job job = kGreen;
  job.set_num_gpus(7);
  absl::StatusOr<v1::Decision> d = AdmitJob(job, AdmissionPolicy());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace memgate
