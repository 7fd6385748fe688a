#include "readers/megatron_model_writer.h"

#include "absl/strings/str_cat.h"

namespace memgate {

std::optional<std::string> MegatronModelArguments(
    const v1::ModelConfig& m) {
  if (m.has_moe() || m.has_mla() || m.mtp_num_layers() > 0 ||
      m.sandwich_norms() || m.final_logit_softcapping() > 0 ||
      m.activation_clamp() ||
      m.mlp_activation() == v1::MLP_ACTIVATION_QUICK_GEGLU ||
      m.num_layers() == 0 || m.num_attention_heads() == 0) {
    return std::nullopt;
  }
  std::string out = absl::StrCat(
      "--num-layers ", m.num_layers(), " --hidden-size ", m.hidden_size(),
      " --ffn-hidden-size ", m.ffn_hidden_size(), " --num-attention-heads ",
      m.num_attention_heads());
  if (m.num_query_groups() != 0 &&
      m.num_query_groups() != m.num_attention_heads()) {
    absl::StrAppend(&out, " --group-query-attention --num-query-groups ",
                    m.num_query_groups());
  }
  if (m.head_dim() != 0) absl::StrAppend(&out, " --kv-channels ", m.head_dim());
  // The reader pads a --vocab-size to the multiple times TP; an allocated
  // vocabulary (divisible-by 0) is given as Megatron's padded size.
  if (m.vocab_size_divisible_by() != 0) {
    absl::StrAppend(&out, " --vocab-size ", m.vocab_size(),
                    " --make-vocab-size-divisible-by ",
                    m.vocab_size_divisible_by());
  } else {
    absl::StrAppend(&out, " --padded-vocab-size ", m.vocab_size());
  }
  switch (m.mlp_activation()) {
    case v1::MLP_ACTIVATION_GELU:
      break;  // Megatron's default MLP
    case v1::MLP_ACTIVATION_SQUARED_RELU:
      out += " --squared-relu";
      if (m.linear_bias()) out += " --no-bias-gelu-fusion";
      break;
    default:
      out += " --swiglu";
      break;
  }
  out += m.normalization() == v1::NORMALIZATION_LAYERNORM
             ? " --normalization LayerNorm"
             : " --normalization RMSNorm";
  if (!m.linear_bias()) out += " --disable-bias-linear";
  if (m.qkv_bias() && !m.linear_bias()) out += " --add-qkv-bias";
  if (m.qk_norm()) out += " --qk-layernorm";
  if (m.position_embedding() == v1::POSITION_EMBEDDING_LEARNED_ABSOLUTE) {
    out += " --position-embedding-type learned_absolute";
    if (m.max_position_embeddings() != 0) {
      absl::StrAppend(&out, " --max-position-embeddings ",
                      m.max_position_embeddings());
    }
  } else {
    out += " --position-embedding-type rope";
  }
  if (!m.tie_word_embeddings()) {
    out += " --untie-embeddings-and-output-weights";
  }
  return out;
}

}  // namespace memgate
