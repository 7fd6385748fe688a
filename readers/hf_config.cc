#include "readers/hf_config.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "estimator/clipped_text.h"
#include "proto/hf_config.pb.h"
#include "readers/file_util.h"

namespace memgate {
namespace {

absl::Status Missing(absl::string_view key) {
  return absl::InvalidArgumentError(
      absl::StrCat("config.json: ", key, ": required for a Llama model"));
}

// A family memgate models: its architectures and what transformers'
// config class assumes when a key is absent.
struct Family {
  const char* model_type;
  std::vector<std::string> architectures;
  bool tied_by_default;  // tie_word_embeddings when the config omits it
  bool qkv_bias;         // the family's attention has q, k, v biases
  bool qk_norm;          // RMSNorm on Q and K per head (Qwen3Attention)
  bool sandwich_norms;   // norms after attention and the MLP too (Gemma 2/3)
  enum Experts { kDense, kMixtral, kQwenMoe, kDeepseek, kGlm, kGptOss }
      experts = kDense;
  // Nemotron: an ungated MLP of hidden_act (up, down) and LayerNorm1P
  // (weight and bias), transformers' modeling_nemotron.py.
  bool ungated_mlp = false;
  bool layernorm = false;
  // Gemma: a gated tanh-GeLU (hidden_activation gelu_pytorch_tanh), which
  // Megatron runs unfused (MLP_ACTIVATION_GEGLU).
  bool gelu_gate = false;
  // Gemma 2's soft-caps where config.json leaves the key out (transformers'
  // Gemma2Config: attn_logit_softcapping 50, final_logit_softcapping 30;
  // an explicit null turns either off).
  float attention_cap_default = 0;
  float final_cap_default = 0;
  // The config class's head_dim and num_key_value_heads where the key is
  // left out (GptOssConfig: 64 and 8); 0: LlamaConfig's, hidden_size /
  // num_attention_heads and multi-head. An explicit null takes those in
  // every family (GptOssConfig.__post_init__).
  uint32_t head_dim_default = 0;
  uint32_t kv_heads_default = 0;
};

// Dense decoders with a gated MLP (SwiGLU / GeGLU: three matrices), RMSNorm
// and rotary positions, as transformers builds them; Nemotron's ungated
// squared-ReLU MLP and LayerNorm. head_dim and num_key_value_heads where
// config.json leaves them out are the config classes' own defaults
// (transformers' configuration_*.py: GemmaConfig head_dim 256 and 16
// key-value heads, Gemma2Config and Gemma3TextConfig 256 and 4,
// Qwen3Config 128 and 32, Qwen2Config 32, MistralConfig and MixtralConfig
// 8, Qwen2MoeConfig 16, Qwen3MoeConfig 4, Glm4MoeConfig 8), not
// LlamaConfig's hidden_size / num_attention_heads and multi-head: a
// Gemma-7B config without head_dim builds 256-wide heads, not 192.
const std::vector<Family>& Families() {
  static const auto* families = new std::vector<Family>{
      {"llama", {"LlamaForCausalLM"}, false, false, false, false},
      {"mistral", {"MistralForCausalLM"}, false, false, false, false,
       Family::kDense, false, false, false, 0, 0, 0, 8},
      {"qwen2", {"Qwen2ForCausalLM"}, false, true, false, false,  // qkv bias
       Family::kDense, false, false, false, 0, 0, 0, 32},
      {"qwen3", {"Qwen3ForCausalLM"}, false, false, true, false,  // QK-norm
       Family::kDense, false, false, false, 0, 0, 128, 32},
      {"phi3", {"Phi3ForCausalLM"}, false, false, false, false},
      {"gemma", {"GemmaForCausalLM"}, true, false, false, false,  // tied
       Family::kDense, false, false, true, 0, 0, 256, 16},
      {"gemma2", {"Gemma2ForCausalLM"}, true, false, false, true,
       Family::kDense, false, false, true, 50, 30, 256, 4},
      {"gemma3_text", {"Gemma3ForCausalLM"}, true, false, true, true,
       Family::kDense, false, false, true, 0, 0, 256, 4},
      {"mixtral", {"MixtralForCausalLM"}, false, false, false, false,
       Family::kMixtral, false, false, false, 0, 0, 0, 8},
      {"qwen2_moe", {"Qwen2MoeForCausalLM"}, false, true, false, false,
       Family::kQwenMoe, false, false, false, 0, 0, 0, 16},
      {"qwen3_moe", {"Qwen3MoeForCausalLM"}, false, false, true, false,
       Family::kQwenMoe, false, false, false, 0, 0, 0, 4},
      {"deepseek_v2", {"DeepseekV2ForCausalLM"}, false, false, false, false,
       Family::kDeepseek},
      {"deepseek_v3", {"DeepseekV3ForCausalLM"}, false, false, false, false,
       Family::kDeepseek},
      // Kimi K2: DeepSeek-V3's architecture and modeling code under a
      // model_type of its own (Moonshot's deployment guide: "Kimi-K2 reuses
      // DeepSeekV3CausalLM", runnable with model_type set to deepseek_v3).
      {"kimi_k2", {"DeepseekV3ForCausalLM"}, false, false, false, false,
       Family::kDeepseek},
      {"nemotron", {"NemotronForCausalLM"}, false, false, false, false,
       Family::kDense, true, true},
      // GLM-4.5: DeepSeek-V3's experts with grouped-query attention
      // (attention_bias: q, k, v biases; use_qk_norm), transformers'
      // modeling_glm4_moe.py.
      {"glm4_moe", {"Glm4MoeForCausalLM"}, false, false, false, false,
       Family::kGlm, false, false, false, 0, 0, 0, 8},
      // gpt-oss: every layer routed experts (GptOssExperts: biases, the
      // clamped quick-GeLU gate, (up + 1) x glu), attention sinks,
      // transformers' modeling_gpt_oss.py.
      {"gpt_oss", {"GptOssForCausalLM"}, false, false, false, false,
       Family::kGptOss, false, false, false, 0, 0, 64, 8},
  };
  return *families;
}

// Families seen in the wild that memgate does not model yet, and why.
const char* WhyNotModelled(absl::string_view model_type) {
  static const auto* reasons =
      new std::vector<std::pair<std::string, const char*>>{
          {"gemma3",
           "the multimodal Gemma 3's vision tower is not modelled; for "
           "text-only training give its text model as a gemma3_text config"},
          {"kimi_k25",
           "the multimodal Kimi K2.5's vision tower is not modelled; for "
           "text-only training give its text_config as a config of its own "
           "(model_type kimi_k2)"},
      };
  for (const auto& [type, why] : *reasons) {
    if (type == model_type) return why;
  }
  return "not a family memgate models (llama, mistral, qwen2, qwen3, phi3, "
         "gemma, gemma2, gemma3_text, mixtral, qwen2_moe, qwen3_moe, "
         "deepseek_v2, deepseek_v3, kimi_k2, nemotron, glm4_moe, gpt_oss)";
}

// The family of `model_type`; nullptr where memgate models none.
const Family* FamilyNamed(absl::string_view model_type) {
  for (const Family& f : Families()) {
    if (model_type == f.model_type) return &f;
  }
  return nullptr;
}

absl::StatusOr<const Family*> FamilyOf(const v1::HuggingFaceConfig& hf) {
  if (hf.model_type().empty()) {
    return absl::InvalidArgumentError(
        "config.json: model_type: missing (memgate reads llama, mistral, "
        "qwen2, qwen3, phi3, gemma, gemma2, gemma3_text, mixtral, qwen2_moe, "
        "qwen3_moe, deepseek_v2, deepseek_v3, kimi_k2, nemotron, glm4_moe "
        "and gpt_oss configs)");
  }
  if (const Family* f = FamilyNamed(hf.model_type())) {
    for (const std::string& a : hf.architectures()) {
      if (std::find(f->architectures.begin(), f->architectures.end(), a) ==
          f->architectures.end()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "config.json: architectures: '", a, "' is not modelled for "
            "model_type '", f->model_type, "'"));
      }
    }
    return f;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("config.json: model_type: '", hf.model_type(), "': ",
                   WhyNotModelled(hf.model_type())));
}

// The config as an untyped tree, for what the typed parse cannot tell (a
// null from an absent key, rotary parameters per layer type): parsed at
// most once a config, on the first question, so a config costs at most two
// parses whatever is asked.
class ConfigTree {
 public:
  explicit ConfigTree(absl::string_view json) : json_(json) {}

  // The top-level object, or nullptr where it does not parse as one.
  const google::protobuf::Struct* top() {
    if (!parsed_) {
      parsed_ = true;
      ok_ = google::protobuf::util::JsonStringToMessage(
                google::protobuf::StringPiece(json_.data(), json_.size()),
                &top_)
                .ok();
    }
    return ok_ ? &top_ : nullptr;
  }

 private:
  absl::string_view json_;
  bool parsed_ = false;
  bool ok_ = false;
  google::protobuf::Struct top_;
};

// The family the config's model_type names, or nullptr (no object, no
// model_type, a family memgate does not model).
const Family* FamilyOfTree(ConfigTree& tree) {
  const google::protobuf::Struct* top = tree.top();
  if (top == nullptr) return nullptr;
  const auto type = top->fields().find("model_type");
  if (type == top->fields().end()) return nullptr;
  return FamilyNamed(type->second.string_value());
}

// Whether the config gives `key` as null, which the typed parse cannot
// tell from absent: asked only where a family's default for an absent key
// differs from its fallback for a null one.
bool KeyIsNull(ConfigTree& tree, absl::string_view key) {
  const google::protobuf::Struct* top = tree.top();
  if (top == nullptr) return false;
  const auto it = top->fields().find(std::string(key));
  return it != top->fields().end() &&
         it->second.kind_case() == google::protobuf::Value::kNullValue;
}

// A count the config may leave out: its value; absent, the family's class
// default (0: `fallback`); null, `fallback`.
uint32_t CountOf(ConfigTree& tree, absl::string_view key, bool has,
                 uint32_t value, uint32_t family_default, uint32_t fallback) {
  if (has) return value;
  if (family_default == 0 || KeyIsNull(tree, key)) return fallback;
  return family_default;
}

absl::Status MissingMoe(absl::string_view key) {
  return absl::InvalidArgumentError(
      absl::StrCat("config.json: ", key, ": required for a mixture-of-experts "
                   "model"));
}

// A size or step the family reads given as 0: transformers' model would
// divide by it or build nothing, and in a MoeConfig or MlaConfig a zero
// reads as "not given" (a default), so it is refused naming the key.
absl::Status ZeroRefused(absl::string_view key) {
  return absl::InvalidArgumentError(
      absl::StrCat("config.json: ", key, ": must be positive (got 0)"));
}

// DeepSeek's and GLM's shared experts: n_shared_experts MLPs of the
// routed width, one MLP of their summed width. The product is checked, so
// that hostile sizes cannot wrap around to a small model.
absl::Status SetSharedWidth(const v1::HuggingFaceConfig& hf,
                            v1::MoeConfig& moe) {
  const uint64_t width =
      uint64_t{hf.n_shared_experts()} * hf.moe_intermediate_size();
  if (width > UINT32_MAX) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config.json: n_shared_experts x moe_intermediate_size: at most ",
        UINT32_MAX, " (got ", width, ")"));
  }
  moe.set_shared_expert_ffn_hidden_size(static_cast<uint32_t>(width));
  return absl::OkStatus();
}

// Whether the config's rotary scaling is YaRN (transformers'
// rope_config_validation reads rope_type, or the older type).
bool IsYarn(const v1::HuggingFaceConfig& hf) {
  for (const v1::HuggingFaceRopeScaling* r :
       {&hf.rope_scaling(), &hf.rope_parameters()}) {
    if (r->rope_type() == "yarn" || r->type() == "yarn") return true;
  }
  return false;
}

// The router's score function and group-limited routing (moe_terms.cc
// [RS]). Mixtral's, Qwen's and gpt-oss's routers take a softmax (over
// every expert in their modeling, after the top-k in gpt-oss's; counted
// over every expert, the larger); DeepSeek's and GLM's name theirs in
// scoring_func (left out: unknown, the largest counted) and route within
// topk_group of n_group expert groups, as Megatron-Bridge's
// --moe-router-num-groups / --moe-router-group-topk. The training's
// kernels and losses are not in a config: counted at their largest.
absl::Status SetRouter(const v1::HuggingFaceConfig& hf, const Family& f,
                       v1::MoeConfig& moe) {
  if (f.experts != Family::kDeepseek && f.experts != Family::kGlm) {
    moe.set_router_score_function(v1::MoeConfig::ROUTER_SCORE_SOFTMAX);
    return absl::OkStatus();
  }
  if (hf.has_scoring_func()) {
    if (hf.scoring_func() == "softmax") {
      moe.set_router_score_function(v1::MoeConfig::ROUTER_SCORE_SOFTMAX);
    } else if (hf.scoring_func() == "sigmoid") {
      moe.set_router_score_function(v1::MoeConfig::ROUTER_SCORE_SIGMOID);
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "config.json: scoring_func: '", hf.scoring_func(),
          "' is not softmax or sigmoid"));
    }
  }
  const uint32_t groups = hf.n_group();
  if (groups <= 1) return absl::OkStatus();  // one group: no limit
  const uint32_t experts = hf.n_routed_experts();
  if (experts % groups != 0 || hf.topk_group() == 0 ||
      hf.topk_group() > groups) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config.json: n_group, topk_group: the groups (", groups,
        ") must divide n_routed_experts (", experts,
        ") and topk_group (", hf.topk_group(), ") lie in [1, n_group]"));
  }
  moe.set_router_num_groups(groups);
  moe.set_router_group_topk(hf.topk_group());
  return absl::OkStatus();
}

// The key a family's routed experts are counted by (FillExperts).
const char* ExpertCountKey(const v1::HuggingFaceConfig& hf, const Family& f) {
  switch (f.experts) {
    case Family::kMixtral:
      return "num_local_experts";
    case Family::kGptOss:
      return hf.has_num_local_experts() ? "num_local_experts" : "num_experts";
    case Family::kQwenMoe:
      return "num_experts";
    default:
      return "n_routed_experts";
  }
}

// Experts, MLA and MTP as the family's modeling file builds them.
absl::Status FillExperts(ConfigTree& tree,
                         const v1::HuggingFaceConfig& hf, const Family& f,
                         v1::ModelConfig& model) {
  if (f.experts == Family::kDense) return absl::OkStatus();
  // Qwen's MoE families build the sparse block only where num_experts > 0
  // (transformers' Qwen2MoeDecoderLayer and Qwen3MoeDecoderLayer: "if
  // (layer_idx not in config.mlp_only_layers) and (config.num_experts > 0
  // and ...)"), a Qwen2MoeMLP / Qwen3MoeMLP of intermediate_size
  // everywhere else: with none, a dense model, counted as one. (The other
  // families have no such branch: their 0 is refused below. Megatron's
  // own num_moe_experts 0 raises, transformer_config.py: a converter that
  // carries the 0 over fails at start, which is no OOM.)
  if (f.experts == Family::kQwenMoe && hf.has_num_experts() &&
      hf.num_experts() == 0) {
    return absl::OkStatus();
  }
  v1::MoeConfig& moe = *model.mutable_moe();
  const uint32_t layers = model.num_layers();
  if (layers > (1u << 16)) {
    return absl::InvalidArgumentError(
        "config.json: num_hidden_layers: at most 65536 with experts");
  }
  auto pattern = [&](auto is_moe) {
    for (uint32_t i = 0; i < layers; ++i) {
      moe.add_layer_pattern(is_moe(i) ? 1 : 0);
    }
  };
  if (!hf.has_num_experts_per_tok()) return MissingMoe("num_experts_per_tok");
  moe.set_router_topk(hf.num_experts_per_tok());
  if (absl::Status st = SetRouter(hf, f, moe); !st.ok()) return st;
  switch (f.experts) {
    case Family::kMixtral:  // every layer: 8 experts of intermediate_size
      if (!hf.has_num_local_experts()) return MissingMoe("num_local_experts");
      moe.set_num_experts(hf.num_local_experts());
      moe.set_expert_ffn_hidden_size(model.ffn_hidden_size());
      moe.set_layer_frequency(1);
      // MixtralSparseMoeBlock.forward in training: hidden_states *=
      // uniform(1 - jitter, 1 + jitter) before the gate, Megatron's
      // --moe-input-jitter-eps (router.py apply_input_jitter): the noise
      // and the jittered input are kept. The other families' blocks have
      // no jitter (their configs' key, if any, is not read).
      if (hf.has_router_jitter_noise()) {
        const float jitter = hf.router_jitter_noise();
        if (!(jitter >= 0 && jitter < 1)) {
          return absl::InvalidArgumentError(absl::StrCat(
              "config.json: router_jitter_noise: must be in [0, 1) (got ",
              jitter, ")"));
        }
        moe.set_input_jitter(jitter > 0);
      }
      break;
    case Family::kGptOss:
      // GptOssMLP on every layer: num_local_experts experts of
      // intermediate_size, no shared expert. GptOssExperts' gate and up
      // halves are clamped (swiglu_limit, 7.0; hard-coded in the first
      // releases) and the gate is quick-GeLU'd
      // (x sigmoid(1.702 x)), then (up + 1) x glu: Megatron's
      // --quick-geglu --activation-func-clamp-value 7 --glu-linear-offset 1
      // (Megatron-Bridge's GPTOSSProvider), with its bias-activation
      // fusion on (moe_terms.cc [QF]). Every expert GEMM has a bias
      // (gate_up_proj_bias, down_proj_bias), as the router: Megatron's
      // add_bias_linear. Each attention head has a learned sink logit
      // (GptOssAttention sinks): Megatron's --softmax-type learnable.
      // GptOssConfig maps num_experts to num_local_experts.
      if (!hf.has_num_local_experts() && !hf.has_num_experts()) {
        return MissingMoe("num_local_experts");
      }
      moe.set_num_experts(hf.has_num_local_experts() ? hf.num_local_experts()
                                                     : hf.num_experts());
      moe.set_expert_ffn_hidden_size(model.ffn_hidden_size());
      moe.set_layer_frequency(1);
      model.set_activation_clamp(true);
      model.set_linear_bias(true);
      model.set_softmax_type(v1::SOFTMAX_TYPE_LEARNABLE);
      break;
    case Family::kQwenMoe: {
      if (!hf.has_num_experts()) return MissingMoe("num_experts");
      if (!hf.has_moe_intermediate_size()) {
        return MissingMoe("moe_intermediate_size");
      }
      if (hf.moe_intermediate_size() == 0) {
        return ZeroRefused("moe_intermediate_size");
      }
      if (hf.has_decoder_sparse_step() && hf.decoder_sparse_step() == 0) {
        return ZeroRefused("decoder_sparse_step");
      }
      moe.set_num_experts(hf.num_experts());
      moe.set_expert_ffn_hidden_size(hf.moe_intermediate_size());
      // Qwen2-MoE has a gated shared expert (Qwen2MoeConfig: 5632 wide
      // where the key is left out); Qwen3-MoE none.
      const uint32_t shared =
          f.model_type == absl::string_view("qwen2_moe")
              ? CountOf(tree, "shared_expert_intermediate_size",
                        hf.has_shared_expert_intermediate_size(),
                        hf.shared_expert_intermediate_size(), 5632, 0)
              : 0;
      if (shared > 0) {
        moe.set_shared_expert_ffn_hidden_size(shared);
        moe.set_shared_expert_gate(true);
      }
      const uint32_t step = std::max(1u, hf.has_decoder_sparse_step()
                                             ? hf.decoder_sparse_step()
                                             : 1u);
      pattern([&](uint32_t i) {
        return std::find(hf.mlp_only_layers().begin(),
                         hf.mlp_only_layers().end(),
                         i) == hf.mlp_only_layers().end() &&
               (i + 1) % step == 0;
      });
      break;
    }
    case Family::kDeepseek:
    case Family::kGlm: {
      // DeepSeek's experts, which GLM-4.5 shares (Glm4MoeMoE): routed
      // experts of moe_intermediate_size, one ungated shared MLP of
      // n_shared_experts x that width, an MoE MLP from layer
      // first_k_dense_replace on (DeepSeek: every moe_layer_freq-th), and
      // the next-token layers transformers skips loading, which Megatron
      // trains (--mtp-num-layers).
      if (!hf.has_n_routed_experts()) return MissingMoe("n_routed_experts");
      if (!hf.has_moe_intermediate_size()) {
        return MissingMoe("moe_intermediate_size");
      }
      // Left out, their defaults depend on the code that reads the config:
      // transformers' DeepseekV3Config has 1 shared expert and 3 dense
      // layers, its DeepseekV2Config 2 and 0, Glm4MoeConfig 1 and 1, and
      // DeepSeek's own configuration_deepseek.py (trust_remote_code, and
      // Kimi K2's) none and 0: refused, naming the key, rather than
      // guessed (an explicit null n_shared_experts is none, as there).
      if (!hf.has_n_shared_experts() && !KeyIsNull(tree, "n_shared_experts")) {
        return absl::InvalidArgumentError(
            "config.json: n_shared_experts: required for DeepSeek-style "
            "experts (transformers' config classes default it to 1 or 2, "
            "DeepSeek's own configuration_deepseek.py to none: give it, "
            "null for none)");
      }
      if (!hf.has_first_k_dense_replace()) {
        return absl::InvalidArgumentError(
            "config.json: first_k_dense_replace: required for DeepSeek-style "
            "experts (the leading dense layers: transformers' config classes "
            "default it to 3, 0 or 1, DeepSeek's own configuration_deepseek.py "
            "to 0)");
      }
      if (hf.moe_intermediate_size() == 0) {
        return ZeroRefused("moe_intermediate_size");
      }
      if (f.experts == Family::kDeepseek && hf.has_moe_layer_freq() &&
          hf.moe_layer_freq() == 0) {
        return ZeroRefused("moe_layer_freq");
      }
      moe.set_num_experts(hf.n_routed_experts());
      moe.set_expert_ffn_hidden_size(hf.moe_intermediate_size());
      if (absl::Status st = SetSharedWidth(hf, moe); !st.ok()) return st;
      const uint32_t dense = hf.first_k_dense_replace();
      const uint32_t freq =
          f.experts == Family::kDeepseek && hf.has_moe_layer_freq()
              ? std::max(1u, hf.moe_layer_freq())
              : 1u;
      pattern([&](uint32_t i) { return i >= dense && i % freq == 0; });
      model.set_mtp_num_layers(hf.num_nextn_predict_layers());
      if (f.experts == Family::kGlm) {
        // Grouped-query attention with Q/K norms when use_qk_norm.
        model.set_qk_norm(hf.use_qk_norm());
        break;
      }
      if (!hf.has_kv_lora_rank() || !hf.has_qk_nope_head_dim() ||
          !hf.has_qk_rope_head_dim() || !hf.has_v_head_dim()) {
        return absl::InvalidArgumentError(
            "config.json: kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, "
            "v_head_dim: required for multi-latent attention");
      }
      if (hf.qk_nope_head_dim() == 0) return ZeroRefused("qk_nope_head_dim");
      if (hf.qk_rope_head_dim() == 0) return ZeroRefused("qk_rope_head_dim");
      v1::MlaConfig& mla = *model.mutable_mla();
      // Null: no Q LoRA (DeepSeek-V2-Lite's linear_q_proj); left out, the
      // config classes' 1536 (DeepseekV2Config, DeepseekV3Config, and
      // DeepSeek's own configuration_deepseek.py alike).
      mla.set_q_lora_rank(CountOf(tree, "q_lora_rank", hf.has_q_lora_rank(),
                                  hf.q_lora_rank(), 1536, 0));
      mla.set_kv_lora_rank(hf.kv_lora_rank());
      mla.set_qk_head_dim(hf.qk_nope_head_dim());
      mla.set_qk_pos_emb_head_dim(hf.qk_rope_head_dim());
      mla.set_v_head_dim(hf.v_head_dim());
      // MLA has no grouped K/V heads.
      model.set_num_query_groups(model.num_attention_heads());
      // DeepSeek's q_a_layernorm and kv_a_layernorm on the latents:
      // Megatron's --qk-layernorm with MLA (gpt_layer_specs.py).
      model.set_qk_norm(true);
      break;
    }
    default:
      break;
  }
  // Counts no family's router can route by, refused naming their keys: in
  // a MoeConfig a 0 reads as "not given", and validation's errors would
  // name model.moe's fields, which the file does not have.
  const char* experts_key = ExpertCountKey(hf, f);
  if (moe.num_experts() == 0) return ZeroRefused(experts_key);
  if (moe.router_topk() == 0) return ZeroRefused("num_experts_per_tok");
  if (moe.router_topk() > moe.num_experts()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config.json: num_experts_per_tok: must be at most ", experts_key,
        " = ", moe.num_experts(), " (got ", moe.router_topk(), ")"));
  }
  return absl::OkStatus();
}

// transformers' ACT2FN names of the GeLU (activations.py: exact, tanh and
// sigmoid-free approximations). Under Megatron a gated GeLU runs either
// fused (mlp.py bias_geglu_impl, for F.gelu) or through glu() [GG in
// estimator/moe_terms.cc]; MLP_ACTIVATION_GEGLU counts glu()'s tensors,
// the larger of the two.
bool IsGelu(absl::string_view act) {
  return act == "gelu" || act == "gelu_pytorch_tanh" || act == "gelu_new" ||
         act == "gelu_fast" || act == "gelu_accurate" || act == "gelu_python";
}

// The MLP's activation as the family's modeling file reads it: Gemma's
// hidden_activation (transformers' Gemma, Gemma 2 and Gemma 3 MLPs:
// ACT2FN[config.hidden_activation], gelu_pytorch_tanh when absent), the
// others' hidden_act (LlamaConfig and its kin: silu when absent). An
// activation memgate does not count is refused by its key, never read past:
// a gated GeLU keeps more than the fused SwiGLU memgate would otherwise
// count (10 bytes an FFN column a token against 6).
absl::StatusOr<v1::MlpActivation> ActivationOf(const v1::HuggingFaceConfig& hf,
                                               const Family& f) {
  const bool gemma = f.gelu_gate;
  const char* key = gemma ? "hidden_activation" : "hidden_act";
  const std::string& act = gemma ? hf.hidden_activation() : hf.hidden_act();
  auto refused = [&](absl::string_view modelled) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config.json: ", key, ": '", act.substr(0, 32),
        act.size() > 32 ? "...' " : "' ", "is not modelled for model_type '",
        f.model_type, "' (", modelled, ")"));
  };
  if (f.experts == Family::kGptOss) {
    // GptOssExperts' own activation, whatever hidden_act says (its config
    // names silu, which its modeling does not read).
    return v1::MLP_ACTIVATION_QUICK_GEGLU;
  }
  if (f.ungated_mlp) {
    // NemotronConfig's default and every published Nemotron's: relu2.
    if (!act.empty() && act != "relu2") return refused("relu2");
    return v1::MLP_ACTIVATION_SQUARED_RELU;
  }
  if (gemma) {
    if (!act.empty() && !IsGelu(act)) return refused("a GeLU");
    return v1::MLP_ACTIVATION_GEGLU;
  }
  if (act.empty() || act == "silu" || act == "swish") {
    return v1::MLP_ACTIVATION_SWIGLU;
  }
  if (IsGelu(act)) return v1::MLP_ACTIVATION_GEGLU;
  // activations.py QuickGELUActivation: x * sigmoid(1.702 x), Megatron's
  // --quick-geglu.
  if (act == "quick_gelu") return v1::MLP_ACTIVATION_QUICK_GEGLU;
  return refused("silu, a GeLU or quick_gelu");
}

// Whether rotary parameters given per layer type (transformers'
// rope_parameters for configs with layer_types, Gemma 3's shape:
// {"full_attention": {"rope_type": ...}, "sliding_attention": {...}}),
// which the typed parse reads past, make any type's YaRN: Megatron runs one
// rotary type for every layer, so YaRN in any of them is YaRN's unfused
// tables in all (an over-count of the others' few MiB, never an
// under-count). Asked only where the typed parse found no YaRN.
bool YarnForSomeLayerType(ConfigTree& tree) {
  const google::protobuf::Struct* top = tree.top();
  if (top == nullptr) return false;
  for (const char* key : {"rope_parameters", "rope_scaling"}) {
    const auto it = top->fields().find(key);
    if (it == top->fields().end() || !it->second.has_struct_value()) continue;
    for (const auto& [layer_type, params] :
         it->second.struct_value().fields()) {
      if (!params.has_struct_value()) continue;
      for (const char* type : {"rope_type", "type"}) {
        const auto t = params.struct_value().fields().find(type);
        if (t != params.struct_value().fields().end() &&
            t->second.string_value() == "yarn") {
          return true;
        }
      }
    }
  }
  return false;
}

// Whether transformers' modeling of the family attends within a sliding
// window on some layer (ModelConfig.sliding_window). A config's
// layer_types decide where given; otherwise the family's configuration
// file: MistralConfig's sliding_window (4096 when absent), MixtralConfig's
// and Phi3Config's (none when absent), Gemma 2's and Gemma 3's on their
// alternating layers (4096 when absent), GptOssConfig's (128 when absent,
// every other layer), the Qwen families' only with use_sliding_window and
// on the layers from max_window_layers (28 when absent) on. A null window
// is none. Llama, Gemma, DeepSeek, Kimi, GLM and Nemotron have none.
bool SlidingWindowApplies(ConfigTree& tree, const v1::HuggingFaceConfig& hf,
                          const Family& family) {
  const absl::string_view type = family.model_type;
  const bool qwen = type == "qwen2" || type == "qwen3" ||
                    type == "qwen2_moe" || type == "qwen3_moe";
  uint32_t absent = 0;  // the class default where the key is absent
  if (type == "mistral" || type == "gemma2" || type == "gemma3_text" ||
      qwen) {
    absent = 4096;
  } else if (type == "gpt_oss") {
    absent = 128;
  } else if (type != "mixtral" && type != "phi3") {
    return false;
  }
  if (KeyIsNull(tree, "sliding_window")) return false;
  const uint32_t window =
      hf.has_sliding_window() ? hf.sliding_window() : absent;
  if (window == 0) return false;
  if (hf.layer_types_size() > 0) {
    return std::find(hf.layer_types().begin(), hf.layer_types().end(),
                     "sliding_attention") != hf.layer_types().end();
  }
  if (qwen) {
    const uint32_t spared =
        hf.has_max_window_layers() ? hf.max_window_layers() : 28;
    return hf.use_sliding_window() && hf.num_hidden_layers() > spared;
  }
  return true;
}

// The families whose transformers modeling soft-caps logits or attention
// scores (modeling_gemma2.py, modeling_gemma3.py).
const std::vector<absl::string_view>& SoftcappingFamilies() {
  static const auto* types =
      new std::vector<absl::string_view>{"gemma2", "gemma3_text"};
  return *types;
}

bool IsSoftcappingFamily(const Family& f) {
  const auto& types = SoftcappingFamilies();
  return std::find(types.begin(), types.end(), f.model_type) != types.end();
}

// A soft-cap: the config's value; where the key is absent, the family's
// default; where it is null, none.
float SoftcapOf(ConfigTree& tree, absl::string_view key, bool has,
                float value, float family_default) {
  if (has) return value;
  if (family_default == 0) return 0;
  return KeyIsNull(tree, key) ? 0 : family_default;
}


// The model of a config, its untyped tree (ConfigTree) shared with the
// unreviewed keys' check.
absl::StatusOr<v1::ModelConfig> ModelFromTree(absl::string_view json,
                                              ConfigTree& tree,
                                              absl::string_view name) {
  v1::HuggingFaceConfig hf;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  const auto parsed = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), &hf, options);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("config.json: not a valid Hugging Face config: ",
                     std::string(parsed.message())));
  }
  absl::StatusOr<const Family*> family = FamilyOf(hf);
  if (!family.ok()) return family.status();
  if (hf.has_text_config()) {
    return absl::InvalidArgumentError(
        "config.json: text_config: multimodal configs are not modelled (give "
        "the language model's own config)");
  }
  if (hf.mlp_bias()) {
    return absl::InvalidArgumentError(
        "config.json: mlp_bias: MLP biases are not modelled");
  }
  if (!hf.has_hidden_size()) return Missing("hidden_size");
  if (!hf.has_num_hidden_layers()) return Missing("num_hidden_layers");
  if (!hf.has_num_attention_heads()) return Missing("num_attention_heads");
  if (!hf.has_intermediate_size()) return Missing("intermediate_size");
  if (!hf.has_vocab_size()) return Missing("vocab_size");
  // A zero size builds no model (transformers' would fail on it); in a
  // ModelConfig it would read as "not given" and be taken from a catalog
  // model of the file's name, an error that names the wrong field. Given
  // explicitly, head_dim and num_key_value_heads must be positive too
  // (null takes the default: CountOf).
  const std::pair<const char*, bool> zero[] = {
      {"hidden_size", hf.hidden_size() == 0},
      {"num_hidden_layers", hf.num_hidden_layers() == 0},
      {"num_attention_heads", hf.num_attention_heads() == 0},
      {"intermediate_size", hf.intermediate_size() == 0},
      {"vocab_size", hf.vocab_size() == 0},
      {"head_dim", hf.has_head_dim() && hf.head_dim() == 0},
      {"num_key_value_heads",
       hf.has_num_key_value_heads() && hf.num_key_value_heads() == 0}};
  for (const auto& [key, is_zero] : zero) {
    if (is_zero) return ZeroRefused(key);
  }

  v1::ModelConfig model;
  model.set_name(std::string(name));
  model.set_num_layers(hf.num_hidden_layers());
  model.set_hidden_size(hf.hidden_size());
  model.set_ffn_hidden_size(hf.intermediate_size());
  model.set_num_attention_heads(hf.num_attention_heads());
  // transformers' LlamaConfig: no num_key_value_heads means multi-head
  // (GptOssConfig: 8).
  model.set_num_query_groups(CountOf(
      tree, "num_key_value_heads", hf.has_num_key_value_heads(),
      hf.num_key_value_heads(), (*family)->kv_heads_default,
      hf.num_attention_heads()));
  model.set_vocab_size(hf.vocab_size());
  model.set_tie_word_embeddings(hf.has_tie_word_embeddings()
                                    ? hf.tie_word_embeddings()
                                    : (*family)->tied_by_default);
  // 0: hidden_size / num_attention_heads (GptOssConfig: 64 when absent).
  model.set_head_dim(CountOf(tree, "head_dim", hf.has_head_dim(),
                             hf.head_dim(), (*family)->head_dim_default, 0));
  // attention_bias (Llama) puts a bias on q, k, v and o; the o bias (h a
  // layer) is counted with the QKV ones' order of magnitude: negligible.
  model.set_qkv_bias((*family)->qkv_bias || hf.attention_bias());
  model.set_qk_norm((*family)->qk_norm);
  model.set_sandwich_norms((*family)->sandwich_norms);
  // Gemma 2 caps its logits and its attention scores, Gemma 3 where its
  // config gives them (validation refuses negative and non-finite caps).
  // No other family's transformers model reads the keys (a Llama config's
  // are named: KeysTheFamilyDoesNotReadOf), and counting caps it never
  // applies would add the logits' tanh and refuse context parallelism.
  if (IsSoftcappingFamily(**family)) {
    model.set_final_logit_softcapping(SoftcapOf(
        tree, "final_logit_softcapping", hf.has_final_logit_softcapping(),
        hf.final_logit_softcapping(), (*family)->final_cap_default));
    model.set_attention_logit_softcapping(SoftcapOf(
        tree, "attn_logit_softcapping", hf.has_attn_logit_softcapping(),
        hf.attn_logit_softcapping(), (*family)->attention_cap_default));
  }
  // The paper's Llama otherwise: gated MLP, RMSNorm, rotary positions.
  absl::StatusOr<v1::MlpActivation> activation = ActivationOf(hf, **family);
  if (!activation.ok()) return activation.status();
  model.set_mlp_activation(*activation);
  model.set_normalization(v1::NORMALIZATION_RMSNORM);
  if ((*family)->layernorm) {
    model.set_normalization(v1::NORMALIZATION_LAYERNORM);
  }
  model.set_position_embedding(v1::POSITION_EMBEDDING_ROPE);
  if (absl::Status st = FillExperts(tree, hf, **family, model); !st.ok()) {
    return st;
  }
  // YaRN (gpt-oss) runs Megatron's unfused RoPE, whose cos and sin each
  // layer keeps (memory_model.cc [RU]). Multi-latent attention takes YaRN
  // from Megatron's --rope-type yarn beside rope positions, where the
  // fusion stays on (DeepSeek's launches): left as RoPE.
  if (!model.has_mla() && (IsYarn(hf) || YarnForSomeLayerType(tree))) {
    model.set_position_embedding(v1::POSITION_EMBEDDING_YARN);
  }
  model.set_sliding_window(SlidingWindowApplies(tree, hf, **family));
  return model;
}

std::vector<std::string> UnreviewedKeysOf(ConfigTree& tree) {
  // Reviewed and read past: they do not change per-GPU training memory
  // under Megatron. Token ids, initialisation, inference caches and
  // transformers' bookkeeping; rotary frequencies, scaling (its YaRN
  // type read: IsYarn) and partial rotary (no parameters); norm epsilons;
  // Gemma's activation name (a gated GeLU whatever the variant, unfused
  // under Megatron: GEGLU);
  // routing weights' scale and normalisation (the routed copies are top-k
  // either way) and auxiliary losses (training settings, not the model's:
  // left unknown, a load-balancing loss and a z-loss are counted at their
  // largest, MoeConfig.aux_loss / z_loss); which
  // layers a window takes and how wide it is (sliding_window_pattern:
  // whether any is windowed is read, SlidingWindowApplies) and the scale of
  // attention logits (FlashAttention stores no s^2 scores either way;
  // their soft-cap is read); dropout probabilities
  // (the job's training settings decide); the checkpoint's dtype and
  // quantization (training keeps its own precision); gpt-oss's
  // swiglu_limit and swiglu_alpha (its experts clamp whatever the limit,
  // so the clamp's tensors are kept at any value; the sigmoid's gain keeps
  // nothing), experts_per_token and initial_context_length, which its
  // modeling does not read. And transformers' own PretrainedConfig
  // bookkeeping, which save_pretrained writes into configs of every
  // family (meta-llama/Llama-2-7b-hf's has _name_or_path): the
  // checkpoint's path and commit, transformers' attention implementation
  // (Megatron runs its own kernel: --attention-backend), output switches,
  // the labels, task and problem type of heads a causal LM does not build,
  // the tokenizer's class, prefix and special token ids, and generation
  // defaults (decoding, not training). Not among them: pruned_heads and
  // the encoder-decoder switches, which change a model's shape where a
  // family reads them.
  static const auto* reviewed = new std::set<std::string>{
      "_attn_implementation", "_commit_hash", "_name_or_path",
      "bad_words_ids", "begin_suppress_tokens", "chunk_size_feed_forward",
      "decoder_start_token_id", "diversity_penalty", "do_sample",
      "early_stopping", "encoder_no_repeat_ngram_size",
      "exponential_decay_length_penalty", "finetuning_task",
      "forced_bos_token_id", "forced_eos_token_id", "id2label", "label2id",
      "length_penalty", "max_length", "min_length", "no_repeat_ngram_size",
      "num_beam_groups", "num_beams", "num_labels", "num_return_sequences",
      "output_attentions", "output_hidden_states", "output_scores", "prefix",
      "problem_type", "remove_invalid_values", "repetition_penalty",
      "return_dict", "return_dict_in_generate", "sep_token_id",
      "suppress_tokens", "task_specific_params", "temperature",
      "tf_legacy_loss", "tokenizer_class", "top_k", "top_p", "torchscript",
      "typical_p", "use_bfloat16",
      "attention_dropout", "auto_map",
      "aux_loss_alpha", "bos_token_id", "cache_implementation", "dtype",
      "embd_pdrop", "eos_token_id", "ep_size", "experts_per_token",
      "initial_context_length",
      "initializer_range", "layer_norm_eps",
      "max_position_embeddings",
      "norm_eps", "norm_topk_prob", "original_max_position_embeddings",
      "output_router_logits", "pad_token_id", "partial_rotary_factor",
      "pretraining_tp", "quantization_config", "query_pre_attn_scalar",
      "resid_pdrop", "rms_norm_eps", "rope_local_base_freq",
      "rope_parameters", "rope_scaling", "rope_theta",
      "routed_scaling_factor", "router_aux_loss_coef",
      "seq_aux", "sliding_window_pattern",
      "sliding_window_size", "swiglu_alpha", "swiglu_limit",
      "topk_method",
      "torch_dtype",
      "transformers_version", "unk_token_id", "use_cache"};
  std::vector<std::string> out;
  const google::protobuf::Struct* top = tree.top();
  if (top == nullptr) return out;
  const google::protobuf::Descriptor* read =
      v1::HuggingFaceConfig::descriptor();
  for (const auto& [key, value] : top->fields()) {
    if (read->FindFieldByName(key) == nullptr && !reviewed->count(key)) {
      out.push_back(key);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Keys memgate reads for some families that transformers' modeling of
// this config's family does not read: another family's experts, latent
// attention, next-token layers or router (FillExperts reads each only for
// the families below), a sliding window where the family's attention has
// none (SlidingWindowApplies), or Gemma's activation and soft-caps. Such a
// key is read past as the family's model reads past it, and named: a
// config that gives a Llama experts describes a model that is not the
// Llama memgate estimates (nor the one transformers would build). A null,
// false, zero or empty value says "none" and is not named.
std::vector<std::string> KeysTheFamilyDoesNotReadOf(ConfigTree& tree) {
  using E = Family::Experts;
  struct ReadBy {
    const char* key;
    std::vector<E> experts;  // the families that read it, by their experts
    std::vector<absl::string_view> types = {};  // or by their model_type
  };
  static const auto* windowed = new std::vector<absl::string_view>{
      "mistral", "mixtral", "phi3", "gemma2", "gemma3_text", "qwen2",
      "qwen3", "qwen2_moe", "qwen3_moe", "gpt_oss"};
  static const auto* qwen = new std::vector<absl::string_view>{
      "qwen2", "qwen3", "qwen2_moe", "qwen3_moe"};
  static const auto* keys = new std::vector<ReadBy>{
      {"sliding_window", {}, *windowed},
      {"use_sliding_window", {}, *qwen},
      {"max_window_layers", {}, *qwen},
      // Gemma's MLP activation (ActivationOf); the others read hidden_act.
      {"hidden_activation", {}, {"gemma", "gemma2", "gemma3_text"}},
      {"final_logit_softcapping", {}, SoftcappingFamilies()},
      {"attn_logit_softcapping", {}, SoftcappingFamilies()},
      {"num_local_experts", {E::kMixtral, E::kGptOss}},
      {"num_experts", {E::kQwenMoe, E::kGptOss}},
      {"n_routed_experts", {E::kDeepseek, E::kGlm}},
      {"num_experts_per_tok",
       {E::kMixtral, E::kQwenMoe, E::kDeepseek, E::kGlm, E::kGptOss}},
      {"moe_intermediate_size", {E::kQwenMoe, E::kDeepseek, E::kGlm}},
      // Qwen2-MoE's shared expert: Qwen3-MoE has none (FillExperts).
      {"shared_expert_intermediate_size", {}, {"qwen2_moe"}},
      {"n_shared_experts", {E::kDeepseek, E::kGlm}},
      {"first_k_dense_replace", {E::kDeepseek, E::kGlm}},
      {"num_nextn_predict_layers", {E::kDeepseek, E::kGlm}},
      {"scoring_func", {E::kDeepseek, E::kGlm}},
      {"n_group", {E::kDeepseek, E::kGlm}},
      {"topk_group", {E::kDeepseek, E::kGlm}},
      {"moe_layer_freq", {E::kDeepseek}},
      {"decoder_sparse_step", {E::kQwenMoe}},
      {"mlp_only_layers", {E::kQwenMoe}},
      {"q_lora_rank", {E::kDeepseek}},
      {"kv_lora_rank", {E::kDeepseek}},
      {"qk_nope_head_dim", {E::kDeepseek}},
      {"qk_rope_head_dim", {E::kDeepseek}},
      {"v_head_dim", {E::kDeepseek}},
      {"router_jitter_noise", {E::kMixtral}},
      {"use_qk_norm", {E::kGlm}},
  };
  std::vector<std::string> out;
  const Family* family = FamilyOfTree(tree);
  if (family == nullptr) return out;
  const google::protobuf::Struct* top = tree.top();
  auto says_none = [](const google::protobuf::Value& v) {
    using google::protobuf::Value;
    switch (v.kind_case()) {
      case Value::kNullValue: return true;
      case Value::kBoolValue: return !v.bool_value();
      case Value::kNumberValue: return v.number_value() == 0;
      case Value::kListValue: return v.list_value().values_size() == 0;
      default: return false;
    }
  };
  for (const auto& [key, value] : top->fields()) {
    if (says_none(value)) continue;
    for (const ReadBy& k : *keys) {
      if (key != k.key) continue;
      const bool read =
          std::find(k.experts.begin(), k.experts.end(), family->experts) !=
              k.experts.end() ||
          std::find(k.types.begin(), k.types.end(), family->model_type) !=
              k.types.end();
      if (!read) out.push_back(key);
      break;
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// At most the first ten of `keys` (a file may hold thousands), joined.
std::string NamedKeys(const std::vector<std::string>& keys) {
  constexpr size_t kNamed = 10;
  // Each by its first bytes: a key's length is the file's.
  std::vector<std::string> named;
  for (size_t i = 0; i < std::min(kNamed, keys.size()); ++i) {
    named.push_back(Clipped(keys[i], kQuotedNameBytes));
  }
  std::string list = absl::StrJoin(named, ", ");
  if (keys.size() > kNamed) {
    absl::StrAppend(&list, " and ", keys.size() - kNamed, " more");
  }
  return list;
}

}  // namespace

absl::StatusOr<v1::ModelConfig> ModelFromHuggingFaceJson(
    absl::string_view json, absl::string_view name) {
  ConfigTree tree(json);
  return ModelFromTree(json, tree, name);
}

std::vector<std::string> UnreviewedHuggingFaceKeys(absl::string_view json) {
  ConfigTree tree(json);
  return UnreviewedKeysOf(tree);
}

std::vector<std::string> HuggingFaceKeysTheFamilyDoesNotRead(
    absl::string_view json) {
  ConfigTree tree(json);
  return KeysTheFamilyDoesNotReadOf(tree);
}

namespace {

// A config's quantization_config, named for a note: its quant_method
// (fp8, mxfp4, bitsandbytes, ...) where that is a short name, "given"
// otherwise; empty where there is none (absent, null).
std::string QuantizationOf(ConfigTree& tree) {
  const google::protobuf::Struct* top = tree.top();
  if (top == nullptr) return "";
  const auto q = top->fields().find("quantization_config");
  if (q == top->fields().end() || !q->second.has_struct_value()) return "";
  const auto& fields = q->second.struct_value().fields();
  const auto method = fields.find("quant_method");
  if (method == fields.end()) return "given";
  const std::string& name = method->second.string_value();
  const bool short_name =
      !name.empty() && name.size() <= 32 &&
      std::all_of(name.begin(), name.end(), [](char ch) {
        return absl::ascii_isalnum(ch) || ch == '_' || ch == '-';
      });
  return short_name ? name : "given";
}

// The file a path names: a model's directory (what transformers'
// from_pretrained takes, and what users pass) is read as its config.json;
// anything else as itself (ReadSmallFile refuses what is not a regular
// file). The model and its messages keep the path as given.
std::string ConfigFileOf(const std::string& path) {
  struct stat info;
  if (::stat(path.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
    return path;
  }
  absl::string_view dir = path;
  while (dir.size() > 1 && dir.back() == '/') dir.remove_suffix(1);
  return absl::StrCat(dir, dir == "/" ? "" : "/", "config.json");
}

}  // namespace

absl::StatusOr<v1::ModelConfig> ReadHuggingFaceConfig(
    const std::string& path, std::vector<std::string>* notes,
    bool refuse_unreviewed) {
  absl::StatusOr<std::string> json = ReadSmallFile(ConfigFileOf(path));
  if (!json.ok()) return json.status();
  // One untyped parse at most, shared by the model and the unreviewed keys.
  ConfigTree tree(*json);
  absl::StatusOr<v1::ModelConfig> model = ModelFromTree(*json, tree, path);
  if (!model.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", model.status().message()));
  }
  if (notes == nullptr && !refuse_unreviewed) return model;
  if (notes != nullptr) {
    if (std::string quant = QuantizationOf(tree); !quant.empty()) {
      notes->push_back(absl::StrCat(
          path, ": quantization_config (", quant,
          "): how the checkpoint's weights are stored; training keeps the "
          "job's own precision (the weights converted to it, as "
          "Megatron-Bridge imports them), which is what is estimated"));
    }
  }
  // A Qwen MoE family's model without experts: num_experts 0 (FillExperts).
  const Family* family = FamilyOfTree(tree);
  if (notes != nullptr && !model->has_moe() && family != nullptr &&
      family->experts == Family::kQwenMoe) {
    notes->push_back(absl::StrCat(
        path, ": num_experts 0: transformers builds no sparse MoE block "
        "and an MLP of intermediate_size on every layer; estimated as the "
        "dense model it is"));
  }
  // The untyped tree (parsed here, or already for the model), only when
  // asked for.
  const std::vector<std::string> unreviewed = UnreviewedKeysOf(tree);
  const std::vector<std::string> not_read = KeysTheFamilyDoesNotReadOf(tree);
  if (!unreviewed.empty()) {
    const std::string list = NamedKeys(unreviewed);
    if (refuse_unreviewed) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": keys memgate has not reviewed: ", list,
          ": refused, as this site asks (--refuse-unreviewed): memgate cannot "
          "tell whether one changes the model's shape or memory"));
    }
    notes->push_back(absl::StrCat(
        path, ": keys memgate has not reviewed, read past: ", list,
        " (if one changes the model's shape or memory, the estimate does not "
        "count it)"));
  }
  if (!not_read.empty()) {
    // (Keys are named only for a family memgate models: it is non-null.)
    const std::string type(family->model_type);
    const std::string list = NamedKeys(not_read);
    const std::string why = absl::StrCat(
        "other families' experts, latent attention, next-token layers, "
        "router, sliding window, Gemma's activation or soft-caps, which "
        "transformers' ", type,
        " model does not build: a model that has them is not the one "
        "estimated; give its own model_type");
    if (refuse_unreviewed) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": keys model_type '", type, "' does not read: ", list,
          ": refused, as this site asks (--refuse-unreviewed): ", why));
    }
    notes->push_back(absl::StrCat(
        path, ": keys model_type '", type, "' does not read, read past as "
        "transformers does: ", list, " (", why, ")"));
  }
  return model;
}

}  // namespace memgate
