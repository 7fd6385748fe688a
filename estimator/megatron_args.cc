#include "estimator/megatron_args.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "estimator/catalog.h"

namespace memgate {
namespace {

// Arguments that take a value (Megatron-LM core_r0.8+ and torchrun).
const std::set<std::string>& ValueArguments() {
  static const auto* names = new std::set<std::string>{
      "num-layers", "hidden-size", "ffn-hidden-size", "num-attention-heads",
      "num-query-groups", "vocab-size", "make-vocab-size-divisible-by",
      "seq-length", "micro-batch-size", "global-batch-size",
      "tensor-model-parallel-size", "pipeline-model-parallel-size",
      "context-parallel-size", "num-layers-per-virtual-pipeline-stage",
      "num-virtual-stages-per-pipeline-rank",
      "decoder-first-pipeline-num-layers", "decoder-last-pipeline-num-layers",
      "recompute-granularity", "tokenizer-type", "tokenizer-model", "nnodes",
      "nproc-per-node"};
  return *names;
}

// Switches that matter to memory.
const std::set<std::string>& SwitchArguments() {
  static const auto* names = new std::set<std::string>{
      "group-query-attention", "untie-embeddings-and-output-weights",
      "swiglu", "sequence-parallel", "use-distributed-optimizer",
      "recompute-activations", "fp16", "bf16"};
  return *names;
}

// Arguments that make the launch a Megatron one.
const std::set<std::string>& MegatronMarkers() {
  static const auto* names = new std::set<std::string>{
      "num-layers", "hidden-size", "num-attention-heads", "seq-length",
      "micro-batch-size", "tensor-model-parallel-size",
      "pipeline-model-parallel-size", "context-parallel-size"};
  return *names;
}

absl::Status Bad(absl::string_view arg, absl::string_view rule) {
  return absl::InvalidArgumentError(absl::StrCat("--", arg, ": ", rule));
}

class Arguments {
 public:
  absl::Status Parse(const std::vector<std::string>& argv) {
    for (size_t i = 0; i < argv.size(); ++i) {
      absl::string_view word = argv[i];
      if (!absl::StartsWith(word, "--") || word.size() == 2) continue;
      word.remove_prefix(2);
      std::string name(word.substr(0, word.find('=')));
      // torchrun takes --nproc_per_node and --nproc-per-node alike.
      absl::StrReplaceAll({{"_", "-"}}, &name);
      const bool inline_value = word.find('=') != absl::string_view::npos;
      std::string value;
      if (ValueArguments().count(name)) {
        if (inline_value) {
          value = std::string(word.substr(word.find('=') + 1));
        } else if (i + 1 < argv.size()) {
          value = argv[++i];
        } else {
          return Bad(name, "needs a value");
        }
      } else if (SwitchArguments().count(name)) {
        value = "true";
      } else {
        continue;  // not ours: torchrun's or the trainer's other settings
      }
      auto [it, inserted] = values_.emplace(name, value);
      if (!inserted && it->second != value) {
        return Bad(name, absl::StrCat("given twice with different values ('",
                                      it->second, "' and '", value, "')"));
      }
    }
    return absl::OkStatus();
  }

  bool Has(const std::string& name) const { return values_.count(name) > 0; }

  // The text given for `name`, or "".
  std::string Text(const std::string& name) const {
    auto it = values_.find(name);
    return it == values_.end() ? std::string() : it->second;
  }
  bool HasAnyOf(const std::set<std::string>& names) const {
    for (const std::string& n : names) {
      if (Has(n)) return true;
    }
    return false;
  }

  // The whole number given for `name`, or `fallback` when absent.
  absl::StatusOr<uint32_t> Number(const std::string& name,
                                  uint32_t fallback) const {
    auto it = values_.find(name);
    if (it == values_.end()) return fallback;
    uint32_t n = 0;
    if (it->second.empty() || !absl::ascii_isdigit(it->second[0]) ||
        !absl::SimpleAtoi(it->second, &n)) {
      return Bad(name, absl::StrCat("must be a whole number (got '",
                                    it->second, "')"));
    }
    return n;
  }

 private:
  std::map<std::string, std::string> values_;
};

#define MEMGATE_ASSIGN_OR_RETURN(lhs, expr) \
  auto lhs##_or = (expr);                   \
  if (!lhs##_or.ok()) return lhs##_or.status(); \
  const auto lhs = *lhs##_or

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

  if (launch_defines_model && !args.Has("swiglu")) {
    return Bad("swiglu",
               "missing: memgate models Llama (SwiGLU FFN); a launch without "
               "--swiglu trains a GPT-style MLP");
  }
  uint32_t ffn = m.ffn_hidden_size();
  if (args.Has("ffn-hidden-size")) {
    MEMGATE_ASSIGN_OR_RETURN(given, args.Number("ffn-hidden-size", 0));
    ffn = given;
  } else if (launch_defines_model || ffn == 0) {
    // Megatron's default for SwiGLU: 2/3 of 4h, rounded down to 64.
    ffn = static_cast<uint32_t>((4ull * hidden * 2 / 3) / 64 * 64);
    launch.notes.push_back(absl::StrCat(
        "--ffn-hidden-size not given: Megatron's SwiGLU default ", ffn));
  }
  m.set_ffn_hidden_size(ffn);

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

  if (launch_defines_model) {
    // Megatron ties the embedding and the output layer unless told not to.
    m.set_tie_word_embeddings(
        !args.Has("untie-embeddings-and-output-weights"));
  }
  return absl::OkStatus();
}

// Megatron takes the vocabulary from the tokenizer when --vocab-size is
// absent. The tokenizers Llama launches name, and failing that a catalog
// model with exactly these dimensions, say what it is; 0 when nothing does.
uint32_t VocabularyFromTokenizer(const Arguments& args,
                                 const v1::ModelConfig& m,
                                 std::vector<std::string>& notes) {
  const std::string type = args.Text("tokenizer-type");
  const std::string model = absl::AsciiStrToLower(args.Text("tokenizer-model"));
  uint32_t vocab = 0;
  if (type == "Llama3Tokenizer" || absl::StrContains(model, "llama-3") ||
      absl::StrContains(model, "llama3")) {
    vocab = 128256;
  } else if (type == "Llama2Tokenizer" || absl::StrContains(model, "llama-2")) {
    vocab = 32000;
  }
  if (vocab != 0) {
    notes.push_back(absl::StrCat("vocabulary ", vocab,
                                 " from the tokenizer (no --vocab-size)"));
    return vocab;
  }
  for (const std::string& name : ModelNames()) {
    const v1::ModelConfig* known = LookupModel(name);
    if (known->num_layers() == m.num_layers() &&
        known->hidden_size() == m.hidden_size() &&
        known->ffn_hidden_size() == m.ffn_hidden_size() &&
        known->num_attention_heads() == m.num_attention_heads() &&
        known->num_query_groups() == m.num_query_groups()) {
      notes.push_back(absl::StrCat("vocabulary ", known->vocab_size(),
                                   " of ", name,
                                   ", whose dimensions these are (no "
                                   "--vocab-size)"));
      return known->vocab_size();
    }
  }
  return 0;
}

// Megatron pads the vocabulary to a multiple of
// --make-vocab-size-divisible-by (default 128) times TP.
absl::Status PadVocabulary(const Arguments& args, MegatronLaunch& launch) {
  v1::ModelConfig& m = *launch.job.mutable_model();
  MEMGATE_ASSIGN_OR_RETURN(given, args.Number("vocab-size", m.vocab_size()));
  const uint32_t vocab =
      given != 0 ? given : VocabularyFromTokenizer(args, m, launch.notes);
  if (vocab == 0) {
    return Bad("vocab-size",
               "missing: Megatron takes it from the tokenizer; give "
               "--vocab-size in the launch or --model=NAME");
  }
  MEMGATE_ASSIGN_OR_RETURN(divisible,
                           args.Number("make-vocab-size-divisible-by", 128));
  if (divisible == 0) {
    return Bad("make-vocab-size-divisible-by", "must be at least 1");
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
  m.set_vocab_size(static_cast<uint32_t>(padded));
  return absl::OkStatus();
}

absl::Status FillParallel(const Arguments& args, MegatronLaunch& launch) {
  if (args.Has("num-layers-per-virtual-pipeline-stage") ||
      args.Has("num-virtual-stages-per-pipeline-rank")) {
    return Bad("num-layers-per-virtual-pipeline-stage",
               "interleaved pipeline schedules are not modelled (memgate "
               "assumes 1F1B)");
  }
  v1::ParallelConfig& p = *launch.job.mutable_parallel();
  MEMGATE_ASSIGN_OR_RETURN(tp, args.Number("tensor-model-parallel-size", 1));
  MEMGATE_ASSIGN_OR_RETURN(pp, args.Number("pipeline-model-parallel-size", 1));
  MEMGATE_ASSIGN_OR_RETURN(cp, args.Number("context-parallel-size", 1));
  // Zero would reach divisions (vocabulary padding, stage splits) before
  // the estimator's own validation; Megatron refuses it too.
  if (tp == 0) return Bad("tensor-model-parallel-size", "must be at least 1");
  if (pp == 0) return Bad("pipeline-model-parallel-size", "must be at least 1");
  if (cp == 0) return Bad("context-parallel-size", "must be at least 1");
  p.set_tensor_parallel(tp);
  p.set_pipeline_parallel(pp);
  p.set_context_parallel(cp);
  p.set_sequence_parallel(args.Has("sequence-parallel"));
  p.set_distributed_optimizer(args.Has("use-distributed-optimizer"));

  if (args.Has("decoder-first-pipeline-num-layers") ||
      args.Has("decoder-last-pipeline-num-layers")) {
    const uint32_t layers = launch.job.model().num_layers();
    MEMGATE_ASSIGN_OR_RETURN(first,
                             args.Number("decoder-first-pipeline-num-layers",
                                         0));
    MEMGATE_ASSIGN_OR_RETURN(last,
                             args.Number("decoder-last-pipeline-num-layers", 0));
    if (pp < 2) {
      return Bad("decoder-first-pipeline-num-layers",
                 "needs --pipeline-model-parallel-size of 2 or more");
    }
    // Stages without an explicit count share the remaining layers evenly.
    const uint32_t explicit_stages = (first ? 1 : 0) + (last ? 1 : 0);
    const uint64_t assigned = static_cast<uint64_t>(first) + last;
    const uint32_t others = pp - explicit_stages;
    if (assigned > layers || (others == 0 && assigned != layers) ||
        (others > 0 && (layers - assigned) % others != 0)) {
      return Bad("decoder-first-pipeline-num-layers",
                 absl::StrCat("the remaining ", layers - std::min<uint64_t>(
                                                             assigned, layers),
                              " layers do not split evenly over ", others,
                              " other stages"));
    }
    const uint32_t each = others ? (layers - assigned) / others : 0;
    for (uint32_t s = 0; s < pp; ++s) {
      uint32_t n = each;
      if (s == 0 && first) n = first;
      if (s + 1 == pp && last) n = last;
      p.add_layers_per_stage(n);
    }
  }
  return absl::OkStatus();
}

absl::Status FillTraining(const Arguments& args, MegatronLaunch& launch) {
  v1::TrainingConfig& t = *launch.job.mutable_training();
  MEMGATE_ASSIGN_OR_RETURN(seq, args.Number("seq-length", 0));
  if (seq == 0) return Bad("seq-length", "missing");
  MEMGATE_ASSIGN_OR_RETURN(mbs, args.Number("micro-batch-size", 1));
  MEMGATE_ASSIGN_OR_RETURN(gbs, args.Number("global-batch-size", 0));
  t.set_seq_length(seq);
  t.set_micro_batch_size(mbs);
  t.set_global_batch_size(gbs);
  t.set_precision(v1::PRECISION_BF16_FP32_GRADS);
  if (args.Has("recompute-activations") || args.Has("recompute-granularity")) {
    launch.notes.push_back(
        "activation recomputation is not modelled: the estimate is an upper "
        "bound");
  }
  return absl::OkStatus();
}

absl::Status FillGpuCount(const Arguments& args, MegatronLaunch& launch) {
  if (!args.Has("nproc-per-node")) return absl::OkStatus();
  auto per_node = args.Number("nproc-per-node", 0);
  if (!per_node.ok() || *per_node == 0) {
    return Bad("nproc-per-node",
               "must be a number of GPUs (or give memgate --gpus)");
  }
  auto nodes = args.Number("nnodes", 1);
  if (!nodes.ok() || *nodes == 0) {
    return Bad("nnodes",
               "must be a fixed node count; elastic ranges like 1:4 are not "
               "supported (or give memgate --gpus)");
  }
  const uint64_t gpus = static_cast<uint64_t>(*nodes) * *per_node;
  if (gpus > UINT32_MAX) return Bad("nnodes", "too many GPUs");
  launch.job.set_num_gpus(static_cast<uint32_t>(gpus));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<MegatronLaunch> ParseMegatronLaunch(
    const std::vector<std::string>& argv, const v1::ModelConfig* fill_model) {
  Arguments args;
  if (absl::Status s = args.Parse(argv); !s.ok()) return s;
  if (!args.HasAnyOf(MegatronMarkers())) {
    return absl::InvalidArgumentError(
        "launch: no Megatron-LM arguments found (--num-layers, "
        "--seq-length, --tensor-model-parallel-size, ...)");
  }
  MegatronLaunch launch;
  if (absl::Status s = FillModel(args, fill_model, launch); !s.ok()) return s;
  for (auto fill : {FillParallel, PadVocabulary, FillTraining, FillGpuCount}) {
    if (absl::Status s = fill(args, launch); !s.ok()) return s;
  }
  return launch;
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
