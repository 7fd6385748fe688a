#ifndef MEMGATE_READERS_HF_CONFIG_H_
#define MEMGATE_READERS_HF_CONFIG_H_

// Models from a Hugging Face `config.json` (LlamaConfig fields: hidden_size,
// num_hidden_layers, num_attention_heads, num_key_value_heads,
// intermediate_size, vocab_size, tie_word_embeddings, and the families'
// own keys: proto/hf_config.proto), read with protobuf's JSON parser; other
// keys are read past, and those not reviewed as irrelevant to training
// memory are named (UnreviewedHuggingFaceKeys).

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/memgate.pb.h"

namespace memgate {

// `name` labels the model (e.g. the file's directory); INVALID_ARGUMENT
// names the missing or malformed key.
absl::StatusOr<v1::ModelConfig> ModelFromHuggingFaceJson(
    absl::string_view json, absl::string_view name);

// Reads `path` and parses it as above; the model is named after the path.
// A directory (a model's, as transformers' from_pretrained takes it) is
// read as the config.json in it.
// With `notes`, appends one naming the top-level keys memgate neither reads
// nor has reviewed (UnreviewedHuggingFaceKeys), and one naming the keys
// its family does not read (HuggingFaceKeysTheFamilyDoesNotRead); with
// `refuse_unreviewed` (a site that refuses what memgate cannot judge),
// such keys are an INVALID_ARGUMENT naming them instead.
absl::StatusOr<v1::ModelConfig> ReadHuggingFaceConfig(
    const std::string& path, std::vector<std::string>* notes = nullptr,
    bool refuse_unreviewed = false);

// The top-level keys of `json` that memgate neither reads nor has reviewed
// as irrelevant to training memory, sorted; empty when `json` is not an
// object. A newer family feature shows up here instead of being read past
// unsaid.
std::vector<std::string> UnreviewedHuggingFaceKeys(absl::string_view json);

// The top-level keys of `json` that memgate reads for other families but
// transformers' model of its model_type does not (a Llama's
// num_local_experts), sorted; read past as transformers reads past them,
// and named by ReadHuggingFaceConfig's notes (refused with
// `refuse_unreviewed`). Empty where `json` is not an object of a family
// memgate models, and for keys whose value says none (null, 0, false, []).
std::vector<std::string> HuggingFaceKeysTheFamilyDoesNotRead(
    absl::string_view json);

}  // namespace memgate

#endif  // MEMGATE_READERS_HF_CONFIG_H_
