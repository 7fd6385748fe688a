// The cost model's mixture-of-experts terms, and their validation on
// measurements it was not fitted to; the GPUs' datasheet ratios.

#include "planner/cost_model.h"

#include <cstdio>
#include <string>
#include <vector>

#include "estimator/catalog.h"
#include "gtest/gtest.h"
#include "planner/gpu_datasheets.h"

namespace memgate {
namespace {

ModelShape CatalogShape(const char* name) {
  const v1::ModelConfig* model = LookupModel(name);
  EXPECT_NE(model, nullptr) << name;
  return model == nullptr ? ModelShape() : ShapeOf(*model);
}

Layout LayoutOf(double t, double p, double ep, double v, double seq) {
  Layout l;
  l.tensor = t;
  l.pipeline = p;
  l.expert_parallel = ep;
  l.expert_tensor = 1;
  l.virtual_stages = v;
  l.seq_length = seq;
  return l;
}

// Routed experts' GEMMs run on the tokens routed to each local expert:
// s*b/t x k x EP / E rows. Qwen3-235B (E 128, k 8) at TP 2, 4k tokens:
// EP 32 gives 4,096 rows an expert, EP 8 1,024. A dense model's GEMM
// efficiency does not depend on EP.
TEST(CostModelTest, ExpertGemmsGrowWithExpertParallelism) {
  const ModelShape qwen = CatalogShape("qwen3-235b-a22b");
  const double ep32 = SpeedOf(qwen, LayoutOf(2, 1, 32, 1, 4096), 64, 8).gemm;
  const double ep8 = SpeedOf(qwen, LayoutOf(2, 1, 8, 1, 4096), 64, 8).gemm;
  EXPECT_GT(ep32, ep8 * 1.2);
  const ModelShape llama = CatalogShape("llama-3.1-70b");
  EXPECT_DOUBLE_EQ(SpeedOf(llama, LayoutOf(2, 1, 32, 1, 4096), 64, 8).gemm,
                   SpeedOf(llama, LayoutOf(2, 1, 1, 1, 4096), 64, 8).gemm);
}

// The LM head's share of the last stage counts an MoE layer's active
// weights (k experts of 1,536), not the dense FFN width in the config
// (12,288): Qwen3-235B's head (2hv) is ~2.4 of its layers. Over an even
// split of 96 layers on 8 stages that is (12 + 2.4/8) / (12 + 2.4).
TEST(CostModelTest, StageImbalanceCountsTheActiveExperts) {
  ModelShape qwen = CatalogShape("qwen3-235b-a22b");
  const double h = 4096, s = 4096;
  const double attention = h * (64 * 128 + 2 * 4 * 128) + 64 * 128 * h;
  const double weights = attention + h * 128 + 8 * 3 * h * 1536;
  const double head = 2 * h * 151936 / (2 * weights + 2 * s * 64 * 128);
  EXPECT_NEAR(head, 2.4, 0.1);
  qwen.layers = 96;
  qwen.moe_prefix.resize(97);
  for (size_t i = 0; i < qwen.moe_prefix.size(); ++i) qwen.moe_prefix[i] = i;
  EXPECT_DOUBLE_EQ(SpeedOf(qwen, LayoutOf(2, 8, 32, 1, s), 128, 8).imbalance,
                   (12 + head / 8) / (12 + head));
}

// Uneven first and last stages even out the head: 126 layers over 16
// stages as 7 | 14 x 8 | 7 run at the pace of the middle stages (8
// layers) unless the last (7 + head) is slower.
TEST(CostModelTest, UnevenStagesEvenOutTheHead) {
  const ModelShape llama = CatalogShape("llama-3.1-405b");
  const Layout l = LayoutOf(8, 16, 1, 1, 8192);
  const double even = SpeedOf(llama, l, 128, 8).imbalance;
  const double uneven =
      SpeedOf(llama, l, 128, 8, CostModel{}, StageLayers{7, 7}).imbalance;
  // The head in layers, from the even split: (x + H/16) / (x + H).
  const double x = 126.0 / 16;
  const double head = x * (1 - even) / (even - 1.0 / 16);
  EXPECT_GT(head, 0.3);
  EXPECT_LT(head, 1.0);  // so the middle stages (8 layers) are the slowest
  EXPECT_NEAR(uneven, (x + head / 16) / 8, 1e-12);
  EXPECT_GT(uneven, even);
}

// Interleaving's extra sends (cost_model.h (5)): plain 1F1B pays none;
// v chunks pay 2(v - 1) sends of s*b/c x h/t bf16 elements against 3 x L/p
// layers of FLOPs at the modelled efficiency, over the network when the
// pipeline neighbours (t*c*d ranks apart) are in other nodes, over NVLink
// (~9x cheaper) when they share one.
TEST(CostModelTest, InterleavingPaysForItsExtraSends) {
  const ModelShape llama = CatalogShape("llama-3.1-405b");
  Layout l = LayoutOf(8, 9, 1, 1, 8192);
  l.context = 2;
  l.data = 4;  // t*c*d = 64: neighbours on other 8-GPU nodes
  EXPECT_EQ(SpeedOf(llama, l, 63, 8).p2p, 1);
  l.virtual_stages = 7;
  const SpeedFactors f = SpeedOf(llama, l, 63, 8);
  // By hand: a layer's forward FLOPs a token, 2 per weight plus 2 s a d.
  const double h = 16384, q = 128 * 128, kv = 2 * 8 * 128;
  const double weights = h * (q + kv) + q * h + 3 * h * 53248;
  const double layer_flops = 2 * weights + 2 * 8192 * q;
  const double share = 2 * 6 * 2 * h * 2e4 * f.gemm * f.tensor * f.context /
                       (3 * (126.0 / 9) * layer_flops);
  EXPECT_NEAR(f.p2p, 1 / (1 + share), 1e-12);
  EXPECT_GT(share, 0.01);  // 2-layer chunks: ~2% of the compute
  EXPECT_LT(share, 0.03);
  // The same pipeline inside one (128-GPU) node: NVLink.
  const double in_node = SpeedOf(llama, l, 63, 128).p2p;
  EXPECT_NEAR(1 / in_node - 1, share * 2.2e3 / 2e4, 1e-12);
}

// The depth of interleaving the cost model prefers (bubble / v against
// v - 1 extra sends) against what NVIDIA's published H100 recipes run,
// none of which was fitted to:
//  - Llama-3.1-405B, TP 8 CP 2 PP 9 VP 7 on 576 GPUs, global batch 252
//    (NVIDIA/dgxc-benchmarking llama3.1/README_405b.md, NeMo launcher
//    llama3_1_405b.yaml): 14 layers a stage, v in {2, 7, 14};
//  - Llama-3.1-405B, TP 8 CP 2 PP 8 VP 8 on 512 GPUs, global batch 288,
//    embedding and loss in the split (MLPerf Training v5.0, NVIDIA
//    llama31_405b config_DGXH100_64x8x288xtp8pp8cp2.sh): v in {2, 4, 8};
//  - Llama-3-70B, TP 4 CP 2 PP 4 VP 5 on 64 GPUs, global batch 128 and 256
//    (Megatron-Bridge LLAMA3_70B_PRETRAIN_CONFIG_H100_BF16_V2/V1): 20
//    layers a stage, v in {2, 4, 5, 10, 20}.
// The model is flat near its optimum (70B at global batch 256: v 2, 4 and
// 5 within 0.25%), so the published depth must be within 0.3% of the
// model's best, and where the recipe stops short of the deepest (1-layer
// chunks, the least memory), so must the model: without the send price
// the deepest always won. (Megatron's accounted split of 405B over 8
// stages allows at most 8 chunks: 2 layers, the first and last 1.)
TEST(CostModelTest, PrefersThePublishedInterleavingDepths) {
  struct Recipe {
    const char* model;
    double t, c, p, d, gbs, first, last;
    std::vector<double> depths;  // increasing
    double published;
  };
  const Recipe recipes[] = {
      {"llama-3.1-405b", 8, 2, 9, 4, 252, 0, 0, {2, 7, 14}, 7},
      {"llama-3.1-405b", 8, 2, 8, 4, 288, 15, 15, {2, 4, 8}, 8},
      {"llama-3-70b", 4, 2, 4, 2, 128, 0, 0, {2, 4, 5, 10, 20}, 5},
      {"llama-3-70b", 4, 2, 4, 2, 256, 0, 0, {2, 4, 5, 10, 20}, 5},
  };
  for (const Recipe& r : recipes) {
    const ModelShape shape = CatalogShape(r.model);
    double best_v = 0, best = 0, published = 0;
    for (double v : r.depths) {
      Layout l = LayoutOf(r.t, r.p, 1, v, 8192);
      l.context = r.c;
      l.data = r.d;
      const double speed = SpeedOf(shape, l, r.gbs / r.d, 8, CostModel{},
                                   StageLayers{r.first, r.last})
                               .speed();
      std::printf("%s (%g, %g, %g) gbs %g: v %g speed %.4f\n", r.model, r.t,
                  r.c, r.p, r.gbs, v, speed);
      if (speed > best) {
        best = speed;
        best_v = v;
      }
      if (v == r.published) published = speed;
    }
    EXPECT_GE(published, 0.997 * best)
        << r.model << " PP " << r.p << ": the model prefers v " << best_v;
    if (r.published < r.depths.back()) {
      EXPECT_LT(best_v, r.depths.back()) << r.model << " PP " << r.p;
    }
  }
}

// Validation on data the model never saw: NVIDIA's Megatron MoE model zoo
// measured Qwen3-235B-A22B on 256 H100s (seq 4096, gbs 2048, MBS 1, bf16,
// embedding and loss accounted in the split; best_practice/Qwen3/readme.md
// of github.com/yanring/Megatron-MoE-ModelZoo):
//   TP 2, EP 32, PP 8, VPP 4 (DeepEP)      245 TFLOP/s a GPU
//   TP 2, EP 8,  PP 32, VPP 3 (all-to-all)  200
//   TP 4, EP 8,  PP 8, VPP 4 (DeepEP)      167
// The cost model's constants were set on the paper's dense Llama-3.1-8B
// table and datasheet bandwidths; nothing here was fitted. Each row is
// priced with its own dispatcher: the first exchanges tokens over 4 nodes,
// the others inside one. The run whose experts span nodes must still come
// first: an exchange price that ignored DeepEP's one copy a node (session
// 8's all-to-all reckoning, x0.34) would have put it last. Ratios to the
// first, measured / modelled: 0.82 / 0.80 and 0.68 / 0.84 (0.53 and 0.51
// before the exchange was priced). Known miss, printed and not asserted:
// the two in-node rows (200 vs 167) are ordered 5% the wrong way, since the
// model's in-node TP price is one overhead for any t > 1 and TP 4's extra
// traffic over TP 2 is unpriced; before the exchange term they were
// ordered right by 1.6%. The paper's rule alone (smallest TP x CP x PP
// first: 16, 32, 64) also gets that pair wrong.
TEST(CostModelTest, OrdersTheMeasuredQwen3LayoutsOfTheModelZoo) {
  const ModelShape qwen = CatalogShape("qwen3-235b-a22b");
  struct Run {
    double t, ep, p, v, first, last;
    bool deepep;
    double tflops;
  };
  // 94 layers + 2 accounted units: PP 8 gives 11 | 12 x 6 | 11 layers,
  // PP 32 gives 2 | 3 x 30 | 2.
  const Run runs[] = {{2, 32, 8, 4, 11, 11, true, 245},
                      {2, 8, 32, 3, 2, 2, false, 200},
                      {4, 8, 8, 4, 11, 11, true, 167}};
  double speed[3];
  for (int i = 0; i < 3; ++i) {
    const Run& r = runs[i];
    const double dp = 256 / (r.t * r.p);
    Layout l = LayoutOf(r.t, r.p, r.ep, r.v, 4096);
    l.data = dp;
    l.deepep_dispatcher = r.deepep;
    const SpeedFactors f = SpeedOf(qwen, l, 2048 / dp, 8, CostModel{},
                                   StageLayers{r.first, r.last});
    speed[i] = f.speed();
    std::printf("TP %g EP %g PP %g VPP %g: measured %g TFLOP/s, cost model "
                "%.3f (%.2f of the first; EP exchange x%.2f), rule product "
                "%g\n",
                r.t, r.ep, r.p, r.v, r.tflops, speed[i], speed[i] / speed[0],
                f.expert, r.t * r.p);
  }
  EXPECT_GT(speed[0], speed[1]);
  EXPECT_GT(speed[0], speed[2]);
}

// (6) The expert exchange, by dispatcher and reach (Qwen3-235B, k 8 of
// 128 experts, TP 2, 4k tokens, 8 GPUs a node). Inside a node it costs
// little; across nodes the all-to-all's k copies cost more than DeepEP's
// one copy a node; all-gather (Megatron's default dispatcher) sends every
// token of the group to every rank and costs the most. EP 1 exchanges
// nothing, and a dense model has no such factor.
TEST(CostModelTest, ExpertExchangeGrowsWithItsReach) {
  const ModelShape qwen = CatalogShape("qwen3-235b-a22b");
  auto exchange = [&](double ep, bool deepep, bool allgather) {
    Layout l = LayoutOf(2, 1, ep, 1, 4096);
    l.deepep_dispatcher = deepep;
    l.allgather_dispatcher = allgather;
    return SpeedOf(qwen, l, 64, 8).expert;
  };
  EXPECT_EQ(exchange(1, false, false), 1);
  const double in_node = exchange(8, false, false);
  const double across = exchange(32, false, false);
  const double deepep_across = exchange(32, true, false);
  const double allgather_across = exchange(32, false, true);
  std::printf("EP exchange: all-to-all EP 8 x%.3f, EP 32 x%.3f; DeepEP EP 32 "
              "x%.3f; all-gather EP 32 x%.3f\n",
              in_node, across, deepep_across, allgather_across);
  EXPECT_LT(in_node, 1);
  EXPECT_GT(in_node, 0.8);  // NVLink: a small price
  EXPECT_LT(across, in_node);
  EXPECT_GT(deepep_across, across);
  EXPECT_LT(allgather_across, across);
  // Unknown node size: every copy crosses the network.
  Layout l = LayoutOf(2, 1, 8, 1, 4096);
  EXPECT_LT(SpeedOf(qwen, l, 64, 0).expert, in_node);
  // A dense model exchanges nothing, whatever EP says.
  EXPECT_EQ(SpeedOf(CatalogShape("llama-3.1-8b"), l, 64, 8).expert, 1);
}

// A cost model that prices GEMMs only: elementwise bytes are free, so a
// recomputation's price is its FLOPs' alone.
CostModel ByteFreeCostModel() {
  CostModel no_bytes;
  no_bytes.peak_flops_per_hbm_byte = 0;
  return no_bytes;
}

// DeepSeek-V3's average layer forward a token, by hand: 2 FLOPs an active
// weight and causal attention's 2 s a (192 + 128) / 2 over 128 heads.
double DeepSeekV3LayerForward(const LayerWeights& w, double seq) {
  return 2 * (w.dense + w.experts) + 2 * seq * 128 * 320 / 2;
}

// (7) Selective recomputation pays one more forward of what it
// recomputes. DeepSeek-V3's MLA up projections are GEMMs: 2 FLOPs a weight
// (1,536 x 128 x 192 and 512 x 128 x 256), against 3 x the layer's forward
// (2 per active weight and causal attention's 2 s a (192 + 128) / 2). The
// elementwise modules (experts' activation, norms, RoPE) cost their bytes
// at the HBM ratio: twice as much in fp32. Together under a quarter of a
// stage recomputed whole (x 13/12); none costs nothing.
TEST(CostModelTest, SelectiveRecomputationPaysOneMoreForwardOfItsModules) {
  const ModelShape v3 = CatalogShape("deepseek-v3");
  const LayerWeights w = ActiveWeightsPerToken(v3);
  const double seq = 4096;
  const double layer = DeepSeekV3LayerForward(w, seq);
  const double up = 2 * (1536.0 * 128 * 192 + 512.0 * 128 * 256);
  const CostModel no_bytes = ByteFreeCostModel();
  SelectiveModules mla;
  mla.mla_up_proj = true;
  EXPECT_NEAR(SelectiveRecomputeCost(v3, w, mla, seq, 2, no_bytes),
              1 + up / (3 * layer), 1e-12);
  EXPECT_EQ(SelectiveRecomputeCost(v3, w, SelectiveModules(), seq, 2), 1);

  SelectiveModules all = mla;
  all.moe_act = all.layernorm = true;
  const double gemm_share =
      SelectiveRecomputeCost(v3, w, all, seq, 2, no_bytes) - 1;
  const double bf16 = SelectiveRecomputeCost(v3, w, all, seq, 2) - 1;
  const double fp32 = SelectiveRecomputeCost(v3, w, all, seq, 4) - 1;
  EXPECT_GT(bf16, gemm_share);
  EXPECT_NEAR(fp32 - gemm_share, 2 * (bf16 - gemm_share), 1e-12);
  EXPECT_LT(1 + bf16, 13.0 / 12);
}

// (7) A dense layer's MLP recomputed ("mlp") pays FC1 and FC2 again, 2
// FLOPs a weight: Llama-3.1-405B's 3 x 16,384 x 53,248 against a layer's
// forward (2 per weight, attention's QKV of 16,384 x (16,384 + 2 x 8 x
// 128) and output projection of 16,384^2, and causal attention's 2 s h).
// At 8k the MLP is four fifths of a layer's FLOPs, x 1.26 (between three
// quarters of a stage, x 1.25, and all of it, x 4/3); at 128k attention's
// s x s work, which it does not repeat, is half, x 1.16. Its bytes (the
// pre-MLP norm TransformerEngine fuses into FC1, the activation) add
// under 1%. An MoE model's MoE layers have no dense MLP: DeepSeek-V3's
// three dense layers of 61 are all it prices.
TEST(CostModelTest, MlpRecomputationPaysItsGemmsAgain) {
  const ModelShape llama = CatalogShape("llama-3.1-405b");
  const LayerWeights w = ActiveWeightsPerToken(llama);
  const double h = 16384, ffn = 53248;
  const double mlp = 2 * 3 * h * ffn;
  const double attention_weights = h * (h + 2 * 8 * 128) + h * h;
  const CostModel no_bytes = ByteFreeCostModel();
  SelectiveModules modules;
  modules.mlp = true;
  for (const double seq : {8192.0, 131072.0}) {
    const double layer = 2 * (attention_weights + 3 * h * ffn) + 2 * seq * h;
    EXPECT_NEAR(SelectiveRecomputeCost(llama, w, modules, seq, 2, no_bytes),
                1 + mlp / (3 * layer), 1e-12);
    const double with_bytes =
        SelectiveRecomputeCost(llama, w, modules, seq, 2);
    EXPECT_GT(with_bytes, 1 + mlp / (3 * layer));
    EXPECT_LT(with_bytes, 1.01 * (1 + mlp / (3 * layer)));
  }
  const double at_8k = SelectiveRecomputeCost(llama, w, modules, 8192, 2);
  EXPECT_GT(at_8k, 1.25);
  EXPECT_LT(at_8k, 4.0 / 3);
  const double at_128k =
      SelectiveRecomputeCost(llama, w, modules, 131072, 2);
  EXPECT_GT(at_128k, 1.15);
  EXPECT_LT(at_128k, 1.17);

  const ModelShape v3 = CatalogShape("deepseek-v3");
  const LayerWeights v3_weights = ActiveWeightsPerToken(v3);
  const double v3_layer = DeepSeekV3LayerForward(v3_weights, 4096);
  EXPECT_NEAR(
      SelectiveRecomputeCost(v3, v3_weights, modules, 4096, 2, no_bytes),
      1 + 3.0 / 61 * 2 * 3 * 7168 * 18432 / (3 * v3_layer), 1e-12);
}

// (7) An MoE layer recomputed whole ("moe") pays its router's, its k
// routed experts' and its shared experts' GEMMs again, 2 FLOPs a weight:
// DeepSeek-V3's 8 x 3 x 7,168 x 2,048 routed, 3 x 7,168 x 2,048 shared and
// 7,168 x 256 router weights on its 58 MoE layers of 61, against 3 x the
// layer's forward. Its activations' bytes add a little; its exchange is
// the layout's: (6)'s four passes become six, (1 + x) / (1 + 3x/2) with x
// the exchange's share (1 without one). Below every layer recomputed (x
// 4/3), above the cheap modules, which it covers.
TEST(CostModelTest, MoeLayerRecomputationPaysItsGemmsAndExchangeAgain) {
  const ModelShape v3 = CatalogShape("deepseek-v3");
  const LayerWeights w = ActiveWeightsPerToken(v3);
  const double h = 7168, expert = 2048, seq = 4096;
  const double layer = DeepSeekV3LayerForward(w, seq);
  const double moe_flops =
      58.0 / 61 * 2 * (8 * 3 * h * expert + 3 * h * expert + h * 256);
  const CostModel no_bytes = ByteFreeCostModel();
  SelectiveModules moe;
  moe.moe = true;
  EXPECT_NEAR(SelectiveRecomputeCost(v3, w, moe, seq, 2, no_bytes),
              1 + moe_flops / (3 * layer), 1e-12);
  const double with_bytes = SelectiveRecomputeCost(v3, w, moe, seq, 2);
  EXPECT_GT(with_bytes, 1 + moe_flops / (3 * layer));
  EXPECT_LT(with_bytes, 4.0 / 3);
  SelectiveModules cheap;
  cheap.moe_act = cheap.layernorm = cheap.mla_up_proj = true;
  EXPECT_GT(with_bytes, SelectiveRecomputeCost(v3, w, cheap, seq, 2));
  // A dense model has no MoE layer to repeat.
  const ModelShape llama = CatalogShape("llama-3.1-8b");
  EXPECT_EQ(SelectiveRecomputeCost(llama, ActiveWeightsPerToken(llama), moe,
                                   8192, 2),
            1);

  EXPECT_EQ(MoeRecomputeExchange(1), 1);
  EXPECT_EQ(MoeRecomputeExchange(0), 1);  // not a factor: no price
  EXPECT_NEAR(MoeRecomputeExchange(0.5), 2.0 / 2.5, 1e-12);  // x = 1
  EXPECT_NEAR(MoeRecomputeExchange(0.8), 1.25 / 1.375, 1e-12);  // x = 1/4
}

// Full recomputation (method block) of n of a chunk's L layers: one more
// forward of them, a third of their forward and backward, and in an MoE
// model their exchange's forward again, two of its four passes, as the
// "moe" module pays it (every MoE layer: MoeRecomputeExchange). The most
// layers below a price are found by bisection, whatever the depth.
TEST(CostModelTest, FullRecomputationPaysItsLayersForwardAndExchange) {
  EXPECT_NEAR(FullRecomputeCost(1, 4, 1), 1 + 1.0 / 12, 1e-12);
  EXPECT_NEAR(FullRecomputeCost(8, 8, 1), 4.0 / 3, 1e-12);
  EXPECT_EQ(FullRecomputeCost(0, 8, 0.5), 1);
  // x = 1 (expert 1/2): the exchange is as long as the compute; half of
  // it again for half of the layers is an eighth of the step.
  EXPECT_NEAR(FullRecomputeCost(4, 8, 0.5), (1 + 1.0 / 6) * (1 + 0.125),
              1e-12);
  EXPECT_NEAR(1 / ExchangeForwardAgain(1, 0.5), MoeRecomputeExchange(0.5),
              1e-12);
  EXPECT_EQ(ExchangeForwardAgain(0.5, 1), 1);
  EXPECT_EQ(ExchangeForwardAgain(0.5, 0), 1);  // not a factor: no price

  // Below x 1.25: 3 of 4 layers cost exactly that, 2 less.
  EXPECT_EQ(MostLayersRecomputedBelow(1.25, 4, 1), 2u);
  EXPECT_EQ(MostLayersRecomputedBelow(2, 4, 1), 4u);
  EXPECT_EQ(MostLayersRecomputedBelow(1, 4, 1), 0u);
  EXPECT_EQ(MostLayersRecomputedBelow(0.5, 4, 1), 0u);
  // The exchange's share lowers it; a million-layer chunk is bisected.
  EXPECT_LT(MostLayersRecomputedBelow(1.2, 1000, 0.5),
            MostLayersRecomputedBelow(1.2, 1000, 1));
  const uint32_t deep = 1u << 20;
  const uint32_t most = MostLayersRecomputedBelow(1.2, deep, 1);
  EXPECT_LT(FullRecomputeCost(most, deep, 1), 1.2);
  EXPECT_GE(FullRecomputeCost(most + 1, deep, 1), 1.2);
}

}  // namespace
}  // namespace memgate

namespace memgate {
namespace {

// Every catalog GPU has its datasheet ratios (gpu_datasheets.cc): the
// H100's are CostModel's defaults (rounded there); an A100's NVLink costs
// half as much compute a byte (312 TFLOP/s over 300 GB/s against 989 over
// 450), a B200's network 2.3 times as much (2,250 over the same NIC), an
// L40S without NVLink ten times the H100's link price (PCIe). A capacity
// given in GiB names no GPU and keeps the defaults.
// (2) The TP overhead measured on the paper's H100 (94 GB) is that GPU's;
// another pays it in proportion to its compute over its NVLink: an A100
// 0.37 of it, an H100 SXM 0.79, an H800 (NVLink at 400 GB/s) 1.78. TP 1
// pays nothing anywhere.
TEST(GpuDatasheetsTest, TensorParallelismPaysForTheGpusLinks) {
  const ModelShape llama = CatalogShape("llama-3.1-8b");
  auto tensor = [&](const char* gpu, double t) {
    const CostModel cost = WithDatasheetRatios(CostModel(), gpu);
    return SpeedOf(llama, LayoutOf(t, 1, 1, 1, 8192), 8, 8, cost).tensor;
  };
  EXPECT_DOUBLE_EQ(tensor("h100-94gb", 2), 1 / 1.25);
  EXPECT_NEAR(1 / tensor("a100-40gb", 2) - 1, 0.25 * 0.3737, 1e-3);
  EXPECT_NEAR(1 / tensor("h100-80gb", 2) - 1, 0.25 * 0.7899, 1e-3);
  EXPECT_NEAR(1 / tensor("h800-80gb", 2) - 1, 0.25 * 1.7772, 1e-3);
  EXPECT_GT(tensor("a100-40gb", 8), tensor("h100-80gb", 8));
  EXPECT_GT(tensor("h100-80gb", 8), tensor("h800-80gb", 8));
  EXPECT_EQ(tensor("h800-80gb", 1), 1);
}

TEST(GpuDatasheetsTest, EveryCatalogGpuHasItsRatios) {
  const CostModel h100 = CostModel();
  for (const std::string& name : AcceleratorNames()) {
    const CostModel c = WithDatasheetRatios(h100, name);
    const bool is_h100 = name == "h100-80gb";
    const bool changed =
        c.peak_flops_per_network_byte != h100.peak_flops_per_network_byte ||
        c.peak_flops_per_nvlink_byte != h100.peak_flops_per_nvlink_byte ||
        c.peak_flops_per_peer_link_byte !=
            h100.peak_flops_per_peer_link_byte ||
        c.peak_flops_per_hbm_byte != h100.peak_flops_per_hbm_byte;
    EXPECT_TRUE(changed || is_h100) << name << " has no datasheet";
    // A datasheet in the wrong unit would be off by 1,000: the H20 (148
    // TFLOP/s over 4 TB/s, 37) is the catalog's lowest.
    EXPECT_GT(c.peak_flops_per_hbm_byte, 30) << name;
    EXPECT_LT(c.peak_flops_per_hbm_byte, 1000) << name;
  }
  const CostModel h100_sheet = WithDatasheetRatios(h100, "h100-80gb");
  EXPECT_NEAR(h100_sheet.peak_flops_per_network_byte,
              h100.peak_flops_per_network_byte, 0.02 * 2e4);
  EXPECT_NEAR(h100_sheet.peak_flops_per_nvlink_byte,
              h100.peak_flops_per_nvlink_byte, 0.02 * 2.2e3);
  EXPECT_NEAR(h100_sheet.peak_flops_per_hbm_byte,
              h100.peak_flops_per_hbm_byte, 1);
  const CostModel a100 = WithDatasheetRatios(h100, "a100-80gb");
  EXPECT_NEAR(a100.peak_flops_per_nvlink_byte, 1040, 1);
  EXPECT_NEAR(a100.peak_flops_per_network_byte, 12480, 1);
  // The H800 is an H100 with less than half its NVLink.
  const CostModel h800 = WithDatasheetRatios(h100, "h800-80gb");
  EXPECT_NEAR(h800.peak_flops_per_nvlink_byte,
              2.25 * h100_sheet.peak_flops_per_nvlink_byte, 1);
  EXPECT_EQ(h800.peak_flops_per_network_byte,
            h100_sheet.peak_flops_per_network_byte);
  const CostModel b200 = WithDatasheetRatios(h100, "b200-180gb");
  EXPECT_NEAR(b200.peak_flops_per_network_byte, 45000, 1);
  // A point-to-point send reaches one peer: through an NVSwitch all of the
  // link, on an MI300X one of its 7 Infinity Fabric links.
  EXPECT_EQ(b200.peak_flops_per_peer_link_byte,
            b200.peak_flops_per_nvlink_byte);
  // The GB200: the B200's links, a little more compute over them.
  const CostModel gb200 = WithDatasheetRatios(h100, "gb200-186gb");
  EXPECT_NEAR(gb200.peak_flops_per_network_byte, 50000, 1);
  EXPECT_GT(gb200.peak_flops_per_nvlink_byte,
            b200.peak_flops_per_nvlink_byte);
  const CostModel mi300x = WithDatasheetRatios(h100, "mi300x-192gb");
  EXPECT_NEAR(mi300x.peak_flops_per_peer_link_byte,
              7 * mi300x.peak_flops_per_nvlink_byte, 1);
  const CostModel l40s = WithDatasheetRatios(h100, "l40s-48gb");
  EXPECT_GT(l40s.peak_flops_per_nvlink_byte,
            5 * h100.peak_flops_per_nvlink_byte);
  // Fitted constants pass through.
  CostModel fitted;
  fitted.tensor_overhead = 0.5;
  EXPECT_EQ(WithDatasheetRatios(fitted, "a100-40gb").tensor_overhead, 0.5);
  const CostModel unnamed = WithDatasheetRatios(h100, "");
  EXPECT_EQ(unnamed.peak_flops_per_nvlink_byte,
            h100.peak_flops_per_nvlink_byte);
}

}  // namespace
}  // namespace memgate
