#include "client/plan_launch.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "estimator/megatron_names.h"
#include "planner/planner.h"

namespace memgate::cli {
namespace {

// A plan-level value a flag and the launch may both give: equal or one.
absl::Status Agree(const char* flag, const char* argument, uint32_t& value,
                   uint32_t from_launch) {
  if (from_launch == 0) return absl::OkStatus();
  if (value != 0 && value != from_launch) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--", flag, ": ", value, " but the launch says ", argument, " ",
        from_launch, "; give one or make them equal"));
  }
  value = from_launch;
  return absl::OkStatus();
}

// What the launch's layout was, for the note that the plan replaces it.
std::string LaunchLayoutText(const v1::Job& job) {
  const v1::ParallelConfig& p = job.parallel();
  std::vector<std::string> parts = {
      absl::StrCat("TP ", std::max(1u, p.tensor_parallel())),
      absl::StrCat("CP ", std::max(1u, p.context_parallel())),
      absl::StrCat("PP ", std::max(1u, p.pipeline_parallel()))};
  if (p.expert_parallel() > 1) {
    parts.push_back(absl::StrCat("EP ", p.expert_parallel()));
  }
  if (p.virtual_pipeline_stages() > 1) {
    parts.push_back(absl::StrCat("VP ", p.virtual_pipeline_stages()));
  }
  parts.push_back(
      absl::StrCat("MBS ", std::max(1u, job.training().micro_batch_size())));
  return absl::StrJoin(parts, ", ");
}

}  // namespace

absl::Status ApplyLaunchToPlan(const MegatronLaunch& launch,
                               v1::PlanRequest& request,
                               std::vector<std::string>& notes) {
  const v1::Job& job = launch.job;
  const v1::ParallelConfig& par = job.parallel();
  if (par.microbatch_group_size() != 0) {
    // The group must lie in [p, m]: a fixed one is wrong for most of the
    // pipelines and batch splits the plan searches, and its candidates'
    // arguments would not override it when pasted back.
    return absl::InvalidArgumentError(
        "--microbatch-group-size-per-virtual-pipeline-stage: plans run "
        "interleaving with Megatron's default group (the pipeline size), and "
        "the group is set per pipeline: drop it from the launch to plan it, "
        "or check the launch with `memgate check`");
  }
  if (!launch.tied_to_layout.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        launch.tied_to_layout.front(),
        ": must equal the launch's own (expert) tensor-parallel size, which "
        "the plan searches: a candidate of another size would contradict it "
        "when appended; drop it from the launch to plan it (at that size it "
        "changes nothing)"));
  }
  if (job.training().recompute().distribute_saved_activations()) {
    return absl::InvalidArgumentError(
        "--distribute-saved-activations: candidates run sequence parallelism "
        "at TP > 1 and search full recomputation themselves, and Megatron "
        "refuses it beside sequence parallelism: drop it from the launch to "
        "plan it, or check the launch with `memgate check`");
  }
  const v1::TrainingConfig& training = job.training();
  if (launch.global_batch_rule == GlobalBatchRule::kScheduled &&
      request.global_batch_size() == 0) {
    return absl::InvalidArgumentError(
        "--step-batch-size-schedule: the global batch changes over training; "
        "give --gbs to plan at one of its sizes");
  }
  uint32_t seq = request.seq_length(), gbs = request.global_batch_size();
  if (absl::Status s =
          Agree("seq", "--seq-length", seq, training.seq_length());
      !s.ok()) {
    return s;
  }
  if (absl::Status s = Agree("gbs", "--global-batch-size", gbs,
                             training.global_batch_size());
      !s.ok()) {
    return s;
  }
  if (request.precision() != v1::PRECISION_UNSPECIFIED &&
      training.precision() != v1::PRECISION_UNSPECIFIED &&
      request.precision() != training.precision()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--precision: ", v1::Precision_Name(request.precision()),
        " but the launch's is ", v1::Precision_Name(training.precision()),
        "; give one or make them equal"));
  }
  if (request.precision() == v1::PRECISION_UNSPECIFIED) {
    request.set_precision(training.precision());
  }
  request.set_seq_length(seq);
  request.set_global_batch_size(gbs);
  *request.mutable_model() = job.model();

  for (const std::string& note : launch.notes) {
    // The parser's note counts the dataloader's mask; the plan does not
    // (below says why).
    if (absl::StrContains(note, "--no-create-attention-mask-in-dataloader")) {
      continue;
    }
    notes.push_back(note);
  }
  notes.push_back(absl::StrCat("the launch's layout (", LaunchLayoutText(job),
                               ") is what the plan searches: replaced by "
                               "each candidate's"));
  if (training.recompute().granularity() ==
      v1::Recompute::GRANULARITY_FULL) {
    notes.push_back(
        "the launch's full recomputation is dropped: each candidate "
        "recomputes the least its layout needs to fit");
    if (training.recompute().distribute_saved_activations()) {
      notes.push_back(
          "--distribute-saved-activations: planned without it (candidates "
          "with TP > 1 run sequence parallelism, beside which Megatron "
          "refuses it): drop it from the launch before adding a "
          "candidate's arguments");
    }
  }
  if (training.dataloader_attention_mask()) {
    notes.push_back(
        "candidates turn off the dataloader's attention mask "
        "(--no-create-attention-mask-in-dataloader): planned without it");
  }
  const bool fsdp =
      par.data_parallel_sharding() != v1::DATA_PARALLEL_SHARDING_UNSPECIFIED;
  if (fsdp) {
    // Planned with the launch's strategy: Megatron-FSDP runs without a
    // pipeline, so the plan is of PP 1 layouts (planner.cc ForEachGroup).
    request.set_data_parallel_sharding(par.data_parallel_sharding());
    request.set_fsdp_double_buffer(par.fsdp_double_buffer());
    request.set_fsdp_communication_unit_size(
        par.fsdp_communication_unit_size());
    notes.push_back(absl::StrCat(
        "the launch shards with Megatron-FSDP (",
        ShardingStrategyName(par.data_parallel_sharding()),
        "): every candidate does, and runs without a pipeline (PP 1), as "
        "Megatron-FSDP does"));
  }
  // The launch's DDP buckets stay in it: every candidate is padded by them.
  request.set_ddp_bucket_size(par.ddp_bucket_size());
  request.set_ddp_num_buckets(par.ddp_num_buckets());
  request.set_pad_buckets_for_high_nccl_busbw(
      par.pad_buckets_for_high_nccl_busbw());
  if (par.distributed_optimizer_instances() > 1) {
    // Planned with the launch's instances: only layouts whose DP x CP
    // (and expert-DP) they divide.
    request.set_distributed_optimizer_instances(
        par.distributed_optimizer_instances());
    notes.push_back(absl::StrCat(
        "--num-distributed-optimizer-instances ",
        par.distributed_optimizer_instances(),
        ": every candidate keeps it (optimizer states sharded over DP x CP / ",
        par.distributed_optimizer_instances(),
        "); only layouts whose DP x CP it divides are planned"));
  }
  const v1::ContextParallelComm comm = par.context_parallel_comm();
  if (launch.context_parallel_all_to_all_only &&
      comm != v1::CONTEXT_PARALLEL_COMM_A2A) {
    // Its softmax runs CP only over an all-to-all: the planner gives
    // every candidate with CP that exchange (planner.cc, from the model's
    // softmax_type); said here.
    notes.push_back(
        "--softmax-type: TransformerEngine's fused attention runs it with "
        "context parallelism over an all-to-all only: candidates with CP "
        "carry --cp-comm-type a2a, at CP sizes that split a TP rank's "
        "heads");
  } else if (launch.job.model().sliding_window() &&
             comm != v1::CONTEXT_PARALLEL_COMM_A2A &&
             comm != v1::CONTEXT_PARALLEL_COMM_ALL_GATHER) {
    // Likewise sliding windows, over an all-to-all or an all-gather
    // (planner.cc, from the model's sliding_window).
    notes.push_back(
        "--window-size: TransformerEngine runs sliding windows with context "
        "parallelism over an all-to-all or an all-gather only: candidates "
        "with CP carry --cp-comm-type a2a, at CP sizes that split a TP "
        "rank's heads");
  } else if (par.context_parallel_comm() !=
                 v1::CONTEXT_PARALLEL_COMM_UNSPECIFIED &&
             par.context_parallel_comm() != v1::CONTEXT_PARALLEL_COMM_P2P) {
    // Planned with the launch's exchange: candidates with CP run it, and
    // an all-to-all only where it splits the heads of a TP rank.
    request.set_context_parallel_comm(par.context_parallel_comm());
    request.set_context_parallel_a2a_size(par.context_parallel_a2a_size());
    notes.push_back(absl::StrCat(
        "--cp-comm-type ", CpCommTypeName(par.context_parallel_comm()),
        ": candidates with context parallelism keep it",
        par.context_parallel_comm() == v1::CONTEXT_PARALLEL_COMM_ALL_GATHER
            ? ""
            : absl::StrCat(", at CP sizes whose all-to-all splits a TP "
                           "rank's heads",
                           par.context_parallel_comm() ==
                                   v1::CONTEXT_PARALLEL_COMM_A2A_P2P
                               ? absl::StrCat(" (all-to-all over ",
                                              par.context_parallel_a2a_size(),
                                              " ranks, CP a multiple of it)")
                               : "")));
  }
  *request.mutable_launch_split() = launch.split_arguments;
  if (launch.split_arguments.layout()) {
    notes.push_back(
        "the launch gives --pipeline-model-parallel-layout: each candidate "
        "says its split as one, which replaces the launch's when appended "
        "(Megatron refuses --decoder-first/last-pipeline-num-layers and "
        "virtual-stage counts beside a layout)");
  } else if (launch.split_arguments.first_last() ||
             launch.split_arguments.virtual_stages() ||
             launch.split_arguments.layers_per_virtual_stage() ||
             launch.split_arguments.account_for_embedding() ||
             launch.split_arguments.account_for_loss()) {
    notes.push_back(
        "the launch gives its pipeline split as arguments that appending "
        "cannot remove: each candidate says its split in the same forms "
        "(so that it replaces the launch's), and only splits they can say "
        "are planned");
  }
  // Its full recomputation, which a candidate that recomputes nothing
  // must say it replaces (block recomputation of 0 layers a stage).
  if (training.recompute().granularity() ==
      v1::Recompute::GRANULARITY_FULL) {
    request.mutable_launch_split()->set_full_recompute(true);
  }
  if (!par.distributed_optimizer() && !fsdp) {
    notes.push_back(
        "the launch has no --use-distributed-optimizer: candidates add it "
        "(optimizer states sharded over DP x CP)");
  }
  if (!par.sequence_parallel()) {
    notes.push_back(
        "the launch has no --sequence-parallel: candidates with TP > 1 add "
        "it");
  }
  if (training.tp_comm_overlap() != v1::TrainingConfig::TP_COMM_OVERLAP_OFF) {
    notes.push_back(
        "--tp-comm-overlap: every candidate counts its userbuffers, and none "
        "has TP 1 (Megatron asserts sequence parallelism, off at TP 1): "
        "drop the flag to plan TP 1");
  }
  *request.mutable_training() = PlanTemplateOf(training);
  return absl::OkStatus();
}

}  // namespace memgate::cli
