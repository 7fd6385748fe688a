#include "readers/megatron_optimizer_args.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "estimator/clipped_text.h"
#include "estimator/megatron_names.h"
#include "estimator/memory_model.h"
#include "readers/launch_arguments.h"
#include "readers/megatron_args.h"

namespace memgate {
namespace {

// Muon's arguments that change what its step allocates (memory_model.cc
// [MU]); Megatron's defaults otherwise, said in notes.
absl::Status FillMuon(const Arguments& args, MegatronLaunch& launch) {
  v1::Muon& muon = *launch.job.mutable_training()->mutable_muon();
  if (args.Has("muon-tp-mode")) {
    const std::string mode = args.Text("muon-tp-mode");
    if (mode == "blockwise") {
      muon.set_tp_mode(v1::Muon::TP_MODE_BLOCKWISE);
    } else if (mode == "duplicated") {
      muon.set_tp_mode(v1::Muon::TP_MODE_DUPLICATED);
    } else if (mode == "distributed") {
      muon.set_tp_mode(v1::Muon::TP_MODE_DISTRIBUTED);
    } else {
      return Bad("muon-tp-mode",
                 absl::StrCat("must be blockwise, duplicated or distributed "
                              "(got '", mode, "')"));
    }
  } else {
    launch.notes.push_back(
        "--muon-tp-mode not given: the release's default, blockwise through "
        "core 0.19, duplicated after (each tensor-parallel matrix gathered "
        "whole at the step); duplicated where --megatron-core is not given");
  }
  if (args.Has("muon-fp32-matmul-prec")) {
    const std::string precision = args.Text("muon-fp32-matmul-prec");
    if (precision == "high" || precision == "low") {
      // torch.set_float32_matmul_precision knows highest, high and medium:
      // any but medium leaves Newton-Schulz in fp32 (muon_utils.py).
      muon.set_fp32_iteration(true);
    } else if (precision != "medium") {
      return Bad("muon-fp32-matmul-prec",
                 absl::StrCat("must be low, medium or high (got '", precision,
                              "')"));
    }
  }
  muon.set_nesterov(args.Has("muon-nesterov"));
  muon.set_no_split_qkv(args.Has("muon-no-split-qkv"));
  if (args.Has("muon-scalar-optimizer")) {
    const std::string scalar = args.Text("muon-scalar-optimizer");
    if (scalar == "lion") {
      muon.set_scalar_optimizer(v1::OPTIMIZER_LION);
    } else if (scalar != "adam") {
      return Bad("muon-scalar-optimizer",
                 absl::StrCat("must be adam or lion (got '", scalar, "')"));
    }
  }
  return absl::OkStatus();
}

// A dtype argument's value: `allowed` names Megatron's choices.
absl::StatusOr<v1::DType> DTypeArgument(const Arguments& args,
                                        const char* name,
                                        const std::set<std::string>& allowed) {
  if (!args.Has(name)) return v1::DTYPE_UNSPECIFIED;
  const std::string text = args.Text(name);
  if (!allowed.count(text)) {
    return Bad(name, absl::StrCat(Quoted(text),
                                  " is not one of Megatron's "
                                  "choices (",
                                  absl::StrJoin(allowed, ", "), ")"));
  }
  static const auto* dtypes = new std::map<std::string, v1::DType>{
      {"fp32", v1::DTYPE_FP32}, {"bf16", v1::DTYPE_BF16},
      {"fp16", v1::DTYPE_FP16}, {"fp8", v1::DTYPE_FP8}};
  return dtypes->at(text);
}

// Counts every gradient of a Megatron-FSDP job in fp32 (4 B), or refuses
// where that is not the training's to change (fp16 training).
absl::Status CountFsdpGradientsInFp32(const char* name, const std::string& why,
                                      MegatronLaunch& launch) {
  v1::TrainingConfig& t = *launch.job.mutable_training();
  if (GradientBytesPerParameter(t) == 4) return absl::OkStatus();
  if (t.precision() == v1::PRECISION_FP16) {
    return Bad(name, "fp32 gradients of fp16 training under Megatron-FSDP "
                     "are not modelled");
  }
  if (t.has_precision_aware_optimizer()) {
    t.mutable_precision_aware_optimizer()->set_main_grads_dtype(
        v1::DTYPE_FP32);
  } else {
    t.set_precision(v1::PRECISION_BF16_FP32_GRADS);
  }
  launch.notes.push_back(absl::StrCat("--", name, " fp32: ", why,
                                      ": gradients counted in fp32 (4 B)"));
  return absl::OkStatus();
}

// The dtype of Megatron-FSDP's gradient buffer as the launch sets it
// (mcore_fsdp_adapter.py): an explicit --megatron-fsdp-main-grads-dtype,
// else the parameters' (bf16 with bf16 gradients, fp16, fp32); "" for bf16
// training with fp32 gradient reduction, where it depends on the release:
// up to core 0.18 fp32 for the buffer and the communication alike
// (grad_reduce_in_fp32 overrides both), from 0.19 bf16, which memgate
// counts as 4 B.
std::string FsdpGradientBufferDtype(const Arguments& args,
                                    const v1::TrainingConfig& t) {
  if (args.Text("megatron-fsdp-main-grads-dtype") == "fp32") return "fp32";
  // (The precision-aware optimizer's bf16 gradients set the precision's:
  // FillOptimizerStorage.)
  switch (t.precision()) {
    case v1::PRECISION_BF16_BF16_GRADS:
      return "bf16";
    case v1::PRECISION_FP16:
      return "fp16";
    case v1::PRECISION_FP32:
      return "fp32";
    default:
      return "";
  }
}

// Megatron-FSDP's gradient dtypes (mcore_fsdp_adapter.py MixedPrecisionPolicy,
// core 0.17 on): --megatron-fsdp-main-grads-dtype sets the gradient
// buffer (fp32, when given, in every release: up to 0.18 fp32 gradient
// reduction overrides it with fp32 too); --megatron-fsdp-grad-comm-dtype
// the dtype of the un-sharded buckets gradients are reduced in
// (param_and_grad_buffer.py fetch_bucket), under ZeRO-2/3 the very buckets
// memory_model.cc [MFC] counts in the reduce-scatter queue, so a wider one
// than the counted gradients widens them; under no_shard / optim a dtype
// other than the buffer's allocates an un-sharded copy of each bucket
// beside it ("Introduces copy and memory overhead"), which memgate does
// not model.
absl::Status FillFsdpGradientDtypes(const Arguments& args,
                                    v1::DataParallelSharding sharding,
                                    MegatronLaunch& launch) {
  const std::string buffer =
      FsdpGradientBufferDtype(args, launch.job.training());
  if (args.Text("megatron-fsdp-main-grads-dtype") == "fp32") {
    if (absl::Status s = CountFsdpGradientsInFp32(
            "megatron-fsdp-main-grads-dtype",
            "Megatron-FSDP keeps its gradient buffer in fp32", launch);
        !s.ok()) {
      return s;
    }
  }
  const std::string comm = args.Has("megatron-fsdp-grad-comm-dtype")
                               ? args.Text("megatron-fsdp-grad-comm-dtype")
                               : std::string("auto");
  if (comm == "auto") return absl::OkStatus();
  if (comm != "fp32" && comm != "bf16" && comm != "fp16") {
    return Bad("megatron-fsdp-grad-comm-dtype",
               absl::StrCat("'", comm.substr(0, 32),
                            "' is not one of fp32, bf16, fp16, auto"));
  }
  const bool shards_grads =
      sharding == v1::DATA_PARALLEL_SHARDING_OPTIM_GRADS ||
      sharding == v1::DATA_PARALLEL_SHARDING_OPTIM_GRADS_PARAMS;
  if (!shards_grads) {
    // A copy of each bucket unless the dtypes match; with fp32 reduction
    // of bf16 training there is none up to core 0.18 (fp32 both), and from
    // 0.19 the bf16 buffer memgate counts at 4 B covers a bucket's copy.
    if (buffer.empty() || comm == buffer) return absl::OkStatus();
    return Bad("megatron-fsdp-grad-comm-dtype",
               absl::StrCat(Quoted(comm),
                            " with no_shard or optim allocates "
                            "an un-sharded copy of each gradient bucket "
                            "beside the ",
                            buffer,
                            " gradient buffer: not modelled (leave it auto "
                            "or give ",
                            buffer, ")"));
  }
  if (comm == "fp32") {
    return CountFsdpGradientsInFp32(
        "megatron-fsdp-grad-comm-dtype",
        "the un-sharded buckets in the reduce-scatter queue are fp32 (an "
        "upper bound for the sharded buffer)",
        launch);
  }
  // bf16 / fp16 buckets are no wider than the 2 or 4 B counted.
  return absl::OkStatus();
}

}  // namespace

absl::Status FillOptimizer(const Arguments& args, MegatronLaunch& launch) {
  v1::TrainingConfig& t = *launch.job.mutable_training();
  const std::string optimizer =
      args.Has("optimizer") ? args.Text("optimizer") : std::string("adam");
  if (optimizer == "adam") {
    t.set_optimizer(v1::OPTIMIZER_ADAM);
  } else if (optimizer == "sgd") {
    t.set_optimizer(v1::OPTIMIZER_SGD);
    MEMGATE_ASSIGN_OR_RETURN(momentum, args.Decimal("sgd-momentum", 0.9));
    if (momentum >= 1) return Bad("sgd-momentum", "must be below 1");
    t.set_sgd_momentum(static_cast<float>(momentum));
  } else if (optimizer == "lion" || optimizer == "muon") {
    // arguments.py: from core 0.18.0 an optimizer other than adam and sgd
    // turns --use-distributed-optimizer into the layer-wise distributed
    // optimizer [LW] (validation refuses the releases that run otherwise);
    // --no-use-layer-wise-param-layout keeps it on its legacy ping-pong
    // path. core/optimizer/__init__.py raises under fp16.
    // Experts whose weights are one parameter a layer (the legacy
    // GroupedMLP, gone by core 0.18.0; TransformerEngine's single grouped
    // weight) would be packed whole, or left to the plain optimizer: not
    // modelled under the layer-wise optimizer.
    for (const char* one_weight :
         {"moe-use-legacy-grouped-gemm", "moe-single-grouped-weight"}) {
      if (args.Has("use-distributed-optimizer") && args.Has(one_weight)) {
        return Bad(one_weight,
                   absl::StrCat("the experts' weights as one parameter a "
                                "layer under ", optimizer, "'s layer-wise "
                                "distributed optimizer (--use-distributed-"
                                "optimizer) are not modelled"));
      }
    }
    if (args.Has("use-distributed-optimizer") &&
        args.Has("no-use-layer-wise-param-layout")) {
      return Bad("no-use-layer-wise-param-layout",
                 absl::StrCat("with ", optimizer, " and "
                              "--use-distributed-optimizer Megatron runs "
                              "its legacy ping-pong layer-wise optimizer "
                              "(every parameter in one unpadded buffer, the "
                              "updated ones all-gathered at the step), "
                              "which is not modelled (the default layout "
                              "is)"));
    }
    if (args.Has("fp16")) {
      return Bad("optimizer", absl::StrCat(optimizer, " cannot train in "
                                           "fp16 (Megatron raises)"));
    }
    if (optimizer == "lion") {
      t.set_optimizer(v1::OPTIMIZER_LION);
    } else {
      t.set_optimizer(v1::OPTIMIZER_MUON);
      if (absl::Status s = FillMuon(args, launch); !s.ok()) return s;
    }
  } else if (optimizer == "dist_muon") {
    return Bad("optimizer",
               "dist_muon runs core 0.16 and 0.17's ping-pong layer-wise "
               "optimizer, which is not modelled; from core 0.18.0 it means "
               "--optimizer muon --use-distributed-optimizer, which is: "
               "launch it so");
  } else {
    return Bad("optimizer", absl::StrCat(Quoted(optimizer),
                                         " is not modelled "
                                         "(adam, sgd, lion or muon)"));
  }
  if (args.Has("rampup-batch-size")) {
    launch.notes.push_back(
        "--rampup-batch-size: estimated at the final --global-batch-size, "
        "the most micro-batches a step has");
  }
  return absl::OkStatus();
}

// --use-precision-aware-optimizer and its dtypes, --optimizer-cpu-offload
// (Megatron-LM arguments.py: the dtypes must stay fp32 without the
// precision-aware optimizer, and offload needs it).
absl::Status FillOptimizerStorage(const Arguments& args,
                                  MegatronLaunch& launch) {
  v1::TrainingConfig& t = *launch.job.mutable_training();
  const bool precision_aware = args.Has("use-precision-aware-optimizer");
  MEMGATE_ASSIGN_OR_RETURN(
      grads, DTypeArgument(args, "main-grads-dtype", {"fp32", "bf16"}));
  MEMGATE_ASSIGN_OR_RETURN(
      params, DTypeArgument(args, "main-params-dtype", {"fp32", "fp16"}));
  MEMGATE_ASSIGN_OR_RETURN(
      exp_avg, DTypeArgument(args, "exp-avg-dtype",
                             {"fp32", "fp16", "bf16", "fp8"}));
  MEMGATE_ASSIGN_OR_RETURN(
      exp_avg_sq, DTypeArgument(args, "exp-avg-sq-dtype",
                                {"fp32", "fp16", "bf16", "fp8"}));
  if (!precision_aware) {
    for (const auto& [name, dtype] :
         {std::pair<const char*, v1::DType>{"main-grads-dtype", grads},
          {"main-params-dtype", params},
          {"exp-avg-dtype", exp_avg},
          {"exp-avg-sq-dtype", exp_avg_sq}}) {
      if (dtype != v1::DTYPE_UNSPECIFIED && dtype != v1::DTYPE_FP32) {
        return Bad(name, "can only be fp32 without "
                         "--use-precision-aware-optimizer");
      }
    }
  } else {
    if (!args.Has("bf16")) {
      return Bad("use-precision-aware-optimizer",
                 "is modelled with --bf16 only");
    }
    if (grads == v1::DTYPE_BF16 &&
        args.Has("accumulate-allreduce-grads-in-fp32")) {
      return Bad("main-grads-dtype",
                 "can only be fp32 with --accumulate-allreduce-grads-in-fp32");
    }
    v1::PrecisionAwareOptimizer& pa = *t.mutable_precision_aware_optimizer();
    pa.set_main_grads_dtype(grads);
    pa.set_main_params_dtype(params);
    pa.set_exp_avg_dtype(exp_avg);
    pa.set_exp_avg_sq_dtype(exp_avg_sq);
    if (grads == v1::DTYPE_BF16) {
      t.set_precision(v1::PRECISION_BF16_BF16_GRADS);
    }
  }
  if (args.Has("optimizer-cpu-offload")) {
    if (!precision_aware) {
      return Bad("optimizer-cpu-offload",
                 "needs --use-precision-aware-optimizer (as Megatron "
                 "requires)");
    }
    MEMGATE_ASSIGN_OR_RETURN(fraction,
                             args.Decimal("optimizer-offload-fraction", 1.0));
    if (fraction > 1) {
      return Bad("optimizer-offload-fraction", "must be at most 1");
    }
    if (!args.Has("optimizer-offload-fraction")) {
      launch.notes.push_back(
          "--optimizer-cpu-offload without --optimizer-offload-fraction: "
          "Megatron's default 1.0 (the whole optimizer in host memory)");
    }
    t.set_optimizer_offload_fraction(fraction);
  }
  return absl::OkStatus();
}

// Megatron-FSDP: --use-megatron-fsdp (or its older name --use-custom-fsdp)
// with --data-parallel-sharding-strategy.
absl::Status FillFsdp(const Arguments& args, MegatronLaunch& launch) {
  const char* flag = args.Has("use-megatron-fsdp") ? "use-megatron-fsdp"
                                                   : "use-custom-fsdp";
  if (!args.Has(flag)) {
    if (args.Has("data-parallel-sharding-strategy")) {
      return Bad("data-parallel-sharding-strategy",
                 "needs --use-megatron-fsdp");
    }
    return absl::OkStatus();
  }
  if (!args.Has("data-parallel-sharding-strategy")) {
    // core_r0.12 defaulted to no_shard, later releases to
    // optim_grads_params: 3x apart in model-state memory.
    return Bad(flag, "give --data-parallel-sharding-strategy: its default "
                     "differs between Megatron releases (no_shard, later "
                     "optim_grads_params)");
  }
  const std::string strategy = args.Text("data-parallel-sharding-strategy");
  const std::optional<v1::DataParallelSharding> sharding =
      ShardingStrategyNamed(strategy);
  if (!sharding) {
    return Bad("data-parallel-sharding-strategy",
               absl::StrCat(Quoted(strategy),
                            " is not one of no_shard, optim, "
                            "optim_grads, optim_grads_params"));
  }
  v1::ParallelConfig& par = *launch.job.mutable_parallel();
  par.set_data_parallel_sharding(*sharding);
  // What bounds the un-sharded weights and gradients (memory_model.cc
  // [MFC]): NCCL user buffers and the max-pool allocator turn the double
  // buffer on (arguments.py validate_args, with Megatron-FSDP).
  par.set_fsdp_double_buffer(
      args.Has("fsdp-double-buffer") || args.Has("use-nccl-ub") ||
      args.Has("megatron-fsdp-max-pool-double-buffer"));
  auto unit = args.Number("suggested-communication-unit-size", 0);
  if (!unit.ok()) return unit.status();
  if (args.Has("suggested-communication-unit-size") && *unit == 0) {
    return Bad("suggested-communication-unit-size",
               "must be a positive number of parameters");
  }
  par.set_fsdp_communication_unit_size(*unit);
  // Under ZeRO-2 without a unit of its own, C is the DDP bucket when that
  // is above 10^9 parameters (megatron_fsdp.py): a bucket that large, or
  // one set by a bucket count, is not modelled.
  if (*sharding == v1::DATA_PARALLEL_SHARDING_OPTIM_GRADS && *unit == 0) {
    if (args.Has("ddp-num-buckets")) {
      return Bad("ddp-num-buckets",
                 "with Megatron-FSDP optim_grads sizes its gradient queue from "
                 "the model: not modelled (give "
                 "--suggested-communication-unit-size)");
    }
    auto bucket = args.Number("ddp-bucket-size", 0);
    if (!bucket.ok()) return bucket.status();
    if (*bucket > 1000000000u) {
      return Bad("ddp-bucket-size",
                 "above 10^9 with Megatron-FSDP optim_grads sets its gradient "
                 "queue: not modelled (give "
                 "--suggested-communication-unit-size)");
    }
  }
  return FillFsdpGradientDtypes(args, *sharding, launch);
}

// --num-distributed-optimizer-instances: N copies of the distributed
// optimizer (memory_model.cc [DO]). Megatron asserts the distributed
// optimizer beside it and divides by it (a 0 fails there); with
// Megatron-FSDP it turns on hybrid FSDP, which is not modelled. Whether N
// divides d x c is the estimator's rule (ValidateJob): the GPU count may
// still come from memgate's --gpus.
absl::Status FillOptimizerInstances(const Arguments& args,
                                    MegatronLaunch& launch) {
  constexpr char kName[] = "num-distributed-optimizer-instances";
  if (!args.Has(kName)) return absl::OkStatus();
  MEMGATE_ASSIGN_OR_RETURN(n, args.Number(kName, 1));
  if (n == 0) return Bad(kName, "must be at least 1");
  if (n == 1) return absl::OkStatus();
  v1::ParallelConfig& par = *launch.job.mutable_parallel();
  if (par.data_parallel_sharding() != v1::DATA_PARALLEL_SHARDING_UNSPECIFIED) {
    return Bad(kName, "above 1 with --use-megatron-fsdp is hybrid FSDP "
                      "(HSDP): not modelled");
  }
  if (!par.distributed_optimizer()) {
    return Bad(kName, "above 1 needs --use-distributed-optimizer (Megatron "
                      "asserts: partial DistOpt cannot be used without "
                      "DistOpt)");
  }
  par.set_distributed_optimizer_instances(n);
  return absl::OkStatus();
}

// --ddp-param-name-patterns-for-fp32-local-accumulation: Megatron's DDP
// gives each parameter a pattern matches an fp32 gradient of its own
// (TrainingConfig.fp32_local_grad_accumulation). Which parameters a
// pattern other than 'all' matches depends on module names memgate does
// not model: every parameter is counted, an upper bound, and a note says
// so. With fp32 gradient reduction (bf16 without --grad-reduce-in-bf16)
// Megatron's DDP config asserts, under Megatron-FSDP too (it is built for
// both), and so does ValidateJob; otherwise Megatron-FSDP does not read it.
absl::Status FillLocalGradAccumulation(const Arguments& args,
                                       MegatronLaunch& launch) {
  constexpr char kName[] =
      "ddp-param-name-patterns-for-fp32-local-accumulation";
  if (!args.Has(kName)) return absl::OkStatus();
  if (launch.job.training().precision() == v1::PRECISION_BF16_FP32_GRADS) {
    return Bad(kName, "with --bf16 reducing gradients in fp32: Megatron "
                      "asserts (\"Only need to explicitly specify param_name "
                      "patterns for FP32 local accumulation if .main_grads "
                      "aren't already in FP32\"); give --grad-reduce-in-bf16");
  }
  if (launch.job.parallel().data_parallel_sharding() !=
      v1::DATA_PARALLEL_SHARDING_UNSPECIFIED) {
    launch.notes.push_back(absl::StrCat(
        "--", kName, ": Megatron-FSDP keeps its own gradient buffers and "
        "does not read it"));
    return absl::OkStatus();
  }
  launch.job.mutable_training()->set_fp32_local_grad_accumulation(true);
  const std::vector<std::string> patterns =
      absl::StrSplit(args.Text(kName), ' ', absl::SkipEmpty());
  if (patterns != std::vector<std::string>{"all"}) {
    launch.notes.push_back(absl::StrCat(
        "--", kName, " (", patterns.size(),
        " patterns, not 'all'): every parameter counted with an fp32 "
        "gradient of its own (4 B), an upper bound of what they match"));
  }
  return absl::OkStatus();
}

// --ddp-reduce-scatter-with-fp32-accumulation (core 0.16 on) reduces the
// distributed optimizer's gradients by an all-to-all into a scratch copy of
// each bucket (TrainingConfig.reduce_scatter_fp32_accumulation, counted as
// memory_model.cc [RSA] says). Megatron turns it off under fp32 gradient
// reduction (bf16 with fp32 main gradients and without
// --grad-reduce-in-bf16, arguments.py), and only the distributed
// optimizer's DDP reduce-scatters; beside several optimizer instances it
// asserts (ValidateJob).
absl::Status FillFp32AccumulatingReduceScatter(const Arguments& args,
                                               MegatronLaunch& launch) {
  constexpr char kName[] = "ddp-reduce-scatter-with-fp32-accumulation";
  if (!args.Has(kName)) return absl::OkStatus();
  v1::TrainingConfig& t = *launch.job.mutable_training();
  if (ReducesGradientsInFp32(t)) {
    launch.notes.push_back(absl::StrCat(
        "--", kName, ": Megatron turns it off (gradients already reduced "
        "in fp32)"));
    return absl::OkStatus();
  }
  if (!launch.job.parallel().distributed_optimizer() ||
      launch.job.parallel().data_parallel_sharding() !=
          v1::DATA_PARALLEL_SHARDING_UNSPECIFIED) {
    return absl::OkStatus();  // no DDP reduce-scatter to change
  }
  t.set_reduce_scatter_fp32_accumulation(true);
  launch.notes.push_back(absl::StrCat(
      "--", kName, ": its all-to-all scratch counted as a copy of the "
      "stage's whole gradient buffer (every bucket live, as before core "
      "0.18: an upper bound from 0.18 on the first stage), above the "
      "activations it can coexist with (the last micro-batch's; all of "
      "them when interleaved)"));
  return absl::OkStatus();
}

}  // namespace memgate
