#include "readers/job_reader.h"

#include "gtest/gtest.h"

namespace memgate {
namespace {

TEST(JobReaderTest, ReadsJsonWithProtoOrCamelCaseNames) {
  for (const char* json :
       {R"({"model": {"name": "llama-3.1-8b"}, "num_gpus": 8,
            "parallel": {"tensor_parallel": 4, "pipeline_parallel": 2}})",
        R"({"model": {"name": "llama-3.1-8b"}, "numGpus": 8,
            "parallel": {"tensorParallel": 4, "pipelineParallel": 2}})"}) {
    absl::StatusOr<v1::Job> job = ParseJob(json);
    ASSERT_TRUE(job.ok()) << job.status();
    EXPECT_EQ(job->model().name(), "llama-3.1-8b");
    EXPECT_EQ(job->num_gpus(), 8u);
    EXPECT_EQ(job->parallel().tensor_parallel(), 4u);
    EXPECT_EQ(job->parallel().pipeline_parallel(), 2u);
  }
}

TEST(JobReaderTest, ReadsTextFormat) {
  absl::StatusOr<v1::Job> job = ParseJob(R"pb(
    # comments are fine
    model { name: "llama-3.1-70b" }
    accelerator { name: "h100-94gb" }
    num_gpus: 64
  )pb");
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->model().name(), "llama-3.1-70b");
  EXPECT_EQ(job->num_gpus(), 64u);
}

TEST(JobReaderTest, ErrorsSayWhereAndWhat) {
  absl::StatusOr<v1::Job> job = ParseJob("num_gpus: 8\nnum_gpu: 9\n");
  ASSERT_EQ(job.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(job.status().message().find("line 2"), std::string::npos)
      << job.status();
  EXPECT_NE(job.status().message().find("num_gpu"), std::string::npos);

  job = ParseJob(R"({"num_gpus": -8})");
  ASSERT_EQ(job.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(job.status().message().find("num_gpus"), std::string::npos)
      << job.status();

  job = ParseJob(R"({"num_gpus": 9223372036854775808})");
  EXPECT_EQ(job.status().code(), absl::StatusCode::kInvalidArgument);

  job = ParseJob(R"({"typo_field": 1})");  // unknown JSON keys are errors
  EXPECT_EQ(job.status().code(), absl::StatusCode::kInvalidArgument);
}

// The parsers quote the file's names; a long one is quoted by its first
// bytes, in JSON and in text format alike.
TEST(JobReaderTest, ALongNameIsQuotedBounded) {
  const std::string name(100000, 'k');
  for (const std::string& content :
       {"{\"" + name + "\": 1}", name + ": 1\n"}) {
    const absl::StatusOr<v1::Job> job = ParseJob(content);
    ASSERT_EQ(job.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_LT(job.status().message().size(), 600u);
    EXPECT_NE(job.status().message().find("kkkk"), std::string::npos)
        << job.status().message().substr(0, 600);
  }
}

TEST(JobReaderTest, MissingFileIsNamed) {
  absl::StatusOr<v1::Job> job = ReadJobFile("/nonexistent/job.json");
  ASSERT_FALSE(job.ok());
  EXPECT_NE(job.status().message().find("/nonexistent/job.json"),
            std::string::npos);
}

}  // namespace
}  // namespace memgate
