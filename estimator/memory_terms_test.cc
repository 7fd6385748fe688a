// The terms beyond the paper's setting, each checked against a number
// derived by hand from its equation and source (memory_model.cc), on a
// small model chosen so the arithmetic is easy to follow:
//   L = 2, h = 1024, h_ffn = 4096, a = k = 8 (d = 128), v = 32000,
//   s = 1024, b = 1, one GPU (t = p = c = d = 1) unless a test says.
// sbh = 2^20 elements; one layer of the paper's Llama stores
// sbh(12 + 4k/a + 8h_ffn/h) = 48 sbh bytes in bf16.

#include <algorithm>
#include <cmath>
#include <vector>

#include "estimator/memory_model.h"
#include "estimator/moe_terms.h"
#include "gtest/gtest.h"

namespace memgate {
namespace {

constexpr double kSbh = 1024.0 * 1024;        // s*b*h
constexpr double kLayerBf16 = 48 * kSbh;      // the paper's layer, bf16
constexpr double kEmbeddingBf16 = 8 * kSbh;   // [P 3.2]
constexpr double kHeadBf16 = 4 * kSbh + 4 * 1024.0 * 32000;  // 4sbh(1+v/h)
// Unfused attention's terms at s = 1024 (a = k = 8, d = 128).
constexpr double kAs2b = 8 * 1024.0 * 1024;  // a*s^2*b
constexpr double kMask = 1024.0 * 1024;      // s^2 bool
constexpr double kQkvView = 4 * kSbh;        // 2(a + k)d sb, d = h / a

ModelShape Small() {
  ModelShape m;
  m.layers = 2;
  m.hidden = 1024;
  m.ffn_hidden = 4096;
  m.heads = 8;
  m.kv_heads = 8;
  m.vocab = 32000;
  return m;
}

Layout OneGpu() {
  Layout l;
  l.seq_length = 1024;
  l.micro_batch = 1;
  return l;
}

double Activations(const ModelShape& m, const Layout& l, uint32_t stage = 0,
                   double layers = 2) {
  return StageMemoryOf(m, l, stage, layers).activation_bytes;
}

// Per layer, attention 2h^2(1 + k/a) + SwiGLU 3h*h_ffn + norms 2h
// = 2*1024^2*2 + 3*1024*4096 + 2048 = 16,779,264; the embedding and the LM
// head 1024*32000 each, the final norm 1024.
constexpr double kLayerParams = 16779264;
constexpr double kModelParams = 2 * kLayerParams + 2 * 1024.0 * 32000 + 1024;

TEST(MemoryTermsTest, ThePaperSettingIsTheBaseline) {
  const StageFigures f = StageMemoryOf(Small(), OneGpu(), 0, 2);
  EXPECT_DOUBLE_EQ(f.parameters, kModelParams);
  EXPECT_DOUBLE_EQ(f.activation_bytes,
                   2 * kLayerBf16 + kEmbeddingBf16 + kHeadBf16);
}

// [MD]: fp32 8 + 8/d bytes a parameter; bf16 6 + 12/d; fp16 4 + 16/d,
// of which the fp32 gradient copy (4/d) lives through the step only
// (measured, [OS]): 4 + 12/d, and the copy above the freed activations at
// the step.
TEST(MemoryTermsTest, PrecisionSetsBytesPerParameterAndActivations) {
  Layout l = OneGpu();
  l.data = 4;  // distributed optimizer over 4 ranks
  l.precision = v1::PRECISION_FP32;
  StageFigures f = StageMemoryOf(Small(), l, 0, 2);
  // The buffers: the parameters and the distributed optimizer's padding
  // (memory_model.cc [BP]).
  const double buffer = kModelParams + f.padding_elements;
  EXPECT_DOUBLE_EQ(f.weight_bytes, 4 * buffer);
  EXPECT_DOUBLE_EQ(f.gradient_bytes, 4 * buffer);
  EXPECT_DOUBLE_EQ(f.optimizer_bytes, 8 * kModelParams / 4);
  // fp32 doubles every 2-byte activation; the fp32 logits stay 4sbv.
  EXPECT_DOUBLE_EQ(f.activation_bytes, 2 * 2 * kLayerBf16 +
                                           2 * kEmbeddingBf16 +
                                           2 * 4 * kSbh + 4 * 1024.0 * 32000);

  l.precision = v1::PRECISION_FP16;
  f = StageMemoryOf(Small(), l, 0, 2);
  EXPECT_DOUBLE_EQ(f.weight_bytes + f.gradient_bytes, 4 * buffer);
  EXPECT_DOUBLE_EQ(f.optimizer_bytes, 12 * kModelParams / 4);
  Layout whole = l;  // one optimizer rank: the copy above the activations
  whole.data = 1;
  const StageFigures one = StageMemoryOf(Small(), whole, 0, 2);
  EXPECT_DOUBLE_EQ(one.optimizer_step_bytes,
                   4 * kModelParams - one.activation_bytes);

  l.precision = v1::PRECISION_BF16_FP32_GRADS;
  f = StageMemoryOf(Small(), l, 0, 2);
  EXPECT_DOUBLE_EQ(f.weight_bytes + f.gradient_bytes, 6 * buffer);
  EXPECT_DOUBLE_EQ(f.optimizer_bytes, 12 * kModelParams / 4);
}

// SGD keeps momentum (4 B) beside the fp32 master weight (4 B).
TEST(MemoryTermsTest, SgdKeepsMomentumOnly) {
  Layout l = OneGpu();
  l.optimizer = v1::OPTIMIZER_SGD;
  EXPECT_DOUBLE_EQ(StageMemoryOf(Small(), l, 0, 2).optimizer_bytes,
                   8 * kModelParams);
  l.sgd_momentum = 0;
  EXPECT_DOUBLE_EQ(StageMemoryOf(Small(), l, 0, 2).optimizer_bytes,
                   4 * kModelParams);
}

// [OS] Lion keeps one fp32 momentum beside the fp32 master weight (8 B a
// parameter; Adam keeps 12) and at its step, once every activation is
// freed, makes a parameter's update: two fp32 copies of the largest, here
// the 1024 x 32000 embedding (a layer's linear weights are 16,777,216).
// 262,144,000 B against the 244 MB of activations it follows.
// Core 0.17's Lion, which trains every parameter.
TEST(MemoryTermsTest, LionKeepsOneMomentumAndMakesItsUpdateAtTheStep) {
  Layout l = OneGpu();
  l.optimizer = v1::OPTIMIZER_LION;
  l.lion_scalars = LionScalarOptimizer::kLion;
  const StageFigures f = StageMemoryOf(Small(), l, 0, 2);
  EXPECT_DOUBLE_EQ(f.optimizer_bytes, 8 * kModelParams);
  const double activations = 2 * kLayerBf16 + kEmbeddingBf16 + kHeadBf16;
  EXPECT_DOUBLE_EQ(f.activation_bytes, activations);
  EXPECT_DOUBLE_EQ(f.optimizer_step_bytes,
                   2 * 4 * 1024.0 * 32000 - activations);
  // A stage of layers alone (PP 3's middle one): a layer's linear weights
  // (attention's 4,194,304 and the MLP's 12,582,912) bound it.
  l.pipeline = 3;
  const StageFigures middle = StageMemoryOf(Small(), l, 1, 1);
  EXPECT_DOUBLE_EQ(middle.optimizer_step_bytes,
                   std::max(0.0, 2 * 4 * 16777216.0 - middle.activation_bytes));
  // Adam's fused step works in place.
  l = OneGpu();
  EXPECT_DOUBLE_EQ(StageMemoryOf(Small(), l, 0, 2).optimizer_step_bytes, 0);
}

// [MU] Muon keeps one fp32 momentum for each matrix and Adam's m and v
// for the rest (the vocabulary's two matrices, the five norms), beside
// the fp32 masters; with --muon-scalar-optimizer lion those take Lion's
// one momentum. At the step, once the activations are freed, its largest
// matrix's Newton-Schulz copies (FC1, 8192 x 1024, duplicated mode:
// muon_terms_test.cc) or, under a scalar Lion, the vocabulary's Lion
// update (two fp32 copies of 1024 x 32000) stand above them. s = 64
// keeps the activations below both.
TEST(MemoryTermsTest, MuonKeepsAMomentumForMatricesAndAdamForTheRest) {
  Layout l = OneGpu();
  l.seq_length = 64;
  l.distributed_optimizer = false;
  l.optimizer = v1::OPTIMIZER_MUON;
  const double adam = 2 * 1024.0 * 32000 + 5 * 1024;
  StageFigures f = StageMemoryOf(Small(), l, 0, 2);
  EXPECT_DOUBLE_EQ(f.optimizer_bytes, 8 * kModelParams + 4 * adam);
  EXPECT_DOUBLE_EQ(f.optimizer_step_bytes,
                   14 * 8192.0 * 1024 - f.activation_bytes);
  l.muon_scalar_lion = true;
  f = StageMemoryOf(Small(), l, 0, 2);
  EXPECT_DOUBLE_EQ(f.optimizer_bytes, 8 * kModelParams);
  EXPECT_DOUBLE_EQ(f.optimizer_step_bytes,
                   2 * 4 * 1024.0 * 32000 - f.activation_bytes);
}

// From core 0.18.0 on Megatron's Lion leaves the word embeddings, the LM
// head and every parameter that is not a matrix to Adam (12 B with the
// master weight, not 8): here the two 1024 x 32000 matrices and the five
// norms (2 a layer and the final one, 1024 each). A learned position
// embedding is a matrix Lion keeps. The vocabulary's update is then
// Adam's, in place: a layer's linear weights bound Lion's, below the
// activations it follows. Without a release memgate counts the larger of
// both: Adam's states and the vocabulary's Lion update.
TEST(MemoryTermsTest, LionLeavesTheVocabularyAndNormsToAdamFromCore0_18) {
  Layout l = OneGpu();
  l.optimizer = v1::OPTIMIZER_LION;
  l.lion_scalars = LionScalarOptimizer::kAdam;
  const double adam = 2 * 1024.0 * 32000 + 5 * 1024;
  StageFigures f = StageMemoryOf(Small(), l, 0, 2);
  EXPECT_DOUBLE_EQ(f.optimizer_bytes, 8 * kModelParams + 4 * adam);
  EXPECT_GT(f.activation_bytes, 2 * 4 * 16777216.0);
  EXPECT_DOUBLE_EQ(f.optimizer_step_bytes, 0);

  ModelShape positions = Small();
  positions.learned_positions = 2048;
  f = StageMemoryOf(positions, l, 0, 2);
  EXPECT_DOUBLE_EQ(f.optimizer_bytes,
                   8 * (kModelParams + 2048 * 1024) + 4 * adam);

  l.lion_scalars = LionScalarOptimizer::kEither;
  f = StageMemoryOf(Small(), l, 0, 2);
  EXPECT_DOUBLE_EQ(f.optimizer_bytes, 8 * kModelParams + 4 * adam);
  EXPECT_DOUBLE_EQ(f.optimizer_step_bytes,
                   2 * 4 * 1024.0 * 32000 - f.activation_bytes);
}

// [OS] A 16-bit gradient buffer (--grad-reduce-in-bf16) is copied to fp32
// at the step, the optimizer's share of it, after the activations are
// freed: 4 B a parameter (sharded over 4 ranks, 1 B) above them. fp32
// gradients need no copy; Megatron-FSDP makes none, nor does the
// precision-aware optimizer that hands over the buffer itself.
TEST(MemoryTermsTest, Bf16GradientsAreCopiedToFp32AtTheStep) {
  Layout l = OneGpu();
  l.precision = v1::PRECISION_BF16_BF16_GRADS;
  const double activations = 2 * kLayerBf16 + kEmbeddingBf16 + kHeadBf16;
  EXPECT_DOUBLE_EQ(StageMemoryOf(Small(), l, 0, 2).optimizer_step_bytes,
                   4 * kModelParams - activations);
  Layout fp32_grads = OneGpu();
  EXPECT_DOUBLE_EQ(
      StageMemoryOf(Small(), fp32_grads, 0, 2).optimizer_step_bytes, 0);
  Layout sharded = l;
  sharded.data = 4;
  EXPECT_DOUBLE_EQ(StageMemoryOf(Small(), sharded, 0, 2).optimizer_step_bytes,
                   0);  // 99 MB under 244 MB of activations
  Layout fsdp = l;
  fsdp.sharding = FsdpSharding::kNoShard;
  EXPECT_DOUBLE_EQ(StageMemoryOf(Small(), fsdp, 0, 2).optimizer_step_bytes, 0);
  Layout aware = OneGpu();
  aware.precision_aware = true;
  aware.main_grad_bytes = 2;
  EXPECT_DOUBLE_EQ(StageMemoryOf(Small(), aware, 0, 2).optimizer_step_bytes,
                   4 * kModelParams - activations);
  aware.decoupled_grads = true;
  EXPECT_DOUBLE_EQ(StageMemoryOf(Small(), aware, 0, 2).optimizer_step_bytes,
                   0);
}

// [EV] An evaluation's no-grad forward is bounded by what full
// recomputation of one layer a group stores for one of its micro-batches,
// and runs beside the step's fp32 gradient copies, which outlive the step.
// With the training's micro-batch and no copy it stays under the training
// peak (not worked out); beside the copies, or at a larger micro-batch,
// it is the bound less the training's activations.
TEST(MemoryTermsTest, AnEvaluationRunsItsForwardBesideTheGradientCopies) {
  Layout l = OneGpu();
  l.eval_micro_batch = 1;
  const StageFigures plain = StageMemoryOf(Small(), l, 0, 2);
  EXPECT_DOUBLE_EQ(plain.evaluation_bytes, 0);
  Layout bound = OneGpu();
  bound.recompute = RecomputeKind::kFullUniform;
  bound.recompute_layers = 1;
  const double one = StageMemoryOf(Small(), bound, 0, 2).activation_bytes;
  EXPECT_LT(one, plain.activation_bytes);
  Layout copied = l;
  copied.precision = v1::PRECISION_BF16_BF16_GRADS;
  const StageFigures f = StageMemoryOf(Small(), copied, 0, 2);
  EXPECT_DOUBLE_EQ(f.evaluation_bytes,
                   4 * kModelParams + one - f.activation_bytes);
  EXPECT_GT(f.evaluation_bytes, f.optimizer_step_bytes);
  // Four sequences a micro-batch where training takes one: the bound at 4.
  Layout larger = l;
  larger.eval_micro_batch = 4;
  bound.micro_batch = 4;
  EXPECT_DOUBLE_EQ(StageMemoryOf(Small(), larger, 0, 2).evaluation_bytes,
                   StageMemoryOf(Small(), bound, 0, 2).activation_bytes -
                       plain.activation_bytes);
  EXPECT_GT(StageMemoryOf(Small(), larger, 0, 2).evaluation_bytes, 0);
  // No evaluation (--eval-iters 0): nothing.
  larger.eval_micro_batch = 0;
  EXPECT_DOUBLE_EQ(StageMemoryOf(Small(), larger, 0, 2).evaluation_bytes, 0);
}

// [K 4.1]: a 1-byte mask after attention and after the MLP (2sbh a layer)
// and after the embedding (sbh).
TEST(MemoryTermsTest, HiddenDropoutKeepsOneByteMasks) {
  Layout l = OneGpu();
  l.hidden_dropout = 0.1;
  EXPECT_DOUBLE_EQ(Activations(Small(), l),
                   2 * (kLayerBf16 + 2 * kSbh) + kEmbeddingBf16 + kSbh +
                       kHeadBf16);
  // With TP 2 and sequence parallelism the masks split too.
  l.tensor = 2;
  const double layer = kLayerBf16 / 2 + 2 * kSbh / 2;
  EXPECT_DOUBLE_EQ(Activations(Small(), l),
                   2 * layer + (kEmbeddingBf16 + kSbh) / 2 + 4 * kSbh / 2 +
                       4 * 1024.0 * 32000 / 2);
}

// [FS] Megatron's fused SwiGLU keeps its input (the FC1 output, 4 B a
// unit of FFN width) and FC2 its own (2): 6 of the paper's 8, 2 h_ffn = 8h
// bytes a token less on Small's SwiGLU layer. GeLU keeps its 4 either way
// (validation refuses the flag there; the term ignores it).
TEST(MemoryTermsTest, FusedSwigluKeepsSixBytesAFfnColumn) {
  Layout l = OneGpu();
  const double base = kEmbeddingBf16 + kHeadBf16;
  l.fused_swiglu = true;
  EXPECT_DOUBLE_EQ(DenseMlpBytes(Small(), l), 6);
  EXPECT_DOUBLE_EQ(Activations(Small(), l), 2 * (kLayerBf16 - 8 * kSbh) + base);
  // Selective recomputation of the MLP keeps only its input either way.
  l.recompute = RecomputeKind::kSelective;
  l.recompute_core_attn = false;
  l.recompute_mlp = true;
  const double recomputed = Activations(Small(), l);
  l.fused_swiglu = false;
  EXPECT_DOUBLE_EQ(Activations(Small(), l), recomputed);
  ModelShape gelu = Small();
  gelu.ungated_mlp = true;
  l = OneGpu();
  const double gelu_paper = Activations(gelu, l);
  l.fused_swiglu = true;
  EXPECT_DOUBLE_EQ(DenseMlpBytes(gelu, l), 4);
  EXPECT_DOUBLE_EQ(Activations(gelu, l), gelu_paper);
}

// [QG] Megatron's unfused glu() (core 0.15 on) keeps x_linear + offset
// apart: 10 B a unit of FFN width, 2 h_ffn = 8h bytes a token more than
// the paper's 8 on Small's layer (h_ffn = 4h); a clamp keeps the clamped
// gate too (12). Selective recomputation of the MLP keeps its input only.
TEST(MemoryTermsTest, UnfusedGluKeepsTheLinearHalfPlusOffset) {
  Layout l = OneGpu();
  const double paper = Activations(Small(), l);
  l.glu_linear_copy = true;
  EXPECT_DOUBLE_EQ(DenseMlpBytes(Small(), l), 10);
  EXPECT_DOUBLE_EQ(Activations(Small(), l) - paper, 2 * 8 * kSbh);
  ModelShape clamped = Small();
  clamped.activation_clamp = true;
  EXPECT_DOUBLE_EQ(DenseMlpBytes(clamped, l), 12);
  l.recompute = RecomputeKind::kSelective;
  l.recompute_core_attn = false;
  l.recompute_mlp = true;
  Layout plain = l;
  plain.glu_linear_copy = false;
  EXPECT_DOUBLE_EQ(Activations(Small(), l), Activations(Small(), plain));
}

// [F8S] The activation's input (2 h_ffn elements) kept in fp8, 1 B an
// element whatever the training precision; FC2's input stays at the
// job's element size.
TEST(MemoryTermsTest, Fp8ActivationInputStoreKeepsOneByteAnElement) {
  Layout l = OneGpu();
  l.fused_swiglu = true;
  const double fused = Activations(Small(), l);
  l.activation_fp8_input_store = true;
  EXPECT_DOUBLE_EQ(DenseMlpBytes(Small(), l), 4);
  // Two layers, each 2 B a unit of FFN width less (Small: h_ffn = 4h).
  EXPECT_DOUBLE_EQ(fused - Activations(Small(), l), 2 * 2 * 4 * kSbh);
  l.precision = v1::PRECISION_FP32;
  EXPECT_DOUBLE_EQ(DenseMlpBytes(Small(), l), 2 + 4);
  l.activation_fp8_input_store = false;
  EXPECT_DOUBLE_EQ(DenseMlpBytes(Small(), l), 8 + 4);
}

// [K eq. 1]: without FlashAttention the softmax output is stored, 2as^2b,
// and with attention dropout its mask and output too: 5as^2b. Selective
// recomputation of core attention drops them [K 5]. Megatron's unfused
// attention [UA] also keeps, per layer: an s x s bool causal mask when the
// dataloader passes none; V as a view of the QKV output, which then stays
// whole (its Q and K parts, 2(a + k)d a token, beside the counted copies)
// when no expansion copies V (k = a) or the checkpoint saves it; and with
// query groups K and V expanded to a heads, 4(a - k)d a token more.
TEST(MemoryTermsTest, UnfusedAttentionStoresTheScores) {
  Layout l = OneGpu();
  l.unfused_attention = true;
  const double base = kEmbeddingBf16 + kHeadBf16;
  EXPECT_DOUBLE_EQ(Activations(Small(), l),
                   2 * (kLayerBf16 + 2 * kAs2b + kMask + kQkvView) + base);
  // The dataloader's mask instead: one b x s x s bool for the stage, the
  // layers share it.
  l.dataloader_mask = true;
  EXPECT_DOUBLE_EQ(Activations(Small(), l),
                   2 * (kLayerBf16 + 2 * kAs2b + kQkvView) + kMask + base);
  l.dataloader_mask = false;
  // Two query groups of four heads: K and V expanded (4(8 - 2)d sb =
  // 3sbh), no view kept; the layer itself counts 4kd sb = sbh, 3sbh less.
  ModelShape gqa = Small();
  gqa.kv_heads = 2;
  EXPECT_DOUBLE_EQ(Activations(gqa, l),
                   2 * (kLayerBf16 - 3 * kSbh + 2 * kAs2b + kMask + 3 * kSbh) +
                       base);
  l.attention_dropout = 0.1;
  EXPECT_DOUBLE_EQ(Activations(Small(), l),
                   2 * (kLayerBf16 + 5 * kAs2b + kMask + kQkvView) + base);
  l.recompute = RecomputeKind::kSelective;
  EXPECT_DOUBLE_EQ(Activations(Small(), l), 2 * (kLayerBf16 + kQkvView) + base);
  EXPECT_DOUBLE_EQ(Activations(gqa, l),
                   2 * (kLayerBf16 - 3 * kSbh + 2.5 * kSbh) + base);
  // With FlashAttention selective recomputation changes nothing.
  l.unfused_attention = false;
  EXPECT_DOUBLE_EQ(Activations(Small(), l), 2 * kLayerBf16 + base);
}

// [SK] Attention sinks: the sink is a column of scores appended before the
// softmax, whose output, s + 1 wide, stays whole: one column more a head
// (2 B x a x s x b), and nothing where the scores are not kept
// (core attention recomputed).
TEST(MemoryTermsTest, SinksWidenTheUnfusedSoftmaxByAColumn) {
  Layout l = OneGpu();
  l.unfused_attention = true;
  ModelShape sinks = Small();
  sinks.attention_sinks = true;
  EXPECT_DOUBLE_EQ(Activations(sinks, l) - Activations(Small(), l),
                   2 * (2.0 * 8 * 1024 * 1 * 1));
  l.recompute = RecomputeKind::kSelective;
  EXPECT_DOUBLE_EQ(Activations(sinks, l), Activations(Small(), l));
}

// [RU] Megatron's unfused RoPE keeps cos and sin for Q and for K in every
// layer: 4 tables of s/c x d in the activations' dtype, whole on every TP
// rank and one for all samples, except mRoPE's (one a sample). TE's fused
// RoPE (the default) keeps none; YaRN and mRoPE always run unfused;
// learned or no positions have no tables.
TEST(MemoryTermsTest, UnfusedRopeKeepsItsTables) {
  ModelShape rope = Small();
  rope.rotary_positions = true;
  Layout l = OneGpu();
  l.micro_batch = 2;
  const double fused = Activations(rope, l);
  l.rope_fusion_disabled = true;
  const double tables = 4 * 2 * 1024.0 * 128;  // a layer, bf16
  EXPECT_DOUBLE_EQ(Activations(rope, l) - fused, 2 * tables);
  Layout split = l;
  split.tensor = 2;
  split.context = 2;
  EXPECT_DOUBLE_EQ(UnfusedRopeTables(rope, split), tables / 2);
  ModelShape yarn = rope;
  yarn.rope_always_unfused = true;
  EXPECT_DOUBLE_EQ(UnfusedRopeTables(yarn, OneGpu()), tables);
  ModelShape mrope = yarn;
  mrope.rope_per_sample = true;
  EXPECT_DOUBLE_EQ(UnfusedRopeTables(mrope, l), 2 * tables);
  // Learned positions (or none): no rotary tables.
  EXPECT_DOUBLE_EQ(UnfusedRopeTables(Small(), l), 0);
  Layout fp32 = l;
  fp32.precision = v1::PRECISION_FP32;
  EXPECT_DOUBLE_EQ(UnfusedRopeTables(rope, fp32), 2 * tables);
  // MLA rotates its d_rope part only; recomputing "mla_up_proj" rotates
  // inside the checkpoint, which keeps no table (measured, session 36).
  ModelShape mla = rope;
  mla.mla = true;
  mla.qk_rope = 64;
  EXPECT_DOUBLE_EQ(UnfusedRopeTables(mla, l), tables / 2);  // d 128
  Layout up_proj = l;
  up_proj.recompute_mla_up_proj = true;
  EXPECT_DOUBLE_EQ(UnfusedRopeTables(mla, up_proj), 0);
  EXPECT_DOUBLE_EQ(UnfusedRopeTables(rope, up_proj), tables);
}

// [TS] TransformerEngine's unfused attention keeps its softmax's fp32
// output too where its fused softmax kernel cannot run (16-bit scores, 16
// < s < 16384, s a multiple of 8, b x a/t a multiple of 4): at s = 16384
// 4 bytes a score more (2 with dropout); at 1024, or in fp32 training
// (already fp32), nothing more; 2 heads a rank with one micro-batch, or a
// length not a multiple of 8, take the fp32 path too.
TEST(MemoryTermsTest, UnfusedAttentionsSoftmaxInFp32WhereTheKernelCannot) {
  const double base = kEmbeddingBf16 + kHeadBf16;
  Layout l = OneGpu();
  l.unfused_attention = true;
  EXPECT_FALSE(UnfusedAttentionKeeps(Small(), l).fp32_softmax);
  l.seq_length = 16 * 1024;  // sbh terms x16, s^2 terms x256
  ASSERT_TRUE(UnfusedAttentionKeeps(Small(), l).fp32_softmax);
  EXPECT_DOUBLE_EQ(Activations(Small(), l),
                   16 * (2 * (kLayerBf16 + kQkvView) + base) +
                       256 * 2 * ((2 + 4) * kAs2b + kMask));
  l.attention_dropout = 0.1;
  EXPECT_DOUBLE_EQ(Activations(Small(), l),
                   16 * (2 * (kLayerBf16 + kQkvView) + base) +
                       256 * 2 * ((5 + 2) * kAs2b + kMask));
  l.precision = v1::PRECISION_FP32;
  EXPECT_FALSE(UnfusedAttentionKeeps(Small(), l).fp32_softmax);
  l.precision = v1::PRECISION_BF16_FP32_GRADS;
  l.seq_length = 1020;
  EXPECT_TRUE(UnfusedAttentionKeeps(Small(), l).fp32_softmax);
  l.seq_length = 1024;
  l.tensor = 4;  // 2 heads a rank, one micro-batch
  EXPECT_TRUE(UnfusedAttentionKeeps(Small(), l).fp32_softmax);
  l.micro_batch = 2;
  EXPECT_FALSE(UnfusedAttentionKeeps(Small(), l).fp32_softmax);
  // Scores recomputed (selective): nothing kept, nothing more.
  l.micro_batch = 1;
  l.recompute = RecomputeKind::kSelective;
  l.recompute_core_attn = true;
  EXPECT_FALSE(UnfusedAttentionKeeps(Small(), l).fp32_softmax);
}

// [TS] NVTE_MASKED_SOFTMAX_FUSION=0 takes TransformerEngine's fused softmax
// away (softmax.py is_kernel_available returns False first): at s = 1024,
// where the kernel would run, the fp32 output is kept, 4 bytes a score
// more; Megatron's local attention (its own softmax) and fp32 training do
// not change.
TEST(MemoryTermsTest, NoMaskedSoftmaxFusionKeepsTheFp32SoftmaxAtAnyLength) {
  Layout l = OneGpu();
  l.unfused_attention = true;
  ASSERT_FALSE(UnfusedAttentionKeeps(Small(), l).fp32_softmax);
  const double fused = Activations(Small(), l);
  l.te_softmax_kernel_off = true;
  EXPECT_TRUE(UnfusedAttentionKeeps(Small(), l).fp32_softmax);
  EXPECT_DOUBLE_EQ(Activations(Small(), l), fused + 2 * 4 * kAs2b);
  l.precision = v1::PRECISION_FP32;
  EXPECT_FALSE(UnfusedAttentionKeeps(Small(), l).fp32_softmax);
  l.precision = v1::PRECISION_BF16_FP32_GRADS;
  l.local_attention = true;
  EXPECT_FALSE(UnfusedAttentionKeeps(Small(), l).fp32_softmax);
  // FlashAttention keeps no scores: nothing to cast.
  l.local_attention = l.unfused_attention = false;
  EXPECT_FALSE(UnfusedAttentionKeeps(Small(), l).fp32_softmax);
}

// [GA] Gemma 2's soft-capped attention under Megatron-Bridge: beside
// [UA]'s terms, tanh's output (2as^2b a layer) and an s x s bool mask a
// layer whether or not the dataloader sends one (the sliding window's);
// Megatron's global scores buffer is held outside the total, as [UA]'s. Its
// softmax is Megatron's FusedScaleMaskSoftmax, in fp32 unless 16 < s <=
// 4096, s a multiple of 4 and b x a/t a multiple of 4 (8 up to s = 128):
// TransformerEngine's range does not apply.
TEST(MemoryTermsTest, SoftCappedAttentionKeepsTheTanhAndItsMasks) {
  const double base = kEmbeddingBf16 + kHeadBf16;
  ModelShape gemma = Small();
  gemma.attention_softcapping = true;
  Layout l = OneGpu();
  l.unfused_attention = true;
  EXPECT_FALSE(UnfusedAttentionKeeps(gemma, l).fp32_softmax);
  EXPECT_DOUBLE_EQ(Activations(gemma, l),
                   2 * (kLayerBf16 + (2 + 2) * kAs2b + kMask + kQkvView) +
                       base);
  // The dataloader's mask is counted once more, the window's stay.
  l.dataloader_mask = true;
  EXPECT_DOUBLE_EQ(Activations(gemma, l),
                   2 * (kLayerBf16 + (2 + 2) * kAs2b + kMask + kQkvView) +
                       kMask + base);
  l.dataloader_mask = false;
  // At s = 8192 Megatron's kernel does not run (TransformerEngine's would):
  // the fp32 output, 4 bytes a score more. sbh terms x8, s^2 terms x64.
  l.seq_length = 8192;
  EXPECT_FALSE(UnfusedAttentionKeeps(Small(), l).fp32_softmax);
  ASSERT_TRUE(UnfusedAttentionKeeps(gemma, l).fp32_softmax);
  EXPECT_DOUBLE_EQ(Activations(gemma, l),
                   8 * (2 * (kLayerBf16 + kQkvView) + base) +
                       64 * 2 * ((2 + 4 + 2) * kAs2b + kMask));
  // s = 4092: a multiple of 4 within 4096 (Megatron's kernel), not of 8
  // (TransformerEngine's fp32 path).
  l.seq_length = 4092;
  EXPECT_FALSE(UnfusedAttentionKeeps(gemma, l).fp32_softmax);
  EXPECT_TRUE(UnfusedAttentionKeeps(Small(), l).fp32_softmax);
  // Up to s = 128 the kernel takes batches of 8: 4 heads a rank do not.
  l.seq_length = 128;
  l.tensor = 2;
  EXPECT_TRUE(UnfusedAttentionKeeps(gemma, l).fp32_softmax);
  l.seq_length = 256;
  EXPECT_FALSE(UnfusedAttentionKeeps(gemma, l).fp32_softmax);
  // Core attention recomputed: no scores, tanh or mask a layer.
  l.recompute = RecomputeKind::kSelective;
  l.recompute_core_attn = true;
  const UnfusedAttentionKept recomputed = UnfusedAttentionKeeps(gemma, l);
  EXPECT_FALSE(recomputed.capped_scores);
  EXPECT_FALSE(recomputed.causal_masks);
}

// [UA] Megatron's own attention (ATTENTION_KERNEL_LOCAL) runs its own
// softmax: its kernel up to s = 4096 (s a multiple of 4), and past it
// torch's softmax in bf16, keeping no fp32 output, unless
// --attention-softmax-in-fp32 (softmax_in_fp32) asks for fp32. At s =
// 8192 TransformerEngine's kernel runs, Megatron's does not; at 4092
// Megatron's runs, TransformerEngine's does not.
TEST(MemoryTermsTest, LocalAttentionKeepsAnFp32SoftmaxOnlyWhenAskedTo) {
  Layout te = OneGpu();
  te.unfused_attention = true;
  Layout local = te;
  local.local_attention = true;
  for (double s : {1024.0, 4092.0, 8192.0, 16384.0}) {
    te.seq_length = local.seq_length = s;
    local.softmax_in_fp32 = false;
    EXPECT_FALSE(UnfusedAttentionKeeps(Small(), local).fp32_softmax) << s;
    local.softmax_in_fp32 = true;
    EXPECT_EQ(UnfusedAttentionKeeps(Small(), local).fp32_softmax, s > 4096)
        << s;
    EXPECT_EQ(UnfusedAttentionKeeps(Small(), te).fp32_softmax,
              s == 4092.0 || s >= 16384)
        << s;
  }
  // Its other terms are [UA]'s: without the fp32 output, the same bytes.
  local.softmax_in_fp32 = false;
  te.seq_length = local.seq_length = 1024;
  EXPECT_DOUBLE_EQ(Activations(Small(), local), Activations(Small(), te));
  EXPECT_TRUE(UnfusedAttentionKeeps(Small(), local).scores_buffer);
  EXPECT_FALSE(UnfusedAttentionKeeps(Small(), te).scores_buffer);
  // The buffer: one layer's a/t x s x s x b scores in the activations'
  // dtype, outside the total, on a stage with layers.
  EXPECT_DOUBLE_EQ(StageMemoryOf(Small(), local, 0, 2).score_buffer_bytes,
                   2 * kAs2b);
  EXPECT_EQ(StageMemoryOf(Small(), te, 0, 2).score_buffer_bytes, 0);
  Layout fp32 = local;
  fp32.precision = v1::PRECISION_FP32;
  EXPECT_DOUBLE_EQ(StageMemoryOf(Small(), fp32, 0, 2).score_buffer_bytes,
                   4 * kAs2b);
  local.tensor = 2;
  EXPECT_DOUBLE_EQ(StageMemoryOf(Small(), local, 0, 2).score_buffer_bytes,
                   kAs2b);
}

// [GA] Megatron-Bridge's FlexAttention for soft-capped scores (the flash
// kernel): no scores, mask or buffer; the attention output twice (the
// kernel's, kept by its backward, and the projection's contiguous copy:
// 2 x a x d sb = 2 sbh more a layer here) and an fp32 logsumexp a head (4 a
// sb). Under core attention recomputation the checkpoint keeps Q, K, V.
TEST(MemoryTermsTest, FlexAttentionKeepsItsOutputTwice) {
  ModelShape gemma = Small();
  gemma.attention_softcapping = true;
  Layout l = OneGpu();
  const double base = kEmbeddingBf16 + kHeadBf16;
  EXPECT_DOUBLE_EQ(Activations(gemma, l),
                   2 * (kLayerBf16 + 2 * kSbh + 4 * 8 * 1024.0) + base);
  l.recompute = RecomputeKind::kSelective;
  l.recompute_core_attn = true;
  EXPECT_DOUBLE_EQ(Activations(gemma, l), Activations(Small(), l));
}

// Full recomputation [K 5, MT]: uniform with N = 1 stores each layer's
// input (2sbh) and, during backward, one layer's full activations; block
// with N = 1 recomputes the first layer only.
TEST(MemoryTermsTest, FullRecomputationStoresLayerInputsPlusAWorkingSet) {
  // Stage 0 of PP 2 (two micro-batches in flight): the stored part
  // doubles, the working set does not.
  Layout l = OneGpu();
  l.pipeline = 2;
  const double embedding = 2 * kEmbeddingBf16;
  l.recompute = RecomputeKind::kFullUniform;
  l.recompute_layers = 1;
  EXPECT_DOUBLE_EQ(Activations(Small(), l, 0, 2),
                   2 * 2 * 2 * kSbh + kLayerBf16 + embedding);
  l.recompute_layers = 2;  // one group of two layers: one input, two layers
  EXPECT_DOUBLE_EQ(Activations(Small(), l, 0, 2),
                   2 * 2 * kSbh + 2 * kLayerBf16 + embedding);
  l.recompute = RecomputeKind::kFullBlock;
  l.recompute_layers = 1;
  EXPECT_DOUBLE_EQ(Activations(Small(), l, 0, 2),
                   2 * (2 * kSbh + kLayerBf16) + kLayerBf16 + embedding);
  // [SR] The stage that ends the model remakes it where the LM head's
  // released activations were: on one GPU a head of 129 MiB holds a
  // layer's 48 MiB, and a head of 8 MiB (a 1,024-entry vocabulary) only
  // that much of it.
  // [EG] The embedding's dense gradient (2 x 32000 x 1024 B) comes when
  // stage 0 has freed its micro-batch's stored layers (2 inputs, 4 sbh)
  // and the working set (one layer, 48 sbh) with them.
  l.recompute = RecomputeKind::kFullUniform;
  EXPECT_DOUBLE_EQ(StageMemoryOf(Small(), l, 0, 2).embedding_gradient_bytes,
                   2.0 * 32000 * 1024 - (2 * 2 + 48) * kSbh);
  l.pipeline = 1;
  EXPECT_DOUBLE_EQ(Activations(Small(), l),
                   2 * 2 * kSbh + kEmbeddingBf16 + kHeadBf16);
  ModelShape small_vocabulary = Small();
  small_vocabulary.vocab = 1024;
  EXPECT_DOUBLE_EQ(Activations(small_vocabulary, l),
                   2 * 2 * kSbh + kEmbeddingBf16 + kLayerBf16);
}

// [SR] Selective recomputation remakes a layer's recomputed modules at
// that layer's backward: once a stage, above what is stored, what one
// layer's modules did not keep. Unfused attention with attention dropout
// drops 5as^2b and the layer's s x s mask (41 MiB here). On the stage
// that ends the model (one chunk a rank) the LM head's activations of the
// micro-batch are released first and make room for it.
TEST(MemoryTermsTest, SelectiveRecomputationRemakesOneLayersModules) {
  Layout l = OneGpu();
  l.unfused_attention = true;
  l.attention_dropout = 0.1;
  l.recompute = RecomputeKind::kSelective;
  const double kept = kLayerBf16 + kQkvView;
  const double remade = 5 * kAs2b + kMask;
  l.pipeline = 2;
  // Stage 0: two micro-batches stored, one layer remade.
  EXPECT_DOUBLE_EQ(Activations(Small(), l, 0, 2),
                   2 * 2 * kept + 2 * kEmbeddingBf16 + remade);
  // The last stage: the head's 129 MiB released first hold it.
  EXPECT_DOUBLE_EQ(Activations(Small(), l, 1, 2), 2 * kept + kHeadBf16);
  // A 1,024-entry vocabulary: a head of 4sbh + 4sbv = 8 MiB makes room for
  // that much only.
  ModelShape small_vocabulary = Small();
  small_vocabulary.vocab = 1024;
  EXPECT_DOUBLE_EQ(Activations(small_vocabulary, l, 1, 2),
                   2 * kept + remade);
  // Interleaved, the last rank's other chunk runs its backward with no
  // head released: the whole layer counts (3 chunks of one layer in
  // flight, InterleavingHoldsMoreChunksInFlight).
  ModelShape four_layers = Small();
  four_layers.layers = 4;
  l.virtual_stages = 2;
  EXPECT_DOUBLE_EQ(Activations(four_layers, l, 1, 2),
                   3 * kept + kHeadBf16 + remade);
  l.virtual_stages = 1;
  // FlashAttention keeps no scores: core attention remakes nothing
  // counted.
  l.unfused_attention = false;
  l.attention_dropout = 0;
  EXPECT_DOUBLE_EQ(Activations(Small(), l, 0, 2),
                   2 * 2 * kLayerBf16 + 2 * kEmbeddingBf16);
  // The MLP recomputed: SwiGLU's 8 h_ffn/h = 32 sbh dropped a layer,
  // remade for one.
  l.recompute_core_attn = false;
  l.recompute_mlp = true;
  EXPECT_DOUBLE_EQ(Activations(Small(), l, 0, 2),
                   2 * 2 * (kLayerBf16 - 32 * kSbh) + 2 * kEmbeddingBf16 +
                       32 * kSbh);
}

// Megatron's dataloader mask [DL]: b x s x s bools = 1024^2 = kSbh bytes
// here (s = h = 1024). Without recomputation only the current micro-batch
// holds one; checkpointing saves it, one a micro-batch in flight; under
// context parallelism a rank keeps s/c rows, and the whole mask arrives
// first, counted where it exceeds one micro-batch's stored layers.
TEST(MemoryTermsTest, DataloaderMaskOnTheStagesThatReadData) {
  const double mask = 1024.0 * 1024;
  Layout l = OneGpu();
  l.dataloader_mask = true;
  const double base = 2 * kLayerBf16 + kEmbeddingBf16 + kHeadBf16;
  EXPECT_DOUBLE_EQ(Activations(Small(), l), base + mask);  // one stage: once
  // PP 2 (m unknown: 2 in flight on stage 0): the first and the last stage
  // read data, one layer each.
  l.pipeline = 2;
  EXPECT_DOUBLE_EQ(Activations(Small(), l, 0, 1),
                   2 * kLayerBf16 + 2 * kEmbeddingBf16 + mask);
  EXPECT_DOUBLE_EQ(Activations(Small(), l, 1, 1),
                   kLayerBf16 + kHeadBf16 + mask);
  // A stage in the middle does not, unless it holds standalone MTP
  // layers (pretrain_gpt.py get_batch: mtp_on_this_rank).
  l.pipeline = 3;
  EXPECT_DOUBLE_EQ(Activations(Small(), l, 1, 1), 2 * kLayerBf16);
  ModelShape mtp = Small();
  mtp.mtp_layers = 1;
  const double without_mask = [&] {
    Layout no_mask = l;
    no_mask.dataloader_mask = false;
    no_mask.mtp_rank = 1;
    return Activations(mtp, no_mask, 1, 1);
  }();
  l.mtp_rank = 1;
  EXPECT_DOUBLE_EQ(Activations(mtp, l, 1, 1), without_mask + mask);
  l.mtp_rank = -1;
  // Selective recomputation of core attention checkpoints with the mask:
  // stage 0 of 2 keeps both micro-batches' masks.
  l.pipeline = 2;
  l.recompute = RecomputeKind::kSelective;
  EXPECT_DOUBLE_EQ(Activations(Small(), l, 0, 1),
                   2 * kLayerBf16 + 2 * kEmbeddingBf16 + 2 * mask);
  // CP 2 on one stage: s/c = 512 rows, sbh halves; the whole mask (kSbh)
  // beside the half one, less the micro-batch's 24 sbh layer not built
  // yet: nothing more. Under full recomputation at CP 4 a micro-batch
  // stores only its layer's input, 2 sbh / 4, and the whole mask exceeds
  // it by kSbh / 2 (the layer's working set, remade where the LM head's
  // released activations were, adds nothing on one stage: [SR]).
  l = OneGpu();
  l.dataloader_mask = true;
  l.context = 2;
  EXPECT_DOUBLE_EQ(Activations(Small(), l, 0, 1),
                   (kLayerBf16 + kEmbeddingBf16 + kHeadBf16) / 2 + mask / 2);
  l.context = 4;
  l.recompute = RecomputeKind::kFullUniform;
  l.recompute_layers = 1;
  EXPECT_DOUBLE_EQ(Activations(Small(), l, 0, 1),
                   2 * kSbh / 4 + (kEmbeddingBf16 + kHeadBf16) / 4 + mask / 4 +
                       (mask - 2 * kSbh / 4));
  l.dataloader_mask = false;
  EXPECT_DOUBLE_EQ(Activations(Small(), l, 0, 1),
                   2 * kSbh / 4 + (kEmbeddingBf16 + kHeadBf16) / 4);
}

// Megatron runs --quick-geglu through its unfused glu [QG]: 10 bytes an
// FFN column against SwiGLU's 8, sb x 2 x h_ffn = 8 sbh more a layer
// here (measured on an H100: the unfused SwiGLU's bytes exactly); the
// parameters are SwiGLU's.
TEST(MemoryTermsTest, QuickGegluKeepsItsUnfusedIntermediates) {
  ModelShape m = Small();
  m.quick_geglu = true;
  const StageFigures f = StageMemoryOf(m, OneGpu(), 0, 2);
  EXPECT_DOUBLE_EQ(f.parameters, kModelParams);
  EXPECT_DOUBLE_EQ(f.activation_bytes,
                   2 * (kLayerBf16 + 8 * kSbh) + kEmbeddingBf16 + kHeadBf16);
  // Run eagerly (--disable-jit-fuser) quick_gelu keeps its sigmoid too:
  // 12 bytes, 16 sbh more a layer; SwiGLU is unchanged.
  Layout eager = OneGpu();
  eager.eager_jit_functions = true;
  EXPECT_DOUBLE_EQ(StageMemoryOf(m, eager, 0, 2).activation_bytes,
                   2 * (kLayerBf16 + 16 * kSbh) + kEmbeddingBf16 + kHeadBf16);
  EXPECT_DOUBLE_EQ(StageMemoryOf(Small(), eager, 0, 2).activation_bytes,
                   StageMemoryOf(Small(), OneGpu(), 0, 2).activation_bytes);
}

// Gemma's tanh-GeLU gate runs unfused through glu() [GG]: 10 bytes an FFN
// column against the paper's 8 (sb x 2 x h_ffn = 8 sbh more a layer here),
// 12 with a clamp, twice in fp32; the parameters are SwiGLU's. Its experts
// run the same glu(): no further copy on top.
TEST(MemoryTermsTest, GemmasGegluKeepsWhatTheUnfusedGluKeeps) {
  ModelShape m = Small();
  m.geglu = true;
  Layout l = OneGpu();
  const StageFigures f = StageMemoryOf(m, l, 0, 2);
  EXPECT_DOUBLE_EQ(f.parameters, kModelParams);
  EXPECT_DOUBLE_EQ(f.activation_bytes,
                   2 * (kLayerBf16 + 8 * kSbh) + kEmbeddingBf16 + kHeadBf16);
  EXPECT_DOUBLE_EQ(DenseMlpBytes(m, l), 10);
  m.activation_clamp = true;
  EXPECT_DOUBLE_EQ(DenseMlpBytes(m, l), 12);
  m.activation_clamp = false;
  l.precision = v1::PRECISION_FP32;
  EXPECT_DOUBLE_EQ(DenseMlpBytes(m, l), 20);
  // The unfused glu's copy is GeGLU's own: the flag adds nothing (and
  // validation refuses it).
  l = OneGpu();
  l.glu_linear_copy = true;
  EXPECT_DOUBLE_EQ(DenseMlpBytes(m, l), 10);
}

// Megatron's 1F1B runs min(p - rank - 1, m) warm-up forwards, then one:
// stage i holds min(p - i, m) micro-batches [MT].
TEST(MemoryTermsTest, MicroBatchesInFlightAreCappedByTheStep) {
  Layout l = OneGpu();
  l.pipeline = 8;
  EXPECT_DOUBLE_EQ(MicrobatchesInFlight(l, 0), 8);  // gbs unknown: 1F1B
  l.microbatches = 1;
  EXPECT_DOUBLE_EQ(MicrobatchesInFlight(l, 0), 1);
  l.microbatches = 3;
  EXPECT_DOUBLE_EQ(MicrobatchesInFlight(l, 0), 3);
  EXPECT_DOUBLE_EQ(MicrobatchesInFlight(l, 6), 2);
  // One micro-batch per step: stage 0 of 8 holds one layer's worth, not 8.
  l.microbatches = 1;
  EXPECT_DOUBLE_EQ(Activations(Small(), l, 0, 2),
                   2 * kLayerBf16 + kEmbeddingBf16);
}

// Interleaved 1F1B [MT, K]: p = 2, v = 2, L = 4 (one layer a chunk).
// Rank 0 runs 2(p - 1) + (v - 1)p = 4 warm-up forwards, then one: 5 chunks
// in flight, 5 layers' activations against 1F1B's 2 x 2 = 4 (Korthikanti's
// factor 1 + (p - 1)/(p v) = 1.25). Forwards 0, 1 and 4 are chunk 0, the
// embedding's. Rank 1: 0 + 2 + 1 = 3 chunks, and the LM head.
TEST(MemoryTermsTest, InterleavingHoldsMoreChunksInFlight) {
  ModelShape m = Small();
  m.layers = 4;
  Layout l = OneGpu();
  l.pipeline = 2;
  l.virtual_stages = 2;
  EXPECT_DOUBLE_EQ(MicrobatchesInFlight(l, 0), 5);
  EXPECT_DOUBLE_EQ(MicrobatchesInFlight(l, 1), 3);
  EXPECT_DOUBLE_EQ(Activations(m, l, 0, 2),
                   5 * kLayerBf16 + 3 * kEmbeddingBf16);
  EXPECT_DOUBLE_EQ(Activations(m, l, 1, 2), 3 * kLayerBf16 + kHeadBf16);
  // Two micro-batches a step: at most m * v = 4 chunks, and chunk 0 only
  // ever sees micro-batches 0 and 1.
  l.microbatches = 2;
  EXPECT_DOUBLE_EQ(MicrobatchesInFlight(l, 0), 4);
  EXPECT_DOUBLE_EQ(Activations(m, l, 0, 2),
                   4 * kLayerBf16 + 2 * kEmbeddingBf16);
}

// --microbatch-group-size-per-virtual-pipeline-stage N [MT]: rank r runs
// 2(p - r - 1) + (v - 1)N warm-up forwards, then one, so N > p holds
// more: p = 4, v = 2, N = 8 on rank 0 is 6 + 8 + 1 = 15 chunks, against
// 11 at Megatron's default N = p.
TEST(MemoryTermsTest, MicrobatchGroupSetsTheChunksInFlight) {
  Layout l = OneGpu();
  l.pipeline = 4;
  l.virtual_stages = 2;
  EXPECT_DOUBLE_EQ(MicrobatchesInFlight(l, 0), 11);
  l.microbatch_group = 8;
  EXPECT_DOUBLE_EQ(MicrobatchesInFlight(l, 0), 15);
  EXPECT_DOUBLE_EQ(MicrobatchesInFlight(l, 3), 9);
  l.microbatches = 6;  // at most m v = 12
  EXPECT_DOUBLE_EQ(MicrobatchesInFlight(l, 0), 12);
}

// Which chunks those forwards are, against Megatron's own order: the
// schedule table of schedules.py get_schedule_table (groups of N
// micro-batches a chunk, chunk by chunk; the last group the m % N left
// over), whose first min(warm-up + 1, m v) entries a rank holds. Every
// valid (m, N) for p = 4, v = 2 and 3, every rank that holds no embedding
// or head: each chunk's count, read as the activations of a stage whose
// only layer is in that chunk.
TEST(MemoryTermsTest, ChunksInFlightFollowMegatronsScheduleTable) {
  const ModelShape m = Small();
  int checked = 0;
  for (uint32_t v : {2u, 3u}) {
    for (uint32_t group = 4; group <= 9; ++group) {
      for (uint32_t steps = group; steps <= 3 * group + 2; ++steps) {
        if (steps % group != 0 && steps % group < 4) continue;  // refused
        std::vector<uint32_t> table;  // the chunk of each forward
        for (uint32_t start = 0; start < steps; start += group) {
          const uint32_t end = start + group >= steps ? steps : start + group;
          for (uint32_t chunk = 0; chunk < v; ++chunk) {
            for (uint32_t mb = start; mb < end; ++mb) table.push_back(chunk);
          }
        }
        for (uint32_t rank : {1u, 2u}) {
          const uint32_t held = std::min<uint32_t>(
              2 * (4 - rank - 1) + (v - 1) * group + 1, steps * v);
          Layout l = OneGpu();
          l.pipeline = 4;
          l.virtual_stages = v;
          l.microbatch_group = group;
          l.microbatches = steps;
          EXPECT_DOUBLE_EQ(MicrobatchesInFlight(l, rank), held);
          for (uint32_t chunk = 0; chunk < v; ++chunk) {
            const double expected = static_cast<double>(std::count(
                table.begin(), table.begin() + held, chunk));
            std::vector<double> layers(v, 0);
            layers[chunk] = 1;
            EXPECT_DOUBLE_EQ(
                StageMemoryOfChunks(m, l, rank, layers).activation_bytes,
                expected * kLayerBf16)
                << "v " << v << " N " << group << " m " << steps << " rank "
                << rank << " chunk " << chunk;
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 300);
}

// --defer-embedding-wgrad-compute [DW]: the last stage keeps each call's
// output-layer input (sbh) and logits' gradient (sbv), 2 B each, until the
// flush: 4 micro-batches add 4 x 2(sbh + sbv); --wgrad-deferral-limit 3
// keeps 3; one MTP layer calls the output layer twice a micro-batch (8
// entries, 3 at the limit). Other stages keep nothing more.
TEST(MemoryTermsTest, DeferredEmbeddingWgradKeepsEachCallsHeadTensors) {
  ModelShape m = Small();
  Layout l = OneGpu();
  l.pipeline = 2;
  l.microbatches = 4;
  const double entry = 2 * (kSbh + 1024.0 * 32000);
  const double last = Activations(m, l, 1, 1);
  const double first = Activations(m, l, 0, 1);
  l.defer_embedding_wgrad = true;
  EXPECT_DOUBLE_EQ(Activations(m, l, 1, 1), last + 4 * entry);
  EXPECT_DOUBLE_EQ(Activations(m, l, 0, 1), first);
  l.wgrad_deferral_limit = 3;
  EXPECT_DOUBLE_EQ(Activations(m, l, 1, 1), last + 3 * entry);
  l.wgrad_deferral_limit = 0;
  m.mtp_layers = 1;
  Layout plain = l;
  plain.defer_embedding_wgrad = false;
  const double with_mtp = Activations(m, plain, 1, 1);
  EXPECT_DOUBLE_EQ(Activations(m, l, 1, 1), with_mtp + 8 * entry);
  l.wgrad_deferral_limit = 3;
  EXPECT_DOUBLE_EQ(Activations(m, l, 1, 1), with_mtp + 3 * entry);
}

// Chunks of different sizes (--pipeline-model-parallel-layout), p = v = 2,
// rank 0 holding chunks of 1 and 3 layers: of its 5 forwards in flight,
// 0, 1 and 4 are chunk 0 and 2, 3 chunk 1, so 3 x 1 + 2 x 3 = 9 layers'
// activations, against 5 x 2 = 10 for two chunks of 2. The parameters are
// those of its 4 layers either way.
TEST(MemoryTermsTest, UnevenChunksCountEachChunksMicrobatchesInFlight) {
  ModelShape m = Small();
  m.layers = 8;
  Layout l = OneGpu();
  l.pipeline = 2;
  l.virtual_stages = 2;
  const StageFigures uneven = StageMemoryOfChunks(m, l, 0, {1, 3});
  EXPECT_DOUBLE_EQ(uneven.activation_bytes,
                   9 * kLayerBf16 + 3 * kEmbeddingBf16);
  const StageFigures even = StageMemoryOfChunks(m, l, 0, {2, 2});
  EXPECT_DOUBLE_EQ(even.activation_bytes,
                   10 * kLayerBf16 + 3 * kEmbeddingBf16);
  EXPECT_DOUBLE_EQ(even.activation_bytes, Activations(m, l, 0, 4));
  EXPECT_DOUBLE_EQ(uneven.parameters, even.parameters);
  // Rank 1 (the last) with chunks of 3 and 1: 3 forwards in flight, 0 and
  // 1 of chunk 0, 2 of chunk 1: 2 x 3 + 1 x 1 = 7 layers, and the head.
  EXPECT_DOUBLE_EQ(StageMemoryOfChunks(m, l, 1, {3, 1}).activation_bytes,
                   7 * kLayerBf16 + kHeadBf16);
}

// Each MTP layer (multi_token_prediction.py MultiTokenPredictionLayer)
// holds an h x 2h projection, a transformer layer and three norms: enorm,
// hnorm and its own final_layernorm before the shared head (two layers,
// two final norms: measured on an H100, session 35).
TEST(MemoryTermsTest, EachMtpLayerHoldsItsOwnFinalNorm) {
  const double mtp_layer = 2 * 1024.0 * 1024 + 3 * 1024 + kLayerParams;
  for (int layers : {1, 2}) {
    ModelShape m = Small();
    m.mtp_layers = layers;
    EXPECT_DOUBLE_EQ(TotalParameters(m),
                     TotalParameters(Small()) + layers * mtp_layer)
        << layers;
  }
}

// An MTP layer off the first stage embeds the next tokens with a copy of
// the embedding of its own, tied or not (Megatron's gpt_model.py builds
// `embedding` where mtp_process); tied, the last stage's output layer
// still allocates its weight (skip_weight_param_allocation is pre_process
// and tied): two v x h matrices either way. memgate counted one, tied.
// On one stage a tied matrix is the embedding, the LM head and the MTP's.
TEST(MemoryTermsTest, AnMtpStageHoldsItsOwnEmbeddingTiedOrNot) {
  const double v_by_h = 1024.0 * 32000;
  const double mtp_layer = 2 * 1024.0 * 1024 + 3 * 1024 + kLayerParams;
  ModelShape untied = Small();
  untied.mtp_layers = 1;
  ModelShape tied = untied;
  tied.tied_embeddings = true;
  ModelShape tied_without_mtp = Small();
  tied_without_mtp.tied_embeddings = true;
  Layout two = OneGpu();
  two.pipeline = 2;
  const double last_tied = StageMemoryOf(tied, two, 1, 1).parameters;
  EXPECT_DOUBLE_EQ(last_tied, StageMemoryOf(untied, two, 1, 1).parameters);
  EXPECT_DOUBLE_EQ(
      last_tied - StageMemoryOf(tied_without_mtp, two, 1, 1).parameters,
      mtp_layer + v_by_h);
  const Layout one = OneGpu();
  EXPECT_DOUBLE_EQ(StageMemoryOf(untied, one, 0, 2).parameters -
                       StageMemoryOf(tied, one, 0, 2).parameters,
                   v_by_h);
}

// Standalone MTP (Layout.mtp_rank; Megatron's "Et*3|(tt|)*29,m|L"): the
// MTP rank holds the layer, its projection and norms and an embedding of
// its own, and stores per micro-batch in flight the layer's activations,
// the projection's and the two norms' inputs (8 sbh) and its final norm's
// input (2 sbh); the loss stage holds the head's logits, one more LM
// head's activations a micro-batch (multi_token_prediction.py
// process_mtp_loss). Beside the loss the last stage holds all of it.
TEST(MemoryTermsTest, StandaloneMtpLeavesItsHeadToTheLossStage) {
  const double v_by_h = 1024.0 * 32000;
  const double mtp_layer = 2 * 1024.0 * 1024 + 3 * 1024 + kLayerParams;
  ModelShape m = Small();
  m.mtp_layers = 1;
  const ModelShape plain = Small();
  Layout l = OneGpu();
  l.pipeline = 3;
  l.mtp_rank = 1;  // rank 1: two layers and the MTP; rank 2: the loss
  const StageFigures rank = StageMemoryOf(m, l, 1, 2);
  const StageFigures rank_plain = StageMemoryOf(plain, l, 1, 2);
  EXPECT_DOUBLE_EQ(rank.parameters - rank_plain.parameters,
                   mtp_layer + v_by_h);
  // Rank 1 of 3 holds two micro-batches in flight.
  EXPECT_DOUBLE_EQ(rank.activation_bytes - rank_plain.activation_bytes,
                   2 * (kLayerBf16 + 8 * kSbh + 2 * kSbh));
  const StageFigures loss = StageMemoryOf(m, l, 2, 0);
  const StageFigures loss_plain = StageMemoryOf(plain, l, 2, 0);
  EXPECT_DOUBLE_EQ(loss.parameters, loss_plain.parameters);
  EXPECT_DOUBLE_EQ(loss.activation_bytes - loss_plain.activation_bytes,
                   kHeadBf16);
  // [EG] Its embedding's dense gradient (v x h, 2 B) comes after one
  // micro-batch's MTP activations are freed: the difference is a
  // transient there. Beside the loss, the freed logits outweigh it.
  EXPECT_DOUBLE_EQ(rank.embedding_gradient_bytes,
                   2 * v_by_h - (kLayerBf16 + 10 * kSbh));
  // Beside the loss: rank 1 as without MTP, the last rank all of it.
  l.mtp_rank = -1;
  EXPECT_DOUBLE_EQ(StageMemoryOf(m, l, 2, 0).embedding_gradient_bytes, 0);
  EXPECT_DOUBLE_EQ(StageMemoryOf(m, l, 1, 2).activation_bytes,
                   rank_plain.activation_bytes);
  const StageFigures last = StageMemoryOf(m, l, 2, 0);
  EXPECT_DOUBLE_EQ(last.parameters - loss_plain.parameters,
                   mtp_layer + v_by_h);
  EXPECT_DOUBLE_EQ(last.activation_bytes - loss_plain.activation_bytes,
                   kLayerBf16 + 8 * kSbh + kHeadBf16);
}

// With hidden dropout an MTP layer keeps its transformer layer's two
// 1-byte masks (2 sbh) and the mask of the embedding it runs
// (LanguageModelEmbedding's embedding_dropout: sbh), once more than
// without dropout.
TEST(MemoryTermsTest, AnMtpLayerKeepsItsEmbeddingsDropoutMask) {
  auto mtp_share = [](double dropout) {
    ModelShape m = Small();
    Layout l = OneGpu();
    l.hidden_dropout = dropout;
    const double without = Activations(m, l);
    m.mtp_layers = 1;
    return Activations(m, l) - without;
  };
  EXPECT_DOUBLE_EQ(mtp_share(0.1) - mtp_share(0), 3 * kSbh);
}

// [FN] With MTP layers the final norm sits with the last decoder layer
// (transformer_block.py has_final_layernorm_in_this_stage): where that is
// not the loss's stage ("Et|t|mL" over PP 3: layer 1 on rank 1), rank 1
// keeps the norm's input, 2 sbh, for each of its 2 micro-batches in
// flight; without MTP it stays with the loss. Interleaved, the chunk that
// holds the layer counts its own micro-batches.
TEST(MemoryTermsTest, WithMtpTheFinalNormSitsWithTheLastDecoderLayer) {
  ModelShape m = Small();
  m.mtp_layers = 1;
  const ModelShape plain = Small();
  Layout l = OneGpu();
  l.pipeline = 3;
  EXPECT_DOUBLE_EQ(StageMemoryOf(m, l, 1, 1, 1).activation_bytes -
                       StageMemoryOf(plain, l, 1, 1, 1).activation_bytes,
                   2 * 2 * kSbh);
  // And the norm's weight (RMSNorm: h).
  EXPECT_DOUBLE_EQ(StageMemoryOf(m, l, 1, 1, 1).parameters -
                       StageMemoryOf(plain, l, 1, 1, 1).parameters,
                   1024);
  // Not on rank 0, whose layer is not the last.
  EXPECT_DOUBLE_EQ(StageMemoryOf(m, l, 0, 1, 0).activation_bytes,
                   StageMemoryOf(plain, l, 0, 1, 0).activation_bytes);
  // PP 2 x 2 chunks, "Et||t|mL": rank 0's second chunk holds layer 1.
  l.pipeline = 2;
  l.virtual_stages = 2;
  const StageFigures chunked = StageMemoryOfChunks(m, l, 0, {1, 1}, {0, 1});
  const StageFigures chunked_plain =
      StageMemoryOfChunks(plain, l, 0, {1, 1}, {0, 1});
  // Rank 0 of 2, v = 2, N = p: 2(p - 1) + (v - 1) p + 1 = 5 forwards in
  // flight, 3 of chunk 0 and 2 of chunk 1 (which holds layer 1).
  EXPECT_DOUBLE_EQ(chunked.activation_bytes - chunked_plain.activation_bytes,
                   2 * 2 * kSbh);
}

// --mtp-hsm: each MTP depth after the first keeps its mix's int64 gather
// indices and bool mask (multi_token_prediction.py
// _mix_hidden_state_history), 9 bytes a token: 3 depths mix twice; under
// sequence parallelism a rank mixes its share of the tokens.
TEST(MemoryTermsTest, MtpHiddenStateMixingKeepsItsIndicesAndMask) {
  ModelShape m = Small();
  m.mtp_layers = 3;
  ModelShape mixing = m;
  mixing.mtp_hidden_state_mixing = true;
  Layout l = OneGpu();
  EXPECT_DOUBLE_EQ(Activations(mixing, l) - Activations(m, l),
                   2 * 9 * 1024.0);
  l.tensor = 2;
  EXPECT_DOUBLE_EQ(Activations(mixing, l) - Activations(m, l),
                   2 * 9 * 1024.0 / 2);
}

// --mtp-use-repeated-layer: one MTP layer built, applied mtp_layers times:
// one layer's parameters, every application's activations.
TEST(MemoryTermsTest, ARepeatedMtpLayerHoldsOneLayersParameters) {
  ModelShape one = Small();
  one.mtp_layers = 1;
  ModelShape repeated = Small();
  repeated.mtp_layers = 3;
  repeated.mtp_repeated_layer = true;
  ModelShape three = repeated;
  three.mtp_repeated_layer = false;
  EXPECT_DOUBLE_EQ(TotalParameters(repeated), TotalParameters(one));
  EXPECT_LT(TotalParameters(repeated), TotalParameters(three));
  Layout l = OneGpu();
  EXPECT_DOUBLE_EQ(Activations(repeated, l, 0, 2), Activations(three, l, 0, 2));
  EXPECT_GT(Activations(repeated, l, 0, 2), Activations(one, l, 0, 2));
}

// head_dim d = 256 (a*d = 2048 != h): attention parameters h*(a*d + 2k*d)
// + a*d*h = 1024*6144 + 2048*1024; activations: Q and the attention output
// 2 + 2 bytes of a*d each, K and V 4k*d, in place of the paper's 4h + 4kh/a.
TEST(MemoryTermsTest, HeadDimSetsAttentionWidths) {
  ModelShape m = Small();
  m.head_dim = 256;
  const double attention = 1024.0 * 6144 + 2048.0 * 1024;
  const double layer = attention + 3 * 1024.0 * 4096 + 2048;
  EXPECT_DOUBLE_EQ(TotalParameters(m), 2 * layer + 2 * 1024.0 * 32000 + 1024);
  const double layer_activations =
      8 * kSbh + 1024.0 * (4 * 2048 + 4 * 2048 + 8 * 4096);
  EXPECT_DOUBLE_EQ(Activations(m, OneGpu()),
                   2 * layer_activations + kEmbeddingBf16 + kHeadBf16);
}

// QK-norm: one RMSNorm of d = 128 for Q and one for K (2d parameters a
// layer); their inputs, Q (2 x a*d) and K (2 x k*d), stored once more, and
// each norm's fp32 reciprocal RMS, one a head a token (4 x (a + k)).
constexpr double kQkNormStatistics = 1024.0 * 4 * (8 + 8);

TEST(MemoryTermsTest, QkNormAddsItsWeightsAndInputs) {
  ModelShape m = Small();
  m.qk_norm = true;
  EXPECT_DOUBLE_EQ(TotalParameters(m), kModelParams + 2 * 2 * 128);
  EXPECT_DOUBLE_EQ(Activations(m, OneGpu()),
                   2 * (kLayerBf16 + 1024.0 * (2 * 1024 + 2 * 1024) +
                        kQkNormStatistics) +
                       kEmbeddingBf16 + kHeadBf16);
}

// [QN] Megatron's L2Norm (no weights) and torch's norms of the local
// layer spec save K as the view the QKV split made, which keeps the whole
// QKV output alive: Q copy (2 x a*d) + QKV output (2 x (a + 2k)d) in place
// of Q and K (as measured on an H100, session 33).
TEST(MemoryTermsTest, QkL2NormAndLocalQkNormKeepTheQkvOutput) {
  const double pinned =
      2 * (kLayerBf16 + 1024.0 * (4 * 1024 + 4 * 1024) + kQkNormStatistics) +
      kEmbeddingBf16 + kHeadBf16;
  ModelShape l2 = Small();
  l2.qk_norm = true;
  l2.qk_l2_norm = true;
  EXPECT_DOUBLE_EQ(TotalParameters(l2), kModelParams);
  EXPECT_DOUBLE_EQ(Activations(l2, OneGpu()), pinned);
  ModelShape learned = Small();
  learned.qk_norm = true;
  Layout local = OneGpu();
  local.local_layer_spec = true;
  EXPECT_DOUBLE_EQ(TotalParameters(learned), kModelParams + 2 * 2 * 128);
  EXPECT_DOUBLE_EQ(Activations(learned, local), pinned);
  // Without QK-norm the local spec changes nothing here.
  EXPECT_DOUBLE_EQ(Activations(Small(), local), Activations(Small(), OneGpu()));
}

// [LN] Recomputing "layernorm" under the local layer spec drops both
// norms' outputs of a dense layer (2 x 2sbh), which TransformerEngine's
// spec fuses into the next linear layer (nothing to drop); measured on an
// H100 (session 32).
TEST(MemoryTermsTest, LocalSpecRecomputedNormsDropTheirOutputs) {
  Layout te = OneGpu();
  te.recompute = RecomputeKind::kSelective;
  te.recompute_layernorm = true;
  Layout local = te;
  local.local_layer_spec = true;
  EXPECT_DOUBLE_EQ(Activations(Small(), te) - Activations(Small(), local),
                   2 * 4 * kSbh);
}

// GPT's MLP [K]: 2h*h_ffn parameters; input 2sbh (among the 12), GeLU
// input and output 2sb*h_ffn each: 4h_ffn/h. LayerNorm adds a bias to each
// norm; biases on every linear layer; a learned position embedding of
// max_positions x h on the first stage.
TEST(MemoryTermsTest, GptStyleModelParametersAndActivations) {
  ModelShape m = Small();
  m.ungated_mlp = true;
  m.layernorm = true;
  m.linear_bias = true;
  m.learned_positions = 2048;
  const double attention = 2 * 1024.0 * 1024 * 2;
  const double biases = (1024 + 2 * 1024) + 4096 + 2 * 1024;
  const double layer = attention + 2 * 1024.0 * 4096 + 2 * 2048 + biases;
  EXPECT_DOUBLE_EQ(TotalParameters(m), 2 * layer + 2 * 1024.0 * 32000 +
                                           2048 * 1024.0 + 2048);
  EXPECT_DOUBLE_EQ(Activations(m, OneGpu()),
                   2 * (12 + 4 + 4 * 4) * kSbh + kEmbeddingBf16 + kHeadBf16);
}

// --distribute-saved-activations: without sequence parallelism each
// stored layer input (2sbh, replicated on the TP ranks) keeps only its
// rank's 1/t chunk. Full recomputation, uniform groups of one layer, TP 2:
// both layers' inputs halve (2 x 2 kSbh -> 2 x kSbh); the working set of
// the recomputed layer is unchanged.
TEST(MemoryTermsTest, DistributedSavedInputsSplitOverTensorParallelRanks) {
  Layout l = OneGpu();
  l.tensor = 2;
  l.sequence_parallel = false;
  l.recompute = RecomputeKind::kFullUniform;
  l.recompute_layers = 1;
  const double replicated = Activations(Small(), l);
  l.distribute_saved_inputs = true;
  EXPECT_DOUBLE_EQ(replicated - Activations(Small(), l), 2 * kSbh);
  // Under sequence parallelism the input is split already: no change.
  l.sequence_parallel = true;
  Layout sp = l;
  sp.distribute_saved_inputs = false;
  EXPECT_DOUBLE_EQ(Activations(Small(), l), Activations(Small(), sp));
}

// [CPX] Ulysses (a2a) keeps the attention output twice: with t = c = 2
// (sequence parallel), 2 B x s/c = 512 tokens x a*d/t = 512 a layer,
// kSbh / 2, on both layers. a2a+p2p with an inner all-to-all of 2 is the
// same; of 1 it is p2p. Without CP, or with core attention recomputed
// (the checkpoint keeps the un-exchanged Q, K, V), nothing more; under
// full recomputation one layer's working set holds it.
TEST(MemoryTermsTest, AllToAllContextParallelKeepsTheOutputTwice) {
  Layout l = OneGpu();
  l.tensor = 2;
  l.context = 2;
  const double p2p = Activations(Small(), l);
  Layout a2a = l;
  a2a.cp_comm = v1::CONTEXT_PARALLEL_COMM_A2A;
  EXPECT_DOUBLE_EQ(Activations(Small(), a2a) - p2p, kSbh);
  Layout hierarchical = l;
  hierarchical.cp_comm = v1::CONTEXT_PARALLEL_COMM_A2A_P2P;
  hierarchical.cp_a2a_size = 2;
  EXPECT_DOUBLE_EQ(Activations(Small(), hierarchical) - p2p, kSbh);
  hierarchical.cp_a2a_size = 1;
  EXPECT_DOUBLE_EQ(Activations(Small(), hierarchical), p2p);

  Layout no_cp = OneGpu();
  const double plain = Activations(Small(), no_cp);
  no_cp.cp_comm = v1::CONTEXT_PARALLEL_COMM_A2A;
  EXPECT_DOUBLE_EQ(Activations(Small(), no_cp), plain);

  Layout core_attn = a2a;
  core_attn.recompute = RecomputeKind::kSelective;
  core_attn.recompute_core_attn = true;
  Layout core_attn_p2p = core_attn;
  core_attn_p2p.cp_comm = v1::CONTEXT_PARALLEL_COMM_P2P;
  EXPECT_DOUBLE_EQ(Activations(Small(), core_attn),
                   Activations(Small(), core_attn_p2p));

  // Every layer recomputed: the working set's layer keeps it twice (stage 0
  // of PP 2, whose working set no LM head's release holds, [SR]).
  Layout full = a2a;
  full.recompute = RecomputeKind::kFullBlock;
  full.recompute_layers = 2;
  full.pipeline = 2;
  Layout full_p2p = full;
  full_p2p.cp_comm = v1::CONTEXT_PARALLEL_COMM_P2P;
  EXPECT_DOUBLE_EQ(Activations(Small(), full, 0, 2) -
                       Activations(Small(), full_p2p, 0, 2),
                   kSbh / 2);

  // MLA's output is a x d_v wide: d_v = 64 halves it.
  ModelShape mla = Small();
  mla.mla = true;
  mla.kv_lora = 512;
  mla.qk_nope = 128;
  mla.qk_rope = 64;
  mla.v_head = 64;
  Layout mla_p2p = l;
  EXPECT_DOUBLE_EQ(Activations(mla, a2a) - Activations(mla, mla_p2p),
                   kSbh / 2);
}

// [CPX] all_gather: a layer's backward holds the whole sequence's K and V
// (k*d = 1024 wide, / t = 2: 2 B x 1024 tokens x 512 = kSbh each) 2 +
// (2c + 1)/2c = 3.25 times, and one more of either: 7.5 kSbh, once a
// stage whatever its micro-batches in flight (a working set, not stored).
TEST(MemoryTermsTest, AllGatherContextParallelHoldsTheGatheredKeysAndValues) {
  for (double stages : {1, 4}) {
    Layout l = OneGpu();
    l.tensor = 2;
    l.context = 2;
    l.pipeline = stages;
    const double p2p = Activations(Small(), l);
    l.cp_comm = v1::CONTEXT_PARALLEL_COMM_ALL_GATHER;
    EXPECT_DOUBLE_EQ(Activations(Small(), l) - p2p, 7.5 * kSbh) << stages;
  }
  // Grouped queries gather k = 2 heads: a quarter.
  ModelShape gqa = Small();
  gqa.kv_heads = 2;
  Layout l = OneGpu();
  l.tensor = 2;
  l.context = 2;
  const double p2p = Activations(gqa, l);
  l.cp_comm = v1::CONTEXT_PARALLEL_COMM_ALL_GATHER;
  EXPECT_DOUBLE_EQ(Activations(gqa, l) - p2p, 7.5 * kSbh / 4);
  // Without CP nothing is gathered.
  Layout no_cp = OneGpu();
  const double plain = Activations(Small(), no_cp);
  no_cp.cp_comm = v1::CONTEXT_PARALLEL_COMM_ALL_GATHER;
  EXPECT_DOUBLE_EQ(Activations(Small(), no_cp), plain);
}

}  // namespace
}  // namespace memgate
