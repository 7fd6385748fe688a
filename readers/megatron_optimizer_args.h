#ifndef MEMGATE_READERS_MEGATRON_OPTIMIZER_ARGS_H_
#define MEMGATE_READERS_MEGATRON_OPTIMIZER_ARGS_H_

// The optimizer of a Megatron-LM launch and where its states and the
// gradients live: --optimizer (Adam, SGD, Lion, Muon and Muon's own
// arguments), the precision-aware optimizer's dtypes and CPU offload,
// Megatron-FSDP's sharding and gradient dtypes, the distributed
// optimizer's instances, fp32 local gradient accumulation and the
// reduce-scatter's fp32 accumulation, with Megatron's defaults (each said
// in a note). Internal to ParseMegatronLaunch (megatron_args.cc), after
// the training precision (--bf16 / --fp16) is read.

#include "absl/status/status.h"
#include "readers/launch_arguments.h"
#include "readers/megatron_args.h"

namespace memgate {

absl::Status FillOptimizer(const Arguments& args, MegatronLaunch& launch);
absl::Status FillOptimizerStorage(const Arguments& args,
                                  MegatronLaunch& launch);
absl::Status FillFsdp(const Arguments& args, MegatronLaunch& launch);
absl::Status FillOptimizerInstances(const Arguments& args,
                                    MegatronLaunch& launch);
absl::Status FillLocalGradAccumulation(const Arguments& args,
                                       MegatronLaunch& launch);
absl::Status FillFp32AccumulatingReduceScatter(const Arguments& args,
                                               MegatronLaunch& launch);

}  // namespace memgate

#endif  // MEMGATE_READERS_MEGATRON_OPTIMIZER_ARGS_H_
