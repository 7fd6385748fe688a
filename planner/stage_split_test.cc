#include "planner/stage_split.h"

#include <algorithm>
#include <limits>
#include <random>
#include <tuple>

#include "gtest/gtest.h"

namespace memgate {
namespace {

// A split's (first, middle, last) layers, to compare at once.
std::tuple<uint32_t, uint32_t, uint32_t> Stages(const StageSplit& s) {
  return {s.first, s.middle, s.last};
}

// The pace of the slowest stage, in layers: the last stage also runs the
// LM head (`head` layers' worth), the first and the middle ones their
// layers (cost_model.h (4)).
double Slowest(const StageSplit& s, double head) {
  return std::max({double(s.first), double(s.middle), s.last + head});
}

// gpt-oss-120b's 36 layers over 4 stages: its 201,088-token head is 4.6
// layers' worth. Two layers off the last stage each way (j = 2): 9, 11,
// 11, 5, whose slowest is a middle stage's 11 where the even split's last
// stage ran 13.6.
TEST(StageSplitTest, TheHeadBalancedSplitMovesLayersOffTheLastStage) {
  const StageSplit s = HeadBalancedSplit(36, 4, 4.6);
  ASSERT_TRUE(s.ok);
  EXPECT_EQ(Stages(s), std::make_tuple(9u, 11u, 5u));
  EXPECT_DOUBLE_EQ(Slowest(s, 4.6), 11);
  // Qwen3-30B-A3B's 48 over 4 (a head of 4.5 layers): 12, 14, 14, 8.
  const StageSplit q = HeadBalancedSplit(48, 4, 4.5);
  ASSERT_TRUE(q.ok);
  EXPECT_EQ(Stages(q), std::make_tuple(12u, 14u, 8u));
}

// None where it would not be faster (Llama-3.1-405B's head is 0.7 of a
// layer: moving one off the last stage of 42 makes a middle one 43), for
// fewer than three stages, an uneven division (SplitLayers' own), or no
// head; and never a last stage of no layers.
TEST(StageSplitTest, NoHeadBalancedSplitWhereItCannotHelp) {
  EXPECT_FALSE(HeadBalancedSplit(126, 3, 0.66).ok);
  EXPECT_FALSE(HeadBalancedSplit(126, 2, 0.66).ok);
  EXPECT_FALSE(HeadBalancedSplit(32, 1, 4).ok);
  EXPECT_FALSE(HeadBalancedSplit(2, 2, 4).ok);  // one layer each
  EXPECT_FALSE(HeadBalancedSplit(30, 4, 4).ok);
  EXPECT_FALSE(HeadBalancedSplit(32, 4, 0).ok);
  EXPECT_FALSE(HeadBalancedSplit(32, 4,
                                 std::numeric_limits<double>::quiet_NaN())
                   .ok);
  // Two layers a stage over 4: the last can give up none (one each way
  // would leave it none).
  EXPECT_FALSE(HeadBalancedSplit(8, 4, 100).ok);
  // A head as large as the model: the last keeps one layer.
  const StageSplit s = HeadBalancedSplit(12, 3, 50);
  ASSERT_TRUE(s.ok);
  EXPECT_EQ(s.last, 1u);
  EXPECT_EQ(s.middle, 7u);
}

// Two stages: the first takes the layers, standing for the middle one as
// SplitLayers' two stages do. Qwen3-30B-A3B's 48 (a head of 4.5): 26 and
// 22, the last stage's 26.5 against the even split's 28.5; a huge head
// leaves the last stage one layer.
TEST(StageSplitTest, TwoStagesBalanceOntoTheFirst) {
  const StageSplit s = HeadBalancedSplit(48, 2, 4.5);
  ASSERT_TRUE(s.ok);
  EXPECT_EQ(Stages(s), std::make_tuple(26u, 26u, 22u));
  const StageSplit huge = HeadBalancedSplit(10, 2, 1000);
  ASSERT_TRUE(huge.ok);
  EXPECT_EQ(huge.first, 9u);
  EXPECT_EQ(huge.last, 1u);
  for (uint32_t half = 1; half <= 40; ++half) {
    for (double head = 0; head < 30; head += 0.25) {
      const StageSplit t = HeadBalancedSplit(2 * half, 2, head);
      double best = half + head;
      for (uint32_t x = 1; x < half; ++x) {
        best = std::min(best, std::max(double(half + x), half - x + head));
      }
      if (!t.ok) {
        EXPECT_DOUBLE_EQ(best, half + head) << half << " " << head;
        continue;
      }
      EXPECT_EQ(t.first + t.last, 2 * half);
      EXPECT_GE(t.last, 1u);
      EXPECT_EQ(t.middle, t.first);
      EXPECT_DOUBLE_EQ(std::max(double(t.first), t.last + head), best)
          << half << " " << head;
    }
  }
}

// A step back toward even: j - 1 (x - 1 of two stages), none where that
// is the even split. gpt-oss-120b over 4: 9, 11, 11, 5 -> 9, 10, 10, 7.
TEST(StageSplitTest, AStepTowardEven) {
  const StageSplit s = TowardEven(HeadBalancedSplit(36, 4, 4.6), 36, 4);
  ASSERT_TRUE(s.ok);
  EXPECT_EQ(Stages(s), std::make_tuple(9u, 10u, 7u));
  const StageSplit two = TowardEven(HeadBalancedSplit(48, 2, 4.5), 48, 2);
  ASSERT_TRUE(two.ok);  // 26, 22 -> 25, 23
  EXPECT_EQ(Stages(two), std::make_tuple(25u, 25u, 23u));
  // One layer moved: the step back is even.
  EXPECT_FALSE(TowardEven(HeadBalancedSplit(80, 4, 1.2), 80, 4).ok);
  EXPECT_FALSE(TowardEven(StageSplit{}, 36, 4).ok);
  // Every step back adds up, keeps the first's share (three stages or
  // more), and is slower than the split it steps from but faster than
  // even.
  for (uint32_t p = 2; p <= 8; ++p) {
    for (uint32_t share = 2; share <= 20; ++share) {
      for (double head = 0.5; head < 20; head += 0.5) {
        const uint32_t layers = p * share;
        const StageSplit from = HeadBalancedSplit(layers, p, head);
        const StageSplit back = TowardEven(from, layers, p);
        if (!back.ok) continue;
        EXPECT_EQ(back.first + back.middle * (p > 2 ? p - 2 : 0) + back.last,
                  layers);
        if (p > 2) {
          EXPECT_EQ(back.first, share);
        }
        EXPECT_GE(back.last, 1u);
        auto slowest = [&](const StageSplit& x) {
          return std::max({double(x.first), double(x.middle),
                           x.last + head});
        };
        EXPECT_GE(slowest(back), slowest(from));
        EXPECT_LT(slowest(back), share + head);
      }
    }
  }
}

// Against every split of the form (first L/p, middle L/p + j, last
// L/p - j (p - 2)) Megatron's first/last counts give: the layers add up,
// the first keeps its even share, the last keeps a layer, and no j is
// faster; where none is returned, no j beats the even split.
TEST(StageSplitTest, TheHeadBalancedSplitIsTheFastestOfItsForm) {
  std::mt19937 random(20261129);
  for (int trial = 0; trial < 2000; ++trial) {
    const uint32_t p = 3 + random() % 14;
    const uint32_t share = 1 + random() % 20;
    const uint32_t layers = p * share;
    const double head = (random() % 2000) / 100.0;
    const StageSplit s = HeadBalancedSplit(layers, p, head);
    double best = share + head;  // the even split's last stage
    for (uint32_t j = 1; share > j * (p - 2); ++j) {
      best = std::min(best, std::max(double(share + j),
                                     double(share - j * (p - 2)) + head));
    }
    if (!s.ok) {
      EXPECT_DOUBLE_EQ(best, share + head) << layers << " " << p << " " << head;
      continue;
    }
    EXPECT_EQ(s.first, share);
    EXPECT_GE(s.last, 1u);
    EXPECT_EQ(s.first + s.middle * (p - 2) + s.last, layers);
    EXPECT_LT(Slowest(s, head), share + head);
    EXPECT_DOUBLE_EQ(Slowest(s, head), best)
        << layers << " " << p << " " << head;
  }
}

// Megatron's accounted split (--account-for-embedding/loss-in-pipeline-
// split) interleaves down to one layer a chunk: rank 0's first chunk then
// holds the embedding alone and the last rank's last the loss alone
// (transformer_block.py get_num_layers_to_build asserts only that none is
// negative; pipeline_parallel_layout.md: "Empty stages are allowed"), as
// in Llama 3's own 16-stage schedule (Llama 3 paper, section 3.3.2: "the
// first model chunk on the first stage has only the embedding").
TEST(StageSplitTest, TheAccountedSplitInterleavesDownToOneLayerAChunk) {
  StageSplit split;
  split.ok = true;
  split.first = 7;
  split.middle = 8;
  split.last = 7;  // Llama-3.1-405B's 126 layers over 16 stages
  for (uint32_t v : {2u, 4u, 8u}) {
    EXPECT_EQ(ChunkFormOf(split, 16, v), ChunkForm::kAccounted) << v;
    EXPECT_EQ(ChunkLayers(ChunkForm::kAccounted, split, 16, v, 0, 0),
              8 / v - 1);
    EXPECT_EQ(ChunkLayers(ChunkForm::kAccounted, split, 16, v, 15, v - 1),
              8 / v - 1);
    EXPECT_EQ(ChunkLayers(ChunkForm::kAccounted, split, 16, v, 1, 0), 8 / v);
  }
  EXPECT_EQ(ChunkFormOf(split, 16, 3), ChunkForm::kNone);
  EXPECT_EQ(ChunkFormOf(split, 16, 16), ChunkForm::kNone);
}

}  // namespace
}  // namespace memgate
