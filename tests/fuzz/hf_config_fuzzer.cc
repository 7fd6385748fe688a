// Fuzzes the Hugging Face config.json reader.

#include <cstddef>
#include <cstdint>
#include <string>

#include "readers/hf_config.h"
#include "tests/fuzz/fuzz_helpers.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string json(reinterpret_cast<const char*>(data), size);
  // The key review reads any input and names at most its keys.
  memgate::fuzz::Require(memgate::UnreviewedHuggingFaceKeys(json).size() <=
                         size);
  memgate::fuzz::Require(
      memgate::HuggingFaceKeysTheFamilyDoesNotRead(json).size() <= size);
  absl::StatusOr<memgate::v1::ModelConfig> model =
      memgate::ModelFromHuggingFaceJson(json, "fuzz");
  if (!model.ok()) {
    memgate::fuzz::Require(model.status().code() ==
                           absl::StatusCode::kInvalidArgument);
    return 0;
  }
  memgate::v1::Job job;
  *job.mutable_model() = *model;
  job.mutable_accelerator()->set_name("a100-80gb");
  job.mutable_parallel()->set_tensor_parallel(1);
  job.mutable_parallel()->set_pipeline_parallel(1);
  job.mutable_parallel()->set_context_parallel(1);
  job.mutable_training()->set_micro_batch_size(1);
  job.mutable_training()->set_seq_length(4096);
  job.set_num_gpus(8);
  memgate::fuzz::ExerciseJob(job);
  return 0;
}
