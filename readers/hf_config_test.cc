#include "readers/hf_config.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "estimator/memory_model.h"
#include "gtest/gtest.h"
#include "readers/file_util.h"

namespace memgate {
namespace {

// Meta-Llama-3.1-8B's config.json as published (abridged nested rope
// settings kept: unknown keys, nested objects and floats must be ignored).
constexpr char kLlama31_8B[] = R"json({
  "architectures": ["LlamaForCausalLM"],
  "attention_bias": false,
  "bos_token_id": 128000,
  "eos_token_id": 128001,
  "hidden_act": "silu",
  "hidden_size": 4096,
  "initializer_range": 0.02,
  "intermediate_size": 14336,
  "max_position_embeddings": 131072,
  "model_type": "llama",
  "num_attention_heads": 32,
  "num_hidden_layers": 32,
  "num_key_value_heads": 8,
  "rms_norm_eps": 1e-05,
  "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0,
                   "high_freq_factor": 4.0,
                   "original_max_position_embeddings": 8192,
                   "rope_type": "llama3"},
  "rope_theta": 500000.0,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.43.0.dev0",
  "use_cache": true,
  "vocab_size": 128256
})json";

TEST(HfConfigTest, ReadsLlama31_8B) {
  absl::StatusOr<v1::ModelConfig> m =
      ModelFromHuggingFaceJson(kLlama31_8B, "meta-llama/Llama-3.1-8B");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->name(), "meta-llama/Llama-3.1-8B");
  EXPECT_EQ(m->num_layers(), 32u);
  EXPECT_EQ(m->hidden_size(), 4096u);
  EXPECT_EQ(m->ffn_hidden_size(), 14336u);
  EXPECT_EQ(m->num_attention_heads(), 32u);
  EXPECT_EQ(m->num_query_groups(), 8u);
  EXPECT_EQ(m->vocab_size(), 128256u);
  EXPECT_FALSE(m->tie_word_embeddings());
}

TEST(HfConfigTest, NoKeyValueHeadsMeansMultiHead) {
  absl::StatusOr<v1::ModelConfig> m = ModelFromHuggingFaceJson(
      R"({"model_type": "llama", "hidden_size": 4096,
          "num_hidden_layers": 32, "num_attention_heads": 32,
          "intermediate_size": 11008, "vocab_size": 32000,
          "tie_word_embeddings": true})",
      "llama-2-7b-ish");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->num_query_groups(), 32u);
  EXPECT_TRUE(m->tie_word_embeddings());
}

// Where config.json leaves out head_dim or num_key_value_heads, the family's
// config class supplies them, as transformers builds the model: memgate
// read every family as LlamaConfig (hidden / heads, multi-head), so a
// Gemma-7B-shaped config without head_dim was counted with 192-wide heads
// where transformers builds 256 (an under-count of a third of attention),
// and a Qwen3-4B-shaped one with 80 for 128.
TEST(HfConfigTest, AbsentHeadKeysTakeTheFamilysDefaults) {
  struct Case {
    const char* model_type;
    uint32_t hidden, heads;
    uint32_t head_dim, kv_heads;  // 0: hidden / heads
    const char* extra = "";
  };
  for (const Case& c : {Case{"llama", 4096, 32, 0, 32},
                        Case{"phi3", 3072, 32, 0, 32},
                        Case{"mistral", 4096, 32, 0, 8},
                        Case{"mixtral", 4096, 32, 0, 8,
                             R"(, "num_local_experts": 8,
                                 "num_experts_per_tok": 2)"},
                        Case{"qwen3_moe", 2048, 32, 0, 4,
                             R"(, "num_experts": 8, "num_experts_per_tok": 2,
                                 "moe_intermediate_size": 64)"},
                        Case{"qwen2", 4096, 64, 0, 32},
                        Case{"qwen3", 2560, 32, 128, 32},
                        Case{"gemma", 3072, 16, 256, 16},
                        Case{"gemma2", 3584, 16, 256, 4},
                        Case{"gemma3_text", 2560, 8, 256, 4}}) {
    const std::string json = absl::StrCat(
        R"({"model_type": ")", c.model_type, R"(", "hidden_size": )",
        c.hidden, R"(, "num_hidden_layers": 2, "num_attention_heads": )",
        c.heads, R"(, "intermediate_size": 256, "vocab_size": 1000)",
        c.extra, "}");
    absl::StatusOr<v1::ModelConfig> m = ModelFromHuggingFaceJson(json, "x");
    ASSERT_TRUE(m.ok()) << c.model_type << ": " << m.status();
    EXPECT_EQ(m->head_dim(), c.head_dim) << c.model_type;
    EXPECT_EQ(m->num_query_groups(), c.kv_heads) << c.model_type;
  }
  // Given, the config's own values win.
  absl::StatusOr<v1::ModelConfig> given = ModelFromHuggingFaceJson(
      R"({"model_type": "gemma", "hidden_size": 2048, "num_hidden_layers": 2,
          "num_attention_heads": 8, "num_key_value_heads": 1,
          "head_dim": 128, "intermediate_size": 256, "vocab_size": 1000})",
      "x");
  ASSERT_TRUE(given.ok()) << given.status();
  EXPECT_EQ(given->head_dim(), 128u);
  EXPECT_EQ(given->num_query_groups(), 1u);
}

TEST(HfConfigTest, MissingKeyIsNamed) {
  absl::StatusOr<v1::ModelConfig> m = ModelFromHuggingFaceJson(
      R"({"model_type": "llama", "hidden_size": 4096,
          "num_hidden_layers": 32, "num_attention_heads": 32,
          "vocab_size": 32000})",
      "x");
  ASSERT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find("intermediate_size"), std::string::npos)
      << m.status();
}

TEST(HfConfigTest, MalformedJsonIsAnErrorNotACrash) {
  for (const char* bad :
       {"", "{", "[]", "{\"hidden_size\": -4096}", "{\"hidden_size\": \"x\"}",
        "{\"hidden_size\": 1e30}", "null", "{\"vocab_size\": 4.5}"}) {
    absl::StatusOr<v1::ModelConfig> m = ModelFromHuggingFaceJson(bad, "x");
    EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(m.status().message().find("config.json"), std::string::npos);
  }
}

// Configs saved by transformers carry its PretrainedConfig bookkeeping
// beside the model's keys: Llama-2-7B's as meta-llama publishes it has the
// checkpoint's path (_name_or_path), which a site refusing unreviewed keys
// refused; older save_pretrained wrote generation defaults and label maps
// too. None of them changes the model read, and none is unreviewed.
TEST(HfConfigTest, TransformersBookkeepingKeysAreReviewed) {
  constexpr char kLlama2_7B[] = R"json({
    "_name_or_path": "meta-llama/Llama-2-7b-hf",
    "architectures": ["LlamaForCausalLM"],
    "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu",
    "hidden_size": 4096, "initializer_range": 0.02,
    "intermediate_size": 11008, "max_position_embeddings": 4096,
    "model_type": "llama", "num_attention_heads": 32,
    "num_hidden_layers": 32, "num_key_value_heads": 32,
    "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": null,
    "tie_word_embeddings": false, "torch_dtype": "float16",
    "transformers_version": "4.31.0.dev0", "use_cache": true,
    "vocab_size": 32000
  })json";
  EXPECT_TRUE(UnreviewedHuggingFaceKeys(kLlama2_7B).empty());
  const absl::StatusOr<v1::ModelConfig> plain =
      ModelFromHuggingFaceJson(kLlama2_7B, "llama-2-7b");
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->num_query_groups(), 32u);
  EXPECT_EQ(plain->ffn_hidden_size(), 11008u);

  std::string saved(kLlama2_7B);
  saved.replace(saved.find("\"vocab_size\""), 0,
                R"("_attn_implementation": "sdpa", "_commit_hash": "abc",
                   "return_dict": true, "output_hidden_states": false,
                   "output_attentions": false, "torchscript": false,
                   "use_bfloat16": false, "tf_legacy_loss": false,
                   "chunk_size_feed_forward": 0, "id2label": {"0": "LABEL_0"},
                   "label2id": {"LABEL_0": 0}, "finetuning_task": null,
                   "problem_type": null, "tokenizer_class": null,
                   "prefix": null, "sep_token_id": null,
                   "decoder_start_token_id": null,
                   "task_specific_params": null, "max_length": 20,
                   "min_length": 0, "do_sample": false,
                   "early_stopping": false, "num_beams": 1,
                   "num_beam_groups": 1, "diversity_penalty": 0.0,
                   "temperature": 1.0, "top_k": 50, "top_p": 1.0,
                   "typical_p": 1.0, "repetition_penalty": 1.0,
                   "length_penalty": 1.0, "no_repeat_ngram_size": 0,
                   "encoder_no_repeat_ngram_size": 0, "bad_words_ids": null,
                   "num_return_sequences": 1, "output_scores": false,
                   "return_dict_in_generate": false,
                   "forced_bos_token_id": null, "forced_eos_token_id": null,
                   "remove_invalid_values": false,
                   "exponential_decay_length_penalty": null,
                   "suppress_tokens": null, "begin_suppress_tokens": null,)");
  EXPECT_TRUE(UnreviewedHuggingFaceKeys(saved).empty())
      << UnreviewedHuggingFaceKeys(saved)[0];
  const absl::StatusOr<v1::ModelConfig> with_bookkeeping =
      ModelFromHuggingFaceJson(saved, "llama-2-7b");
  ASSERT_TRUE(with_bookkeeping.ok()) << with_bookkeeping.status();
  EXPECT_EQ(with_bookkeeping->ShortDebugString(), plain->ShortDebugString());
  // What can change a shape stays unreviewed: pruned heads, and the
  // encoder-decoder switches.
  std::string pruned(kLlama2_7B);
  pruned.replace(
      pruned.find("\"vocab_size\""), 0,
      R"("pruned_heads": {"0": [1, 2]}, "is_encoder_decoder": false, )");
  EXPECT_EQ(UnreviewedHuggingFaceKeys(pruned),
            (std::vector<std::string>{"is_encoder_decoder", "pruned_heads"}));
}

// `notes` less the one on a checkpoint's quantization (the published
// DeepSeek-V3 and gpt-oss configs have fp8 and mxfp4 weights): the notes
// on keys.
std::vector<std::string> KeyNotes(std::vector<std::string> notes) {
  notes.erase(std::remove_if(notes.begin(), notes.end(),
                             [](const std::string& note) {
                               return note.find(": quantization_config (") !=
                                      std::string::npos;
                             }),
              notes.end());
  return notes;
}

// Writes `json` to a fresh file under the test's temporary directory.
std::string ConfigFile(const std::string& name, const std::string& json) {
  const std::string path = ::testing::TempDir() + "/" + name;
  FILE* f = fopen(path.c_str(), "w");
  if (f == nullptr) return path;
  fputs(json.c_str(), f);
  fclose(f);
  return path;
}

// Every key of the published configs memgate models is either read or
// reviewed; a key it has not seen (a newer family feature) is named, not
// read past unsaid. The note names at most ten.
TEST(HfConfigTest, UnreviewedKeysAreNamed) {
  for (const char* file :
       {"deepseek-v3.json", "gemma-2-9b.json", "gemma-3-1b-it.json",
        "glm-4.5.json",
        "gemma-7b.json", "mistral-7b-v0.1.json", "mixtral-8x22b-v0.1.json",
        "mixtral-8x7b-v0.1.json", "phi-3-mini-4k-instruct.json",
        "qwen1.5-moe-a2.7b.json", "qwen2-7b.json", "qwen3-235b-a22b.json",
        "qwen3-30b-a3b.json", "qwen3-8b.json"}) {
    std::vector<std::string> notes;
    ASSERT_TRUE(
        ReadHuggingFaceConfig(std::string("tests/testdata/hf/") + file, &notes)
            .ok())
        << file;
    EXPECT_TRUE(KeyNotes(notes).empty()) << file << ": " << notes[0];
  }
  EXPECT_TRUE(UnreviewedHuggingFaceKeys(kLlama31_8B).empty());
  std::string json(kLlama31_8B);
  json.replace(json.find("\"vocab_size\""), 0,
               "\"use_parallel_residual\": true, \"moe_latent_dim\": 64, ");
  EXPECT_EQ(UnreviewedHuggingFaceKeys(json),
            (std::vector<std::string>{"moe_latent_dim",
                                      "use_parallel_residual"}));
  EXPECT_TRUE(UnreviewedHuggingFaceKeys("[1, 2]").empty());
  EXPECT_TRUE(UnreviewedHuggingFaceKeys("{not json").empty());

  std::string many(kLlama31_8B);
  std::string extra;
  for (int i = 0; i < 12; ++i) extra += "\"k" + std::to_string(10 + i) + "\": 1, ";
  many.replace(many.find("\"vocab_size\""), 0, extra);
  std::vector<std::string> notes;
  ASSERT_TRUE(
      ReadHuggingFaceConfig(ConfigFile("many_keys.json", many), &notes).ok());
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("k10, k11"), std::string::npos) << notes[0];
  EXPECT_NE(notes[0].find("k19 and 2 more"), std::string::npos) << notes[0];

  // A key's length is the file's: it is named by its first bytes.
  std::string long_key(kLlama31_8B);
  long_key.replace(long_key.find("\"vocab_size\""), 0,
                   "\"" + std::string(100000, 'q') + "\": 1, ");
  notes.clear();
  ASSERT_TRUE(
      ReadHuggingFaceConfig(ConfigFile("long_key.json", long_key), &notes)
          .ok());
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_LT(notes[0].size(), 600u);
  EXPECT_NE(notes[0].find(std::string(64, 'q') + "..."), std::string::npos)
      << notes[0];
}

// A published config of tests/testdata/hf/, as text.
std::string Published(const std::string& file) {
  absl::StatusOr<std::string> text =
      ReadSmallFile("tests/testdata/hf/" + file);
  EXPECT_TRUE(text.ok()) << text.status();
  return text.ok() ? *text : std::string();
}

// `json` with `key`'s value replaced by `value` where it has the key,
// the key added first where it has not.
std::string WithValue(std::string json, const std::string& key,
                      const std::string& value) {
  const std::string quoted = absl::StrCat("\"", key, "\":");
  const size_t at = json.find(quoted);
  if (at == std::string::npos) {
    json.insert(json.find('{') + 1, absl::StrCat(quoted, " ", value, ", "));
  } else {
    json.replace(at, json.find_first_of(",}", at) - at,
                 absl::StrCat(quoted, " ", value));
  }
  return json;
}

// Keys memgate reads for some families, in a config of a family whose
// transformers model does not read them (a Llama given experts), are read
// past as transformers reads past them, and named in a note; a site that
// refuses what it has not reviewed refuses them. "None" values (null,
// zero, false, empty) are not named, nor a family's own keys.
TEST(HfConfigTest, OtherFamiliesKeysAreNamedNotReadPastUnsaid) {
  std::string llama(kLlama31_8B);
  llama.replace(llama.find("\"vocab_size\""), 0,
                "\"num_local_experts\": 8, \"num_experts_per_tok\": 2, "
                "\"kv_lora_rank\": null, \"use_qk_norm\": false, ");
  const std::string path = ConfigFile("llama_with_experts.json", llama);
  std::vector<std::string> notes;
  absl::StatusOr<v1::ModelConfig> with = ReadHuggingFaceConfig(path, &notes);
  ASSERT_TRUE(with.ok()) << with.status();
  EXPECT_FALSE(with->has_moe());
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("model_type 'llama' does not read, read past as "
                          "transformers does: num_experts_per_tok, "
                          "num_local_experts ("),
            std::string::npos)
      << notes[0];
  EXPECT_EQ(notes[0].find("kv_lora_rank"), std::string::npos) << notes[0];
  EXPECT_EQ(notes[0].find("use_qk_norm"), std::string::npos) << notes[0];
  EXPECT_EQ(HuggingFaceKeysTheFamilyDoesNotRead(llama),
            (std::vector<std::string>{"num_experts_per_tok",
                                      "num_local_experts"}));
  EXPECT_TRUE(HuggingFaceKeysTheFamilyDoesNotRead("[1, 2]").empty());
  // transformers' Llama attends without a window, whatever the key says
  // (Mistral's reads it: its published config is named nothing above).
  std::string windowed(kLlama31_8B);
  windowed.replace(windowed.find("\"vocab_size\""), 0,
                   "\"sliding_window\": 4096, \"use_sliding_window\": "
                   "false, ");
  EXPECT_EQ(HuggingFaceKeysTheFamilyDoesNotRead(windowed),
            std::vector<std::string>{"sliding_window"});
  absl::StatusOr<v1::ModelConfig> unwindowed =
      ModelFromHuggingFaceJson(windowed, "x");
  ASSERT_TRUE(unwindowed.ok()) << unwindowed.status();
  EXPECT_FALSE(unwindowed->sliding_window());
  // Nor does it soft-cap (only Gemma 2's and 3's modeling does): the caps
  // are named and not counted (they would add the logits' tanh and rule
  // context parallelism out).
  std::string capped(kLlama31_8B);
  capped.replace(capped.find("\"vocab_size\""), 0,
                 "\"final_logit_softcapping\": 30.0, "
                 "\"attn_logit_softcapping\": 50.0, "
                 "\"hidden_activation\": \"gelu_pytorch_tanh\", ");
  EXPECT_EQ(HuggingFaceKeysTheFamilyDoesNotRead(capped),
            (std::vector<std::string>{"attn_logit_softcapping",
                                      "final_logit_softcapping",
                                      "hidden_activation"}));
  absl::StatusOr<v1::ModelConfig> uncapped =
      ModelFromHuggingFaceJson(capped, "x");
  ASSERT_TRUE(uncapped.ok()) << uncapped.status();
  EXPECT_EQ(uncapped->final_logit_softcapping(), 0);
  EXPECT_EQ(uncapped->attention_logit_softcapping(), 0);
  EXPECT_EQ(uncapped->mlp_activation(), v1::MLP_ACTIVATION_SWIGLU);
  EXPECT_TRUE(HuggingFaceKeysTheFamilyDoesNotRead(
                  R"({"model_type": "falcon", "num_local_experts": 8})")
                  .empty());
  // The estimate is the dense Llama's, as transformers would build it.
  absl::StatusOr<v1::ModelConfig> without =
      ModelFromHuggingFaceJson(kLlama31_8B, with->name());
  ASSERT_TRUE(without.ok());
  EXPECT_EQ(with->SerializeAsString(), without->SerializeAsString());
  absl::StatusOr<v1::ModelConfig> strict =
      ReadHuggingFaceConfig(path, nullptr, /*refuse_unreviewed=*/true);
  ASSERT_FALSE(strict.ok());
  EXPECT_EQ(strict.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(strict.status().message().find(
                "does not read: num_experts_per_tok, num_local_experts"),
            std::string::npos)
      << strict.status();

  // Per family: Qwen3-MoE has no shared expert (Qwen2-MoE's key), GLM no
  // latent attention (DeepSeek's); their own keys pass unnamed (the
  // published configs above).
  struct Case {
    const char* file;
    const char* added;
    const char* named;
  };
  for (const Case& c :
       {Case{"qwen3-30b-a3b.json",
             "\"shared_expert_intermediate_size\": 4096, ",
             "shared_expert_intermediate_size"},
        Case{"glm-4.5.json", "\"kv_lora_rank\": 512, ", "kv_lora_rank"},
        Case{"mixtral-8x7b-v0.1.json", "\"first_k_dense_replace\": 1, ",
             "first_k_dense_replace"},
        Case{"qwen3-8b.json", "\"router_jitter_noise\": 0.1, ",
             "router_jitter_noise"},
        Case{"deepseek-v3.json", "\"max_window_layers\": 28, ",
             "max_window_layers"}}) {
    std::string json = Published(c.file);
    const size_t brace = json.find('{');
    ASSERT_NE(brace, std::string::npos) << c.file;
    json.insert(brace + 1, c.added);
    std::vector<std::string> read_notes;
    ASSERT_TRUE(ReadHuggingFaceConfig(ConfigFile(c.file, json), &read_notes)
                    .ok())
        << c.file;
    const std::vector<std::string> family_notes = KeyNotes(read_notes);
    ASSERT_EQ(family_notes.size(), 1u) << c.file;
    EXPECT_NE(family_notes[0].find(std::string("does not read, read past as "
                                               "transformers does: ") +
                                   c.named + " ("),
              std::string::npos)
        << family_notes[0];
  }
}

// A zero size is refused naming its key (in a ModelConfig a zero reads as
// "not given", which would send the model to the catalog by the file's
// name and an error about model.name, or a default in place of an MoE or
// MLA width); an explicit head_dim or num_key_value_heads of 0 too, while
// null takes the family's default.
TEST(HfConfigTest, AZeroSizeIsRefusedNamingItsKey) {
  for (const char* key :
       {"hidden_size", "num_hidden_layers", "num_attention_heads",
        "intermediate_size", "vocab_size", "head_dim",
        "num_key_value_heads"}) {
    absl::StatusOr<v1::ModelConfig> m =
        ModelFromHuggingFaceJson(WithValue(kLlama31_8B, key, "0"), "x");
    ASSERT_FALSE(m.ok()) << key;
    EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(m.status().message().find(
                  absl::StrCat(key, ": must be positive (got 0)")),
              std::string::npos)
        << m.status();
  }
  // The families' own sizes and steps: an MoE width, Qwen's sparse step,
  // DeepSeek's MoE frequency and MLA head widths.
  struct FamilyKey {
    const char* file;
    const char* key;
  };
  for (const FamilyKey& k :
       {FamilyKey{"qwen3-30b-a3b.json", "moe_intermediate_size"},
        FamilyKey{"qwen3-30b-a3b.json", "decoder_sparse_step"},
        FamilyKey{"deepseek-v3.json", "moe_intermediate_size"},
        FamilyKey{"deepseek-v3.json", "moe_layer_freq"},
        FamilyKey{"deepseek-v3.json", "qk_nope_head_dim"},
        FamilyKey{"deepseek-v3.json", "qk_rope_head_dim"},
        FamilyKey{"glm-4.5.json", "moe_intermediate_size"},
        // The routed experts' counts (a Qwen MoE's 0 is a dense model:
        // AQwenMoeWithoutExpertsIsTheDenseModelTransformersBuilds).
        FamilyKey{"mixtral-8x7b-v0.1.json", "num_local_experts"},
        FamilyKey{"gpt-oss-20b.json", "num_local_experts"},
        FamilyKey{"deepseek-v3.json", "n_routed_experts"},
        FamilyKey{"glm-4.5.json", "n_routed_experts"},
        FamilyKey{"mixtral-8x7b-v0.1.json", "num_experts_per_tok"},
        FamilyKey{"qwen3-30b-a3b.json", "num_experts_per_tok"},
        FamilyKey{"deepseek-v3.json", "num_experts_per_tok"}}) {
    const std::string json = Published(k.file);
    ASSERT_NE(json.find(absl::StrCat("\"", k.key, "\":")), std::string::npos)
        << k.file << " " << k.key;
    absl::StatusOr<v1::ModelConfig> m =
        ModelFromHuggingFaceJson(WithValue(json, k.key, "0"), "x");
    ASSERT_FALSE(m.ok()) << k.file << " " << k.key;
    EXPECT_NE(m.status().message().find(
                  absl::StrCat(k.key, ": must be positive (got 0)")),
              std::string::npos)
        << m.status();
  }
  ASSERT_NE(std::string(kLlama31_8B).find("\"num_key_value_heads\":"),
            std::string::npos);
  absl::StatusOr<v1::ModelConfig> mha = ModelFromHuggingFaceJson(
      WithValue(kLlama31_8B, "num_key_value_heads", "null"), "x");
  ASSERT_TRUE(mha.ok()) << mha.status();
  EXPECT_EQ(mha->num_query_groups(), mha->num_attention_heads());
}

// More experts routed to than the file has is refused naming both keys.
TEST(HfConfigTest, RoutingToMoreExpertsThanThereAreIsRefusedNamingTheKeys) {
  absl::StatusOr<v1::ModelConfig> m = ModelFromHuggingFaceJson(
      WithValue(Published("mixtral-8x7b-v0.1.json"), "num_experts_per_tok",
                "9"),
      "x");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find(
                "num_experts_per_tok: must be at most num_local_experts = 8 "
                "(got 9)"),
            std::string::npos)
      << m.status();
}

// transformers' Qwen2-MoE and Qwen3-MoE build their sparse block only
// where num_experts > 0: with 0, every layer has the dense MLP of
// intermediate_size, as where mlp_only_layers lists every layer. Counted
// so, and said.
TEST(HfConfigTest, AQwenMoeWithoutExpertsIsTheDenseModelTransformersBuilds) {
  for (const char* file : {"qwen3-30b-a3b.json", "qwen1.5-moe-a2.7b.json"}) {
    const std::string json = WithValue(Published(file), "num_experts", "0");
    absl::StatusOr<v1::ModelConfig> none = ModelFromHuggingFaceJson(json, "x");
    ASSERT_TRUE(none.ok()) << file << " " << none.status();
    EXPECT_FALSE(none->has_moe()) << file;
    // Every layer listed in mlp_only_layers: the same dense layers, the
    // same estimate's parameters.
    std::string layers = "[";
    for (uint32_t i = 0; i < none->num_layers(); ++i) {
      absl::StrAppend(&layers, i ? "," : "", i);
    }
    layers += "]";
    absl::StatusOr<v1::ModelConfig> listed = ModelFromHuggingFaceJson(
        WithValue(Published(file), "mlp_only_layers", layers), "x");
    ASSERT_TRUE(listed.ok()) << file << " " << listed.status();
    EXPECT_DOUBLE_EQ(TotalParameters(ShapeOf(*listed)),
                     TotalParameters(ShapeOf(*none)))
        << file;
    std::vector<std::string> notes;
    ASSERT_TRUE(
        ReadHuggingFaceConfig(ConfigFile(file, json), &notes).ok());
    bool said = false;
    for (const std::string& note : notes) {
      said = said || note.find("num_experts 0: transformers builds no "
                               "sparse MoE block") != std::string::npos;
    }
    EXPECT_TRUE(said) << file;
  }
}

// A checkpoint's quantization (DeepSeek-V3's fp8 blocks, gpt-oss's
// mxfp4 experts) is how its weights are stored, not how they train: read
// past, and said, naming the method where it is a plain name.
TEST(HfConfigTest, AQuantizedCheckpointIsNotedAsStorageNotTraining) {
  struct Case {
    const char* value;
    const char* named;  // in the note; nullptr: no note
  };
  for (const Case& c :
       {Case{R"({"quant_method": "fp8", "fmt": "e4m3"})",
             "quantization_config (fp8): how the checkpoint's weights are "
             "stored; training keeps the job's own precision"},
        Case{R"({"quant_method": "mxfp4"})", "quantization_config (mxfp4)"},
        Case{R"({"bits": 4})", "quantization_config (given)"},
        Case{R"({"quant_method": "x\ny"})", "quantization_config (given)"},
        Case{"null", nullptr}}) {
    const std::string json =
        WithValue(kLlama31_8B, "quantization_config", c.value);
    std::vector<std::string> notes;
    absl::StatusOr<v1::ModelConfig> m =
        ReadHuggingFaceConfig(ConfigFile("quantized.json", json), &notes);
    ASSERT_TRUE(m.ok()) << c.value << " " << m.status();
    // The model is the one without the key.
    EXPECT_DOUBLE_EQ(
        TotalParameters(ShapeOf(*m)),
        TotalParameters(ShapeOf(*ModelFromHuggingFaceJson(kLlama31_8B, "x"))));
    bool said = false, any = false;
    for (const std::string& note : notes) {
      any = any || note.find("quantization_config") != std::string::npos;
      said = said || (c.named != nullptr &&
                      note.find(c.named) != std::string::npos);
    }
    EXPECT_EQ(any, c.named != nullptr) << c.value;
    EXPECT_EQ(said, c.named != nullptr) << c.value;
  }
  // The published ones say theirs.
  for (const auto& [file, named] :
       {std::pair<const char*, const char*>{"deepseek-v3.json",
                                            "quantization_config (fp8)"},
        {"gpt-oss-120b.json", "quantization_config (mxfp4)"}}) {
    std::vector<std::string> notes;
    ASSERT_TRUE(
        ReadHuggingFaceConfig(std::string("tests/testdata/hf/") + file, &notes)
            .ok());
    ASSERT_EQ(notes.size(), 1u) << file;
    EXPECT_NE(notes[0].find(named), std::string::npos) << notes[0];
  }
}

// The file is read whole and parsed twice (the model, then its keys), so
// its size is bounded before either: a 16 MiB + 1 file (a mistaken path to
// weights, or a hostile one) is refused by size, unparsed.
TEST(HfConfigTest, AnOversizedConfigIsRefusedBeforeParsing) {
  const std::string path = ::testing::TempDir() + "/huge_config.json";
  FILE* f = fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  const std::string chunk(1 << 20, ' ');
  for (int i = 0; i < 16; ++i) fputs(chunk.c_str(), f);
  fputs(kLlama31_8B, f);  // valid JSON after the blanks
  fclose(f);
  std::vector<std::string> notes;
  absl::StatusOr<v1::ModelConfig> m = ReadHuggingFaceConfig(path, &notes);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("larger than"), std::string::npos)
      << m.status();
  EXPECT_TRUE(notes.empty());
  remove(path.c_str());
}

// Published configs (tests/testdata/hf/) read into the published totals.
TEST(HfConfigTest, PublishedConfigsGiveThePublishedParameterCounts) {
  const std::vector<std::pair<std::string, double>> cases = {
      {"mistral-7b-v0.1.json", 7241732096.0},
      {"qwen2-7b.json", 7615616512.0},           // q, k, v biases
      {"phi-3-mini-4k-instruct.json", 3821079552.0},
      {"gemma-7b.json", 8537680896.0},           // head_dim 256, tied
      {"qwen3-8b.json", 8190735360.0},           // QK-norm, head_dim 128
      {"gemma-2-9b.json", 9241705984.0},         // 4 norms a layer, tied
      {"gemma-3-1b-it.json", 999885952.0},       // and QK-norm, 1 KV head
  };
  for (const auto& [file, total] : cases) {
    absl::StatusOr<v1::ModelConfig> m =
        ReadHuggingFaceConfig("tests/testdata/hf/" + file);
    ASSERT_TRUE(m.ok()) << file << ": " << m.status();
    EXPECT_DOUBLE_EQ(TotalParameters(ShapeOf(*m)), total) << file;
  }
  absl::StatusOr<v1::ModelConfig> gemma =
      ReadHuggingFaceConfig("tests/testdata/hf/gemma-7b.json");
  EXPECT_TRUE(gemma->tie_word_embeddings());  // GemmaConfig's default
  EXPECT_EQ(gemma->head_dim(), 256u);
  absl::StatusOr<v1::ModelConfig> gemma2 =
      ReadHuggingFaceConfig("tests/testdata/hf/gemma-2-9b.json");
  EXPECT_TRUE(gemma2->sandwich_norms());
  EXPECT_FLOAT_EQ(gemma2->final_logit_softcapping(), 30);
  absl::StatusOr<v1::ModelConfig> gemma3 =
      ReadHuggingFaceConfig("tests/testdata/hf/gemma-3-1b-it.json");
  EXPECT_TRUE(gemma3->qk_norm());
  // Gemma's gated tanh-GeLU, which Megatron runs unfused; the others'
  // gates are SwiGLU.
  for (const auto* m : {&*gemma, &*gemma2, &*gemma3}) {
    EXPECT_EQ(m->mlp_activation(), v1::MLP_ACTIVATION_GEGLU) << m->name();
  }
  EXPECT_EQ(ReadHuggingFaceConfig("tests/testdata/hf/qwen3-8b.json")
                ->mlp_activation(),
            v1::MLP_ACTIVATION_SWIGLU);
  EXPECT_FLOAT_EQ(gemma3->final_logit_softcapping(), 0);  // null: none
}

// Nemotron (transformers' NemotronForCausalLM): an ungated squared-ReLU
// MLP (up and down: 2 matrices) and LayerNorm1P (a weight and a bias).
// Its epsilon keys are reviewed, not named as unread.
TEST(HfConfigTest, NemotronIsSquaredReluAndLayerNorm) {
  std::vector<std::string> notes;
  absl::StatusOr<v1::ModelConfig> m = ReadHuggingFaceConfig(
      "tests/testdata/hf/nemotron-4-340b.json", &notes);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->mlp_activation(), v1::MLP_ACTIVATION_SQUARED_RELU);
  EXPECT_EQ(m->normalization(), v1::NORMALIZATION_LAYERNORM);
  EXPECT_FALSE(m->tie_word_embeddings());
  EXPECT_TRUE(notes.empty()) << notes.front();
  // 96 x (attention 18432 x (18432 + 2 x 8 x 192) + 18432^2, MLP 2 x 18432
  // x 73728, two norms of 2 x 18432) + embedding and head 2 x 256000 x
  // 18432 + the final norm.
  const double h = 18432, f = 73728, kv = 8 * 192, v = 256000;
  EXPECT_DOUBLE_EQ(TotalParameters(ShapeOf(*m)),
                   96 * (h * (h + 2 * kv) + h * h + 2 * h * f + 4 * h) +
                       2 * v * h + 2 * h);
  EXPECT_TRUE(UnreviewedHuggingFaceKeys(
                  R"({"layer_norm_eps": 1e-5, "unk_token_id": 0})")
                  .empty());
  // A hostile hidden_act is refused without echoing it whole.
  const std::string long_act(4096, 'x');
  absl::StatusOr<v1::ModelConfig> hostile = ModelFromHuggingFaceJson(
      R"({"model_type": "nemotron", "hidden_act": ")" + long_act +
          R"(", "hidden_size": 64, "num_hidden_layers": 2,
          "num_attention_heads": 4, "intermediate_size": 256,
          "vocab_size": 1000})",
      "x");
  ASSERT_FALSE(hostile.ok());
  EXPECT_NE(hostile.status().message().find("hidden_act"), std::string::npos);
  EXPECT_LT(hostile.status().message().size(), 200u);
}

// The MLP's activation is read from the key the family's modeling file
// reads (transformers: hidden_act, Gemma's hidden_activation), each with
// its config class's default when absent. A gated GeLU keeps more than
// SwiGLU (glu(): 10 bytes an FFN column a token against 8), so a Llama
// config naming one is no longer estimated as SwiGLU; an activation memgate
// does not count is refused naming its key.
TEST(HfConfigTest, TheMlpActivationIsTheOneTheFamilyReads) {
  const std::string dims =
      R"("hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
         "intermediate_size": 256, "vocab_size": 1000)";
  auto read = [&](const std::string& keys) {
    return ModelFromHuggingFaceJson("{" + keys + dims + "}", "x");
  };
  for (const auto& [keys, activation] :
       std::vector<std::pair<std::string, v1::MlpActivation>>{
           {R"("model_type": "llama", )", v1::MLP_ACTIVATION_SWIGLU},
           {R"("model_type": "llama", "hidden_act": "silu", )",
            v1::MLP_ACTIVATION_SWIGLU},
           {R"("model_type": "mistral", "hidden_act": "swish", )",
            v1::MLP_ACTIVATION_SWIGLU},
           {R"("model_type": "llama", "hidden_act": "gelu", )",
            v1::MLP_ACTIVATION_GEGLU},
           {R"("model_type": "qwen3", "hidden_act": "gelu_pytorch_tanh", )",
            v1::MLP_ACTIVATION_GEGLU},
           {R"("model_type": "mixtral", "hidden_act": "gelu_new",
               "num_local_experts": 8, "num_experts_per_tok": 2, )",
            v1::MLP_ACTIVATION_GEGLU},
           {R"("model_type": "phi3", "hidden_act": "quick_gelu", )",
            v1::MLP_ACTIVATION_QUICK_GEGLU},
           // Gemma reads hidden_activation; its legacy hidden_act is not.
           {R"("model_type": "gemma", "hidden_act": "silu", )",
            v1::MLP_ACTIVATION_GEGLU},
           {R"("model_type": "gemma2", "hidden_activation": "gelu", )",
            v1::MLP_ACTIVATION_GEGLU},
           {R"("model_type": "nemotron", )",
            v1::MLP_ACTIVATION_SQUARED_RELU},
       }) {
    absl::StatusOr<v1::ModelConfig> m = read(keys);
    ASSERT_TRUE(m.ok()) << keys << m.status();
    EXPECT_EQ(m->mlp_activation(), activation)
        << keys << v1::MlpActivation_Name(m->mlp_activation());
  }
  for (const auto& [keys, named] :
       std::vector<std::pair<std::string, std::string>>{
           {R"("model_type": "llama", "hidden_act": "relu", )",
            "hidden_act: 'relu' is not modelled for model_type 'llama'"},
           {R"("model_type": "deepseek_v3", "hidden_act": "gelu_10", )",
            "hidden_act: 'gelu_10'"},
           {R"("model_type": "gemma3_text", "hidden_activation": "silu", )",
            "hidden_activation: 'silu' is not modelled"},
           {R"("model_type": "llama", "hidden_act": ")" +
                std::string(100000, 'g') + R"(", )",
            "hidden_act: 'gggg"},
       }) {
    absl::StatusOr<v1::ModelConfig> m = read(keys);
    ASSERT_FALSE(m.ok()) << keys.substr(0, 80);
    EXPECT_NE(m.status().message().find(named), std::string::npos)
        << m.status();
    EXPECT_LT(m.status().message().size(), 200u);
  }
  // What it changes: 2 bytes an FFN column a token a layer, here two layers
  // of 256 columns over s = 1024 tokens on one GPU.
  absl::StatusOr<v1::ModelConfig> swiglu = read(R"("model_type": "llama", )");
  absl::StatusOr<v1::ModelConfig> geglu =
      read(R"("model_type": "llama", "hidden_act": "gelu", )");
  ASSERT_TRUE(swiglu.ok() && geglu.ok());
  Layout l;
  l.seq_length = 1024;
  EXPECT_DOUBLE_EQ(
      StageMemoryOf(ShapeOf(*geglu), l, 0, 2).activation_bytes -
          StageMemoryOf(ShapeOf(*swiglu), l, 0, 2).activation_bytes,
      2 * 2 * 1024.0 * 256);
}

// Mixtral's router jitter (router_jitter_noise, applied in training by
// MixtralSparseMoeBlock) is Megatron's input jitter; zero is none, and a
// value that is no probability is refused by its key.
TEST(HfConfigTest, MixtralsRouterJitterIsInputJitter) {
  const std::string mixtral =
      R"({"model_type": "mixtral", "num_local_experts": 8,
          "num_experts_per_tok": 2, "hidden_size": 64,
          "num_hidden_layers": 2, "num_attention_heads": 4,
          "intermediate_size": 256, "vocab_size": 1000, )";
  absl::StatusOr<v1::ModelConfig> jitter =
      ModelFromHuggingFaceJson(mixtral + R"("router_jitter_noise": 0.01})", "x");
  ASSERT_TRUE(jitter.ok()) << jitter.status();
  EXPECT_TRUE(jitter->moe().input_jitter());
  absl::StatusOr<v1::ModelConfig> none =
      ModelFromHuggingFaceJson(mixtral + R"("router_jitter_noise": 0.0})", "x");
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_FALSE(none->moe().input_jitter());
  absl::StatusOr<v1::ModelConfig> bad =
      ModelFromHuggingFaceJson(mixtral + R"("router_jitter_noise": -1})", "x");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("router_jitter_noise"),
            std::string::npos);
  EXPECT_TRUE(UnreviewedHuggingFaceKeys(R"({"router_jitter_noise": 0.1,
      "hidden_activation": "gelu"})").empty());
}

// Gemma 2's terms by hand, one GPU, s = 1024, b = 1, bf16: the two
// sandwich norms store 2 x 2sbh more a layer (h = 3584), and the logits'
// tanh 2sbv (v = 256000) on the last stage.
TEST(HfConfigTest, Gemma2SandwichNormsAndSoftcappingAddActivations) {
  absl::StatusOr<v1::ModelConfig> gemma2 =
      ReadHuggingFaceConfig("tests/testdata/hf/gemma-2-9b.json");
  ASSERT_TRUE(gemma2.ok()) << gemma2.status();
  v1::ModelConfig plain = *gemma2;
  plain.set_sandwich_norms(false);
  plain.set_final_logit_softcapping(0);
  Layout l;
  l.seq_length = 1024;
  const double sandwich = StageMemoryOf(ShapeOf(*gemma2), l, 0, 42)
                              .activation_bytes;
  const double without = StageMemoryOf(ShapeOf(plain), l, 0, 42)
                             .activation_bytes;
  EXPECT_DOUBLE_EQ(sandwich - without,
                   42 * 4 * 1024.0 * 3584 + 2 * 1024.0 * 256000);
}

// Families memgate does not model are refused naming model_type, never
// read as a dense Llama.
// Gemma 2 soft-caps its attention scores (attn_logit_softcapping) as well
// as its logits. A key left out takes transformers' Gemma2Config default
// (50 and 30), an explicit null none; other families have no default. A
// cap that is no number is refused by validation, naming the field.
TEST(HfConfigTest, Gemma2sSoftCapsAreReadWithTransformersDefaults) {
  absl::StatusOr<v1::ModelConfig> published =
      ReadHuggingFaceConfig("tests/testdata/hf/gemma-2-9b.json");
  ASSERT_TRUE(published.ok()) << published.status();
  EXPECT_FLOAT_EQ(published->attention_logit_softcapping(), 50);
  const std::string shape = R"("hidden_size": 64, "num_hidden_layers": 2,
      "num_attention_heads": 4, "intermediate_size": 256,
      "vocab_size": 1000)";
  auto read = [&](const std::string& type, const std::string& caps) {
    return ModelFromHuggingFaceJson(
        "{\"model_type\": \"" + type + "\", " + caps + shape + "}", "x");
  };
  absl::StatusOr<v1::ModelConfig> absent = read("gemma2", "");
  ASSERT_TRUE(absent.ok()) << absent.status();
  EXPECT_FLOAT_EQ(absent->attention_logit_softcapping(), 50);
  EXPECT_FLOAT_EQ(absent->final_logit_softcapping(), 30);
  absl::StatusOr<v1::ModelConfig> null = read(
      "gemma2",
      R"("attn_logit_softcapping": null, "final_logit_softcapping": null, )");
  ASSERT_TRUE(null.ok()) << null.status();
  EXPECT_FLOAT_EQ(null->attention_logit_softcapping(), 0);
  EXPECT_FLOAT_EQ(null->final_logit_softcapping(), 0);
  absl::StatusOr<v1::ModelConfig> given =
      read("gemma2", R"("attn_logit_softcapping": 20.5, )");
  EXPECT_FLOAT_EQ(given->attention_logit_softcapping(), 20.5);
  EXPECT_FLOAT_EQ(given->final_logit_softcapping(), 30);
  // Gemma 3 dropped both: no default.
  absl::StatusOr<v1::ModelConfig> gemma3 = read("gemma3_text", "");
  EXPECT_FLOAT_EQ(gemma3->attention_logit_softcapping(), 0);
  EXPECT_FLOAT_EQ(gemma3->final_logit_softcapping(), 0);
  // Read, so no longer named as unreviewed.
  EXPECT_TRUE(
      UnreviewedHuggingFaceKeys(R"({"attn_logit_softcapping": 50.0})").empty());
  // JSON takes "NaN" for a float: passed on as read, for validation to
  // refuse (validation_test).
  absl::StatusOr<v1::ModelConfig> nan =
      read("gemma2", R"("attn_logit_softcapping": "NaN", )");
  ASSERT_TRUE(nan.ok()) << nan.status();
  EXPECT_TRUE(std::isnan(nan->attention_logit_softcapping()));
}

TEST(HfConfigTest, UnmodelledFamiliesAreRefusedByName) {
  const std::string dims =
      R"("hidden_size": 4096, "num_hidden_layers": 32,
         "num_attention_heads": 32, "intermediate_size": 11008,
         "vocab_size": 32000)";
  for (const auto& [json, named] :
       std::vector<std::pair<std::string, std::string>>{
           {"{" + dims + "}", "model_type: missing"},
           {R"({"model_type": "deepseek_v3", )" + dims + "}",
            "num_experts_per_tok: required for a mixture-of-experts model"},
           {R"({"model_type": "mixtral", "num_experts_per_tok": 2, )" + dims +
                "}",
            "num_local_experts"},
           {R"({"model_type": "gemma3", "text_config": {"model_type":
                "gemma3_text"}, )" + dims + "}", "vision tower"},
           {R"({"model_type": "llama", "text_config": {}, )" + dims + "}",
            "text_config"},
           {R"({"model_type": "gpt2", )" + dims + "}", "gpt2"},
           {R"({"model_type": "llama", "architectures":
                ["LlamaForSequenceClassification"], )" + dims + "}",
            "LlamaForSequenceClassification"},
           {R"({"model_type": "llama", "mlp_bias": true, )" + dims + "}",
            "mlp_bias"},
           {R"({"model_type": "nemotron", "hidden_act": "gelu", )" + dims +
                "}",
            "hidden_act: 'gelu'"},
       }) {
    absl::StatusOr<v1::ModelConfig> r = ModelFromHuggingFaceJson(json, "x");
    ASSERT_FALSE(r.ok()) << json;
    EXPECT_NE(r.status().message().find(named), std::string::npos)
        << r.status();
  }
}

// Mixture-of-experts configs read into their published totals: Mixtral
// 46.7B (once admitted as 7.2B), Qwen3's MoE models, DeepSeek-V3 671B
// without its multi-token-prediction layer and 685B with it (the published
// figure also counts the MTP layer's own embedding and head copies, 1.9B,
// which are memory of the last stage, not parameters here: within 0.5%).
TEST(HfConfigTest, MixtureOfExpertsConfigsGiveThePublishedTotals) {
  const std::vector<std::pair<std::string, double>> exact = {
      {"mixtral-8x7b-v0.1.json", 46702792704.0},
      {"mixtral-8x22b-v0.1.json", 140630071296.0},
      {"qwen3-30b-a3b.json", 30532122624.0},
      {"qwen3-235b-a22b.json", 235093634560.0},
  };
  for (const auto& [file, total] : exact) {
    absl::StatusOr<v1::ModelConfig> m =
        ReadHuggingFaceConfig("tests/testdata/hf/" + file);
    ASSERT_TRUE(m.ok()) << file << ": " << m.status();
    EXPECT_DOUBLE_EQ(TotalParameters(ShapeOf(*m)), total) << file;
  }
  absl::StatusOr<v1::ModelConfig> qwen2 =
      ReadHuggingFaceConfig("tests/testdata/hf/qwen1.5-moe-a2.7b.json");
  ASSERT_TRUE(qwen2.ok()) << qwen2.status();
  EXPECT_NEAR(TotalParameters(ShapeOf(*qwen2)) / 14.3e9, 1, 0.005);
  EXPECT_TRUE(qwen2->moe().shared_expert_gate());

  absl::StatusOr<v1::ModelConfig> v3 =
      ReadHuggingFaceConfig("tests/testdata/hf/deepseek-v3.json");
  ASSERT_TRUE(v3.ok()) << v3.status();
  EXPECT_EQ(v3->mtp_num_layers(), 1u);
  // q_a_layernorm and kv_a_layernorm: the latent norms, counted as
  // Megatron's --qk-layernorm with MLA counts them.
  EXPECT_TRUE(v3->qk_norm());
  EXPECT_EQ(v3->moe().layer_pattern(2), 0u);  // first_k_dense_replace 3
  // [RS] scoring_func sigmoid within topk_group 4 of n_group 8; Qwen's
  // softmax counted over every expert; the training's kernel and losses
  // unknown (counted at their largest).
  EXPECT_EQ(v3->moe().router_score_function(),
            v1::MoeConfig::ROUTER_SCORE_SIGMOID);
  EXPECT_EQ(v3->moe().router_num_groups(), 8u);
  EXPECT_EQ(v3->moe().router_group_topk(), 4u);
  EXPECT_FALSE(v3->moe().has_router_fusion() || v3->moe().has_aux_loss() ||
               v3->moe().has_z_loss());
  EXPECT_EQ(qwen2->moe().router_score_function(),
            v1::MoeConfig::ROUTER_SCORE_SOFTMAX);
  EXPECT_EQ(v3->moe().layer_pattern(3), 1u);
  EXPECT_NEAR(TotalParameters(ShapeOf(*v3)) / 685e9, 1, 0.005);
  v1::ModelConfig without_mtp = *v3;
  without_mtp.set_mtp_num_layers(0);
  // By hand: embeddings 2 x 129280 x 7168; MLA 187,107,328 and norms
  // 14,336 a layer; 3 dense MLPs of 3 x 7168 x 18432; 58 MoE MLPs of 256
  // experts and 1 shared of 3 x 7168 x 2048 and a 7168 x 256 router; the
  // final norm.
  const double mla = 187107328 + 14336;
  const double expert = 3.0 * 7168 * 2048;
  EXPECT_DOUBLE_EQ(TotalParameters(ShapeOf(without_mtp)),
                   2.0 * 129280 * 7168 + 3 * (mla + 3.0 * 7168 * 18432) +
                       58 * (mla + 257 * expert + 7168.0 * 256) + 7168);
  EXPECT_NEAR(TotalParameters(ShapeOf(without_mtp)) / 671e9, 1, 0.005);
}

// Kimi K2 (model_type kimi_k2) is DeepSeek-V3's architecture with its own
// dimensions: 64 heads, 384 routed experts, one leading dense layer, a
// 163,840 vocabulary, no next-token layer. DeepSeek-V3's config with
// Kimi K2's published values reads as that model: 1.026T parameters
// (by hand: MLA 101,122,048 and norms a layer at 64 heads, one dense MLP,
// 60 MoE MLPs of 385 experts and a 7168 x 384 router).
TEST(HfConfigTest, KimiK2IsReadAsDeepSeekV3sArchitecture) {
  std::string json = Published("deepseek-v3.json");
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"\"model_type\": \"deepseek_v3\"", "\"model_type\": \"kimi_k2\""},
           {"\"num_attention_heads\": 128", "\"num_attention_heads\": 64"},
           {"\"num_key_value_heads\": 128", "\"num_key_value_heads\": 64"},
           {"\"n_routed_experts\": 256", "\"n_routed_experts\": 384"},
           {"\"first_k_dense_replace\": 3", "\"first_k_dense_replace\": 1"},
           {"\"num_nextn_predict_layers\": 1", "\"num_nextn_predict_layers\": 0"},
           {"\"n_group\": 8", "\"n_group\": 1"},
           {"\"topk_group\": 4", "\"topk_group\": 1"},
           {"\"vocab_size\": 129280", "\"vocab_size\": 163840"}}) {
    const size_t at = json.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    json.replace(at, from.size(), to);
  }
  absl::StatusOr<v1::ModelConfig> k2 = ModelFromHuggingFaceJson(json, "k2");
  ASSERT_TRUE(k2.ok()) << k2.status();
  EXPECT_TRUE(k2->has_mla());
  EXPECT_EQ(k2->mtp_num_layers(), 0u);
  EXPECT_EQ(k2->moe().num_experts(), 384u);
  EXPECT_EQ(k2->moe().layer_pattern(0), 0u);
  EXPECT_EQ(k2->moe().layer_pattern(1), 1u);
  const double mla = 7168.0 * 1536 + 1536.0 * 64 * 192 + 7168.0 * 576 +
                     512.0 * 64 * 256 + 64.0 * 128 * 7168;
  EXPECT_DOUBLE_EQ(mla, 101122048);
  const double layer_norms = 1536 + 512 + 2 * 7168;
  const double expert = 3.0 * 7168 * 2048;
  EXPECT_DOUBLE_EQ(TotalParameters(ShapeOf(*k2)),
                   2.0 * 163840 * 7168 + 61 * (mla + layer_norms) +
                       3.0 * 7168 * 18432 + 60 * (385 * expert + 7168.0 * 384) +
                       7168);
  EXPECT_NEAR(TotalParameters(ShapeOf(*k2)) / 1.026e12, 1, 0.005);
  // Its multimodal successor's config is named, not read.
  EXPECT_NE(ModelFromHuggingFaceJson(R"({"model_type": "kimi_k25"})", "k25")
                .status()
                .message()
                .find("text_config"),
            std::string::npos);
}

// GLM-4.5 (glm4_moe): DeepSeek-V3's experts (3 leading dense layers, one
// ungated shared MLP of the routed width, a 160 x 5120 router) with
// grouped-query attention carrying q, k, v biases and QK-norm, and one
// next-token layer. Parameters by hand from modeling_glm4_moe.py.
TEST(HfConfigTest, Glm45IsReadAsItsModelingFileBuildsIt) {
  absl::StatusOr<v1::ModelConfig> glm =
      ReadHuggingFaceConfig("tests/testdata/hf/glm-4.5.json");
  ASSERT_TRUE(glm.ok()) << glm.status();
  EXPECT_TRUE(glm->qkv_bias());
  EXPECT_TRUE(glm->qk_norm());
  EXPECT_FALSE(glm->has_mla());
  EXPECT_EQ(glm->num_query_groups(), 8u);
  EXPECT_EQ(glm->head_dim(), 128u);
  EXPECT_EQ(glm->mtp_num_layers(), 1u);
  EXPECT_EQ(glm->moe().num_experts(), 160u);
  EXPECT_EQ(glm->moe().router_topk(), 8u);
  EXPECT_EQ(glm->moe().expert_ffn_hidden_size(), 1536u);
  EXPECT_EQ(glm->moe().shared_expert_ffn_hidden_size(), 1536u);
  EXPECT_FALSE(glm->moe().shared_expert_gate());
  EXPECT_EQ(glm->moe().layer_pattern(2), 0u);  // first_k_dense_replace 3
  EXPECT_EQ(glm->moe().layer_pattern(3), 1u);
  EXPECT_EQ(glm->moe().layer_pattern(91), 1u);
  v1::ModelConfig without_mtp = *glm;
  without_mtp.set_mtp_num_layers(0);
  // Attention: Q and O 5120 x 12288 each, K and V 5120 x 1024 each, their
  // q, k, v biases (12288 + 2 x 1024), the Q/K norms (2 x 128) and the
  // two layer norms (2 x 5120); dense MLPs 3 x 5120 x 12288; an MoE MLP
  // 161 experts of 3 x 5120 x 1536 and the router 160 x 5120.
  const double attention = 2.0 * 5120 * 12288 + 2.0 * 5120 * 1024 +
                           (12288 + 2 * 1024) + 2 * 128 + 2 * 5120;
  const double expert = 3.0 * 5120 * 1536;
  EXPECT_DOUBLE_EQ(TotalParameters(ShapeOf(without_mtp)),
                   2.0 * 151552 * 5120 + 3 * (attention + 3.0 * 5120 * 12288) +
                       89 * (attention + 161 * expert + 5120.0 * 160) + 5120);

  // A glm4_moe config without its experts' keys is refused, naming one.
  std::string json = R"({"model_type": "glm4_moe", "hidden_size": 64,
      "num_hidden_layers": 2, "num_attention_heads": 4,
      "intermediate_size": 128, "vocab_size": 1000,
      "num_experts_per_tok": 2, "moe_intermediate_size": 32})";
  absl::StatusOr<v1::ModelConfig> missing = ModelFromHuggingFaceJson(json, "x");
  EXPECT_NE(missing.status().message().find("n_routed_experts"),
            std::string::npos)
      << missing.status();
  // Shared widths that would wrap around 32 bits are refused.
  json.replace(json.find("\"moe_intermediate_size\": 32"),
               std::string("\"moe_intermediate_size\": 32").size(),
               "\"moe_intermediate_size\": 4294967295, "
               "\"n_routed_experts\": 4, \"n_shared_experts\": 2, "
               "\"first_k_dense_replace\": 1");
  EXPECT_NE(ModelFromHuggingFaceJson(json, "x")
                .status()
                .message()
                .find("n_shared_experts x moe_intermediate_size"),
            std::string::npos);
}

// The shared experts and the leading dense layers of DeepSeek-style
// experts, left out of config.json, were read as none: DeepSeek-V3's
// shared expert in every MoE layer and its 3 dense layers went uncounted
// (transformers' DeepseekV3Config defaults). Their defaults depend on the
// code that reads the config (DeepSeek's own configuration_deepseek.py has
// none and 0): refused, naming the key; an explicit null n_shared_experts
// is none. Qwen2-MoE's shared expert left out is Qwen2MoeConfig's 5632
// wide.
TEST(HfConfigTest, AbsentExpertKeysAreTheFamilysOrRefused) {
  const std::string head = R"({"hidden_size": 64, "num_hidden_layers": 4,
      "num_attention_heads": 4, "intermediate_size": 128,
      "vocab_size": 1000, "num_experts_per_tok": 2,
      "moe_intermediate_size": 32, "n_routed_experts": 8,
      "kv_lora_rank": 16, "qk_nope_head_dim": 16, "qk_rope_head_dim": 8,
      "v_head_dim": 16)";
  for (const char* type : {"deepseek_v3", "deepseek_v2", "kimi_k2",
                           "glm4_moe"}) {
    const std::string base =
        head + R"(, "model_type": ")" + type + R"(")";
    absl::StatusOr<v1::ModelConfig> no_shared = ModelFromHuggingFaceJson(
        base + R"(, "first_k_dense_replace": 1})", "x");
    ASSERT_FALSE(no_shared.ok()) << type;
    EXPECT_NE(no_shared.status().message().find("n_shared_experts: required"),
              std::string::npos)
        << no_shared.status();
    absl::StatusOr<v1::ModelConfig> no_dense = ModelFromHuggingFaceJson(
        base + R"(, "n_shared_experts": 1})", "x");
    ASSERT_FALSE(no_dense.ok()) << type;
    EXPECT_NE(
        no_dense.status().message().find("first_k_dense_replace: required"),
        std::string::npos)
        << no_dense.status();
    absl::StatusOr<v1::ModelConfig> given = ModelFromHuggingFaceJson(
        base + R"(, "n_shared_experts": 1, "first_k_dense_replace": 1})",
        "x");
    ASSERT_TRUE(given.ok()) << type << ": " << given.status();
    EXPECT_EQ(given->moe().shared_expert_ffn_hidden_size(), 32u) << type;
    // q_lora_rank left out: the config classes' 1536 (was read as no Q
    // LoRA); null: none.
    if (given->has_mla()) {
      EXPECT_EQ(given->mla().q_lora_rank(), 1536u) << type;
      absl::StatusOr<v1::ModelConfig> no_lora = ModelFromHuggingFaceJson(
          base + R"(, "n_shared_experts": 1, "first_k_dense_replace": 1,
          "q_lora_rank": null})",
          "x");
      ASSERT_TRUE(no_lora.ok()) << no_lora.status();
      EXPECT_EQ(no_lora->mla().q_lora_rank(), 0u) << type;
    }
    absl::StatusOr<v1::ModelConfig> none = ModelFromHuggingFaceJson(
        base + R"(, "n_shared_experts": null, "first_k_dense_replace": 0})",
        "x");
    ASSERT_TRUE(none.ok()) << type << ": " << none.status();
    EXPECT_EQ(none->moe().shared_expert_ffn_hidden_size(), 0u) << type;
  }
  const std::string qwen = R"({"model_type": "qwen2_moe", "hidden_size": 64,
      "num_hidden_layers": 2, "num_attention_heads": 4,
      "intermediate_size": 128, "vocab_size": 1000, "num_experts": 8,
      "num_experts_per_tok": 2, "moe_intermediate_size": 32)";
  absl::StatusOr<v1::ModelConfig> absent =
      ModelFromHuggingFaceJson(qwen + "}", "x");
  ASSERT_TRUE(absent.ok()) << absent.status();
  EXPECT_EQ(absent->moe().shared_expert_ffn_hidden_size(), 5632u);
  EXPECT_TRUE(absent->moe().shared_expert_gate());
  absl::StatusOr<v1::ModelConfig> zero = ModelFromHuggingFaceJson(
      qwen + R"(, "shared_expert_intermediate_size": 0})", "x");
  ASSERT_TRUE(zero.ok()) << zero.status();
  EXPECT_EQ(zero->moe().shared_expert_ffn_hidden_size(), 0u);
}

// gpt-oss-120b (gpt_oss), as transformers' modeling_gpt_oss.py builds it
// and Megatron-Bridge's GPTOSSProvider trains it: 128 routed experts on
// every layer, each with its GEMMs' biases and the clamped quick-GeLU gate
// whatever hidden_act says (Megatron's --quick-geglu with a clamp, its bias
// and activation fused), biases on every linear layer, and learned attention
// sinks (--softmax-type learnable). By hand from the modeling file: the
// embedding and the LM head 201,088 x 2,880 each; a layer's attention
// (Q and O 2,880 x 4,096, K and V 2,880 x 512, their biases) and two
// norms; its 128 experts (2,880 x 5,760 and 2,880 x 2,880 with their
// biases), the router's 2,880 x 128 weight and its bias, and the 64
// heads' sinks. OpenAI's model card: 116.8B.
// YaRN, spelled as rope_scaling's rope_type, its older type, or newer
// transformers' rope_parameters (at the top or for any layer type), is
// read as YaRN positions; other
// scalings (Llama 3's) and no scaling stay RoPE; DeepSeek's MLA takes
// YaRN from Megatron's --rope-type with the fusion on: RoPE.
TEST(HfConfigTest, YarnScalingIsReadAsYarnPositions) {
  const std::string head = R"({"model_type": "llama", "hidden_size": 64,
      "num_hidden_layers": 2, "num_attention_heads": 4,
      "intermediate_size": 128, "vocab_size": 1000)";
  const std::vector<std::pair<std::string, v1::PositionEmbedding>> cases = {
      {"", v1::POSITION_EMBEDDING_ROPE},
      {R"(, "rope_scaling": null)", v1::POSITION_EMBEDDING_ROPE},
      {R"(, "rope_scaling": {"rope_type": "llama3", "factor": 8.0})",
       v1::POSITION_EMBEDDING_ROPE},
      {R"(, "rope_scaling": {"rope_type": "yarn", "factor": 4.0})",
       v1::POSITION_EMBEDDING_YARN},
      {R"(, "rope_scaling": {"type": "yarn", "factor": 4.0})",
       v1::POSITION_EMBEDDING_YARN},
      {R"(, "rope_parameters": {"rope_type": "yarn", "rope_theta": 1e6})",
       v1::POSITION_EMBEDDING_YARN},
      // Per-layer-type parameters (Gemma 3's shape): no top-level type,
      // which the typed parse reads past (read as RoPE, the YaRN tables
      // uncounted). Megatron runs one rotary type for all layers: YaRN in
      // any type is YaRN.
      {R"(, "rope_parameters": {"full_attention": {"rope_type": "yarn"},
          "sliding_attention": {"rope_type": "default"}})",
       v1::POSITION_EMBEDDING_YARN},
      {R"(, "rope_scaling": {"sliding_attention": {"type": "yarn"}})",
       v1::POSITION_EMBEDDING_YARN},
      {R"(, "rope_parameters": {"full_attention": {"rope_type": "linear",
          "factor": 8.0}, "sliding_attention": {"rope_type": "default"}})",
       v1::POSITION_EMBEDDING_ROPE},
  };
  for (const auto& [extra, expected] : cases) {
    absl::StatusOr<v1::ModelConfig> m =
        ModelFromHuggingFaceJson(head + extra + "}", "x");
    ASSERT_TRUE(m.ok()) << extra << ": " << m.status();
    EXPECT_EQ(m->position_embedding(), expected) << extra;
  }
  absl::StatusOr<v1::ModelConfig> deepseek =
      ReadHuggingFaceConfig("tests/testdata/hf/deepseek-v3.json");
  ASSERT_TRUE(deepseek.ok()) << deepseek.status();
  EXPECT_EQ(deepseek->position_embedding(), v1::POSITION_EMBEDDING_ROPE);
}

// Whether some layer attends within a sliding window, as each family's
// modeling applies it (ModelConfig.sliding_window): Mistral 7B's 4096,
// Phi-3's 2047, Gemma 2's and 3's and gpt-oss's alternating layers; not
// Mixtral's (null), nor the Qwen configs' (use_sliding_window false), nor
// a family without one. Absent, the class defaults: Mistral's and gpt-oss's
// on, Mixtral's off; the Qwen switch on windows the layers past
// max_window_layers (28 when absent).
TEST(HfConfigTest, SlidingWindowsAreReadAsEachFamilyAppliesThem) {
  for (const auto& [file, windowed] :
       std::vector<std::pair<std::string, bool>>{
           {"mistral-7b-v0.1.json", true},
           {"phi-3-mini-4k-instruct.json", true},
           {"gemma-2-9b.json", true},
           {"gemma-3-1b-it.json", true},
           {"gpt-oss-20b.json", true},
           {"gpt-oss-120b.json", true},
           {"mixtral-8x7b-v0.1.json", false},
           {"qwen2-7b.json", false},
           {"qwen3-8b.json", false},
           {"qwen1.5-moe-a2.7b.json", false},
           {"deepseek-v3.json", false},
           {"gemma-7b.json", false},
           {"nemotron-4-340b.json", false}}) {
    absl::StatusOr<v1::ModelConfig> m =
        ReadHuggingFaceConfig("tests/testdata/hf/" + file);
    ASSERT_TRUE(m.ok()) << file << ": " << m.status();
    EXPECT_EQ(m->sliding_window(), windowed) << file;
  }
  auto windowed = [](const std::string& json) {
    absl::StatusOr<v1::ModelConfig> m =
        ModelFromHuggingFaceJson(json, "test");
    EXPECT_TRUE(m.ok()) << m.status();
    return m.ok() && m->sliding_window();
  };
  const std::string head = R"({"hidden_size": 1024, "num_hidden_layers": 30,
      "num_attention_heads": 16, "intermediate_size": 4096,
      "vocab_size": 32000, )";
  EXPECT_TRUE(windowed(head + R"("model_type": "mistral"})"));
  EXPECT_FALSE(
      windowed(head + R"("model_type": "mistral", "sliding_window": null})"));
  EXPECT_FALSE(windowed(head + R"("model_type": "phi3"})"));
  EXPECT_FALSE(windowed(head + R"("model_type": "llama",
      "sliding_window": 4096})"));
  EXPECT_FALSE(windowed(head + R"("model_type": "qwen2"})"));
  EXPECT_TRUE(windowed(head + R"("model_type": "qwen2",
      "use_sliding_window": true})"));  // layers 28 and 29
  EXPECT_FALSE(windowed(head + R"("model_type": "qwen2",
      "use_sliding_window": true, "max_window_layers": 30})"));
  EXPECT_FALSE(windowed(head + R"("model_type": "gemma3_text",
      "layer_types": ["full_attention", "full_attention"]})"));
}

TEST(HfConfigTest, GptOssIsReadAsItsModelingFileBuildsIt) {
  absl::StatusOr<v1::ModelConfig> oss =
      ReadHuggingFaceConfig("tests/testdata/hf/gpt-oss-120b.json");
  ASSERT_TRUE(oss.ok()) << oss.status();
  EXPECT_EQ(oss->mlp_activation(), v1::MLP_ACTIVATION_QUICK_GEGLU);
  EXPECT_TRUE(oss->activation_clamp());
  EXPECT_TRUE(oss->linear_bias());
  EXPECT_EQ(oss->softmax_type(), v1::SOFTMAX_TYPE_LEARNABLE);
  EXPECT_EQ(oss->head_dim(), 64u);
  EXPECT_EQ(oss->num_query_groups(), 8u);
  EXPECT_FALSE(oss->tie_word_embeddings());
  EXPECT_EQ(oss->moe().num_experts(), 128u);
  EXPECT_EQ(oss->moe().router_topk(), 4u);
  EXPECT_EQ(oss->moe().expert_ffn_hidden_size(), 2880u);
  EXPECT_EQ(oss->moe().shared_expert_ffn_hidden_size(), 0u);
  EXPECT_FALSE(oss->moe().expert_activation_unfused());  // fused, biased
  // YaRN positions (rope_scaling rope_type "yarn"): Megatron's unfused RoPE.
  EXPECT_EQ(oss->position_embedding(), v1::POSITION_EMBEDDING_YARN);
  const double attention = 2.0 * 2880 * 4096 + 2.0 * 2880 * 512 +
                           (4096 + 2 * 512 + 2880) + 2 * 2880;
  const double expert = 2880.0 * 5760 + 5760 + 2880.0 * 2880 + 2880;
  const double total =
      2.0 * 201088 * 2880 +
      36 * (attention + 128 * expert + 2880.0 * 128 + 128 + 64) + 2880;
  EXPECT_DOUBLE_EQ(total, 116829156672);
  EXPECT_DOUBLE_EQ(TotalParameters(ShapeOf(*oss)), total);
  EXPECT_NEAR(total / 116.8e9, 1, 0.001);
  // gpt-oss-20b: 24 layers of 32 experts, 20.9B (its model card).
  absl::StatusOr<v1::ModelConfig> small =
      ReadHuggingFaceConfig("tests/testdata/hf/gpt-oss-20b.json");
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_NEAR(TotalParameters(ShapeOf(*small)) / 20.91e9, 1, 0.001);
  // Its config's unread keys were reviewed: no note.
  std::vector<std::string> notes;
  ASSERT_TRUE(
      ReadHuggingFaceConfig("tests/testdata/hf/gpt-oss-120b.json", &notes)
          .ok());
  EXPECT_TRUE(KeyNotes(notes).empty()) << notes.front();
  // Without its experts' count it is refused, naming the key.
  const std::string json = R"({"model_type": "gpt_oss", "hidden_size": 64,
      "num_hidden_layers": 2, "num_attention_heads": 4,
      "intermediate_size": 64, "vocab_size": 1000,
      "num_experts_per_tok": 2)";
  EXPECT_NE(ModelFromHuggingFaceJson(json + "}", "x").status().message().find(
                "num_local_experts"),
            std::string::npos);
  // GptOssConfig's defaults where keys are left out: head_dim 64 (not
  // hidden / heads = 16) and 8 key-value heads; null takes hidden / heads
  // and multi-head, as its __post_init__ does; num_experts is its alias
  // for num_local_experts.
  absl::StatusOr<v1::ModelConfig> absent =
      ModelFromHuggingFaceJson(json + R"(, "num_experts": 8})", "x");
  ASSERT_TRUE(absent.ok()) << absent.status();
  EXPECT_EQ(absent->head_dim(), 64u);
  EXPECT_EQ(absent->num_query_groups(), 8u);
  EXPECT_EQ(absent->moe().num_experts(), 8u);
  absl::StatusOr<v1::ModelConfig> null = ModelFromHuggingFaceJson(
      json + R"(, "num_local_experts": 8, "head_dim": null,
      "num_key_value_heads": null})",
      "x");
  ASSERT_TRUE(null.ok()) << null.status();
  EXPECT_EQ(null->head_dim(), 0u);  // hidden / heads
  EXPECT_EQ(null->num_query_groups(), 4u);
  // Another family keeps LlamaConfig's: multi-head, hidden / heads.
  absl::StatusOr<v1::ModelConfig> llama = ModelFromHuggingFaceJson(
      R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
      "num_attention_heads": 4, "intermediate_size": 64,
      "vocab_size": 1000})",
      "x");
  ASSERT_TRUE(llama.ok()) << llama.status();
  EXPECT_EQ(llama->head_dim(), 0u);
  EXPECT_EQ(llama->num_query_groups(), 4u);
}

// A model's directory, as transformers' from_pretrained takes it (and as
// users pass it), is read as its config.json, with or without a trailing
// slash; one without a config.json is named with the file it lacks.
TEST(HfConfigTest, AModelDirectoryIsReadAsItsConfig) {
  const std::string dir = ::testing::TempDir() + "/Qwen3-8B";
  ASSERT_TRUE(mkdir(dir.c_str(), 0700) == 0 || errno == EEXIST);
  ConfigFile("Qwen3-8B/config.json", Published("qwen3-8b.json"));
  const absl::StatusOr<v1::ModelConfig> file =
      ReadHuggingFaceConfig("tests/testdata/hf/qwen3-8b.json");
  ASSERT_TRUE(file.ok()) << file.status();
  for (const std::string& given : {dir, dir + "/", dir + "//"}) {
    const absl::StatusOr<v1::ModelConfig> m = ReadHuggingFaceConfig(given);
    ASSERT_TRUE(m.ok()) << given << ": " << m.status();
    EXPECT_EQ(m->name(), given);
    v1::ModelConfig named = *m;
    named.set_name(file->name());
    EXPECT_EQ(named.SerializeAsString(), file->SerializeAsString()) << given;
  }
  const std::string empty = ::testing::TempDir() + "/no-config";
  ASSERT_TRUE(mkdir(empty.c_str(), 0700) == 0 || errno == EEXIST);
  const absl::StatusOr<v1::ModelConfig> none = ReadHuggingFaceConfig(empty);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find(empty + "/config.json: cannot open"),
            std::string::npos)
      << none.status();
}

TEST(HfConfigTest, MissingFileIsNamed) {
  absl::StatusOr<v1::ModelConfig> m =
      ReadHuggingFaceConfig("/nonexistent/config.json");
  EXPECT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("/nonexistent/config.json"),
            std::string::npos);
}

}  // namespace
}  // namespace memgate
