#include "client/plan_command.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/exit_codes.h"
#include "client/flags.h"
#include "client/gpus_to_fit.h"
#include "client/job_flags.h"
#include "client/json_output.h"
#include "client/plan_launch.h"
#include "client/plan_table.h"
#include "client/remote_client.h"
#include "estimator/megatron_names.h"
#include "estimator/units.h"
#include "estimator/validation.h"
#include "planner/planner.h"
#include "readers/megatron_args.h"

namespace memgate::cli {
namespace {

constexpr char kUsage[] =
    "usage: memgate plan --model=NAME|--model-config=FILE --gpu=NAME "
    "--gpus=N[,N...] --seq=N --gbs=N [--top=K] [--table] "
    "[-- <launch command>]\n\n"
    "Enumerates every valid (TP, CP, PP, MBS) for the model on the cluster, "
    "with\nthe peak memory and zone of each, ranked: layouts that fit "
    "(GREEN) first,\nthen by expected speed (GEMM efficiency, TP/CP "
    "communication, pipeline\nbubble and stage imbalance). With several GPU "
    "counts and --table, prints\nthe paper's table: rows (TP, CP, PP, MBS), "
    "columns GPU counts, cells GiB.\nWhere nothing is GREEN, a note names "
    "the first doubling of the GPU count\nat which a layout is (same global "
    "batch).\n\n"
    "After `--`, a torchrun/Megatron-LM launch is planned as that job runs: "
    "its\nmodel, precision, --seq-length, --global-batch-size and training "
    "settings\n(fp8, the optimizer: Adam, SGD, Lion or Muon, precision-aware "
    "optimizer,\noptimizer offload, dropout, selective recomputation, "
    "Megatron-FSDP) apply\nto every layout; its TP, CP, PP, EP, VP, MBS "
    "and full recomputation are\nwhat the plan searches.";

struct PlanFlags {
  JobFlags model;  // only the model and GPU flags are registered
  std::optional<std::string> gpus, format, server, precision, fsdp;
  std::optional<uint32_t> seq, gbs, top, max_mbs;
  std::optional<bool> cross_node_tp, table, recompute, interleave;
  std::optional<double> threshold, timeout;

  void Register(FlagSet& f) {
    f.String("model", "NAME", "catalog model (see memgate estimate --help)",
             &model.model);
    f.String("model-config", "FILE",
             "Hugging Face config.json (or its model's directory)",
             &model.model_config);
    f.String("gpu", "NAME", "catalog GPU (see memgate estimate --help)",
             &model.gpu);
    f.Double("gpu-memory-gib", "GIB", "GPU memory (overrides --gpu)",
             &model.gpu_memory_gib);
    f.Uint32("gpus-per-node", "GPUs per node: TP stays within one",
             &model.gpus_per_node);
    f.String("gpus", "N[,N...]", "GPU count(s) of the cluster (required)",
             &gpus);
    f.Uint32("seq", "sequence length (required)", &seq);
    f.Uint32("gbs", "global batch size (required)", &gbs);
    f.Uint32("top", "show the best K layouts (default or 0: all)", &top,
             FlagSet::ZeroIs::kAllowed);
    f.Uint32("max-mbs", "largest micro-batch size to try (default 16)",
             &max_mbs);
    f.Bool("allow-cross-node-tp", "let TP span nodes", &cross_node_tp);
    f.Double("threshold", "F", "GREEN limit (default 0.8)", &threshold);
    f.String("precision", "P",
             "bf16 (fp32 gradients, Megatron's with --bf16; default), "
             "bf16-bf16-grads (--grad-reduce-in-bf16), fp16 or fp32",
             &precision);
    model.RegisterRelease(f);
    f.String("fsdp", "STRATEGY",
             "shard with Megatron-FSDP instead of the distributed optimizer: "
             "no_shard, optim, optim_grads or optim_grads_params "
             "(--data-parallel-sharding-strategy); such layouts run without "
             "a pipeline (PP 1)",
             &fsdp);
    f.Bool("recompute",
           "fit layouts that do not fit by the least full recomputation, "
           "ranked by its cost (default on; --no-recompute)",
           &recompute);
    f.Bool("interleave",
           "try interleaved 1F1B (virtual pipeline stages) at the depth the "
           "cost model finds fastest and the deepest (default on; "
           "--no-interleave: plain 1F1B only, even where the pipeline "
           "divides the layers)",
           &interleave);
    f.Bool("table", "the paper-style table over the GPU counts (plain 1F1B "
           "layouts, no recomputation)", &table);
    f.String("format", "text|json|csv|markdown|megatron-args|jobs",
             "text (default); json: PlanResponse (an array of them for "
             "several GPU counts); csv, markdown: with --table; "
             "megatron-args: each candidate as Megatron-LM arguments; jobs: "
             "each candidate as a memgate.v1.Job, one JSON a line, for "
             "`memgate check --job`",
             &format);
    f.String("server", "HOST:PORT", "ask this memgate_server", &server);
    f.Double("timeout", "SECONDS", "deadline for the server (default 2)",
             &timeout);
  }
};

absl::StatusOr<std::vector<uint32_t>> ParseGpuCounts(const std::string& text) {
  std::vector<uint32_t> counts;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    uint32_t n = 0;
    if (part.empty() || !absl::ascii_isdigit(part[0]) ||
        !absl::SimpleAtoi(part, &n) || n == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--gpus: must be positive whole numbers separated by commas (got '",
          text, "')"));
    }
    counts.push_back(n);
  }
  return counts;
}

// The request from the flags and, when given, a launch after `--`
// (plan_launch.h): the launch gives the model, precision, sequence length,
// global batch and training settings; flags fill in or must agree.
absl::StatusOr<v1::PlanRequest> RequestFrom(
    const PlanFlags& f, const std::vector<std::string>& launch,
    std::vector<std::string>& notes) {
  if (launch.empty() && !f.model.model && !f.model.model_config) {
    return absl::InvalidArgumentError("--model: required (or --model-config)");
  }
  if (!f.model.gpu && !f.model.gpu_memory_gib) {
    return absl::InvalidArgumentError("--gpu: required (or --gpu-memory-gib)");
  }
  absl::StatusOr<std::optional<v1::ModelConfig>> model =
      f.model.ModelToFill(&notes);
  if (!model.ok()) return model.status();
  v1::PlanRequest request;
  request.set_seq_length(f.seq.value_or(0));
  request.set_global_batch_size(f.gbs.value_or(0));
  if (f.precision) {
    absl::StatusOr<v1::Precision> precision = ParsePrecision(*f.precision);
    if (!precision.ok()) return precision.status();
    request.set_precision(*precision);
  }
  v1::Job job;  // carries the model and GPU flags
  if (launch.empty()) {
    *job.mutable_model() = **model;
  } else {
    absl::StatusOr<MegatronLaunch> parsed =
        ParseMegatronLaunch(launch, *model ? &**model : nullptr);
    if (!parsed.ok()) return parsed.status();
    if (absl::Status s = ApplyLaunchToPlan(*parsed, request, notes);
        !s.ok()) {
      return s;
    }
    *job.mutable_model() = request.model();
    // torchrun's nodes x GPUs a node: the count planned without --gpus.
    request.set_num_gpus(parsed->job.num_gpus());
  }
  if (absl::Status s = f.model.ApplyTo(job, false); !s.ok()) return s;
  if (f.model.megatron_core) {
    request.mutable_training()->set_megatron_core_version(
        *f.model.megatron_core);
  }
  if (!launch.empty()) {
    // The launch says both itself: a switch may only agree.
    for (absl::Status s :
         {f.model.FusedSwigluAgreesWithLaunch(request.training()),
          f.model.TpCommOverlapAgreesWithLaunch(request.training())}) {
      if (!s.ok()) return s;
    }
  }
  if (f.model.fused_swiglu) {
    request.mutable_training()->set_fused_swiglu(*f.model.fused_swiglu);
  }
  if (f.model.attention) {
    if (absl::Status s = ApplyAttentionFlag(*f.model.attention, true,
                                            *request.mutable_training());
        !s.ok()) {
      return s;
    }
  }
  if (f.model.softmax_in_fp32) {
    const bool launched = request.training().attention_softmax_in_fp32();
    if (!launch.empty() && launched != *f.model.softmax_in_fp32) {
      return absl::InvalidArgumentError(
          "--attention-softmax-in-fp32 contradicts the launch command, which "
          "says it itself");
    }
    request.mutable_training()->set_attention_softmax_in_fp32(
        *f.model.softmax_in_fp32);
  }
  if (f.model.tp_comm_overlap) {
    SetTpCommOverlap(*f.model.tp_comm_overlap, *request.mutable_training());
  }
  // By name every SwiGLU layout is the paper's unfused count; a frontier
  // plan's answer can turn on it (bench/RESULTS.md, session 24), so the
  // plan says so, except for the paper's own table.
  if (launch.empty() && !f.model.fused_swiglu && !f.table.value_or(false) &&
      IsSwigluMlp(job.model())) {
    notes.push_back(absl::StrCat(
        f.model.model_config ? "from a config" : "by name",
        " the paper's unfused SwiGLU is counted (8 B a unit of FFN width "
        "kept for backward); Megatron runs its fused kernel (6 B): "
        "--fused-swiglu plans as it does"));
  }
  if (f.model.optimizer_instances) {
    const uint32_t launched = request.distributed_optimizer_instances();
    if (launched > 1 && launched != *f.model.optimizer_instances) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--distributed-optimizer-instances: ", *f.model.optimizer_instances,
          " but the launch has --num-distributed-optimizer-instances ",
          launched, "; give one or make them equal"));
    }
    request.set_distributed_optimizer_instances(*f.model.optimizer_instances);
  }
  if (f.model.cp_comm_type || f.model.cp_a2a_size) {
    // Into the request's fields, as a launch's would be (plan_launch.cc).
    v1::ParallelConfig par;
    par.set_context_parallel_comm(request.context_parallel_comm());
    par.set_context_parallel_a2a_size(request.context_parallel_a2a_size());
    if (absl::Status s = f.model.ApplyContextParallelComm(par, true);
        !s.ok()) {
      return s;
    }
    request.set_context_parallel_comm(par.context_parallel_comm());
    request.set_context_parallel_a2a_size(par.context_parallel_a2a_size());
  }
  if (f.fsdp) {
    const std::optional<v1::DataParallelSharding> sharding =
        ShardingStrategyNamed(*f.fsdp);
    if (!sharding) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--fsdp: must be no_shard, optim, optim_grads or "
          "optim_grads_params (got '", *f.fsdp, "')"));
    }
    if (request.data_parallel_sharding() !=
            v1::DATA_PARALLEL_SHARDING_UNSPECIFIED &&
        request.data_parallel_sharding() != *sharding) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--fsdp: ", *f.fsdp, " but the launch shards with ",
          ShardingStrategyName(request.data_parallel_sharding()),
          "; give one or make them equal"));
    }
    request.set_data_parallel_sharding(*sharding);
  }
  if (request.seq_length() == 0) {
    return absl::InvalidArgumentError(
        launch.empty() ? "--seq: required"
                       : "--seq: required (the launch has no --seq-length)");
  }
  if (request.global_batch_size() == 0) {
    return absl::InvalidArgumentError(
        launch.empty()
            ? "--gbs: required"
            : "--gbs: required (the launch has no --global-batch-size, and "
              "Megatron's default, micro-batch x data-parallel size, differs "
              "from layout to layout)");
  }
  *request.mutable_model() = job.model();
  *request.mutable_accelerator() = job.accelerator();
  request.set_top_k(f.top.value_or(0));
  request.set_max_micro_batch_size(f.max_mbs.value_or(0));
  request.set_allow_cross_node_tp(f.cross_node_tp.value_or(false));
  request.set_threshold(f.threshold.value_or(0));
  request.set_no_recompute(!f.recompute.value_or(true) ||
                           f.table.value_or(false));
  // The paper's table is of plain 1F1B layouts.
  request.set_no_interleave(!f.interleave.value_or(true) ||
                            f.table.value_or(false));
  return request;
}

}  // namespace

int RunPlan(const std::vector<std::string>& args, std::ostream& out,
            std::ostream& err, bool out_is_terminal) {
  FlagSet flags(kUsage);
  PlanFlags plan_flags;
  plan_flags.Register(flags);
  std::vector<std::string> launch;
  absl::Status status = flags.Parse(args, &launch);
  if (flags.help_requested()) {
    out << flags.Help();
    return kExitAdmit;
  }
  auto fail = [&](const absl::Status& s) {
    const std::string message(s.message());
    err << "memgate plan: "
        << plan_flags.model.WithHint(message, launch)
        << "\n";
    return ServiceDidNotAnswer(s) ? kExitUnavailable : kExitInvalid;
  };
  if (!status.ok()) return fail(status);
  const std::string format = plan_flags.format.value_or("text");
  const bool table = plan_flags.table.value_or(false);
  if (format != "text" && format != "json" && format != "csv" &&
      format != "markdown" && format != "megatron-args" && format != "jobs") {
    return fail(absl::InvalidArgumentError(
        "--format: must be text, json, csv, markdown, megatron-args or jobs "
        "(got '" + format.substr(0, 32) + "')"));
  }
  if ((format == "megatron-args" || format == "jobs") && table) {
    return fail(absl::InvalidArgumentError(
        "--format: " + format + " is the ranked plans; drop --table for it"));
  }
  if ((format == "csv" || format == "markdown") && !table) {
    return fail(absl::InvalidArgumentError(
        "--format: csv and markdown need --table"));
  }
  if (!plan_flags.gpus && launch.empty()) {
    return fail(absl::InvalidArgumentError("--gpus: required"));
  }
  std::vector<std::string> notes;
  absl::StatusOr<v1::PlanRequest> request =
      RequestFrom(plan_flags, launch, notes);
  if (!request.ok()) return fail(request.status());
  absl::StatusOr<std::vector<uint32_t>> counts = std::vector<uint32_t>{};
  if (plan_flags.gpus) {
    counts = ParseGpuCounts(*plan_flags.gpus);
  } else if (request->num_gpus() > 0) {
    // A launch's own GPU count (torchrun --nnodes x --nproc-per-node).
    counts = std::vector<uint32_t>{request->num_gpus()};
    notes.push_back(absl::StrCat("planned on the launch's ",
                                 request->num_gpus(),
                                 " GPUs; --gpus plans other counts"));
  } else {
    return fail(absl::InvalidArgumentError(
        "--gpus: required (the launch has no torchrun count of GPUs "
        "memgate can read: no --nproc-per-node, or one settled only when "
        "the command runs)"));
  }
  if (!counts.ok()) return fail(counts.status());
  // On stderr: stdout stays the plan (JSON, arguments) for a program.
  for (const std::string& n : notes) err << "memgate plan: note: " << n << "\n";
  RemoteOptions remote;
  if (plan_flags.server) remote.server = *plan_flags.server;
  if (plan_flags.timeout) {
    if (!(*plan_flags.timeout > 0 && *plan_flags.timeout <= 3600)) {
      return fail(absl::InvalidArgumentError(
          "--timeout: must be above 0 and at most 3600 seconds"));
    }
    remote.timeout = absl::Seconds(*plan_flags.timeout);
  }

  std::vector<v1::PlanResponse> plans;
  std::vector<v1::PlanRequest> requests;  // one a GPU count
  for (uint32_t gpus : *counts) {
    v1::PlanRequest one = *request;
    one.set_num_gpus(gpus);
    if (table) one.set_top_k(0);  // a table shows every layout
    absl::StatusOr<v1::PlanResponse> plan =
        remote.server.empty() ? PlanLayouts(one) : PlanRemotely(one, remote);
    if (!plan.ok()) return fail(plan.status());
    // A launch's split forms can leave nothing to plan: say which.
    const v1::LaunchSplit& forms = one.launch_split();
    if (plan->candidates_size() == 0 &&
        (forms.first_last() || forms.layers_per_virtual_stage() ||
         forms.account_for_embedding() || forms.account_for_loss())) {
      err << "memgate plan: note: no layout of " << gpus
          << " GPUs splits the model in the launch's forms ("
          << (forms.first_last() ? "--decoder-first/last-pipeline-num-layers"
              : forms.layers_per_virtual_stage()
                  ? "--num-layers-per-virtual-pipeline-stage"
                  : "--account-for-*-in-pipeline-split")
          << ", which appending cannot remove): drop them from the launch "
             "to plan the others\n";
    }
    // The plan's own notes (a starved pipeline), from the server as well.
    for (const std::string& n : plan->notes()) {
      err << "memgate plan: note: " << n << "\n";
    }
    plans.push_back(*std::move(plan));
    requests.push_back(std::move(one));
  }

  // Where nothing is GREEN at any count asked: how many GPUs would do.
  if (!requests.empty() && std::none_of(plans.begin(), plans.end(), HasGreen)) {
    const auto largest = std::max_element(
        requests.begin(), requests.end(), [](const auto& x, const auto& y) {
          return x.num_gpus() < y.num_gpus();
        });
    // Through a server the whole search keeps to one --timeout (its
    // plans each a share of what is left), not one a plan.
    const absl::Time deadline = absl::Now() + remote.timeout;
    err << "memgate plan: note: "
        << GpusToFitNote(
               *largest,
               [&](const v1::PlanRequest& r)
                   -> absl::StatusOr<v1::PlanResponse> {
                 if (remote.server.empty()) return PlanLayouts(r);
                 RemoteOptions left = remote;
                 left.timeout = deadline - absl::Now();
                 if (left.timeout <= absl::ZeroDuration()) {
                   return absl::DeadlineExceededError(
                       "--timeout: the search's time is up");
                 }
                 return PlanRemotely(r, left);
               })
        << "\n";
  }

  if (table) {
    const TableFormat f = format == "csv"        ? TableFormat::kCsv
                          : format == "markdown" ? TableFormat::kMarkdown
                          : out_is_terminal      ? TableFormat::kAnsi
                                                 : TableFormat::kText;
    if (format == "json") {
      return fail(absl::InvalidArgumentError(
          "--format: json is the ranked plans; drop --table for it"));
    }
    out << RenderPlanTable(*counts, plans, f);
    return kExitAdmit;
  }
  if (format == "json") {
    if (plans.size() == 1) {
      out << ToJson(plans[0]);
    } else {
      out << "[\n";
      for (size_t i = 0; i < plans.size(); ++i) {
        out << ToJson(plans[i]) << (i + 1 < plans.size() ? ",\n" : "\n");
      }
      out << "]\n";
    }
    return kExitAdmit;
  }
  if (format == "megatron-args") {
    for (size_t i = 0; i < plans.size(); ++i) {
      out << RenderMegatronArguments(*request, plans[i], launch.empty());
    }
    return kExitAdmit;
  }
  if (format == "jobs") {
    // Each candidate as the job it is (uneven stages, interleaving and
    // recomputation included), best first: `memgate check --job` on a line
    // estimates it to the candidate's peak.
    for (size_t i = 0; i < plans.size(); ++i) {
      for (const v1::Candidate& c : plans[i].candidates()) {
        out << ToJsonLine(JobForCandidate(requests[i], c)) << "\n";
      }
    }
    return kExitAdmit;
  }
  for (size_t i = 0; i < plans.size(); ++i) {
    out << request->model().name() << " on " << (*counts)[i] << " GPUs, seq "
        << request->seq_length() << ", global batch "
        << request->global_batch_size() << ":\n"
        << RenderPlanList(plans[i]) << (i + 1 < plans.size() ? "\n" : "");
  }
  return kExitAdmit;
}

}  // namespace memgate::cli
