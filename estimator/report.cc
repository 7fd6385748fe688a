#include "estimator/report.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "estimator/estimate.h"
#include "estimator/megatron_names.h"
#include "estimator/units.h"

namespace memgate {

// What sets a candidate apart beyond (TP, CP, PP, MBS): experts, uneven
// stages, interleaving, recomputation.
std::string CandidateVariant(const v1::Candidate& c) {
  std::string v;
  if (c.expert_parallel() > 0) {
    absl::StrAppendFormat(&v, "EP %u, ETP %u; ", c.expert_parallel(),
                          c.expert_tensor_parallel());
  }
  if (c.data_parallel_sharding() != v1::DATA_PARALLEL_SHARDING_UNSPECIFIED) {
    absl::StrAppend(&v, "FSDP ",
                    ShardingStrategyName(c.data_parallel_sharding()), "; ");
  }
  if (c.first_stage_layers() > 0) {
    absl::StrAppendFormat(&v, "first/last stage %u/%u layers%s; ",
                          c.first_stage_layers(), c.last_stage_layers(),
                          !c.pipeline_layout().empty()
                              ? " (embedding/loss/MTP in the split)"
                          : c.account_for_embedding() || c.account_for_loss()
                              ? " (embedding/loss in the split)"
                              : "");
  }
  if (c.virtual_pipeline_stages() > 1) {
    absl::StrAppendFormat(&v, "interleaved x%u; ", c.virtual_pipeline_stages());
  }
  if (c.recompute_num_layers() > 0) {
    absl::StrAppendFormat(&v, "recompute %u layer%s a %s; ",
                          c.recompute_num_layers(),
                          c.recompute_num_layers() == 1 ? "" : "s",
                          c.virtual_pipeline_stages() > 1 ? "chunk" : "stage");
  }
  if (c.recompute_modules_size() > 0) {
    absl::StrAppend(&v, "recompute ", RecomputeModulesText(c.recompute_modules()), " (selective); ");
  }
  return v;
}

std::string RecomputeModulesText(
    const google::protobuf::RepeatedField<int>& modules) {
  std::string text;
  for (int module : modules) {
    if (!text.empty()) text += " ";
    text += RecomputeModuleName(static_cast<v1::Recompute::Module>(module));
  }
  return text;
}

std::string SelectiveRecomputeArguments(
    const google::protobuf::RepeatedField<int>& modules) {
  std::string args = absl::StrCat(
      "--recompute-granularity selective --recompute-modules ",
      RecomputeModulesText(modules));
  // Megatron recomputes the experts' activation with grouped GEMMs only
  // (transformer_config.py).
  if (std::find(modules.begin(), modules.end(),
                v1::Recompute::MODULE_MOE_ACT) != modules.end()) {
    args += " --moe-grouped-gemm";
  }
  return args;
}

std::string CandidateMegatronArguments(const v1::Candidate& c,
                                       uint32_t global_batch_size,
                                       uint32_t seq_length) {
  std::string args = absl::StrFormat(
      "--tensor-model-parallel-size %u --context-parallel-size %u "
      "--pipeline-model-parallel-size %u --micro-batch-size %u "
      "--global-batch-size %u --seq-length %u",
      c.tensor_parallel(), c.context_parallel(), c.pipeline_parallel(),
      c.micro_batch_size(), global_batch_size, seq_length);
  if (c.tensor_parallel() > 1) args += " --sequence-parallel";
  args += " --use-distributed-optimizer";
  if (c.data_parallel_sharding() != v1::DATA_PARALLEL_SHARDING_UNSPECIFIED) {
    // Megatron's own FSDP recipes pass the distributed optimizer beside it
    // (docs/user-guide/features/megatron_fsdp.md); the strategy decides
    // what is sharded.
    absl::StrAppend(&args,
                    " --use-megatron-fsdp --data-parallel-sharding-strategy ",
                    ShardingStrategyName(c.data_parallel_sharding()));
  }
  // Plans do not count Megatron's dataloader attention mask (b x s x s
  // bytes, unused by FlashAttention): the launch turns it off, so that it
  // fits as planned (memory_model.cc, DataloaderMaskBytes).
  args += " --no-create-attention-mask-in-dataloader";
  if (c.expert_parallel() > 0) {
    absl::StrAppendFormat(&args,
                          " --expert-model-parallel-size %u "
                          "--expert-tensor-parallel-size %u",
                          c.expert_parallel(), c.expert_tensor_parallel());
  }
  if (!c.pipeline_layout().empty()) {
    // The layout fixes the chunks too: Megatron takes no other split or
    // virtual-stage argument beside it. Quoted for a shell ('|', '(').
    absl::StrAppend(&args, " --pipeline-model-parallel-layout \"",
                    c.pipeline_layout(), "\"");
  } else if (c.account_for_embedding() || c.account_for_loss()) {
    // Megatron's form of uneven interleaved stages (planner.cc ChunkForm).
    if (c.account_for_embedding()) {
      args += " --account-for-embedding-in-pipeline-split";
    }
    if (c.account_for_loss()) args += " --account-for-loss-in-pipeline-split";
  } else if (c.first_stage_layers() > 0) {
    absl::StrAppendFormat(&args,
                          " --decoder-first-pipeline-num-layers %u "
                          "--decoder-last-pipeline-num-layers %u",
                          c.first_stage_layers(), c.last_stage_layers());
  }
  if (c.virtual_pipeline_stages() > 1 && c.pipeline_layout().empty()) {
    absl::StrAppendFormat(&args, " --num-virtual-stages-per-pipeline-rank %u",
                          c.virtual_pipeline_stages());
  }
  if (c.recompute_num_layers() > 0) {
    absl::StrAppendFormat(&args,
                          " --recompute-granularity full "
                          "--recompute-method block "
                          "--recompute-num-layers %u",
                          c.recompute_num_layers());
  } else if (c.recompute_modules_size() > 0) {
    absl::StrAppend(&args, " ",
                    SelectiveRecomputeArguments(c.recompute_modules()));
  }
  return args;
}

std::string ZoneName(v1::Zone zone) {
  switch (zone) {
    case v1::ZONE_GREEN:
      return "GREEN";
    case v1::ZONE_YELLOW:
      return "YELLOW";
    case v1::ZONE_RED:
      return "RED";
    default:
      return "UNSPECIFIED";
  }
}

namespace {

// DeepEP's share of a stage's communication buffers: the rest are
// TransformerEngine's userbuffers (StageMemory.te_userbuffer_bytes) and
// the reduce-scatter's scratch (gradient_scratch_bytes).
double DeepEpShareOf(const v1::StageMemory& s) {
  return s.communication_buffer_bytes() - s.te_userbuffer_bytes() -
         s.gradient_scratch_bytes();
}

}  // namespace

std::string BreakdownLine(const v1::StageMemory& s) {
  std::string line = absl::StrFormat(
      "weights %.2f + gradients %.2f + optimizer %.2f + activations %.2f GiB",
      ToGiB(s.weight_bytes()), ToGiB(s.gradient_bytes()),
      ToGiB(s.optimizer_bytes()), ToGiB(s.activation_bytes()));
  const double deepep = DeepEpShareOf(s);
  if (deepep > 0) {
    absl::StrAppendFormat(&line, " + DeepEP buffers %.2f GiB", ToGiB(deepep));
  }
  if (s.te_userbuffer_bytes() > 0) {
    absl::StrAppendFormat(&line, " + TE userbuffers %.2f GiB",
                          ToGiB(s.te_userbuffer_bytes()));
  }
  if (s.gradient_scratch_bytes() > 0) {
    absl::StrAppendFormat(&line, " + reduce-scatter scratch %.2f GiB",
                          ToGiB(s.gradient_scratch_bytes()));
  }
  if (s.expert_imbalance_bytes() > 0) {
    absl::StrAppendFormat(&line, " (+ %.2f GiB expert load margin)",
                          ToGiB(s.expert_imbalance_bytes()));
  }
  if (s.attention_score_buffer_bytes() > 0) {
    absl::StrAppendFormat(&line,
                          " (+ %.2f GiB attention score buffer, in the "
                          "headroom)",
                          ToGiB(s.attention_score_buffer_bytes()));
  }
  return line;
}

std::string TransientOverflowText(const v1::StageMemory& s) {
  const double buffer = s.attention_score_buffer_bytes();
  std::string text =
      TransientBytes(s) > 0
          ? absl::StrFormat("%s, %.2f GiB beside stage %u's %.2f GiB",
                            TransientName(s), ToGiB(TransientBytes(s)),
                            s.stage(), ToGiB(HeldBesideTransients(s)))
          : absl::StrFormat("stage %u's %.2f GiB", s.stage(),
                            ToGiB(HeldBesideTransients(s)));
  if (buffer > 0) {
    absl::StrAppendFormat(&text, " (its attention score buffer's %.2f GiB "
                                 "included)",
                          ToGiB(buffer));
  }
  return text;
}

std::string JobSummaryLine(const v1::Job& job, uint32_t data_parallel) {
  const v1::ParallelConfig& par = job.parallel();
  const v1::TrainingConfig& tr = job.training();
  std::string model = job.model().name().empty() ? "custom model"
                                                 : job.model().name();
  std::string gpu = job.accelerator().name().empty()
                        ? absl::StrFormat("%.2f GiB GPU",
                                          ToGiB(job.accelerator()
                                                    .memory_bytes()))
                        : job.accelerator().name();
  const std::string experts =
      job.model().has_moe()
          ? absl::StrFormat(" EP=%u ETP=%u", std::max(1u, par.expert_parallel()),
                            par.expert_tensor_parallel() > 0
                                ? par.expert_tensor_parallel()
                                : par.tensor_parallel())
          : "";
  std::string optimizer;
  if (!par.distributed_optimizer()) {
    optimizer = " (no distributed optimizer)";
  } else if (par.distributed_optimizer_instances() > 1) {
    optimizer = absl::StrFormat(" (%u distributed-optimizer instances)",
                                par.distributed_optimizer_instances());
  }
  return absl::StrFormat(
      "%s on %u x %s: TP=%u CP=%u PP=%u DP=%u%s MBS=%u seq=%u%s%s", model,
      job.num_gpus(), gpu, par.tensor_parallel(), par.context_parallel(),
      par.pipeline_parallel(), data_parallel, experts, tr.micro_batch_size(),
      tr.seq_length(), par.sequence_parallel() ? "" : " (no sequence parallel)",
      optimizer);
}

namespace {

// The stage whose held bytes and `extra` (a transient of StageMemory) are
// the most, said in a line where `extra` is positive anywhere.
void AppendBetweenStepsLine(const v1::Estimate& e, const char* what,
                            const char* made_of,
                            double (v1::StageMemory::*extra)() const,
                            std::string& out) {
  const v1::StageMemory* most = nullptr;
  double most_bytes = 0;
  for (const v1::StageMemory& s : e.stages()) {
    const double bytes = HeldBesideTransients(s) + (s.*extra)();
    if ((s.*extra)() > 0 && (most == nullptr || bytes > most_bytes)) {
      most = &s;
      most_bytes = bytes;
    }
  }
  if (most == nullptr) return;
  absl::StrAppendFormat(
      &out,
      "%s: stage %u holds up to %.2f GiB (%s: %.2f GiB above the training "
      "peak), of the %.2f GiB a process can allocate\n",
      what, most->stage(), ToGiB(most_bytes), made_of,
      ToGiB((most->*extra)()), ToGiB(AllocatableBytes(e.capacity_bytes())));
}

}  // namespace

std::string FormatEstimateTable(const v1::Estimate& e) {
  std::string out = absl::StrCat(JobSummaryLine(e.job(), e.data_parallel()),
                                 "\n\n");
  absl::StrAppendFormat(&out, "%-6s %7s %9s %9s %9s %10s %12s %10s\n",
                        "stage", "layers", "in-flight", "weights", "grads",
                        "optimizer", "activations", "total GiB");
  for (const v1::StageMemory& s : e.stages()) {
    absl::StrAppendFormat(
        &out, "%-6u %7u %9u %9.2f %9.2f %10.2f %12.2f %10.2f%s\n", s.stage(),
        s.num_layers(), s.microbatches_in_flight(), ToGiB(s.weight_bytes()),
        ToGiB(s.gradient_bytes()), ToGiB(s.optimizer_bytes()),
        ToGiB(s.activation_bytes()), ToGiB(s.total_bytes()),
        s.stage() == e.peak().stage() ? "  <- peak" : "");
  }
  absl::StrAppendFormat(
      &out,
      "\npeak: %.2f GiB (stage %u) = %.1f%% of %.2f GiB -> %s "
      "(GREEN <= %.0f%%, RED > 100%%)\n",
      e.peak_gib(), e.peak().stage(), 100 * e.capacity_fraction(),
      ToGiB(e.capacity_bytes()), ZoneName(e.zone()), 100 * e.threshold());
  if (const v1::StageMemory* s = StageWhoseTransientOverflows(e)) {
    absl::StrAppendFormat(
        &out,
        "RED: %s: %.2f GiB, more than the %.2f GiB a process can allocate "
        "of the GPU's %.2f GiB\n",
        TransientOverflowText(*s),
        ToGiB(HeldBesideTransients(*s) + TransientBytes(*s)),
        ToGiB(AllocatableBytes(e.capacity_bytes())),
        ToGiB(e.capacity_bytes()));
  } else if (RedThoughItsPeakFits(e)) {
    absl::StrAppendFormat(
        &out,
        "RED: more than the %.2f GiB a process can allocate of the GPU's "
        "%.2f GiB\n",
        ToGiB(AllocatableBytes(e.capacity_bytes())),
        ToGiB(e.capacity_bytes()));
  }
  // [OS] [EV] The step's and an evaluation's own peaks, where they pass
  // the training's: said whether or not they fit (they are not in the
  // table's totals).
  AppendBetweenStepsLine(e, "optimizer step",
                         "fp32 gradient copies, Lion's update or Muon's "
                         "Newton-Schulz copies",
                         &v1::StageMemory::optimizer_step_bytes, out);
  AppendBetweenStepsLine(e, "evaluation",
                         "its forward, beside any fp32 gradient copies",
                         &v1::StageMemory::evaluation_bytes, out);
  const double deepep = DeepEpShareOf(e.peak());
  if (deepep > 0) {
    absl::StrAppendFormat(
        &out,
        "total includes DeepEP's communication buffers: %.2f GiB on every "
        "GPU of a stage with MoE layers\n",
        ToGiB(deepep));
  }
  if (e.peak().te_userbuffer_bytes() > 0) {
    absl::StrAppendFormat(
        &out,
        "total includes TransformerEngine's userbuffers (--tp-comm-overlap): "
        "%.2f GiB on every GPU\n",
        ToGiB(e.peak().te_userbuffer_bytes()));
  }
  if (e.peak().gradient_scratch_bytes() > 0) {
    absl::StrAppendFormat(
        &out,
        "total includes the fp32-accumulating reduce-scatter's scratch "
        "(--ddp-reduce-scatter-with-fp32-accumulation): %.2f GiB above the "
        "activations it outlives\n",
        ToGiB(e.peak().gradient_scratch_bytes()));
  }
  if (e.peak().expert_imbalance_bytes() > 0) {
    absl::StrAppendFormat(
        &out,
        "expert load margin: +%.2f GiB on the most loaded expert-parallel "
        "rank (%.2f GiB decides the zone)\n",
        ToGiB(e.peak().expert_imbalance_bytes()),
        ToGiB(e.peak().total_bytes() + e.peak().expert_imbalance_bytes()));
  }
  for (const std::string& a : e.assumptions()) {
    absl::StrAppend(&out, "assumes: ", a, "\n");
  }
  return out;
}

}  // namespace memgate
