// Fuzzes the Megatron launch parser: input is a launch, read both ways
// memgate reads one: as a command's argv (split on whitespace), and as a
// line of shell text (readers/shell_line.h: quotes, substitutions,
// operators, redirections, comments), each of its launch commands.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "estimator/catalog.h"
#include "readers/megatron_args.h"
#include "tests/fuzz/fuzz_helpers.h"

namespace {

void ReadLaunch(const std::vector<std::string>& argv) {
  const memgate::v1::ModelConfig* fill = memgate::LookupModel("llama-3.1-8b");
  for (const memgate::v1::ModelConfig* model : {fill, static_cast<const memgate::v1::ModelConfig*>(nullptr)}) {
    absl::StatusOr<memgate::MegatronLaunch> launch =
        memgate::ParseMegatronLaunch(argv, model);
    if (!launch.ok()) {
      memgate::fuzz::Require(launch.status().code() ==
                             absl::StatusCode::kInvalidArgument);
      continue;
    }
    memgate::v1::Job job = launch->job;
    job.mutable_accelerator()->set_name("h100-80gb");
    if (job.num_gpus() == 0) job.set_num_gpus(8);
    std::vector<std::string> notes;
    const absl::Status batch = memgate::ApplyMegatronGlobalBatch(
        launch->global_batch_rule, job, notes);
    if (!batch.ok()) {
      memgate::fuzz::Require(batch.code() == absl::StatusCode::kInvalidArgument);
      continue;
    }
    memgate::fuzz::ExerciseJob(job);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  ReadLaunch(
      absl::StrSplit(text, absl::ByAnyChar(" \t\n"), absl::SkipEmpty()));
  const absl::StatusOr<std::vector<std::vector<std::string>>> line =
      memgate::LaunchCommandsOfShellLine(text);
  if (!line.ok()) {
    memgate::fuzz::Require(line.status().code() ==
                           absl::StatusCode::kInvalidArgument);
    return 0;
  }
  memgate::fuzz::Require(line->size() <= memgate::kMaxLaunchesALine);
  for (const std::vector<std::string>& launch : *line) ReadLaunch(launch);
  return 0;
}
