#ifndef MEMGATE_ESTIMATOR_MEGATRON_RELEASE_H_
#define MEMGATE_ESTIMATOR_MEGATRON_RELEASE_H_

// Megatron-Core releases, as TrainingConfig.megatron_core_version names
// them, and what memgate's terms take from them. Not part of memgate's
// API: the resolver (job_resolver.h) applies it; exported for its test.

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/memgate.pb.h"

namespace memgate {

// "0.13.0", "v0.12.1", "core_v0.14.0rc2", "0.13": the forms of Megatron-
// LM's core_v* tags. `patch` is absent when the text names a minor
// release only; `rc` when it names a final release.
struct MegatronCoreRelease {
  uint32_t major = 0, minor = 0;
  int64_t patch = -1;  // -1: not given
  int64_t rc = -1;     // -1: a final release
};

// At most kMaxReleaseTextBytes characters of that grammar; INVALID_ARGUMENT
// says which rule the text breaks (without the field's name).
inline constexpr size_t kMaxReleaseTextBytes = 32;
absl::StatusOr<MegatronCoreRelease> ParseMegatronCoreRelease(
    absl::string_view text);

// Where the release applies the routing probabilities (moe_terms.cc
// [PA]): AT_UNPERMUTE up to core 0.12.0 (its release candidates
// included), IN_EXPERTS from 0.12.1 and 0.13.0rc0 on (ADLR/megatron-lm!2668:
// main 2659630721, cherry-picked into core_r0.12.0 as d5d00fdc87; every
// core_v* tag from those on contains one of them, none before does).
// INVALID_ARGUMENT for "0.12" (0.12.0 and 0.12.1 differ) and for a release
// candidate of 0.12.1 (no such tag: which side it falls on is unknown).
absl::StatusOr<v1::MoeConfig::ProbsApplied> RoutingProbsAppliedBy(
    const MegatronCoreRelease& release);

// Whether the release recomputes MTP layers under full recomputation,
// method uniform, asserting groups of one layer there (multi_token_
// prediction.py: "recompute_num_layers must be 1 for MTP recompute";
// ADLR/megatron-lm!3330, main 08abeedbfe, first tagged in core_v0.14.0rc6
// and in every core_v* tag from 0.14.0 on). Earlier releases, 0.14.0rc0 to
// rc5 among them, do not recompute them. "0.14" counts as 0.14.0.
bool RecomputesMtpLayers(const MegatronCoreRelease& release);

// Which optimizer --optimizer lion gives the parameters that are not
// matrices (norms, biases) and the word embeddings and LM head
// (is_embedding_or_output_parameter). Core 0.17.x builds one Lion for
// every parameter (core/optimizer/__init__.py `elif config.optimizer ==
// 'lion'`); from 0.18.0 on get_megatron_optimizer sends every optimizer
// but adam and sgd to _get_megatron_emerging_optimizer (main 5b512b45d1,
// "Refactor emerging optimizer integration"), whose registry entry for
// Lion routes those parameters to Adam (emerging_optimizers.py
// _default_param_overrides_factory, _is_nonlinear_or_embedding).
// kEither for a release candidate of 0.18.0 (none is tagged: which side
// it falls on is unknown). INVALID_ARGUMENT before core 0.17.0, which has
// no Lion (arguments.py --optimizer choices: main 83498ef9cf, and
// core_v0.17.0rc0 on; core_v0.16.1 has none).
enum class LionScalarOptimizer { kLion, kAdam, kEither };
absl::StatusOr<LionScalarOptimizer> LionScalarOptimizerOf(
    const MegatronCoreRelease& release);

// What the release decides of --optimizer muon (arguments.py --optimizer
// choices: core_v0.16.0 on; core_v0.15.x has none: INVALID_ARGUMENT).
struct MuonRelease {
  // --muon-tp-mode's default: blockwise in every core_v* tag through
  // 0.19.0 (arguments.py); duplicated on main since bb47df5416 ("GTP+Muon:
  // support 'blockwise' and 'distributed' tp_mode", in no tag yet), taken
  // to hold from core 0.20 on.
  v1::Muon::TpMode default_tp_mode = v1::Muon::TP_MODE_BLOCKWISE;
  // Whether --muon-scalar-optimizer lion trains the parameters Muon leaves
  // with Lion: core 0.17 (muon.py get_megatron_muon_optimizer sets
  // config.optimizer to it), 0.18.2 and 0.19 on
  // (_get_megatron_emerging_optimizer rewrites the registry's 'adam' to
  // it, main b4ad280d35); core 0.18.0 reads the argument and trains them
  // with Adam; core 0.16 has no such argument.
  bool scalar_lion = false;
};
absl::StatusOr<MuonRelease> MuonReleaseOf(const MegatronCoreRelease& release);

// How the release runs Lion or Muon with --use-distributed-optimizer
// (memory_model.cc [LW]). Before 0.18.0 Megatron asserts: against Muon
// with it (arguments.py "Muon optimizer does not support distributed
// optimizer for now"; their dist_muon is a ping-pong layer-wise path
// memgate does not model), and against Lion in the DistributedOptimizer
// it builds for it (distrib_optimizer.py "Only Adam and
// HybridDeviceOptimizer currently supported"): INVALID_ARGUMENT. From
// 0.18.0 on arguments.py turns the flag into the layer-wise distributed
// optimizer, whose DDP layout (main c1e938b039, 0044db1f20: in
// core_v0.18.0) packs whole matrices by elements through 0.19.x and by
// Newton-Schulz cost after (main 85344907be, e0ccd26776: in no tag yet,
// taken to hold from core 0.20 on). A release candidate of 0.18.0 (none
// is tagged) runs it or asserts: the layer-wise optimizer's.
struct EmergingDistributedRun {
  bool by_elements = false;  // LayerWisePacking::kByElements
  bool by_cost = false;      // kByNewtonSchulzCost
};
absl::StatusOr<EmergingDistributedRun> EmergingDistributedRunOf(
    v1::Optimizer optimizer, const MegatronCoreRelease& release);

}  // namespace memgate

#endif  // MEMGATE_ESTIMATOR_MEGATRON_RELEASE_H_
