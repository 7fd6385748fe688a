// Muon's step (muon_terms.cc [MU]), worked by hand on a small Llama:
// h = 1024, h_ffn = 4096 (SwiGLU: FC1 is 8192 x 1024, F = 8,388,608
// elements; FC2 1024 x 4096), a = k = 8 (Q, K, V and the output
// projection 1024 x 1024 each).

#include "estimator/muon_terms.h"

#include "gtest/gtest.h"

namespace memgate {
namespace {

constexpr double kFc1 = 8192.0 * 1024;
constexpr double kGram = 1024.0 * 1024;  // h x h, FC1's smaller side

ModelShape SmallLlama() {
  ModelShape m;
  m.layers = 2;
  m.hidden = 1024;
  m.ffn_hidden = 4096;
  m.heads = 8;
  m.kv_heads = 8;
  m.vocab = 32000;
  return m;
}

MuonStage TwoDenseLayers() {
  MuonStage s;
  s.layers.dense = 2;
  return s;
}

double Step(const Layout& l) {
  return MuonStepBytes(SmallLlama(), l, TwoDenseLayers());
}

// Duplicated (main's default): FC1's shards gathered and concatenated
// (8F), then normalized in fp32 beside its bf16 copy (6F): 14F, the same
// at any TP (the whole matrix on every rank); above QKV's (40 x 1024^2,
// QkvIsOrthogonalizedAsQKAndVOrWhole).
TEST(MuonTermsTest, DuplicatedModeOrthogonalizesTheWholeMatrix) {
  Layout l;
  EXPECT_DOUBLE_EQ(Step(l), 14 * kFc1);
  l.tensor = 2;
  EXPECT_DOUBLE_EQ(Step(l), 14 * kFc1);
  l.tensor = 1;
  l.muon_split_qkv = false;  // QKV whole: 3072 x 1024, still below FC1
  EXPECT_DOUBLE_EQ(Step(l), 14 * kFc1);
}

// With a narrow MLP (h_ffn 512) QKV is the largest. Split, each 1024 x
// 1024 piece gathered (8 x 1024^2) and iterated on (the normalized matrix,
// A and B of 1024^2, the new X: 8 x 1024^2) beside the reshaped pieces
// and the results made (two local QKVs, 2 x 4 x 3 x 1024^2): 40 x 1024^2.
// Whole, 3072 x 1024 gathered (24) and normalized beside its bf16 copy
// (18): 42 x 1024^2.
TEST(MuonTermsTest, QkvIsOrthogonalizedAsQKAndVOrWhole) {
  ModelShape m = SmallLlama();
  m.ffn_hidden = 512;
  Layout l;
  EXPECT_DOUBLE_EQ(MuonStepBytes(m, l, TwoDenseLayers()), 40 * kGram);
  l.muon_split_qkv = false;
  EXPECT_DOUBLE_EQ(MuonStepBytes(m, l, TwoDenseLayers()), 42 * kGram);
  // Nesterov's blend is the whole local QKV's, split or not.
  l.muon_nesterov = true;
  EXPECT_DOUBLE_EQ(MuonStepBytes(m, l, TwoDenseLayers()), 54 * kGram);
  l.muon_split_qkv = true;
  EXPECT_DOUBLE_EQ(MuonStepBytes(m, l, TwoDenseLayers()), 52 * kGram);
}

// Blockwise (core 0.16 to 0.19's default) at TP 2: FC1's 4096 x 1024
// shard alone; the update's orthogonalized shard beside its two scaled
// temporaries (12 X) passes the iteration's 6 X.
TEST(MuonTermsTest, BlockwiseModeWorksOnTheShard) {
  Layout l;
  l.tensor = 2;
  l.muon_tp_mode = v1::Muon::TP_MODE_BLOCKWISE;
  EXPECT_DOUBLE_EQ(Step(l), 12 * kFc1 / 2);
  // Distributed: the shard too, its Gram matrix h x h.
  l.muon_tp_mode = v1::Muon::TP_MODE_DISTRIBUTED;
  EXPECT_DOUBLE_EQ(Step(l), 12 * kFc1 / 2);
}

// --muon-fp32-matmul-prec high: the iteration stays fp32: X, A, B and
// the new X: 8F + 8 h^2, beside the gathered copies (8F).
TEST(MuonTermsTest, Fp32IterationKeepsEveryTermInFp32) {
  Layout l;
  l.muon_fp32_iteration = true;
  EXPECT_DOUBLE_EQ(Step(l), 16 * kFc1 + 8 * kGram);
}

// --muon-nesterov: grad.lerp(momentum) is one more fp32 shard.
TEST(MuonTermsTest, NesterovAddsItsBlend) {
  Layout l;
  l.muon_nesterov = true;
  EXPECT_DOUBLE_EQ(Step(l), 18 * kFc1);
  l.tensor = 4;
  EXPECT_DOUBLE_EQ(Step(l), 14 * kFc1 + 4 * kFc1 / 4);
}

// The routed experts' FC1 over expert TP, the router whole: here 64
// experts of width 14336 make the largest matrix (2 x 14336 x 1024), the
// MTP projection (1024 x 2048) and a learned position embedding (65536 x
// 1024, whole: 12 X) count where the stage holds them.
TEST(MuonTermsTest, ExpertsMtpAndPositionsAreMatricesToo) {
  ModelShape m = SmallLlama();
  m.experts = 64;
  m.expert_ffn = 14336;
  Layout l;
  l.expert_tensor = 2;
  MuonStage s;
  s.layers.moe = 1;
  const double expert_fc1 = 2 * 14336.0 * 1024;
  EXPECT_DOUBLE_EQ(MuonStepBytes(m, l, s), 14 * expert_fc1);
  m.learned_positions = 65536;
  s.first = true;
  EXPECT_DOUBLE_EQ(MuonStepBytes(m, l, s), 12 * 65536.0 * 1024);
  MuonStage mtp;
  mtp.mtp_layers = 1;
  EXPECT_DOUBLE_EQ(MuonStepBytes(SmallLlama(), l, mtp), 14 * kFc1);
  EXPECT_DOUBLE_EQ(MuonStepBytes(SmallLlama(), l, MuonStage()), 0);
}

}  // namespace
}  // namespace memgate
