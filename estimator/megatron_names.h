#ifndef MEMGATE_ESTIMATOR_MEGATRON_NAMES_H_
#define MEMGATE_ESTIMATOR_MEGATRON_NAMES_H_

// Megatron-LM's names of the settings memgate reads from a launch and
// writes back into a plan candidate's arguments: one table for each, so
// that what the reader accepts and what a candidate prints cannot drift
// apart.

#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "proto/memgate.pb.h"

namespace memgate {

// --recompute-modules (transformer_config.py recompute_modules): "moe_act".
std::optional<v1::Recompute::Module> RecomputeModuleNamed(
    absl::string_view name);
// "unknown" for a value without a Megatron name (UNSPECIFIED, out of range).
std::string RecomputeModuleName(v1::Recompute::Module module);

// --recompute-granularity (arguments.py): "selective", "full".
std::optional<v1::Recompute::Granularity> RecomputeGranularityNamed(
    absl::string_view name);
// --recompute-method (arguments.py): "uniform", "block".
std::optional<v1::Recompute::Method> RecomputeMethodNamed(
    absl::string_view name);

// --data-parallel-sharding-strategy (arguments.py): "optim_grads".
std::optional<v1::DataParallelSharding> ShardingStrategyNamed(
    absl::string_view name);
// "unknown" for a value without a Megatron name.
std::string ShardingStrategyName(v1::DataParallelSharding sharding);

// --cp-comm-type (transformer_config.py cp_comm_type): "a2a+p2p".
std::optional<v1::ContextParallelComm> CpCommTypeNamed(absl::string_view name);
// "unknown" for a value without a name (UNSPECIFIED, out of range).
std::string CpCommTypeName(v1::ContextParallelComm comm);

}  // namespace memgate

#endif  // MEMGATE_ESTIMATOR_MEGATRON_NAMES_H_
