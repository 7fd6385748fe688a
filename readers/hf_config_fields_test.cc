// No key read past, key by key: every field of v1::HuggingFaceConfig (the
// config.json keys memgate parses; a key it parses is not named as
// unreviewed, so a parsed key the reader then ignored would be read past
// in silence) changes the model read, or is refused naming the key, or is
// listed with the reason it changes nothing, and that claim is checked
// from a published config of a family that has it. A field added to the
// proto without a row fails EveryParsedKeyIsClassified.

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "proto/hf_config.pb.h"
#include "proto/memgate.pb.h"
#include "readers/file_util.h"
#include "readers/hf_config.h"
#include "tests/field_paths.h"

namespace memgate {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

enum class Effect { kChangesModel, kRefused, kNoChange };

struct KeyCase {
  std::string key;   // its path in config.json: "rope_scaling.rope_type"
  std::string base;  // a file of tests/testdata/hf
  std::function<void(Struct&)> change;
  Effect effect;
  std::string why = "";  // for kNoChange
};

void PrintTo(const KeyCase& c, std::ostream* os) { *os << c.key; }

Value Number(double n) {
  Value v;
  v.set_number_value(n);
  return v;
}
Value Text(const std::string& s) {
  Value v;
  v.set_string_value(s);
  return v;
}
Value Bool(bool b) {
  Value v;
  v.set_bool_value(b);
  return v;
}
Value Null() {
  Value v;
  v.set_null_value(google::protobuf::NULL_VALUE);
  return v;
}

// Sets `key` (one level of nesting at most: "outer.inner") in `config`.
std::function<void(Struct&)> Set(const std::string& key, Value value) {
  return [key, value](Struct& config) {
    const size_t dot = key.find('.');
    if (dot == std::string::npos) {
      (*config.mutable_fields())[key] = value;
      return;
    }
    Value& outer = (*config.mutable_fields())[key.substr(0, dot)];
    (*outer.mutable_struct_value()->mutable_fields())[key.substr(dot + 1)] =
        value;
  };
}

std::vector<KeyCase> KeyCases() {
  const auto chg = Effect::kChangesModel;
  const auto bad = Effect::kRefused;
  [[maybe_unused]] const auto same = Effect::kNoChange;
  const std::string llama = "mistral-7b-v0.1.json";  // LlamaConfig's keys
  const std::string mixtral = "mixtral-8x7b-v0.1.json";
  const std::string qwen_moe = "qwen3-30b-a3b.json";
  const std::string qwen2_moe = "qwen1.5-moe-a2.7b.json";
  const std::string deepseek = "deepseek-v3.json";
  const std::string gemma2 = "gemma-2-9b.json";
  return {
      {"model_type", llama,
       [](Struct& c) {
         Set("model_type", Text("qwen2"))(c);
         Value archs;
         archs.mutable_list_value()->add_values()->set_string_value(
             "Qwen2ForCausalLM");
         Set("architectures", archs)(c);
       },
       chg},
      {"architectures", llama,
       [](Struct& c) {
         Value archs;
         archs.mutable_list_value()->add_values()->set_string_value(
             "Qwen2ForCausalLM");
         Set("architectures", archs)(c);
       },
       bad},
      {"hidden_size", llama, Set("hidden_size", Number(2048)), chg},
      {"num_hidden_layers", llama, Set("num_hidden_layers", Number(16)), chg},
      {"num_attention_heads", llama, Set("num_attention_heads", Number(16)),
       chg},
      {"num_key_value_heads", llama, Set("num_key_value_heads", Number(4)),
       chg},
      {"intermediate_size", llama, Set("intermediate_size", Number(8192)), chg},
      {"vocab_size", llama, Set("vocab_size", Number(64000)), chg},
      {"tie_word_embeddings", llama, Set("tie_word_embeddings", Bool(true)),
       chg},
      {"head_dim", llama, Set("head_dim", Number(64)), chg},
      {"attention_bias", llama, Set("attention_bias", Bool(true)), chg},
      {"mlp_bias", llama, Set("mlp_bias", Bool(true)), bad},
      // An explicit null turns Gemma 2's cap off (Gemma2Config).
      {"final_logit_softcapping", gemma2,
       Set("final_logit_softcapping", Null()), chg},
      {"text_config", llama, Set("text_config.model_type", Text("llama")), bad},
      {"text_config.model_type", llama,
       Set("text_config.model_type", Text("gemma3_text")), bad},
      {"num_local_experts", mixtral, Set("num_local_experts", Number(16)), chg},
      {"num_experts", qwen_moe, Set("num_experts", Number(64)), chg},
      {"n_routed_experts", deepseek, Set("n_routed_experts", Number(128)), chg},
      {"num_experts_per_tok", mixtral, Set("num_experts_per_tok", Number(1)),
       chg},
      {"moe_intermediate_size", qwen_moe,
       Set("moe_intermediate_size", Number(1024)), chg},
      {"shared_expert_intermediate_size", qwen2_moe,
       Set("shared_expert_intermediate_size", Number(2816)), chg},
      {"n_shared_experts", deepseek, Set("n_shared_experts", Number(2)), chg},
      {"first_k_dense_replace", deepseek,
       Set("first_k_dense_replace", Number(1)), chg},
      {"moe_layer_freq", deepseek, Set("moe_layer_freq", Number(2)), chg},
      {"decoder_sparse_step", qwen_moe, Set("decoder_sparse_step", Number(2)),
       chg},
      {"mlp_only_layers", qwen_moe,
       [](Struct& c) {
         Value layers;
         layers.mutable_list_value()->add_values()->set_number_value(0);
         Set("mlp_only_layers", layers)(c);
       },
       chg},
      {"q_lora_rank", deepseek, Set("q_lora_rank", Number(1024)), chg},
      {"kv_lora_rank", deepseek, Set("kv_lora_rank", Number(256)), chg},
      {"qk_nope_head_dim", deepseek, Set("qk_nope_head_dim", Number(64)), chg},
      {"qk_rope_head_dim", deepseek, Set("qk_rope_head_dim", Number(32)), chg},
      {"v_head_dim", deepseek, Set("v_head_dim", Number(64)), chg},
      {"num_nextn_predict_layers", deepseek,
       Set("num_nextn_predict_layers", Number(0)), chg},
      {"hidden_act", llama, Set("hidden_act", Text("relu")), bad},
      {"use_qk_norm", "glm-4.5.json", Set("use_qk_norm", Bool(false)), chg},
      {"attn_logit_softcapping", gemma2, Set("attn_logit_softcapping", Null()),
       chg},
      {"hidden_activation", "gemma-7b.json",
       Set("hidden_activation", Text("relu")), bad},
      {"router_jitter_noise", mixtral, Set("router_jitter_noise", Number(0.01)),
       chg},
      // [RS] DeepSeek-V3's sigmoid keeps as a softmax over every expert
      // would: an unknown function is refused; its 8 groups of which 4
      // (the group top-k's indices, the mask) counted.
      {"scoring_func", deepseek, Set("scoring_func", Text("tanh")), bad},
      {"n_group", deepseek, Set("n_group", Number(1)), chg},
      {"topk_group", deepseek, Set("topk_group", Number(2)), chg},
      {"rope_scaling", llama,
       [](Struct& c) {
         Set("rope_scaling.rope_type", Text("yarn"))(c);
         Set("rope_scaling.factor", Number(4))(c);
       },
       chg},
      {"rope_scaling.rope_type", llama,
       Set("rope_scaling.rope_type", Text("yarn")), chg},
      {"rope_scaling.type", llama, Set("rope_scaling.type", Text("yarn")), chg},
      {"rope_parameters", llama, Set("rope_parameters.rope_type", Text("yarn")),
       chg},
      {"rope_parameters.rope_type", llama,
       Set("rope_parameters.rope_type", Text("yarn")), chg},
      {"rope_parameters.type", llama, Set("rope_parameters.type", Text("yarn")),
       chg},
      // Mistral 7B's 4096-token window, turned off.
      {"sliding_window", llama, Set("sliding_window", Null()), chg},
      {"layer_types", llama,
       [](Struct& c) {
         Value types;
         types.mutable_list_value()->add_values()->set_string_value(
             "full_attention");
         Set("layer_types", types)(c);
       },
       chg},
      // Qwen1.5-MoE: 24 layers, a window from layer 21 on once switched on.
      {"use_sliding_window", qwen2_moe, Set("use_sliding_window", Bool(true)),
       chg},
      // Switched on, sparing 28 layers (the default) would leave none of
      // its 24 windowed: 0 spares none.
      {"max_window_layers", qwen2_moe,
       [](Struct& c) {
         Set("use_sliding_window", Bool(true))(c);
         Set("max_window_layers", Number(0))(c);
       },
       chg},
  };
}

TEST(HfConfigFieldsTest, EveryParsedKeyIsClassified) {
  std::vector<std::string> rows;
  for (const KeyCase& c : KeyCases()) rows.push_back(c.key);
  testing::ExpectEveryPathClassified(
      testing::FieldPaths(v1::HuggingFaceConfig::descriptor()), rows,
      "readers/hf_config_fields_test.cc");
}

class HfConfigKeyTest : public ::testing::TestWithParam<KeyCase> {};

TEST_P(HfConfigKeyTest, ChangesTheModelOrIsRefusedOrSaysWhyNot) {
  const KeyCase& c = GetParam();
  absl::StatusOr<std::string> json =
      ReadSmallFile("tests/testdata/hf/" + c.base);
  ASSERT_TRUE(json.ok()) << json.status();
  Struct config;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(*json, &config).ok());
  const absl::StatusOr<v1::ModelConfig> before =
      ModelFromHuggingFaceJson(*json, c.base);
  ASSERT_TRUE(before.ok()) << before.status();
  c.change(config);
  std::string changed;
  ASSERT_TRUE(
      google::protobuf::util::MessageToJsonString(config, &changed).ok());
  const absl::StatusOr<v1::ModelConfig> after =
      ModelFromHuggingFaceJson(changed, c.base);
  const std::string top = c.key.substr(0, c.key.find('.'));
  switch (c.effect) {
    case Effect::kChangesModel:
      ASSERT_TRUE(after.ok()) << after.status();
      EXPECT_TRUE(before->SerializeAsString() != after->SerializeAsString())
          << c.key << " changed nothing in the model read";
      break;
    case Effect::kRefused:
      ASSERT_FALSE(after.ok())
          << c.key << " was read: " << after->ShortDebugString();
      EXPECT_EQ(after.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_NE(after.status().message().find("config.json: " + top),
                std::string::npos)
          << after.status();
      break;
    case Effect::kNoChange:
      ASSERT_TRUE(after.ok()) << after.status();
      ASSERT_FALSE(c.why.empty());
      EXPECT_TRUE(before->SerializeAsString() == after->SerializeAsString())
          << c.key << " was said to change nothing (" << c.why << ")";
      break;
  }
}

INSTANTIATE_TEST_SUITE_P(EveryKey, HfConfigKeyTest,
                         ::testing::ValuesIn(KeyCases()), [](const auto& info) {
                           return testing::TestNameOfPath(info.param.key);
                         });

}  // namespace
}  // namespace memgate
