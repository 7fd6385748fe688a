#ifndef MEMGATE_READERS_MEGATRON_MOE_ARGS_H_
#define MEMGATE_READERS_MEGATRON_MOE_ARGS_H_

// Mixture-of-experts, multi-latent-attention and multi-token-prediction
// arguments of a Megatron-LM launch, with Megatron's defaults (each said
// in a note). Internal to ParseMegatronLaunch.

#include "absl/status/status.h"
#include "readers/launch_arguments.h"
#include "readers/megatron_args.h"

namespace memgate {

absl::Status FillExpertsFromLaunch(const Arguments& args,
                                   MegatronLaunch& launch);

}  // namespace memgate

#endif  // MEMGATE_READERS_MEGATRON_MOE_ARGS_H_
