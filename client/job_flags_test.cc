#include "client/job_flags.h"

#include "gtest/gtest.h"

namespace memgate::cli {
namespace {

absl::StatusOr<v1::Job> Build(const std::vector<std::string>& args) {
  JobFlags jf;
  FlagSet flags("test");
  jf.Register(flags);
  if (absl::Status s = flags.Parse(args); !s.ok()) return s;
  return jf.ToJob();
}

TEST(JobFlagsTest, DefaultsAreOneWayParallelAndMbsOne) {
  absl::StatusOr<v1::Job> job = Build(
      {"--model=llama-3.1-8b", "--gpu=a100-40gb", "--gpus=8", "--seq=8192"});
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->parallel().tensor_parallel(), 1u);
  EXPECT_EQ(job->parallel().context_parallel(), 1u);
  EXPECT_EQ(job->parallel().pipeline_parallel(), 1u);
  EXPECT_EQ(job->training().micro_batch_size(), 1u);
  EXPECT_FALSE(job->parallel().has_sequence_parallel());  // estimator's default
  EXPECT_EQ(job->num_gpus(), 8u);
}

TEST(JobFlagsTest, DimensionsOverrideTheNamedModel) {
  absl::StatusOr<v1::Job> job =
      Build({"--model=llama-3.1-8b", "--layers=16", "--gpu-memory-gib=80",
             "--gpus=8", "--seq=4096", "--no-sequence-parallel",
             "--precision=bf16-bf16-grads"});
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->model().name(), "llama-3.1-8b");
  EXPECT_EQ(job->model().num_layers(), 16u);
  EXPECT_EQ(job->accelerator().memory_bytes(), 80ull << 30);
  EXPECT_FALSE(job->parallel().sequence_parallel());
  EXPECT_EQ(job->training().precision(), v1::PRECISION_BF16_BF16_GRADS);
}

TEST(JobFlagsTest, MissingRequiredFlagsAreNamed) {
  absl::StatusOr<v1::Job> job =
      Build({"--model=llama-3.1-8b", "--gpu=a100-40gb", "--seq=8192"});
  ASSERT_FALSE(job.ok());
  EXPECT_NE(job.status().message().find("--gpus"), std::string::npos);
}

TEST(JobFlagsTest, FlagHintsForEstimatorFields) {
  EXPECT_EQ(WithFlagHint("parallel.tensor_parallel: must be at least 1"),
            "parallel.tensor_parallel (--tp): must be at least 1");
  EXPECT_EQ(WithFlagHint("num_gpus: x"), "num_gpus (--gpus): x");
  EXPECT_EQ(WithFlagHint("something else"), "something else");
}

}  // namespace
}  // namespace memgate::cli
