#include "planner/layer_figure_shelf.h"

namespace memgate {

KeptLayerFigures& LayerFigureShelf::For(uint32_t t, uint32_t c, uint32_t ep,
                                        uint32_t etp, uint32_t b) {
  // EP divides E (under 2^32), ETP is 1 or TP, b at most kMaxPlanMicroBatch
  // (under 2^16): the key is one of a kind.
  const uint64_t key = (uint64_t{ep} << 32) | (uint64_t{etp != 1} << 16) | b;
  if (t != t_ || c != c_ ||
      (kept_.size() >= kMaxEntries && kept_.count(key) == 0)) {
    kept_.clear();
    t_ = t;
    c_ = c;
  }
  return kept_[key];
}

}  // namespace memgate
