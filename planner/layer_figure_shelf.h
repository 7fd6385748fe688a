#ifndef MEMGATE_PLANNER_LAYER_FIGURE_SHELF_H_
#define MEMGATE_PLANNER_LAYER_FIGURE_SHELF_H_

// Layer figures the planner keeps across the layouts that share them
// (memory_model.h LayoutLayerFigures): no layer figure reads the pipeline
// depth, data parallelism, micro-batches a step or interleaving, so one
// (TP, CP, EP, ETP, micro-batch) works its layers out once for every
// depth, schedule and recomputation probe. Internal to the planner.

#include <cstddef>
#include <cstdint>
#include <unordered_map>

#include "estimator/memory_model.h"

namespace memgate {

// One (TP, CP, EP, ETP, micro-batch)'s figures: as the search gives the
// layout, with the cheap selective modules, with those and the MLP or MoE
// part (cheap_recompute.h FfnModulesFor), and
// under full recomputation (whatever the count recomputed).
struct KeptLayerFigures {
  LayoutLayerFigures as_given, cheap, ffn, full;
};

// KeptLayerFigures for one TP x CP at a time (the planner visits every
// pipeline depth of one before the next), by EP, ETP and micro-batch,
// cleared when TP or CP changes. At most kMaxEntries are kept (about
// 3 MB): past that the shelf starts again, so a request whose EP and
// micro-batch choices are many costs recomputed figures, never memory
// (the layouts a plan estimates, up to kMaxPlanLayouts, would otherwise
// bound it at a few hundred MB).
class LayerFigureShelf {
 public:
  static constexpr size_t kMaxEntries = 4096;

  // The figures of (t, c, ep, etp, b); a reference valid until the next
  // call (which may start the shelf again).
  KeptLayerFigures& For(uint32_t t, uint32_t c, uint32_t ep, uint32_t etp,
                        uint32_t b);

  size_t size() const { return kept_.size(); }

 private:
  uint32_t t_ = 0, c_ = 0;
  std::unordered_map<uint64_t, KeptLayerFigures> kept_;
};

}  // namespace memgate

#endif  // MEMGATE_PLANNER_LAYER_FIGURE_SHELF_H_
