#include "client/preflight.h"

#include <string>

#include "gtest/gtest.h"

namespace memgate {
namespace {

// Llama-3.1-8B on 8 A100s (40 GB), TP 4, PP 2, MBS 1 at 8k: 25.5 GiB with
// FlashAttention.
v1::Job Llama8bOnA100s() {
  v1::Job job;
  job.mutable_model()->set_name("llama-3.1-8b");
  job.mutable_accelerator()->set_name("a100-40gb");
  job.mutable_parallel()->set_tensor_parallel(4);
  job.mutable_parallel()->set_pipeline_parallel(2);
  job.mutable_parallel()->set_context_parallel(1);
  job.mutable_training()->set_micro_batch_size(1);
  job.mutable_training()->set_seq_length(8192);
  job.mutable_training()->set_global_batch_size(1024);
  job.set_num_gpus(8);
  return job;
}

// Against a service that does not answer, an invalid job is still
// invalid (INVALID_ARGUMENT naming the field, as embedded), and only a
// valid one is the service's failure: a launcher's policy for an
// unavailable service (which may admit) never sees a broken job.
TEST(PreflightTest, AnInvalidJobIsInvalidEvenWhenTheServiceDoesNotAnswer) {
  PreflightOptions options;
  options.server = "127.0.0.1:1";  // nothing listens there
  options.timeout = absl::Milliseconds(300);
  v1::Job invalid = Llama8bOnA100s();
  invalid.mutable_parallel()->set_tensor_parallel(3);
  invalid.set_num_gpus(6);
  const absl::StatusOr<v1::Decision> broken = PreflightCheck(invalid, options);
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(broken.status().message().find("parallel.tensor_parallel"),
            std::string::npos)
      << broken.status();
  const absl::StatusOr<v1::Decision> unanswered =
      PreflightCheck(Llama8bOnA100s(), options);
  ASSERT_FALSE(unanswered.ok());
  EXPECT_NE(unanswered.status().code(), absl::StatusCode::kInvalidArgument)
      << unanswered.status();
}

// A request larger than a memgate service reads (kMaxRequestBytes) is
// refused by the client as invalid before it is sent: the service would
// refuse it for its size as RESOURCE_EXHAUSTED, a failure to answer that a
// launcher's policy may admit. Here a job valid in every field but its
// 70,000-byte name; embedded, it is judged.
TEST(PreflightTest, ARequestTooLargeForTheServiceIsInvalidBeforeItIsSent) {
  v1::Job job = Llama8bOnA100s();
  job.set_name(std::string(70000, 'n'));
  PreflightOptions options;
  options.server = "127.0.0.1:1";  // never reached
  options.timeout = absl::Milliseconds(300);
  const absl::StatusOr<v1::Decision> remote = PreflightCheck(job, options);
  ASSERT_FALSE(remote.ok());
  EXPECT_EQ(remote.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(remote.status().message().find(
                "bytes, more than a memgate service reads (65536)"),
            std::string::npos)
      << remote.status();
  EXPECT_TRUE(PreflightCheck(job, PreflightOptions()).ok());
}

// PreflightOptions.environment applies to a job given whole: the same job
// admitted with FlashAttention is refused where its environment switches
// FlashAttention and cuDNN's fused attention off (TE's unfused attention
// keeps the 8192^2 scores), left alone by other variables, and invalid
// where the job says FlashAttention runs against that environment.
TEST(PreflightTest, AJobsEnvironmentChoosesItsAttention) {
  PreflightOptions options;
  absl::StatusOr<v1::Decision> d = PreflightCheck(Llama8bOnA100s(), options);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->verdict(), v1::VERDICT_ADMIT) << d->reason();

  options.environment = {"HOME=/root", "NVTE_FLASH_ATTN=0",
                         "NVTE_FUSED_ATTN=0"};
  d = PreflightCheck(Llama8bOnA100s(), options);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->verdict(), v1::VERDICT_REFUSE) << d->reason();
  EXPECT_EQ(d->estimate().job().training().attention_kernel(),
            v1::ATTENTION_KERNEL_UNFUSED);
  EXPECT_TRUE(d->fits_with_fused_attention());

  options.environment = {"NVTE_FUSED_ATTN=0", "PATH=/bin"};
  d = PreflightCheck(Llama8bOnA100s(), options);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->verdict(), v1::VERDICT_ADMIT) << d->reason();

  v1::Job says_flash = Llama8bOnA100s();
  says_flash.mutable_training()->set_attention_kernel(
      v1::ATTENTION_KERNEL_FLASH);
  options.environment = {"NVTE_FLASH_ATTN=0", "NVTE_FUSED_ATTN=0"};
  d = PreflightCheck(says_flash, options);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(d.status().message().find("training.attention_kernel"),
            std::string::npos)
      << d.status();
  options.environment = {"NVTE_FLASH_ATTN=no"};
  d = PreflightCheck(Llama8bOnA100s(), options);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find(
                "NVTE_FLASH_ATTN=no (the command's environment): not a whole "
                "number"),
            std::string::npos)
      << d.status();
}

// NVTE_MASKED_SOFTMAX_FUSION=0 in a whole job's environment: where TE's
// unfused attention runs, torch's fp32 softmax output is kept too (8 heads
// a rank x 8192^2 scores x 4 B, 2 GiB a layer); with FlashAttention it
// changes nothing.
TEST(PreflightTest, AJobsEnvironmentTurnsTheFusedSoftmaxOff) {
  PreflightOptions options;
  v1::Job unfused = Llama8bOnA100s();
  unfused.mutable_accelerator()->set_name("h100-80gb");
  unfused.mutable_training()->set_attention_kernel(
      v1::ATTENTION_KERNEL_UNFUSED);
  const absl::StatusOr<v1::Decision> fused_softmax =
      PreflightCheck(unfused, options);
  ASSERT_TRUE(fused_softmax.ok()) << fused_softmax.status();

  options.environment = {"NVTE_MASKED_SOFTMAX_FUSION=0"};
  const absl::StatusOr<v1::Decision> torch_softmax =
      PreflightCheck(unfused, options);
  ASSERT_TRUE(torch_softmax.ok()) << torch_softmax.status();
  EXPECT_TRUE(torch_softmax->estimate()
                  .job()
                  .training()
                  .te_masked_softmax_fusion_disabled());
  EXPECT_GT(torch_softmax->estimate().peak_gib(),
            fused_softmax->estimate().peak_gib() + 16 * 2.0);

  const absl::StatusOr<v1::Decision> flash =
      PreflightCheck(Llama8bOnA100s(), options);
  ASSERT_TRUE(flash.ok()) << flash.status();
  EXPECT_EQ(flash->verdict(), v1::VERDICT_ADMIT) << flash->reason();
}

// NVTE_BACKWARD_OVERRIDE=high_precision in a whole job's environment:
// refused by name under fp8 (the GEMMs keep 16-bit inputs, not modelled),
// whatever the attention; without fp8 it changes nothing.
TEST(PreflightTest, AJobsEnvironmentSetsTheFp8BackwardsPrecision) {
  PreflightOptions options;
  options.environment = {"NVTE_BACKWARD_OVERRIDE=high_precision"};
  v1::Job fp8 = Llama8bOnA100s();
  fp8.mutable_accelerator()->set_name("h100-80gb");
  fp8.mutable_training()->mutable_fp8()->set_recipe(
      v1::Fp8::RECIPE_TENSORWISE);
  for (v1::AttentionKernel kernel :
       {v1::ATTENTION_KERNEL_UNSPECIFIED, v1::ATTENTION_KERNEL_LOCAL}) {
    fp8.mutable_training()->set_attention_kernel(kernel);
    const absl::StatusOr<v1::Decision> d = PreflightCheck(fp8, options);
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(d.status().message().find(
                  "NVTE_BACKWARD_OVERRIDE=high_precision (the command's "
                  "environment)"),
              std::string::npos)
        << d.status();
  }
  const absl::StatusOr<v1::Decision> bf16 =
      PreflightCheck(Llama8bOnA100s(), options);
  ASSERT_TRUE(bf16.ok()) << bf16.status();
  EXPECT_EQ(bf16->verdict(), v1::VERDICT_ADMIT) << bf16->reason();
}

}  // namespace
}  // namespace memgate
