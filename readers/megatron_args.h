#ifndef MEMGATE_READERS_MEGATRON_ARGS_H_
#define MEMGATE_READERS_MEGATRON_ARGS_H_

// Jobs from the command that launches them: a torchrun (or python -m
// torch.distributed.run, srun, ...) line running Megatron-LM's
// pretrain_gpt.py. memgate reads Megatron's own argument names and applies
// Megatron's own defaults, so the estimate is of the job that will run.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/memgate.pb.h"

namespace memgate {

struct MegatronLaunch {
  v1::Job job;  // model, parallel, training; num_gpus when torchrun says
  // What memgate inferred or changed, for the user to see (vocab padding,
  // Megatron defaults applied...).
  std::vector<std::string> notes;
};

// `argv` is the launch, word by word. `fill_model` (may be null) supplies
// what the arguments leave out, e.g. the vocabulary a tokenizer implies.
// Unknown arguments are ignored. INVALID_ARGUMENT names the Megatron or
// torchrun argument that is missing, malformed or contradictory.
absl::StatusOr<MegatronLaunch> ParseMegatronLaunch(
    const std::vector<std::string>& argv, const v1::ModelConfig* fill_model);

// Whether `argv` carries any of Megatron-LM's model or parallelism
// arguments (--num-layers, --seq-length, --tensor-model-parallel-size,
// ...): a launch memgate can read, rather than an opaque command such as
// `bash train.sh`.
bool HasMegatronArguments(const std::vector<std::string>& argv);

}  // namespace memgate

#endif  // MEMGATE_READERS_MEGATRON_ARGS_H_
