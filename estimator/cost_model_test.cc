// The cost model's mixture-of-experts terms, and their validation on
// measurements it was not fitted to.

#include "estimator/cost_model.h"

#include <cstdio>

#include "estimator/catalog.h"
#include "gtest/gtest.h"

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

// Validation on data the model never saw: NVIDIA's Megatron MoE model zoo
// measured Qwen3-235B-A22B on 256 H100s (seq 4096, gbs 2048, MBS 1, bf16,
// embedding and loss accounted in the split; best_practice/Qwen3/readme.md
// of github.com/yanring/Megatron-MoE-ModelZoo):
//   TP 2, EP 32, PP 8, VPP 4 (DeepEP)      245 TFLOP/s a GPU
//   TP 2, EP 8,  PP 32, VPP 3 (all-to-all)  200
//   TP 4, EP 8,  PP 8, VPP 4 (DeepEP)      167
// The cost model's constants were set on the paper's dense Llama-3.1-8B
// table; nothing here was fitted. It must order the three as measured. The
// paper's rule alone (smallest TP x CP x PP first: 16, 32, 64) puts the
// 167 run before the 200 one. (The dispatchers differ between rows, a
// confound the cost model does not see.)
TEST(CostModelTest, OrdersTheMeasuredQwen3LayoutsOfTheModelZoo) {
  const ModelShape qwen = CatalogShape("qwen3-235b-a22b");
  struct Run {
    double t, ep, p, v, first, last, tflops;
  };
  // 94 layers + 2 accounted units: PP 8 gives 11 | 12 x 6 | 11 layers,
  // PP 32 gives 2 | 3 x 30 | 2.
  const Run runs[] = {{2, 32, 8, 4, 11, 11, 245},
                      {2, 8, 32, 3, 2, 2, 200},
                      {4, 8, 8, 4, 11, 11, 167}};
  double speed[3];
  for (int i = 0; i < 3; ++i) {
    const Run& r = runs[i];
    const double dp = 256 / (r.t * r.p);
    Layout l = LayoutOf(r.t, r.p, r.ep, r.v, 4096);
    l.data = dp;
    speed[i] = SpeedOf(qwen, l, 2048 / dp, 8, CostModel{},
                       StageLayers{r.first, r.last})
                   .speed();
    std::printf("TP %g EP %g PP %g VPP %g: measured %g TFLOP/s, cost model "
                "%.3f (%.2f of the first), rule product %g\n",
                r.t, r.ep, r.p, r.v, r.tflops, speed[i], speed[i] / speed[0],
                r.t * r.p);
  }
  EXPECT_GT(speed[0], speed[1]);
  EXPECT_GT(speed[1], speed[2]);
}

}  // namespace
}  // namespace memgate
