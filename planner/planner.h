#ifndef MEMGATE_PLANNER_PLANNER_H_
#define MEMGATE_PLANNER_PLANNER_H_

// The whole 4D space for one model on one cluster: every valid (TP, CP, PP,
// MBS) (and, for MoE models, EP and ETP), its peak memory and zone, ranked
// admitted-first, then by the smallest TP x CP x PP (the paper's rule), then
// by expected speed (see cost_model.h), so the first candidate is the one to
// run.

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "planner/cost_model.h"
#include "proto/memgate.pb.h"

namespace memgate {

// The fewest tokens of a sequence a context-parallel rank may hold in a
// plan (s / CP): below this, ring attention's KV exchange no longer hides
// behind the rank's attention compute and the GEMMs starve; no published
// run goes lower. Jobs that do are still estimated; the planner does not
// propose them.
inline constexpr uint32_t kMinTokensPerContextRank = 1024;

// The deepest interleaving a plan tries: model chunks a pipeline rank
// holds (Megatron's --num-virtual-stages-per-pipeline-rank): 32 chunks
// are 1-layer chunks of a 32-layer stage, and published recipes use 2 to 8
// (the cost model's point-to-point price rises with v). Bounds the
// schedules each layout is tried with.
inline constexpr uint32_t kMaxPlanVirtualStages = 32;

// Largest micro-batch size tried when a request does not say.
inline constexpr uint32_t kDefaultMaxMicroBatch = 16;

// The bounds on one plan's work, checked before any layout is estimated so
// that no request (a 60-byte one can name a million GPUs) makes the server
// spend more than about 0.1 s of CPU and 16 MiB on it:
// - at most kMaxPlanGpus GPUs and micro-batch sizes up to kMaxPlanMicroBatch;
// - at most kMaxPlanLayouts layouts estimated: the (TP, CP, PP) triples that
//   pass the model's divisibility rules, times the micro-batch sizes that
//   divide the global batch, times the schedules each is listed with,
//   counted first (no allocation), each layout estimating at most
//   kDeeperInterleavingsTried + kShallowerInterleavingsTried schedules
//   more (below); a larger space
//   is RESOURCE_EXHAUSTED at once, with the count, so the caller can narrow
//   max_micro_batch_size;
// - at most kMaxPlanCandidates candidates in a reply (top_k 0 means "as many
//   as that"; `considered` still counts them all).
inline constexpr uint32_t kMaxPlanGpus = 1u << 20;
inline constexpr uint32_t kMaxPlanMicroBatch = 1024;
inline constexpr uint64_t kMaxPlanLayouts = 1u << 18;
inline constexpr uint32_t kMaxPlanCandidates = 1000;
// An MoE model with dense layers among its MoE ones: which pipeline ranks
// can peak is found by placing every rank's chunks, O(p v) a pipeline
// depth and chunk count, bounded over the plan (p x 528 a depth p) by
// this before any work: RESOURCE_EXHAUSTED above it.
inline constexpr uint64_t kMaxPlanPlacementWork = 1u << 24;

// Called every few thousand layouts; a non-OK status (CANCELLED,
// DEADLINE_EXCEEDED) abandons the plan with that status.
using PlanInterrupt = std::function<absl::Status()>;

// How admitted (GREEN) layouts are ordered. The paper's conclusion
// (section 5) is the backbone: the smallest TP x CP x PP that fits is
// fastest. kRuleThenCost (the default) orders by that product, doubled
// for what the product does not see (an expert exchange, a pipeline bubble
// beyond the paper's: plan_ranking.h RuleGroupOf), then by the cost model
// (cost_model.h: GEMM size, TP/CP communication, bubble, stage imbalance)
// within equal groups; kPaperRule alone breaks ties by the
// larger micro-batch, then the smaller bubble; kCostModel is the cost model
// alone. planner_test scores each leave-one-table-out on the paper's
// shared tables (bench/RESULTS.md). A layout that fits only by
// recomputing at most kMaxCompetingRecomputeCost goes before the layouts of
// a larger product that the cost model finds slower (never before one of
// the same or a smaller product); costlier recomputation comes after all
// the others, fastest first. Each layout (TP, CP, PP, EP, ETP, MBS) is
// listed once, with its best schedule (PlanRequest.no_interleave keeps
// pipelines plain, as the paper measured them).
enum class Ranking { kCostModel, kPaperRule, kRuleThenCost };

// Recomputation that costs at most this (one more forward of the
// recomputed layers: 1 + f / 3 for a share f of a chunk's layers) competes
// with the layouts of larger TP x CP x PP that fit without it; costlier
// recomputation stays a fallback. The bound is the worst price of one
// doubling of TP x CP x PP measured in the paper's shared tables (the best
// run of a product over the best run of half that product, per column:
// worst 0.815, A100 8 -> 16 across the node boundary; median 0.937;
// planner_test RecomputeBoundIsTheWorstMeasuredDoubling): a smaller group
// that recomputes less than that may be faster than the doubling, and the
// cost model decides; recomputing every layer (x 4/3) costs more than any
// doubling the paper measured, so it never displaces a layout that fits.
// Recomputing half a chunk (x 7/6) competes, three quarters (x 5/4) do not.
// The same worst doubling converts an expert exchange's price, and a
// pipeline bubble's beyond the paper's, into doublings of the rule's group
// (plan_ranking.h RuleGroupOf).
inline constexpr double kWorstMeasuredDoubling = 0.815;
inline constexpr double kMaxCompetingRecomputeCost = 1 / kWorstMeasuredDoubling;

// The largest pipeline bubble, (p - 1) / m, of a layout the paper's shared
// tables measured GREEN: (TP, CP, PP, MBS) = (2, 2, 4, 2) on 256 A100s, 3
// stages over 32 micro-batches of its global batch of 1,024 (planner_test
// LargestMeasuredBubbleIsThreeThirtySeconds; the H100 table's alone is
// 1/32). The worst doubling above was measured with bubbles up to this;
// the loss of a larger one is a price TP x CP x PP does not see (plan_
// ranking.h RuleGroupOf).
inline constexpr double kLargestMeasuredBubble = 3.0 / 32;

// The bubble at which the ranking counts a doubling (34.2%): its loss
// beyond kLargestMeasuredBubble is the worst measured doubling.
inline constexpr double kBubbleThatDoubles =
    (1 + kLargestMeasuredBubble) / kWorstMeasuredDoubling - 1;

// Lion and Muon plans (Megatron's layer-wise distributed optimizer, [LW]):
// every layout packs its matrices into buffers over its data-parallel
// ranks, once a schedule and pipeline rank (a LayerWiseMemo a layout
// keeps it across micro-batch sizes and recomputation probes). The plan's
// packing is counted before any layout is estimated (each schedule a
// layout may estimate, at most its estimated ranks' listing and packing:
// LayerWisePlanWorkOf, planner.cc CheckLayerWiseWork) and is
// RESOURCE_EXHAUSTED above this many steps: at most 0.143 ns a step in the
// plans measured, about 0.31 s (BM_PlanLayerWisePastTheBound, both
// packings). Every catalog MoE model over 64 to 16,384 GPUs counts at
// most 1.8e9, and Kimi K2 (a Hugging Face config), the largest model
// trained with Muon, 1.5e9: Qwen3-235B-A22B on 512 GPUs, the most, plans
// in 97 ms by elements (core 0.19) and 161 ms by Newton-Schulz cost
// (main), DeepSeek-V3 on 1,024 in 65 and 120 ms, Llama-3.1-405B on 16,384
// GPUs (9.0e7) in 4 ms. Past it: models of four times DeepSeek-V3's depth
// (2.5e9). A layout whose own packing is past the estimator's bound is
// not proposed, as validation refuses such a job.
inline constexpr uint64_t kMaxPlanLayerWiseWork = uint64_t{1} << 31;

struct PlanOptions {
  Ranking ranking = Ranking::kRuleThenCost;
  // Its datasheet ratios are replaced by those of a catalog GPU
  // (gpu_datasheets.h); the fitted constants are used as given.
  CostModel cost;
  // Where set, the schedules the plan estimated are added to it (each one
  // estimate of a layout's peak and, where it does not fit, its
  // recomputation's bounded probe): the tests of the bound below read it.
  uint64_t* schedules_estimated = nullptr;
  // Where set, raised to the most estimates one schedule's recomputation
  // search made (at most two selective probes and 4 + log2(L / 4) counts
  // of a chunk's L layers): the test of that bound reads it.
  uint32_t* most_recompute_probes = nullptr;
  // The layer-wise packing a plan may do (kMaxPlanLayerWiseWork; a
  // refusal's suggestions, on the Admit path, allow less).
  uint64_t max_layer_wise_work = kMaxPlanLayerWiseWork;
};

// Interleavings deeper than the one the cost model finds fastest that a
// layout is tried with, for one that fits with less recomputation (beyond
// the deepest, always tried), and shallower ones, for one whose longer
// chunks let it recompute a smaller share of them (recomputation counts
// whole layers of a chunk): two cover chunks of one layer growing to four,
// where a chunk's layers can be recomputed in a finer share. A layout
// (TP, CP, PP, EP, ETP, MBS) costs at most kVariantsPerTier +
// kDeeperInterleavingsTried + kShallowerInterleavingsTried schedules'
// estimates, whatever its split (each one estimate and, where it does not
// fit, at most two selective probes, the cheap modules and a dense MLP,
// and 4 + log2(L / 4) counts of full recomputation of a chunk of L
// layers: quarters, then a bisection), so kMaxPlanLayouts and the model's
// layers bound a plan's work.
inline constexpr uint32_t kDeeperInterleavingsTried = 4;
inline constexpr uint32_t kShallowerInterleavingsTried = 2;
// Plain, the fastest interleaving, the deeper and shallower ones tried,
// the deepest.
inline constexpr uint32_t kSchedulesEstimatedPerLayout =
    3 + kDeeperInterleavingsTried + kShallowerInterleavingsTried;

// INVALID_ARGUMENT names the request field that is missing or invalid
// (model, accelerator, num_gpus, seq_length, global_batch_size, threshold,
// top_k); RESOURCE_EXHAUSTED when the search is over the bounds above.
// Candidates come back best first; every one is a job ValidateJob accepts.
// Ranking by the rule's group (not kCostModel), a layout whose group is
// past that of the top_k-th layout fitting as given cannot be shown: it is
// counted in `considered`, not estimated (planner.cc Enumerate), and
// relative speeds are the shown candidates' own.
absl::StatusOr<v1::PlanResponse> PlanLayouts(
    const v1::PlanRequest& request, const PlanInterrupt& interrupt = nullptr,
    const PlanOptions& options = PlanOptions());

// The job a candidate of `request` describes: its parallel sizes, uneven
// stages, interleaving and recomputation, ready for EstimateJob / AdmitJob
// (every candidate's job is valid and estimates to the candidate's zone).
v1::Job JobForCandidate(const v1::PlanRequest& request,
                        const v1::Candidate& candidate);

// A job's training settings as a plan's template (PlanRequest.training):
// all of them but what a plan searches or its request gives (micro-batch,
// sequence length, global batch, precision, full recomputation) and the
// dataloader's attention mask, which candidates turn off.
v1::TrainingConfig PlanTemplateOf(const v1::TrainingConfig& training);

// An upper bound on the layouts PlanLayouts(request) would estimate, counted
// without estimating any; errors as PlanLayouts' for the request's fields
// (and, within kMaxPlanLayouts, for a Lion or Muon plan past
// kMaxPlanLayerWiseWork).
absl::StatusOr<uint64_t> CountPlanLayouts(const v1::PlanRequest& request);

}  // namespace memgate

#endif  // MEMGATE_PLANNER_PLANNER_H_
