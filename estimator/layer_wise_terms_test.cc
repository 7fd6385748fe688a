// [LW] A stage's layer-wise buffers (layer_wise_terms.cc) on catalog
// models. The buffer sizes of the first two tests are Megatron's own for
// the same shapes (layer_wise_layout_test.cc names the reference runs):
// these check that memgate hands its packing the matrices Megatron
// registers, and the stage's bytes around them.

#include "estimator/layer_wise_terms.h"

#include <cmath>
#include <limits>
#include <string>

#include "estimator/catalog.h"
#include "gtest/gtest.h"

namespace memgate {
namespace {

ModelShape Catalog(const std::string& name) {
  return ShapeOf(*FindModel(name));
}

Layout LayerWise(double tensor, double pipeline, double data) {
  Layout l;
  l.tensor = tensor;
  l.pipeline = pipeline;
  l.data = data;
  l.optimizer = v1::OPTIMIZER_MUON;
  l.layer_wise_by_elements = true;
  return l;
}

// A middle stage of Llama-3.1-405B at TP 8, PP 16 (8 layers), DP 64: 32
// matrices over 64 ranks, every shard padded to FC1's 218,103,808
// elements: 13,958,643,712 on every rank, 4.4 times the matrices.
TEST(LayerWiseTermsTest, FewLargeMatricesPadEveryShardToTheLargest) {
  const ModelShape m = Catalog("llama-3.1-405b");
  const Layout l = LayerWise(8, 16, 64);
  LayerWiseStage stage;
  stage.chunks = {{7, 8}};
  const LayerWiseFigures f = LayerWiseFiguresOf(m, l, stage);
  EXPECT_DOUBLE_EQ(f.buffer_elements, 13958643712.0);
  EXPECT_DOUBLE_EQ(f.matrix_elements,
                   8 * (33554432.0 + 37748736 + 218103808 + 109051904));
  EXPECT_DOUBLE_EQ(f.owned_elements, 218103808.0);
  EXPECT_DOUBLE_EQ(f.expert_matrix_elements, 0);

  // In the stage's bytes: bf16 weights and fp32 gradients of the padded
  // buffer beside the rest; a rank's FC1 (fp32 master and momentum) and
  // its 1/64 of the norms' Adam states (12 B each).
  const StageFigures s = StageMemoryOf(m, l, 1, 8, 7);
  const double norms = 8 * 2 * 16384.0;
  EXPECT_DOUBLE_EQ(s.parameters, f.matrix_elements + norms);
  EXPECT_GE(s.padding_elements, f.buffer_elements - f.matrix_elements);
  EXPECT_DOUBLE_EQ(s.weight_bytes, 2 * (s.parameters + s.padding_elements));
  EXPECT_DOUBLE_EQ(s.gradient_bytes, 4 * (s.parameters + s.padding_elements));
  EXPECT_DOUBLE_EQ(s.optimizer_bytes, 8 * 218103808.0 + 12 * norms / 64);
}

// A memo answers as the packing does, once a stage: every input the
// packing reads is in its key (a layout differing in any of them, or a
// stage differing in its chunks or flags, is packed anew), and asking
// again adds nothing. Layouts alike in those but for the rest (micro-
// batch, recomputation, pipeline depth) share an entry.
TEST(LayerWiseTermsTest, AMemoAnswersAsThePackingDoes) {
  const ModelShape m = Catalog("llama-3.1-8b");
  const Layout l = LayerWise(2, 1, 8);
  LayerWiseMemo memo;  // one model's
  auto expect_same = [&](const ModelShape& shape, const Layout& layout,
                         const LayerWiseStage& stage) {
    const LayerWiseFigures want = LayerWiseFiguresOf(shape, layout, stage);
    const size_t before = memo.size();
    const LayerWiseFigures& got = memo.FiguresOf(shape, layout, stage);
    EXPECT_EQ(memo.size(), before + 1);
    EXPECT_DOUBLE_EQ(got.buffer_elements, want.buffer_elements);
    EXPECT_DOUBLE_EQ(got.owned_elements, want.owned_elements);
    EXPECT_DOUBLE_EQ(got.matrix_elements, want.matrix_elements);
    EXPECT_DOUBLE_EQ(got.expert_matrix_elements,
                     want.expert_matrix_elements);
    memo.FiguresOf(shape, layout, stage);
    EXPECT_EQ(memo.size(), before + 1);
  };
  LayerWiseStage stage;
  stage.chunks = {{0, 32}};
  stage.rank_parameters = 8e9;
  expect_same(m, l, stage);
  // Alike but for what the packing does not read: the same entry.
  Layout alike = l;
  alike.micro_batch = 4;
  alike.pipeline = 2;
  alike.recompute = RecomputeKind::kFullBlock;
  const size_t entries = memo.size();
  memo.FiguresOf(m, alike, stage);
  EXPECT_EQ(memo.size(), entries);
  // Each input the packing reads, changed: a new entry, as packed.
  for (int field = 0; field < 10; ++field) {
    Layout x = l;
    switch (field) {
      case 0: x.tensor = 4; break;
      case 1: x.context = 2; break;
      case 2: x.data = 16; break;
      case 3: x.expert_parallel = 2; break;
      case 4: x.expert_tensor = 2; break;
      case 5: x.ddp_bucket_size = 1e6; break;
      case 6: x.ddp_num_buckets = 3; break;
      case 7: x.pad_buckets_for_high_busbw = true; break;
      case 8: x.layer_wise_by_elements = false;
              x.layer_wise_by_cost = true; break;
      case 9: x.layer_wise_by_cost = true; break;
    }
    LayerWiseStage first = stage;
    first.first_rank = true;  // DDP's buckets read the bucket settings
    expect_same(m, x, first);
  }
  LayerWiseStage other = stage;
  other.chunks = {{0, 16}, {16, 16}};
  expect_same(m, l, other);
  other.mtp = true;
  expect_same(m, l, other);
  other.rank_parameters = 4e9;
  expect_same(m, l, other);
  // A plan's candidates that recompute moe_act run grouped GEMMs, which
  // list each layer's experts' FC1s before their FC2s: in the first
  // rank's buckets another buffer (Mixtral-8x7B's first of 4 stages, EP
  // 4 over DP 16), a memo entry of its own.
  ModelShape sequential = Catalog("mixtral-8x7b");
  ModelShape grouped = sequential;
  grouped.grouped_experts = true;
  Layout moe = LayerWise(1, 4, 16);
  moe.expert_parallel = 4;
  LayerWiseStage first_rank;
  first_rank.chunks = {{0, 8}};
  first_rank.first_rank = true;
  first_rank.rank_parameters = 3.3e9;
  expect_same(sequential, moe, first_rank);
  expect_same(grouped, moe, first_rank);
  EXPECT_NE(LayerWiseFiguresOf(grouped, moe, first_rank).buffer_elements,
            LayerWiseFiguresOf(sequential, moe, first_rank).buffer_elements);
}

// The plan's count of one buffer's packing, as layer_wise_terms.h states
// it: `m` matrices over `shards`, `listed` apart, of `shapes` distinct
// shapes, patterns of at most `pattern`; one bucket, then DDP's buckets.
struct CountedBuffer {
  double m, shards, listed, shapes, pattern;
  // Passes over the shards a run: 4 by elements, 8 by cost.
  double Placing(double runs, double widths, bool by_cost = false) const {
    const double used = std::min(m, shards);
    return m * (3 * std::log2(used + 1) + 2) +
           (by_cost ? 8 : 4) *
               std::min(std::min(runs, m) * used, shapes * widths);
  }
  double OneBucket(bool by_cost = false) const {
    return Placing(listed, m, by_cost) +
           kListingStepsPerMatrix * std::min(listed, m);
  }
  double Bucketed(bool by_cost = false) const {
    const double buckets = std::min(
        m, std::ceil(m / std::max(1.0, std::floor(0.9 * shards))) + 1);
    const double runs = listed + 2 * pattern * buckets;
    const double used = std::min(m, shards);
    return Placing(runs, buckets * used + m, by_cost) +
           kRelistingStepsPerMatrix * std::min(runs, m) +
           m * (kWalkingStepsPerMatrix +
                (by_cost ? 3 * std::log2(std::min(m, shards) + 1) : 0));
  }
};

// A plan's count of a layout (LayerWisePlanWorkOf): what validation
// bounds (a scan of the shards a matrix, bucketed and not), as
// LayerWisePackingWork; a rank's packing in one bucket, and what the
// first rank's bucketed chunk adds, growing with its layers up to the
// whole model's. Llama-3.1-8B at TP 2 over DP 8 (one packing): 32 layers
// of 4 matrices (4 shapes; with an MoE layer's router, MTP's eh_proj and a
// position embedding, 7 counted), every one listed (equal layers are
// listed once only where they are neighbours in a chunk); a rank of 8
// layers is 32 of them.
TEST(LayerWiseTermsTest, APlanCountsARanksListingAndPacking) {
  const ModelShape m = Catalog("llama-3.1-8b");
  const Layout l = LayerWise(2, 4, 8);
  const LayerWisePlanWork w = LayerWisePlanWorkOf(m, l, 8);
  EXPECT_DOUBLE_EQ(w.validated, LayerWisePackingWork(m, l));
  EXPECT_DOUBLE_EQ(w.validated, 2 * 128.0 * 8);
  const CountedBuffer rank = {32, 8, 32, 7, 5};
  EXPECT_DOUBLE_EQ(w.rank, rank.OneBucket());
  EXPECT_DOUBLE_EQ(w.first_rank, rank.Bucketed());
  const CountedBuffer whole = {128, 8, 128, 7, 5};
  EXPECT_DOUBLE_EQ(w.whole, whole.OneBucket() + whole.Bucketed());
  const LayerWisePlanWork all = LayerWisePlanWorkOf(m, l, 32);
  EXPECT_DOUBLE_EQ(all.rank + all.first_rank, w.whole);
  EXPECT_DOUBLE_EQ(LayerWisePlanWorkOf(m, l, 1000).rank, all.rank);
  EXPECT_LT(LayerWisePlanWorkOf(m, l, 4).rank, w.rank);
}

// An MoE layer's experts are listed as two blocks' patterns in one bucket
// (layer_wise_terms.cc ChunkOf), each matrix in the first rank's buckets.
// Qwen3-30B-A3B at TP 1, EP 1 over DP 8: 48 layers of 3 dense matrices
// (attention's two, the router) and 256 expert ones, every matrix placed
// over 8 ranks; a rank's layers are counted as the kind with more dense
// matrices (a dense layer's 4). The experts' 12,288 matrices are of two
// shapes, so their runs cost two passes over the shards a matrix at most,
// not a pass for each (validation's bound still charges that).
TEST(LayerWiseTermsTest, APlanListsExpertsAsBlocksButWalksEachInBuckets) {
  const ModelShape m = Catalog("qwen3-30b-a3b");
  Layout l = LayerWise(1, 1, 8);
  l.expert_parallel = 1;
  l.expert_tensor = 1;
  const LayerWisePlanWork w = LayerWisePlanWorkOf(m, l, 48);
  EXPECT_DOUBLE_EQ(w.validated, 2 * (144.0 * 8 + 12288.0 * 8));
  const CountedBuffer dense = {192, 8, 192, 7, 5};
  const CountedBuffer experts = {12288, 8, 96, 2, 2};
  EXPECT_DOUBLE_EQ(w.rank, dense.OneBucket() + experts.OneBucket());
  EXPECT_DOUBLE_EQ(w.first_rank, dense.Bucketed() + experts.Bucketed());
  EXPECT_DOUBLE_EQ(w.whole, w.rank + w.first_rank);
  // The experts in one bucket: 12,288 heap steps of 3 log2(9) + 2, 4
  // passes over the 8 shards for each of their 96 listed runs, and 96
  // listed.
  EXPECT_DOUBLE_EQ(w.rank - dense.OneBucket(),
                   12288 * (3 * std::log2(9.0) + 2) + 4 * 96 * 8 +
                       kListingStepsPerMatrix * 96);
}

// Under the packing by cost, two matrices of a pattern with one
// Newton-Schulz cost and different sizes are listed apart, repetition by
// repetition (layer_wise_layout.cc AppendBlock): the count then charges
// every such buffer's matrix a run of its own (a pass over the shards).
// A small multi-latent attention does it: linear_proj 8 x 1 (cost 8, 8
// elements) and linear_q_up_proj 2 x 2 (cost 8, 4 elements); 7 matrices
// a layer (5 of attention, FC1, FC2), 8 layers on the rank, DP 64.
TEST(LayerWiseTermsTest, OneCostTwoSizesCountsEachMatrixAsItsOwnRun) {
  ModelShape m = Catalog("llama-3.1-8b");
  m.layers = 8;
  m.hidden = 8;
  m.heads = 1;
  m.kv_heads = 1;
  m.ffn_hidden = 32;
  m.mla = true;
  m.q_lora = 2;
  m.qk_nope = 1;
  m.qk_rope = 1;
  m.v_head = 1;
  m.kv_lora = 2;
  Layout by_cost = LayerWise(1, 1, 64);
  by_cost.layer_wise_by_elements = false;
  by_cost.layer_wise_by_cost = true;
  const double apart = LayerWisePlanWorkOf(m, by_cost, 8).rank;
  const CountedBuffer each = {56, 64, 56,
                              std::numeric_limits<double>::infinity(), 8};
  EXPECT_DOUBLE_EQ(apart, each.OneBucket(/*by_cost=*/true));
  // The first rank's buckets walk each matrix through the estimate's heap.
  EXPECT_DOUBLE_EQ(LayerWisePlanWorkOf(m, by_cost, 8).first_rank,
                   each.Bucketed(/*by_cost=*/true));
  // 56 heap steps of 3 log2(57) + 2, 8 passes over the 56 shards used
  // for each of 56 runs, 56 listed.
  EXPECT_DOUBLE_EQ(apart, 56 * (3 * std::log2(57.0) + 2) + 8 * 56 * 56 +
                              kListingStepsPerMatrix * 56);
  // By elements the same matrices run together by shape: a pass over the
  // shards for each of its 9 shapes a matrix at most.
  Layout by_elements = LayerWise(1, 1, 64);
  EXPECT_LT(LayerWisePlanWorkOf(m, by_elements, 8).rank, apart);
}

// Llama-3.1-8B at TP 2 on one stage, DP 8: 128 matrices pack evenly in
// one bucket (436,207,616 elements a rank, no padding); in DDP's buckets
// of 4e7 (--overlap-grad-reduce, the first rank's first chunk) core
// 0.19's packing pads to 3,858,759,680 and loads one rank with
// 482,344,960. Both are possible without the flag: the larger counts.
TEST(LayerWiseTermsTest, TheFirstChunkCountsDdpsBucketsOrNone) {
  const ModelShape m = Catalog("llama-3.1-8b");
  const Layout l = LayerWise(2, 1, 8);
  LayerWiseStage stage;
  stage.chunks = {{0, 32}};
  EXPECT_DOUBLE_EQ(LayerWiseFiguresOf(m, l, stage).buffer_elements,
                   3489660928.0);
  stage.first_rank = true;
  const LayerWiseFigures f = LayerWiseFiguresOf(m, l, stage);
  EXPECT_DOUBLE_EQ(f.buffer_elements, 3858759680.0);
  EXPECT_DOUBLE_EQ(f.owned_elements, 482344960.0);
  Layout by_cost = l;
  by_cost.layer_wise_by_elements = false;
  by_cost.layer_wise_by_cost = true;
  EXPECT_DOUBLE_EQ(LayerWiseFiguresOf(m, by_cost, stage).buffer_elements,
                   3758096384.0);
  // Unknown release: both packings, the larger.
  Layout both = l;
  both.layer_wise_by_cost = true;
  EXPECT_DOUBLE_EQ(LayerWiseFiguresOf(m, both, stage).buffer_elements,
                   3858759680.0);
}

// The first rank's buckets meet the experts in the order their module
// registers them: a two-layer MoE (h 1024, four experts of FFN 512, DP 2,
// buckets of 1.5e6 elements, main's packing): TEGroupedMLP's (each FC1,
// then each FC2) packs the expert buffer into 12,582,912 elements, as one
// bucket does; SequentialMLP's (expert by expert) into 13,631,488, a rank
// holding 6,815,744. The dense buffer (proj, QKV, router a layer):
// 8,396,800, 4,198,400 a rank. (Megatron's own: lwmain.py 2 1500000
// "1024x1024*4 1024x512*4 1024x1024*4 1024x512*4", and the sequential
// order "1024x1024 1024x512" x 8; "1024x1024 3072x1024 4x1024" x 2.)
TEST(LayerWiseTermsTest, TheFirstRanksBucketsMeetTheExpertsInModuleOrder) {
  ModelShape m;
  m.layers = 2;
  m.hidden = 1024;
  m.heads = 8;
  m.kv_heads = 8;
  m.ffn_hidden = 4096;
  m.experts = 4;
  m.topk = 1;
  m.expert_ffn = 512;
  m.moe_prefix = {0, 1, 2};
  Layout l = LayerWise(1, 1, 2);
  l.layer_wise_by_elements = false;
  l.layer_wise_by_cost = true;
  l.ddp_bucket_size = 1500000;
  LayerWiseStage stage;
  stage.chunks = {{0, 2}};
  stage.first_rank = true;
  m.grouped_experts = true;
  LayerWiseFigures f = LayerWiseFiguresOf(m, l, stage);
  EXPECT_DOUBLE_EQ(f.buffer_elements, 8396800.0 + 12582912);
  EXPECT_DOUBLE_EQ(f.owned_elements, 4198400.0 + 6291456);
  m.grouped_experts = false;
  f = LayerWiseFiguresOf(m, l, stage);
  EXPECT_DOUBLE_EQ(f.buffer_elements, 8396800.0 + 13631488);
  EXPECT_DOUBLE_EQ(f.owned_elements, 4198400.0 + 6815744);
}

// A packing past its bound (validation refuses such a job first) counts as
// no memory there is, never as none: the estimate's peak is then not
// finite, which EstimateJob refuses.
TEST(LayerWiseTermsTest, APackingPastItsBoundIsNeverCountedAsNothing) {
  ModelShape m = Catalog("llama-3.1-8b");
  m.layers = 2000;  // 8,000 matrices over 16,384 ranks: 6.4e7 steps
  const Layout l = LayerWise(1, 1, 16384);
  LayerWiseStage stage;
  stage.chunks = {{0, 2000}};
  EXPECT_TRUE(std::isinf(LayerWiseFiguresOf(m, l, stage).buffer_elements));
}

// The matrices handed to the packing are the ones Muon trains without the
// distributed optimizer (memory_model.cc MatrixElementsOf, read back from
// a stage's Adam states: 4 B more a parameter that is not a matrix), on
// MLA, MoE with shared experts and MTP, and expert biases.
TEST(LayerWiseTermsTest, PacksTheMatricesMuonTrains) {
  for (const char* name : {"deepseek-v3", "qwen3-30b-a3b", "llama-3.1-8b",
                           "mixtral-8x7b", "gpt-oss-20b"}) {
    SCOPED_TRACE(name);
    ModelShape m = Catalog(name);
    Layout plain;
    plain.tensor = 2;
    plain.data = 4;
    plain.optimizer = v1::OPTIMIZER_MUON;
    plain.distributed_optimizer = false;
    if (m.experts > 0) plain.expert_parallel = 4;
    const uint32_t last = static_cast<uint32_t>(plain.pipeline) - 1;
    const StageFigures f = StageMemoryOf(m, plain, last, m.layers, 0);
    const double matrices =
        f.parameters - (f.optimizer_bytes - 8 * f.parameters) / 4;
    Layout lw = plain;
    lw.distributed_optimizer = true;
    lw.layer_wise_by_elements = true;
    LayerWiseStage stage;
    stage.chunks = {{0, m.layers}};
    stage.first_rank = true;
    stage.mtp = m.mtp_layers > 0;
    const LayerWiseFigures w = LayerWiseFiguresOf(m, lw, stage);
    EXPECT_NEAR(w.matrix_elements + w.expert_matrix_elements, matrices,
                1e-9 * matrices);
    EXPECT_EQ(w.expert_matrix_elements > 0, m.experts > 0);
  }
}

}  // namespace
}  // namespace memgate
