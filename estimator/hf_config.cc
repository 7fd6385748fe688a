#include "estimator/hf_config.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "estimator/file_util.h"
#include "google/protobuf/util/json_util.h"
#include "proto/hf_config.pb.h"

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
};

// Dense decoders with a gated MLP (SwiGLU / GeGLU: three matrices), RMSNorm
// and rotary positions, as transformers builds them.
const std::vector<Family>& Families() {
  static const auto* families = new std::vector<Family>{
      {"llama", {"LlamaForCausalLM"}, false, false, false, false},
      {"mistral", {"MistralForCausalLM"}, false, false, false, false},
      {"qwen2", {"Qwen2ForCausalLM"}, false, true, false, false},  // qkv bias
      {"qwen3", {"Qwen3ForCausalLM"}, false, false, true, false},  // QK-norm
      {"phi3", {"Phi3ForCausalLM"}, false, false, false, false},
      {"gemma", {"GemmaForCausalLM"}, true, false, false, false},  // tied
      {"gemma2", {"Gemma2ForCausalLM"}, true, false, false, true},
      {"gemma3_text", {"Gemma3ForCausalLM"}, true, false, true, true},
  };
  return *families;
}

// Families seen in the wild that memgate does not model yet, and why.
const char* WhyNotModelled(absl::string_view model_type) {
  static const auto* reasons =
      new std::vector<std::pair<std::string, const char*>>{
          {"mixtral", "mixture of experts is not modelled yet"},
          {"qwen2_moe", "mixture of experts is not modelled yet"},
          {"qwen3_moe", "mixture of experts is not modelled yet"},
          {"deepseek_v2", "mixture of experts and MLA are not modelled yet"},
          {"deepseek_v3", "mixture of experts and MLA are not modelled yet"},
          {"gemma3",
           "the multimodal Gemma 3's vision tower is not modelled; for "
           "text-only training give its text model as a gemma3_text config"},
      };
  for (const auto& [type, why] : *reasons) {
    if (type == model_type) return why;
  }
  return "not a family memgate models (llama, mistral, qwen2, qwen3, phi3, "
         "gemma, gemma2, gemma3_text)";
}

absl::StatusOr<const Family*> FamilyOf(const v1::HuggingFaceConfig& hf) {
  if (hf.model_type().empty()) {
    return absl::InvalidArgumentError(
        "config.json: model_type: missing (memgate reads llama, mistral, "
        "qwen2, qwen3, phi3, gemma, gemma2 and gemma3_text configs)");
  }
  for (const Family& f : Families()) {
    if (hf.model_type() != f.model_type) continue;
    for (const std::string& a : hf.architectures()) {
      if (std::find(f.architectures.begin(), f.architectures.end(), a) ==
          f.architectures.end()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "config.json: architectures: '", a, "' is not modelled for "
            "model_type '", f.model_type, "'"));
      }
    }
    return &f;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("config.json: model_type: '", hf.model_type(), "': ",
                   WhyNotModelled(hf.model_type())));
}

}  // namespace

absl::StatusOr<v1::ModelConfig> ModelFromHuggingFaceJson(
    absl::string_view json, absl::string_view name) {
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

  v1::ModelConfig model;
  model.set_name(std::string(name));
  model.set_num_layers(hf.num_hidden_layers());
  model.set_hidden_size(hf.hidden_size());
  model.set_ffn_hidden_size(hf.intermediate_size());
  model.set_num_attention_heads(hf.num_attention_heads());
  // transformers' LlamaConfig: no num_key_value_heads means multi-head.
  model.set_num_query_groups(hf.has_num_key_value_heads()
                                 ? hf.num_key_value_heads()
                                 : hf.num_attention_heads());
  model.set_vocab_size(hf.vocab_size());
  model.set_tie_word_embeddings(hf.has_tie_word_embeddings()
                                    ? hf.tie_word_embeddings()
                                    : (*family)->tied_by_default);
  if (hf.has_head_dim()) model.set_head_dim(hf.head_dim());
  // attention_bias (Llama) puts a bias on q, k, v and o; the o bias (h a
  // layer) is counted with the QKV ones' order of magnitude: negligible.
  model.set_qkv_bias((*family)->qkv_bias || hf.attention_bias());
  model.set_qk_norm((*family)->qk_norm);
  model.set_sandwich_norms((*family)->sandwich_norms);
  if (hf.final_logit_softcapping() > 0) {
    model.set_final_logit_softcapping(hf.final_logit_softcapping());
  }
  // The paper's Llama otherwise: gated MLP, RMSNorm, rotary positions.
  model.set_mlp_activation(v1::MLP_ACTIVATION_SWIGLU);
  model.set_normalization(v1::NORMALIZATION_RMSNORM);
  model.set_position_embedding(v1::POSITION_EMBEDDING_ROPE);
  return model;
}

absl::StatusOr<v1::ModelConfig> ReadHuggingFaceConfig(const std::string& path) {
  absl::StatusOr<std::string> json = ReadSmallFile(path);
  if (!json.ok()) return json.status();
  absl::StatusOr<v1::ModelConfig> model = ModelFromHuggingFaceJson(*json, path);
  if (!model.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", model.status().message()));
  }
  return model;
}

}  // namespace memgate
