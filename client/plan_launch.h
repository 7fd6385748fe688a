#ifndef MEMGATE_CLIENT_PLAN_LAUNCH_H_
#define MEMGATE_CLIENT_PLAN_LAUNCH_H_

// `memgate plan ... -- <launch>`: a Megatron launch as the template of a
// plan. The plan takes the launch's model, precision, sequence length,
// global batch and every training setting it does not search (fp8, the
// precision-aware optimizer, optimizer offload, dropout, selective
// recomputation: PlanRequest.training); the layout the launch uses (TP,
// CP, PP, EP, VP, MBS, full recomputation) is what the plan searches.

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "proto/memgate.pb.h"
#include "readers/megatron_args.h"

namespace memgate::cli {

// Moves `launch` into `request` (model, precision, seq_length,
// global_batch_size, training). The request's seq_length,
// global_batch_size and precision, where already set (by flags), must
// agree with the launch's. INVALID_ARGUMENT names the flag or the setting
// a plan cannot honour (Megatron FSDP: plans shard with the distributed
// optimizer). Appends to `notes` what the plan drops or changes.
absl::Status ApplyLaunchToPlan(const MegatronLaunch& launch,
                               v1::PlanRequest& request,
                               std::vector<std::string>& notes);

}  // namespace memgate::cli

#endif  // MEMGATE_CLIENT_PLAN_LAUNCH_H_
