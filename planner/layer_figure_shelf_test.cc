#include "planner/layer_figure_shelf.h"

#include "gtest/gtest.h"

namespace memgate {
namespace {

// One entry per (EP, ETP, micro-batch) of a TP x CP, the same one when
// asked again; a new TP or CP starts the shelf again.
TEST(LayerFigureShelfTest, KeepsOneEntryPerLayerKeyOfATpAndCp) {
  LayerFigureShelf shelf;
  KeptLayerFigures& a = shelf.For(8, 1, 4, 1, 2);
  a.as_given.routed.dispatch_known = true;
  EXPECT_TRUE(shelf.For(8, 1, 4, 1, 2).as_given.routed.dispatch_known);
  EXPECT_FALSE(shelf.For(8, 1, 4, 8, 2).as_given.routed.dispatch_known);
  EXPECT_FALSE(shelf.For(8, 1, 8, 1, 2).as_given.routed.dispatch_known);
  EXPECT_FALSE(shelf.For(8, 1, 4, 1, 1).as_given.routed.dispatch_known);
  EXPECT_EQ(shelf.size(), 4u);
  EXPECT_FALSE(shelf.For(8, 2, 4, 1, 2).as_given.routed.dispatch_known);
  EXPECT_EQ(shelf.size(), 1u);
}

// A request with more EP and micro-batch choices than the bound keeps at
// most kMaxEntries, whatever it asks: memory bounded by the shelf, not by
// the plan's layouts.
TEST(LayerFigureShelfTest, NeverKeepsMoreThanItsBound) {
  LayerFigureShelf shelf;
  for (uint32_t ep = 1; ep <= 64; ++ep) {
    for (uint32_t b = 1; b <= 1024; ++b) {
      shelf.For(8, 1, ep, 1, b);
      ASSERT_LE(shelf.size(), LayerFigureShelf::kMaxEntries);
    }
  }
  EXPECT_GT(shelf.size(), 0u);
}

}  // namespace
}  // namespace memgate
