#ifndef MEMGATE_READERS_LAUNCH_ARGUMENTS_H_
#define MEMGATE_READERS_LAUNCH_ARGUMENTS_H_

// The values of a launch's memory-relevant Megatron-LM arguments (those in
// megatron_arguments.cc's table) and torchrun's GPU count, read word by
// word. Internal to the Megatron launch readers (megatron_args.cc,
// megatron_moe_args.cc).

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "estimator/clipped_text.h"

namespace memgate {

// INVALID_ARGUMENT "--arg: rule".
absl::Status Bad(absl::string_view arg, absl::string_view rule);

// Clipped (estimator/clipped_text.h) bounds a user's word quoted in a
// message or note.

// `text` without the one pair of quotes a batch script may leave around a
// value ("'([0]*3+[1]*58)'" from a launch read out of the script).
std::string Unquoted(absl::string_view text);

// Whether the shell rewrites `word` when the command runs: a parameter
// expansion ($NAME, ${NAME[@]}, "$@") or a command substitution ($(...),
// `...`).
bool ExpandsAtRunTime(absl::string_view word);

// One past the script of a command's argv (its first word ending in
// .py), or 0 where none names one.
size_t ScriptEnd(const std::vector<std::string>& argv);

// How strongly one command's argv reads as a Megatron-LM launch, to pick
// the launch among a line's commands: 4 for each argument of memgate's
// table after the script (the first word ending in .py, where one does),
// 2 where it gives any --argument there, 1 where it names a .py.
int64_t LaunchScore(const std::vector<std::string>& argv);

class Arguments {
 public:
  // Reads every argument the table knows (and torchrun's GPU count);
  // others are skipped. An argument given again takes its last value, as
  // argparse (Megatron's and torchrun's parser) does: a candidate's
  // arguments appended to its launch replace the launch's own; such
  // arguments are listed in overridden().
  // A word after the script that no argument takes as its value and that
  // the shell expands when the command runs ($EXTRA_ARGS, ${ARGS[@]},
  // "$@", $(cat args), `...`) hides arguments memgate cannot read: it is
  // INVALID_ARGUMENT naming the word, and so is one right after an
  // argument memgate does not know (it may be a switch, the word more
  // arguments), and one among a Megatron list's values (--data-path) that
  // is named as arguments ("$@", $EXTRA_ARGS, ${TRAIN_OPTS}). Without a
  // .py the arguments begin at the first of Megatron-LM's argument names;
  // the launcher's words before them are not checked, except that the
  // last positional one names the script (`torchrun $SCRIPT --num-layers
  // ...`, `bash train.sh --num-layers ...`; a word after a launcher option
  // memgate does not know only where no other word does).
  // `argv` is one command's, as the program receives it (a line of shell
  // text is split first: shell_line.h): every word is an argument, "|"
  // and "#1" too. An argument whose name holds shell syntax (`--bf16;`,
  // glued; a quote) or an expansion (`--$FLAG`) is INVALID_ARGUMENT
  // naming it: no Megatron argument has one.
  absl::Status Parse(const std::vector<std::string>& argv);

  bool Has(const std::string& name) const { return values_.count(name) > 0; }
  bool HasAnyOf(const std::set<std::string>& names) const;

  // The text given for `name`, or "".
  std::string Text(const std::string& name) const;
  const std::map<std::string, std::string>& values() const { return values_; }

  // The decimal given for `name`, or `fallback` when absent.
  absl::StatusOr<double> Decimal(const std::string& name,
                                 double fallback) const;

  // The whole number given for `name`, or `fallback` when absent.
  absl::StatusOr<uint32_t> Number(const std::string& name,
                                  uint32_t fallback) const;

  // The first argument after the script that only Megatron-LM after
  // core 0.12.0 accepts (IsArgumentAfterCore0120), or "": it dates the
  // launch's release.
  const std::string& after_core_0_12_0() const { return after_core_0_12_0_; }

  // The word naming the script the launch runs (the first *.py of its
  // command: "pretrain_gpt.py", "examples/multimodal/train.py"; without
  // one, the launcher's last positional word: "$SCRIPT", "train.sh"), or
  // "".
  const std::string& script() const { return script_; }

  // Arguments after the script (the first word ending in .py; from the
  // first of Megatron-LM's argument names when there is none) that are
  // neither in the table nor Megatron-LM's (megatron_argument_names.h):
  // the first kMaxUnreviewedNamed, in order, and how many there were.
  static constexpr size_t kMaxUnreviewedNamed = 8;
  const std::vector<std::string>& unreviewed() const { return unreviewed_; }
  size_t unreviewed_count() const { return unreviewed_count_; }

  // TransformerEngine's variables (kTeVariables) that
  // words before the script set, the last one of each: shell prefix
  // assignments and env's (`NVTE_FUSED_ATTN=0 torchrun ...`), and lists
  // such as srun's --export=ALL,NVTE_FLASH_ATTN=0 or a container's
  // --env=NVTE_FLASH_ATTN=0. `memgate exec` puts its own environment's
  // in front (exec_command.cc).
  const std::map<std::string, std::string>& environment() const {
    return environment_;
  }

  // The arguments after the script, outside Megatron-LM's own parser,
  // that change memory in a way memgate does not model
  // (OutsideArgumentRefusal: Megatron-DeepSpeed's --deepspeed, ModelOpt's
  // --export-kd-teacher-load, ...), each once, in order: at most the
  // table's few names.
  const std::vector<std::string>& refused_outside() const {
    return refused_outside_;
  }

  // Whether the launch names a checkpoint to --load (ModelOpt's layer
  // spec comes with one that holds ModelOpt's state).
  bool loads_checkpoint() const { return loads_checkpoint_; }

  // Arguments given more than once with different values (the last
  // taken): the first kMaxUnreviewedNamed, in order, and how many.
  const std::vector<std::string>& overridden() const { return overridden_; }
  size_t overridden_count() const { return overridden_count_; }

 private:
  std::map<std::string, std::string> values_;
  std::map<std::string, std::string> environment_;
  std::vector<std::string> unreviewed_;
  size_t unreviewed_count_ = 0;
  std::vector<std::string> overridden_;
  size_t overridden_count_ = 0;
  std::string after_core_0_12_0_;
  std::string script_;
  std::vector<std::string> refused_outside_;
  bool loads_checkpoint_ = false;
};

// Why `name`, an argument outside Megatron-LM's own parser (a fork's, or
// ModelOpt's that pretrain_gpt.py adds when nvidia-modelopt is installed),
// is refused: what it changes that memgate does not model; "" for one
// memgate has no reason to refuse.
absl::string_view OutsideArgumentRefusal(absl::string_view name);

// Whether `name` is one of ModelOpt's arguments that only ModelOpt's model
// builder reads (megatron/post_training/model_builder.py: its layer spec,
// attention, quantized layers, GPT-OSS mode) or nothing in pretrain_gpt.py
// reads (--export-quant-cfg, the quantize and finetune examples'):
// pretrain_gpt.py builds that model only when ModelOpt is enabled
// (--modelopt-enabled, --export-kd-teacher-load, or a --load checkpoint
// with ModelOpt's state: post_training/utils.py maybe_enable_modelopt),
// and without it such an argument changes nothing.
bool ActsOnlyUnderModelOpt(absl::string_view name);

// The environment variables of TransformerEngine's that change memory, in
// the order they are reported: its attention kernel and softmax
// (te_attention_environment.h) and the fp8 backward's precision
// (te_backward_override.h).
inline constexpr const char* kTeVariables[] = {
    "NVTE_FLASH_ATTN",
    "NVTE_FLASH_ATTN_V2",
    "NVTE_FUSED_ATTN",
    "NVTE_UNFUSED_ATTN",
    "NVTE_ALLOW_NONDETERMINISTIC_ALGO",
    "NVTE_MASKED_SOFTMAX_FUSION",
    "NVTE_BACKWARD_OVERRIDE"};
// The one of them that is a word, not a whole number.
inline constexpr char kTeBackwardOverride[] = "NVTE_BACKWARD_OVERRIDE";

// Refuses `name` (--tensor-parallel-num-weight-shards or its expert twin)
// unless it equals `size`, the TP size it shards over (`size_name` says
// which): more shards are Megatron's generalized TP, not modelled.
absl::Status RequireUnshardedWeights(const Arguments& args, const char* name,
                                     const char* size_name, uint32_t size);

#define MEMGATE_ASSIGN_OR_RETURN(lhs, expr)     \
  auto lhs##_or = (expr);                       \
  if (!lhs##_or.ok()) return lhs##_or.status(); \
  const auto lhs = *lhs##_or

}  // namespace memgate

#endif  // MEMGATE_READERS_LAUNCH_ARGUMENTS_H_
