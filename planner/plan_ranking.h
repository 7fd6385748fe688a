#ifndef MEMGATE_PLANNER_PLAN_RANKING_H_
#define MEMGATE_PLANNER_PLAN_RANKING_H_

// The planner's order of the layouts it estimated (planner.h, Ranking):
// planner.cc searches, this ranks. Not part of memgate's API: exported
// only for plan_ranking_test.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "planner/planner.h"
#include "planner/stage_split.h"
#include "proto/memgate.pb.h"

namespace memgate {

// The selective modules a layout recomputes to fit (Layout4D::modules).
enum class ModuleSet : uint8_t { kNone, kCheap, kWithFfn };

// One layout in the search. Plain data: the inner loop fills a reserved
// vector of these and allocates nothing per candidate.
struct Layout4D {
  uint32_t t, c, p, b, d;
  uint32_t ep, etp;  // 1, 1 for dense models
  // Uneven pipeline (Megatron --decoder-first/last-pipeline-num-layers):
  // the first and last stages' layers; 0 for an even split.
  uint32_t first_layers, last_layers;
  uint32_t v;          // model chunks per rank (interleaved 1F1B); 1: none
  bool account_embedding, account_loss;  // ChunkForm::kAccounted
  uint32_t recompute;  // layers a stage recomputes (full, block); 0: none
  double recompute_cost;  // 1 + recompute / (3 x stage layers); 1: none
  double peak_bytes;
  double speed;
  double bubble;
  v1::Zone zone;
  // The cost model's expert-exchange factor (cost_model.h (6)); 1 for
  // dense models and for EP 1.
  double exchange = 1;
  // Interleaved chunks in the MTP-counting form (planner.cc kMtpLayout),
  // which only --pipeline-model-parallel-layout expresses.
  bool mtp_layout = false;
  // Fits by selective recomputation at recompute_cost (recompute is then
  // 0): the planner's cheap modules (cheap_recompute.h CheapModulesFor),
  // or those and a layer's MLP or MoE part (FfnModulesFor).
  ModuleSet modules = ModuleSet::kNone;
  bool recomputes() const {
    return recompute > 0 || modules != ModuleSet::kNone;
  }
  // A schedule that does not fit whose whole peak the plan left
  // unworked, as it cannot be shown (planner.cc Enumerate): 1 + the index
  // of its chunking among its pipeline depth's, its zone ZONE_UNSPECIFIED
  // and peak_bytes 0; 0 otherwise.
  uint32_t unresolved_chunking = 0;
};

// The group the paper's rule minimises: TP x CP x PP, doubled once for
// each whole factor of 1 / kWorstMeasuredDoubling that the layout loses
// to prices the product does not see, the fewest doublings each is
// certainly worth:
// - Its expert exchange. The rule was measured on dense models, where
//   model parallelism's price grows with that product; expert
//   parallelism's exchange is a price the product does not see (EP is not
//   in it). Dense layouts and exchanges inside a node's NVLink (x0.85 and
//   up) keep their product.
// - Under kRuleThenCost, its pipeline bubble beyond the largest the
//   paper measured, as (1 + kLargestMeasuredBubble) / (1 + bubble). The
//   paper measured the rule where micro-batches were plentiful (global
//   batch 1,024 on at most 256 GPUs: bubbles of at most 3/32), and names
//   the bubble of scarce micro-batches as a loss "beyond the communication
//   overhead of added GPUs" (sections 1 and 4.2.1: (2, 1, 2, 1) with 16
//   micro-batches on 256 GPUs). A bubble of 34.2% and more (x0.815 beyond
//   3/32) is that loss: the product alone would rank a pipeline of 16
//   stages with one micro-batch each (a bubble of 1,500%) before one of
//   eight times its product that keeps its GPUs busy. kPaperRule, the
//   baseline, keeps the paper's product and breaks its ties by the bubble.
uint64_t RuleGroupOf(const Layout4D& l, Ranking ranking);

// A layout's schedule variants (interleaving, recomputation) share its
// TP, CP, PP, EP, ETP and MBS: at most kVariantsPerTier in each tier of
// the ranking, one a schedule the planner lists (plain, the fastest
// interleaving that fits, the deepest: kSchedulesPerSplit) for each split
// of its layers it tries (stage_split.h kSplitsPerDepth: its own, and two
// that even out the LM head).
inline constexpr size_t kSchedulesPerSplit = 3;
inline constexpr size_t kVariantsPerTier = kSchedulesPerSplit * kSplitsPerDepth;

// Whether a GREEN schedule fits as it is or by recomputation that costs
// at most kMaxCompetingRecomputeCost: it then competes with the layouts
// that fit (RankLayouts); a costlier one ranks after all of them.
bool Competes(const Layout4D& l);

// Of two GREEN schedules of one layout, whether `x` ranks before `y`: the
// one that competes first (whatever the cost model says of a costlier
// recomputation, it ranks after every layout that fits), then the faster.
// How the planner picks the schedule a layout is listed with.
bool ScheduleBefore(const Layout4D& x, const Layout4D& y);

// The first `keep` layouts, best first: those that fit without
// recomputation in the rule's order, each that fits by a competing
// recomputation (at most kMaxCompetingRecomputeCost) placed before the
// first of them that has a larger TP x CP x PP and is slower under the
// cost model, each by its best schedule (never before one of the same or
// a smaller product: the rule already prefers it); then the costlier
// recomputations, fastest first; then those that do not fit, closest
// first. A layout appears once, with
// its best schedule: its other variants (plain, other depths, more
// recomputation) would crowd the list with the same GPUs and groups (an
// interleaved one without recomputation implies the plain one fits too).
// Reorders `layouts`; O(n + keep log n).
std::vector<Layout4D> RankLayouts(std::vector<Layout4D>& layouts, size_t keep,
                                  Ranking ranking);

}  // namespace memgate

#endif  // MEMGATE_PLANNER_PLAN_RANKING_H_
