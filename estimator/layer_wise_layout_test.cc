// The expectations are Megatron-LM's own: each comes from running its
// _compute_per_buffer_param_layout (core_v0.19.0 for kByElements, d98e8a6
// for kByNewtonSchulzCost) on the same shapes with
//   git show core_v0.19.0:megatron/core/optimizer/layer_wise_optimizer.py
//     > lw19.py   (and HEAD:... > lwmain.py)
//   tests/tools/layer_wise_layout_reference.py lw19.py DP BUCKET SHAPES...
// (the command of each case is beside it).

#include "estimator/layer_wise_layout.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace memgate {
namespace {

using Matrices = std::vector<LayerWiseMatrix>;

// `count` decoder layers' matrices in Megatron's order (linear_proj is
// registered before linear_qkv: attention.py, then FC1 and FC2).
Matrices Layers(int count, const Matrices& layer) {
  Matrices out;
  for (int i = 0; i < count; ++i) {
    out.insert(out.end(), layer.begin(), layer.end());
  }
  return out;
}

// Llama-3.1-405B at TP 8 (proj, QKV, FC1, FC2), 8 layers: a PP 16 stage.
const Matrices k405BLayer = {
    {16384, 2048}, {2304, 16384}, {13312, 16384}, {16384, 6656}};
// Llama-3.1-8B at TP 2.
const Matrices k8BLayer = {
    {4096, 2048}, {3072, 4096}, {14336, 4096}, {4096, 7168}};
// Mixed sizes: the main packing's shard cap and cost order differ from
// the element order.
Matrices Mixed() {
  Matrices m;
  for (int i = 0; i < 5; ++i) m.push_back({1000, 64});
  for (int i = 0; i < 2; ++i) m.push_back({3000, 64});
  for (int i = 0; i < 7; ++i) m.push_back({50, 50});
  m.push_back({700, 33});
  m.push_back({9, 4000});
  return m;
}

struct Packed {
  LayerWiseBuffer buffer;
  std::vector<uint64_t> owned;
};

Packed Pack(const Matrices& forward, uint64_t dp, uint64_t bucket,
            LayerWisePacking packing) {
  LayerWisePackingOptions o;
  o.shards = dp;
  o.bucket_size = bucket;
  o.packing = packing;
  Packed p;
  p.owned.assign(dp, 0);
  absl::StatusOr<LayerWiseBuffer> b = PackLayerWiseBuffer(forward, o, p.owned);
  EXPECT_TRUE(b.ok()) << b.status();
  if (b.ok()) p.buffer = *b;
  return p;
}

constexpr LayerWisePacking kBoth[] = {LayerWisePacking::kByElements,
                                     LayerWisePacking::kByNewtonSchulzCost};

// lw19.py / lwmain.py 64 none (16384x2048 2304x16384 13312x16384
// 16384x6656) x 8: 13958643712, 1 bucket; 32 ranks own nothing, 8 own an
// FC1 each (218103808).
TEST(LayerWiseLayoutTest, FewMatricesOverManyRanksPadEveryShardToTheLargest) {
  for (LayerWisePacking packing : kBoth) {
    const Packed p = Pack(Layers(8, k405BLayer), 64, 0, packing);
    EXPECT_EQ(p.buffer.padded_elements, 13958643712u);
    EXPECT_EQ(p.buffer.buckets, 1u);
    int empty = 0, fc1 = 0;
    for (uint64_t owned : p.owned) {
      empty += owned == 0;
      fc1 += owned == 218103808u;
    }
    EXPECT_EQ(empty, 32);
    EXPECT_EQ(fc1, 8);
    // 4.4 x the stage's 3.19e9 parameters, on every rank.
    uint64_t total = 0;
    for (uint64_t owned : p.owned) total += owned;
    EXPECT_EQ(total, 8u * (33554432u + 37748736u + 218103808u + 109051904u));
  }
}

// lw19.py / lwmain.py 8 none (4096x2048 3072x4096 14336x4096 4096x7168)
// x 32: 3489660928, every rank 436207616 (no padding).
TEST(LayerWiseLayoutTest, ManyEqualLayersPackEvenly) {
  for (LayerWisePacking packing : kBoth) {
    const Packed p = Pack(Layers(32, k8BLayer), 8, 0, packing);
    EXPECT_EQ(p.buffer.padded_elements, 3489660928u);
    EXPECT_EQ(p.owned, std::vector<uint64_t>(8, 436207616u));
  }
}

// lw19.py 8 40000000 (the 8B layers) x 32: 3858759680 in 9 buckets;
// lwmain.py: 3758096384 in 8.
TEST(LayerWiseLayoutTest, BucketsCloseAsEachReleaseClosesThem) {
  const Packed by_elements =
      Pack(Layers(32, k8BLayer), 8, 40000000, LayerWisePacking::kByElements);
  EXPECT_EQ(by_elements.buffer.padded_elements, 3858759680u);
  EXPECT_EQ(by_elements.buffer.buckets, 9u);
  EXPECT_EQ(by_elements.owned,
            (std::vector<uint64_t>{482344960, 478150656, 469762048, 469762048,
                                   402653184, 402653184, 394264576,
                                   390070272}));
  const Packed by_cost = Pack(Layers(32, k8BLayer), 8, 40000000,
                              LayerWisePacking::kByNewtonSchulzCost);
  EXPECT_EQ(by_cost.buffer.padded_elements, 3758096384u);
  EXPECT_EQ(by_cost.buffer.buckets, 8u);
  EXPECT_EQ(by_cost.owned,
            (std::vector<uint64_t>{432013312, 432013312, 423624704, 423624704,
                                   436207616, 448790528, 440401920,
                                   452984832}));
}

// 3 none / 100000, 1000x64*5 3000x64*2 50x50*7 700x33 9x4000:
// lw19.py 783360 (261000 261000 258600), bucketed 960000 in 3 (320000
// 256000 204600); lwmain.py 807168 (256000 256000 268600) either way
// (2 buckets).
TEST(LayerWiseLayoutTest, MixedSizesFollowEachReleasesOrder) {
  const Packed e = Pack(Mixed(), 3, 0, LayerWisePacking::kByElements);
  EXPECT_EQ(e.buffer.padded_elements, 783360u);
  EXPECT_EQ(e.owned, (std::vector<uint64_t>{261000, 261000, 258600}));
  const Packed eb = Pack(Mixed(), 3, 100000, LayerWisePacking::kByElements);
  EXPECT_EQ(eb.buffer.padded_elements, 960000u);
  EXPECT_EQ(eb.buffer.buckets, 3u);
  EXPECT_EQ(eb.owned, (std::vector<uint64_t>{320000, 256000, 204600}));
  const Packed c = Pack(Mixed(), 3, 0, LayerWisePacking::kByNewtonSchulzCost);
  EXPECT_EQ(c.buffer.padded_elements, 807168u);
  EXPECT_EQ(c.owned, (std::vector<uint64_t>{256000, 256000, 268600}));
  const Packed cb =
      Pack(Mixed(), 3, 100000, LayerWisePacking::kByNewtonSchulzCost);
  EXPECT_EQ(cb.buffer.padded_elements, 807168u);
  EXPECT_EQ(cb.buffer.buckets, 2u);
}

TEST(LayerWiseLayoutTest, HighBusBandwidthPadsShardsToItsDivisor) {
  // One 100 x 100 matrix over 4 ranks: shards of lcm(64, lcm(4, 128,
  // 2^16) / 4) = 16384 elements, not 10048 (lcm(64, 32) = 64).
  LayerWisePackingOptions o;
  o.shards = 4;
  std::vector<uint64_t> owned(4, 0);
  EXPECT_EQ(PackLayerWiseBuffer({{100, 100}}, o, owned)->padded_elements,
            4u * 10048);
  o.pad_for_high_nccl_busbw = true;
  EXPECT_EQ(PackLayerWiseBuffer({{100, 100}}, o, owned)->padded_elements,
            4u * 16384);
  EXPECT_EQ(owned, (std::vector<uint64_t>{20000, 0, 0, 0}));
}

// Only the first min(matrices, ranks) shards are used, whatever the
// ranks: 32 matrices over 2^20 ranks touch 32 of them (the buffer still
// spans every rank's padded shard), and the work is bounded by matrices x
// shards used.
TEST(LayerWiseLayoutTest, WorkIsMatricesTimesTheShardsUsedAndBounded) {
  LayerWisePackingOptions o;
  o.shards = 1 << 20;
  for (LayerWisePacking packing : kBoth) {
    o.packing = packing;
    std::vector<uint64_t> owned;
    const absl::StatusOr<LayerWiseBuffer> b =
        PackLayerWiseBuffer(Layers(8, k405BLayer), o, owned);
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_EQ(b->padded_elements, (uint64_t{1} << 20) * 218103808);
    EXPECT_EQ(owned.size(), 32u);
  }
  std::vector<uint64_t> owned;
  const Matrices many(1449, {8, 8});  // 1449^2 > 2^21
  const absl::StatusOr<LayerWiseBuffer> b = PackLayerWiseBuffer(many, o, owned);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("matrix-rank steps"), std::string::npos);
  const Matrices fits(1448, {8, 8});
  EXPECT_TRUE(PackLayerWiseBuffer(fits, o, owned).ok());
  EXPECT_EQ(LayerWisePackingSteps(1448, 1 << 20), 1448.0 * 1448);
  EXPECT_EQ(LayerWisePackingSteps(1448, 8), 1448.0 * 8);
}

// _compute_per_buffer_param_layout one matrix at a time, as Megatron's
// loops run (a scan of every shard a matrix, Python's stable sort): what
// PackLayerWiseBuffer's placements of identical matrices in bulk must
// equal.
Packed OneAtATime(const Matrices& forward, const LayerWisePackingOptions& o) {
  using Cost = unsigned __int128;
  auto pad_to = [](uint64_t v, uint64_t d) { return (v + d - 1) / d * d; };
  auto pad_start = [&](uint64_t v) { return pad_to(v, 64); };
  auto numel = [](const LayerWiseMatrix& w) { return w.rows * w.cols; };
  auto cost = [](const LayerWiseMatrix& w) {
    const Cost big = std::max(w.rows, w.cols), small = std::min(w.rows, w.cols);
    return big * small * small;
  };
  auto first_smallest = [](const auto& v) {
    return size_t(std::min_element(v.begin(), v.end()) - v.begin());
  };
  uint64_t divisor = std::lcm(o.shards, uint64_t{128});
  if (o.pad_for_high_nccl_busbw) {
    divisor = std::lcm(divisor, uint64_t{1} << 16);
  }
  divisor = std::lcm(uint64_t{64}, divisor / o.shards);
  const bool by_cost = o.packing == LayerWisePacking::kByNewtonSchulzCost;
  Packed p;
  p.owned.assign(o.shards, 0);
  std::vector<Cost> cost_loads(o.shards, 0);
  auto emit = [&](Matrices chunk) {
    if (chunk.empty()) return;
    std::vector<uint64_t> cursors(o.shards, 0);
    std::stable_sort(chunk.begin(), chunk.end(), [&](auto& x, auto& y) {
      return by_cost ? cost(x) > cost(y) : numel(x) > numel(y);
    });
    uint64_t total = 0;
    for (const LayerWiseMatrix& w : chunk) total += numel(w);
    const double cap = double(total) / double(o.shards) * 1.3;
    for (const LayerWiseMatrix& w : chunk) {
      size_t shard = o.shards;
      for (size_t s = 0; by_cost && s < o.shards; ++s) {
        if (double(pad_start(cursors[s]) + numel(w)) <= cap &&
            (shard == o.shards || cost_loads[s] < cost_loads[shard])) {
          shard = s;
        }
      }
      if (shard == o.shards) shard = first_smallest(cursors);
      cursors[shard] = pad_start(cursors[shard]) + numel(w);
      p.owned[shard] += numel(w);
      cost_loads[shard] += cost(w);
    }
    p.buffer.padded_elements +=
        o.shards * pad_to(*std::max_element(cursors.begin(), cursors.end()),
                          divisor);
    ++p.buffer.buckets;
  };
  Matrices chunk;
  uint64_t chunk_numel = 0, chunk_max = 0;
  std::vector<uint64_t> loads(o.shards, 0);
  auto threshold = [&] {
    return std::max(o.bucket_size,
                    uint64_t(double(o.shards * chunk_max) * 0.9));
  };
  for (size_t i = forward.size(); i-- > 0;) {
    const uint64_t n = numel(forward[i]);
    if (by_cost) {
      if (o.bucket_size > 0 && !chunk.empty() && chunk_numel >= threshold()) {
        const uint64_t target =
            pad_to(*std::max_element(loads.begin(), loads.end()), divisor);
        const uint64_t least = *std::min_element(loads.begin(), loads.end());
        if (pad_start(least) + n > target) {
          emit(chunk);
          chunk.clear();
          chunk_numel = chunk_max = 0;
          std::fill(loads.begin(), loads.end(), 0);
        }
      }
      const size_t shard = first_smallest(loads);
      loads[shard] = pad_start(loads[shard]) + n;
    }
    chunk.push_back(forward[i]);
    chunk_numel += n;
    chunk_max = std::max(chunk_max, n);
    if (!by_cost && o.bucket_size > 0 && chunk_numel >= threshold()) {
      emit(chunk);
      chunk.clear();
      chunk_numel = chunk_max = 0;
    }
  }
  emit(chunk);
  return p;
}

// Blocks of a few shapes repeated (equal layers, an MoE layer's experts),
// whose identical matrices PackLayerWiseBlocks places together, in bulk
// where long runs make that cheaper: every buffer, bucket and shard as
// one matrix at a time has them, under both packings, with and without
// buckets, over few and many ranks; the blocks' matrices listed one by
// one (PackLayerWiseBuffer) too. Random shapes, a fixed seed.
TEST(LayerWiseLayoutTest, BlocksPackAsOneMatrixAtATime) {
  std::mt19937_64 random(20261129);
  auto pick = [&](uint64_t lo, uint64_t hi) {
    return std::uniform_int_distribution<uint64_t>(lo, hi)(random);
  };
  int long_runs = 0, patterns = 0;
  for (int trial = 0; trial < 400; ++trial) {
    Matrices shapes;
    for (uint64_t k = pick(1, 5); k > 0; --k) {
      // Multiples of 64 and not, as real shards are and fused ones are
      // not; now and then a shape and its transpose (one cost, one size).
      shapes.push_back({pick(1, 3000), pick(1, 3000)});
      if (pick(0, 5) == 0) {
        shapes.push_back({shapes.back().cols, shapes.back().rows});
      }
    }
    // Now and then two shapes of one Newton-Schulz cost and different
    // sizes (16 x 1 and 4 x 2: max x min^2 = 16), in a pattern of their
    // own too: repeated, a run each.
    const bool one_cost = pick(0, 3) == 0;
    if (one_cost) {
      shapes.push_back({16, 1});
      shapes.push_back({4, 2});
    }
    std::vector<LayerWiseBlock> blocks;
    Matrices forward;
    for (uint64_t count = pick(1, 6); count > 0; --count) {
      LayerWiseBlock block;
      for (uint64_t k = pick(0, 2) == 0 ? pick(2, 4) : 1; k > 0; --k) {
        block.pattern.push_back(shapes[pick(0, shapes.size() - 1)]);
      }
      if (one_cost && count == 1) block.pattern = {{16, 1}, {4, 2}};
      block.repeat = pick(0, 3) == 0 ? pick(1, 4) : pick(1, 600);
      long_runs += block.repeat >= 200;
      patterns += block.pattern.size() > 1;
      for (uint64_t r = 0; r < block.repeat; ++r) {
        forward.insert(forward.end(), block.pattern.begin(),
                       block.pattern.end());
      }
      blocks.push_back(block);
    }
    LayerWisePackingOptions o;
    o.shards = pick(0, 2) == 0 ? pick(1, 4) : pick(1, 300);
    o.pad_for_high_nccl_busbw = pick(0, 4) == 0;
    uint64_t total = 0;
    for (const LayerWiseMatrix& w : forward) total += w.rows * w.cols;
    o.bucket_size = pick(0, 1) == 0 ? 0 : pick(1, total);
    for (LayerWisePacking packing : kBoth) {
      o.packing = packing;
      const Packed want = OneAtATime(forward, o);
      for (bool as_blocks : {true, false}) {
        std::vector<uint64_t> owned(o.shards, 0);
        const absl::StatusOr<LayerWiseBuffer> got =
            as_blocks ? PackLayerWiseBlocks(blocks, o, owned)
                      : PackLayerWiseBuffer(forward, o, owned);
        ASSERT_TRUE(got.ok()) << got.status();
        ASSERT_EQ(got->padded_elements, want.buffer.padded_elements)
            << "trial " << trial << " blocks " << as_blocks;
        ASSERT_EQ(got->buckets, want.buffer.buckets) << "trial " << trial;
        ASSERT_EQ(owned, want.owned) << "trial " << trial;
      }
    }
  }
  // The bulk placements and the patterns were exercised.
  EXPECT_GT(long_runs, 100);
  EXPECT_GT(patterns, 100);
}

// Blocks are bounded by every matrix they repeat, before any is placed.
TEST(LayerWiseLayoutTest, BlocksAreBoundedByTheirMatrices) {
  LayerWisePackingOptions o;
  o.shards = 1 << 20;
  std::vector<uint64_t> owned;
  const LayerWiseBlock many = {{{8, 8}}, 1449};  // 1449^2 > 2^21
  const absl::StatusOr<LayerWiseBuffer> b =
      PackLayerWiseBlocks({&many, 1}, o, owned);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("1449 matrices"), std::string::npos)
      << b.status();
  const LayerWiseBlock huge = {{{8, 8}, {8, 8}}, uint64_t{1} << 63};
  EXPECT_FALSE(PackLayerWiseBlocks({&huge, 1}, o, owned).ok());
  const LayerWiseBlock fits = {{{8, 8}}, 1448};
  EXPECT_TRUE(PackLayerWiseBlocks({&fits, 1}, o, owned).ok());
  EXPECT_EQ(owned.size(), 1448u);  // untouched by the refusal
}

TEST(LayerWiseLayoutTest, RefusesEmptyMatricesAndNoShards) {
  LayerWisePackingOptions o;
  o.shards = 2;
  std::vector<uint64_t> owned;
  EXPECT_FALSE(PackLayerWiseBuffer({{0, 5}}, o, owned).ok());
  EXPECT_FALSE(PackLayerWiseBuffer({{uint64_t{1} << 32, 5}}, o, owned).ok());
  EXPECT_TRUE(PackLayerWiseBuffer({}, o, owned).ok());
  EXPECT_TRUE(owned.empty());
  o.shards = 0;
  EXPECT_FALSE(PackLayerWiseBuffer({{4, 5}}, o, owned).ok());
}

}  // namespace
}  // namespace memgate
