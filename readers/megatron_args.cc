#include "readers/megatron_args.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "estimator/attention_backend.h"
#include "estimator/catalog.h"
#include "estimator/megatron_names.h"
#include "estimator/memory_model.h"
#include "estimator/pipeline_layout.h"
#include "estimator/validation.h"
#include "readers/launch_arguments.h"
#include "readers/layer_pattern.h"
#include "readers/megatron_argument_names.h"
#include "readers/megatron_arguments.h"
#include "readers/megatron_low_precision_args.h"
#include "readers/megatron_moe_args.h"
#include "readers/megatron_optimizer_args.h"
#include "readers/shell_line.h"
#include "readers/te_attention_environment.h"
#include "readers/te_backward_override.h"

namespace memgate {
namespace {

// Arguments that make the launch a Megatron one.
const std::set<std::string>& MegatronMarkers() {
  static const auto* names = new std::set<std::string>{
      "num-layers", "hidden-size", "num-attention-heads", "seq-length",
      "micro-batch-size", "tensor-model-parallel-size",
      "pipeline-model-parallel-size", "context-parallel-size"};
  return *names;
}

absl::Status FillModel(const Arguments& args, const v1::ModelConfig* fill,
                       MegatronLaunch& launch) {
  v1::ModelConfig& m = *launch.job.mutable_model();
  if (fill != nullptr) m = *fill;
  const bool launch_defines_model =
      args.Has("num-layers") || args.Has("hidden-size");
  if (m.name().empty()) m.set_name("megatron-launch");

  MEMGATE_ASSIGN_OR_RETURN(layers, args.Number("num-layers", m.num_layers()));
  MEMGATE_ASSIGN_OR_RETURN(hidden, args.Number("hidden-size", m.hidden_size()));
  MEMGATE_ASSIGN_OR_RETURN(
      heads, args.Number("num-attention-heads", m.num_attention_heads()));
  if (layers == 0) return Bad("num-layers", "missing (or give --model=NAME)");
  if (hidden == 0) return Bad("hidden-size", "missing (or give --model=NAME)");
  if (heads == 0) {
    return Bad("num-attention-heads", "missing (or give --model=NAME)");
  }
  m.set_num_layers(layers);
  m.set_hidden_size(hidden);
  m.set_num_attention_heads(heads);

  uint32_t ffn = m.ffn_hidden_size();
  if (args.Has("ffn-hidden-size")) {
    MEMGATE_ASSIGN_OR_RETURN(given, args.Number("ffn-hidden-size", 0));
    ffn = given;
  } else if (launch_defines_model || ffn == 0) {
    // Megatron's defaults (arguments.py): 4h, and for SwiGLU 2/3 of that
    // rounded down to a multiple of 64.
    ffn = args.Has("swiglu")
              ? static_cast<uint32_t>((4ull * hidden * 2 / 3) / 64 * 64)
              : static_cast<uint32_t>(std::min<uint64_t>(4ull * hidden,
                                                         UINT32_MAX));
    launch.notes.push_back(absl::StrCat(
        "--ffn-hidden-size not given: Megatron's default ", ffn));
  }
  m.set_ffn_hidden_size(ffn);
  if (args.Has("kv-channels")) {
    MEMGATE_ASSIGN_OR_RETURN(head_dim, args.Number("kv-channels", 0));
    m.set_head_dim(head_dim);
  } else if (launch_defines_model) {
    m.set_head_dim(0);  // Megatron's h / a
  }  // else the filled model's (Gemma's 256-wide heads over h = 3072)

  if (args.Has("group-query-attention")) {
    MEMGATE_ASSIGN_OR_RETURN(groups,
                             args.Number("num-query-groups",
                                         m.num_query_groups()));
    if (groups == 0) {
      return Bad("num-query-groups", "missing with --group-query-attention");
    }
    m.set_num_query_groups(groups);
  } else if (args.Has("num-query-groups")) {
    return Bad("num-query-groups",
               "given without --group-query-attention, which Megatron then "
               "ignores (multi-head attention)");
  } else if (launch_defines_model || m.num_query_groups() == 0) {
    m.set_num_query_groups(heads);  // Megatron: multi-head attention
  }

  if (launch_defines_model ||
      args.Has("untie-embeddings-and-output-weights")) {
    // Megatron ties the embedding and the output layer unless told not to;
    // told, it unties them whatever a --model-config says.
    m.set_tie_word_embeddings(
        !args.Has("untie-embeddings-and-output-weights"));
  }
  return absl::OkStatus();
}

// Whether any of the `layers` layers attends within a sliding window:
// --window-size on the layers --window-attn-skip-freq leaves windowed
// (transformer/utils.py is_layer_window_attention: an integer N windows
// layer i unless i % N == 0; a list, where it says 1), and a window that
// TransformerEngine applies (utils.py "Filter: Sliding window attention":
// (-1, -1) and (-1, 0) are plain attention). arguments.py tuple_type reads
// "L,R" or "(L,R)"; TE takes two numbers.
absl::StatusOr<bool> HasWindowedLayers(const Arguments& args,
                                       uint32_t layers) {
  if (!args.Has("window-size")) return false;
  const std::string text = Unquoted(args.Text("window-size"));
  const std::vector<std::string> sides =
      absl::StrSplit(absl::StripAsciiWhitespace(text), ',');
  int64_t left = 0;
  int64_t right = 0;
  if (sides.size() != 2 ||
      !absl::SimpleAtoi(absl::StripPrefix(sides[0], "("), &left) ||
      !absl::SimpleAtoi(absl::StripSuffix(sides[1], ")"), &right) ||
      left < -1 || right < -1) {
    return Bad("window-size",
               absl::StrCat("'", text.substr(0, 32), "' is not two window "
                            "sides L,R (each -1 or more)"));
  }
  if (left == -1 && (right == -1 || right == 0)) return false;
  if (!args.Has("window-attn-skip-freq")) return true;
  const std::string freq = Unquoted(args.Text("window-attn-skip-freq"));
  if (freq.find('[') == std::string::npos) {
    MEMGATE_ASSIGN_OR_RETURN(n, args.Number("window-attn-skip-freq", 1));
    if (n == 0) return Bad("window-attn-skip-freq", "must be at least 1");
    return n > 1 && layers > 0;  // layer 1 is windowed unless n is 1
  }
  MEMGATE_ASSIGN_OR_RETURN(
      pattern, ParseLayerPattern(freq, layers, "window-attn-skip-freq",
                                 /*longer_ok=*/true));
  return std::find(pattern.begin(), pattern.end(), 1u) != pattern.end();
}

// The architecture switches, always as Megatron builds the model from this
// launch (a catalog model only fills dimensions): where the launch says
// nothing, Megatron's defaults (arguments.py), each with a note.
absl::Status FillArchitecture(const Arguments& args, MegatronLaunch& launch) {
  v1::ModelConfig& m = *launch.job.mutable_model();
  auto note = [&](absl::string_view text) {
    launch.notes.push_back(std::string(text));
  };
  const bool te_activation = args.Has("use-te-activation-func");
  if (args.Has("squared-relu")) {
    // arguments.py (argument_utils.py from core 0.18) checks it first:
    // relu(x)^2 on an ungated MLP, asserting no --swiglu.
    if (args.Has("swiglu")) {
      return Bad("squared-relu", "with --swiglu: Megatron asserts not "
                                 "args.swiglu");
    }
    // Biases on, --bias-gelu-fusion stays on (arguments.py turns it off
    // only without biases), and mlp.py raises "Only support fusion of
    // gelu and swiglu": the job never trains.
    if (!args.Has("disable-bias-linear") && !args.Has("no-bias-gelu-fusion")) {
      return Bad("squared-relu",
                 "with biases on (no --disable-bias-linear) needs "
                 "--no-bias-gelu-fusion: Megatron's MLP raises 'Only support "
                 "fusion of gelu and swiglu'");
    }
    m.set_mlp_activation(v1::MLP_ACTIVATION_SQUARED_RELU);
  } else if (args.Has("swiglu")) {
    m.set_mlp_activation(v1::MLP_ACTIVATION_SWIGLU);  // gated: 3 matrices
    // Megatron's fused bias-SwiGLU keeps its input; unfused, glu() keeps
    // silu(x) and x_linear + offset too, and experts the probability
    // product (mlp.py, moe/experts.py). TransformerEngine's SwiGLU op
    // replaces the fused kernel, which must then be off
    // (transformer_config.py raises otherwise), and keeps its input as
    // the kernel does (moe_terms.cc [TA]).
    if (te_activation && !args.Has("no-bias-swiglu-fusion")) {
      return Bad("use-te-activation-func",
                 "with --swiglu needs --no-bias-swiglu-fusion: Megatron "
                 "raises 'bias_activation_fusion and use_te_activation_func "
                 "cannot be both true'");
    }
    // The local spec builds no TransformerEngine activation module, so
    // mlp.py applies config.activation_func (silu) to both halves of FC1's
    // output and linear_fc2 fails on the doubled width: the job never
    // trains.
    if (te_activation && args.Has("transformer-impl") &&
        args.Text("transformer-impl") == "local") {
      return Bad("use-te-activation-func",
                 "with --swiglu and --transformer-impl local: the local "
                 "spec has no TransformerEngine activation module, so "
                 "Megatron's mlp.py applies silu to both halves and "
                 "linear_fc2 fails on the shape");
    }
    if (args.Has("no-bias-swiglu-fusion") && !te_activation) {
      // TransformerEngine's op fuser runs the dense MLP as its SwiGLU op
      // but shared experts through mlp.py's glu(): two counts memgate
      // does not keep apart.
      if (args.Has("use-transformer-engine-op-fuser") &&
          args.Has("moe-shared-expert-intermediate-size")) {
        return Bad("no-bias-swiglu-fusion",
                   "with --use-transformer-engine-op-fuser and shared "
                   "experts: the dense MLP runs TransformerEngine's SwiGLU "
                   "op, the shared experts Megatron's unfused glu(), which "
                   "memgate does not count apart: not modelled");
      }
    }
    if (RunsUnfusedSwiglu(args)) {
      // mlp.py's glu() (moe_terms.cc DenseMlpBytes [QG]).
      launch.job.mutable_training()->set_glu_linear_copy(true);
      note("--no-bias-swiglu-fusion: Megatron's unfused SwiGLU keeps FC1's "
           "output, silu's output, x_linear + glu_linear_offset (a tensor of "
           "its own from Megatron-Core 0.15; older releases keep 2 B less, "
           "an upper bound for them) and FC2's input: 10 B a unit of FFN "
           "width");
    } else {
      launch.job.mutable_training()->set_fused_swiglu(true);
    }
    if (!RunsUnfusedSwiglu(args)) note(te_activation
             ? "--use-te-activation-func: TransformerEngine's SwiGLU op, "
               "which keeps only its input as Megatron's fused kernel does"
         : args.Has("use-transformer-engine-op-fuser")
             ? "--use-transformer-engine-op-fuser: the MLP runs "
               "TransformerEngine's SwiGLU op, which keeps only its input "
               "as Megatron's fused kernel does"
             : "--swiglu: Megatron's fused SwiGLU kernel (its default; "
               "--no-bias-swiglu-fusion turns it off)");
  } else if (args.Has("quick-geglu")) {
    m.set_mlp_activation(v1::MLP_ACTIVATION_QUICK_GEGLU);
  } else {
    m.set_mlp_activation(v1::MLP_ACTIVATION_GELU);
    note("no --swiglu: Megatron's GeLU MLP (2 matrices, 4h_ffn/h activations)");
    // TransformerEngine's GELU op keeps its input, as the fused bias-GeLU
    // does (4h_ffn/h either way), but Megatron raises with the fusion on,
    // which it is unless turned off or without biases (arguments.py).
    if (te_activation && !args.Has("no-bias-gelu-fusion") &&
        !args.Has("disable-bias-linear")) {
      return Bad("use-te-activation-func",
                 "with GeLU and biases needs --no-bias-gelu-fusion: Megatron "
                 "raises 'bias_activation_fusion and use_te_activation_func "
                 "cannot be both true'");
    }
  }
  // Clamped halves in an unfused glu() (moe_terms.cc [QG]).
  m.set_activation_clamp(args.Has("activation-func-clamp-value"));
  const v1::MlpActivation act = m.mlp_activation();
  if (te_activation && (act == v1::MLP_ACTIVATION_SQUARED_RELU ||
                        act == v1::MLP_ACTIVATION_QUICK_GEGLU)) {
    return Bad("use-te-activation-func",
               absl::StrCat("with ", act == v1::MLP_ACTIVATION_SQUARED_RELU
                                         ? "--squared-relu"
                                         : "--quick-geglu",
                            ": TransformerEngine's activation ops cover gelu, "
                            "silu and relu only (Megatron raises)"));
  }
  const std::string norm = args.Has("normalization")
                               ? args.Text("normalization")
                               : std::string("LayerNorm");
  if (!args.Has("normalization")) {
    note("no --normalization: Megatron's LayerNorm (weight and bias)");
  }
  if (norm == "LayerNorm") {
    m.set_normalization(v1::NORMALIZATION_LAYERNORM);
  } else if (norm == "RMSNorm") {
    m.set_normalization(v1::NORMALIZATION_RMSNORM);
  } else {
    return Bad("normalization", absl::StrCat(Quoted(norm),
                                             " is not modelled "
                                             "(LayerNorm or RMSNorm)"));
  }
  m.set_linear_bias(!args.Has("disable-bias-linear"));
  if (m.linear_bias()) {
    note("no --disable-bias-linear: Megatron adds a bias to every linear "
         "layer");
  }
  m.set_qkv_bias(args.Has("add-qkv-bias"));
  // --qk-l2-norm is Megatron's own L2Norm on Q and K, which keeps more
  // than the learned norms (memory_model.cc [QN]); its spec takes L2Norm
  // where both are given (gpt_layer_specs.py).
  m.set_qk_l2_norm(args.Has("qk-l2-norm"));
  m.set_qk_norm(args.Has("qk-layernorm") && !args.Has("qk-l2-norm"));
  MEMGATE_ASSIGN_OR_RETURN(windowed, HasWindowedLayers(args, m.num_layers()));
  m.set_sliding_window(windowed);
  std::string position = args.Text("position-embedding-type");
  if (position.empty()) {
    if (args.Has("use-rotary-position-embeddings")) {
      position = "rope";
    } else {
      position = "learned_absolute";
      note("no --position-embedding-type: Megatron's learned absolute "
           "position embedding (max-position-embeddings x h on the first "
           "stage)");
    }
  }
  if (args.Has("no-position-embedding") && position != "rope") {
    return Bad("no-position-embedding",
               "is refused by Megatron unless --position-embedding-type is "
               "rope (use --position-embedding-type none)");
  }
  if (position == "learned_absolute") {
    // With learned positions the embedding scatters its whole (s, b, h)
    // output to the sequence-parallel shards as a view (language_model_
    // embedding.py: reduce_scatter_embeddings only without them), which
    // Megatron clones so the whole one is freed; without the clone the
    // first layer's saved input keeps t shards for every micro-batch in
    // flight on the first stage. Not modelled: refused wherever a plan's
    // candidates could run it (SP at TP > 1). With RoPE or no positions
    // the vocabulary-parallel embedding reduce-scatters a shard of its own
    // and the switch changes nothing.
    for (const char* no_clone : {"no-clone-scatter-output-in-embedding",
                                 "disable-clone-scatter-output-in-embedding"}) {
      if (args.Has(no_clone)) {
        return Bad(no_clone,
                   "with learned absolute positions the sequence-parallel "
                   "scatter's view keeps the whole s x b x h embedding "
                   "output for the first layer's backward: not modelled "
                   "(Megatron clones it by default: drop the switch)");
      }
    }
    m.set_position_embedding(v1::POSITION_EMBEDDING_LEARNED_ABSOLUTE);
    MEMGATE_ASSIGN_OR_RETURN(rows, args.Number("max-position-embeddings", 0));
    m.set_max_position_embeddings(rows);
  } else if (position == "rope") {
    // Rotary positions have no parameters. Megatron fuses them through
    // TransformerEngine unless told not to; unfused, each layer keeps its
    // cos and sin tables (memory_model.cc [RU]).
    m.set_position_embedding(v1::POSITION_EMBEDDING_ROPE);
    if (args.Has("no-rope-fusion")) {
      launch.job.mutable_training()->set_rope_fusion_disabled(true);
      note("--no-rope-fusion: Megatron's unfused RoPE keeps cos and sin for "
           "Q and for K in every layer");
    }
  } else if (position == "yarn") {
    // arguments.py turns the RoPE fusion off for any type but rope.
    m.set_position_embedding(v1::POSITION_EMBEDDING_YARN);
  } else if (position == "mrope") {
    m.set_position_embedding(v1::POSITION_EMBEDDING_MROPE);
  } else if (position == "none") {
    m.set_position_embedding(v1::POSITION_EMBEDDING_NONE);
  } else {
    return Bad("position-embedding-type",
               absl::StrCat(Quoted(position),
                            " is not modelled "
                            "(learned_absolute, rope, yarn, mrope or none)"));
  }
  return absl::OkStatus();
}

// The vocabulary of a tokenizer memgate knows by name (Llama 3's 128,256
// entries, reserved special tokens included; Llama 2's 32,000), or 0.
uint32_t NamedTokenizerVocabulary(const Arguments& args) {
  const std::string type = args.Text("tokenizer-type");
  const std::string model = absl::AsciiStrToLower(args.Text("tokenizer-model"));
  if (type == "Llama3Tokenizer" || absl::StrContains(model, "llama-3") ||
      absl::StrContains(model, "llama3")) {
    return 128256;
  }
  if (type == "Llama2Tokenizer" || absl::StrContains(model, "llama-2")) {
    return 32000;
  }
  return 0;
}

// Whether Megatron sizes the launch's tokenizer by --vocab-size. Only
// NullTokenizer, NullMultimodalTokenizer and TikTokenizer are given it
// (core/tokenizers/utils/build_tokenizer.py, and the legacy
// training/tokenizer/tokenizer.py before it); the others read their
// vocabulary from their files (HuggingFaceTokenizer: len(tokenizer)) and
// ignore --vocab-size, so a launch copied from Megatron's examples
// (examples/llama/train_llama3_8b_h100_fp8.sh gives --vocab-size 128256
// beside any --tokenizer-model) may state a size its tokenizer does not
// have. A launch without --tokenizer-type has no tokenizer Megatron can
// build; its --vocab-size is taken as given.
bool TokenizerTakesVocabSize(absl::string_view type) {
  return type.empty() || type == "NullTokenizer" ||
         type == "NullMultimodalTokenizer" || type == "TikTokenizer";
}

// A path or hub name the user gave (a script, a tokenizer) is quoted up
// to a line's worth.
constexpr size_t kQuotedPathBytes = 120;
std::string QuotedTokenizer(const Arguments& args) {
  return Clipped(args.Text("tokenizer-model"), kQuotedPathBytes);
}

// The model family a name says (a tokenizer's hub id or path, lowercased,
// or a catalog model's name), or "" when it names none memgate knows: a
// tokenizer of one family does not have another's vocabulary. Linear in
// the name for each family (each find resumes past the last).
absl::string_view FamilyNamed(absl::string_view name) {
  // Longer names first where one holds another (codellama, llama).
  static constexpr std::pair<absl::string_view, absl::string_view>
      kFamilies[] = {
          {"codellama", "codellama"}, {"llama", "llama"},
          {"mixtral", "mistral"},     {"mistral", "mistral"},
          {"qwen", "qwen"},           {"deepseek", "deepseek"},
          {"nemotron", "nemotron"},   {"gemma", "gemma"},
          {"gpt2", "gpt2"},           {"gpt-2", "gpt2"},
          {"gpt-neox", "neox"},       {"pythia", "neox"},
          {"falcon", "falcon"},       {"olmo", "olmo"},
          {"phi-", "phi"},            {"chatglm", "glm"},
          {"internlm", "internlm"},   {"baichuan", "baichuan"},
          {"granite", "granite"},     {"starcoder", "starcoder"},
          {"bloom", "bloom"},         {"bert", "bert"}};
  for (const auto& [word, family] : kFamilies) {
    // At the start of a word of the name ("google-bert/bert-base", not
    // "/home/robert/tokenizer").
    for (size_t at = name.find(word); at != absl::string_view::npos;
         at = name.find(word, at + 1)) {
      if (at == 0 || !absl::ascii_isalpha(static_cast<unsigned char>(
                         name[at - 1]))) {
        return family;
      }
    }
  }
  return "";
}

// Megatron takes the vocabulary from the tokenizer when --vocab-size is
// absent. The tokenizers Llama launches name, and failing that a catalog
// model with exactly these dimensions (and experts), say what it is,
// unless the tokenizer named is another family's (Llama 3's dimensions
// trained with Qwen's tokenizer have Qwen's vocabulary); 0 when nothing
// does.
uint32_t VocabularyFromTokenizer(const Arguments& args,
                                 const v1::ModelConfig& m,
                                 std::vector<std::string>& notes) {
  if (const uint32_t vocab = NamedTokenizerVocabulary(args); vocab != 0) {
    notes.push_back(absl::StrCat("vocabulary ", vocab,
                                 " from the tokenizer (no --vocab-size)"));
    return vocab;
  }
  const absl::string_view tokenizer_family =
      FamilyNamed(absl::AsciiStrToLower(args.Text("tokenizer-model")));
  // The experts are read later (FillExpertsFromLaunch, which refuses a
  // malformed count): from the launch.
  const absl::StatusOr<uint32_t> given_experts = args.Number("num-experts", 0);
  const uint32_t experts = given_experts.ok() ? *given_experts : 0;
  for (const std::string& name : ModelNames()) {
    const v1::ModelConfig* known = LookupModel(name);
    if (known->num_layers() == m.num_layers() &&
        known->hidden_size() == m.hidden_size() &&
        known->ffn_hidden_size() == m.ffn_hidden_size() &&
        known->num_attention_heads() == m.num_attention_heads() &&
        known->num_query_groups() == m.num_query_groups() &&
        known->moe().num_experts() == experts) {
      if (!tokenizer_family.empty() &&
          tokenizer_family != FamilyNamed(name)) {
        return 0;
      }
      notes.push_back(absl::StrCat("vocabulary ", known->vocab_size(),
                                   " of ", name,
                                   ", whose dimensions these are (no "
                                   "--vocab-size)"));
      return known->vocab_size();
    }
  }
  return 0;
}

// The vocabulary of a launch that gives --vocab-size: the size itself
// where its tokenizer is built with it; else the tokenizer's, where
// memgate knows it by name; else --vocab-size, said to stand for the
// tokenizer's. The legacy NullTokenizer (--legacy-tokenizer) adds its
// end-of-document token after the given size (training/tokenizer/
// tokenizer.py _NullTokenizer: vocab_size + 1).
uint32_t GivenVocabulary(const Arguments& args, uint32_t given,
                         std::vector<std::string>& notes) {
  const std::string type = args.Text("tokenizer-type");
  if (type == "NullTokenizer" && args.Has("legacy-tokenizer") &&
      given < UINT32_MAX) {
    notes.push_back(absl::StrCat(
        "vocabulary ", given + 1, ": the legacy NullTokenizer adds its "
        "end-of-document token to --vocab-size ", given));
    return given + 1;
  }
  if (TokenizerTakesVocabSize(type)) return given;
  const uint32_t named = NamedTokenizerVocabulary(args);
  if (named != 0 && named != given) {
    notes.push_back(absl::StrCat(
        "vocabulary ", named, " from the tokenizer: Megatron's ", type,
        " takes its size from the tokenizer, not from --vocab-size ", given));
    return named;
  }
  if (named == 0) {
    notes.push_back(absl::StrCat(
        "vocabulary ", given, " as --vocab-size says: Megatron's ", type,
        " takes its size from the tokenizer (",
        args.Has("tokenizer-model") ? QuotedTokenizer(args)
                                    : "no --tokenizer-model",
        "), which memgate cannot read; a larger one is not counted"));
  }
  return given;
}

// Megatron pads the vocabulary to a multiple of
// --make-vocab-size-divisible-by (default 128) times TP, unless
// --padded-vocab-size gives the model's vocabulary outright
// (core/tokenizers/utils/build_tokenizer.py _set_padded_vocab_size pads
// only when it is absent).
absl::Status PadVocabulary(const Arguments& args, MegatronLaunch& launch) {
  v1::ModelConfig& m = *launch.job.mutable_model();
  MEMGATE_ASSIGN_OR_RETURN(outright, args.Number("padded-vocab-size", 0));
  if (args.Has("padded-vocab-size")) {
    if (outright == 0) return Bad("padded-vocab-size", "must be at least 1");
    // The vocabulary-parallel embedding and output layer split it over TP
    // (tensor_parallel/layers.py: VocabUtility and ColumnParallelLinear
    // divide() assert it); Megatron's own padding always is.
    const uint32_t tp = std::max(1u, launch.job.parallel().tensor_parallel());
    if (outright % tp != 0) {
      return Bad("padded-vocab-size",
                 absl::StrCat("must be a multiple of the tensor-parallel size ",
                              tp, " (Megatron splits the vocabulary over TP; "
                              "got ", outright, ")"));
    }
    m.set_vocab_size(outright);
    m.set_vocab_size_divisible_by(0);
    launch.notes.push_back(absl::StrCat("vocabulary ", outright,
                                        " as given (--padded-vocab-size)"));
    return absl::OkStatus();
  }
  MEMGATE_ASSIGN_OR_RETURN(given, args.Number("vocab-size", m.vocab_size()));
  const uint32_t vocab =
      given == 0 ? VocabularyFromTokenizer(args, m, launch.notes)
      : args.Has("vocab-size") ? GivenVocabulary(args, given, launch.notes)
                               : given;
  if (vocab == 0) {
    return Bad("vocab-size",
               absl::StrCat("missing: Megatron takes it from the tokenizer",
                            args.Has("tokenizer-model")
                                ? absl::StrCat(" (", QuotedTokenizer(args),
                                               "), which memgate cannot read")
                                : std::string(),
                            "; give --vocab-size in the launch or "
                            "--model=NAME"));
  }
  MEMGATE_ASSIGN_OR_RETURN(divisible,
                           args.Number("make-vocab-size-divisible-by", 128));
  if (divisible == 0 || divisible > kMaxVocabSizeDivisibleBy) {
    return Bad("make-vocab-size-divisible-by",
               absl::StrCat("must be 1 to ", kMaxVocabSizeDivisibleBy));
  }
  const uint64_t multiple =
      static_cast<uint64_t>(divisible) *
      launch.job.parallel().tensor_parallel();
  const uint64_t padded = (vocab + multiple - 1) / multiple * multiple;
  if (padded > UINT32_MAX) return Bad("vocab-size", "too large once padded");
  if (padded != vocab) {
    launch.notes.push_back(absl::StrCat("vocabulary padded ", vocab, " -> ",
                                        padded, " (", divisible, " x TP ",
                                        launch.job.parallel().tensor_parallel(),
                                        ")"));
  }
  // The job keeps the tokenizer's size and the multiple: a plan from this
  // launch pads again at each candidate's TP (memory_model.h VocabRows).
  m.set_vocab_size(vocab);
  m.set_vocab_size_divisible_by(divisible);
  return absl::OkStatus();
}

// --pipeline-model-parallel-layout: the layers of every (virtual) stage.
// Megatron allows none of the other stage-split arguments beside it.
absl::Status FillLayout(const Arguments& args, MegatronLaunch& launch) {
  for (const char* other :
       {"num-layers-per-virtual-pipeline-stage",
        "num-virtual-stages-per-pipeline-rank",
        "decoder-first-pipeline-num-layers",
        "decoder-last-pipeline-num-layers",
        "account-for-embedding-in-pipeline-split",
        "account-for-loss-in-pipeline-split"}) {
    if (args.Has(other)) {
      return Bad(other, "cannot be given with "
                        "--pipeline-model-parallel-layout");
    }
  }
  std::string text = args.Text("pipeline-model-parallel-layout");
  // A batch script's quotes survive the hook's whitespace split.
  if (text.size() >= 2 && (text.front() == '"' || text.front() == '\'') &&
      text.back() == text.front()) {
    text = text.substr(1, text.size() - 2);
  }
  v1::ParallelConfig& p = *launch.job.mutable_parallel();
  // The MTP layers are read with the experts, after the layout: read
  // their count here as FillMla does (the launch's, 0 when absent, as
  // Megatron counts the layout's 'm's against it).
  MEMGATE_ASSIGN_OR_RETURN(mtp, args.Number("mtp-num-layers", 0));
  absl::StatusOr<PipelineLayout> layout = ParsePipelineLayout(
      text, p.pipeline_parallel(), launch.job.model().num_layers(), mtp);
  if (!layout.ok()) return layout.status();
  ApplyPipelineLayout(*layout, p);
  return absl::OkStatus();
}

// Writes the stages' layer counts into the job: one entry a rank, or under
// interleaving (v > 1) one a virtual stage, entry j * p + i being chunk j of
// rank i (estimate.cc), each rank's layers split evenly over its chunks.
// Megatron (transformer_config.py, "Uneven PP") requires every rank's count
// to be a multiple of v; `flag` names the argument that set the counts.
absl::Status SetStageLayers(const std::vector<uint32_t>& per_rank,
                            const char* flag, MegatronLaunch& launch) {
  v1::ParallelConfig& p = *launch.job.mutable_parallel();
  const uint32_t v = std::max(1u, p.virtual_pipeline_stages());
  for (uint32_t n : per_rank) {
    if (n % v != 0) {
      return Bad(flag, absl::StrCat("a stage of ", n, " layers does not "
                                    "split over ", v, " virtual stages "
                                    "(Megatron needs a multiple)"));
    }
  }
  for (uint32_t j = 0; j < v; ++j) {
    for (uint32_t n : per_rank) p.add_layers_per_stage(n / v);
  }
  return absl::OkStatus();
}

// --account-for-embedding/loss-in-pipeline-split (transformer_block.py,
// transformer_config.py): the embedding and/or the loss count as one layer
// each in the split. With interleaving the accounted units split evenly
// over p x v virtual stages, and the embedding's and the loss's places are
// in rank 0's first chunk and the last rank's last chunk. One unit a chunk
// leaves those two chunks without transformer layers, which Megatron builds
// (an empty TransformerBlock; NVIDIA's Megatron-Bridge runs Llama-3.1-405B
// as TP 4, PP 16, 8 virtual stages: 128 units over 128 chunks); the
// estimate holds such a chunk as it holds the layout "E|...|L".
absl::Status FillAccountedSplit(const Arguments& args, bool account_embedding,
                                bool account_loss, MegatronLaunch& launch) {
  const char* flag = account_embedding
                         ? "account-for-embedding-in-pipeline-split"
                         : "account-for-loss-in-pipeline-split";
  if (args.Has("decoder-first-pipeline-num-layers") ||
      args.Has("decoder-last-pipeline-num-layers")) {
    return Bad(flag, "cannot be given with --decoder-first/last-pipeline-"
                     "num-layers (Megatron refuses both)");
  }
  v1::ParallelConfig& p = *launch.job.mutable_parallel();
  const uint32_t pp = p.pipeline_parallel();
  const uint64_t v = std::max(1u, p.virtual_pipeline_stages());
  const uint64_t units = uint64_t{launch.job.model().num_layers()} +
                         (account_embedding ? 1 : 0) + (account_loss ? 1 : 0);
  if (pp < 2 || units % (pp * v) != 0) {
    return Bad(flag, absl::StrCat("needs --num-layers plus the accounted "
                                  "layers (", units, ") to split evenly "
                                  "over 2 or more stages",
                                  v > 1 ? " x virtual stages" : "", " (",
                                  pp * v, ")"));
  }
  const uint32_t each = static_cast<uint32_t>(units / (pp * v));
  for (uint64_t k = 0; k < pp * v; ++k) {
    uint32_t n = each;
    if (k == 0 && account_embedding) --n;
    if (k + 1 == pp * v && account_loss) --n;
    p.add_layers_per_stage(n);
  }
  return absl::OkStatus();
}

// --decoder-first/last-pipeline-num-layers: the stages without an explicit
// count share the remaining layers evenly.
absl::Status FillFirstLastSplit(const Arguments& args,
                                MegatronLaunch& launch) {
  const uint32_t pp = launch.job.parallel().pipeline_parallel();
  const uint32_t layers = launch.job.model().num_layers();
  MEMGATE_ASSIGN_OR_RETURN(first,
                           args.Number("decoder-first-pipeline-num-layers", 0));
  MEMGATE_ASSIGN_OR_RETURN(last,
                           args.Number("decoder-last-pipeline-num-layers", 0));
  if (pp < 2) {
    return Bad("decoder-first-pipeline-num-layers",
               "needs --pipeline-model-parallel-size of 2 or more");
  }
  const uint32_t explicit_stages = (first ? 1 : 0) + (last ? 1 : 0);
  const uint64_t assigned = static_cast<uint64_t>(first) + last;
  const uint32_t others = pp - explicit_stages;
  if (assigned > layers || (others == 0 && assigned != layers) ||
      (others > 0 && (layers - assigned) % others != 0)) {
    return Bad("decoder-first-pipeline-num-layers",
               absl::StrCat("the remaining ",
                            layers - std::min<uint64_t>(assigned, layers),
                            " layers do not split evenly over ", others,
                            " other stages"));
  }
  const uint32_t each = others ? (layers - assigned) / others : 0;
  std::vector<uint32_t> per_rank(pp, each);
  if (first) per_rank.front() = first;
  if (last) per_rank.back() = last;
  return SetStageLayers(per_rank,
                        first ? "decoder-first-pipeline-num-layers"
                              : "decoder-last-pipeline-num-layers",
                        launch);
}

// [BP] DDP's buckets, whose ends the distributed optimizer pads
// (memory_model.cc [BP]): --overlap-grad-reduce cuts the first rank's
// first chunk into buckets of --ddp-bucket-size elements (or of the rank's
// parameters over --ddp-num-buckets; Megatron asserts one of the two, and
// a positive count), counted so with or without it (an upper bound);
// --ddp-pad-buckets-for-high-nccl-busbw pads each to 2^16 too. A bucket
// size of 0 closes a bucket at every parameter, as 1.
absl::Status FillDdpBuckets(const Arguments& args, MegatronLaunch& launch) {
  v1::ParallelConfig& p = *launch.job.mutable_parallel();
  p.set_pad_buckets_for_high_nccl_busbw(
      args.Has("ddp-pad-buckets-for-high-nccl-busbw"));
  if (args.Has("ddp-num-buckets") && args.Has("ddp-bucket-size")) {
    return Bad("ddp-num-buckets", "cannot be given with --ddp-bucket-size "
                                  "(Megatron asserts)");
  }
  MEMGATE_ASSIGN_OR_RETURN(buckets, args.Number("ddp-num-buckets", 0));
  if (args.Has("ddp-num-buckets") && buckets == 0) {
    return Bad("ddp-num-buckets", "must be greater than 0 (Megatron asserts)");
  }
  p.set_ddp_num_buckets(buckets);
  MEMGATE_ASSIGN_OR_RETURN(size, args.Number("ddp-bucket-size", 0));
  if (args.Has("ddp-bucket-size")) p.set_ddp_bucket_size(std::max(1u, size));
  return absl::OkStatus();
}

// --cp-comm-type (one type, or one a layer) and a2a+p2p's
// --hierarchical-context-parallel-sizes, with Megatron's and
// TransformerEngine's rules (arguments.py, transformer_config.py,
// context_parallel.py). Needs the context-parallel size (FillParallel).
absl::Status FillContextParallelComm(const Arguments& args,
                                     MegatronLaunch& launch) {
  v1::ParallelConfig& p = *launch.job.mutable_parallel();
  const uint32_t cp = p.context_parallel();
  std::vector<absl::string_view> types;
  const std::string text = args.Text("cp-comm-type");
  if (args.Has("cp-comm-type")) {
    types = absl::StrSplit(text, ' ', absl::SkipEmpty());
  }
  if (types.size() > 1 && cp > 1 &&
      types.size() != launch.job.model().num_layers()) {
    return Bad("cp-comm-type",
               absl::StrCat("gives ", types.size(), " types; one, or one a "
                            "layer (", launch.job.model().num_layers(),
                            "), as Megatron asserts"));
  }
  // Without CP no layer passes a type on (transformer_layer.py): any is
  // harmless, and only a uniform known one is kept (for plans with CP).
  v1::ContextParallelComm comm = v1::CONTEXT_PARALLEL_COMM_UNSPECIFIED;
  // Megatron asserts a2a+p2p's sizes whatever the CP size.
  const bool a2a_p2p =
      std::find(types.begin(), types.end(), "a2a+p2p") != types.end();
  for (absl::string_view type : types) {
    const std::optional<v1::ContextParallelComm> named =
        CpCommTypeNamed(type);
    const bool differs = named.has_value() &&
                         comm != v1::CONTEXT_PARALLEL_COMM_UNSPECIFIED &&
                         comm != *named;
    if (cp < 2 && (!named.has_value() || differs)) {
      launch.notes.push_back(absl::StrCat(
          "--cp-comm-type ", text.substr(0, 64),
          text.size() > 64 ? "...: " : ": ",
          "no effect without context parallelism (not kept for plans)"));
      comm = v1::CONTEXT_PARALLEL_COMM_UNSPECIFIED;
      break;
    }
    if (!named.has_value()) {
      return Bad("cp-comm-type",
                 type == "allgather"
                     ? "'allgather' is Megatron's help text; TransformerEngine "
                       "runs 'all_gather' and raises on any other spelling"
                     : absl::StrCat(Quoted(type),
                                    " is not an exchange (p2p, all_gather, "
                                    "a2a, a2a+p2p)"));
    }
    if (differs) {
      return Bad("cp-comm-type",
                 "types that differ by layer are not modelled (give one)");
    }
    comm = *named;
  }
  // Megatron: the hierarchical sizes multiply to the CP size; a2a+p2p
  // needs them, and TransformerEngine takes two levels, all-to-all first.
  uint32_t first_level = 0;
  if (args.Has("hierarchical-context-parallel-sizes")) {
    const std::string sizes = args.Text("hierarchical-context-parallel-sizes");
    uint64_t product = 1;
    size_t levels = 0;
    for (absl::string_view word :
         absl::StrSplit(sizes, ' ', absl::SkipEmpty())) {
      uint32_t size = 0;
      if (!absl::SimpleAtoi(word, &size) || size == 0) {
        return Bad("hierarchical-context-parallel-sizes",
                   "each size must be a positive integer");
      }
      if (levels++ == 0) first_level = size;
      product *= size;
      if (product > cp) break;  // bounded before it can overflow
    }
    if (product != cp) {
      return Bad("hierarchical-context-parallel-sizes",
                 absl::StrCat("must multiply to --context-parallel-size ", cp,
                              ", as Megatron asserts"));
    }
    if (comm == v1::CONTEXT_PARALLEL_COMM_A2A_P2P && cp > 1 && levels != 2) {
      return Bad("hierarchical-context-parallel-sizes",
                 "a2a+p2p runs two levels (all-to-all, then p2p): give two "
                 "sizes, as TransformerEngine asserts");
    }
  } else if (a2a_p2p) {
    return Bad("cp-comm-type",
               "a2a+p2p needs --hierarchical-context-parallel-sizes, as "
               "Megatron asserts");
  }
  p.set_context_parallel_comm(comm);
  if (comm == v1::CONTEXT_PARALLEL_COMM_A2A_P2P) {
    p.set_context_parallel_a2a_size(first_level);
  }
  return absl::OkStatus();
}

absl::Status FillParallel(const Arguments& args, MegatronLaunch& launch) {
  v1::ParallelConfig& p = *launch.job.mutable_parallel();
  MEMGATE_ASSIGN_OR_RETURN(tp, args.Number("tensor-model-parallel-size", 1));
  MEMGATE_ASSIGN_OR_RETURN(pp, args.Number("pipeline-model-parallel-size", 1));
  MEMGATE_ASSIGN_OR_RETURN(cp, args.Number("context-parallel-size", 1));
  // Zero would reach divisions (vocabulary padding, stage splits) before
  // the estimator's own validation; Megatron refuses it too.
  if (tp == 0) return Bad("tensor-model-parallel-size", "must be at least 1");
  if (pp == 0) return Bad("pipeline-model-parallel-size", "must be at least 1");
  if (cp == 0) return Bad("context-parallel-size", "must be at least 1");
  if (absl::Status s = RequireUnshardedWeights(
          args, "tensor-parallel-num-weight-shards",
          "--tensor-model-parallel-size", tp);
      !s.ok()) {
    return s;
  }
  p.set_tensor_parallel(tp);
  p.set_pipeline_parallel(pp);
  p.set_context_parallel(cp);
  p.set_sequence_parallel(args.Has("sequence-parallel"));
  p.set_distributed_optimizer(args.Has("use-distributed-optimizer"));
  if (absl::Status s = FillDdpBuckets(args, launch); !s.ok()) return s;
  v1::LaunchSplit& forms = launch.split_arguments;
  forms.set_layout(args.Has("pipeline-model-parallel-layout"));
  forms.set_first_last(args.Has("decoder-first-pipeline-num-layers") ||
                       args.Has("decoder-last-pipeline-num-layers"));
  forms.set_virtual_stages(args.Has("num-virtual-stages-per-pipeline-rank"));
  forms.set_layers_per_virtual_stage(
      args.Has("num-layers-per-virtual-pipeline-stage"));
  forms.set_account_for_embedding(
      args.Has("account-for-embedding-in-pipeline-split"));
  forms.set_account_for_loss(args.Has("account-for-loss-in-pipeline-split"));
  forms.set_encoder_seq_length(args.Has("encoder-seq-length"));
  // Equal to TP and expert TP (RequireUnshardedWeights): a plan's other
  // sizes would contradict them.
  for (const char* shards : {"tensor-parallel-num-weight-shards",
                             "expert-tensor-parallel-num-weight-shards"}) {
    if (args.Has(shards)) {
      launch.tied_to_layout.push_back(absl::StrCat("--", shards));
    }
  }
  if (args.Has("pipeline-model-parallel-layout")) {
    return FillLayout(args, launch);
  }
  if (args.Has("num-layers-per-virtual-pipeline-stage") ||
      args.Has("num-virtual-stages-per-pipeline-rank")) {
    // arguments.py counts the embedding and the loss as a layer each when
    // the split accounts for them, before dividing by the chunk size.
    const uint64_t layers =
        uint64_t{launch.job.model().num_layers()} +
        (args.Has("account-for-embedding-in-pipeline-split") ? 1 : 0) +
        (args.Has("account-for-loss-in-pipeline-split") ? 1 : 0);
    MEMGATE_ASSIGN_OR_RETURN(
        per_chunk, args.Number("num-layers-per-virtual-pipeline-stage", 0));
    MEMGATE_ASSIGN_OR_RETURN(
        given_chunks, args.Number("num-virtual-stages-per-pipeline-rank", 0));
    uint32_t chunks = given_chunks;
    if (per_chunk != 0) {
      const uint64_t per_rank = static_cast<uint64_t>(per_chunk) * pp;
      if (layers % per_rank != 0) {
        return Bad("num-layers-per-virtual-pipeline-stage",
                   absl::StrCat("x pipeline size must divide --num-layers",
                                layers == launch.job.model().num_layers()
                                    ? " "
                                    : " plus the accounted embedding/loss ",
                                layers));
      }
      const uint32_t v = static_cast<uint32_t>(layers / per_rank);
      if (chunks != 0 && chunks != v) {
        return Bad("num-virtual-stages-per-pipeline-rank",
                   absl::StrCat("disagrees with "
                                "--num-layers-per-virtual-pipeline-stage (",
                                v, " chunks)"));
      }
      chunks = v;
    }
    if (chunks == 0) {
      return Bad("num-virtual-stages-per-pipeline-rank", "must be at least 1");
    }
    // One chunk a rank is no interleaving (arguments.py sets the virtual
    // size to None), whatever the pipeline.
    if (chunks > 1 && pp < 2) {
      return Bad(args.Has("num-layers-per-virtual-pipeline-stage")
                     ? "num-layers-per-virtual-pipeline-stage"
                     : "num-virtual-stages-per-pipeline-rank",
                 "interleaving needs --pipeline-model-parallel-size of 2 or "
                 "more");
    }
    if (chunks > 1) p.set_virtual_pipeline_stages(chunks);
  }
  // The splits below write one entry a (virtual) stage: bounded before any
  // is written, whatever --num-layers allows (validation later holds PP and
  // v to 4,096 each).
  const uint64_t stage_entries =
      uint64_t{pp} * std::max(1u, p.virtual_pipeline_stages());
  if (stage_entries > kMaxExpandedLayout) {
    return Bad("pipeline-model-parallel-size",
               absl::StrCat("x virtual stages is ", stage_entries,
                            "; at most ", kMaxExpandedLayout,
                            " stages are modelled"));
  }

  const bool account_embedding =
      args.Has("account-for-embedding-in-pipeline-split");
  const bool account_loss = args.Has("account-for-loss-in-pipeline-split");
  if (account_embedding || account_loss) {
    return FillAccountedSplit(args, account_embedding, account_loss, launch);
  }
  if (args.Has("decoder-first-pipeline-num-layers") ||
      args.Has("decoder-last-pipeline-num-layers")) {
    return FillFirstLastSplit(args, launch);
  }
  return absl::OkStatus();
}

// --microbatch-group-size-per-virtual-pipeline-stage (N): how many
// micro-batches each model chunk runs in a row under interleaving, which
// sets the warm-up forwards a rank holds (memory_model.cc [MT]). Without
// interleaving Megatron never reads it: a note says so. Zero is Megatron's
// error (N < p), refused here as it would read as "default".
absl::Status FillMicrobatchGroup(const Arguments& args,
                                 MegatronLaunch& launch) {
  constexpr char kName[] = "microbatch-group-size-per-virtual-pipeline-stage";
  if (!args.Has(kName)) return absl::OkStatus();
  MEMGATE_ASSIGN_OR_RETURN(group, args.Number(kName, 0));
  if (group == 0) return Bad(kName, "must be at least 1");
  v1::ParallelConfig& p = *launch.job.mutable_parallel();
  if (p.virtual_pipeline_stages() < 2) {
    launch.notes.push_back(absl::StrCat(
        "--", kName, ": no effect without interleaving (Megatron reads it "
        "only with virtual pipeline stages)"));
    return absl::OkStatus();
  }
  p.set_microbatch_group_size(group);
  return absl::OkStatus();
}

// --defer-embedding-wgrad-compute and --wgrad-deferral-limit
// (memory_model.cc [DW]). Megatron raises without gradient accumulation
// fusion (model_parallel_config.py), and never reads the limit without
// the deferral: a note says so.
absl::Status FillDeferredEmbeddingWgrad(const Arguments& args,
                                        MegatronLaunch& launch) {
  MEMGATE_ASSIGN_OR_RETURN(limit, args.Number("wgrad-deferral-limit", 0));
  if (args.Has("no-gradient-accumulation-fusion")) {
    // Each weight gradient a new tensor before the main gradient takes it
    // (memory_model.cc [OW]): the output layer's is the last stage's,
    // counted once the loss's fp32 softmax is freed. fp32 logits keep it
    // (the output layer's backward casts its fp32 gradient to 16 bits and
    // holds both): not modelled.
    if (args.Text("output-logit-dtype") == "fp32") {
      return Bad("no-gradient-accumulation-fusion",
                 "with --output-logit-dtype fp32 the logits' fp32 gradient "
                 "lives through the output layer's backward beside its "
                 "16-bit copy and the weight gradient: not modelled");
    }
    launch.job.mutable_training()->set_gradient_accumulation_unfused(true);
    launch.notes.push_back(
        "--no-gradient-accumulation-fusion: each weight gradient is a new "
        "tensor before it is added to the main gradient; the output "
        "layer's (v/t x h) is checked to fit beside the last stage");
  }
  if (!args.Has("defer-embedding-wgrad-compute")) {
    if (args.Has("wgrad-deferral-limit")) {
      launch.notes.push_back(
          "--wgrad-deferral-limit: no effect without "
          "--defer-embedding-wgrad-compute");
    }
    return absl::OkStatus();
  }
  if (args.Has("no-gradient-accumulation-fusion")) {
    return Bad("defer-embedding-wgrad-compute",
               "needs gradient accumulation fusion: Megatron raises with "
               "--no-gradient-accumulation-fusion");
  }
  // fp32 logits (layers.py _linear_forward's output_dtype) make each
  // deferred logits' gradient 4 B; the term counts the activation dtype.
  if (args.Text("output-logit-dtype") == "fp32") {
    return Bad("defer-embedding-wgrad-compute",
               "with --output-logit-dtype fp32 the deferred logits' "
               "gradients are fp32: not modelled");
  }
  v1::TrainingConfig& t = *launch.job.mutable_training();
  t.set_defer_embedding_wgrad(true);
  t.set_wgrad_deferral_limit(limit);
  return absl::OkStatus();
}

// bf16 / fp16 / fp32 as Megatron trains: fp32 when neither is given
// (arguments.py), bf16 with fp32 gradient accumulation (forced by --bf16),
// bf16 gradients with --grad-reduce-in-bf16.
absl::Status FillPrecision(const Arguments& args, MegatronLaunch& launch) {
  v1::TrainingConfig& t = *launch.job.mutable_training();
  const bool bf16 = args.Has("bf16"), fp16 = args.Has("fp16");
  if (bf16 && fp16) return Bad("fp16", "given with --bf16: choose one");
  if (args.Has("grad-reduce-in-bf16") && !bf16) {
    return Bad("grad-reduce-in-bf16", "needs --bf16");
  }
  if (fp16 && args.Has("accumulate-allreduce-grads-in-fp32")) {
    return Bad("accumulate-allreduce-grads-in-fp32",
               "with --fp16 (fp32 gradients of fp16 weights) is not modelled");
  }
  if (bf16) {
    t.set_precision(args.Has("grad-reduce-in-bf16")
                        ? v1::PRECISION_BF16_BF16_GRADS
                        : v1::PRECISION_BF16_FP32_GRADS);
  } else if (fp16) {
    t.set_precision(v1::PRECISION_FP16);
  } else {
    t.set_precision(v1::PRECISION_FP32);
    launch.notes.push_back(
        "no --bf16 or --fp16: Megatron trains in fp32 (4 B weights, 4 B "
        "gradients, 8 B Adam states, 4-byte activations)");
  }
  return absl::OkStatus();
}

// --softmax-type into the model, before the attention kernel is decided:
// TransformerEngine runs sinks in no kernel under some settings
// (attention_backend.h).
absl::Status ReadSoftmaxType(const Arguments& args, MegatronLaunch& launch) {
  const std::string type =
      args.Has("softmax-type") ? args.Text("softmax-type") : "vanilla";
  if (type != "vanilla" && type != "off-by-one" && type != "learnable") {
    return Bad("softmax-type",
               absl::StrCat("'", type.substr(0, 32), "' is not modelled "
                            "(vanilla, off-by-one or learnable)"));
  }
  launch.job.mutable_model()->set_softmax_type(
      type == "learnable"    ? v1::SOFTMAX_TYPE_LEARNABLE
      : type == "off-by-one" ? v1::SOFTMAX_TYPE_OFF_BY_ONE
                             : v1::SOFTMAX_TYPE_VANILLA);
  return absl::OkStatus();
}

// Settings that TransformerEngine's FlashAttention cannot run, so that
// under auto TE takes cuDNN's fused attention where the installed cuDNN
// has them and its unfused attention (which keeps the s x s scores)
// otherwise (dot_product_attention/utils.py get_attention_backend;
// common/fused_attn/fused_attn.cpp): memgate cannot tell which, so the
// launch must say. Megatron's --softmax-type off-by-one / learnable
// (gpt-oss's attention sinks; cuDNN 9.13.1 on, "Filter: Softmax type"),
// and --qk-clip / --log-max-attention-logit, which have TE return the
// largest attention logit (transformer_engine.py return_max_logit; cuDNN
// 9.21 on, "Filter: Return max_logit"). With context parallelism TE's
// fused attention runs the sinks over an all-to-all only. A learnable
// softmax's offsets, a/t a layer, are counted (ModelConfig.softmax_type).
absl::Status ReadFlashlessAttention(const Arguments& args,
                                    const std::string& backend,
                                    MegatronLaunch& launch, bool unfused) {
  const std::string type =
      args.Has("softmax-type") ? args.Text("softmax-type") : "vanilla";
  const bool sinks = type != "vanilla";
  const char* flag = sinks                             ? "softmax-type"
                     : args.Has("qk-clip")             ? "qk-clip"
                     : args.Has("log-max-attention-logit")
                         ? "log-max-attention-logit"
                         : nullptr;
  if (flag == nullptr) return absl::OkStatus();
  if (unfused) return absl::OkStatus();  // unfused, local, fp32: counted
  const std::string what =
      sinks ? absl::StrCat("the ", type, " softmax")
            : std::string("the largest attention logit it returns");
  if (backend == "flash") {
    return Bad(flag, absl::StrCat("with --attention-backend flash: Flash"
                                  "Attention cannot run ", what, ", so "
                                  "TransformerEngine has no backend (use "
                                  "fused or unfused)"));
  }
  if (backend == "auto") {
    return Bad(flag, absl::StrCat(
                         "with --attention-backend auto: TransformerEngine "
                         "runs ", what, " in cuDNN's fused attention where "
                         "the installed cuDNN has it (no s x s scores) and "
                         "in its unfused attention otherwise (the s x s "
                         "scores kept), which memgate cannot tell apart: "
                         "give --attention-backend fused or unfused"));
  }
  const v1::ParallelConfig& par = launch.job.parallel();
  if (sinks && par.context_parallel() > 1 &&
      par.context_parallel_comm() != v1::CONTEXT_PARALLEL_COMM_A2A) {
    return Bad(flag, absl::StrCat(type, " with context parallelism: Transformer"
                                  "Engine's fused attention runs it over "
                                  "--cp-comm-type a2a only"));
  }
  if (sinks) launch.context_parallel_all_to_all_only = true;
  launch.notes.push_back(absl::StrCat(
      "--", flag, ": cuDNN's fused attention runs ", what,
      " (no s x s scores", type == "learnable"
                                 ? "; the learnable offsets, a/t a layer, "
                                   "counted"
                                 : "",
      ")"));
  return absl::OkStatus();
}

// Dropout (Megatron's default 0.1 each), the attention kernel, and
// activation recomputation.
absl::Status FillActivations(const Arguments& args, MegatronLaunch& launch) {
  v1::TrainingConfig& t = *launch.job.mutable_training();
  for (const char* name : {"hidden-dropout", "attention-dropout"}) {
    MEMGATE_ASSIGN_OR_RETURN(p, args.Decimal(name, 0.1));
    if (p >= 1) return Bad(name, "must be below 1");
    if (!args.Has(name)) {
      launch.notes.push_back(absl::StrCat(
          "no --", name, ": Megatron's default 0.1 (dropout masks are kept)"));
    }
    if (std::string(name) == "hidden-dropout") {
      t.set_hidden_dropout(static_cast<float>(p));
    } else {
      t.set_attention_dropout(static_cast<float>(p));
    }
  }

  // Megatron's GPT dataloader builds a dense attention mask unless told
  // not to; inter-document masking turns it off (arguments.py).
  const bool mask = !args.Has("no-create-attention-mask-in-dataloader") &&
                    !args.Has("dataloader-inter-document-masking");
  t.set_dataloader_attention_mask(mask);
  if (mask) {
    launch.notes.push_back(
        "no --no-create-attention-mask-in-dataloader: Megatron's dataloader "
        "puts a b x s x s bool attention mask on the first and last stages' "
        "GPUs every micro-batch (counted; FlashAttention does not need it)");
  }

  const std::string backend = args.Has("attention-backend")
                                  ? args.Text("attention-backend")
                                  : std::string("auto");
  const std::string impl = args.Has("transformer-impl")
                               ? args.Text("transformer-impl")
                               : std::string("transformer_engine");
  if (impl != "transformer_engine" && impl != "local") {
    return Bad("transformer-impl",
               absl::StrCat(Quoted(impl), " is not modelled"));
  }
  bool unfused = impl == "local";
  if (backend == "unfused" || backend == "local") {
    unfused = true;
  } else if (backend != "auto" && backend != "flash" && backend != "fused") {
    return Bad("attention-backend",
               absl::StrCat(Quoted(backend),
                            " is not modelled (flash, fused, "
                            "auto, unfused or local)"));
  }
  const bool local_attention = impl == "local" || backend == "local";
  // TransformerEngine's own switches in the launch's environment
  // (te_attention_environment.h).
  MEMGATE_ASSIGN_OR_RETURN(
      env, ReadTeAttentionEnvironment(args, backend, local_attention,
                                      launch.notes));
  if (env.kernel == TeEnvironmentKernel::kUnfused) unfused = true;
  if (absl::Status s = ReadSoftmaxType(args, launch); !s.ok()) return s;
  const TeSwitches switches{
      !local_attention && (backend == "fused" ||
                           env.kernel == TeEnvironmentKernel::kFlashDisabled),
      env.deterministic, t.attention_dropout() > 0};
  t.set_flash_attention_disabled(switches.flash_attention_disabled);
  t.set_te_deterministic_attention(switches.deterministic);
  t.set_te_masked_softmax_fusion_disabled(env.masked_softmax_fusion_off);
  // What TransformerEngine can run for this precision and these head
  // dimensions (estimator/attention_backend.h): where no FlashAttention 2
  // or cuDNN fused kernel takes them, auto runs the unfused attention
  // (FlashAttention 3 aside); flash or fused leave TE no backend where
  // none can, and fused none where cuDNN cannot (the GPU's limits wait
  // for the job's GPU: job_resolver.cc, validation.cc).
  const bool fp32 = t.precision() == v1::PRECISION_FP32;
  const TeAttention te = TransformerEngineAttention(
      launch.job.model(), t.precision(), "", switches);
  if (te != TeAttention::kFlashOrFused && !unfused) {
    const std::string why = WhyNoFusedAttention(
        launch.job.model(), t.precision(), "", switches);
    if (backend == "auto") {
      unfused = true;
      launch.notes.push_back(absl::StrCat(
          why, ": --attention-backend auto runs TransformerEngine's unfused "
               "attention, which keeps the s x s scores (counted)"));
    } else if (te == TeAttention::kUnfusedOnly || backend == "fused") {
      return Bad("attention-backend",
                 absl::StrCat(backend, ": ", why, ", so TransformerEngine "
                              "has no ", backend, " attention for this run "
                              "(use auto or unfused", fp32 ? ", or --bf16" : "",
                              ")"));
    }
  }
  if (unfused && env.unfused_off && !local_attention) {
    const std::string why = WhyNoFusedAttention(
        launch.job.model(), t.precision(), "", switches);
    return absl::InvalidArgumentError(absl::StrCat(
        "NVTE_UNFUSED_ATTN=0 (the launch's environment): ",
        why.empty() ? std::string("the launch's attention settings") : why,
        " leave TransformerEngine its unfused attention only, which this "
        "turns off: TE has no attention backend left"));
  }
  if (absl::Status s = ReadFlashlessAttention(args, backend, launch, unfused);
      !s.ok()) {
    return s;
  }
  // Megatron's fp32-scores flags reach its local attention only
  // (arguments.py: --apply-query-key-layer-scaling turns on
  // --attention-softmax-in-fp32): its FusedScaleMaskSoftmax then keeps an
  // fp32 output where its kernel cannot run (memory_model.cc [UA]). TE's
  // unfused attention builds its softmax with softmax_in_fp32 on whatever
  // they say (TE attention/dot_product_attention/backends.py
  // UnfusedDotProductAttention, counted as [TS]). (In fp32 training the
  // scores are fp32 anyway, and counted so.)
  // Without its kernel Megatron's local softmax takes the fp32 path at
  // every length (fused_softmax.py is_kernel_available), which memgate
  // does not count below s = 4096.
  if (local_attention && !fp32 && args.Has("no-masked-softmax-fusion") &&
      (args.Has("attention-softmax-in-fp32") ||
       args.Has("apply-query-key-layer-scaling"))) {
    return Bad("no-masked-softmax-fusion",
               "with Megatron's local attention and fp32 softmax "
               "(--attention-softmax-in-fp32) every softmax runs in fp32: "
               "not modelled");
  }
  for (const char* fp32_scores :
       {"attention-softmax-in-fp32", "apply-query-key-layer-scaling"}) {
    if (!args.Has(fp32_scores)) continue;
    // The launch's setting, which only the local attention reads.
    t.set_attention_softmax_in_fp32(true);
    if (!local_attention && unfused && !fp32) {
      launch.notes.push_back(absl::StrCat(
          "--", fp32_scores, ": no change: TransformerEngine's unfused "
          "attention takes no such flag and runs its softmax in fp32 "
          "wherever its fused kernel cannot (counted)"));
    }
  }
  // The native fused loss (fused_cross_entropy.py calculate_gradients,
  // compiled, cannot update the saved fp32 softmax in place): a new fp32
  // gradient of the logits at the loss's backward, measured on an H100
  // (bench/RESULTS.md, session 33), counted on the last stage
  // (memory_model.cc [CE]). Run eagerly (--disable-jit-fuser) it updates
  // the softmax in place.
  if (args.Has("cross-entropy-loss-fusion") &&
      args.Text("cross-entropy-fusion-impl") != "te" &&
      !args.Has("disable-jit-fuser")) {
    t.set_cross_entropy_new_gradient(true);
    launch.notes.push_back(
        "--cross-entropy-loss-fusion: Megatron's native fused loss makes a "
        "new fp32 gradient of the logits in backward, s x b x v / t x 4 B "
        "beside the saved softmax: counted on the last stage (measured on "
        "an H100)");
  }
  t.set_local_layer_spec(impl == "local");
  t.set_jit_fuser_disabled(args.Has("disable-jit-fuser"));
  // auto where the launch alone does not decide it stays unset: the job's
  // GPU may (job_resolver.cc, attention_backend.h).
  t.set_attention_kernel(local_attention ? v1::ATTENTION_KERNEL_LOCAL
                         : unfused       ? v1::ATTENTION_KERNEL_UNFUSED
                         : backend == "auto" ? v1::ATTENTION_KERNEL_UNSPECIFIED
                                             : v1::ATTENTION_KERNEL_FLASH);

  std::string granularity = args.Text("recompute-granularity");
  if (granularity.empty() && args.Has("recompute-activations")) {
    granularity = "selective";
  }
  v1::Recompute& r = *t.mutable_recompute();
  if (granularity == "selective") {
    r.set_granularity(v1::Recompute::GRANULARITY_SELECTIVE);
    for (absl::string_view module :
         absl::StrSplit(args.Text("recompute-modules"), ' ',
                        absl::SkipEmpty())) {
      const std::optional<v1::Recompute::Module> known =
          RecomputeModuleNamed(module);
      if (!known) {
        return Bad("recompute-modules",
                   absl::StrCat(Quoted(module),
                                " is not modelled (core_attn, "
                                "mlp, moe, moe_act, shared_experts, "
                                "layernorm, mla_up_proj)"));
      }
      r.add_modules(*known);
    }
    if (!unfused && r.modules_size() == 0) {
      launch.notes.push_back(
          "selective recomputation of core attention saves nothing with "
          "FlashAttention (no s^2 scores are stored)");
    }
  } else if (granularity == "full") {
    r.set_granularity(v1::Recompute::GRANULARITY_FULL);
    const std::string method = args.Text("recompute-method");
    const std::optional<v1::Recompute::Method> known =
        RecomputeMethodNamed(method);
    if (!known) {
      return Bad("recompute-method",
                 "must be uniform or block with --recompute-granularity full");
    }
    r.set_method(*known);
    if (!args.Has("recompute-num-layers")) {
      return Bad("recompute-num-layers",
                 "must be given with --recompute-granularity full");
    }
    MEMGATE_ASSIGN_OR_RETURN(n, args.Number("recompute-num-layers", 0));
    // Block recomputation of 0 layers a stage recomputes none
    // (transformer_block.py); uniform groups of 0 layers never advance.
    if (n == 0 && method != "block") {
      return Bad("recompute-num-layers",
                 "must be at least 1 with --recompute-method uniform");
    }
    r.set_num_layers(n);
    r.set_distribute_saved_activations(
        args.Has("distribute-saved-activations"));
  } else if (!granularity.empty()) {
    return Bad("recompute-granularity",
               absl::StrCat("must be selective or full (got '", granularity,
                            "')"));
  } else if (args.Has("recompute-method") ||
             args.Has("recompute-num-layers")) {
    return Bad(args.Has("recompute-method") ? "recompute-method"
                                            : "recompute-num-layers",
               "needs --recompute-granularity full");
  }
  if (args.Has("distribute-saved-activations") &&
      r.granularity() != v1::Recompute::GRANULARITY_FULL) {
    return Bad("distribute-saved-activations",
               "needs --recompute-granularity full, as Megatron asserts");
  }
  return absl::OkStatus();
}

// Recomputed modules Megatron refuses beside other settings
// (transformer_config.py __post_init__, ValueError): moe_act without
// grouped GEMMs; moe_act and layernorm under fp8's delayed recipe. Such a
// launch never trains.
absl::Status RefuseModulesMegatronRefuses(const Arguments& args,
                                          const MegatronLaunch& launch) {
  const v1::TrainingConfig& t = launch.job.training();
  for (int module : t.recompute().modules()) {
    if (module == v1::Recompute::MODULE_MOE_ACT &&
        !args.Has("moe-grouped-gemm")) {
      return Bad("recompute-modules",
                 "moe_act needs --moe-grouped-gemm (Megatron refuses it "
                 "otherwise)");
    }
    const bool fp8_sensitive = module == v1::Recompute::MODULE_MOE_ACT ||
                               module == v1::Recompute::MODULE_LAYERNORM;
    if (fp8_sensitive && t.has_fp8() &&
        t.fp8().recipe() == v1::Fp8::RECIPE_DELAYED) {
      return Bad("recompute-modules",
                 "moe_act and layernorm with the fp8 recipe delayed: Megatron "
                 "refuses them (\"Delayed scaling does not support moe_act "
                 "and layernorm recompute for fp8\")");
    }
  }
  return absl::OkStatus();
}

// --tp-comm-overlap (training/initialize.py _initialize_tp_communicators):
// TransformerEngine's userbuffers, in its default configuration or one
// from --tp-comm-overlap-cfg's YAML, counted at its upper bound.
absl::Status FillTpCommOverlap(const Arguments& args, MegatronLaunch& launch) {
  if (!args.Has("tp-comm-overlap")) {
    if (args.Has("tp-comm-overlap-cfg")) {
      launch.notes.push_back(
          "--tp-comm-overlap-cfg without --tp-comm-overlap: Megatron does "
          "not read it, and no userbuffers are counted");
    }
    return absl::OkStatus();
  }
  const v1::ParallelConfig& p = launch.job.parallel();
  // arguments.py turns sequence parallelism off at TP 1, then asserts it.
  if (!p.sequence_parallel() || p.tensor_parallel() < 2) {
    return Bad("tp-comm-overlap",
               "needs --sequence-parallel with --tensor-model-parallel-size "
               "of 2 or more (Megatron asserts)");
  }
  const bool custom = args.Has("tp-comm-overlap-cfg");
  launch.job.mutable_training()->set_tp_comm_overlap(
      custom ? v1::TrainingConfig::TP_COMM_OVERLAP_CUSTOM_CONFIG
             : v1::TrainingConfig::TP_COMM_OVERLAP_DEFAULT);
  if (custom) {
    launch.notes.push_back(
        "--tp-comm-overlap-cfg: the YAML is not read; every userbuffer is "
        "counted at its largest (a bf16 reduce-scatter ring), an upper "
        "bound");
  }
  return absl::OkStatus();
}

// Which of Megatron's ways of settling the global batch the launch takes
// (GlobalBatchRule); the GPU count may come later, from memgate's flags.
absl::Status ReadGlobalBatchRule(const Arguments& args, uint32_t gbs,
                                 MegatronLaunch& launch) {
  const bool given = args.Has("global-batch-size");
  // arguments.py: assert args.global_batch_size > 0.
  if (given && gbs == 0) {
    return Bad("global-batch-size", "must be above 0 (Megatron asserts)");
  }
  const bool rounds = args.Has("decrease-batch-size-if-needed");
  if (args.Has("step-batch-size-schedule")) {
    // arguments.py and num_microbatches_calculator.py raise ValueError.
    if (given || rounds) {
      return Bad("step-batch-size-schedule",
                 absl::StrCat("cannot be given with --",
                              given ? "global-batch-size"
                                    : "decrease-batch-size-if-needed",
                              " (Megatron raises)"));
    }
    launch.global_batch_rule = GlobalBatchRule::kScheduled;
    launch.notes.push_back(
        "--step-batch-size-schedule: the global batch changes over "
        "training; estimated at the most micro-batches a pipeline stage "
        "can hold");
    return absl::OkStatus();
  }
  launch.global_batch_rule = !given  ? GlobalBatchRule::kMegatronDefault
                             : rounds ? GlobalBatchRule::kRoundedDown
                                      : GlobalBatchRule::kAsGiven;
  return absl::OkStatus();
}

absl::Status FillTraining(const Arguments& args, MegatronLaunch& launch) {
  v1::TrainingConfig& t = *launch.job.mutable_training();
  // arguments.py: --encoder-seq-length is the sequence length when
  // --seq-length is absent, and asserted absent beside it.
  if (args.Has("encoder-seq-length") && args.Has("seq-length")) {
    return Bad("encoder-seq-length",
               "cannot be given with --seq-length (Megatron asserts)");
  }
  const char* seq_name =
      args.Has("encoder-seq-length") ? "encoder-seq-length" : "seq-length";
  MEMGATE_ASSIGN_OR_RETURN(seq, args.Number(seq_name, 0));
  if (seq == 0) return Bad("seq-length", "missing");
  MEMGATE_ASSIGN_OR_RETURN(mbs, args.Number("micro-batch-size", 1));
  MEMGATE_ASSIGN_OR_RETURN(gbs, args.Number("global-batch-size", 0));
  if (absl::Status s = ReadGlobalBatchRule(args, gbs, launch); !s.ok()) {
    return s;
  }
  // An evaluation's forward-only micro-batch (arguments.py:
  // eval_micro_batch_size, micro_batch_size when absent), checked beside
  // the step's gradient copies (memory_model.cc [EV]); --eval-iters 0
  // without --full-validation: Megatron never evaluates (training.py:
  // do_valid = full_validation or eval_iters > 0).
  MEMGATE_ASSIGN_OR_RETURN(eval_mbs, args.Number("eval-micro-batch-size", mbs));
  if (eval_mbs == 0) return Bad("eval-micro-batch-size", "must be at least 1");
  if (eval_mbs != mbs) t.set_eval_micro_batch_size(eval_mbs);
  if (args.Has("eval-iters")) {
    MEMGATE_ASSIGN_OR_RETURN(eval_iters, args.Number("eval-iters", 100));
    t.set_evaluation_off(eval_iters == 0 && !args.Has("full-validation"));
  }
  t.set_seq_length(seq);
  t.set_micro_batch_size(mbs);
  t.set_global_batch_size(gbs);
  for (auto fill : {FillPrecision, FillActivations, FillOptimizer,
                    FillOptimizerStorage, FillFp8, FillFsdp,
                    FillOptimizerInstances, FillLocalGradAccumulation,
                    FillFp32AccumulatingReduceScatter, FillTpCommOverlap}) {
    if (absl::Status s = fill(args, launch); !s.ok()) return s;
  }
  return RefuseModulesMegatronRefuses(args, launch);
}

// Arguments the table refuses, named with the reason, and partly modelled
// ones whose other values are refused.
absl::Status RefuseUnmodelled(const Arguments& args) {
  const std::string grads = args.Text("megatron-fsdp-main-grads-dtype");
  if (!grads.empty() && grads != "auto" && grads != "fp32") {
    return Bad("megatron-fsdp-main-grads-dtype",
               absl::StrCat(Quoted(grads), " is not modelled (auto or fp32)"));
  }
  // The one value of each that is modelled, and what the others hold that
  // memgate does not count.
  struct OnlyValue {
    const char* name;
    const char* only;
    const char* why;
  };
  for (const OnlyValue& o :
       {OnlyValue{"cuda-graph-impl", "none",
                  "CUDA graphs keep static input and output buffers and a "
                  "private memory pool beside the activations memgate "
                  "counts"},
        OnlyValue{"outer-dp-sharding-strategy", "no_shard",
                  "hybrid FSDP's outer sharding of the optimizer is not "
                  "counted"},
        OnlyValue{"megatron-fsdp-main-params-dtype", "fp32",
                  "other master-weight dtypes are not counted"},
        OnlyValue{"megatron-fsdp-version", "1",
                  "version 2's own buffers are not counted"}}) {
    if (args.Has(o.name) && args.Text(o.name) != o.only) {
      return Bad(o.name,
                 absl::StrCat(Quoted(args.Text(o.name)), " is not modelled (",
                              o.only, " only): ", o.why));
    }
  }
  for (const auto& [name, value] : args.values()) {
    const MegatronArgument* a = FindMegatronArgument(name);
    if (a != nullptr && a->handling == Handling::kRefused) {
      return Bad(name, absl::StrCat("not modelled: ", a->effect,
                                    " (docs/megatron-arguments.md)"));
    }
  }
  return absl::OkStatus();
}

// The file name of the script `script` names: `torchrun pretrain_mamba
// ...` runs pretrain_mamba.py, ${MEGATRON}/pretrain_gpt.py pretrain_gpt.py;
// a name the shell makes ($SCRIPT) as it is.
std::string ScriptFileName(const std::string& script) {
  std::string base = script.substr(script.rfind('/') + 1);
  if (!ExpandsAtRunTime(base) && base.find('.') == std::string::npos) {
    base += ".py";
  }
  return base;
}

// Arguments outside Megatron-LM's parser that change memory
// (OutsideArgumentRefusal) are refused by name; ModelOpt's that only its
// model builder reads (ActsOnlyUnderModelOpt) act only where pretrain_gpt.py
// enables ModelOpt, and where nothing in the launch can (no --load, and
// the enabling arguments are refused by name themselves) they are noted
// as changing nothing. NVIDIA's GPT-OSS example (examples/gptoss/
// 02_train.sh) trains from scratch with --export-force-local-attention
// and --enable-gpt-oss.
absl::Status RefuseOutsideArguments(const Arguments& args,
                                    MegatronLaunch& launch) {
  const bool pretrain_gpt = ScriptFileName(args.script()) == "pretrain_gpt.py";
  std::vector<std::string> inert;
  for (const std::string& name : args.refused_outside()) {
    const bool modelopt_builder = ActsOnlyUnderModelOpt(name);
    if (modelopt_builder && pretrain_gpt && !args.loads_checkpoint()) {
      inert.push_back(name);
      continue;
    }
    std::string why(OutsideArgumentRefusal(name));
    if (modelopt_builder && pretrain_gpt) {
      absl::StrAppend(&why, " (with --load, a checkpoint that holds "
                            "ModelOpt's state builds ModelOpt's model, which "
                            "the launch does not say)");
    }
    return Bad(name, why);
  }
  if (!inert.empty()) {
    launch.notes.push_back(absl::StrCat(
        "--", absl::StrJoin(inert, ", --"),
        ": ModelOpt's, read only by its model builder, which pretrain_gpt.py "
        "uses only with ModelOpt enabled (--modelopt-enabled, "
        "--export-kd-teacher-load, or a --load checkpoint that holds "
        "ModelOpt's state: post_training/utils.py maybe_enable_modelopt); "
        "this launch enables none: no effect"));
  }
  return absl::OkStatus();
}

// The script the launch runs. memgate models what Megatron-LM's
// pretrain_gpt.py builds (gpt_builders.py: its GPT model). Megatron-LM's
// other entry points build other models and are refused by name; a
// script of a site's own is read as building the same GPT model, said in
// a note (and refused under --refuse-unreviewed: it may build anything).
absl::Status CheckScript(const Arguments& args, MegatronLaunch& launch) {
  if (args.script().empty()) return absl::OkStatus();
  // A file named without its extension (`torchrun pretrain_mamba ...`) is
  // the entry point of that name.
  std::string script = args.script();
  if (!ExpandsAtRunTime(script) &&
      script.find('.', script.rfind('/') + 1) == std::string::npos) {
    script += ".py";
  }
  if (ScriptFileName(args.script()) == "pretrain_gpt.py") {
    return absl::OkStatus();
  }
  constexpr absl::string_view kVision =
      "a vision-language model (its vision encoder and projector beside the "
      "language model)";
  constexpr absl::string_view kMimo =
      "a multimodal MIMO model (modality encoders beside the language model)";
  // Megatron-LM's entry points by path suffix, and what each builds.
  constexpr std::pair<absl::string_view, absl::string_view> kOthers[] = {
          {"pretrain_mamba.py",
           "Megatron-LM's Mamba models (Mamba layers unless "
           "--hybrid-override-pattern says otherwise)"},
          {"pretrain_hybrid.py",
           "Megatron-LM's hybrid models (Mamba, attention and MLP layers)"},
          {"pretrain_vlm.py", kVision},
          {"multimodal/train.py", kVision},
          {"pretrain_mimo.py", kMimo},
          {"mimo/train.py", kMimo},
          {"pretrain_bert.py",
           "BERT (a bidirectional encoder with its pooler and binary head)"},
          {"pretrain_t5.py", "T5 (an encoder-decoder)"},
          {"pretrain_retro.py",
           "Retro (a retrieval encoder beside the decoder)"},
          {"pretrain_ict.py", "ICT's two BERT encoders"},
          {"pretrain_vision_classify.py", "a vision transformer"},
          {"pretrain_vision_dino.py", "a vision transformer (DINO)"},
          {"pretrain_vision_inpaint.py", "a vision transformer (inpainting)"},
          {"train_rl.py",
           "RL training (an inference engine's KV cache and CUDA graphs "
           "beside training on the same GPUs)"},
  };
  for (const auto& [name, what] : kOthers) {
    if (absl::EndsWith(script, name) &&
        (script.size() == name.size() ||
         script[script.size() - name.size() - 1] == '/')) {
      return absl::InvalidArgumentError(absl::StrCat(
          name, ": Megatron-LM's entry point for ", what,
          ": not modelled (memgate models pretrain_gpt.py's GPT model)"));
    }
  }
  // A path is the user's: a line's worth of it is kept.
  launch.unreviewed_script = Clipped(args.script(), kQuotedPathBytes);
  if (ExpandsAtRunTime(script)) {
    // `torchrun $SCRIPT --num-layers ...`: which script is unknown until
    // the command runs; one of the entry points above would be refused.
    launch.notes.push_back(absl::StrCat(
        "the script is ", launch.unreviewed_script,
        ", which the shell names only when the command runs: read as "
        "Megatron-LM's pretrain_gpt.py and its GPT model (Megatron-LM's "
        "other entry points are refused when named)"));
    return absl::OkStatus();
  }
  launch.notes.push_back(absl::StrCat(
      "the script ", launch.unreviewed_script,
      " is not Megatron-LM's pretrain_gpt.py: read as building its GPT model "
      "(a model it builds otherwise, or adds to it, is not counted)"));
  return absl::OkStatus();
}

// torchrun's --nnodes as its least and most nodes (run.py's
// parse_min_max_nnodes: "N" is N:N), 0 < MIN <= MAX.
absl::StatusOr<std::pair<uint32_t, uint32_t>> NodeRange(
    const std::string& text) {
  const std::vector<absl::string_view> parts = absl::StrSplit(text, ':');
  uint32_t least = 0, most = 0;
  if (parts.size() > 2 || !absl::SimpleAtoi(parts.front(), &least) ||
      !absl::SimpleAtoi(parts.back(), &most) || least == 0 || least > most) {
    return Bad("nnodes",
               "must be a node count N or a range MIN:MAX with 0 < MIN <= "
               "MAX");
  }
  return std::make_pair(least, most);
}

// Why torchrun's `count` (--nproc-per-node or --nnodes) is settled only
// when the command runs, or "" where the launch gives it as a number:
// a word the shell expands (--nproc-per-node $GPUS_PER_NODE, as batch
// scripts write it), the node's own GPUs (--nproc-per-node gpu or auto:
// torch/distributed/run.py's determine_local_world_size counts
// torch.cuda.device_count()), or an elastic range of nodes (--nnodes 1:4:
// the rendezvous decides). The job's GPU count then comes from memgate's
// --gpus (the Slurm hooks pass the request's).
std::string SettledWhenRun(const Arguments& args, const char* count) {
  const std::string text = args.Text(count);
  if (ExpandsAtRunTime(text)) return "set when the command runs";
  if (absl::string_view(count) == "nproc-per-node" &&
      (text == "gpu" || text == "auto")) {
    return "torchrun counts the node's GPUs when the command runs";
  }
  if (absl::string_view(count) == "nnodes") {
    const auto range = NodeRange(text);
    if (range.ok() && range->first < range->second) {
      return "an elastic range of nodes, settled when the command runs";
    }
  }
  return "";
}

absl::Status FillGpuCount(const Arguments& args, MegatronLaunch& launch) {
  if (!args.Has("nproc-per-node")) return absl::OkStatus();
  // Each count is checked whether or not the other settles when the
  // command runs: "--nproc-per-node cpu --nnodes $N" is refused, not
  // read past.
  const std::string per_node_when = SettledWhenRun(args, "nproc-per-node");
  absl::StatusOr<uint32_t> per_node = 0;
  if (per_node_when.empty()) {
    per_node = args.Number("nproc-per-node", 0);
    if (!per_node.ok() || *per_node == 0) {
      return Bad("nproc-per-node",
                 "must be a number of GPUs, gpu or auto (torchrun's cpu and "
                 "xpu do not train on the GPUs memgate checks)");
    }
  }
  const std::string nodes_when = SettledWhenRun(args, "nnodes");
  uint32_t nodes = 1;
  if (nodes_when.empty() && args.Has("nnodes")) {
    const auto range = NodeRange(args.Text("nnodes"));
    if (!range.ok()) return range.status();
    nodes = range->first;  // MIN == MAX: not elastic
  }
  if (!per_node_when.empty() || !nodes_when.empty()) {
    const std::pair<const char*, std::string> settled[] = {
        {"nproc-per-node", per_node_when}, {"nnodes", nodes_when}};
    for (const auto& [count, when] : settled) {
      if (when.empty()) continue;
      launch.notes.push_back(
          absl::StrCat("--", count, " ", args.Text(count).substr(0, 32), ": ",
                       when, "; the GPU count is memgate's --gpus"));
    }
    return absl::OkStatus();
  }
  const uint64_t gpus = static_cast<uint64_t>(nodes) * *per_node;
  if (gpus > UINT32_MAX) return Bad("nnodes", "too many GPUs");
  launch.job.set_num_gpus(static_cast<uint32_t>(gpus));
  return absl::OkStatus();
}

// Megatron's sizes and counts that build nothing at 0, given as 0: refused
// by name before anything is read, where memgate's reading of them (0 as
// "not given", then Megatron's default or a catalog model's) would
// estimate a model other than the one Megatron fails to build. Megatron
// raises for some (transformer_config.py: the first/last stage's layers
// and the shared expert's width "must be larger than 0"; arguments.py:
// max_position_embeddings >= seq_length); for the rest it keeps the 0
// (arguments.py fills kv_channels, ffn_hidden_size and moe_ffn_hidden_size
// only where None) and builds zero-width layers. Counts whose 0 Megatron
// reads as none (--mtp-num-layers, --moe-router-num-groups, --ddp-bucket-
// size, --eval-iters) are not here.
absl::Status RefuseZeroSizes(const Arguments& args) {
  static const auto* kPositive = new std::vector<std::string>{
      "num-layers", "hidden-size", "ffn-hidden-size", "num-attention-heads",
      "num-query-groups", "kv-channels", "seq-length", "micro-batch-size",
      "max-position-embeddings", "vocab-size", "moe-ffn-hidden-size",
      "moe-shared-expert-intermediate-size",
      "decoder-first-pipeline-num-layers", "decoder-last-pipeline-num-layers",
      "moe-router-topk", "q-lora-rank", "kv-lora-rank", "qk-head-dim",
      "qk-pos-emb-head-dim", "v-head-dim"};
  for (const std::string& name : *kPositive) {
    uint64_t value = 1;
    if (args.Has(name) && absl::SimpleAtoi(args.Text(name), &value) &&
        value == 0) {
      return Bad(name, "must be at least 1 (got 0)");
    }
  }
  return absl::OkStatus();
}

// arguments.py asserts max_position_embeddings >= seq_length (taken from
// --encoder-seq-length where --seq-length is absent) whatever the
// positions: a shorter table, whose learned rows are memory, is refused
// rather than counted for a job Megatron does not start.
absl::Status RefuseShortPositionTable(const Arguments& args) {
  const char* seq_name =
      args.Has("seq-length") ? "seq-length" : "encoder-seq-length";
  uint64_t rows = 0, seq = 0;
  if (absl::SimpleAtoi(args.Text("max-position-embeddings"), &rows) &&
      absl::SimpleAtoi(args.Text(seq_name), &seq) && rows < seq) {
    return Bad("max-position-embeddings",
               absl::StrCat("must be at least --", seq_name, " = ", seq,
                            " (got ", rows, "; Megatron's arguments.py "
                            "asserts it)"));
  }
  return absl::OkStatus();
}

// "--a, --b and 3 more: not arguments of Megatron-LM d98e8a6": a launch's
// unreviewed arguments, named as far as the launch kept them.
std::string UnreviewedText(const MegatronLaunch& launch) {
  const size_t named = launch.unreviewed.size();
  return absl::StrCat(
      "--", absl::StrJoin(launch.unreviewed, ", --"),
      launch.unreviewed_count > named
          ? absl::StrCat(" and ", launch.unreviewed_count - named, " more")
          : "",
      launch.unreviewed_count == 1 ? ": not an argument of "
                                   : ": not arguments of ",
      MegatronArgumentNamesRevision());
}

// The longest line of a launch's error or note (ParseMegatronLaunch):
// memgate's own are a few hundred bytes; a quoted word makes the rest.
constexpr size_t kMaxLaunchMessageLineBytes = 1024;

// ParseMegatronLaunch, its messages and notes as they quote the launch.
absl::StatusOr<MegatronLaunch> ReadLaunch(
    const std::vector<std::string>& argv, const v1::ModelConfig* fill_model) {
  Arguments args;
  if (absl::Status s = args.Parse(argv); !s.ok()) return s;
  if (!args.HasAnyOf(MegatronMarkers())) {
    return absl::InvalidArgumentError(
        "launch: no Megatron-LM arguments found (--num-layers, "
        "--seq-length, --tensor-model-parallel-size, ...)");
  }
  if (absl::Status s = RefuseUnmodelled(args); !s.ok()) return s;
  if (absl::Status s = RefuseZeroSizes(args); !s.ok()) return s;
  if (absl::Status s = RefuseShortPositionTable(args); !s.ok()) return s;
  MegatronLaunch launch;
  if (absl::Status s = RefuseOutsideArguments(args, launch); !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckScript(args, launch); !s.ok()) return s;
  if (absl::Status s = FillModel(args, fill_model, launch); !s.ok()) return s;
  for (auto fill : {FillArchitecture, FillParallel, FillContextParallelComm,
                    FillMicrobatchGroup,
                    PadVocabulary, FillTraining, FillDeferredEmbeddingWgrad,
                    FillExpertsFromLaunch, FillGpuCount}) {
    if (absl::Status s = fill(args, launch); !s.ok()) return s;
  }
  // The fp8 backward's precision, once the launch's fp8 is known.
  if (absl::Status s =
          ReadTeBackwardOverride(args.environment(), launch.job.training(),
                                 launch.notes, "the launch's environment");
      !s.ok()) {
    return s;
  }
  if (args.overridden_count() > 0) {
    std::string named =
        absl::StrCat("--", absl::StrJoin(args.overridden(), ", --"));
    if (args.overridden_count() > args.overridden().size()) {
      absl::StrAppend(&named, " and ",
                      args.overridden_count() - args.overridden().size(),
                      " more");
    }
    launch.notes.push_back(absl::StrCat(
        named, ": given more than once with different values; Megatron "
        "(argparse) takes the last, and so does this estimate"));
  }
  launch.unreviewed = args.unreviewed();
  launch.unreviewed_count = args.unreviewed_count();
  if (launch.unreviewed_count > 0) {
    const bool one = launch.unreviewed_count == 1;
    launch.notes.push_back(absl::StrCat(
        "not read: ", UnreviewedText(launch), ", which memgate was reviewed "
        "against; ",
        one ? "if it changes memory, this estimate does not count it"
            : "one that changes memory is not counted in this estimate"));
  }
  return launch;
}

}  // namespace

namespace {

// Whether `word` may assign one of TE's variables (NVTE_...=, or a list
// that holds one: --export=ALL,NVTE_FLASH_ATTN=0).
bool IsTeAssignmentWord(const std::string& word) {
  return absl::StrContains(word, "NVTE_") && absl::StrContains(word, "=");
}

// The words of a command that hold shell text of their own, as a range
// [first, last) of its words, or an empty range: a shell's command string
// (`bash -c "..."`, `srun ... sh -lc '...'`, as batch scripts start a
// launch a node), and what `echo` or `printf` prints (`echo "torchrun
// ..." | bash` runs it; a launch echoed is checked as the script's other
// launches are, as it always was).
std::pair<size_t, size_t> CommandText(const std::vector<std::string>& words) {
  auto program = [](absl::string_view word) {
    return word.substr(word.rfind('/') + 1);
  };
  size_t first = 0;  // past assignments in front (NVTE_FLASH_ATTN=0 echo)
  while (first < words.size() &&
         words[first].find('=') != std::string::npos) {
    ++first;
  }
  if (first < words.size() &&
      (program(words[first]) == "echo" || program(words[first]) == "printf")) {
    return {first + 1, words.size()};
  }
  for (size_t i = 0; i + 2 < words.size(); ++i) {
    const absl::string_view shell = program(words[i]);
    if (shell != "bash" && shell != "sh" && shell != "dash" &&
        shell != "zsh" && shell != "ksh") {
      continue;
    }
    size_t j = i + 1;
    for (; j + 1 < words.size() && absl::StartsWith(words[j], "-"); ++j) {
      if (!absl::StartsWith(words[j], "--") &&
          absl::StrContains(words[j], "c")) {
        return {j + 1, j + 2};
      }
    }
    i = j - 1;  // its options are no shell's name: each word seen once
  }
  return {0, 0};
}

// The commands of `line`, the shell text a command holds (CommandText)
// read as the commands it runs, after that command's other words (which
// may set TE's variables: `srun --export=ALL,NVTE_FLASH_ATTN=0 bash -c`),
// nested `depth` deep at most: each level is words of the one above, so
// the work is at most that many times the line's.
constexpr int kMaxShellStrings = 4;
absl::Status AppendCommands(absl::string_view line, int depth,
                            std::vector<std::vector<std::string>>& out) {
  absl::StatusOr<std::vector<std::vector<std::string>>> commands =
      ShellLineCommands(line);
  if (!commands.ok()) return commands.status();
  for (std::vector<std::string>& command : *commands) {
    const auto [first, last] = depth < kMaxShellStrings
                                   ? CommandText(command)
                                   : std::pair<size_t, size_t>{0, 0};
    if (first == last) {
      out.push_back(std::move(command));
      continue;
    }
    std::string text;
    for (size_t i = first; i < last; ++i) {
      if (i > first) text += ' ';
      text += command[i];
    }
    command.erase(command.begin() + first, command.begin() + last);
    // Its TE variables (`srun --export=ALL,NVTE_FLASH_ATTN=0 bash -c`,
    // `env NVTE_...=0 sh -c`) are the environment of what the text runs.
    std::vector<std::string> environment = {"export"};
    for (const std::string& word : command) {
      if (IsTeAssignmentWord(word)) environment.push_back(word);
    }
    out.push_back(std::move(command));
    if (environment.size() > 1) out.push_back(std::move(environment));
    // Text that is not a line bash would run (an echo's "it's done") is
    // printed, or fails where it runs: no command of it is a candidate.
    std::vector<std::vector<std::string>> inner;
    if (AppendCommands(text, depth + 1, inner).ok()) {
      for (std::vector<std::string>& c : inner) out.push_back(std::move(c));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<std::vector<std::string>>>
LaunchCommandsOfShellLine(absl::string_view line) {
  std::vector<std::vector<std::string>> commands;
  if (absl::Status s = AppendCommands(line, 0, commands); !s.ok()) return s;
  std::vector<std::vector<std::string>> launches;
  if (commands.empty()) return launches;
  std::vector<int64_t> scores;
  size_t best = 0;
  for (size_t i = 0; i < commands.size(); ++i) {
    scores.push_back(LaunchScore(commands[i]));
    if (scores[i] > scores[best]) best = i;
  }
  // The script a command runs (ScriptEnd), as a name.
  auto script = [](const std::vector<std::string>& words) {
    const size_t end = ScriptEnd(words);
    if (end == 0) return std::string();
    const std::string& w = words[end - 1];
    return w.substr(w.rfind('/') + 1);
  };
  const std::string best_script = script(commands[best]);
  std::vector<bool> wanted(commands.size(), false);
  wanted[best] = true;
  size_t count = 1;
  for (size_t i = 0; i < commands.size() && scores[best] > 0; ++i) {
    if (i == best || scores[i] == 0) continue;
    if (scores[i] == scores[best] ||
        (!best_script.empty() && script(commands[i]) == best_script)) {
      if (count++ == kMaxLaunchesALine) {
        return absl::InvalidArgumentError(absl::StrCat(
            "launch: more than ", kMaxLaunchesALine,
            " launches on one line"));
      }
      wanted[i] = true;
    }
  }
  // Each after the TE variables the commands before it export (`export
  // NVTE_FLASH_ATTN=0; torchrun ...`, the Slurm hook's job environment in
  // front of the line, a shell's environment before its -c string; not
  // one command's own `NVTE_FLASH_ATTN=1 cd $DIR`, which bash gives that
  // command alone), gathered in one pass; the strongest first.
  std::vector<std::string> assigned;
  for (size_t i = 0; i < commands.size(); ++i) {
    if (wanted[i]) {
      std::vector<std::string> words = assigned;
      words.insert(words.end(), commands[i].begin(), commands[i].end());
      launches.insert(i == best ? launches.begin() : launches.end(),
                      std::move(words));
    }
    if (commands[i].empty() || commands[i][0] != "export") continue;
    for (const std::string& word : commands[i]) {
      if (IsTeAssignmentWord(word)) assigned.push_back(word);
    }
  }
  return launches;
}

absl::StatusOr<MegatronLaunch> ParseMegatronLaunch(
    const std::vector<std::string>& argv, const v1::ModelConfig* fill_model) {
  // Errors and notes quote the launch's words (a value Megatron does not
  // take, a path, a layout): each line is bounded whatever a word's
  // length, so that what the Slurm hook relays from inside slurmctld, and
  // what a check prints, is too.
  absl::StatusOr<MegatronLaunch> launch = ReadLaunch(argv, fill_model);
  if (!launch.ok()) {
    return absl::Status(launch.status().code(),
                        ClippedLines(launch.status().message(),
                                     kMaxLaunchMessageLineBytes));
  }
  for (std::string& note : launch->notes) {
    note = ClippedLines(note, kMaxLaunchMessageLineBytes);
  }
  return launch;
}

absl::Status RefuseUnreviewedArguments(const MegatronLaunch& launch) {
  if (!launch.unreviewed_script.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        launch.unreviewed_script,
        ": not a Megatron-LM entry point memgate was reviewed against: "
        "refused, as this site asks (--refuse-unreviewed): memgate models "
        "pretrain_gpt.py's GPT model and cannot tell what this script "
        "builds"));
  }
  if (launch.unreviewed_count == 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      UnreviewedText(launch),
      ", which memgate was reviewed against: refused, as this site asks "
      "(--refuse-unreviewed): memgate cannot tell whether ",
      launch.unreviewed_count == 1 ? "it changes" : "one changes",
      " memory"));
}

bool HasMegatronArguments(const std::vector<std::string>& argv) {
  for (const std::string& word : argv) {
    if (!absl::StartsWith(word, "--")) continue;
    std::string name = word.substr(2, word.find('=') == std::string::npos
                                          ? std::string::npos
                                          : word.find('=') - 2);
    absl::StrReplaceAll({{"_", "-"}}, &name);
    if (MegatronMarkers().count(name)) return true;
  }
  return false;
}

}  // namespace memgate
