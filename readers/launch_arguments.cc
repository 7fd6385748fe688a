#include "readers/launch_arguments.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "estimator/clipped_text.h"
#include "readers/megatron_argument_names.h"
#include "readers/megatron_arguments.h"

namespace memgate {
namespace {

// Arguments that take a value: the memory-relevant ones of Megatron-LM
// (megatron_arguments.h) and torchrun's GPU count.
bool TakesValue(const std::string& name) {
  if (name == "nnodes" || name == "nproc-per-node") return true;
  const MegatronArgument* a = FindMegatronArgument(name);
  return a != nullptr && a->takes_value;
}

bool IsSwitch(const std::string& name) {
  const MegatronArgument* a = FindMegatronArgument(name);
  return a != nullptr && !a->takes_value;
}

// Megatron arguments with nargs='*' / '+': every word up to the next
// option is a value (`--recompute-modules core_attn mlp`).
bool TakesManyValues(const std::string& name) {
  return name == "recompute-modules" || name == "cp-comm-type" ||
         name == "rampup-batch-size" ||
         name == "hierarchical-context-parallel-sizes" ||
         name == "ddp-param-name-patterns-for-fp32-local-accumulation" ||
         name == "moe-router-load-balancing-type" ||
         name == "moe-aux-loss-coeff";
}

// Every NAME=VALUE of `word` for the TransformerEngine attention
// variables, where NAME starts the word or follows ',' or '=' (srun
// --export=ALL,NAME=0; --env=NAME=0), its value up to the next ',' or
// shell separator (`bash -c "export NAME=0; torchrun ..."`), quotes
// around it removed.
// Only the last assignment counts, and only its first kMaxTeValueBytes
// are kept (TE reads a whole number; a longer value is refused as none),
// so a hostile word costs one search a name, never a copy an occurrence.
constexpr size_t kMaxTeValueBytes = 64;
void ReadTeAttentionAssignments(absl::string_view word,
                                std::map<std::string, std::string>& env) {
  for (const char* name : kTeVariables) {
    const std::string key = absl::StrCat(name, "=");
    size_t last = absl::string_view::npos;
    for (size_t at = word.rfind(key); at != absl::string_view::npos;
         at = at == 0 ? absl::string_view::npos : word.rfind(key, at - 1)) {
      if (at == 0 || word[at - 1] == ',' || word[at - 1] == '=') {
        last = at;
        break;
      }
    }
    if (last == absl::string_view::npos) continue;
    absl::string_view value = word.substr(last + key.size());
    value = value.substr(0, value.find_first_of(",;&|"));
    while (!value.empty() && (value.front() == '\'' || value.front() == '"')) {
      value.remove_prefix(1);
    }
    while (!value.empty() && (value.back() == '\'' || value.back() == '"')) {
      value.remove_suffix(1);
    }
    // One byte past the bound, so that the reader refuses it.
    env[name] = std::string(value.substr(0, kMaxTeValueBytes + 1));
  }
}

// Bytes no argument name holds, which a launch's word holds where shell
// syntax was glued to an argument (`--bf16;`) and quoted with it, or left
// by a reader that did not split the shell's syntax off. (A blank is
// left to Megatron: "--arg with spaces" is an argument argparse refuses.)
constexpr char kShellSyntax[] = ";&|<>()'\"\\";

// A word the shell expands when the command runs, among the arguments
// after `anchor` (the script, or the first argument): `why` it may supply
// arguments. Hostile words are echoed a line's worth.
constexpr size_t kEchoed = 64;
absl::Status HiddenWord(absl::string_view word, absl::string_view anchor,
                        absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(
      "launch: '", Clipped(word, kEchoed), "' after ",
      Clipped(anchor, kEchoed), why,
      "when the command runs, which memgate cannot read (any of them may "
      "change memory): give memgate the launch as it will run, expanded, or "
      "check it where it runs (memgate exec)"));
}

absl::Status HiddenArguments(absl::string_view word, absl::string_view anchor) {
  return HiddenWord(word, anchor,
                    " is a shell expansion that supplies arguments only ");
}

// `word` follows --`name`, which memgate does not know: it may be that
// argument's value or, after a switch, more arguments.
absl::Status HiddenAfterUnknown(absl::string_view word, absl::string_view name,
                                absl::string_view anchor) {
  return HiddenWord(
      word, anchor,
      absl::StrCat(" follows --", Clipped(name, kEchoed),
                   ", an argument memgate does not know, so it may be that "
                   "argument's value or arguments the shell supplies "));
}

// Whether a word the shell expands names arguments: the script's own
// ("$@", $*) or a variable named for them ($EXTRA_ARGS, ${TRAIN_OPTS},
// $FLAGS, $MODEL_OPTIONS, $EXTRA, $PARAMS), as launch scripts name what
// they append to a command line.
bool NamedAsArguments(absl::string_view word) {
  for (size_t dollar = word.find('$'); dollar != absl::string_view::npos;
       dollar = word.find('$', dollar + 1)) {
    size_t begin = dollar + 1;
    if (begin < word.size() && word[begin] == '{') ++begin;
    if (begin < word.size() && (word[begin] == '@' || word[begin] == '*')) {
      return true;
    }
    size_t end = begin;
    while (end < word.size() &&
           (absl::ascii_isalnum(static_cast<unsigned char>(word[end])) ||
            word[end] == '_')) {
      ++end;
    }
    const std::string name =
        absl::AsciiStrToUpper(word.substr(begin, end - begin));
    for (absl::string_view marker :
         {"ARGS", "OPTS", "FLAGS", "OPTIONS", "EXTRA", "PARAMS"}) {
      if (absl::StrContains(name, marker)) return true;
    }
  }
  return false;
}

// `word`, among the values of Megatron's list --`name`, names arguments.
absl::Status HiddenAmongValues(absl::string_view word, absl::string_view name,
                               absl::string_view anchor) {
  return HiddenWord(
      word, anchor,
      absl::StrCat(" among the values of --", Clipped(name, kEchoed),
                   " is named as arguments the shell supplies "));
}

}  // namespace

absl::Status Bad(absl::string_view arg, absl::string_view rule) {
  return absl::InvalidArgumentError(absl::StrCat("--", arg, ": ", rule));
}

std::string Unquoted(absl::string_view text) {
  if (text.size() >= 2 && (text.front() == '"' || text.front() == '\'') &&
      text.back() == text.front()) {
    text = text.substr(1, text.size() - 2);
  }
  return std::string(text);
}

bool ExpandsAtRunTime(absl::string_view word) {
  return word.find_first_of("$`") != absl::string_view::npos;
}

namespace {

// Whether `word` is --NAME (or --NAME=...) for one of Megatron-LM's own
// arguments, which begin the arguments of a launch that names no script.
// torchrun's --nnodes and --nproc-per-node, which memgate's table reads
// too, are the launcher's.
bool IsMegatronArgumentWord(absl::string_view word) {
  if (!absl::StartsWith(word, "--")) return false;
  word.remove_prefix(2);
  std::string name(word.substr(0, word.find('=')));
  absl::StrReplaceAll({{"_", "-"}}, &name);
  return name != "nnodes" && name != "nproc-per-node" &&
         IsMegatronArgumentName(name);
}


// Arguments beyond Megatron-LM's own parser that change memory, and why:
// Megatron-DeepSpeed's switches to DeepSpeed's engine (its
// deepspeed.add_config_arguments; DeepSpeed-Ulysses' sequence
// parallelism), whose ZeRO stages, buckets, offloads, optimizer and
// activation partitioning replace Megatron-LM's distributed optimizer and
// DDP (the fork's other DeepSpeed arguments act only under --deepspeed);
// and ModelOpt's, which pretrain_gpt.py adds when nvidia-modelopt is
// installed (megatron/post_training/arguments.py), where they change the
// model or what trains beside it.
constexpr absl::string_view kDeepSpeedEngine =
    "Megatron-DeepSpeed's switch to DeepSpeed's engine (ZeRO stages, "
    "buckets and offloads, its optimizer, activation partitioning, "
    "Ulysses): not modelled (memgate models Megatron-LM's distributed "
    "optimizer and DDP)";
// `modelopt_builder`: read only by ModelOpt's model builder, or by nothing
// pretrain_gpt.py runs (ActsOnlyUnderModelOpt).
struct OutsideRefusal {
  absl::string_view name, why;
  bool modelopt_builder = false;
};
constexpr OutsideRefusal kOutsideRefused[] = {
    {"deepspeed", kDeepSpeedEngine},
    {"deepspeed-config", kDeepSpeedEngine},
    {"deepscale", kDeepSpeedEngine},
    {"deepscale-config", kDeepSpeedEngine},
    {"ds-sequence-parallel-size", kDeepSpeedEngine},
    {"export-kd-teacher-load",
     "ModelOpt's distillation (pretrain_gpt.py with nvidia-modelopt): a "
     "teacher model beside the student on the same GPUs, its weights, its "
     "activations and the distillation loss: not modelled"},
    {"export-force-local-attention",
     "ModelOpt's switch to Megatron's local attention, which keeps the s x "
     "s scores: not modelled here (the same attention under "
     "--transformer-impl local is)",
     true},
    {"export-model-type",
     "ModelOpt's model type (HybridModel builds Mamba layers): not "
     "modelled",
     true},
    {"export-quant-cfg",
     "ModelOpt's quantization-aware training (fake-quantized linear layers "
     "and their quantizers): not modelled",
     true},
    {"export-real-quant-cfg",
     "ModelOpt's real quantization of the weights: not modelled",
     true},
    {"export-qk-l2-norm",
     "ModelOpt's Llama 4 L2 norm on Q and K: not modelled here (Megatron's "
     "--qk-l2-norm is)",
     true},
    {"export-moe-apply-probs-on-input",
     "ModelOpt's Llama 4 expert scaling on the input: not modelled",
     true},
    {"enable-gpt-oss",
     "ModelOpt's GPT-OSS mode (attention sinks, sliding windows, YaRN): not "
     "modelled",
     true},
    {"modelopt-enabled",
     "a ModelOpt model (its own layer spec and state): not modelled"},
};

// Launcher words that take no value (torchrun's, python's), so that a
// word after one of them is positional: the script.
bool IsLauncherSwitch(absl::string_view word) {
  for (absl::string_view s :
       {"--standalone", "--no-python", "--no_python", "--run-path",
        "--run_path", "--module", "-u", "-O", "-OO", "-B", "-E", "-s", "-S",
        "-I", "-q"}) {
    if (word == s) return true;
  }
  return false;
}

// Launcher options that take a value (torchrun's, python's and the Slurm
// and MPI launchers' commonest), so that the word after one is not the
// script. After an option in neither list the word may be either: it
// names the script only where no other word does (ScriptWord).
bool IsLauncherValueOption(absl::string_view word) {
  for (absl::string_view s :
       {// torchrun (torch/distributed/run.py), both spellings
        "--nnodes", "--nproc-per-node", "--nproc_per_node", "--node-rank",
        "--node_rank", "--master-addr", "--master_addr", "--master-port",
        "--master_port", "--rdzv-backend", "--rdzv_backend",
        "--rdzv-endpoint", "--rdzv_endpoint", "--rdzv-id", "--rdzv_id",
        "--rdzv-conf", "--rdzv_conf", "--max-restarts", "--max_restarts",
        "--monitor-interval", "--monitor_interval", "--start-method",
        "--start_method", "--role", "--log-dir", "--log_dir", "-r",
        "--redirects", "-t", "--tee", "--local-ranks-filter",
        "--local_ranks_filter", "--local-addr", "--local_addr",
        "--logs-specs", "--logs_specs",
        // python
        "-W", "-X",
        // srun, mpirun
        "-N", "-n", "-c", "-p", "-A", "-J", "-o", "-e", "-w", "--nodes",
        "--ntasks", "--ntasks-per-node", "--cpus-per-task", "--gpus",
        "--gpus-per-node", "--gpus-per-task", "--partition", "--account",
        "--time", "--job-name", "--output", "--error", "--nodelist",
        "--container-image", "--container-mounts", "--container-workdir",
        "--container-name", "--mpi", "--cpu-bind", "-np", "-H", "--host",
        "-x", "--map-by", "--bind-to"}) {
    if (word == s) return true;
  }
  return false;
}

// Programs that run the script rather than being it: launchers, Python
// and the wrappers batch scripts put before them.
bool IsLauncherProgram(absl::string_view word) {
  const absl::string_view base = word.substr(word.rfind('/') + 1);
  if (absl::StartsWith(base, "python")) return true;  // python3, python3.11
  for (absl::string_view p :
       {"torchrun", "srun", "mpirun", "mpiexec", "accelerate", "numactl",
        "taskset", "time", "env", "nohup", "stdbuf", "exec", "nsys", "uv",
        "apptainer", "singularity"}) {
    if (base == p) return true;
  }
  return false;
}

// NAME=value: an environment assignment, not a positional word.
bool IsAssignment(absl::string_view word) {
  const size_t eq = word.find('=');
  if (eq == 0 || eq == absl::string_view::npos) return false;
  for (char c : word.substr(0, eq)) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_') {
      return false;
    }
  }
  return true;
}

// In a command that names no .py, the words before its first Megatron
// argument are the launcher's; the last of them that is positional (no
// option, no option's value, no assignment, no launcher program) names
// the script: `torchrun --nproc-per-node $GPUS $SCRIPT --num-layers ...`,
// `torchrun pretrain_mamba --num-layers ...`, `bash train.sh
// --num-layers ...`. A word after an option memgate does not know is that
// option's value or, after a switch, the script (`torchrun
// --virtual-local-rank pretrain_mamba ...`): the script where no other
// word is, so that an unknown switch cannot hide one. "" when none is.
std::string ScriptWord(const std::vector<std::string>& argv, size_t begin,
                       size_t arguments_begin) {
  std::string script, after_unknown_option;
  for (size_t i = begin; i < arguments_begin; ++i) {
    const std::string& word = argv[i];
    if (absl::StartsWith(word, "-") || IsAssignment(word) ||
        IsLauncherProgram(word)) {
      continue;
    }
    // python's -m names a module to run: torch's launcher (whose own
    // positional word follows), or the script itself (torchrun's -m is a
    // switch before it).
    if (i > begin && argv[i - 1] == "-m") {
      if (!absl::StartsWith(word, "torch.distributed.")) script = word;
      continue;
    }
    const bool after_option = i > begin &&
                              absl::StartsWith(argv[i - 1], "-") &&
                              argv[i - 1].find('=') == std::string::npos;
    if (!after_option || IsLauncherSwitch(argv[i - 1])) {
      script = word;
    } else if (!IsLauncherValueOption(argv[i - 1])) {
      after_unknown_option = word;
    }
  }
  return script.empty() ? after_unknown_option : script;
}

}  // namespace

absl::string_view OutsideArgumentRefusal(absl::string_view name) {
  for (const OutsideRefusal& refusal : kOutsideRefused) {
    if (name == refusal.name) return refusal.why;
  }
  return "";
}

bool ActsOnlyUnderModelOpt(absl::string_view name) {
  for (const OutsideRefusal& refusal : kOutsideRefused) {
    if (name == refusal.name) return refusal.modelopt_builder;
  }
  return false;
}

size_t ScriptEnd(const std::vector<std::string>& argv) {
  for (size_t i = 0; i < argv.size(); ++i) {
    if (absl::EndsWith(argv[i], ".py")) return i + 1;
  }
  return 0;
}

int64_t LaunchScore(const std::vector<std::string>& argv) {
  const size_t script = ScriptEnd(argv);
  int64_t table = 0;
  bool any = false;
  // The launcher's words before the script are not the script's.
  for (size_t i = script; i < argv.size(); ++i) {
    absl::string_view word = argv[i];
    if (!absl::StartsWith(word, "--")) continue;
    word.remove_prefix(2);
    any = true;
    if (FindMegatronArgument(word.substr(0, word.find('='))) != nullptr) {
      ++table;
    }
  }
  return 4 * table + (any ? 2 : 0) + (script > 0 ? 1 : 0);
}

absl::Status Arguments::Parse(const std::vector<std::string>& argv) {
  // Words before the script are the launcher's (torchrun, python -m),
  // whose assignments the launch may run with.
  const size_t script = ScriptEnd(argv);
  // Where Megatron's arguments begin: past the script, or in a command
  // that names no .py (`torchrun $SCRIPT --num-layers ...`, or the
  // arguments alone) at its first Megatron argument, where the launcher's
  // words end; argv.size() when there is none.
  size_t arguments_begin = script;
  if (script > 0) {
    script_ = argv[script - 1];
  } else {
    arguments_begin = argv.size();
    for (size_t i = 0; i < argv.size(); ++i) {
      if (IsMegatronArgumentWord(argv[i])) {
        arguments_begin = i;
        break;
      }
    }
    script_ = ScriptWord(argv, 0, arguments_begin);
  }
  // What a hidden word is reported after: the script, or the first of
  // the arguments.
  const std::string anchor = script > 0 ? script_
                             : arguments_begin < argv.size()
                                 ? argv[arguments_begin]
                                 : std::string();
  // Words before the script (or the arguments) may set TE's variables.
  const size_t launcher_end = script > 0 ? script - 1 : arguments_begin;
  // After the script: how many of the words that follow are the values of
  // the argument before them (one the table does not read): none after a
  // switch, one after Megatron's single-valued ones, any number after its
  // lists and after a name memgate does not know.
  constexpr size_t kAny = SIZE_MAX;
  size_t values_left = 0;
  // The argument whose values the words being read may be (one the table
  // does not read), or "".
  std::string values_of;
  for (size_t i = 0; i < argv.size(); ++i) {
    absl::string_view word = argv[i];
    if (i < launcher_end) ReadTeAttentionAssignments(word, environment_);
    const bool among_arguments = i >= arguments_begin;
    if (!absl::StartsWith(word, "--") || word.size() == 2) {
      if (among_arguments && ExpandsAtRunTime(word)) {
        if (values_left == 0) return HiddenArguments(word, anchor);
        // An argument memgate does not know may be a switch, so the
        // expansion may be further arguments rather than its value.
        if (!IsMegatronArgumentName(values_of)) {
          return HiddenAfterUnknown(word, values_of, anchor);
        }
        // Megatron's lists (--data-path) take any number of words; one
        // named as arguments is not a path.
        if (values_left == kAny && NamedAsArguments(word)) {
          return HiddenAmongValues(word, values_of, anchor);
        }
      }
      if (values_left > 0 && values_left != kAny) --values_left;
      continue;
    }
    values_left = 0;
    values_of.clear();
    word.remove_prefix(2);
    std::string name(word.substr(0, word.find('=')));
    if (among_arguments && ExpandsAtRunTime(name)) {
      return HiddenArguments(argv[i], anchor);
    }
    if (among_arguments &&
        name.find_first_of(kShellSyntax) != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat(
          "launch: '", Clipped(argv[i], kEchoed),
          "' holds shell syntax (an operator or a quote) in an argument's "
          "name: no argument of Megatron-LM's has one, and Megatron "
          "refuses the launch (the shell, reading it unquoted, would end "
          "the command there: `--bf16;`); put a blank between an argument "
          "and the shell's syntax"));
    }
    // torchrun takes --nproc_per_node and --nproc-per-node alike.
    absl::StrReplaceAll({{"_", "-"}}, &name);
    if (among_arguments && after_core_0_12_0_.empty() &&
        IsArgumentAfterCore0120(name)) {
      after_core_0_12_0_ = name;
    }
    const bool inline_value = word.find('=') != absl::string_view::npos;
    std::string value;
    if (TakesValue(name)) {
      if (inline_value) {
        value = std::string(word.substr(word.find('=') + 1));
      } else if (i + 1 < argv.size()) {
        value = argv[++i];
        while (TakesManyValues(name) && i + 1 < argv.size() &&
               !absl::StartsWith(argv[i + 1], "--")) {
          absl::StrAppend(&value, " ", argv[++i]);
        }
      } else {
        return Bad(name, "needs a value");
      }
    } else if (IsSwitch(name)) {
      value = "true";
    } else {
      // Not memory-relevant. Megatron's own names were reviewed as such;
      // others (a newer Megatron's, a fork's) were not, and are named.
      if (!inline_value && !IsMegatronSwitch(name)) {
        values_left = IsMegatronArgumentName(name) &&
                              !IsMegatronListArgument(name)
                          ? 1
                          : kAny;
        values_of = name;
      }
      if (among_arguments && !OutsideArgumentRefusal(name).empty() &&
          std::find(refused_outside_.begin(), refused_outside_.end(),
                    name) == refused_outside_.end()) {
        refused_outside_.push_back(name);
      }
      if (among_arguments && name == "load") loads_checkpoint_ = true;
      // Named as far as a message quotes a name (its length is the
      // launch's).
      const std::string shown = Clipped(name, kQuotedNameBytes);
      if (among_arguments && !IsMegatronArgumentName(name) &&
          std::find(unreviewed_.begin(), unreviewed_.end(), shown) ==
              unreviewed_.end()) {
        if (unreviewed_.size() < kMaxUnreviewedNamed) {
          unreviewed_.push_back(shown);
        }
        ++unreviewed_count_;
      }
      continue;
    }
    auto [it, inserted] = values_.emplace(name, value);
    if (!inserted && it->second != value) {
      it->second = value;  // argparse: the last one
      if (std::find(overridden_.begin(), overridden_.end(), name) ==
          overridden_.end()) {
        if (overridden_.size() < kMaxUnreviewedNamed) {
          overridden_.push_back(name);
        }
        ++overridden_count_;
      }
    }
  }
  return absl::OkStatus();
}

bool Arguments::HasAnyOf(const std::set<std::string>& names) const {
  for (const std::string& n : names) {
    if (Has(n)) return true;
  }
  return false;
}

std::string Arguments::Text(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? std::string() : it->second;
}

namespace {

// Why a number memgate needs is a word the shell was to expand ($MBS,
// ${TP}, `...`): empty where it is not. A Slurm hook substitutes a batch
// script's variables only where the script sets them to one literal value
// (memgate_launch.lua find_launches); any other stays as written.
std::string ShellWordHint(absl::string_view value) {
  if (value.find('$') == absl::string_view::npos &&
      value.find('`') == absl::string_view::npos) {
    return "";
  }
  return ": a shell expansion whose value is decided when the command "
         "runs (a Slurm hook reads a batch script's variable only where "
         "the script sets it to one literal value that the job's "
         "environment does not contradict, not under a condition, in a "
         "loop or from its arguments); give the number, or check the "
         "launch where it runs (memgate exec)";
}

}  // namespace

absl::StatusOr<double> Arguments::Decimal(const std::string& name,
                                          double fallback) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  double x = 0;
  if (!absl::SimpleAtod(it->second, &x) || !(x >= 0)) {
    return Bad(name, absl::StrCat("must be a non-negative number (got ",
                                  Quoted(it->second), ")",
                                  ShellWordHint(it->second)));
  }
  return x;
}

absl::StatusOr<uint32_t> Arguments::Number(const std::string& name,
                                           uint32_t fallback) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  uint32_t n = 0;
  if (it->second.empty() || !absl::ascii_isdigit(it->second[0]) ||
      !absl::SimpleAtoi(it->second, &n)) {
    // Digits that do not fit are a number, only too large for memgate.
    const bool digits = !it->second.empty() &&
                        std::all_of(it->second.begin(), it->second.end(),
                                    [](char c) {
                                      return absl::ascii_isdigit(
                                          static_cast<unsigned char>(c));
                                    });
    return Bad(name, absl::StrCat(digits ? "must be at most 4294967295"
                                         : "must be a whole number",
                                  " (got ", Quoted(it->second), ")",
                                  ShellWordHint(it->second)));
  }
  return n;
}

// Megatron's generalized TP (--tensor-parallel-num-weight-shards and its
// expert twin, arguments.py resolve_tensor_parallel_weight_shards): more
// shards than the TP size add a gtp_remat axis to the world (parallel_state
// world_size = tp x dp x pp x cp x ep x gtp_remat), so DP and every
// sharded term would be wrong; equal to the TP size it is Megatron's
// default and changes nothing.
absl::Status RequireUnshardedWeights(const Arguments& args, const char* name,
                                     const char* size_name, uint32_t size) {
  if (!args.Has(name)) return absl::OkStatus();
  MEMGATE_ASSIGN_OR_RETURN(shards, args.Number(name, size));
  if (shards == size) return absl::OkStatus();
  return Bad(name, absl::StrCat(
                       "only ", size_name, " (", size,
                       ") is modelled; ", shards,
                       " shards turn on generalized TP, a parallel axis of "
                       "its own whose weights are re-gathered per use"));
}

}  // namespace memgate
