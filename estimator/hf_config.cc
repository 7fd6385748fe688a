#include "estimator/hf_config.h"

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
  model.set_tie_word_embeddings(hf.tie_word_embeddings());
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
