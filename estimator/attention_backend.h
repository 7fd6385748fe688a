#ifndef MEMGATE_ESTIMATOR_ATTENTION_BACKEND_H_
#define MEMGATE_ESTIMATOR_ATTENTION_BACKEND_H_

// Which of TransformerEngine's attention kernels a training step can run,
// as far as the model's head dimensions, the precision and the catalog GPU
// decide it: what Megatron's --attention-backend auto (its default) gets,
// and so what an unset training.attention_kernel resolves to
// (job_resolver.cc). The installed cuDNN and flash-attn decide the rest,
// which memgate does not see: FlashAttention is assumed wherever the shape
// and the GPU allow it (a GPU outside the catalog as an H100).
//
// TransformerEngine d0067d0, transformer_engine/pytorch/attention/
// dot_product_attention/utils.py get_attention_backend:
// - "Filter: Data type": FlashAttention and cuDNN's fused attention take
//   bf16 / fp16 (fp8) Q, K and V only.
// - "Filter: Head dimension": FlashAttention 2 takes the larger of the
//   Q/K and V head dimensions, a multiple of 8 up to 256 (above 192 on
//   sm80, sm90, sm100 and sm120 only: an L40S, sm89, and a B300, sm103,
//   stop at 192); FlashAttention 3 (Hopper, where installed) any up to
//   256, FlashAttention 4 (sm100 on, where installed) up to 256.
// - common/fused_attn/fused_attn.cpp nvte_get_fused_attn_backend: cuDNN's
//   fused attention trains multiples of 8, up to 128 (256 on Hopper).
// - Attention logit soft-capping (Gemma 2): TE's PyTorch attention takes
//   no score modifier, so Gemma 2 runs an attention of its own, context
//   parallel 1 only: NeMo's and Megatron-Bridge's Gemma2DotProductAttention
//   computes the scores unfused; recent Megatron-Bridge's
//   Gemma2FlexDotProductAttention (models/gemma/modeling_gemma2.py) runs
//   PyTorch's FlexAttention with the cap as its score_mod where it can (no
//   attention mask from the dataloader, no attention dropout), that
//   unfused attention otherwise.

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "proto/memgate.pb.h"

namespace memgate {

// A model's Q/K and V head dimensions: under MLA qk_head_dim +
// qk_pos_emb_head_dim and v_head_dim, otherwise head_dim (h / a when
// unset) for both; {0, 0} for a model without heads.
struct AttentionHeadDims {
  uint64_t qk = 0;
  uint64_t v = 0;
};
AttentionHeadDims HeadDimsOf(const v1::ModelConfig& model);

enum class TeAttention {
  kFlashOrFused,       // FlashAttention 2 or cuDNN's fused attention
  kUnfusedOnly,        // no fused kernel takes it: the unfused attention
  // A FlashAttention memgate does not assume installed (3 on Hopper, 4 for
  // Blackwell Ultra's heads above 192) where it is, else unfused.
  kUnfusedUnlessFa3,
  // Soft-capped scores: Megatron-Bridge's FlexAttention where it runs it
  // (ATTENTION_KERNEL_FLASH says so), else Gemma 2's unfused attention.
  kUnfusedUnlessFlex,
};

// TransformerEngine's switches beyond the shape: the job's training.
// flash_attention_disabled (NVTE_FLASH_ATTN=0, --attention-backend fused)
// leaves cuDNN's fused attention alone: multiples of 8 up to 128, 256 on
// Hopper (nvte_get_fused_attn_backend), DeepSeek's 192/128 on Blackwell;
// and training.te_deterministic_attention (NVTE_ALLOW_NONDETERMINISTIC_
// ALGO=0, Megatron's --deterministic-mode) takes cuDNN's from GPUs below
// sm90 ("Filter: Determinism"; FlashAttention 2 from 2.4.1, assumed, is
// deterministic), and on Blackwell from runs with attention dropout
// (fused_attn.cpp "determinism on Blackwell": a deterministic backward
// there needs dropout 0.0, and cuDNN 9.18.1, assumed), and from attention
// sinks on any GPU (utils.py "Filter: Determinism"; FlashAttention has no
// sinks). A model's sliding windows (model.sliding_window) with attention
// dropout take cuDNN's too ("Filter: Sliding window attention"), so with
// FlashAttention off or attention sinks nothing fused is left. kUnfusedOnly
// where nothing is left.
struct TeSwitches {
  bool flash_attention_disabled = false;
  bool deterministic = false;
  bool attention_dropout = false;  // training.attention_dropout > 0
};
TeSwitches TeSwitchesOf(const v1::TrainingConfig& training);

// `accelerator` is the job's resolved catalog name ("" when the GPU is
// not known yet, as in a launch read before --gpu applies).
TeAttention TransformerEngineAttention(const v1::ModelConfig& model,
                                       v1::Precision precision,
                                       absl::string_view accelerator = "",
                                       TeSwitches switches = {});

// Why TransformerEngineAttention leaves FlashAttention 2 and cuDNN's fused
// attention out, for notes, assumptions and refusals; "" where it does
// not.
std::string WhyNoFusedAttention(const v1::ModelConfig& model,
                                v1::Precision precision,
                                absl::string_view accelerator = "",
                                TeSwitches switches = {});

}  // namespace memgate

#endif  // MEMGATE_ESTIMATOR_ATTENTION_BACKEND_H_
