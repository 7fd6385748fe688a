#ifndef MEMGATE_READERS_MEGATRON_ARGS_H_
#define MEMGATE_READERS_MEGATRON_ARGS_H_

// Jobs from the command that launches them: a torchrun (or python -m
// torch.distributed.run, srun, ...) line running Megatron-LM's
// pretrain_gpt.py. memgate reads Megatron's own argument names and applies
// Megatron's own defaults, so the estimate is of the job that will run.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/memgate.pb.h"

namespace memgate {

// How Megatron-LM settles the global batch of a launch (arguments.py
// validate_args, core/num_microbatches_calculator.py). It decides the
// micro-batches a step has, and so the activations a pipeline stage holds.
enum class GlobalBatchRule {
  kAsGiven,          // --global-batch-size, divisible by b x d
  kMegatronDefault,  // absent: b x d, one micro-batch a step
  kRoundedDown,      // --decrease-batch-size-if-needed: to a multiple of b x d
  kScheduled,        // --step-batch-size-schedule: unknown, left 0 (the most)
};

struct MegatronLaunch {
  v1::Job job;  // model, parallel, training; num_gpus when torchrun says
  // Applied by ApplyMegatronGlobalBatch once the job's GPU count is final.
  GlobalBatchRule global_batch_rule = GlobalBatchRule::kAsGiven;
  // What memgate inferred or changed, for the user to see (vocab padding,
  // Megatron defaults applied...).
  std::vector<std::string> notes;
  // Arguments after the script that are neither memory-relevant nor
  // Megatron-LM's at the reviewed revision (a newer release's, a fork's,
  // a script's own): the first Arguments::kMaxUnreviewedNamed, and how
  // many. A note names them; RefuseUnreviewedArguments makes them an error.
  std::vector<std::string> unreviewed;
  size_t unreviewed_count = 0;
  // The launch's script where it is not Megatron-LM's pretrain_gpt.py nor
  // another of its entry points (a site's own train.py): read as building
  // pretrain_gpt.py's GPT model, which a note says; RefuseUnreviewedArguments
  // makes it an error too. Empty otherwise.
  std::string unreviewed_script;
  // The pipeline-split arguments the launch gives: plans say their splits
  // in those forms (PlanRequest.launch_split).
  v1::LaunchSplit split_arguments;
  // Arguments the launch gives that must equal its own layout's sizes
  // (--tensor-parallel-num-weight-shards equal to TP): a plan, whose
  // candidates change those sizes, cannot keep them.
  std::vector<std::string> tied_to_layout;
  // Its attention runs context parallelism over an all-to-all only
  // (--softmax-type off-by-one / learnable in cuDNN's fused attention):
  // plans give their CP layouts --cp-comm-type a2a.
  bool context_parallel_all_to_all_only = false;
};

// For sites that refuse what memgate has not reviewed (check
// --refuse-unreviewed, the preflight API's refuse_unreviewed): an
// INVALID_ARGUMENT naming the launch's unreviewed arguments, any one of
// which may change memory, and its unreviewed script; OK when it has
// neither.
absl::Status RefuseUnreviewedArguments(const MegatronLaunch& launch);

// The launch commands of `line`, one line of shell text (a batch
// script's, as `check --launch-lines` and the Slurm hook read it), their
// words as the program receives them (shell_line.h). Of several commands
// (`cd $DIR && torchrun ...`, `python prep.py; torchrun ... 2>&1 | tee
// $LOG`), the one given the most arguments of memgate's table after its
// script, then one given any --argument, then one naming a .py (the first
// of equals, or the first command where none scores) comes first; after
// it every other that scores as much or runs the same script (`torchrun
// pretrain_gpt.py ... && torchrun pretrain_gpt.py ...`: each is checked,
// the worst decides, as for a script's lines), at most
// kMaxLaunchesALine. TransformerEngine's variables exported by the
// commands before one (`export NVTE_FLASH_ATTN=0; torchrun ...`; not an
// earlier command's own `NVTE_...=0 cd $DIR`) go in front, as its
// environment. A shell run on a string (`srun bash -c "cd $DIR &&
// torchrun ..."`) runs that string's commands, in the environment its
// command's words give (srun's --export, env's), and what `echo`
// or `printf` prints may be run (`echo "torchrun ..." | bash`): those
// commands are candidates too, after the rest of theirs (4 strings deep
// at most; text that is no line bash would run, none). INVALID_ARGUMENT
// for a quote or a substitution the line itself leaves open, or more
// launches than the bound.
inline constexpr size_t kMaxLaunchesALine = 64;
absl::StatusOr<std::vector<std::vector<std::string>>>
LaunchCommandsOfShellLine(absl::string_view line);

// `argv` is the launch, word by word, as the program receives it (a
// command's argv: `memgate exec`'s, `memgate check -- ...`'s after the
// shell read the line, the preflight API's; "|" or "#1" there is an
// argument like any other). `fill_model` (may be null) supplies
// what the arguments leave out, e.g. the vocabulary a tokenizer implies.
// Unknown arguments are ignored (and named in a note). INVALID_ARGUMENT
// names the Megatron or torchrun argument that is missing, malformed or
// contradictory, a word the shell expands into arguments when the
// command runs (launch_arguments.h), Megatron-LM's entry points other
// than pretrain_gpt.py, and TransformerEngine variables memgate refuses.
absl::StatusOr<MegatronLaunch> ParseMegatronLaunch(
    const std::vector<std::string>& argv, const v1::ModelConfig* fill_model);

// Sets job.training.global_batch_size as Megatron does under `rule`, for
// the job's final GPU count and layout (memgate's flags may give them after
// the launch is read), and says so in `notes`: Megatron's default b x d
// where the job has no global batch, or the given one rounded down. A job
// whose data-parallel size is not whole is left to validation to name.
// INVALID_ARGUMENT where rounding down leaves no micro-batch.
absl::Status ApplyMegatronGlobalBatch(GlobalBatchRule rule, v1::Job& job,
                                      std::vector<std::string>& notes);

// The launch as memgate reads it when the command runs with `environment`
// (NAME=VALUE strings, as environ holds them): TransformerEngine's
// variables among them (launch_arguments.h kTeVariables: its attention
// switches, NVTE_MASKED_SOFTMAX_FUSION, NVTE_BACKWARD_OVERRIDE) go in
// front as assignments, which the launch's own (`env NVTE_FUSED_ATTN=1
// torchrun ...`) override.
std::vector<std::string> WithTeEnvironment(
    const std::vector<std::string>& launch,
    const std::vector<std::string>& environment);

// A job given by flags or a file whose command runs with `environment`
// (NAME=VALUE strings: `memgate exec` of an opaque command, the preflight
// API's PreflightCheck with PreflightOptions.environment): the
// TransformerEngine variables among them applied to job.training as a
// launch's would be under --attention-backend auto (FlashAttention and
// cuDNN's fused attention off: ATTENTION_KERNEL_UNFUSED; FlashAttention
// off: flash_attention_disabled; deterministic: te_deterministic_attention;
// NVTE_MASKED_SOFTMAX_FUSION=0: te_masked_softmax_fusion_disabled), with
// notes. The attention's are not applied to Megatron's local attention or
// Gemma 2's soft-capped scores, which TE does not run. INVALID_ARGUMENT
// where they contradict the job's own kernel (FLASH under both off,
// UNFUSED under NVTE_UNFUSED_ATTN=0), where int() refuses a value, and
// for NVTE_BACKWARD_OVERRIDE as te_backward_override.h says.
absl::Status ApplyTeEnvironment(
    const std::vector<std::string>& environment, v1::Job& job,
    std::vector<std::string>& notes);

// Whether `argv` carries any of Megatron-LM's model or parallelism
// arguments (--num-layers, --seq-length, --tensor-model-parallel-size,
// ...): a launch memgate can read, rather than an opaque command such as
// `bash train.sh`.
bool HasMegatronArguments(const std::vector<std::string>& argv);

}  // namespace memgate

#endif  // MEMGATE_READERS_MEGATRON_ARGS_H_
