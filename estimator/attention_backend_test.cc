#include "estimator/attention_backend.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace memgate {
namespace {

v1::ModelConfig Heads(uint32_t hidden, uint32_t heads, uint32_t head_dim = 0) {
  v1::ModelConfig m;
  m.set_hidden_size(hidden);
  m.set_num_attention_heads(heads);
  m.set_head_dim(head_dim);
  return m;
}

constexpr v1::Precision kBf16 = v1::PRECISION_BF16_FP32_GRADS;

// DeepSeek-V3's MLA heads: 192-wide Q and K (128 + 64 rotary), 128-wide V.
v1::ModelConfig DeepSeekMla() {
  v1::ModelConfig mla = Heads(7168, 128);
  mla.mutable_mla()->set_qk_head_dim(128);
  mla.mutable_mla()->set_qk_pos_emb_head_dim(64);
  mla.mutable_mla()->set_v_head_dim(128);
  return mla;
}

// TransformerEngine's selection for training, by shape and precision:
// Llama's 128, Gemma's 256 and MLA's 192 / 128 run fused kernels in bf16
// and fp16; fp32, and head dimensions over 256, none; those that are not
// multiples of 8 only FlashAttention 3.
TEST(AttentionBackendTest, ShapesAndPrecisionsAsTransformerEngineSelects) {
  EXPECT_EQ(TransformerEngineAttention(Heads(4096, 32), kBf16),
            TeAttention::kFlashOrFused);
  EXPECT_EQ(TransformerEngineAttention(Heads(4096, 32), v1::PRECISION_FP16),
            TeAttention::kFlashOrFused);
  EXPECT_EQ(TransformerEngineAttention(Heads(3072, 16, 256), kBf16),
            TeAttention::kFlashOrFused);
  v1::ModelConfig mla = DeepSeekMla();
  EXPECT_EQ(HeadDimsOf(mla).qk, 192u);
  EXPECT_EQ(HeadDimsOf(mla).v, 128u);
  EXPECT_EQ(TransformerEngineAttention(mla, kBf16), TeAttention::kFlashOrFused);

  EXPECT_EQ(TransformerEngineAttention(Heads(4096, 32), v1::PRECISION_FP32),
            TeAttention::kUnfusedOnly);
  EXPECT_EQ(TransformerEngineAttention(Heads(1024, 2, 512), kBf16),
            TeAttention::kUnfusedOnly);
  EXPECT_EQ(TransformerEngineAttention(Heads(1024, 2), kBf16),  // h/a 512
            TeAttention::kUnfusedOnly);
  mla.mutable_mla()->set_qk_pos_emb_head_dim(132);  // 260 for Q and K
  EXPECT_EQ(TransformerEngineAttention(mla, kBf16), TeAttention::kUnfusedOnly);
  EXPECT_EQ(TransformerEngineAttention(Heads(1000, 10), kBf16),  // 100
            TeAttention::kUnfusedUnlessFa3);
  mla.mutable_mla()->set_qk_pos_emb_head_dim(60);  // 188
  EXPECT_EQ(TransformerEngineAttention(mla, kBf16),
            TeAttention::kUnfusedUnlessFa3);
  // No heads: validation's to refuse, not this.
  EXPECT_EQ(TransformerEngineAttention(v1::ModelConfig(), kBf16),
            TeAttention::kFlashOrFused);
}

// On the catalog's L40S (sm89) FlashAttention 2 stops at 192 and cuDNN
// trains at most 128: Gemma's 256 runs unfused there, and on an A100, an
// H100, a B200 or a GPU outside the catalog fused; MLA's 192 fused on all.
TEST(AttentionBackendTest, AnL40sTrainsHeadDimensionsUpTo192Fused) {
  const v1::ModelConfig gemma = Heads(3072, 16, 256);
  EXPECT_EQ(TransformerEngineAttention(gemma, kBf16, "l40s-48gb"),
            TeAttention::kUnfusedOnly);
  for (const char* gpu : {"a100-40gb", "h100-80gb", "b200-180gb", "", "x"}) {
    EXPECT_EQ(TransformerEngineAttention(gemma, kBf16, gpu),
              TeAttention::kFlashOrFused)
        << gpu;
  }
  EXPECT_EQ(TransformerEngineAttention(Heads(3072, 16, 192), kBf16,
                                       "l40s-48gb"),
            TeAttention::kFlashOrFused);
  EXPECT_NE(WhyNoFusedAttention(gemma, kBf16, "l40s-48gb")
                .find("on an l40s-48gb: FlashAttention 2 trains at most 192"),
            std::string::npos);
}

// The reason names the precision or the dimensions; none where a fused
// kernel runs.
TEST(AttentionBackendTest, TheReasonNamesWhatRulesTheKernelsOut) {
  EXPECT_EQ(WhyNoFusedAttention(Heads(4096, 32), kBf16), "");
  EXPECT_NE(WhyNoFusedAttention(Heads(4096, 32), v1::PRECISION_FP32)
                .find("fp32"),
            std::string::npos);
  EXPECT_NE(WhyNoFusedAttention(Heads(1024, 2), kBf16)
                .find("a head dimension of 512"),
            std::string::npos);
  EXPECT_NE(WhyNoFusedAttention(Heads(1000, 10), kBf16)
                .find("multiples of 8"),
            std::string::npos);
}

// Gemma 2's soft-capped attention scores: no TransformerEngine kernel
// caps them, so on every GPU and in every precision Gemma 2's own
// attention runs, unfused unless Megatron-Bridge's FlexAttention is said
// to; the reason names the field, the attention and how to say so.
TEST(AttentionBackendTest, SoftCappedScoresRunGemma2sOwnAttention) {
  v1::ModelConfig gemma2 = Heads(3584, 16, 256);
  gemma2.set_attention_logit_softcapping(50);
  for (const char* gpu : {"h100-80gb", "b200-180gb", "l40s-48gb", ""}) {
    EXPECT_EQ(TransformerEngineAttention(gemma2, kBf16, gpu),
              TeAttention::kUnfusedUnlessFlex)
        << gpu;
  }
  EXPECT_EQ(TransformerEngineAttention(gemma2, v1::PRECISION_FP32),
            TeAttention::kUnfusedUnlessFlex);
  const std::string why = WhyNoFusedAttention(gemma2, kBf16, "h100-80gb");
  for (const char* named :
       {"model.attention_logit_softcapping = 50", "Gemma2DotProductAttention",
        "FlexAttention", "--attention=flash"}) {
    EXPECT_NE(why.find(named), std::string::npos) << named << ": " << why;
  }
  // Without the cap the same shape runs fused on an H100.
  gemma2.set_attention_logit_softcapping(0);
  EXPECT_EQ(TransformerEngineAttention(gemma2, kBf16, "h100-80gb"),
            TeAttention::kFlashOrFused);
}

// FlashAttention disabled (NVTE_FLASH_ATTN=0, --attention-backend fused)
// leaves cuDNN's fused attention (nvte_get_fused_attn_backend): multiples
// of 8 up to 128 on every GPU; Gemma's 256 on Hopper (and on a GPU outside
// the catalog, taken for an H100) but not on an A100, an L40S or a B200
// (cuDNN 9.23 not assumed); DeepSeek's MLA 192 / 128 on Hopper and
// Blackwell but not on an A100; nothing that is not a multiple of 8 (no
// FlashAttention 3 either) and nothing in fp32. The reason names the
// setting and the GPU.
constexpr TeSwitches kNoFlash{/*flash_attention_disabled=*/true,
                              /*deterministic=*/false,
                              /*attention_dropout=*/false};

TEST(AttentionBackendTest, WithoutFlashAttentionCudnnsFusedAttentionRuns) {
  auto te = [](const v1::ModelConfig& m, const char* gpu) {
    return TransformerEngineAttention(m, kBf16, gpu, kNoFlash);
  };
  const v1::ModelConfig llama = Heads(4096, 32);
  const v1::ModelConfig gemma = Heads(3072, 16, 256);
  const v1::ModelConfig mla = DeepSeekMla();
  for (const char* gpu : {"a100-80gb", "a800-80gb", "h100-80gb",
                          "h800-80gb", "h20-96gb", "h200-141gb",
                          "b200-180gb", "l40s-48gb", ""}) {
    EXPECT_EQ(te(llama, gpu), TeAttention::kFlashOrFused) << gpu;
    EXPECT_EQ(te(Heads(1000, 10), gpu), TeAttention::kUnfusedOnly) << gpu;
  }
  for (const char* gpu : {"h100-80gb", "h100-94gb", "h800-80gb", "h20-96gb",
                          "h200-141gb", ""}) {
    EXPECT_EQ(te(gemma, gpu), TeAttention::kFlashOrFused) << gpu;
    EXPECT_EQ(te(mla, gpu), TeAttention::kFlashOrFused) << gpu;
  }
  for (const char* gpu : {"a100-40gb", "a100-80gb", "a800-80gb", "l40s-48gb",
                          "b200-180gb", "mi325x-256gb"}) {
    EXPECT_EQ(te(gemma, gpu), TeAttention::kUnfusedOnly) << gpu;
    // With FlashAttention on, FlashAttention 2 trains 256 off the L40S.
    if (std::string(gpu) != "l40s-48gb") {
      EXPECT_EQ(TransformerEngineAttention(gemma, kBf16, gpu),
                TeAttention::kFlashOrFused)
          << gpu;
    }
  }
  EXPECT_EQ(te(mla, "b200-180gb"), TeAttention::kFlashOrFused);
  EXPECT_EQ(te(mla, "a100-80gb"), TeAttention::kUnfusedOnly);
  EXPECT_EQ(TransformerEngineAttention(llama, v1::PRECISION_FP32, "",
                                       kNoFlash),
            TeAttention::kUnfusedOnly);

  EXPECT_EQ(WhyNoFusedAttention(gemma, kBf16, "h100-80gb", kNoFlash), "");
  const std::string why =
      WhyNoFusedAttention(gemma, kBf16, "a100-80gb", kNoFlash);
  for (const char* named :
       {"training.flash_attention_disabled", "NVTE_FLASH_ATTN=0",
        "a head dimension of 256", "a100-80gb", "up to 128"}) {
    EXPECT_NE(why.find(named), std::string::npos) << named << ": " << why;
  }
}

// Deterministic execution takes cuDNN's fused attention from GPUs below
// sm90 (TE "Filter: Determinism"): without FlashAttention Llama's heads
// run unfused on an A100 or L40S, fused on Hopper and Blackwell; with
// FlashAttention (deterministic from flash-attn 2.4.1) nothing changes.
TEST(AttentionBackendTest, DeterministicCudnnAttentionNeedsSm90) {
  const v1::ModelConfig llama = Heads(4096, 32);
  const TeSwitches deterministic{true, true, false};
  for (const char* gpu : {"a100-40gb", "a100-80gb", "a800-80gb", "l40s-48gb"}) {
    EXPECT_EQ(TransformerEngineAttention(llama, kBf16, gpu, deterministic),
              TeAttention::kUnfusedOnly)
        << gpu;
    EXPECT_EQ(TransformerEngineAttention(llama, kBf16, gpu,
                                         {false, true, false}),
              TeAttention::kFlashOrFused)
        << gpu;
  }
  for (const char* gpu : {"h100-80gb", "h800-80gb", "h20-96gb", "h200-141gb",
                          "b200-180gb", ""}) {
    EXPECT_EQ(TransformerEngineAttention(llama, kBf16, gpu, deterministic),
              TeAttention::kFlashOrFused)
        << gpu;
  }
  const std::string why =
      WhyNoFusedAttention(llama, kBf16, "a100-80gb", deterministic);
  for (const char* named : {"training.te_deterministic_attention",
                            "NVTE_ALLOW_NONDETERMINISTIC_ALGO=0", "sm90",
                            "a100-80gb"}) {
    EXPECT_NE(why.find(named), std::string::npos) << named << ": " << why;
  }
}

// The switches a case sets: FlashAttention off, deterministic kernels,
// attention dropout.
constexpr TeSwitches kOff{true, false, false};
constexpr TeSwitches kOffDeterministic{true, true, false};
constexpr TeSwitches kOffDropout{true, false, true};
constexpr TeSwitches kOffDeterministicDropout{true, true, true};
constexpr TeSwitches kDeterministic{false, true, false};
constexpr TeSwitches kDeterministicDropout{false, true, true};
constexpr TeSwitches kDropout{false, false, true};

// What TransformerEngine has for `model` under `switches`.
struct KernelCase {
  const v1::ModelConfig* model;
  TeSwitches switches;
  TeAttention expected;
};

void ExpectKernels(const char* gpu, const std::vector<KernelCase>& cases) {
  for (size_t i = 0; i < cases.size(); ++i) {
    const KernelCase& c = cases[i];
    EXPECT_EQ(TransformerEngineAttention(*c.model, kBf16, gpu, c.switches),
              c.expected)
        << gpu << ", case " << i;
  }
}

// On Blackwell cuDNN's backward is deterministic only without attention
// dropout (TE fused_attn.cpp "determinism on Blackwell"): Megatron's
// default 0.1 with --deterministic-mode and FlashAttention off leaves TE
// its unfused attention there (the s x s scores kept), not on Hopper;
// without determinism, or without dropout, cuDNN's runs, and
// FlashAttention (deterministic from 2.4.1) takes it where on. Before,
// every deterministic run from sm90 on was taken to be cuDNN's: a B200 job
// holding its scores was estimated without them.
TEST(AttentionBackendTest, DeterministicCudnnOnBlackwellNeedsNoDropout) {
  const v1::ModelConfig llama = Heads(4096, 32);
  for (const char* gpu : {"b200-180gb", "gb200-186gb", "b300-288gb"}) {
    ExpectKernels(gpu, {{&llama, kOffDeterministicDropout,
                         TeAttention::kUnfusedOnly},
                        {&llama, kOffDeterministic, TeAttention::kFlashOrFused},
                        {&llama, kOffDropout, TeAttention::kFlashOrFused},
                        {&llama, kDeterministicDropout,
                         TeAttention::kFlashOrFused}});
  }
  for (const char* gpu : {"h100-80gb", "h200-141gb", ""}) {
    ExpectKernels(gpu, {{&llama, kOffDeterministicDropout,
                         TeAttention::kFlashOrFused}});
  }
  const std::string why = WhyNoFusedAttention(llama, kBf16, "b200-180gb",
                                              kOffDeterministicDropout);
  for (const char* named :
       {"training.te_deterministic_attention", "training.attention_dropout",
        "Blackwell", "b200-180gb", "NVTE_FLASH_ATTN=0"}) {
    EXPECT_NE(why.find(named), std::string::npos) << named << ": " << why;
  }
  // The training config carries the dropout into the switches.
  v1::TrainingConfig training;
  training.set_attention_dropout(0.1f);
  EXPECT_TRUE(TeSwitchesOf(training).attention_dropout);
  training.set_attention_dropout(0);
  EXPECT_FALSE(TeSwitchesOf(training).attention_dropout);
}

// Attention sinks, deterministic: no FlashAttention (no sinks) and no
// cuDNN (utils.py "Filter: Determinism"), on every GPU and with
// FlashAttention on or off; not deterministic, unchanged (validation asks
// which kernel runs them).
TEST(AttentionBackendTest, DeterministicSinksHaveOnlyTheUnfusedAttention) {
  v1::ModelConfig sinks = Heads(2880, 64, 64);
  sinks.set_softmax_type(v1::SOFTMAX_TYPE_LEARNABLE);
  for (const char* gpu : {"h100-80gb", "b200-180gb", "a100-80gb", ""}) {
    ExpectKernels(gpu, {{&sinks, kDeterministic, TeAttention::kUnfusedOnly},
                        {&sinks, kOffDeterministic, TeAttention::kUnfusedOnly},
                        {&sinks, kOff, TeAttention::kFlashOrFused}});
  }
  const std::string why =
      WhyNoFusedAttention(sinks, kBf16, "h100-80gb", kOffDeterministic);
  for (const char* named : {"model.softmax_type", "SOFTMAX_TYPE_LEARNABLE",
                            "training.te_deterministic_attention",
                            "FlashAttention has no sinks"}) {
    EXPECT_NE(why.find(named), std::string::npos) << named << ": " << why;
  }
}

// Sliding windows with attention dropout: TransformerEngine's cuDNN
// attention takes none ("Filter: Sliding window attention"), so with
// FlashAttention off, or with sinks FlashAttention cannot run, only the
// unfused attention is left; FlashAttention runs windows with dropout,
// cuDNN's without it.
TEST(AttentionBackendTest, WindowsWithDropoutHaveNoCudnnAttention) {
  v1::ModelConfig windowed = Heads(4096, 32);
  windowed.set_sliding_window(true);
  v1::ModelConfig sinks = windowed;
  sinks.set_softmax_type(v1::SOFTMAX_TYPE_LEARNABLE);
  for (const char* gpu : {"h100-80gb", "b200-180gb", ""}) {
    ExpectKernels(gpu, {{&windowed, kOffDropout, TeAttention::kUnfusedOnly},
                        {&sinks, kDropout, TeAttention::kUnfusedOnly},
                        {&windowed, kDropout, TeAttention::kFlashOrFused},
                        {&windowed, kOff, TeAttention::kFlashOrFused},
                        {&sinks, kOff, TeAttention::kFlashOrFused}});
  }
  const std::string why =
      WhyNoFusedAttention(sinks, kBf16, "h100-80gb", kDropout);
  for (const char* named : {"model.sliding_window",
                            "training.attention_dropout",
                            "model.softmax_type", "upper bound"}) {
    EXPECT_NE(why.find(named), std::string::npos) << named << ": " << why;
  }
}

// Blackwell Ultra (sm103: B300, GB300): FlashAttention 2 stops at 192
// there (utils.py lists sm80/90/100/120 above it) and cuDNN trains 128
// (and DeepSeek's 192/128), so Gemma's 256 runs unfused unless
// FlashAttention 4 is installed (the job says so with the flash kernel);
// on a B200 FlashAttention 2 trains it.
TEST(AttentionBackendTest, BlackwellUltraStopsFlashAttention2At192) {
  const v1::ModelConfig llama = Heads(4096, 32);
  const v1::ModelConfig gemma = Heads(3072, 16, 256);
  const v1::ModelConfig mla = DeepSeekMla();
  const TeSwitches on{};
  for (const char* gpu : {"b300-288gb", "gb300-288gb"}) {
    ExpectKernels(gpu, {{&gemma, on, TeAttention::kUnfusedUnlessFa3},
                        {&llama, on, TeAttention::kFlashOrFused},
                        {&mla, kOff, TeAttention::kFlashOrFused},
                        {&gemma, kOff, TeAttention::kUnfusedOnly}});
  }
  ExpectKernels("b200-180gb", {{&gemma, on, TeAttention::kFlashOrFused}});
  const std::string why = WhyNoFusedAttention(gemma, kBf16, "b300-288gb");
  for (const char* named : {"a head dimension of 256", "b300-288gb",
                            "at most 192", "FlashAttention 4",
                            "--attention=flash"}) {
    EXPECT_NE(why.find(named), std::string::npos) << named << ": " << why;
  }
}

}  // namespace
}  // namespace memgate
