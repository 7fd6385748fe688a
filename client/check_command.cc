#include "client/check_command.h"

#include <algorithm>
#include <optional>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "client/call_watchdog.h"
#include "client/exit_codes.h"
#include "client/flags.h"
#include "client/job_flags.h"
#include "client/json_output.h"
#include "client/preflight.h"
#include "client/remote_client.h"
#include "client/user_path.h"
#include "estimator/report.h"
#include "readers/file_util.h"
#include "readers/job_reader.h"
#include "readers/megatron_args.h"

namespace memgate::cli {
namespace {

constexpr char kUsage[] =
    "usage: memgate check [job flags | --job=FILE] [--server=HOST:PORT] "
    "[-- <launch command>]\n\n"
    "Decides whether a training job may run under the 80% rule: admitted "
    "when its\nper-GPU peak is at most the threshold (default 80%) of GPU "
    "memory.\nThe job comes from the same flags as `memgate estimate`, from "
    "--job (a\nmemgate.v1.Job in JSON or text format), or from a "
    "torchrun/Megatron-LM launch\nafter `--` (job flags then fill or "
    "override it; --gpu is required).\nTransformerEngine's variables "
    "(NVTE_FLASH_ATTN=0 ...) are read from the\nlaunch's words "
    "before its script, never from memgate's own environment\n(memgate "
    "exec reads that).\n\n"
    "Exit codes: 0 admit, 1 refuse, 2 invalid input, 3 service unavailable\n"
    "(--on-unavailable=admit turns 3 into 0, and says so).";

// A batch script (the Slurm hook) may hold several launches; more than
// this is not a training script.
constexpr size_t kMaxLaunches = 64;
constexpr size_t kMaxLaunchesFileBytes = 16 << 20;

struct CheckFlags {
  JobFlags job;
  std::optional<std::string> job_file, launches_file, launch_lines, server,
      on_unavailable, format;
  std::optional<std::string> request_id, tls_ca, tls_cert, tls_key;
  std::optional<double> timeout, threshold;
  std::optional<bool> admit_yellow, refuse_unreviewed;
  // Not a flag: the environment an opaque command will run with (memgate
  // exec), whose TransformerEngine attention switches apply to a job given
  // by flags or --job (a launch carries them in its words instead).
  std::vector<std::string> environment;

  void Register(FlagSet& f) {
    job.Register(f);
    f.String("job", "FILE", "the job as a memgate.v1.Job (JSON or text)",
             &job_file);
    f.String("launch-lines", "FILE",
             "check every launch in FILE, one a line as shell text, as a "
             "batch script holds it (split as bash splits it), at most 64: "
             "exit 1 if any is refused, else 2 if any is invalid, else 3 "
             "if any could not be checked",
             &launch_lines);
    f.String("launches-file", "FILE",
             "--launch-lines by its earlier name, read the same way",
             &launches_file);
    f.String("server", "HOST:PORT",
             "ask this memgate_server (default: estimate in-process)",
             &server);
    f.Double("timeout", "SECONDS", "deadline for the server (default 2)",
             &timeout);
    f.String("on-unavailable", "refuse|admit",
             "when the server cannot answer: refuse (exit 3, default) or "
             "admit (exit 0, with a warning)",
             &on_unavailable);
    f.Double("threshold", "F",
             "GREEN limit as a fraction of GPU memory (default 0.8, or the "
             "server's)",
             &threshold);
    f.Bool("admit-yellow",
           "embedded only: admit YELLOW jobs with a warning (a server "
           "applies its own policy)",
           &admit_yellow);
    f.Bool("refuse-unreviewed",
           "refuse a launch with arguments memgate has not reviewed (not "
           "Megatron-LM's at the reviewed revision: a newer release's, a "
           "fork's, a script's own) or run by a script other than "
           "Megatron-LM's, or a --model-config with keys it has not (or "
           "another family's that its model_type does not read), as "
           "invalid (exit 2): one may change memory (default: read past "
           "them, with a note)",
           &refuse_unreviewed);
    f.String("request-id", "ID", "echoed in the decision and the server's log",
             &request_id);
    f.String("tls-ca", "FILE", "PEM CA of the server (turns on TLS)",
             &tls_ca);
    f.String("tls-cert", "FILE", "PEM client certificate (mutual TLS)",
             &tls_cert);
    f.String("tls-key", "FILE", "PEM key of --tls-cert", &tls_key);
    f.String("format", "text|json",
             "text (default): the verdict line, then the breakdown; json: "
             "the Decision message",
             &format);
  }
};

// A launch and a job file that describe the same job must agree: where
// both set a value, it must be the same one.
absl::Status CrossCheck(const v1::Job& from_file, const v1::Job& from_launch) {
  struct Field {
    const char* name;
    uint64_t file, launch;
  };
  const v1::ModelConfig& fm = from_file.model();
  const v1::ModelConfig& lm = from_launch.model();
  const Field fields[] = {
      {"model.num_layers", fm.num_layers(), lm.num_layers()},
      {"model.hidden_size", fm.hidden_size(), lm.hidden_size()},
      {"model.ffn_hidden_size", fm.ffn_hidden_size(), lm.ffn_hidden_size()},
      {"model.num_attention_heads", fm.num_attention_heads(),
       lm.num_attention_heads()},
      {"model.num_query_groups", fm.num_query_groups(),
       lm.num_query_groups()},
      {"parallel.tensor_parallel", from_file.parallel().tensor_parallel(),
       from_launch.parallel().tensor_parallel()},
      {"parallel.pipeline_parallel", from_file.parallel().pipeline_parallel(),
       from_launch.parallel().pipeline_parallel()},
      {"parallel.context_parallel", from_file.parallel().context_parallel(),
       from_launch.parallel().context_parallel()},
      {"training.micro_batch_size", from_file.training().micro_batch_size(),
       from_launch.training().micro_batch_size()},
      {"training.seq_length", from_file.training().seq_length(),
       from_launch.training().seq_length()},
      {"training.global_batch_size", from_file.training().global_batch_size(),
       from_launch.training().global_batch_size()},
      {"num_gpus", from_file.num_gpus(), from_launch.num_gpus()},
  };
  for (const Field& f : fields) {
    if (f.file != 0 && f.launch != 0 && f.file != f.launch) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--job: says ", f.name, " = ", f.file, " but the launch says ",
          f.launch, "; the job file and the launch must describe one job"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::Job> JobFromLaunchAndFlags(
    const std::vector<std::string>& launch, const CheckFlags& flags,
    std::vector<std::string>& notes) {
  std::optional<v1::Job> from_file;
  if (flags.job_file) {
    absl::StatusOr<v1::Job> job = ReadJobFile(UserPath(*flags.job_file));
    if (!job.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--job: ", job.status().message()));
    }
    from_file = *std::move(job);
  }
  absl::StatusOr<std::optional<v1::ModelConfig>> fill =
      flags.job.ModelToFill(&notes);
  if (!fill.ok()) return fill.status();
  if (from_file && !*fill && from_file->has_model()) {
    *fill = from_file->model();  // what the launch leaves out, the file says
  }
  absl::StatusOr<MegatronLaunch> parsed =
      ParseMegatronLaunch(launch, *fill ? &**fill : nullptr);
  if (!parsed.ok()) return parsed.status();
  if (flags.job.refuse_unreviewed) {
    if (absl::Status s = RefuseUnreviewedArguments(*parsed); !s.ok()) return s;
  }
  notes.insert(notes.end(), parsed->notes.begin(), parsed->notes.end());
  v1::Job job = parsed->job;
  if (from_file) {
    if (absl::Status s = CrossCheck(*from_file, job); !s.ok()) return s;
    if (job.num_gpus() == 0) job.set_num_gpus(from_file->num_gpus());
    if (!job.has_accelerator()) *job.mutable_accelerator() = from_file->accelerator();
    if (job.training().global_batch_size() == 0) {
      job.mutable_training()->set_global_batch_size(
          from_file->training().global_batch_size());
    }
  }
  if (absl::Status s = flags.job.ApplyTo(job, /*refuse_conflicts=*/true);
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          ApplyMegatronGlobalBatch(parsed->global_batch_rule, job, notes);
      !s.ok()) {
    return s;
  }
  if (!flags.job.gpu && !flags.job.gpu_memory_gib &&
      !(from_file && from_file->has_accelerator())) {
    return absl::InvalidArgumentError(
        "--gpu: required (a launch command does not say which GPU)");
  }
  if (job.num_gpus() == 0) {
    return absl::InvalidArgumentError(
        "--gpus: required (the launch has no torchrun count of GPUs "
        "memgate can read: no --nproc-per-node, or one settled only when "
        "the command runs)");
  }
  return job;
}

absl::StatusOr<v1::Job> BuildJob(const std::vector<std::string>& launch,
                                 const CheckFlags& flags,
                                 std::vector<std::string>& notes) {
  if (!launch.empty()) return JobFromLaunchAndFlags(launch, flags, notes);
  absl::StatusOr<v1::Job> job;
  if (!flags.job_file) {
    job = flags.job.ToJob(&notes);
  } else {
    job = ReadJobFile(UserPath(*flags.job_file));
    if (!job.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--job: ", job.status().message()));
    }
    if (absl::Status s = flags.job.ApplyTo(*job, false); !s.ok()) return s;
  }
  if (job.ok() && !flags.environment.empty()) {
    if (absl::Status s =
            ApplyTeEnvironment(flags.environment, *job, notes);
        !s.ok()) {
      return s;
    }
  }
  return job;
}

absl::StatusOr<PreflightOptions> OptionsFrom(const CheckFlags& flags) {
  PreflightOptions options;
  if (flags.server) options.server = *flags.server;
  if (flags.timeout) {
    if (!(*flags.timeout > 0) || *flags.timeout > 3600) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--timeout: must be above 0 and at most 3600 seconds (got ",
          *flags.timeout, ")"));
    }
    options.timeout = absl::Seconds(*flags.timeout);
  }
  if (flags.threshold) {
    if (!(*flags.threshold > 0 && *flags.threshold <= 1)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--threshold: must be a fraction in (0, 1] (got ", *flags.threshold,
          ")"));
    }
    options.threshold = *flags.threshold;
  }
  options.admit_yellow = flags.admit_yellow.value_or(false);
  if (flags.request_id) options.request_id = *flags.request_id;
  if (flags.tls_ca) options.tls_ca_file = UserPath(*flags.tls_ca);
  if (flags.tls_cert) options.tls_cert_file = UserPath(*flags.tls_cert);
  if (flags.tls_key) options.tls_key_file = UserPath(*flags.tls_key);
  return options;
}

void PrintDecision(const v1::Decision& d,
                   const std::vector<std::string>& notes, bool json,
                   std::ostream& out, std::ostream& err) {
  if (json) {
    for (const std::string& n : notes) err << "memgate check: note: " << n << "\n";
    out << ToJson(d);
    return;
  }
  out << d.reason() << "\n";
  out << "  peak stage " << d.estimate().peak().stage() << ": "
      << BreakdownLine(d.estimate().peak()) << "\n";
  for (const std::string& w : d.warnings()) out << "  warning: " << w << "\n";
  if (d.fits_without_dataloader_mask()) {
    out << "  fits without the dataloader's attention mask "
           "(--no-create-attention-mask-in-dataloader; FlashAttention does "
           "not read it)\n";
  }
  if (d.fits_with_fused_swiglu()) {
    out << "  fits with Megatron's fused SwiGLU kernel (its default with "
           "--swiglu, 6 B a unit of FFN width where the paper's count keeps "
           "8; --fused-swiglu)\n";
  }
  if (d.fits_with_flex_attention()) {
    out << "  fits where Megatron-Bridge runs Gemma 2's soft-capped scores "
           "through FlexAttention (recent releases, no dataloader mask, no "
           "attention dropout; --attention=flash)\n";
  }
  if (d.fits_with_fused_attention()) {
    out << "  fits with TransformerEngine's fused attention (FlashAttention "
           "or cuDNN: no s x s scores; --attention-backend auto with "
           "NVTE_FLASH_ATTN and NVTE_FUSED_ATTN unset; --attention=flash)\n";
  }
  if (d.fits_with_recompute_modules_size() > 0) {
    // Cheaper than full recomputation: one more forward of a few modules.
    out << "  fits with selective recomputation ("
        << SelectiveRecomputeArguments(d.fits_with_recompute_modules())
        << ")\n";
  }
  if (const uint32_t n = d.min_recompute_layers_that_fit(); n != 0) {
    // The least change to the job itself: same GPUs, same layout.
    out << absl::StrFormat(
        "  fits with recomputation: %u layer%s of each (virtual) pipeline "
        "stage (--recompute-granularity full --recompute-method block "
        "--recompute-num-layers %u)\n",
        n, n == 1 ? "" : "s", n);
  }
  for (const v1::Candidate& c : d.suggestions()) {
    // The variant (experts, uneven stages, interleaving, recomputation)
    // tells apart two suggestions of one TP, CP, PP and MBS.
    out << absl::StrFormat(
        "  fits instead on %u GPUs: TP=%u CP=%u PP=%u MBS=%u (%s%.2f GiB, "
        "speed %.2f of the best)\n",
        c.num_gpus(), c.tensor_parallel(), c.context_parallel(),
        c.pipeline_parallel(), c.micro_batch_size(), CandidateVariant(c),
        c.peak_gib(), c.relative_speed());
  }
  if (d.suggestions_size() > 0 &&
      d.estimate().job().training().dataloader_attention_mask()) {
    // Plans do not count the mask this launch keeps (planner.h).
    out << "  (those layouts are planned without the dataloader's attention "
           "mask: launch them with --no-create-attention-mask-in-dataloader)"
           "\n";
  }
  if (d.suggestions_size() > 0) {
    // Plans shard the optimizer and split activations as their candidates'
    // arguments say (report.cc); a job without them holds more.
    const v1::ParallelConfig& par = d.estimate().job().parallel();
    std::vector<std::string> planned_with;
    if (!par.distributed_optimizer()) {
      planned_with.push_back("--use-distributed-optimizer");
    }
    if (!par.sequence_parallel()) {
      planned_with.push_back("--sequence-parallel (where TP > 1)");
    }
    if (!planned_with.empty()) {
      out << "  (those layouts are planned with "
          << absl::StrJoin(planned_with, " and ")
          << ", which this job does not use)\n";
    }
  }
  if (d.min_gpus_that_fit() != 0) {
    out << "  or this layout on " << d.min_gpus_that_fit()
        << " GPUs (more data-parallel ranks shard the optimizer further)\n";
  }
  for (const std::string& n : notes) out << "  note: " << n << "\n";
  out << "\n" << FormatEstimateTable(d.estimate());
}

// One job's decision, from the parsed flags and (when not empty) a launch.
int CheckOne(const CheckFlags& check, const std::vector<std::string>& launch,
             std::ostream& out, std::ostream& err) {
  const std::string format = check.format.value_or("text");
  const std::string on_unavailable = check.on_unavailable.value_or("refuse");
  absl::StatusOr<PreflightOptions> options = OptionsFrom(check);
  std::vector<std::string> notes;
  absl::StatusOr<v1::Job> job =
      options.ok() ? BuildJob(launch, check, notes) : options.status();
  absl::StatusOr<v1::Decision> decision =
      absl::UnknownError("no decision yet");
  if (!job.ok()) {
    decision = job.status();
  } else {
    std::optional<CallWatchdog> watchdog;
    if (!options->server.empty()) {
      // The call has its deadline; whatever else could hold the check
      // (a scheduler's hook waits on it) ends a grace period after it.
      const absl::Duration grace = absl::Seconds(5);
      watchdog.emplace(
          options->timeout + grace,
          absl::StrCat("memgate check: memgate service at ", options->server,
                       ": no answer within ",
                       absl::FormatDuration(options->timeout + grace),
                       on_unavailable == "admit"
                           ? "; admitting unchecked (--on-unavailable=admit)\n"
                           : "; refusing (--on-unavailable=refuse)\n"),
          on_unavailable == "admit" ? kExitAdmit : kExitUnavailable);
    }
    decision = PreflightCheck(*job, *options);
  }

  // A launch's job is named in the launch's own arguments (a model field
  // that --model-config fills, by the config's key), and what reading it
  // noted (a replaced argument, a default) is said too.
  auto hint = [&](absl::string_view message) {
    std::string text = check.job.WithHint(std::string(message), launch);
    for (const std::string& n : notes) absl::StrAppend(&text, "\n  note: ", n);
    return text;
  };
  if (!decision.ok()) {
    const absl::Status& s = decision.status();
    if (s.code() == absl::StatusCode::kInvalidArgument ||
        !options.ok() || options->server.empty()) {
      err << "memgate check: " << hint(s.message()) << "\n";
      return kExitInvalid;
    }
    // The service could not answer a job PreflightCheck found valid (it
    // classifies the job locally when the service does not answer: an
    // invalid one came back INVALID_ARGUMENT, above). The site's policy
    // decides.
    if (on_unavailable == "admit") {
      err << "memgate check: WARNING: " << s.message()
          << "; admitting unchecked (--on-unavailable=admit)\n";
      return kExitAdmit;
    }
    err << "memgate check: " << s.message()
        << "; refusing (--on-unavailable=refuse)\n";
    return kExitUnavailable;
  }
  PrintDecision(*decision, notes, format == "json", out, err);
  return decision->verdict() == v1::VERDICT_ADMIT ? kExitAdmit : kExitRefuse;
}

// How bad an exit code is, for the launch that decides a batch script.
int Severity(int code) {
  switch (code) {
    case kExitRefuse: return 3;
    case kExitInvalid: return 2;
    case kExitUnavailable: return 1;
    default: return 0;
  }
}

// Every launch of FILE: the deciding (worst) one's output in full, first,
// so that a hook reading the first line reads the verdict; one line for
// each other launch.
int CheckLaunchesFile(const CheckFlags& check, std::ostream& out,
                      std::ostream& err) {
  absl::StatusOr<std::string> text =
      ReadSmallFile(UserPath(*check.launches_file), kMaxLaunchesFileBytes);
  if (!text.ok()) {
    err << "memgate check: --launch-lines: " << text.status().message()
        << "\n";
    return kExitInvalid;
  }
  // Each line is shell text (a batch script's): its launch commands'
  // words as the program receives them, or why they cannot be read.
  // (A line adds at most kMaxLaunchesALine before the count is checked.)
  // line_of: each launch's line (1-based), which the deciding launch is
  // named by too: the Slurm hook tells its user which of the script's
  // conditions that line took.
  std::vector<absl::StatusOr<std::vector<std::string>>> launches;
  std::vector<size_t> line_of;
  size_t line_number = 0;
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    ++line_number;
    absl::StatusOr<std::vector<std::vector<std::string>>> commands =
        LaunchCommandsOfShellLine(line);
    if (!commands.ok()) {
      launches.push_back(commands.status());
    } else {
      for (std::vector<std::string>& words : *commands) {
        launches.push_back(std::move(words));
      }
    }
    line_of.resize(launches.size(), line_number);
    if (launches.size() > kMaxLaunches) {
      err << "memgate check: --launch-lines: more than " << kMaxLaunches
          << " launches\n";
      return kExitInvalid;
    }
  }
  if (launches.empty()) {
    err << "memgate check: --launch-lines: no launch in the file\n";
    return kExitInvalid;
  }
  struct Outcome {
    int code;
    std::string out, err;
  };
  std::vector<Outcome> outcomes;
  size_t worst = 0;
  for (size_t i = 0; i < launches.size(); ++i) {
    std::ostringstream one_out, one_err;
    int code = kExitInvalid;
    if (launches[i].ok()) {
      code = CheckOne(check, *launches[i], one_out, one_err);
    } else {
      one_err << "memgate check: " << launches[i].status().message() << "\n";
    }
    outcomes.push_back({code, one_out.str(), one_err.str()});
    if (Severity(code) > Severity(outcomes[worst].code)) worst = i;
    // A refusal decides the script whatever the rest say (no outcome is
    // worse): the rest are not checked, so that a script's work, which
    // the Slurm hook's time limit bounds, is not spent on launches that
    // cannot change the verdict (each refusal also plans what would fit),
    // and a script of many refused launches cannot run past that limit
    // into the hook's policy for an unavailable memgate.
    if (code == kExitRefuse) break;
  }
  const Outcome& decider = outcomes[worst];
  out << decider.out;
  err << decider.err;
  if (launches.size() > 1) {
    std::ostream& rest = decider.code == kExitAdmit ? out : err;
    rest << "memgate check: " << launches.size()
         << " launches in the script; the one above (launch " << worst + 1
         << ", line " << line_of[worst] << " of --launch-lines) decides:\n";
    for (size_t i = 0; i < outcomes.size(); ++i) {
      const std::string& text =
          outcomes[i].out.empty() ? outcomes[i].err : outcomes[i].out;
      rest << "  launch " << i + 1 << ": "
           << text.substr(0, std::min(text.find('\n'), size_t{300})) << "\n";
    }
    if (outcomes.size() < launches.size()) {
      rest << "  launches " << outcomes.size() + 1 << " to "
           << launches.size()
           << ": not checked (the refusal above decides the script)\n";
    }
  }
  return decider.code;
}

}  // namespace

int RunCheck(const std::vector<std::string>& args, std::ostream& out,
             std::ostream& err) {
  return RunCheck(args, {}, out, err);
}

int RunCheck(const std::vector<std::string>& args,
             const std::vector<std::string>& environment, std::ostream& out,
             std::ostream& err) {
  FlagSet flags(kUsage);
  CheckFlags check;
  check.environment = environment;
  check.Register(flags);
  std::vector<std::string> launch;
  absl::Status parsed = flags.Parse(args, &launch);
  if (flags.help_requested()) {
    out << flags.Help();
    return kExitAdmit;
  }
  check.job.refuse_unreviewed = check.refuse_unreviewed.value_or(false);
  const std::string format = check.format.value_or("text");
  const std::string on_unavailable = check.on_unavailable.value_or("refuse");
  if (parsed.ok() && format != "text" && format != "json") {
    parsed = absl::InvalidArgumentError(
        absl::StrCat("--format: must be text or json (got '", format, "')"));
  }
  if (parsed.ok() && on_unavailable != "refuse" && on_unavailable != "admit") {
    parsed = absl::InvalidArgumentError(absl::StrCat(
        "--on-unavailable: must be refuse or admit (got '", on_unavailable,
        "')"));
  }
  // The Slurm hook passes --launch-lines, which a memgate from before
  // lines were read as shell text refuses as unknown (its hook's policy
  // for an unreadable launch decides) rather than read the hook's quoted
  // words blank by blank.
  if (parsed.ok() && check.launch_lines && check.launches_file) {
    parsed = absl::InvalidArgumentError(
        "--launch-lines: give it or --launches-file (its earlier name), "
        "not both");
  }
  if (check.launch_lines) check.launches_file = check.launch_lines;
  if (parsed.ok() && check.launches_file &&
      (!launch.empty() || check.job_file)) {
    parsed = absl::InvalidArgumentError(
        "--launch-lines: give it alone, not with --job or a launch after --");
  }
  if (!parsed.ok()) {
    err << "memgate check: " << WithFlagHint(std::string(parsed.message()))
        << "\n";
    return kExitInvalid;
  }
  if (check.launches_file) return CheckLaunchesFile(check, out, err);
  return CheckOne(check, launch, out, err);
}

}  // namespace memgate::cli
