// Mixture-of-experts memory on one GPU, for three expert-parallel layouts,
// each number written out from the equations (moe_terms.cc) on a small
// model:
//   L = 2 MoE layers, h = 1024, a = k_heads = 8, v = 32000 (untied),
//   E = 8 experts of FFN width 512, top-2 routing, no shared experts,
//   s = 1024, b = 1, bf16 with the distributed optimizer, 8 GPUs, p = 1.
// Parameters: attention 4h^2 = 4,194,304, norms 2h = 2048, router
// h*E = 8192 a layer; an expert 3*h*512 = 1,572,864; the embedding and the
// LM head 32,768,000 each, the final norm 1024.

#include "estimator/memory_model.h"
#include "estimator/moe_terms.h"
#include "gtest/gtest.h"

namespace memgate {
namespace {

constexpr double kSbh = 1024.0 * 1024;
constexpr double kExpert = 1572864;
constexpr double kVocab = 1024.0 * 32000;
// [RS] What Megatron's default routing keeps a token (E = 8, k = 2): the
// softmax after the top-k, its k indices and k scores (12k = 24), the
// alltoall permutation's argsort of every (expert, token) pair (8E + 4 =
// 68) and its k sorted token indices (8k = 16).
constexpr double kRouting = 108;

ModelShape SmallMoe() {
  ModelShape m;
  m.layers = 2;
  m.hidden = 1024;
  m.ffn_hidden = 4096;
  m.heads = 8;
  m.kv_heads = 8;
  m.vocab = 32000;
  m.experts = 8;
  m.topk = 2;
  m.expert_ffn = 512;
  m.moe_prefix = {0, 1, 2};  // both layers MoE
  // Megatron's default router: softmax after the top-k, unfused, neither
  // a load-balancing loss nor a z-loss.
  m.router_score = v1::MoeConfig::ROUTER_SCORE_SOFTMAX_AFTER_TOPK;
  m.router_fusion = 0;
  m.aux_loss = false;
  m.z_loss = false;
  return m;
}

// SmallMoe's attention as multi-latent attention, its MLP dense.
ModelShape SmallMla() {
  ModelShape m = SmallMoe();
  m.experts = 0;
  m.moe_prefix.clear();
  m.mla = true;
  m.q_lora = 256;
  m.kv_lora = 128;
  m.qk_nope = 64;
  m.qk_rope = 32;
  m.v_head = 64;
  return m;
}

Layout EightGpus(double t, double ep, double etp) {
  Layout l;
  l.tensor = t;
  l.expert_parallel = ep;
  l.expert_tensor = etp;
  l.data = 8 / t;
  l.seq_length = 1024;
  return l;
}

// Layout A: t = EP = ETP = 1, d = 8. Every rank holds all 8 experts; the
// expert-data-parallel group is all 8 ranks, like the dense one.
// Activations a layer (bytes): norms and inputs 8 sbh, attention 8 sbh,
// routing kRouting x 1024 tokens, 2048 routed copies of
// (2h + 6 x 512) = 10 sbh (the fused SwiGLU keeps 6 B a unit of expert
// width), the combine's 2 x 1024 outputs of 2h = 4 sbh (core 0.12.0's
// weighted unpermute, counted for an unknown release).
TEST(MoeTermsTest, ExpertsReplicatedWithoutExpertParallelism) {
  const Layout l = EightGpus(1, 1, 1);
  const StageFigures f = StageMemoryOf(SmallMoe(), l, 0, 2);
  const double dense = 2 * (4194304 + 2048 + 8192) + 2 * kVocab + 1024;
  const double experts = 2 * 8 * kExpert;
  EXPECT_DOUBLE_EQ(f.parameters, dense + experts);
  // The buffers hold the distributed optimizer's padding too
  // (memory_model.cc [BP]).
  const double buffers = dense + experts + f.padding_elements;
  EXPECT_DOUBLE_EQ(f.weight_bytes, 2 * buffers);
  EXPECT_DOUBLE_EQ(f.gradient_bytes, 4 * buffers);
  EXPECT_DOUBLE_EQ(f.optimizer_bytes, 12 * dense / 8 + 12 * experts / 8);
  const double layer = 30 * kSbh + kRouting * 1024;
  // + the all-to-all's sent and received copies 2h x (2048 + 2048) = 8 sbh,
  // the embedding's 8 sbh, the head's 4 sbh + 4sbv.
  EXPECT_DOUBLE_EQ(f.activation_bytes,
                   2 * layer + 8 * kSbh + 8 * kSbh + 4 * kSbh +
                       4 * 1024 * 32000.0);
  // No load margin: with every expert on the rank, it processes all
  // 2048 copies however the router spreads them.
  EXPECT_DOUBLE_EQ(f.imbalance_bytes, 0);
  EXPECT_DOUBLE_EQ(f.admission_bytes(), f.total_bytes());
}

// Layout B: EP = 8: one expert a rank, and its states shard over
// world / (ETP x EP x PP) = 1 rank: not at all. Activations as layout A:
// each rank still receives 2048 copies, the balanced share.
TEST(MoeTermsTest, ExpertParallelismSplitsExpertsNotTheirTokens) {
  const Layout l = EightGpus(1, 8, 1);
  const StageFigures f = StageMemoryOf(SmallMoe(), l, 0, 2);
  const double dense = 2 * (4194304 + 2048 + 8192) + 2 * kVocab + 1024;
  const double experts = 2 * 1 * kExpert;
  EXPECT_DOUBLE_EQ(f.parameters, dense + experts);
  EXPECT_DOUBLE_EQ(f.optimizer_bytes, 12 * dense / 8 + 12 * experts / 1);
  EXPECT_DOUBLE_EQ(f.activation_bytes,
                   StageMemoryOf(SmallMoe(), EightGpus(1, 1, 1), 0, 2)
                       .activation_bytes);
  // The 1.25x load margin of dropless routing: a quarter more routed
  // copies in both layers (2 x 2.5 sbh) and in the received buffer
  // (1 sbh).
  EXPECT_DOUBLE_EQ(f.imbalance_bytes, 6 * kSbh);
  EXPECT_DOUBLE_EQ(f.admission_bytes(), f.total_bytes() + 6 * kSbh);
}

// A rank's dropless load is bounded by routing itself: a token's k copies
// go to k distinct experts, so a rank of E/EP experts gets at most
// min(k, E/EP) of them: EP x min(k, E/EP) / k times its share. With EP = 2
// (4 experts a rank, top-2) that is 2x: an assumed 4x counts as 2x. With
// EP = 1 it is 1x: no margin, which a real Megatron-Core MoE step on one
// H100 confirmed (bench/RESULTS.md: 0.94x memgate's activations stored,
// where memgate had added a 1.25x margin on top).
TEST(MoeTermsTest, LoadMarginIsBoundedByWhatRoutingCanSend) {
  EXPECT_DOUBLE_EQ(MaxExpertLoad(SmallMoe(), EightGpus(1, 1, 1)), 1);
  EXPECT_DOUBLE_EQ(MaxExpertLoad(SmallMoe(), EightGpus(1, 2, 1)), 2);
  EXPECT_DOUBLE_EQ(MaxExpertLoad(SmallMoe(), EightGpus(1, 8, 1)), 4);
  auto margin = [](double assumed) {
    Layout l = EightGpus(1, 2, 1);
    l.load_imbalance = assumed;
    return StageMemoryOf(SmallMoe(), l, 0, 2).imbalance_bytes;
  };
  EXPECT_GT(margin(1.25), 0);
  EXPECT_GT(margin(2), margin(1.25));
  EXPECT_DOUBLE_EQ(margin(4), margin(2));
  // Top-8 of 8 experts, one a rank: every rank gets every token once.
  ModelShape all_experts = SmallMoe();
  all_experts.topk = 8;
  Layout l = EightGpus(1, 8, 1);
  EXPECT_DOUBLE_EQ(MaxExpertLoad(all_experts, l), 1);
  EXPECT_DOUBLE_EQ(StageMemoryOf(all_experts, l, 0, 2).imbalance_bytes, 0);
}

// Layout C: t = 2 with sequence parallelism, EP = 4, ETP = 1, d = 4.
// Per rank: attention and the vocabulary halved, 2 experts a layer, expert
// states over t*c*d / (ETP x EP) = 2 ranks. 512 tokens a rank: routing
// kRouting x 512, 1024 copies of 5 KiB = 5 sbh, the combine 2 sbh, norms,
// inputs and attention 8 sbh: 15 sbh a layer; the all-to-all
// 2h x (1024 + 1024) = 4 sbh; embedding 4 sbh, head 2 sbh + 4sbv/2.
TEST(MoeTermsTest, TensorAndExpertParallelismTogether) {
  const Layout l = EightGpus(2, 4, 1);
  const StageFigures f = StageMemoryOf(SmallMoe(), l, 0, 2);
  const double dense = 2 * (4194304 / 2 + 2048 + 8192) + kVocab + 1024;
  const double experts = 2 * 2 * kExpert;
  EXPECT_DOUBLE_EQ(f.parameters, dense + experts);
  EXPECT_DOUBLE_EQ(f.optimizer_bytes, 12 * dense / 4 + 12 * experts / 2);
  EXPECT_DOUBLE_EQ(f.activation_bytes,
                   2 * (15 * kSbh + kRouting * 512) + 4 * kSbh + 4 * kSbh +
                       2 * kSbh + 2 * 1024 * 32000.0);
}

// [DO] Layout C with 2 distributed-optimizer instances: the dense states
// shard over d*c / 2 = 2 ranks, the experts' over their expert-data-
// parallel group / 2 = 1 rank; nothing else changes.
TEST(MoeTermsTest, OptimizerInstancesShardExpertStatesOverTheirShareToo) {
  Layout l = EightGpus(2, 4, 1);
  const StageFigures one = StageMemoryOf(SmallMoe(), l, 0, 2);
  l.optimizer_instances = 2;
  const StageFigures two = StageMemoryOf(SmallMoe(), l, 0, 2);
  const double dense = 2 * (4194304 / 2 + 2048 + 8192) + kVocab + 1024;
  const double experts = 2 * 2 * kExpert;
  EXPECT_DOUBLE_EQ(two.optimizer_bytes, 12 * dense / 2 + 12 * experts / 1);
  EXPECT_DOUBLE_EQ(two.total_bytes() - two.optimizer_bytes,
                   one.total_bytes() - one.optimizer_bytes);
}

// ETP = t = 2, EP = 2: each rank gathers its TP peer's tokens (1024) and
// computes half of each expert's columns: 2048 copies of (2h + 6 x 256)
// = 7 sbh a layer; 4 experts of half width a rank.
TEST(MoeTermsTest, ExpertTensorParallelismSplitsEachExpert) {
  const Layout l = EightGpus(2, 2, 2);
  const StageFigures f = StageMemoryOf(SmallMoe(), l, 0, 2);
  const double dense = 2 * (4194304 / 2 + 2048 + 8192) + kVocab + 1024;
  EXPECT_DOUBLE_EQ(f.parameters, dense + 2 * 4 * kExpert / 2);
  const double layer = 8 * kSbh + kRouting * 512 + 7 * kSbh + 2 * kSbh;
  // All-to-all: 2h x (1024 sent + 2048 received) = 6 sbh.
  EXPECT_DOUBLE_EQ(f.activation_bytes, 2 * layer + 6 * kSbh + 4 * kSbh +
                                           2 * kSbh + 2 * 1024 * 32000.0);
}

// Drop-and-pad: every expert computes capacity = 1.5x its share, whatever
// the routing: 1.5 x 10 sbh a layer, and no load margin.
TEST(MoeTermsTest, PaddedCapacityFixesTheLoad) {
  Layout l = EightGpus(1, 1, 1);
  const double balanced = StageMemoryOf(SmallMoe(), l, 0, 2).activation_bytes;
  l.capacity_factor = 1.5;
  l.pad_to_capacity = true;
  const StageFigures f = StageMemoryOf(SmallMoe(), l, 0, 2);
  // 2 layers x 0.5 x 10 sbh, and half of the received buffer's 4 sbh;
  // core 0.12.0's unpermute (which an unknown release counts) weights
  // every expert's capacity: 2 layers x 0.5 x its 4 sbh.
  EXPECT_DOUBLE_EQ(f.activation_bytes,
                   balanced + 10 * kSbh + 2 * kSbh + 4 * kSbh);
  EXPECT_DOUBLE_EQ(f.imbalance_bytes, 0);
}

// [RS] Routing's kept bytes follow its settings, a token of layout A's
// 1024 (E = 8, k = 2): the default's kRouting; a softmax over every
// expert or a sigmoid keeps 4E more, sqrt(softplus) 8E; a load-balancing
// loss scores every expert once more (4E; 8E for sqrt(softplus)); the
// z-loss keeps the fp32 logits (4E); group-limited top-k its mask (E) and
// the group top-k indices (8 x (4 groups x 1 + 2)); TransformerEngine's
// fused router 5E in place of the unfused scores; unknown settings count
// their largest.
TEST(MoeTermsTest, RoutingKeepsWhatItsSettingsKeep) {
  const Layout l = EightGpus(1, 1, 1);
  auto per_token = [&](auto change) {
    ModelShape m = SmallMoe();
    change(m);
    return RouterActivations(m, l) / 1024;
  };
  EXPECT_DOUBLE_EQ(per_token([](ModelShape&) {}), kRouting);
  EXPECT_DOUBLE_EQ(per_token([](ModelShape& m) {
                     m.router_score = v1::MoeConfig::ROUTER_SCORE_SOFTMAX;
                   }),
                   kRouting + 32);
  EXPECT_DOUBLE_EQ(per_token([](ModelShape& m) {
                     m.router_score = v1::MoeConfig::ROUTER_SCORE_SIGMOID;
                     m.aux_loss = true;
                   }),
                   kRouting + 32 + 32);
  EXPECT_DOUBLE_EQ(per_token([](ModelShape& m) {
                     m.router_score =
                         v1::MoeConfig::ROUTER_SCORE_SQRTSOFTPLUS;
                     m.aux_loss = true;
                   }),
                   kRouting + 64 + 64);
  EXPECT_DOUBLE_EQ(per_token([](ModelShape& m) { m.z_loss = true; }),
                   kRouting + 32);
  EXPECT_DOUBLE_EQ(per_token([](ModelShape& m) {
                     m.router_groups = 4;
                     m.router_group_topk = 2;
                   }),
                   kRouting + 8 + 8 * (4 + 2));
  // Fused: 5E = 40 in place of the unfused 12k = 24; with the loss 4E more.
  EXPECT_DOUBLE_EQ(per_token([](ModelShape& m) { m.router_fusion = 1; }),
                   kRouting - 24 + 40);
  EXPECT_DOUBLE_EQ(per_token([](ModelShape& m) {
                     m.router_fusion = 1;
                     m.aux_loss = true;
                     m.router_score = v1::MoeConfig::ROUTER_SCORE_SIGMOID;
                   }),
                   kRouting - 24 + 40 + 32);
  // Nothing known (ModelShape's defaults): unfused sqrt(softplus) with
  // its loss (16E + 12k = 152, above the fused 9E = 72), the z-loss (4E)
  // and the permutation (84).
  const ModelShape unknown = [] {
    ModelShape m = SmallMoe();
    const ModelShape defaults;
    m.router_score = defaults.router_score;
    m.router_fusion = defaults.router_fusion;
    m.aux_loss = defaults.aux_loss;
    m.z_loss = defaults.z_loss;
    return m;
  }();
  EXPECT_DOUBLE_EQ(RouterActivations(unknown, l) / 1024, 152 + 32 + 84);
  // Dispatchers: allgather keeps the gathered probabilities' copy and
  // mask and the fused row map ((4 + 9)E + 4 EP = 108 over TP x EP = 1
  // rank's tokens) and 8 B a routed copy's sorted index (2 a token); flex
  // (DeepEP) the received copies' map over the local experts (8E/EP + 20
  // + k = 86 a copy).
  Layout gathered = l;
  gathered.allgather_dispatcher = true;
  EXPECT_DOUBLE_EQ(RouterActivations(SmallMoe(), gathered) / 1024,
                   24 + 108 + 16);
  Layout flex = l;
  flex.deepep_dispatcher = true;
  EXPECT_DOUBLE_EQ(RouterActivations(SmallMoe(), flex) / 1024,
                   24 + 2 * 86);
  // Drop-and-pad gathers every expert's padded capacity: 2 x 8k x cf
  // indices a token once above the argsort's 84.
  Layout padded = l;
  padded.capacity_factor = 8;
  padded.pad_to_capacity = true;
  EXPECT_DOUBLE_EQ(RouterActivations(SmallMoe(), padded) / 1024,
                   24 + 16 * 2 * 8);
}

// Recomputing the MoE block keeps only its input: the router, the routed
// copies and the combine (10 + 4 sbh + 108 KiB a layer) are gone.
TEST(MoeTermsTest, MoeRecomputationDropsTheBlock) {
  Layout l = EightGpus(1, 1, 1);
  const double full = StageMemoryOf(SmallMoe(), l, 0, 2).activation_bytes;
  l.recompute = RecomputeKind::kSelective;
  l.recompute_moe = true;
  EXPECT_DOUBLE_EQ(StageMemoryOf(SmallMoe(), l, 0, 2).activation_bytes,
                   full - 2 * (14 * kSbh + kRouting * 1024));
  // moe_act: only the activation function's output, 2 bytes of the 6 per
  // unit of expert width: 2048 copies x 2 x 512 = 2 sbh a layer.
  l.recompute_moe = false;
  l.recompute_moe_act = true;
  EXPECT_DOUBLE_EQ(StageMemoryOf(SmallMoe(), l, 0, 2).activation_bytes,
                   full - 2 * 2 * kSbh);
}

// Recomputing "layernorm" drops an MoE layer's pre-MLP norm output (2 sbh,
// the router's input), the one norm TransformerEngine does not fuse into a
// linear layer; dense layers' norms are fused and keep theirs.
TEST(MoeTermsTest, LayernormRecomputationDropsTheMoePreMlpNormOutput) {
  Layout l = EightGpus(1, 1, 1);
  const double full = StageMemoryOf(SmallMoe(), l, 0, 2).activation_bytes;
  l.recompute = RecomputeKind::kSelective;
  l.recompute_layernorm = true;
  EXPECT_DOUBLE_EQ(StageMemoryOf(SmallMoe(), l, 0, 2).activation_bytes,
                   full - 2 * 2 * kSbh);
  ModelShape dense = SmallMoe();
  dense.experts = 0;
  dense.moe_prefix.clear();
  Layout plain = EightGpus(1, 1, 1);
  EXPECT_DOUBLE_EQ(StageMemoryOf(dense, l, 0, 2).activation_bytes,
                   StageMemoryOf(dense, plain, 0, 2).activation_bytes);
}

// Dense and MoE layers of a pattern go to the stages that hold them:
// layers 0 and 1 dense, 2 and 3 MoE, over p = 2.
TEST(MoeTermsTest, LayerPatternPlacesMoeLayersOnTheirStages) {
  ModelShape m = SmallMoe();
  m.layers = 4;
  m.moe_prefix = {0, 0, 0, 1, 2};
  Layout l = EightGpus(1, 1, 1);
  l.pipeline = 2;
  l.data = 4;
  const double dense_layer = 4194304 + 2048 + 3 * 1024.0 * 4096;
  const double moe_layer = 4194304 + 2048 + 8192 + 8 * kExpert;
  EXPECT_DOUBLE_EQ(StageMemoryOf(m, l, 0, 2, 0).parameters,
                   2 * dense_layer + kVocab);
  EXPECT_DOUBLE_EQ(StageMemoryOf(m, l, 1, 2, 2).parameters,
                   2 * moe_layer + kVocab + 1024);
  EXPECT_DOUBLE_EQ(TotalParameters(m),
                   2 * dense_layer + 2 * moe_layer + 2 * kVocab + 1024);
}

// Multi-latent attention, t = 2: h = 1024, a = 8, Q latent 256, KV latent
// 128, head dims 64 (nope) + 32 (rope), V 64. Replicated over t: the down
// projections h x (128 + 32) and h x 256 and their norms (128, 256); split:
// KV up 128 x 8 x (64 + 64), Q up 256 x 8 x 96, output 8 x 64 x h.
// Stored per token: Q and K 2 x 2 x 768, V and the output 2 x 2 x 512, all
// over t; the latents 4 x 256 + 4 x 128 + 2 x 32 on every rank (with their
// norms, --qk-layernorm: the norms' inputs and the up projections' inputs).
TEST(MoeTermsTest, MultiLatentAttentionParametersAndActivations) {
  ModelShape m = SmallMla();
  m.qk_norm = true;
  ModelShape gqa = m;
  gqa.mla = false;
  gqa.qk_norm = false;
  Layout l = EightGpus(2, 1, 2);
  l.sequence_parallel = false;  // keep the hidden-sized terms whole
  const double mla_params = 1024.0 * 160 + 128 + 1024.0 * 256 + 256 +
                            (128.0 * 8 * 128 + 256.0 * 8 * 96 +
                             8.0 * 64 * 1024) / 2;
  EXPECT_DOUBLE_EQ(StageMemoryOf(m, l, 0, 1).parameters -
                       StageMemoryOf(gqa, l, 0, 1).parameters,
                   mla_params - 4194304.0 / 2);
  const double mla_bytes = 1024.0 * ((2 * 768 + 2 * 768 + 2 * 512 + 2 * 512) /
                                         2.0 +
                                     4 * 256 + 4 * 128 + 2 * 32);
  const double gqa_bytes = 1024.0 * 8 * 1024 / 2;  // 2Q + 2O + 4KV over t
  EXPECT_DOUBLE_EQ(StageMemoryOf(m, l, 0, 1).activation_bytes -
                       StageMemoryOf(gqa, l, 0, 1).activation_bytes,
                   mla_bytes - gqa_bytes);

  // Without --qk-layernorm Megatron's MLA has no latent norms
  // (gpt_layer_specs.py: plain column-parallel up projections): their
  // 128 + 256 weights and the norms' 2 B inputs go; no Q/K head norms
  // either way.
  ModelShape plain = m;
  plain.qk_norm = false;
  EXPECT_DOUBLE_EQ(StageMemoryOf(m, l, 0, 1).parameters -
                       StageMemoryOf(plain, l, 0, 1).parameters,
                   128 + 256);
  EXPECT_DOUBLE_EQ(StageMemoryOf(m, l, 0, 1).activation_bytes -
                       StageMemoryOf(plain, l, 0, 1).activation_bytes,
                   1024.0 * 2 * (256 + 128));

  // --recompute-modules mla_up_proj: Q, K and V (2 x 768 + 2 x 768 +
  // 2 x 512 over t) and the latent norms' outputs (2 x (256 + 128)) are
  // not kept; the attention output, the latents and the rotary key are.
  Layout up_proj = l;
  up_proj.recompute = RecomputeKind::kSelective;
  up_proj.recompute_core_attn = false;
  up_proj.recompute_mla_up_proj = true;
  Layout selective_none = up_proj;
  selective_none.recompute_mla_up_proj = false;
  EXPECT_DOUBLE_EQ(StageMemoryOf(m, selective_none, 0, 1).activation_bytes -
                       StageMemoryOf(m, up_proj, 0, 1).activation_bytes,
                   1024.0 * ((2 * 768 + 2 * 768 + 2 * 512) / 2.0 +
                             2 * (256 + 128)));
  // Under the local spec the latent norms are torch modules apart from
  // the up projections, outside the checkpoint: their inputs stay, and
  // their outputs are the checkpoint's inputs (measured, session 36).
  Layout local = up_proj, local_none = selective_none;
  local.local_layer_spec = local_none.local_layer_spec = true;
  EXPECT_DOUBLE_EQ(StageMemoryOf(m, local_none, 0, 1).activation_bytes -
                       StageMemoryOf(m, local, 0, 1).activation_bytes,
                   1024.0 * (2 * 768 + 2 * 768 + 2 * 512) / 2.0);

  // Blockwise fp8 (1/32 B of scales an activation element, 4 B a
  // 128 x 128 weight block) [F8]: MLA's two down projections each save
  // the input norm's output quantized (2 x 33/32 in place of 2); the
  // up projections their inputs, the latent norms' outputs (33/32 in place
  // of 2 a latent element); the output projection an fp8 copy of the
  // attention output (33/32 x a x d_v over t); the dense MLP its input and
  // its second GEMM's (33/32 in place of 2, sbh and sb x h_ffn over t).
  // Weights: 2 x (1 + 4/16384) B a GEMM weight (MLA's without its norms).
  Layout fp8 = l;
  fp8.fp8 = true;
  fp8.fp8_scale_bytes = 4.0 / 128;
  fp8.fp8_weight_scale_bytes = 4.0 / (128 * 128);
  const double f8 = 1 + 1.0 / 32;
  EXPECT_DOUBLE_EQ(
      StageMemoryOf(m, fp8, 0, 1).activation_bytes -
          StageMemoryOf(m, l, 0, 1).activation_bytes,
      1024.0 * ((2 * f8 - 2) * 1024 + (f8 - 2) * (256 + 128) +
                f8 * 512 / 2 + (f8 - 2) * 1024 + (f8 - 2) * 4096 / 2));
  const double mla_gemms = mla_params - 128 - 256;
  EXPECT_DOUBLE_EQ(StageMemoryOf(m, fp8, 0, 1).weight_bytes -
                       StageMemoryOf(m, l, 0, 1).weight_bytes,
                   2 * (1 + 4.0 / 16384) *
                       (mla_gemms + 3 * 1024.0 * 4096 / 2));

  // --mla-down-proj-fusion: the two down projections, h x (q_lora +
  // kv_lora + d_rope) = 1024 x 416 replicated above, become one split
  // over TP 2 (FusedMLASelfAttention); what the layer stores is the same
  // (the latents are gathered back to the unfused shapes).
  ModelShape fused = m;
  fused.mla_fused_down_projection = true;
  EXPECT_DOUBLE_EQ(StageMemoryOf(m, l, 0, 1).parameters -
                       StageMemoryOf(fused, l, 0, 1).parameters,
                   1024.0 * 416 / 2);
  EXPECT_DOUBLE_EQ(StageMemoryOf(fused, l, 0, 1).activation_bytes,
                   StageMemoryOf(m, l, 0, 1).activation_bytes);
  Layout one_rank = l;
  one_rank.tensor = 1;
  EXPECT_DOUBLE_EQ(StageMemoryOf(fused, one_rank, 0, 1).parameters,
                   StageMemoryOf(m, one_rank, 0, 1).parameters);
}

// fp8 (delayed scaling: no scales) on layout A [F8]. Weights: 2 B of fp8
// copies of every GEMM weight, attention's 4h^2 and the 8 local experts',
// a layer. Activations a layer: attention's input 1 B instead of 2
// (-1 sbh), the output projection's fp8 copy (+1 sbh), the router's
// 16-bit input unchanged; every local expert's rows padded to a multiple
// of 16, at most 15 x 8 = 120 more copies (2168), each saving its input
// in 1 B and its second GEMM's input in 1 B: 2168 x (h + 5 x 512) in
// place of 2048 x (2h + 6 x 512) = 10 sbh. The all-to-all's received
// copies grow by the 120 padded ones (2h each, once a stage).
TEST(MoeTermsTest, Fp8SavesExpertInputsInOneByteAndCopiesExpertWeights) {
  const ModelShape m = SmallMoe();
  const Layout bf16 = EightGpus(1, 1, 1);
  Layout fp8 = bf16;
  fp8.fp8 = true;
  const StageFigures plain = StageMemoryOf(m, bf16, 0, 2);
  const StageFigures f = StageMemoryOf(m, fp8, 0, 2);
  EXPECT_DOUBLE_EQ(f.weight_bytes - plain.weight_bytes,
                   2 * 2 * (4194304 + 8 * kExpert));
  const double layer = -kSbh + kSbh + 2168.0 * (1024 + 5 * 512) - 10 * kSbh;
  EXPECT_DOUBLE_EQ(f.activation_bytes - plain.activation_bytes,
                   2 * layer + 2 * 1024.0 * 120);

  // moe_act recomputation under fp8: the second GEMM saves the 16-bit
  // output it recomputes (experts.py), so the layer keeps neither.
  Layout act = fp8;
  act.recompute = RecomputeKind::kSelective;
  act.recompute_moe_act = true;
  EXPECT_DOUBLE_EQ(f.activation_bytes -
                       StageMemoryOf(m, act, 0, 2).activation_bytes,
                   2 * 2168.0 * 512);

  // An MTP layer adds its own layer's and its h x 2h projection's copies.
  ModelShape mtp = m;
  mtp.mtp_layers = 1;
  EXPECT_DOUBLE_EQ(StageMemoryOf(mtp, fp8, 0, 2).weight_bytes -
                       StageMemoryOf(mtp, bf16, 0, 2).weight_bytes,
                   2 * (3 * (4194304 + 8 * kExpert) + 2 * 1024.0 * 1024));
}

// [DS] The delayed recipe's amax history (999 rows and a scale: 4000 B a
// quantizer, 5 a GEMM) in every fp8 module: an MoE layer's attention (2
// GEMMs) and its local experts' FC1 and FC2 grouped modules, one GEMM an
// expert (8 on layout A, 2 over EP 4); MLA's 5 projections (4 with the
// down ones fused); an MTP layer's and its projection's. Selective "moe"
// recomputation copies the experts' 3 forward quantizers a GEMM.
TEST(MoeTermsTest, DelayedScalingHistoriesCountEveryLocalExpertsGemms) {
  const ModelShape m = SmallMoe();
  auto history = [](const ModelShape& shape, Layout l) {
    const double none = StageMemoryOf(shape, l, 0, 2).weight_bytes;
    l.fp8_amax_history = 999;
    return StageMemoryOf(shape, l, 0, 2).weight_bytes - none;
  };
  Layout fp8 = EightGpus(1, 1, 1);
  fp8.fp8 = true;
  EXPECT_DOUBLE_EQ(history(m, fp8), 2 * (2 + 2 * 8) * 5 * 4000.0);
  Layout ep4 = EightGpus(1, 4, 1);
  ep4.fp8 = true;
  EXPECT_DOUBLE_EQ(history(m, ep4), 2 * (2 + 2 * 2) * 5 * 4000.0);
  ModelShape mtp = m;
  mtp.mtp_layers = 1;
  EXPECT_DOUBLE_EQ(history(mtp, fp8) - history(m, fp8),
                   (2 + 2 * 8 + 1) * 5 * 4000.0);

  ModelShape mla = SmallMla();
  EXPECT_DOUBLE_EQ(history(mla, fp8), 2 * (5 + 2) * 5 * 4000.0);
  mla.mla_fused_down_projection = true;
  EXPECT_DOUBLE_EQ(history(mla, fp8), 2 * (4 + 2) * 5 * 4000.0);

  // What recomputation adds to the activations, one micro-batch in flight
  // (p = 1): "moe" copies the experts' histories; core attention runs no
  // fp8 GEMM and copies nothing.
  auto copies = [&m](Layout l) {
    const double none = StageMemoryOf(m, l, 0, 2).activation_bytes;
    l.fp8_amax_history = 999;
    return StageMemoryOf(m, l, 0, 2).activation_bytes - none;
  };
  Layout moe = fp8;
  moe.recompute = RecomputeKind::kSelective;
  moe.recompute_core_attn = false;
  moe.recompute_moe = true;
  EXPECT_DOUBLE_EQ(copies(moe), 2 * (2 * 8) * 3 * 4000.0);
  Layout attention = moe;
  attention.recompute_moe = false;
  attention.recompute_core_attn = true;
  EXPECT_DOUBLE_EQ(copies(attention), 0);
}

// TransformerEngine's GroupedTensor path (MoeConfig.grouped_tensor) pads
// every local expert's rows to 256 in bf16 too: 255 x 8 = 2040 more copies
// on layout A, each keeping its 16-bit input and the fused SwiGLU's 6 B a
// unit of expert width (2h + 6 x 512) in each of the 2 layers, and the
// all-to-all's received copies grow by them (2h each, once a stage).
// Under fp8, 256 replaces fp8's 16: 2040 - 120 more, in fp8's bytes.
TEST(MoeTermsTest, GroupedTensorPadsEveryLocalExpertTo256Rows) {
  const ModelShape m = SmallMoe();
  const Layout plain = EightGpus(1, 1, 1);
  Layout grouped = plain;
  grouped.grouped_tensor = true;
  EXPECT_DOUBLE_EQ(StageMemoryOf(m, grouped, 0, 2).activation_bytes -
                       StageMemoryOf(m, plain, 0, 2).activation_bytes,
                   2 * 2040.0 * (2 * 1024 + 6 * 512) + 2 * 1024.0 * 2040);
  Layout fp8 = plain;
  fp8.fp8 = true;
  Layout fp8_grouped = fp8;
  fp8_grouped.grouped_tensor = true;
  EXPECT_DOUBLE_EQ(StageMemoryOf(m, fp8_grouped, 0, 2).activation_bytes -
                       StageMemoryOf(m, fp8, 0, 2).activation_bytes,
                   2 * 1920.0 * (1024 + 5 * 512) + 2 * 1024.0 * 1920);
  EXPECT_EQ(ExpertRowAlign(plain), 0);
  EXPECT_EQ(ExpertRowAlign(fp8), 16);
  EXPECT_EQ(ExpertRowAlign(fp8_grouped), 256);
}

// MXFP8 (1/32 B of scales an element, rows padded to 32) with shared
// experts of width 1024: their second GEMM saves its input in 33/32 B
// (-31/32 sb x 1024) and their first an fp8 copy of the pre-MLP norm's
// output (+33/32 sbh) beside the router's 16-bit one; their weights
// 3 x h x 1024 get fp8 copies too.
TEST(MoeTermsTest, Fp8SharedExpertsSaveAnFp8CopyBesideTheRouters) {
  ModelShape m = SmallMoe();
  m.shared_ffn = 1024;
  ModelShape routed_only = SmallMoe();
  Layout l = EightGpus(1, 1, 1);
  l.fp8 = true;
  l.fp8_scale_bytes = l.fp8_weight_scale_bytes = 1.0 / 32;
  l.fp8_align = 32;
  const Layout bf16 = EightGpus(1, 1, 1);
  const double shared_bf16 =
      StageMemoryOf(m, bf16, 0, 2).activation_bytes -
      StageMemoryOf(routed_only, bf16, 0, 2).activation_bytes;
  EXPECT_DOUBLE_EQ(shared_bf16, 2 * 8 * kSbh);  // SwiGLU 8 B a unit
  EXPECT_DOUBLE_EQ(StageMemoryOf(m, l, 0, 2).activation_bytes -
                       StageMemoryOf(routed_only, l, 0, 2).activation_bytes,
                   shared_bf16 + 2 * (-31.0 / 32 + 33.0 / 32) * kSbh);
  // Beside the padding of one more bucket the shared experts' weights
  // bring to the buffer (memory_model.cc [BP]).
  const StageFigures shared = StageMemoryOf(m, l, 0, 2);
  const StageFigures routed = StageMemoryOf(routed_only, l, 0, 2);
  EXPECT_DOUBLE_EQ(shared.weight_bytes - routed.weight_bytes -
                       2 * (shared.padding_elements - routed.padding_elements),
                   2 * 3 * 1024.0 * 1024 * (2 + 2 * 33.0 / 32));
}

// Shared experts are Megatron's dense MLP (SharedExpertMLP): under the
// fused SwiGLU [FS] they keep 6 B a unit of their width, 2 x 1024 = 2 sbh
// a layer less; the routed experts' fused term (6 already) is unchanged.
TEST(MoeTermsTest, FusedSwigluSharedExpertsKeepSixBytes) {
  ModelShape m = SmallMoe();
  m.shared_ffn = 1024;
  const ModelShape routed_only = SmallMoe();
  Layout l = EightGpus(1, 1, 1);
  l.fused_swiglu = true;
  const Layout paper = EightGpus(1, 1, 1);
  EXPECT_DOUBLE_EQ(StageMemoryOf(m, l, 0, 2).activation_bytes -
                       StageMemoryOf(routed_only, l, 0, 2).activation_bytes,
                   2 * 6 * kSbh);
  EXPECT_DOUBLE_EQ(StageMemoryOf(routed_only, l, 0, 2).activation_bytes,
                   StageMemoryOf(routed_only, paper, 0, 2).activation_bytes);
}

// [SG] The shared experts' gate: output * sigmoid(score) keeps the shared
// MLP's output, this rank's 1024 tokens x h x 2 B = 2 sbh a layer (t = 1
// here; with t = 2 and sequence parallelism, half); nothing under the
// shared_experts checkpoint. Its h parameters a layer are counted apart.
TEST(MoeTermsTest, SharedExpertGateKeepsTheSharedOutput) {
  ModelShape m = SmallMoe();
  m.shared_ffn = 1024;
  Layout l = EightGpus(1, 1, 1);
  const double ungated = StageMemoryOf(m, l, 0, 2).activation_bytes;
  m.shared_gate = true;
  EXPECT_DOUBLE_EQ(StageMemoryOf(m, l, 0, 2).activation_bytes,
                   ungated + 2 * 2 * kSbh);
  Layout tp = EightGpus(2, 1, 2);
  tp.sequence_parallel = true;
  ModelShape plain = m;
  plain.shared_gate = false;
  EXPECT_DOUBLE_EQ(StageMemoryOf(m, tp, 0, 2).activation_bytes -
                       StageMemoryOf(plain, tp, 0, 2).activation_bytes,
                   2 * kSbh);
  l.recompute = RecomputeKind::kSelective;
  l.recompute_shared_experts = true;
  EXPECT_DOUBLE_EQ(StageMemoryOf(m, l, 0, 2).activation_bytes,
                   StageMemoryOf(plain, l, 0, 2).activation_bytes);
}

// [IJ] --moe-input-jitter-eps: the noise, this rank's 1024 tokens x h x
// 2 B, 2 sbh a layer (the jittered input replaces the norm's output the
// router kept); beside shared experts, which keep that output themselves,
// the jittered input too: 4 sbh (as measured on an H100, session 33), and
// the noise alone again when the shared experts are recomputed; nothing
// under the moe checkpoint.
TEST(MoeTermsTest, InputJitterKeepsTheNoiseAndTheJitteredInput) {
  // The activation bytes jitter adds to `shape` under `layout`.
  auto jitter_adds = [](ModelShape shape, const Layout& layout) {
    shape.input_jitter = false;
    const double plain = StageMemoryOf(shape, layout, 0, 2).activation_bytes;
    shape.input_jitter = true;
    return StageMemoryOf(shape, layout, 0, 2).activation_bytes - plain;
  };
  ModelShape m = SmallMoe();
  ASSERT_EQ(m.shared_ffn, 0);
  const Layout l = EightGpus(1, 1, 1);
  EXPECT_DOUBLE_EQ(jitter_adds(m, l), 2 * 2 * kSbh);
  ModelShape shared = SmallMoe();
  shared.shared_ffn = 512;
  EXPECT_DOUBLE_EQ(jitter_adds(shared, l), 2 * 4 * kSbh);
  Layout recomputed = l;
  recomputed.recompute = RecomputeKind::kSelective;
  recomputed.recompute_shared_experts = true;
  EXPECT_DOUBLE_EQ(jitter_adds(shared, recomputed), 2 * 2 * kSbh);
  m.input_jitter = true;
  Layout moe = l;
  moe.recompute = RecomputeKind::kSelective;
  moe.recompute_moe = true;
  const ModelShape none = SmallMoe();
  EXPECT_DOUBLE_EQ(StageMemoryOf(m, moe, 0, 2).activation_bytes,
                   StageMemoryOf(none, moe, 0, 2).activation_bytes);
}

// [SO] --moe-shared-expert-overlap: with TP 2 and sequence parallelism the
// shared experts' FC1 saves the all-gathered input, the whole sequence's
// 1024 tokens x h x 2 B = 2 sbh a layer beside the shard the router
// keeps. At TP 1, or without sequence parallelism, it is the same tensor.
TEST(MoeTermsTest, SharedExpertOverlapKeepsTheGatheredInput) {
  ModelShape m = SmallMoe();
  m.shared_ffn = 1024;
  ModelShape overlap = m;
  overlap.shared_overlap = true;
  Layout tp = EightGpus(2, 1, 2);
  tp.sequence_parallel = true;
  EXPECT_DOUBLE_EQ(StageMemoryOf(overlap, tp, 0, 2).activation_bytes -
                       StageMemoryOf(m, tp, 0, 2).activation_bytes,
                   2 * 2 * kSbh);
  tp.sequence_parallel = false;
  EXPECT_DOUBLE_EQ(StageMemoryOf(overlap, tp, 0, 2).activation_bytes,
                   StageMemoryOf(m, tp, 0, 2).activation_bytes);
  const Layout one = EightGpus(1, 1, 1);
  EXPECT_DOUBLE_EQ(StageMemoryOf(overlap, one, 0, 2).activation_bytes,
                   StageMemoryOf(m, one, 0, 2).activation_bytes);
}

// The EP all-to-all overlap: one more warm-up forward (schedules.py) and
// the combined steps' forward beside a backward: one more micro-batch (or
// chunk) in flight, still capped by the step's m x v.
TEST(MoeTermsTest, ExpertOverlapHoldsOneMoreMicrobatch) {
  Layout l = EightGpus(1, 2, 1);
  l.pipeline = 4;
  l.virtual_stages = 2;
  EXPECT_DOUBLE_EQ(MicrobatchesInFlight(l, 0), 2 * 3 + 1 * 4 + 1);
  l.ep_overlap = true;
  EXPECT_DOUBLE_EQ(MicrobatchesInFlight(l, 0), 2 * 3 + 1 * 4 + 2);
  EXPECT_DOUBLE_EQ(MicrobatchesInFlight(l, 3), 1 * 4 + 2);
  l.microbatches = 5;  // at most 5 x 2 chunks
  EXPECT_DOUBLE_EQ(MicrobatchesInFlight(l, 0), 10);
  // Without pipelining the combined schedule holds two micro-batches.
  Layout one = EightGpus(1, 2, 1);
  one.ep_overlap = true;
  EXPECT_DOUBLE_EQ(MicrobatchesInFlight(one, 0), 2);
  const StageFigures with = StageMemoryOf(SmallMoe(), one, 0, 2);
  one.ep_overlap = false;
  const StageFigures without = StageMemoryOf(SmallMoe(), one, 0, 2);
  // The layers' activations twice; the LM head's logits once (the
  // combined step's backward has left the head before its forward reaches
  // it).
  EXPECT_GT(with.activation_bytes, without.activation_bytes);
}

// Which middle ranks can peak: rank 1, the rank holding the first MoE
// layer and the one after it, never more than three, whatever the layer
// pattern (a model of 511 dense layers and one MoE layer over PP 512
// would otherwise have every rank evaluated in every layout of a plan).
TEST(MoeTermsTest, AtMostThreeMiddleRanksCanPeak) {
  auto ranks = [](uint32_t p, uint32_t boundary) {
    const PeakRanks r = MiddlePeakRanks(p, boundary);
    return std::vector<uint32_t>(r.rank, r.rank + r.count);
  };
  EXPECT_EQ(ranks(8, 0), (std::vector<uint32_t>{1}));   // all-MoE middles
  EXPECT_EQ(ranks(8, 1), (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(ranks(8, 2), (std::vector<uint32_t>{1, 2, 3}));
  EXPECT_EQ(ranks(8, 6), (std::vector<uint32_t>{1, 6}));
  EXPECT_EQ(ranks(8, 7), (std::vector<uint32_t>{1}));   // all-dense middles
  EXPECT_EQ(ranks(512, 510), (std::vector<uint32_t>{1, 510}));
  EXPECT_TRUE(ranks(2, 1).empty());
  // DeepSeek-V3 as "Et|(tt|)*30mL": rank 0's first chunk layer 0, rank 1's
  // layers 1-2 (dense), rank 2's 3-4: the first MoE layer (3) on rank 2.
  EXPECT_EQ(RankHoldingLayer(3, 1, 2, 0, 8), 2u);
  // Even chunks of 4 over p = 4 (rounds of 16): layer 21 is in the second
  // round, on rank 1; a layer past the last rank's clamps to p - 1.
  EXPECT_EQ(RankHoldingLayer(21, 4, 4, 16, 4), 1u);
  EXPECT_EQ(RankHoldingLayer(40, 4, 4, 0, 4), 3u);
}

// One multi-token-prediction layer on the (only) stage: an h x 2h
// projection, two norms, an MoE layer and the block's final norm; per
// micro-batch the layer's 30 sbh + router, the projection's 2h input and
// the norms' inputs (8 sbh), and a second LM head (4 sbh + 4sbv).
TEST(MoeTermsTest, MultiTokenPredictionAddsALayerAndAHead) {
  ModelShape m = SmallMoe();
  const Layout l = EightGpus(1, 1, 1);
  const StageFigures without = StageMemoryOf(m, l, 0, 2);
  m.mtp_layers = 1;
  const StageFigures with = StageMemoryOf(m, l, 0, 2);
  EXPECT_DOUBLE_EQ(with.parameters - without.parameters,
                   2 * 1024.0 * 1024 + 2048 +
                       (4194304 + 2048 + 8192 + 8 * kExpert) + 1024);
  EXPECT_DOUBLE_EQ(with.activation_bytes - without.activation_bytes,
                   30 * kSbh + kRouting * 1024 + 8 * kSbh + 4 * kSbh +
                       4 * 1024 * 32000.0);
  EXPECT_DOUBLE_EQ(TotalParameters(m) - 2 * (4194304 + 2048 + 8192 +
                                             8 * kExpert) -
                       2 * kVocab - 1024,
                   2 * 1024.0 * 1024 + 2048 +
                       (4194304 + 2048 + 8192 + 8 * kExpert) + 1024);
}

// [OS] Lion from core 0.18.0 on (and Muon): the router's matrix, the
// experts' and an MTP layer's projection are Lion's (8 B with the master
// weight); the norms (two a layer, the final one, an MTP layer's three
// more) and the vocabulary's matrices are Adam's (12 B). Off the
// distributed optimizer, as Megatron runs Lion: nothing sharded.
TEST(MoeTermsTest, LionAndMuonTrainTheRoutersAndExpertsMatricesAdamTheRest) {
  ModelShape m = SmallMoe();
  Layout l = EightGpus(1, 1, 1);
  l.distributed_optimizer = false;
  l.optimizer = v1::OPTIMIZER_LION;
  l.lion_scalars = LionScalarOptimizer::kAdam;
  const double layer = 4194304 + 2048 + 8192 + 8 * kExpert;
  double all = 2 * layer + 2 * kVocab + 1024;
  double adam = 2 * 2048 + 1024 + 2 * kVocab;
  EXPECT_DOUBLE_EQ(StageMemoryOf(m, l, 0, 2).optimizer_bytes,
                   8 * all + 4 * adam);
  m.mtp_layers = 1;
  all += 2 * 1024.0 * 1024 + 3072 + layer;
  adam += 3072 + 2048;
  EXPECT_DOUBLE_EQ(StageMemoryOf(m, l, 0, 2).optimizer_bytes,
                   8 * all + 4 * adam);
  // [MU] Muon trains the same matrices (its momentum) and leaves the same
  // rest to Adam.
  l.optimizer = v1::OPTIMIZER_MUON;
  EXPECT_DOUBLE_EQ(StageMemoryOf(m, l, 0, 2).optimizer_bytes,
                   8 * all + 4 * adam);
}

// Where the routing probabilities are applied (MoeConfig.ProbsApplied).
// Core 0.12.0's unpermute keeps the weighted outputs: the combine's
// 2 x 1024 copies of 2h = 4 sbh a layer; later releases apply them in
// the fused SwiGLU and keep nothing more. An unknown release counts the
// larger, layer by layer.
TEST(MoeTermsTest, ProbabilitiesAppliedInTheExpertsKeepNoUnpermuteCopy) {
  const Layout l = EightGpus(1, 8, 1);
  ModelShape m = SmallMoe();
  const double unknown = StageMemoryOf(m, l, 0, 2).activation_bytes;
  m.probs_applied = v1::MoeConfig::PROBS_APPLIED_AT_UNPERMUTE;
  EXPECT_DOUBLE_EQ(StageMemoryOf(m, l, 0, 2).activation_bytes, unknown);
  m.probs_applied = v1::MoeConfig::PROBS_APPLIED_IN_EXPERTS;
  const double in_experts = StageMemoryOf(m, l, 0, 2).activation_bytes;
  EXPECT_DOUBLE_EQ(in_experts, unknown - 2 * 4 * kSbh);
  // An unfused activation (the legacy GroupedMLP, interleaved halves)
  // keeps its output apart (8 B a unit, not 6), and once more for the
  // multiply after it (10): 2048 copies x 4 B x 512 = 4 sbh a layer.
  m.expert_activation_unfused = true;
  EXPECT_DOUBLE_EQ(StageMemoryOf(m, l, 0, 2).activation_bytes,
                   in_experts + 2 * 4 * kSbh);
  // [TA] TransformerEngine's op keeps only its input (6), and the
  // multiply its output (8): 2 sbh a layer over the fused kernel; the
  // unfused setting, where also given, wins.
  m.expert_activation_te_op = true;
  EXPECT_DOUBLE_EQ(StageMemoryOf(m, l, 0, 2).activation_bytes,
                   in_experts + 2 * 4 * kSbh);
  m.expert_activation_unfused = false;
  EXPECT_DOUBLE_EQ(StageMemoryOf(m, l, 0, 2).activation_bytes,
                   in_experts + 2 * 2 * kSbh);
  // Core 0.12.0's unpermute applies the probabilities: no multiply after
  // the op, which keeps what the kernel keeps.
  m.probs_applied = v1::MoeConfig::PROBS_APPLIED_AT_UNPERMUTE;
  EXPECT_DOUBLE_EQ(StageMemoryOf(m, l, 0, 2).activation_bytes, unknown);
  m.probs_applied = v1::MoeConfig::PROBS_APPLIED_IN_EXPERTS;
  m.expert_activation_te_op = false;
  m.expert_activation_unfused = true;
  // Core 0.12.0's unfused activation: 8 B and the unpermute copy.
  m.probs_applied = v1::MoeConfig::PROBS_APPLIED_AT_UNPERMUTE;
  EXPECT_DOUBLE_EQ(StageMemoryOf(m, l, 0, 2).activation_bytes,
                   unknown + 2 * 2 * kSbh);
  // ... which the moe_act checkpoint recomputes.
  Layout act = l;
  act.recompute = RecomputeKind::kSelective;
  act.recompute_moe_act = true;
  m.probs_applied = v1::MoeConfig::PROBS_APPLIED_AT_UNPERMUTE;
  const double old_act = StageMemoryOf(m, act, 0, 2).activation_bytes;
  m.probs_applied = v1::MoeConfig::PROBS_APPLIED_IN_EXPERTS;
  EXPECT_DOUBLE_EQ(StageMemoryOf(m, act, 0, 2).activation_bytes,
                   old_act - 2 * 4 * kSbh);
}

// [QG] The interleaved halves run TEGroupedMLP's glu(), whose x_linear +
// offset is a tensor of its own: 2 B a unit more than the legacy
// GroupedMLP (12, not 10): 2048 copies x 2 B x 512 = 2 sbh a layer; with
// --activation-func-clamp-value the clamped gate, 2 sbh more. The legacy
// GroupedMLP's glu clamps nothing; under the moe_act checkpoint neither
// is kept.
TEST(MoeTermsTest, TheExpertsGluKeepsItsLinearHalfPlusOffset) {
  const Layout l = EightGpus(1, 8, 1);
  ModelShape m = SmallMoe();
  m.probs_applied = v1::MoeConfig::PROBS_APPLIED_IN_EXPERTS;
  m.expert_activation_unfused = true;
  const double legacy = StageMemoryOf(m, l, 0, 2).activation_bytes;
  m.activation_clamp = true;
  EXPECT_DOUBLE_EQ(StageMemoryOf(m, l, 0, 2).activation_bytes, legacy);
  m.activation_clamp = false;
  m.expert_glu_linear_copy = true;
  EXPECT_DOUBLE_EQ(StageMemoryOf(m, l, 0, 2).activation_bytes,
                   legacy + 2 * 2 * kSbh);
  m.activation_clamp = true;
  EXPECT_DOUBLE_EQ(StageMemoryOf(m, l, 0, 2).activation_bytes,
                   legacy + 2 * 4 * kSbh);
  Layout act = l;
  act.recompute = RecomputeKind::kSelective;
  act.recompute_moe_act = true;
  const double recomputed = StageMemoryOf(m, act, 0, 2).activation_bytes;
  m.activation_clamp = false;
  m.expert_glu_linear_copy = false;
  EXPECT_DOUBLE_EQ(StageMemoryOf(m, act, 0, 2).activation_bytes, recomputed);
  // Without the unfused activation the flag does nothing (the fused
  // kernel runs).
  m.expert_activation_unfused = false;
  const double fused = StageMemoryOf(m, l, 0, 2).activation_bytes;
  m.expert_glu_linear_copy = true;
  m.activation_clamp = true;
  EXPECT_DOUBLE_EQ(StageMemoryOf(m, l, 0, 2).activation_bytes, fused);
}

// [QF] Quick-GeGLU experts with biases run the fused bias-activation
// (Megatron's and gpt-oss's setting): 6 B a unit of expert width a routed
// copy, the fused SwiGLU's, where the unfused glu() and the
// probabilities' multiply keep 12; with a clamp 10 (the clamped halves
// joined outside the fused function) against 14. 2048 copies x 512 units
// = sbh, so the gaps are 6 and 4 sbh a layer, 2 layers.
TEST(MoeTermsTest, QuickGegluExpertsWithBiasesRunFused) {
  const Layout l = EightGpus(1, 8, 1);
  ModelShape m = SmallMoe();
  m.probs_applied = v1::MoeConfig::PROBS_APPLIED_IN_EXPERTS;
  m.quick_geglu = true;
  m.linear_bias = true;
  const double fused = StageMemoryOf(m, l, 0, 2).activation_bytes;
  m.expert_activation_unfused = true;  // --no-bias-gelu-fusion
  const double unfused = StageMemoryOf(m, l, 0, 2).activation_bytes;
  EXPECT_DOUBLE_EQ(unfused - fused, 2 * 6 * kSbh);
  m.activation_clamp = true;
  const double unfused_clamped = StageMemoryOf(m, l, 0, 2).activation_bytes;
  m.expert_activation_unfused = false;
  const double fused_clamped = StageMemoryOf(m, l, 0, 2).activation_bytes;
  EXPECT_DOUBLE_EQ(fused_clamped - fused, 2 * 4 * kSbh);
  EXPECT_DOUBLE_EQ(unfused_clamped - fused_clamped, 2 * 4 * kSbh);
  // Fused and SwiGLU's fused kernel keep the same, unclamped.
  ModelShape swiglu = SmallMoe();
  swiglu.probs_applied = v1::MoeConfig::PROBS_APPLIED_IN_EXPERTS;
  swiglu.linear_bias = true;
  EXPECT_DOUBLE_EQ(StageMemoryOf(swiglu, l, 0, 2).activation_bytes, fused);
  // Without biases the fusion is off: glu() as before.
  m.linear_bias = false;
  EXPECT_DOUBLE_EQ(StageMemoryOf(m, l, 0, 2).activation_bytes,
                   unfused_clamped);
}

// With wide unfused experts the in-expert multiply outweighs the
// unpermute copy (2 B x 4096 > 2h = 2048 B a copy): an unknown release
// counts it, not the 0.12.0 term.
TEST(MoeTermsTest, AnUnknownReleaseCountsTheLargerTerm) {
  const Layout l = EightGpus(1, 8, 1);
  ModelShape m = SmallMoe();
  m.expert_ffn = 4096;
  m.ungated_mlp = true;
  const double unknown = StageMemoryOf(m, l, 0, 2).activation_bytes;
  m.probs_applied = v1::MoeConfig::PROBS_APPLIED_IN_EXPERTS;
  const double in_experts = StageMemoryOf(m, l, 0, 2).activation_bytes;
  m.probs_applied = v1::MoeConfig::PROBS_APPLIED_AT_UNPERMUTE;
  const double at_unpermute = StageMemoryOf(m, l, 0, 2).activation_bytes;
  EXPECT_DOUBLE_EQ(unknown, in_experts);
  // 2048 copies x (2 x 4096 - 2h) a layer.
  EXPECT_DOUBLE_EQ(in_experts - at_unpermute, 2 * 2048 * (8192.0 - 2048));
}

// --moe-apply-probs-on-input (top-1): the multiply before FC1 keeps the
// unweighted input, 2h a copy on the experts' rank, so it grows with the
// load; core 0.12.0's unpermute copy stays on the tokens' rank.
TEST(MoeTermsTest, ProbabilitiesOnTheInputKeepTheUnweightedInput) {
  ModelShape m = SmallMoe();
  m.topk = 1;
  Layout l = EightGpus(1, 8, 1);
  m.probs_applied = v1::MoeConfig::PROBS_APPLIED_IN_EXPERTS;
  const double in_experts = StageMemoryOf(m, l, 0, 2).activation_bytes;
  m.probs_applied = v1::MoeConfig::PROBS_APPLIED_ON_INPUT;
  const StageFigures on_input = StageMemoryOf(m, l, 0, 2);
  // 1024 copies x 2h = 2 sbh a layer.
  EXPECT_DOUBLE_EQ(on_input.activation_bytes, in_experts + 2 * 2 * kSbh);
  m.probs_applied = v1::MoeConfig::PROBS_APPLIED_AT_UNPERMUTE;
  const StageFigures at_unpermute = StageMemoryOf(m, l, 0, 2);
  EXPECT_DOUBLE_EQ(at_unpermute.activation_bytes, on_input.activation_bytes);
  EXPECT_GT(on_input.imbalance_bytes, at_unpermute.imbalance_bytes);
}

// Core 0.12.0's allgather dispatcher weights the copies its experts ran:
// with ETP 2 (each expert split over two ranks, both given every copy)
// twice the tokens' k copies.
TEST(MoeTermsTest, AllgatherWeightsTheCopiesItsExpertsRan) {
  ModelShape m = SmallMoe();
  Layout l = EightGpus(2, 4, 2);
  l.allgather_dispatcher = true;
  m.probs_applied = v1::MoeConfig::PROBS_APPLIED_IN_EXPERTS;
  const double in_experts = StageMemoryOf(m, l, 0, 2).activation_bytes;
  m.probs_applied = v1::MoeConfig::PROBS_APPLIED_AT_UNPERMUTE;
  // 512 tokens a rank (SP over t = 2), x 2 (ETP) x k = 2048 copies of 2h.
  EXPECT_DOUBLE_EQ(StageMemoryOf(m, l, 0, 2).activation_bytes,
                   in_experts + 2 * 4 * kSbh);
}

}  // namespace
}  // namespace memgate
