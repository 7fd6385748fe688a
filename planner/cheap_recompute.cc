#include "planner/cheap_recompute.h"

#include <utility>

namespace memgate {

SelectiveModules CheapModulesFor(const ModelShape& m, const Layout& base) {
  SelectiveModules cheap;
  if (base.recompute == RecomputeKind::kFullUniform ||
      base.recompute == RecomputeKind::kFullBlock) {
    return cheap;
  }
  const bool selective = base.recompute == RecomputeKind::kSelective;
  const bool moe_recomputed = selective && base.recompute_moe;
  if (m.experts > 0 && !base.fp8 && !moe_recomputed) {
    cheap.moe_act = !(selective && base.recompute_moe_act);
    cheap.layernorm = !(selective && base.recompute_layernorm);
  }
  cheap.mla_up_proj = m.mla && !(selective && base.recompute_mla_up_proj);
  return cheap;
}

SelectiveModules FfnModulesFor(const ModelShape& m, const Layout& base) {
  const bool selective = base.recompute == RecomputeKind::kSelective;
  if (base.recompute == RecomputeKind::kFullUniform ||
      base.recompute == RecomputeKind::kFullBlock) {
    return {};
  }
  SelectiveModules modules = CheapModulesFor(m, base);
  if (m.experts > 0) {
    // Megatron-LM's EP overlap refuses "moe" (validation.cc), and an MoE
    // layer recomputed whole repeats its activation: moe_act is not added.
    if (base.ep_overlap || (selective && base.recompute_moe)) return {};
    modules.moe_act = false;
    modules.moe = true;
    return modules;
  }
  if (selective && base.recompute_mlp) return {};
  modules.mlp = true;
  return modules;
}

Layout WithSelectiveModules(Layout l, const SelectiveModules& modules) {
  if (l.recompute != RecomputeKind::kSelective) {
    l.recompute = RecomputeKind::kSelective;
    l.recompute_core_attn = false;
  }
  l.recompute_moe_act |= modules.moe_act;
  l.recompute_layernorm |= modules.layernorm;
  l.recompute_mla_up_proj |= modules.mla_up_proj;
  l.recompute_mlp |= modules.mlp;
  l.recompute_moe |= modules.moe;
  return l;
}

std::vector<v1::Recompute::Module> ModulesOf(const Layout& l) {
  std::vector<v1::Recompute::Module> modules;
  if (l.recompute != RecomputeKind::kSelective) return modules;
  const std::pair<bool, v1::Recompute::Module> flags[] = {
      {l.recompute_core_attn, v1::Recompute::MODULE_CORE_ATTN},
      {l.recompute_moe_act, v1::Recompute::MODULE_MOE_ACT},
      {l.recompute_layernorm, v1::Recompute::MODULE_LAYERNORM},
      {l.recompute_mla_up_proj, v1::Recompute::MODULE_MLA_UP_PROJ},
      {l.recompute_mlp, v1::Recompute::MODULE_MLP},
      {l.recompute_moe, v1::Recompute::MODULE_MOE},
      {l.recompute_shared_experts, v1::Recompute::MODULE_SHARED_EXPERTS}};
  for (const auto& [on, module] : flags) {
    if (on) modules.push_back(module);
  }
  return modules;
}

}  // namespace memgate
