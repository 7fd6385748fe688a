#ifndef MEMGATE_ESTIMATOR_MEGATRON_MOE_ARGS_H_
#define MEMGATE_ESTIMATOR_MEGATRON_MOE_ARGS_H_

// Mixture-of-experts, multi-latent-attention and multi-token-prediction
// arguments of a Megatron-LM launch, with Megatron's defaults (each said
// in a note). Internal to ParseMegatronLaunch.

#include "absl/status/status.h"
#include "estimator/launch_arguments.h"
#include "estimator/megatron_args.h"

namespace memgate {

absl::Status FillExpertsFromLaunch(const Arguments& args,
                                   MegatronLaunch& launch);

}  // namespace memgate

#endif  // MEMGATE_ESTIMATOR_MEGATRON_MOE_ARGS_H_
