#include "readers/megatron_model_writer.h"

#include "absl/strings/str_cat.h"

namespace memgate {

namespace {

// --moe-layer-freq's list form for a pattern, runs written once:
// "([0]*3+[1]*58)" (readers/layer_pattern.h reads it back).
std::string LayerPatternText(const v1::MoeConfig& moe) {
  std::string text = "\"(";
  for (int i = 0; i < moe.layer_pattern_size();) {
    int same = 1;
    while (i + same < moe.layer_pattern_size() &&
           moe.layer_pattern(i + same) == moe.layer_pattern(i)) {
      ++same;
    }
    absl::StrAppend(&text, i == 0 ? "" : "+", "[", moe.layer_pattern(i),
                    "]*", same);
    i += same;
  }
  return text + ")\"";
}

// The experts' arguments, or nullopt where the model sets more than the
// command line below says (capacity, DeepEP, release-dated or unfused
// activations...): those launches give their own.
std::optional<std::string> ExpertArguments(const v1::MoeConfig& moe) {
  if (moe.token_dispatcher() == v1::MoeConfig::DISPATCHER_FLEX) {
    return std::nullopt;  // DeepEP's settings are the launch's own
  }
  v1::MoeConfig rest = moe;
  for (int field : {v1::MoeConfig::kNumExpertsFieldNumber,
                    v1::MoeConfig::kRouterTopkFieldNumber,
                    v1::MoeConfig::kExpertFfnHiddenSizeFieldNumber,
                    v1::MoeConfig::kSharedExpertFfnHiddenSizeFieldNumber,
                    v1::MoeConfig::kSharedExpertGateFieldNumber,
                    v1::MoeConfig::kLayerFrequencyFieldNumber,
                    v1::MoeConfig::kLayerPatternFieldNumber,
                    v1::MoeConfig::kGroupedGemmFieldNumber,
                    v1::MoeConfig::kTokenDispatcherFieldNumber,
                    v1::MoeConfig::kRouterScoreFunctionFieldNumber,
                    v1::MoeConfig::kRouterNumGroupsFieldNumber,
                    v1::MoeConfig::kRouterGroupTopkFieldNumber}) {
    rest.GetReflection()->ClearField(
        &rest, rest.GetDescriptor()->FindFieldByNumber(field));
  }
  if (rest.router_dtype() == v1::DTYPE_FP32) rest.clear_router_dtype();
  // Router settings the model leaves unknown read back as Megatron's
  // defaults, which keep no more (moe_terms.cc [RS]); a loss it names
  // needs the launch's own coefficient, and the fused router would date
  // the launch's release (megatron_moe_args.cc): not written.
  if (rest.has_router_fusion() && !rest.router_fusion()) {
    rest.clear_router_fusion();
  }
  if (rest.has_aux_loss() && !rest.aux_loss()) rest.clear_aux_loss();
  if (rest.has_z_loss() && !rest.z_loss()) rest.clear_z_loss();
  const char* score = nullptr;
  switch (moe.router_score_function()) {
    case v1::MoeConfig::ROUTER_SCORE_SOFTMAX_AFTER_TOPK:
      score = "";
      break;
    case v1::MoeConfig::ROUTER_SCORE_SOFTMAX:
      score = " --moe-router-pre-softmax";
      break;
    case v1::MoeConfig::ROUTER_SCORE_SIGMOID:
      score = " --moe-router-score-function sigmoid";
      break;
    case v1::MoeConfig::ROUTER_SCORE_SQRTSOFTPLUS:
      score = " --moe-router-score-function sqrtsoftplus";
      break;
    default:
      return std::nullopt;  // unknown: the launch says
  }
  if (rest.ByteSizeLong() != 0) return std::nullopt;
  std::string out = absl::StrCat(
      " --num-experts ", moe.num_experts(), " --moe-router-topk ",
      moe.router_topk(), " --moe-ffn-hidden-size ",
      moe.expert_ffn_hidden_size(), " --moe-grouped-gemm");
  if (moe.shared_expert_ffn_hidden_size() > 0) {
    absl::StrAppend(&out, " --moe-shared-expert-intermediate-size ",
                    moe.shared_expert_ffn_hidden_size());
  }
  if (moe.shared_expert_gate()) out += " --moe-shared-expert-gate";
  out += score;
  if (moe.router_group_topk() > 0) {
    absl::StrAppend(&out, " --moe-router-num-groups ",
                    moe.router_num_groups(), " --moe-router-group-topk ",
                    moe.router_group_topk());
  }
  if (moe.layer_pattern_size() > 0) {
    absl::StrAppend(&out, " --moe-layer-freq ", LayerPatternText(moe));
  } else if (moe.layer_frequency() > 1) {
    absl::StrAppend(&out, " --moe-layer-freq ", moe.layer_frequency());
  }
  // memgate's dispatcher by name is all-to-all; Megatron's default is
  // allgather.
  out += moe.token_dispatcher() == v1::MoeConfig::DISPATCHER_ALLGATHER
             ? " --moe-token-dispatcher-type allgather"
             : " --moe-token-dispatcher-type alltoall";
  return out;
}

}  // namespace

std::optional<std::string> MegatronModelArguments(
    const v1::ModelConfig& m) {
  if (m.sandwich_norms() || m.final_logit_softcapping() > 0 ||
      m.attention_logit_softcapping() > 0 || m.activation_clamp() ||
      m.mlp_activation() == v1::MLP_ACTIVATION_QUICK_GEGLU ||
      m.mlp_activation() == v1::MLP_ACTIVATION_GEGLU ||
      m.softmax_type() != v1::SOFTMAX_TYPE_VANILLA || m.sliding_window() ||
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
  if (m.qk_l2_norm()) out += " --qk-l2-norm";
  if (m.position_embedding() == v1::POSITION_EMBEDDING_LEARNED_ABSOLUTE) {
    out += " --position-embedding-type learned_absolute";
    if (m.max_position_embeddings() != 0) {
      absl::StrAppend(&out, " --max-position-embeddings ",
                      m.max_position_embeddings());
    }
  } else if (m.position_embedding() == v1::POSITION_EMBEDDING_YARN) {
    out += " --position-embedding-type yarn";
  } else if (m.position_embedding() == v1::POSITION_EMBEDDING_MROPE) {
    out += " --position-embedding-type mrope";
  } else if (m.position_embedding() == v1::POSITION_EMBEDDING_NONE) {
    out += " --position-embedding-type none";
  } else {
    out += " --position-embedding-type rope";
  }
  if (!m.tie_word_embeddings()) {
    out += " --untie-embeddings-and-output-weights";
  }
  if (m.has_mla()) {
    const v1::MlaConfig& mla = m.mla();
    absl::StrAppend(&out, " --multi-latent-attention --q-lora-rank ",
                    mla.q_lora_rank(), " --kv-lora-rank ", mla.kv_lora_rank(),
                    " --qk-head-dim ", mla.qk_head_dim(),
                    " --qk-pos-emb-head-dim ", mla.qk_pos_emb_head_dim(),
                    " --v-head-dim ", mla.v_head_dim());
    if (mla.fused_down_projection()) out += " --mla-down-proj-fusion";
  }
  if (m.has_moe() && m.moe().num_experts() > 0) {
    const std::optional<std::string> experts = ExpertArguments(m.moe());
    if (!experts) return std::nullopt;
    out += *experts;
  }
  if (m.mtp_num_layers() > 0) {
    absl::StrAppend(&out, " --mtp-num-layers ", m.mtp_num_layers());
    if (m.mtp_repeated_layer()) out += " --mtp-use-repeated-layer";
    if (m.mtp_hidden_state_mixing()) out += " --mtp-hsm";
  }
  return out;
}

}  // namespace memgate
