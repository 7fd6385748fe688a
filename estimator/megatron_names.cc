#include "estimator/megatron_names.h"

#include <utility>

namespace memgate {
namespace {

template <typename Enum>
using NameTable = std::pair<const char*, Enum>;

constexpr NameTable<v1::Recompute::Module> kRecomputeModules[] = {
    {"core_attn", v1::Recompute::MODULE_CORE_ATTN},
    {"mlp", v1::Recompute::MODULE_MLP},
    {"moe", v1::Recompute::MODULE_MOE},
    {"moe_act", v1::Recompute::MODULE_MOE_ACT},
    {"shared_experts", v1::Recompute::MODULE_SHARED_EXPERTS},
    {"layernorm", v1::Recompute::MODULE_LAYERNORM},
    {"mla_up_proj", v1::Recompute::MODULE_MLA_UP_PROJ}};

constexpr NameTable<v1::Recompute::Granularity> kRecomputeGranularities[] = {
    {"selective", v1::Recompute::GRANULARITY_SELECTIVE},
    {"full", v1::Recompute::GRANULARITY_FULL}};

constexpr NameTable<v1::Recompute::Method> kRecomputeMethods[] = {
    {"uniform", v1::Recompute::METHOD_UNIFORM},
    {"block", v1::Recompute::METHOD_BLOCK}};

constexpr NameTable<v1::DataParallelSharding> kShardingStrategies[] = {
    {"no_shard", v1::DATA_PARALLEL_SHARDING_NO_SHARD},
    {"optim", v1::DATA_PARALLEL_SHARDING_OPTIM},
    {"optim_grads", v1::DATA_PARALLEL_SHARDING_OPTIM_GRADS},
    {"optim_grads_params", v1::DATA_PARALLEL_SHARDING_OPTIM_GRADS_PARAMS}};

// TransformerEngine's spellings (context_parallel.py), which Megatron
// passes on as given: its help text's "allgather" is not one.
constexpr NameTable<v1::ContextParallelComm> kCpCommTypes[] = {
    {"p2p", v1::CONTEXT_PARALLEL_COMM_P2P},
    {"all_gather", v1::CONTEXT_PARALLEL_COMM_ALL_GATHER},
    {"a2a", v1::CONTEXT_PARALLEL_COMM_A2A},
    {"a2a+p2p", v1::CONTEXT_PARALLEL_COMM_A2A_P2P}};

template <typename Enum, size_t N>
std::optional<Enum> ValueNamed(const NameTable<Enum> (&table)[N],
                               absl::string_view name) {
  for (const auto& [text, value] : table) {
    if (name == text) return value;
  }
  return std::nullopt;
}

template <typename Enum, size_t N>
std::string NameOf(const NameTable<Enum> (&table)[N], Enum value) {
  for (const auto& [text, v] : table) {
    if (v == value) return text;
  }
  return "unknown";
}

}  // namespace

std::optional<v1::Recompute::Module> RecomputeModuleNamed(
    absl::string_view name) {
  return ValueNamed(kRecomputeModules, name);
}

std::string RecomputeModuleName(v1::Recompute::Module module) {
  return NameOf(kRecomputeModules, module);
}

std::optional<v1::Recompute::Granularity> RecomputeGranularityNamed(
    absl::string_view name) {
  return ValueNamed(kRecomputeGranularities, name);
}

std::optional<v1::Recompute::Method> RecomputeMethodNamed(
    absl::string_view name) {
  return ValueNamed(kRecomputeMethods, name);
}

std::optional<v1::DataParallelSharding> ShardingStrategyNamed(
    absl::string_view name) {
  return ValueNamed(kShardingStrategies, name);
}

std::string ShardingStrategyName(v1::DataParallelSharding sharding) {
  return NameOf(kShardingStrategies, sharding);
}

std::optional<v1::ContextParallelComm> CpCommTypeNamed(
    absl::string_view name) {
  return ValueNamed(kCpCommTypes, name);
}

std::string CpCommTypeName(v1::ContextParallelComm comm) {
  return NameOf(kCpCommTypes, comm);
}

}  // namespace memgate
