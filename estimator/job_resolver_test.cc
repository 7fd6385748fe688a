#include "estimator/job_resolver.h"

#include <string>

#include "absl/strings/ascii.h"
#include "estimator/catalog.h"
#include "estimator/estimate.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"

namespace memgate {
namespace {

// A job that names a catalog model and says nothing else about it is
// estimated as that model, every field of it: a field the resolver forgot
// to copy reads as its zero (no biases, no attention sinks, RoPE), which
// for gpt-oss estimated the attention without its sinks and admitted a
// job whose kernel the plan of the same model asked for.
TEST(JobResolverTest, ANameAloneResolvesToItsCatalogModel) {
  for (const std::string& name : ModelNames()) {
    const v1::ModelConfig* known = LookupModel(name);
    ASSERT_NE(known, nullptr) << name;
    // As named, and as a user may type it (names match in any case).
    for (const std::string& as_named : {name, absl::AsciiStrToUpper(name)}) {
      v1::Job job;
      job.mutable_model()->set_name(as_named);
      const absl::StatusOr<v1::Job> resolved = ResolveJob(job);
      ASSERT_TRUE(resolved.ok()) << as_named << ": " << resolved.status();
      std::string diff;
      google::protobuf::util::MessageDifferencer differ;
      differ.ReportDifferencesToString(&diff);
      EXPECT_TRUE(differ.Compare(*known, resolved->model()))
          << as_named << ":\n" << diff;
    }
  }
}

// What that meant for an estimate: gpt-oss by name, its kernel unsaid, is
// refused naming the sinks (as its Hugging Face config and its plan are),
// and with a kernel it estimates as the full catalog model does.
TEST(JobResolverTest, GptOssByNameKeepsItsSinksBiasesAndClamp) {
  v1::Job job;
  job.mutable_model()->set_name("gpt-oss-120b");
  job.mutable_accelerator()->set_name("h100-80gb");
  job.set_num_gpus(64);
  job.mutable_parallel()->set_tensor_parallel(4);
  job.mutable_parallel()->set_pipeline_parallel(2);
  job.mutable_parallel()->set_context_parallel(1);
  job.mutable_parallel()->set_expert_parallel(8);
  job.mutable_training()->set_micro_batch_size(1);
  job.mutable_training()->set_seq_length(4096);
  const absl::StatusOr<v1::Estimate> unsaid = EstimateJob(job);
  ASSERT_FALSE(unsaid.ok());
  EXPECT_NE(unsaid.status().message().find("model.softmax_type"),
            std::string::npos)
      << unsaid.status();

  job.mutable_training()->set_attention_kernel(
      v1::ATTENTION_KERNEL_UNFUSED);
  v1::Job full = job;
  *full.mutable_model() = *LookupModel("gpt-oss-120b");
  const absl::StatusOr<v1::Estimate> by_name = EstimateJob(job);
  const absl::StatusOr<v1::Estimate> by_fields = EstimateJob(full);
  ASSERT_TRUE(by_name.ok()) << by_name.status();
  ASSERT_TRUE(by_fields.ok()) << by_fields.status();
  EXPECT_EQ(by_name->peak().total_bytes(), by_fields->peak().total_bytes());
  // Sinks, biases and the clamp are all there.
  const v1::ModelConfig& m = by_name->job().model();
  EXPECT_EQ(m.softmax_type(), v1::SOFTMAX_TYPE_LEARNABLE);
  EXPECT_TRUE(m.linear_bias());
  EXPECT_TRUE(m.activation_clamp());
  EXPECT_EQ(m.position_embedding(), v1::POSITION_EMBEDDING_YARN);
}

}  // namespace
}  // namespace memgate
