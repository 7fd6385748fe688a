#include "planner/refusal_hints.h"

#include <algorithm>
#include <numeric>
#include <set>
#include <tuple>

#include "absl/status/statusor.h"
#include "estimator/estimate.h"
#include "estimator/memory_model.h"
#include "estimator/validation.h"
#include "planner/cheap_recompute.h"
#include "planner/cost_model.h"
#include "planner/divisors.h"
#include "planner/gpu_datasheets.h"
#include "planner/planner.h"

namespace memgate {
std::vector<v1::Candidate> SuggestLayouts(const v1::Job& job, double threshold,
                                          int count, uint64_t max_layouts) {
  v1::PlanRequest request;
  *request.mutable_model() = job.model();
  *request.mutable_accelerator() = job.accelerator();
  request.set_num_gpus(job.num_gpus());
  request.set_seq_length(job.training().seq_length());
  // Without a global batch, any one that every layout divides: the
  // suggestions are about memory, and the bubble is then only indicative.
  const uint64_t any_batch = uint64_t{job.num_gpus()} * kDefaultMaxMicroBatch;
  request.set_global_batch_size(
      job.training().global_batch_size() ? job.training().global_batch_size()
      : any_batch <= UINT32_MAX          ? static_cast<uint32_t>(any_batch)
                                         : job.num_gpus());
  request.set_precision(job.training().precision());
  // Planned as the job runs (dropout, optimizer, offload, fp8, selective
  // recomputation...): with the paper's settings, a suggestion could be
  // refused again once tried.
  *request.mutable_training() = PlanTemplateOf(job.training());
  // A Megatron-FSDP job is told the FSDP layouts (PP 1) that fit.
  request.set_data_parallel_sharding(job.parallel().data_parallel_sharding());
  request.set_fsdp_double_buffer(job.parallel().fsdp_double_buffer());
  request.set_fsdp_communication_unit_size(
      job.parallel().fsdp_communication_unit_size());
  request.set_distributed_optimizer_instances(
      job.parallel().distributed_optimizer_instances());
  // And with its context-parallel exchange.
  request.set_context_parallel_comm(job.parallel().context_parallel_comm());
  request.set_context_parallel_a2a_size(
      job.parallel().context_parallel_a2a_size());
  // And its DDP buckets, whose padding the distributed optimizer lays out.
  request.set_ddp_bucket_size(job.parallel().ddp_bucket_size());
  request.set_ddp_num_buckets(job.parallel().ddp_num_buckets());
  request.set_pad_buckets_for_high_nccl_busbw(
      job.parallel().pad_buckets_for_high_nccl_busbw());
  request.set_threshold(threshold);
  // A plan lists each layout once (its best schedule); suggestions name
  // each (TP, CP, PP, MBS) once, so a few spare for MoE layouts that
  // differ only in EP or ETP.
  const int wanted = std::clamp<int>(count, 0, kMaxPlanCandidates / 2);
  request.set_top_k(static_cast<uint32_t>(2 * wanted));
  std::vector<v1::Candidate> out;
  absl::StatusOr<uint64_t> size = CountPlanLayouts(request);
  if (!size.ok() || *size > max_layouts) return out;
  // Recomputation only when nothing fits without it: the Admit path stays
  // one estimate per layout in the common case.
  for (bool no_recompute : {true, false}) {
    request.set_no_recompute(no_recompute);
    PlanOptions options;
    options.max_layer_wise_work = kMaxSuggestionLayerWiseWork;
    absl::StatusOr<v1::PlanResponse> plan =
        PlanLayouts(request, nullptr, options);
    if (!plan.ok()) return out;
    using Key = std::tuple<uint32_t, uint32_t, uint32_t, uint32_t, uint32_t,
                           uint32_t>;
    std::set<Key> named;
    for (const v1::Candidate& c : plan->candidates()) {
      if (c.zone() != v1::ZONE_GREEN) continue;
      if (out.size() == static_cast<size_t>(wanted)) break;
      const Key key{c.tensor_parallel(),  c.context_parallel(),
                    c.pipeline_parallel(), c.expert_parallel(),
                    c.expert_tensor_parallel(), c.micro_batch_size()};
      if (named.insert(key).second) out.push_back(c);
    }
    if (!out.empty()) break;
  }
  return out;
}

namespace {

// The layers of the job's largest (virtual) stage, which Megatron's block
// method's --recompute-num-layers counts in; 0 past kMaxRecomputeProbeStages
// stages or where no stage has a layer.
uint64_t LargestStageLayers(const v1::Job& job) {
  const v1::ParallelConfig& par = job.parallel();
  const uint64_t stages = uint64_t{par.pipeline_parallel()} *
                          std::max(1u, par.virtual_pipeline_stages());
  if (stages == 0 || stages > kMaxRecomputeProbeStages) return 0;
  uint64_t largest = 0;
  for (uint32_t n : par.layers_per_stage()) {
    largest = std::max<uint64_t>(largest, n);
  }
  if (par.layers_per_stage_size() == 0) {
    largest = (uint64_t{job.model().num_layers()} + stages - 1) / stages;
  }
  return largest <= UINT32_MAX ? largest : 0;
}

// Whether `job` recomputing exactly `modules` fits (one estimate).
bool FitsWith(const std::vector<v1::Recompute::Module>& modules,
              const v1::Job& job, double threshold) {
  v1::Job probe = job;
  RecomputeModulesIn(modules, probe);
  absl::StatusOr<v1::Estimate> e = EstimateJob(probe, threshold);
  return e.ok() && e->zone() == v1::ZONE_GREEN;
}

}  // namespace

uint32_t LeastRecomputeThatFits(const v1::Job& job, double threshold) {
  if (job.training().recompute().granularity() ==
      v1::Recompute::GRANULARITY_FULL) {
    return 0;
  }
  // Megatron's block method recomputes the first N layers of every
  // (virtual) stage, so N need not exceed the largest stage's layers.
  const uint64_t largest = LargestStageLayers(job);
  if (largest == 0) return 0;
  v1::Job probe = job;
  auto fits = [&](uint64_t n) {
    v1::Recompute& r = *probe.mutable_training()->mutable_recompute();
    r.Clear();
    r.set_granularity(v1::Recompute::GRANULARITY_FULL);
    r.set_method(v1::Recompute::METHOD_BLOCK);
    r.set_num_layers(static_cast<uint32_t>(n));
    absl::StatusOr<v1::Estimate> e = EstimateJob(probe, threshold);
    return e.ok() && e->zone() == v1::ZONE_GREEN;
  };
  if (!fits(largest)) return 0;
  // More layers recomputed never hold more memory: bisect for the least.
  uint64_t lo = 1, hi = largest;
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (fits(mid)) hi = mid; else lo = mid + 1;
  }
  return static_cast<uint32_t>(lo);
}

std::vector<v1::Recompute::Module> ModulesThatFit(const v1::Job& job,
                                                  double threshold,
                                                  uint32_t least_layers) {
  const ModelShape shape = ShapeOf(job.model());
  const Layout layout = LayoutOf(job);
  const SelectiveModules cheap = CheapModulesFor(shape, layout);
  const bool full = layout.recompute == RecomputeKind::kFullUniform ||
                    layout.recompute == RecomputeKind::kFullBlock;
  // Unfused attention's scores, unless already recomputed.
  const bool scores =
      !full && layout.unfused_attention &&
      !(layout.recompute == RecomputeKind::kSelective &&
        layout.recompute_core_attn);
  auto modules_of = [&](const SelectiveModules& added) {
    Layout with = WithSelectiveModules(layout, added);
    with.recompute_core_attn |= scores;
    return ModulesOf(with);
  };
  if (cheap.any() || scores) {
    std::vector<v1::Recompute::Module> modules = modules_of(cheap);
    if (FitsWith(modules, job, threshold)) return modules;
  }
  const SelectiveModules ffn = FfnModulesFor(shape, layout);
  if (!ffn.any()) return {};
  // Named only where it is the cheaper change (cost_model.h (7) against
  // one more forward of the recomputed share of a stage: planner.cc), with
  // an MoE layer's exchange run forward again where it is recomputed whole,
  // as the plan prices it (cost_model.h MoeRecomputeExchange of the job's
  // factor (6), which depends on its EP, dispatcher and node size only).
  if (least_layers > 0) {
    const uint64_t stage_layers = LargestStageLayers(job);
    const CostModel cost =
        WithDatasheetRatios(CostModel(), job.accelerator().name());
    const LayerWeights weights = ActiveWeightsPerToken(shape);
    const double expert =
        shape.experts > 0 ? SpeedOf(shape, weights, layout,
                                    /*microbatches=*/1,
                                    job.accelerator().gpus_per_node(), cost)
                                .expert
                          : 1;
    const double ffn_cost = SelectiveRecomputeCostAt(
        ffn,
        SelectiveRecomputeCost(shape, weights, ffn, layout.seq_length,
                               layout.precision == v1::PRECISION_FP32 ? 4 : 2,
                               cost),
        expert);
    if (stage_layers == 0 ||
        ffn_cost >= FullRecomputeCost(least_layers, stage_layers, expert)) {
      return {};
    }
  }
  std::vector<v1::Recompute::Module> modules = modules_of(ffn);
  if (!FitsWith(modules, job, threshold)) return {};
  return modules;
}

namespace {

// The least data-parallel size d whose multiples are exactly the d that
// Megatron's divisibility rules allow for this job's other sizes
// (ValidateJob): with MoE the expert group EP x ETP x PP divides the GPUs
// d x t x c x p, and the distributed optimizer's N instances divide d x c
// and, with MoE, the expert-data-parallel size GPUs / (EP x ETP x PP).
// Each rule is "d x A is a multiple of B", whose solutions are the
// multiples of B / gcd(A, B). The job's own d (a valid job's) satisfies
// every rule, so the unit divides it: below 2^32, with no overflow.
uint64_t DataParallelUnit(const v1::Job& job, const Layout& layout) {
  const v1::ParallelConfig& par = job.parallel();
  const uint64_t group = uint64_t{par.tensor_parallel()} *
                         par.pipeline_parallel() * par.context_parallel();
  const uint64_t n = std::max(1u, par.distributed_optimizer_instances());
  auto solutions = [](uint64_t a, uint64_t b) { return b / std::gcd(a, b); };
  uint64_t unit = solutions(par.context_parallel(), n);
  if (job.model().has_moe()) {
    // EP x ETP x PP <= GPUs < 2^32 (ValidateJob), so x N fits in 64 bits.
    const uint64_t expert_group =
        uint64_t{std::max(1u, par.expert_parallel())} *
        static_cast<uint64_t>(layout.expert_tensor) * par.pipeline_parallel();
    const uint64_t expert = solutions(group, expert_group * n);
    unit = std::lcm(unit, expert);
  }
  return unit;
}

}  // namespace

uint32_t SmallestGpuCountThatFits(const v1::Job& job, double threshold) {
  const ModelShape shape = ShapeOf(job.model());
  Layout layout = LayoutOf(job);
  // Under Lion's or Muon's layer-wise distributed optimizer [LW] more
  // data-parallel ranks pad each buffer more (a bucket is DP x its fullest
  // shard): the search's premise, a peak that falls as DP grows, fails,
  // and each count it tries would be packed anew, up to thousands of
  // counts at a cost validation bounded only at the job's own DP. No
  // count is suggested (the other hints estimate the job's own layout).
  if (layout.layer_wise()) return 0;
  const double capacity = static_cast<double>(job.accelerator().memory_bytes());
  const uint64_t group = uint64_t{job.parallel().tensor_parallel()} *
                         job.parallel().pipeline_parallel() *
                         job.parallel().context_parallel();
  const uint32_t b = job.training().micro_batch_size();
  const uint32_t gbs = job.training().global_batch_size();
  const uint64_t unit = DataParallelUnit(job, layout);
  auto fits = [&](uint64_t d) {
    layout.data = static_cast<double>(d);
    layout.microbatches = gbs == 0 ? 0 : static_cast<double>(gbs) / (b * d);
    // Interleaving runs only whole groups of the job's micro-batches.
    if (gbs != 0 && layout.virtual_stages > 1 &&
        !InterleavedGroupsRun(job.parallel().pipeline_parallel(),
                              static_cast<uint64_t>(MicrobatchGroup(layout)),
                              gbs / b / d)) {
      return false;
    }
    return AdmissionZone(PeakOfEvenStages(shape, layout), capacity,
                         threshold) == v1::ZONE_GREEN;
  };
  const uint64_t max_d = UINT32_MAX / group;
  if (max_d < unit) return 0;
  if (gbs != 0) {  // d must divide gbs / b
    if (gbs % b) return 0;
    for (uint32_t d : Divisors(gbs / b)) {
      if (d > max_d) break;
      if (d % unit == 0 && fits(d)) return static_cast<uint32_t>(d * group);
    }
    return 0;
  }
  // The peak falls as d grows, until the distributed optimizer's bucket
  // padding (a multiple of lcm(d x c, 128) a bucket, memory_model.cc [BP])
  // outgrows its shard at an absurd d: double k until k units fit, then
  // bisect below (the answer fits whatever happens between).
  const uint64_t max_k = max_d / unit;
  uint64_t hi = 1;
  while (!fits(hi * unit)) {
    if (hi == max_k) return 0;
    hi = std::min(max_k, 2 * hi);
  }
  uint64_t lo = hi / 2 + 1;
  if (hi == 1) lo = 1;
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (fits(mid * unit)) hi = mid; else lo = mid + 1;
  }
  return static_cast<uint32_t>(lo * unit * group);
}

}  // namespace memgate
