#include "planner/plan_ranking.h"

#include <vector>

#include "gtest/gtest.h"

namespace memgate {
namespace {

// A GREEN layout of product t (c = p = 1), micro-batch b, at `speed`;
// `recompute` layers of a 4-layer stage recomputed (cost 1 + n / 12).
Layout4D Green(uint32_t t, uint32_t b, double speed, uint32_t recompute = 0) {
  Layout4D l{};
  l.t = t;
  l.c = l.p = l.d = 1;
  l.b = b;
  l.ep = l.etp = l.v = 1;
  l.recompute = recompute;
  l.recompute_cost = 1 + recompute / 12.0;
  l.speed = speed;
  l.zone = v1::ZONE_GREEN;
  return l;
}

std::vector<std::pair<uint32_t, double>> Order(std::vector<Layout4D> layouts,
                                               size_t keep) {
  std::vector<std::pair<uint32_t, double>> out;
  for (const Layout4D& l : RankLayouts(layouts, keep, Ranking::kRuleThenCost)) {
    out.emplace_back(l.t, l.speed);
  }
  return out;
}

// The rule orders the plain layouts; a competing recomputation goes before
// the first slower one of a larger product, never before its own product.
TEST(PlanRankingTest, CompetingRecomputationGoesBeforeTheFirstSlowerLarger) {
  const std::vector<Layout4D> layouts = {
      Green(2, 1, 0.9), Green(4, 1, 0.8), Green(4, 2, 0.7),
      Green(1, 1, 0.75, 2),   // competes: x 1.17
      Green(2, 2, 0.95, 2),   // its own product first (2, 1, 0.9)
      Green(1, 2, 0.99, 4)};  // all 4 layers (x 1.33): after every plain one
  EXPECT_EQ(Order(layouts, 6),
            (std::vector<std::pair<uint32_t, double>>{
                {2, 0.9}, {2, 0.95}, {4, 0.8}, {1, 0.75}, {4, 0.7},
                {1, 0.99}}));
}

// Many fast recomputations of a large product, which no plain layout is
// larger than, do not crowd out a slower one of a small product that goes
// early: each is placed before the list is cut.
TEST(PlanRankingTest, ASlowSmallRecomputationIsNotCutByFastLargeOnes) {
  std::vector<Layout4D> layouts = {Green(2, 1, 0.9), Green(4, 1, 0.8),
                                   Green(4, 2, 0.7), Green(1, 1, 0.75, 2)};
  for (uint32_t b = 1; b <= 20; ++b) layouts.push_back(Green(8, b, 0.99, 1));
  const auto order = Order(layouts, 4);
  ASSERT_EQ(order.size(), 4u);
  EXPECT_EQ(order[2], (std::pair<uint32_t, double>{1, 0.75}));
}

// A slower schedule of a layout already listed (its plain 1F1B beside its
// interleaving) is not a slower layout: a recomputation does not go before
// the faster layouts after it.
TEST(PlanRankingTest, ASlowerScheduleOfAListedLayoutIsNoSlowerLayout) {
  Layout4D interleaved = Green(4, 1, 0.9);
  interleaved.v = 2;
  const std::vector<Layout4D> layouts = {
      interleaved, Green(4, 1, 0.5),  // (4, 1): its plain schedule, slow
      Green(8, 1, 0.8),
      Green(2, 1, 0.7, 2)};  // competes: slower than (8, 1), faster than 0.5
  EXPECT_EQ(Order(layouts, 3),
            (std::vector<std::pair<uint32_t, double>>{
                {4, 0.9}, {8, 0.8}, {2, 0.7}}));
}

// A layout shows once, with its best schedule.
TEST(PlanRankingTest, ALayoutShowsOnceWithItsBestSchedule) {
  Layout4D interleaved = Green(2, 1, 0.95);
  interleaved.v = 2;
  Layout4D four = Green(2, 1, 0.94);
  four.v = 4;
  const std::vector<Layout4D> layouts = {Green(2, 1, 0.9), interleaved, four};
  std::vector<Layout4D> copy = layouts;
  const std::vector<Layout4D> ranked =
      RankLayouts(copy, 3, Ranking::kRuleThenCost);
  ASSERT_EQ(ranked.size(), 1u);
  EXPECT_EQ(ranked[0].v, 2u);
}

// The rule's group counts each whole x0.815 of expert exchange (the worst
// doubling of TP x CP x PP the paper measured) as one doubling: none for a
// dense layout or an exchange inside a node, two for one that costs
// x0.815^2 or a little more, and at most 32 however small the factor.
TEST(PlanRankingTest, ExpertExchangeCountsAsDoublingsOfTheRuleGroup) {
  Layout4D l = Green(2, 1, 0.9);
  l.p = 4;
  EXPECT_EQ(RuleGroupOf(l, Ranking::kRuleThenCost), 8u);
  l.exchange = 0.9;
  EXPECT_EQ(RuleGroupOf(l, Ranking::kRuleThenCost), 8u);
  l.exchange = kWorstMeasuredDoubling * kWorstMeasuredDoubling * 0.999;
  EXPECT_EQ(RuleGroupOf(l, Ranking::kRuleThenCost), 32u);
  l.exchange = 0.6;  // 2.5 doublings' worth: two whole ones
  EXPECT_EQ(RuleGroupOf(l, Ranking::kRuleThenCost), 32u);
  l.exchange = 1e-300;
  EXPECT_EQ(RuleGroupOf(l, Ranking::kRuleThenCost), uint64_t{8} << 32);
}

// An in-node layout of a larger product goes before a smaller one whose
// exchange crosses nodes at x0.4 (four doublings), even if the cost model
// finds them equal; among equal rule groups the cost model decides.
TEST(PlanRankingTest, AnExpensiveExchangeLosesTheRulesPrecedence) {
  Layout4D across = Green(1, 1, 0.8);
  across.exchange = 0.4;  // group 1 x 16
  Layout4D in_node = Green(8, 1, 0.7);
  in_node.exchange = 0.9;  // group 8
  Layout4D larger = Green(16, 1, 0.75);
  const std::vector<Layout4D> ranked = [&] {
    std::vector<Layout4D> layouts = {across, in_node, larger};
    return RankLayouts(layouts, 3, Ranking::kRuleThenCost);
  }();
  ASSERT_EQ(ranked.size(), 3u);
  EXPECT_EQ(ranked[0].t, 8u);
  EXPECT_EQ(ranked[1].t, 1u);   // group 16, faster than t 16
  EXPECT_EQ(ranked[2].t, 16u);
}

// Under kRuleThenCost the group counts the pipeline bubble's whole factors
// of x0.815 beyond the paper's largest (3/32) as doublings too, with the
// expert exchange's: none under a bubble of 34.2%, one at 40%, thirteen for
// a 16-stage pipeline with one micro-batch (1,500%: x1.094/16). A bubble
// under the paper's does not offset an exchange. The paper's rule alone
// keeps its product.
TEST(PlanRankingTest, ABubbleCountsAsDoublingsOfTheRuleGroup) {
  Layout4D l = Green(8, 1, 0.9);
  l.p = 16;
  l.bubble = 0.3;
  EXPECT_EQ(RuleGroupOf(l, Ranking::kRuleThenCost), 128u);
  l.bubble = 0.4;
  EXPECT_EQ(RuleGroupOf(l, Ranking::kRuleThenCost), 256u);
  l.bubble = 15;
  EXPECT_EQ(RuleGroupOf(l, Ranking::kRuleThenCost), uint64_t{128} << 13);
  EXPECT_EQ(RuleGroupOf(l, Ranking::kPaperRule), 128u);
  l.exchange = 0.6;  // x1.094/16 x 0.6: 15.6 doublings
  EXPECT_EQ(RuleGroupOf(l, Ranking::kRuleThenCost), uint64_t{128} << 15);
  EXPECT_EQ(RuleGroupOf(l, Ranking::kPaperRule), 512u);  // the exchange's
  l.bubble = 0;
  EXPECT_EQ(RuleGroupOf(l, Ranking::kRuleThenCost), 512u);
  l.bubble = 1e300;  // at most 32 however large
  EXPECT_EQ(RuleGroupOf(l, Ranking::kRuleThenCost), uint64_t{128} << 32);
  // kBubbleThatDoubles (34.2%) is where the first doubling starts.
  l.exchange = 1;
  l.bubble = kBubbleThatDoubles * 0.999;
  EXPECT_EQ(RuleGroupOf(l, Ranking::kRuleThenCost), 128u);
  l.bubble = kBubbleThatDoubles * 1.001;
  EXPECT_EQ(RuleGroupOf(l, Ranking::kRuleThenCost), 256u);
}

// A pipeline starved of micro-batches loses the rule's precedence: one
// micro-batch through 16 stages (TP 8, CP 2) goes after a layout of eight
// times its product whose interleaved pipeline is busy; the paper's rule
// alone, the baseline, still puts the smaller product first.
TEST(PlanRankingTest, AStarvedPipelineLosesTheRulesPrecedence) {
  Layout4D starved = Green(8, 1, 0.10);
  starved.c = 2;
  starved.p = 16;
  starved.bubble = 15;
  Layout4D busy = Green(8, 1, 0.95);
  busy.c = 16;
  busy.p = 16;
  busy.v = 4;
  busy.bubble = 0.234;
  std::vector<Layout4D> layouts = {starved, busy};
  std::vector<Layout4D> ranked =
      RankLayouts(layouts, 2, Ranking::kRuleThenCost);
  ASSERT_EQ(ranked.size(), 2u);
  EXPECT_EQ(ranked[0].c, 16u);
  EXPECT_EQ(ranked[1].c, 2u);
  layouts = {starved, busy};
  ranked = RankLayouts(layouts, 2, Ranking::kPaperRule);
  ASSERT_EQ(ranked.size(), 2u);
  EXPECT_EQ(ranked[0].c, 2u);
}

}  // namespace
}  // namespace memgate
