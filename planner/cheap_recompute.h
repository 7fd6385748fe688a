#ifndef MEMGATE_PLANNER_CHEAP_RECOMPUTE_H_
#define MEMGATE_PLANNER_CHEAP_RECOMPUTE_H_

// Megatron's selective recomputation as a plan tries it: the cheap modules
// (experts' activation, norms, MLA's up projections) before full
// recomputation, a layer's MLP or MoE part between full recomputation's
// counts (planner.cc), and what a refusal names when they make the job
// fit (refusal_hints.cc). Their price is cost_model.h's (7).

#include <vector>

#include "estimator/memory_model.h"
#include "planner/cost_model.h"
#include "proto/memgate.pb.h"

namespace memgate {

// The cheap modules a layout may add to its own recomputation: each only
// where memgate credits it and Megatron runs it (transformer_config.py:
// moe_act needs grouped GEMMs, which a candidate's arguments turn on;
// moe_act and layernorm under fp8 need a recipe other than delayed and
// TransformerEngine 2.6, so under fp8 neither is added; mla_up_proj needs
// MLA). layernorm is credited on MoE layers only (memory_model.cc): dense
// models get none. None under full recomputation (one granularity).
SelectiveModules CheapModulesFor(const ModelShape& m, const Layout& base);

// The cheap modules (CheapModulesFor) and a layer's whole feed-forward
// part, which the planner tries between full recomputation's counts at its
// price: a dense model's MLP (Megatron's "mlp": transformer_layer.py
// checkpoints self.mlp where the layer is not an MoE layer), an MoE
// model's MoE layers (Megatron's "moe": moe_layer.py checkpoints the
// router, the experts, the shared experts and the token exchange; not
// beside moe_act, which it covers, nor under the EP overlap, which
// Megatron-LM refuses with it). None (any() false) under full
// recomputation, or where `base` already recomputes that part. An MoE
// model's dense layers are few (DeepSeek-V3's three of 61): "mlp" is not
// tried for them.
SelectiveModules FfnModulesFor(const ModelShape& m, const Layout& base);

// `l` recomputing `modules` (the cheap ones, perhaps the MLP) beside its
// own selective ones:
// Megatron's --recompute-modules replaces its default (core attention), so
// a layout without recomputation recomputes the cheap ones only.
Layout WithSelectiveModules(Layout l, const SelectiveModules& modules);

// The --recompute-modules of a selective layout, in the order
// transformer_config.py documents them; empty for any other.
std::vector<v1::Recompute::Module> ModulesOf(const Layout& l);

// `r` as selective recomputation of exactly `modules` (Recompute.Module
// values, or ints holding them): what it recomputed before is replaced, as
// Megatron has one --recompute-granularity.
template <typename Modules>
void SetSelectiveRecompute(const Modules& modules, v1::Recompute& r) {
  r.Clear();
  r.set_granularity(v1::Recompute::GRANULARITY_SELECTIVE);
  for (const auto module : modules) {
    r.add_modules(static_cast<v1::Recompute::Module>(module));
  }
}

// `job` recomputing exactly `modules` (SetSelectiveRecompute), with the
// grouped GEMMs Megatron needs for moe_act (transformer_config.py raises
// without them; they change no memory term but the order of the experts'
// matrices in [LW]'s buffers, which the planner estimates such candidates
// with: planner.cc Search::moe_act_shape): how a plan candidate and a
// refusal's hint turn the cheap modules on.
template <typename Modules>
void RecomputeModulesIn(const Modules& modules, v1::Job& job) {
  SetSelectiveRecompute(modules, *job.mutable_training()->mutable_recompute());
  for (const auto module : modules) {
    if (module == v1::Recompute::MODULE_MOE_ACT) {
      job.mutable_model()->mutable_moe()->set_grouped_gemm(true);
    }
  }
}

}  // namespace memgate

#endif  // MEMGATE_PLANNER_CHEAP_RECOMPUTE_H_
