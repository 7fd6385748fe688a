#include "estimator/attention_backend.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "estimator/catalog.h"

namespace memgate {

AttentionHeadDims HeadDimsOf(const v1::ModelConfig& model) {
  if (model.has_mla()) {
    const v1::MlaConfig& mla = model.mla();
    return {uint64_t{mla.qk_head_dim()} + mla.qk_pos_emb_head_dim(),
            mla.v_head_dim()};
  }
  uint64_t d = model.head_dim();
  if (d == 0 && model.num_attention_heads() > 0) {
    d = model.hidden_size() / model.num_attention_heads();
  }
  return {d, d};
}

namespace {

// FlashAttention 2 pads to the larger of the two (utils.py).
uint64_t Padded(const AttentionHeadDims& d) { return std::max(d.qk, d.v); }

bool MultiplesOf8(const AttentionHeadDims& d) {
  return d.qk % 8 == 0 && d.v % 8 == 0;
}

// The largest head dimension a fused kernel memgate assumes trains on the
// GPU: 256 (FlashAttention 2 on sm80/90/100/120, cuDNN and FlashAttention 3
// on Hopper), 192 on Ada and Blackwell Ultra (FlashAttention 2's limit
// there, utils.py "(>192 requires sm80/90/100+)" for compute capabilities
// (8,0), (9,0), (10,0), (12,0) only; cuDNN's is 128 off Hopper).
uint64_t LargestFusedHeadDim(GpuFamily family) {
  return family == GpuFamily::kAda || family == GpuFamily::kBlackwellUltra
             ? 192
             : 256;
}

// The catalog GPUs below sm90 (Ampere sm80, Ada sm89).
bool BelowSm90(GpuFamily family) {
  return family == GpuFamily::kAmpere || family == GpuFamily::kAda;
}

// The catalog GPUs that are not Hopper: those below sm90, Blackwell and
// AMD's (a GPU outside the catalog is taken for an H100, as everywhere in
// this file).
bool OffHopper(GpuFamily family) {
  return family != GpuFamily::kHopper && family != GpuFamily::kUnknown;
}

// Whether cuDNN's fused attention trains these head dimensions on the GPU
// (common/fused_attn/fused_attn.cpp nvte_get_fused_attn_backend, the
// F16_arbitrary_seqlen backend, training): multiples of 8 up to 128 on
// sm80 on; up to 256 on Hopper (cuDNN 9.5 on); on Blackwell DeepSeek's
// MLA (192 Q/K, 128 V; cuDNN 9.11 on, assumed installed with any TE that
// trains MLA there). Blackwell's 256 needs cuDNN 9.23 and no dropout, and
// is not assumed. Deterministic, below sm90 not at all (utils.py "Filter:
// Determinism"), on Blackwell only without attention dropout (fused_attn.cpp
// "determinism on Blackwell": pre-9.18.1 cuDNN's backward there is never
// deterministic, 9.18.1 on is with dropout 0.0 and no bias; the version is
// assumed, the dropout is not).
bool CudnnTrains(const AttentionHeadDims& d, GpuFamily family,
                 TeSwitches switches) {
  if (switches.deterministic && BelowSm90(family)) return false;
  if (switches.deterministic && switches.attention_dropout &&
      IsBlackwell(family)) {
    return false;
  }
  if (!MultiplesOf8(d)) return false;
  if (d.qk <= 128 && d.v <= 128) return true;
  if (IsBlackwell(family)) return d.qk == 192 && d.v == 128;
  return !OffHopper(family) && Padded(d) <= 256;
}

// Attention sinks under deterministic execution: FlashAttention has no
// sinks, and TransformerEngine takes cuDNN's fused attention from them
// (utils.py "Filter: Determinism": "Sink attention (off-by-one and
// learnable softmax) requires NVTE_ALLOW_NONDETERMINISTIC_ALGO=1"): only
// its unfused attention is left.
bool SinksDeterministically(const v1::ModelConfig& model,
                            TeSwitches switches) {
  return switches.deterministic &&
         model.softmax_type() != v1::SOFTMAX_TYPE_VANILLA;
}

// Windowed layers with attention dropout where FlashAttention cannot run
// them: TransformerEngine takes cuDNN's fused attention from a sliding
// window with dropout (utils.py "Filter: Sliding window attention": "it
// only supports sliding window attention without dropout"), and
// FlashAttention is off or has no sinks: the unfused attention is left
// (for the windowed layers; counted on every layer).
bool WindowsWithoutAKernel(const v1::ModelConfig& model,
                           TeSwitches switches) {
  const bool no_flash = switches.flash_attention_disabled ||
                        model.softmax_type() != v1::SOFTMAX_TYPE_VANILLA;
  return model.sliding_window() && switches.attention_dropout && no_flash;
}

}  // namespace

TeSwitches TeSwitchesOf(const v1::TrainingConfig& training) {
  return {training.flash_attention_disabled(),
          training.te_deterministic_attention(),
          training.attention_dropout() > 0};
}

TeAttention TransformerEngineAttention(const v1::ModelConfig& model,
                                       v1::Precision precision,
                                       absl::string_view accelerator,
                                       TeSwitches switches) {
  // No TE kernel soft-caps the scores: Gemma 2 runs its own attention
  // (attention_backend.h).
  if (model.attention_logit_softcapping() > 0) {
    return TeAttention::kUnfusedUnlessFlex;
  }
  if (precision == v1::PRECISION_FP32) return TeAttention::kUnfusedOnly;
  const AttentionHeadDims d = HeadDimsOf(model);
  if (d.qk == 0) return TeAttention::kFlashOrFused;  // validation's to refuse
  if (SinksDeterministically(model, switches) ||
      WindowsWithoutAKernel(model, switches)) {
    return TeAttention::kUnfusedOnly;
  }
  const GpuFamily family = FamilyOfAccelerator(accelerator);
  if (switches.flash_attention_disabled) {
    return CudnnTrains(d, family, switches)
               ? TeAttention::kFlashOrFused
               : TeAttention::kUnfusedOnly;
  }
  if (Padded(d) > LargestFusedHeadDim(family)) {
    // Blackwell Ultra up to 256: FlashAttention 4 where installed (utils.py
    // takes it on sm100 to sm11x), not assumed.
    return family == GpuFamily::kBlackwellUltra && Padded(d) <= 256 &&
                   MultiplesOf8(d)
               ? TeAttention::kUnfusedUnlessFa3
               : TeAttention::kUnfusedOnly;
  }
  if (!MultiplesOf8(d)) return TeAttention::kUnfusedUnlessFa3;
  return TeAttention::kFlashOrFused;
}

std::string WhyNoFusedAttention(const v1::ModelConfig& model,
                                v1::Precision precision,
                                absl::string_view accelerator,
                                TeSwitches switches) {
  const AttentionHeadDims d = HeadDimsOf(model);
  const std::string dims =
      d.qk == d.v ? absl::StrCat("a head dimension of ", d.qk)
                  : absl::StrCat("head dimensions of ", d.qk, " (Q, K) and ",
                                 d.v, " (V)");
  const TeAttention te =
      TransformerEngineAttention(model, precision, accelerator, switches);
  // bf16 and fp16 left with the unfused attention: why, by the switch or
  // the model's feature that took the fused kernels away.
  if (te == TeAttention::kUnfusedOnly && precision != v1::PRECISION_FP32) {
    if (SinksDeterministically(model, switches)) {
      return absl::StrCat(
          "attention sinks (model.softmax_type ",
          v1::SoftmaxType_Name(model.softmax_type()),
          ") with deterministic execution (training.te_deterministic_"
          "attention: NVTE_ALLOW_NONDETERMINISTIC_ALGO=0 or "
          "--deterministic-mode): FlashAttention has no sinks, and "
          "TransformerEngine runs cuDNN's fused attention with sinks only "
          "non-deterministically");
    }
    if (WindowsWithoutAKernel(model, switches)) {
      return absl::StrCat(
          "sliding-window layers (model.sliding_window) with attention "
          "dropout (training.attention_dropout; Megatron's default 0.1) and ",
          switches.flash_attention_disabled
              ? "FlashAttention disabled (training.flash_attention_disabled: "
                "NVTE_FLASH_ATTN=0 or --attention-backend fused)"
              : "attention sinks (model.softmax_type), which FlashAttention "
                "does not run",
          ": cuDNN's fused attention runs sliding windows only without "
          "dropout, so those layers run unfused (counted on every layer: an "
          "upper bound where only some are windowed)");
    }
    if (switches.flash_attention_disabled) {
      const std::string on =
          accelerator.empty() ? std::string()
                              : absl::StrCat(" on an ", accelerator);
      const std::string off =
          "FlashAttention disabled (training.flash_attention_disabled: "
          "NVTE_FLASH_ATTN=0 or --attention-backend fused)";
      const std::string deterministic =
          " and deterministic execution (training.te_deterministic_attention: "
          "NVTE_ALLOW_NONDETERMINISTIC_ALGO=0 or --deterministic-mode)";
      const GpuFamily family = FamilyOfAccelerator(accelerator);
      if (switches.deterministic && BelowSm90(family)) {
        return absl::StrCat(off, deterministic, on,
                            ": cuDNN's fused attention trains "
                            "deterministically from sm90 on only");
      }
      if (switches.deterministic && switches.attention_dropout &&
          IsBlackwell(family)) {
        return absl::StrCat(off, deterministic, " with attention dropout "
                            "(training.attention_dropout; Megatron's default "
                            "0.1)", on, ": cuDNN's fused attention trains "
                            "deterministically on Blackwell only without "
                            "dropout");
      }
      return absl::StrCat(off, " and ", dims, on,
                          ": cuDNN's fused attention trains multiples of 8 up "
                          "to 128 (256 on Hopper)");
    }
  }
  switch (te) {
    case TeAttention::kFlashOrFused:
      return "";
    case TeAttention::kUnfusedUnlessFlex:
      return absl::StrCat(
          "attention logit soft-capping (model.attention_logit_softcapping "
          "= ", model.attention_logit_softcapping(),
          "): TransformerEngine's attention kernels have none, and Gemma 2's "
          "own attention (Gemma2DotProductAttention) runs unfused in NeMo, "
          "and in Megatron-Bridge wherever the dataloader sends a mask or "
          "attention dropout is on (recent Megatron-Bridge runs FlexAttention "
          "otherwise: give the flash kernel to say so, --attention=flash)");
    case TeAttention::kUnfusedOnly:
      if (precision == v1::PRECISION_FP32) {
        return "fp32 training: TransformerEngine has no FlashAttention or "
               "fused attention for fp32 Q, K and V";
      }
      if (Padded(d) <= 256) {
        return absl::StrCat(dims, " on an ", accelerator, ": FlashAttention "
                            "2 trains at most 192 there and cuDNN's fused "
                            "attention at most 128");
      }
      return absl::StrCat(dims, ": TransformerEngine's FlashAttention and "
                          "cuDNN's fused attention train at most 256");
    case TeAttention::kUnfusedUnlessFa3:
      if (MultiplesOf8(d)) {  // Blackwell Ultra's 193 to 256
        return absl::StrCat(dims, " on a ", accelerator, ": FlashAttention "
                            "2 trains at most 192 there and cuDNN's fused "
                            "attention at most 128 (FlashAttention 4, where "
                            "installed, runs it: give the flash kernel to say "
                            "so, --attention=flash or --attention-backend "
                            "flash)");
      }
      return absl::StrCat(dims, ": FlashAttention 2 and cuDNN's fused "
                          "attention need multiples of 8 (FlashAttention 3, "
                          "where installed on Hopper, runs it: give the "
                          "flash kernel to say so, --attention=flash or "
                          "--attention-backend flash)");
  }
  return "";
}

}  // namespace memgate
