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

// Whether a --swiglu launch runs Megatron's unfused glu() (mlp.py, and
// TEGroupedMLP's in experts.py): the bias-activation fusion off
// (--no-bias-swiglu-fusion), and neither TransformerEngine's activation op
// (--use-te-activation-func) nor its op fuser's SwiGLU in its place.
bool RunsUnfusedSwiglu(const Arguments& args);

}  // namespace memgate

#endif  // MEMGATE_READERS_MEGATRON_MOE_ARGS_H_
