#ifndef MEMGATE_READERS_TE_ATTENTION_ENVIRONMENT_H_
#define MEMGATE_READERS_TE_ATTENTION_ENVIRONMENT_H_

// TransformerEngine chooses its attention kernel by environment variables
// as well as by Megatron's arguments: NVTE_FLASH_ATTN, NVTE_FLASH_ATTN_V2,
// NVTE_FUSED_ATTN and NVTE_UNFUSED_ATTN, each 1 (allowed) unless set to 0
// (TE d0067d0 pytorch/attention/dot_product_attention/utils.py
// get_attention_backend: int(os.environ.get(NAME, "1"))). Switching
// FlashAttention and cuDNN's fused attention off leaves the unfused one,
// which keeps the s x s scores: a launch read without them would be
// admitted at a fraction of what it keeps. NVTE_ALLOW_NONDETERMINISTIC_
// ALGO=0 asks for deterministic kernels, which takes cuDNN's from GPUs
// below sm90 (dot_product_attention.py, utils.py "Filter: Determinism").
// NVTE_MASKED_SOFTMAX_FUSION=0 takes the fused softmax from TE's unfused
// attention (softmax.py FusedScaleMaskSoftmax): torch's fp32 softmax
// output is kept then, at every sequence length.
// Internal to ParseMegatronLaunch.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/memgate.pb.h"
#include "readers/launch_arguments.h"

namespace memgate {

// What the launch's TE attention variables (Arguments::environment())
// leave TransformerEngine to run.
enum class TeEnvironmentKernel {
  kAsArguments,    // the arguments decide (none set, or all agree)
  kUnfused,        // FlashAttention and cuDNN's fused attention both off
  kFlashDisabled,  // FlashAttention off: cuDNN's where it trains the job
};
struct TeEnvironment {
  TeEnvironmentKernel kernel = TeEnvironmentKernel::kAsArguments;
  // NVTE_UNFUSED_ATTN=0 where TE reads it: a job that needs the unfused
  // attention has no backend (the caller refuses it).
  bool unfused_off = false;
  // NVTE_ALLOW_NONDETERMINISTIC_ALGO=0 (or --deterministic-mode, which
  // requires it): TE's deterministic attention (TrainingConfig.
  // te_deterministic_attention).
  bool deterministic = false;
  // NVTE_MASKED_SOFTMAX_FUSION=0 where TE's attention runs
  // (TrainingConfig.te_masked_softmax_fusion_disabled).
  bool masked_softmax_fusion_off = false;
};

// Megatron-LM from core 0.11 on (a launch dated so by --attention-backend
// or by an argument only a release after core 0.12.0 has) sets the three
// variables itself from --attention-backend and stops at start where one
// is already set otherwise (core/models/common/language_module/
// language_module.py _set_attention_backend): such a launch is
// INVALID_ARGUMENT naming the variable. Older releases leave them to TE,
// which reads each with int(): a value int() refuses is INVALID_ARGUMENT,
// and so are all three off (TE has no backend). `backend` is the launch's
// --attention-backend ("auto" when absent); `local_attention` says
// Megatron's own attention runs (--transformer-impl local), which reads
// none of them. Notes say what the variables changed; errors name
// `source`, where the variables came from.
absl::StatusOr<TeEnvironment> ReadTeAttentionEnvironment(
    const Arguments& args, const std::string& backend, bool local_attention,
    std::vector<std::string>& notes,
    absl::string_view source = "the launch's environment");

}  // namespace memgate

#endif  // MEMGATE_READERS_TE_ATTENTION_ENVIRONMENT_H_
