#include "planner/planner.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <optional>
#include <queue>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "estimator/deepep_buffers.h"
#include "estimator/estimate.h"
#include "estimator/job_resolver.h"
#include "estimator/layer_wise_layout.h"
#include "estimator/layer_wise_terms.h"
#include "estimator/megatron_names.h"
#include "estimator/memory_model.h"
#include "estimator/pipeline_layout.h"
#include "estimator/report.h"
#include "estimator/units.h"
#include "estimator/validation.h"
#include "planner/cheap_recompute.h"
#include "planner/cost_model.h"
#include "planner/gpu_datasheets.h"
#include "planner/divisors.h"
#include "planner/layer_figure_shelf.h"
#include "planner/plan_ranking.h"
#include "planner/stage_split.h"
#include "planner/starved_pipeline.h"

namespace memgate {
namespace {

// How many layouts pass between two calls of the interrupt check.
constexpr uint64_t kInterruptEvery = 4096;

// The request's model as a job naming it is resolved (job_resolver.h):
// a request that gives only a catalog name plans that model's layers, MTP
// layers and softmax (gpt-oss's sinks). As given where the name is not the
// catalog's (TemplateJob's resolution names what is missing).
v1::ModelConfig RequestModel(const v1::PlanRequest& request) {
  absl::StatusOr<v1::ModelConfig> model = ResolveModel(request.model());
  return model.ok() ? *std::move(model) : request.model();
}

// PlanRequest.training may not set what the planner searches, and must
// agree with what the request says elsewhere (memgate.proto); a precision
// either of them gives is the plan's.
absl::Status CheckTrainingTemplate(const v1::PlanRequest& request) {
  const v1::TrainingConfig& t = request.training();
  if (t.micro_batch_size() != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "training.micro_batch_size: the planner searches micro-batch sizes "
        "(max_micro_batch_size bounds them); leave it unset (got ",
        t.micro_batch_size(), ")"));
  }
  struct Agreed {
    const char* name;
    uint32_t in_training, in_request;
  };
  for (const Agreed& a :
       {Agreed{"seq_length", t.seq_length(), request.seq_length()},
        Agreed{"global_batch_size", t.global_batch_size(),
               request.global_batch_size()}}) {
    if (a.in_training != 0 && a.in_training != a.in_request) {
      return absl::InvalidArgumentError(absl::StrCat(
          "training.", a.name, ": ", a.in_training,
          " disagrees with the request's ", a.name, " (", a.in_request,
          "); leave it unset or equal"));
    }
  }
  if (t.precision() != v1::PRECISION_UNSPECIFIED &&
      request.precision() != v1::PRECISION_UNSPECIFIED &&
      t.precision() != request.precision()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "training.precision: ", v1::Precision_Name(t.precision()),
        " disagrees with the request's precision (",
        v1::Precision_Name(request.precision()), "); leave it unset or equal"));
  }
  if (t.recompute().granularity() == v1::Recompute::GRANULARITY_FULL) {
    return absl::InvalidArgumentError(
        "training.recompute: full recomputation is what the planner searches "
        "(the least that fits each layout); leave it unset or selective");
  }
  return absl::OkStatus();
}

// The training settings of every layout: the request's template, then
// what the planner owns. Candidates turn the dataloader's attention mask
// off (report.cc), so no layout counts it.
v1::TrainingConfig TrainingOf(const v1::PlanRequest& request,
                              uint32_t micro_batch_size) {
  v1::TrainingConfig t = request.training();
  t.set_micro_batch_size(micro_batch_size);
  t.set_seq_length(request.seq_length());
  t.set_global_batch_size(request.global_batch_size());
  if (request.precision() != v1::PRECISION_UNSPECIFIED) {
    t.set_precision(request.precision());
  }
  t.set_dataloader_attention_mask(false);
  return t;
}

// Full recomputation replaces a template's selective one: Megatron has one
// --recompute-granularity, and under "full" its --recompute-modules do
// nothing.
void UseFullRecomputation(Layout& l) {
  l.recompute = RecomputeKind::kFullBlock;
  l.recompute_mlp = l.recompute_moe = l.recompute_moe_act = false;
  l.recompute_layernorm = l.recompute_shared_experts = false;
  l.recompute_mla_up_proj = false;
}

// The request as a job template: resolves catalog names and checks what
// does not depend on the layout.
// The request's parallel settings the planner does not search (Megatron-
// FSDP's, the distributed optimizer's instances, context parallelism's
// exchange), as every layout's.
void SetRequestParallelOf(const v1::PlanRequest& request,
                          v1::ParallelConfig& par) {
  par.set_data_parallel_sharding(request.data_parallel_sharding());
  par.set_fsdp_double_buffer(request.fsdp_double_buffer());
  par.set_fsdp_communication_unit_size(
      request.fsdp_communication_unit_size());
  par.set_distributed_optimizer_instances(
      request.distributed_optimizer_instances());
  par.set_context_parallel_comm(request.context_parallel_comm());
  par.set_context_parallel_a2a_size(request.context_parallel_a2a_size());
  par.set_ddp_bucket_size(request.ddp_bucket_size());
  par.set_ddp_num_buckets(request.ddp_num_buckets());
  par.set_pad_buckets_for_high_nccl_busbw(
      request.pad_buckets_for_high_nccl_busbw());
  // Attention sinks run context parallelism over an all-to-all only, and
  // sliding windows over an all-to-all or an all-gather (validation.cc):
  // where the request leaves Megatron's p2p, every layout with CP takes an
  // all-to-all, at CP sizes that split a TP rank's heads (an exchange the
  // request names and the model cannot run is refused: TemplateJob).
  // (Unfused attention plans no CP at all.)
  const v1::ModelConfig model = RequestModel(request);
  const v1::ContextParallelComm comm = request.context_parallel_comm();
  if ((model.softmax_type() != v1::SOFTMAX_TYPE_VANILLA ||
       model.sliding_window()) &&
      (comm == v1::CONTEXT_PARALLEL_COMM_UNSPECIFIED ||
       comm == v1::CONTEXT_PARALLEL_COMM_P2P)) {
    par.set_context_parallel_comm(v1::CONTEXT_PARALLEL_COMM_A2A);
  }
}

// The request's context-parallel exchange, which every layout with CP
// runs, against what the model's attention can run it over (validation.cc
// says the same of each job; the 1-way template cannot ask it).
absl::Status CheckContextParallelExchange(const v1::Job& job) {
  const v1::ContextParallelComm comm = job.parallel().context_parallel_comm();
  const v1::AttentionKernel kernel = job.training().attention_kernel();
  if (kernel == v1::ATTENTION_KERNEL_UNFUSED ||
      kernel == v1::ATTENTION_KERNEL_LOCAL) {
    return absl::OkStatus();  // no layout with CP is planned
  }
  auto refuse = [comm](absl::string_view what, absl::string_view over) {
    return absl::InvalidArgumentError(absl::StrCat(
        "context_parallel_comm: ", what, " run context parallelism over ",
        over, " only, and every layout with CP would run ",
        v1::ContextParallelComm_Name(comm), ": request ", over,
        ", or leave it unset"));
  };
  const bool a2a = comm == v1::CONTEXT_PARALLEL_COMM_A2A;
  if (job.model().softmax_type() != v1::SOFTMAX_TYPE_VANILLA && !a2a) {
    return refuse("attention sinks (model.softmax_type)", "A2A");
  }
  if (job.model().sliding_window() && !a2a &&
      comm != v1::CONTEXT_PARALLEL_COMM_ALL_GATHER) {
    return refuse("sliding-window layers (model.sliding_window)",
                  "A2A or ALL_GATHER");
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::Job> TemplateJob(const v1::PlanRequest& request) {
  if (absl::Status s = CheckTrainingTemplate(request); !s.ok()) return s;
  v1::Job job;
  *job.mutable_model() = request.model();
  *job.mutable_accelerator() = request.accelerator();
  job.set_num_gpus(request.num_gpus());
  *job.mutable_training() = TrainingOf(request, 1);
  job.mutable_parallel()->set_tensor_parallel(1);
  job.mutable_parallel()->set_pipeline_parallel(1);
  job.mutable_parallel()->set_context_parallel(1);
  SetRequestParallelOf(request, *job.mutable_parallel());
  absl::StatusOr<v1::Job> resolved = ResolveJob(job);
  if (!resolved.ok()) return resolved.status();
  if (absl::Status s = CheckContextParallelExchange(*resolved); !s.ok()) {
    return s;
  }
  if (request.global_batch_size() == 0) {
    return absl::InvalidArgumentError(
        "global_batch_size: required for a plan: micro-batches per step set "
        "the pipeline bubble and which micro-batch sizes divide (got 0)");
  }
  // The 1-way layout checks every field that does not depend on the layout
  // (the global batch is checked per layout).
  v1::Job probe = *resolved;
  probe.mutable_training()->set_global_batch_size(0);
  if (probe.model().moe().token_dispatcher() ==
      v1::MoeConfig::DISPATCHER_FLEX) {
    // The flex dispatcher needs an expert group of 2 or more: its group
    // sizes are the layouts' (ForEachExpertLayout), the rest checked here.
    if (absl::Status s = ValidateFlexDispatcher(probe.model().moe(), 2);
        !s.ok()) {
      return s;
    }
    v1::MoeConfig& moe = *probe.mutable_model()->mutable_moe();
    moe.set_token_dispatcher(v1::MoeConfig::DISPATCHER_ALLTOALL);
    moe.clear_flex_dispatcher_num_sms();
  }
  if (probe.model().moe().overlap_expert_parallel_comm()) {
    // The EP overlap needs EP > 1 and interleaving when PP > 1: the
    // layouts' (ForEachExpertLayout, Enumerate); its other rules here.
    if (absl::Status s = ValidateExpertOverlap(probe, 2); !s.ok()) return s;
    probe.mutable_model()->mutable_moe()->clear_overlap_expert_parallel_comm();
  }
  if (probe.training().defer_embedding_wgrad()) {
    // Needs PP > 1, which a Megatron-FSDP plan never has (ForEachGroup):
    // named here rather than an empty plan.
    if (request.data_parallel_sharding() !=
        v1::DATA_PARALLEL_SHARDING_UNSPECIFIED) {
      return absl::InvalidArgumentError(
          "training.defer_embedding_wgrad: needs pipeline parallelism, and "
          "Megatron-FSDP (data_parallel_sharding) runs without it");
    }
    // Needs PP > 1 (the layouts', ForEachGroup) and a global batch (the
    // request's, checked above); the 1-way probe has neither.
    probe.mutable_training()->clear_defer_embedding_wgrad();
    probe.mutable_training()->clear_wgrad_deferral_limit();
  }
  // The overlap needs TP > 1, the layouts' (ForEachGroup).
  probe.mutable_training()->clear_tp_comm_overlap();
  if (LayoutOf(probe).layer_wise()) {
    // Lion's and Muon's packing is bounded a layout at a time (Enumerate
    // proposes none past it): over every GPU, 1-way, it would pack more
    // than any layout with experts or a pipeline.
    probe.set_num_gpus(1);
  }
  if (absl::Status s = ValidateJob(probe); !s.ok()) return s;
  return resolved;
}

std::string WhyOf(const Layout4D& l, const SpeedFactors& f, double capacity,
                  double threshold) {
  std::string why = absl::StrFormat(
      "%s %.2f GiB of %.2f GiB limit", ZoneName(l.zone),
      ToGiB(l.peak_bytes), ToGiB(threshold * capacity));
  if (l.zone != v1::ZONE_GREEN) {
    absl::StrAppend(&why,
                    l.zone == v1::ZONE_RED && l.peak_bytes <= capacity
                        ? ": a stage's transient (the loss's 16-bit "
                          "gradient of the logits, the output layer's or the "
                          "embedding's weight gradient) or its peak does not "
                          "fit in what a process can allocate"
                        : ": does not fit under the threshold");
    return why;
  }
  absl::StrAppendFormat(&why, "; GEMM efficiency %.0f%%", 100 * f.gemm);
  if (l.t > 1) absl::StrAppendFormat(&why, ", TP comm x%.2f", f.tensor);
  if (l.c > 1) absl::StrAppendFormat(&why, ", CP comm x%.2f", f.context);
  if (l.p > 1) {
    absl::StrAppendFormat(&why, ", bubble %.1f%%, stage imbalance x%.2f",
                          100 * l.bubble, f.imbalance);
    if (f.p2p < 1) absl::StrAppendFormat(&why, ", p2p x%.2f", f.p2p);
  }
  if (f.expert < 1) {
    absl::StrAppendFormat(&why, ", EP exchange x%.2f", f.expert);
  }
  if (l.recomputes()) {
    // One more forward of the recomputed layers or modules
    // (FitByRecomputing).
    absl::StrAppendFormat(&why, ", recomputation x%.2f", 1 / l.recompute_cost);
  }
  return why;
}

// Selective modules the search tries (cheap_recompute.h): those the
// template does not already recompute, their price (cost_model.h (7)), and
// the --recompute-modules of a layout that fits by them (the template's
// and these: ModulesOf).
struct ModuleChoice {
  SelectiveModules modules;
  double cost = 1;
  std::vector<v1::Recompute::Module> arguments;
};

struct Search {
  ModelShape shape;
  // The model of a candidate that recomputes moe_act: its arguments turn
  // grouped GEMMs on (RecomputeModulesIn), which lists its experts' FC1s
  // before their FC2s in [LW]'s buffers (layer_wise_terms.cc), so DDP's
  // buckets on the first rank differ.
  ModelShape moe_act_shape;
  LayerWeights weights;  // ActiveWeightsPerToken(shape), for the cost model
  Layout base;
  double capacity = 0;
  double threshold = 0;
  double gpus_per_node = 0;
  uint32_t gpus = 0, gbs = 0, seq = 0, max_mbs = 0;
  bool cross_node_tp = false;
  uint32_t heads = 0, kv_heads = 0, layers = 0, vocab = 0;
  uint32_t mtp = 0;  // MTP layers, on the last stage
  // The LM head in layers (cost_model.h HeadInLayers, at TP 1): where it
  // outweighs a layer, depths that divide the layers also try the split
  // that evens it out (HeadBalancedSplit).
  double head_in_layers = 0;
  std::vector<uint32_t> expert_divisors;  // of E; empty for dense models
  // Megatron-FSDP's strategy every layout shards with (the request's);
  // unspecified: the distributed optimizer.
  v1::DataParallelSharding sharding = v1::DATA_PARALLEL_SHARDING_UNSPECIFIED;
  bool allow_recompute = true;       // any recomputation
  bool allow_full_recompute = true;  // full (beyond selective modules)
  bool allow_interleave = true;
  // The forms the launch gives its split in (PlanRequest.launch_split):
  // candidates say theirs in them, and only splits they can say are
  // planned (LaunchCanSay).
  v1::LaunchSplit launch_split;
  // The selective recomputation tried: the cheap modules before full
  // recomputation, those and a dense MLP between its counts (FitBy-
  // Recomputing). Each none (modules.any() false) where not tried.
  ModuleChoice cheap, ffn;
  // The cost model with the GPU's datasheet ratios (gpu_datasheets.h).
  CostModel cost;
  // PlanOptions::most_recompute_probes.
  uint32_t* most_recompute_probes = nullptr;
};

// `modules` as the search tries them (none where not any()).
ModuleChoice ModuleChoiceOf(const Search& s, const SelectiveModules& modules) {
  ModuleChoice choice;
  if (!modules.any()) return choice;
  choice.modules = modules;
  choice.cost = SelectiveRecomputeCost(
      s.shape, s.weights, modules, s.seq,
      s.base.precision == v1::PRECISION_FP32 ? 4 : 2, s.cost);
  choice.arguments = ModulesOf(WithSelectiveModules(s.base, modules));
  return choice;
}

// The distributed optimizer's instances every layout has: the request's,
// in the template layout (at least 1, below 2^32).
uint64_t OptimizerInstances(const Search& s) {
  return static_cast<uint64_t>(s.base.optimizer_instances);
}

// Whether context parallelism's exchange can run at TP t and CP c (c > 1):
// a2a scatters each TP rank's query and key heads over c ranks, a2a+p2p
// over its inner level, which must divide c (ValidateContextParallelComm).
bool AllToAllSplitsHeads(const Search& s, uint32_t t, uint32_t c) {
  uint64_t scattered = 1;
  if (s.base.cp_comm == v1::CONTEXT_PARALLEL_COMM_A2A) scattered = c;
  if (s.base.cp_comm == v1::CONTEXT_PARALLEL_COMM_A2A_P2P) {
    scattered = static_cast<uint64_t>(s.base.cp_a2a_size);
    if (c % scattered) return false;
  }
  const uint64_t key_heads = s.shape.mla ? s.heads : s.kv_heads;
  return (s.heads / t) % scattered == 0 && (key_heads / t) % scattered == 0;
}

// fp8's bf16 layers at either end, as every layout of the plan runs them.
Bf16Ends Bf16EndsOf(const Search& s) {
  if (!HasBf16Layers(s.base)) return {};
  return {static_cast<uint32_t>(s.base.bf16_first_layers),
          static_cast<uint32_t>(s.base.bf16_last_layers)};
}

Layout LayoutFor(const Search& s, uint32_t t, uint32_t c, uint32_t p,
                 uint32_t d, uint32_t b, uint32_t ep = 1, uint32_t etp = 1) {
  Layout l = s.base;
  l.expert_parallel = ep;
  l.expert_tensor = etp;
  l.tensor = t;
  l.context = c;
  l.pipeline = p;
  l.data = d;
  l.micro_batch = b;
  // Micro-batches per step cap those a stage holds (memory_model.h).
  l.microbatches = s.gbs == 0 ? 0 : static_cast<double>(s.gbs) / (b * d);
  return l;
}

// [LW] Whether Lion's or Muon's layer-wise packing of the layout (t, c, p,
// d, ep, etp) is within what validation allows a job (always, under any
// other optimizer).
bool LayerWisePackingWithinBound(const Search& s, uint32_t t, uint32_t c,
                                 uint32_t p, uint32_t d, uint32_t ep,
                                 uint32_t etp) {
  if (!s.base.layer_wise()) return true;
  const Layout l = LayoutFor(s, t, c, p, d, 1, ep, etp);
  return LayerWisePackingWork(s.shape, l) <= double(kMaxLayerWisePackingWork);
}

// Whether a launch that gives its split in PlanRequest.launch_split's forms
// can take appended a candidate of p stages, v chunks a rank and this
// split and chunk form (Megatron refuses some forms beside others, and
// appending cannot remove one). Beside a layout, any (every split is said
// as one). Beside --account-for-embedding/loss-in-pipeline-split, only
// the split those switches give: every chunk (L + accounted) / (p v)
// layers, rank 0's first one fewer for the embedding, the last rank's last
// one fewer for the loss (transformer_config.py), on 2 or more stages,
// without MTP layers. Beside first/last counts, 2 or more stages and no
// accounted or layout splits; beside layers per virtual stage, even
// splits only; beside a virtual-stage count, no layout splits.
bool LaunchCanSay(const v1::LaunchSplit& launch, const StageSplit& split,
                  uint32_t layers, uint32_t p, uint32_t v, ChunkForm form) {
  if (launch.layout()) return true;
  const uint32_t embedding = launch.account_for_embedding() ? 1 : 0;
  const uint32_t loss = launch.account_for_loss() ? 1 : 0;
  if (embedding + loss > 0) {
    if (p < 2 || split.mtp > 0) return false;
    const uint64_t total = uint64_t{layers} + embedding + loss;
    if (total % (uint64_t{p} * v) != 0) return false;
    const uint64_t rank = total / p;  // a middle rank's layers
    // The planner's ranks: even, or first / middle / last.
    const bool even = split.first == 0;
    const uint64_t first = even ? layers / p : split.first;
    const uint64_t last = even ? layers / p : split.last;
    const uint64_t middle = even ? layers / p : split.middle;
    if (first != rank - embedding || last != rank - loss ||
        (p > 2 && middle != rank)) {
      return false;
    }
    // Its chunks: one a rank, or the accounted form's (the first and last
    // ranks' short chunk first and last); first/last counts spread evenly
    // over v chunks differ.
    return v == 1 || form == ChunkForm::kAccounted;
  }
  if (launch.first_last() &&
      (p < 2 || form == ChunkForm::kAccounted ||
       form == ChunkForm::kMtpLayout)) {
    return false;
  }
  if (launch.layers_per_virtual_stage() && form != ChunkForm::kEven) {
    return false;
  }
  return !(launch.virtual_stages() && form == ChunkForm::kMtpLayout);
}

// The split of the model's layers over p stages the plan tries. Where the
// launch accounts for the embedding or the loss alone, Megatron's split
// (transformer_config.py): every stage (L + 1) / p layers, the first or
// the last one fewer, and no other split of such a launch runs
// (LaunchCanSay). Otherwise SplitLayers', whose uneven split puts the
// shorter stage first (where the embedding is) and which gives two stages
// no uneven split of its own.
StageSplit SplitFor(const Search& s, uint32_t p) {
  const bool embedding = s.launch_split.account_for_embedding();
  const bool loss = s.launch_split.account_for_loss();
  if (embedding == loss || s.mtp > 0 || p < 2 ||
      (uint64_t{s.layers} + 1) % p != 0) {
    return SplitLayers(s.layers, p, s.mtp);
  }
  StageSplit split;
  split.middle = static_cast<uint32_t>((uint64_t{s.layers} + 1) / p);
  split.first = split.middle - (embedding ? 1 : 0);
  split.last = split.middle - (loss ? 1 : 0);
  split.ok = split.first >= 1 && split.last >= 1;
  return split;
}

// Calls visit(t, c, p) for every (TP, CP, PP) that the rules ValidateJob
// enforces allow, by construction. At most |divisors(gpus)|^3 steps: about
// 14 million cheap ones for the most divisible count under kMaxPlanGpus.
template <typename Visit>
void ForEachGroup(const Search& s, const std::vector<uint32_t>& gpu_divisors,
                  Visit visit) {
  for (uint32_t t : gpu_divisors) {
    if (!s.cross_node_tp && s.gpus_per_node > 0 && t > s.gpus_per_node) break;
    // Within a node, TP groups must tile it (TP 4 on 6-GPU nodes would
    // straddle nodes).
    if (!s.cross_node_tp && s.gpus_per_node > 0 &&
        static_cast<uint64_t>(s.gpus_per_node) % t) {
      continue;
    }
    if (s.heads % t || s.kv_heads % t) continue;
    // MLA's fused down projection is cut into latents over TP (ValidateJob).
    if (s.shape.mla_fused_down_projection &&
        (std::fmod(s.shape.q_lora, t) != 0 ||
         std::fmod(s.shape.kv_lora + s.shape.qk_rope, t) != 0)) {
      continue;
    }
    // --tp-comm-overlap asserts sequence parallelism, which Megatron turns
    // off at TP 1 (ValidateJob).
    if (t < 2 && s.base.tp_comm_overlap) continue;
    // An allocated vocabulary is split over TP (ValidateJob).
    if (s.shape.vocab_multiple <= 0 && s.vocab % t) continue;
    if (t > 1 && s.base.sequence_parallel && s.seq % t) continue;
    for (uint32_t c : gpu_divisors) {
      if (c > s.gpus / t) break;
      if ((s.gpus / t) % c) continue;
      if (c > 1 && s.seq % (2ull * c)) continue;
      if (c > 1 && s.seq / c < kMinTokensPerContextRank) continue;
      // Megatron's CP needs TransformerEngine's fused attention; Gemma 2's
      // own attention (soft-capped scores), flex or not, raises at CP > 1
      // (ValidateJob).
      if (c > 1 &&
          (s.base.unfused_attention || s.shape.attention_softcapping)) {
        continue;
      }
      // An all-to-all exchange scatters the TP rank's heads (ValidateJob).
      if (c > 1 && !AllToAllSplitsHeads(s, t, c)) continue;
      // The rule ValidateJob enforces: s / c tokens split over t.
      if (t > 1 && s.base.sequence_parallel && s.seq % (uint64_t{c} * t)) {
        continue;
      }
      for (uint32_t p : gpu_divisors) {
        if (p > s.gpus / t / c) break;
        if ((s.gpus / t / c) % p) continue;
        if (p > kMaxPipelineStages) continue;
        const StageSplit split = SplitFor(s, p);
        if (!split.ok) continue;
        // The plain schedule's split must be one the launch's forms can
        // say (PipelinesOf filters the interleaved ones).
        if (!LaunchCanSay(s.launch_split, split, s.layers, p, 1,
                          ChunkFormOf(split, p, 1))) {
          continue;
        }
        // Megatron defers the output layer's weight gradient to the
        // pipeline flush only with a pipeline (ValidateJob).
        if (p < 2 && s.base.defer_embedding_wgrad) continue;
        // fp8's bf16 layers at either end fit in L / p (ValidateJob).
        if (std::max(s.base.bf16_first_layers, s.base.bf16_last_layers) >
            s.layers / p) {
          continue;
        }
        // Megatron-FSDP runs without a pipeline (ValidateJob).
        if (p > 1 && s.sharding != v1::DATA_PARALLEL_SHARDING_UNSPECIFIED) {
          continue;
        }
        // The optimizer's instances divide the d x c = GPUs / (t p) ranks
        // (ValidateJob).
        if ((s.gpus / t / p) % OptimizerInstances(s)) continue;
        visit(t, c, p);
      }
    }
  }
}

// Calls visit(ep, etp) for the expert layouts of a (TP, CP, PP) group that
// Megatron allows (validation.cc): EP divides E, EP x ETP x PP divides the
// GPUs and fits in a stage's GPUs; ETP is 1 or TP; with the flex
// dispatcher, a group DeepEP supports. Dense models: (1, 1).
template <typename Visit>
void ForEachExpertLayout(const Search& s, uint32_t t, uint32_t p,
                         Visit visit) {
  if (s.expert_divisors.empty()) {
    visit(1, 1);
    return;
  }
  const uint64_t stage_gpus = s.gpus / p;
  for (uint32_t etp : {1u, t}) {
    for (uint32_t ep : s.expert_divisors) {
      const uint64_t group = uint64_t{ep} * etp;
      if (group > stage_gpus) break;
      // The flex dispatcher runs only on the group sizes DeepEP has a
      // config for (validation.cc).
      if (s.base.deepep_dispatcher &&
          !DeepEpSupportsGroup(static_cast<uint32_t>(group))) {
        continue;
      }
      // The EP all-to-all overlap needs an exchange (validation.cc).
      if (s.base.ep_overlap && ep == 1) continue;
      // TransformerEngine's fused grouped MLP runs without expert TP
      // (validation.cc).
      if (s.base.fused_grouped_mlp && etp > 1) continue;
      // The optimizer's instances divide the expert-data-parallel ranks
      // (ValidateJob).
      if ((stage_gpus / group) % OptimizerInstances(s)) continue;
      if (stage_gpus % group == 0) visit(ep, etp);
    }
    if (t == 1) break;  // ETP 1 and TP are the same choice
  }
}

// Micro-batch sizes up to max_mbs that divide the global batch (the data-
// parallel split is checked per layout).
uint64_t MicroBatchChoices(const Search& s) {
  uint64_t n = 0;
  for (uint32_t b = 1; b <= s.max_mbs; ++b) n += s.gbs % b == 0;
  return n;
}

// The schedules a pipeline of p stages can run: plain 1F1B (v = 1) and
// every chunk count v up to kMaxPlanVirtualStages that its split allows
// (ChunkFormOf). Each layout is listed with three of them (Enumerate):
// plain, the interleaving fastest after the recomputation it needs to fit
// (from the one the cost model finds fastest, deeper), and the deepest.
// Deeper interleaving holds fewer chunks' layers beyond a stage's own
// (1 + (p - 1) / (p v)) and divides the bubble by v, but multiplies the
// point-to-point sends by v: the cost model prices that trade (cost_model.h,
// (5)) instead of the planner fixing a depth (NVIDIA's Llama-3.1-405B
// recipes interleave 7 chunks over 9 stages, 8 over 8); the deepest needs
// the least memory of the interleavings, so it is the one that fits when
// any does. Megatron also needs the micro-batches per step to be a multiple
// of p when v > 1, checked per layout.
struct Chunking {
  uint32_t v;
  ChunkForm form;
  std::vector<RankChunks> chunks;  // PeakRankChunksOf(split, p, v, ...)
};

// One split of the layers over p stages and its chunkings.
struct PipelineSplit {
  StageSplit split;
  // v increasing, v = 1 first; empty: the split is not tried.
  std::vector<Chunking> chunkings;
};

// The splits a depth p is tried with: SplitFor's, and where p divides the
// layers and the LM head outweighs a layer, HeadBalancedSplit's and the
// one a step toward even (TowardEven); empty: p is not tried.
// (At most kSplitsPerDepth, stage_split.h.)
struct PipelineChoices {
  std::vector<PipelineSplit> splits;
};

// `split` over p stages with the chunkings Megatron and the launch's forms
// allow it (LaunchCanSay), v increasing from 1.
PipelineSplit ChunkingsOf(const Search& s, const StageSplit& split,
                          uint32_t p) {
  PipelineSplit out{split, {}};
  const uint32_t deepest =
      std::min(kMaxPlanVirtualStages, std::max(1u, split.middle));
  for (uint32_t v = 1; v <= deepest; ++v) {
    const ChunkForm form = ChunkFormOf(split, p, v);
    if (form == ChunkForm::kNone) continue;
    if (!LaunchCanSay(s.launch_split, split, s.layers, p, v, form)) continue;
    out.chunkings.push_back(
        Chunking{v, form, PeakRankChunksOf(split, p, v, s.shape,
                                           Bf16EndsOf(s))});
  }
  return out;
}

// One entry per divisor of the GPU count (the p's ForEachGroup can visit),
// built once a plan: O(|divisors| x kSplitsPerDepth x
// kMaxPlanVirtualStages^2).
std::vector<PipelineChoices> PipelinesOf(
    const Search& s, const std::vector<uint32_t>& gpu_divisors) {
  std::vector<PipelineChoices> out(gpu_divisors.size());
  for (size_t i = 0; i < gpu_divisors.size(); ++i) {
    const uint32_t p = gpu_divisors[i];
    if (p > kMaxPipelineStages) break;
    PipelineChoices& choices = out[i];
    // Depths ForEachGroup never visits are not worked out: bf16 layers
    // beyond L / p at either end (ValidateJob), which also keeps the walk
    // over their chunks (MiddleRanksHoldingBf16) to L / p + 2 steps.
    if (std::max(s.base.bf16_first_layers, s.base.bf16_last_layers) >
        s.layers / p) {
      continue;
    }
    const StageSplit split = SplitFor(s, p);
    if (!split.ok) continue;
    choices.splits.push_back(ChunkingsOf(s, split, p));
    // The LM head evened out (not with MTP layers, which the last stage
    // holds in a form of their own, nor fp8's bf16 layers at either end;
    // nor where the plan keeps to the paper's plain, even pipelines:
    // PlanRequest.no_interleave; nor under Lion's and Muon's layer-wise
    // optimizer, whose packing of every split's ranks is most of such a
    // plan's work, and whose MoE plans sit near their bound,
    // kMaxPlanLayerWiseWork: Qwen3-30B-A3B on 64 GPUs counts 0.97e9
    // steps with one split, 1.32e9 with three).
    if (split.first == 0 && s.mtp == 0 && !HasBf16Layers(s.base) &&
        s.allow_interleave && !s.base.layer_wise()) {
      // The fastest, and a step back toward even, lighter where it counts.
      const StageSplit balanced =
          HeadBalancedSplit(s.layers, p, s.head_in_layers);
      for (const StageSplit& tried_split :
           {balanced, TowardEven(balanced, s.layers, p)}) {
        if (!tried_split.ok) continue;
        PipelineSplit tried = ChunkingsOf(s, tried_split, p);
        if (!tried.chunkings.empty()) choices.splits.push_back(tried);
      }
    }
  }
  return out;
}

const PipelineChoices& ChoicesFor(
    const std::vector<PipelineChoices>& pipelines,
    const std::vector<uint32_t>& gpu_divisors, uint32_t p) {
  const size_t i = static_cast<size_t>(
      std::lower_bound(gpu_divisors.begin(), gpu_divisors.end(), p) -
      gpu_divisors.begin());
  return pipelines[i];
}

uint64_t CountLayouts(const Search& s,
                      const std::vector<uint32_t>& gpu_divisors,
                      const std::vector<PipelineChoices>& pipelines) {
  uint64_t groups = 0;
  ForEachGroup(s, gpu_divisors, [&](uint32_t t, uint32_t, uint32_t p) {
    const PipelineChoices& choices = ChoicesFor(pipelines, gpu_divisors, p);
    size_t schedules = 0;
    // With MoE layers among dense ones a schedule evaluates up to p ranks
    // (DistinctRanksOf): each counts.
    uint64_t ranks = 1;
    for (const PipelineSplit& tried : choices.splits) {
      schedules +=
          s.allow_interleave
              ? std::min(kSchedulesPerSplit, tried.chunkings.size())
              : 1;
      if (!s.shape.moe_irregular) continue;
      for (const Chunking& chunking : tried.chunkings) {
        ranks = std::max<uint64_t>(ranks, chunking.chunks.size());
      }
    }
    ForEachExpertLayout(s, t, p, [&](uint32_t, uint32_t) {
      groups += schedules * ranks;
    });
  });
  return groups * MicroBatchChoices(s);
}

bool IsGreen(const Search& s, const StagePeak& peak) {
  return AdmissionZone(peak, s.capacity, s.threshold) == v1::ZONE_GREEN;
}

// The admission peak of a layout and its transient peak (memory_model.h
// StagePeak): of the ranks `chunks` lists (PeakRankChunksOf: interleaved
// uneven splits, and MoE layers placed unevenly [XR]), chunk by chunk;
// else of the even split's ranks that can peak, or an uneven split's
// first, second and last stages.
//
// A probe (FitByRecomputing's) needs only whether the layout fits: it
// stops at the first rank that does not (a peak never falls as ranks are
// added, and a zone never improves as the peak grows), its figures then a
// lower bound that is not read.
StagePeak PeakOf(const Search& s, const Layout& l, const StageSplit& split,
                 const std::vector<RankChunks>& chunks,
                 LayoutLayerFigures& kept, bool probe = false) {
  auto enough = [&](const StagePeak& peak) {
    return probe && !IsGreen(s, peak);
  };
  StagePeak peak;
  // The model as the candidate's job has it.
  const ModelShape& shape = l.recompute_moe_act ? s.moe_act_shape : s.shape;
  LayoutStages stages(shape, l, kept);
  if (!chunks.empty()) {
    for (const RankChunks& rank : chunks) {
      // One chunk a rank is plain 1F1B: a stage, as the estimate has it.
      peak.Add(rank.layers.size() == 1
                   ? stages.Stage(rank.stage, rank.layers[0], rank.first[0])
                   : stages.Chunks(rank.stage, rank.mix));
      if (enough(peak)) break;
    }
    return peak;
  }
  if (split.first == 0) return PeakOfEvenStages(shape, l, kept, enough);
  const uint32_t p = static_cast<uint32_t>(l.pipeline);
  peak.Add(stages.Stage(0, split.first, 0));
  if (enough(peak)) return peak;
  peak.Add(stages.Stage(p - 1, split.last, s.layers - split.last));
  // The middle ranks that can peak (none of two stages).
  const PeakRanks middle = MiddlePeakRanks(
      p, RankHoldingLayer(s.shape.leading_dense, split.first, split.middle, 0,
                          p));
  for (uint32_t k = 0; k < middle.count && !enough(peak); ++k) {
    const uint32_t rank = middle.rank[k];
    peak.Add(stages.Stage(rank, split.middle,
                          split.first + (rank - 1.0) * split.middle));
  }
  return peak;
}

// A layout that does not fit is made to fit by the cheapest recomputation
// that does, each choice priced as one more forward of what it recomputes
// (a forward is about a third of forward plus backward): full
// recomputation (method block) of the least number of each chunk's layers
// that fits, x (1 + n / 3L) for n of L; Megatron's cheap selective modules
// (CheapModulesFor: x 1.04 for DeepSeek-V3, mostly MLA's up projections,
// cost_model.h (7)); and a dense model's MLP recomputed selectively
// (FfnModulesFor): x 1.26 for Llama-3.1-405B at 8k, whose MLP is four
// fifths of a layer's FLOPs, between three quarters of a chunk (x 1.25)
// and all (x 1.33); x 1.16 at 128k, where attention's s x s work, which it
// does not repeat, is half. An MoE model's MoE layers recomputed whole
// (Megatron's "moe") take the MLP's place, at their GEMMs' price and their
// exchange's forward again (the layout's: cost_model.h
// MoeRecomputeExchange): DeepSeek-V3 over 2-layer chunks fits by them at
// about x 1.28 where it would recompute both layers (x 4/3). A selective
// choice is tried once it costs no more than the least count of layers
// not yet ruled out, so the first that fits is the cheapest. At most two
// selective estimates and 4 + log2(L / 4) counts, so the search stays
// bounded.
//
// As the micro-batch grows at one global batch a stage's peak hardly falls
// (what it holds is b times its micro-batches in flight, min(b x in
// flight, tokens of the step), plus working sets that scale with b; less
// than kMicroBatchFall where it falls: memory_model.h), so for one layout
// in increasing micro-batch sizes `probe` carries what the smaller ones
// found by more than that fall (FarOver): once even every layer does not
// fit, no larger one is tried, nor a count of layers ruled out, nor
// selective modules that did not fit, nor the schedule as given.
// Under Megatron's own attention (Layout::unfused_attention) nothing is
// carried: a larger micro-batch can bring its fused softmax kernel in, a
// third less.
struct RecomputeProbe {
  bool hopeless = false;   // every layer recomputed did not fit
  bool cheap_failed = false;  // the cheap modules did not fit
  bool ffn_failed = false;    // nor those and the MLP or MoE part
  // The schedule as given did not fit; `model_states` what that probe
  // found of the weights, gradients and optimizer states (which do not
  // depend on the micro-batch): a lower bound, as a probe's are.
  bool over_as_given = false;
  uint32_t least = 0;      // no count of layers below this fits
  double model_states = 0;
};

// Whether a probe's figures miss the limit by more than a larger micro-
// batch of the same schedule could lower them (RecomputeProbe): what does
// not fit now will not then. (A probe's figures are a lower bound of the
// whole peak's, so the whole one misses by as much.)
bool FarOver(const Search& s, const StagePeak& peak) {
  if (s.base.unfused_attention) return false;
  StagePeak lowered = peak;
  lowered.admission *= 1 - kMicroBatchFall;
  lowered.transient *= 1 - kMicroBatchFall;
  return !IsGreen(s, lowered);
}

// The layers of a chunk of v a rank whose share FitByRecomputing
// recomputes (Megatron's --recompute-num-layers counts layers of each
// chunk): the largest stage's over v.
uint32_t ChunkLayers(const StageSplit& split, uint32_t v) {
  return std::max(split.middle, split.first) / std::max(1u, v);
}

// FitByRecomputing's `worth` that tries every recomputation that competes
// (costs at most kMaxCompetingRecomputeCost), and nothing costlier.
const double kCompetingRecomputeWorth =
    std::nextafter(kMaxCompetingRecomputeCost, 2.0);

// FitByRecomputing's `worth`: recomputation that costs this or more is
// not tried (for a caller that wants the entry only where it beats a
// speed). True where every recomputation was tried and none fits (nor
// does any at this micro-batch): then the entry stays as it was.
bool FitByRecomputing(const Search& s, Layout l, const StageSplit& split,
                      const std::vector<RankChunks>& chunks,
                      double model_states, Layout4D& entry,
                      RecomputeProbe& probe, KeptLayerFigures& kept,
                      double worth = std::numeric_limits<double>::infinity()) {
  const uint32_t stage_layers = ChunkLayers(split, entry.v);
  if (stage_layers == 0 || probe.hopeless) return true;
  // Where the weights, gradients and optimizer states alone do not fit,
  // no recomputation makes the stage fit: no estimate is spent on it
  // (whatever the micro-batch: they do not depend on it).
  StagePeak floor;
  floor.admission = model_states;
  if (!IsGreen(s, floor)) {
    probe.hopeless = true;
    return true;
  }
  // (Full recomputation of every layer keeps less than any selective
  // modules: once it does not fit, neither do they.)
  bool untried = false;  // a choice not tried for its price
  // The estimates this search makes, the most kept for the bound's test.
  uint32_t probes = 0;
  struct KeepMost {
    uint32_t* most;
    const uint32_t& probes;
    ~KeepMost() {
      if (most != nullptr && probes > *most) *most = probes;
    }
  } keep_most{s.most_recompute_probes, probes};
  // An MoE layer recomputed whole also runs its exchange forward again,
  // a price of the layout's (cost_model.h SelectiveRecomputeCostAt).
  auto cost_of = [&](const ModuleChoice& choice) {
    return SelectiveRecomputeCostAt(choice.modules, choice.cost,
                                    entry.exchange);
  };
  auto fits_by = [&](const ModuleChoice& choice, ModuleSet set,
                     LayoutLayerFigures& figures, bool& failed) {
    if (!choice.modules.any() || failed) return false;
    const double cost = cost_of(choice);
    if (cost >= worth) {
      untried = true;
      return false;
    }
    ++probes;
    const StagePeak peak = PeakOf(s, WithSelectiveModules(l, choice.modules),
                                  split, chunks, figures, /*probe=*/true);
    if (!IsGreen(s, peak)) {
      failed = FarOver(s, peak);
      return false;
    }
    entry.peak_bytes = peak.admission;
    entry.zone = v1::ZONE_GREEN;
    entry.modules = set;
    entry.recompute_cost = cost;
    entry.speed /= entry.recompute_cost;
    return true;
  };
  // The selective choices, each tried once it costs no more than `cost`
  // (the least full recomputation not yet ruled out, or any): the cheap
  // modules first, then those with the MLP or MoE part.
  bool cheap_tried = false, ffn_tried = false;
  auto selective_fits = [&](double cost) {
    if (!cheap_tried && cost_of(s.cheap) <= cost) {
      cheap_tried = true;
      if (fits_by(s.cheap, ModuleSet::kCheap, kept.cheap, probe.cheap_failed)) {
        return true;
      }
    }
    if (!ffn_tried && cost_of(s.ffn) <= cost) {
      ffn_tried = true;
      return fits_by(s.ffn, ModuleSet::kWithFfn, kept.ffn, probe.ffn_failed);
    }
    return false;
  };
  const double any = std::numeric_limits<double>::infinity();
  // Full recomputation under full recomputation's rules only: the
  // Megatron-LM EP overlap refuses it (validation.cc).
  if (!s.allow_full_recompute) return !selective_fits(any) && !untried;
  Layout full = l;
  UseFullRecomputation(full);
  StagePeak peak;
  auto fits = [&](uint32_t n) {
    full.recompute_layers = n;
    ++probes;
    peak = PeakOf(s, full, split, chunks, kept.full, /*probe=*/true);
    return IsGreen(s, peak);
  };
  // A peak never rises as more layers are recomputed (monotonic_estimates_
  // test, "block recomputation of one layer more"), so the counts that fit
  // are those from the least up: quarters of the chunk, the smallest
  // first, bracket it (most layouts that fit by recomputing fit by a
  // quarter or two) and a bisection between the last quarter that missed
  // and the first that fits finds it in layers, as Megatron counts them
  // (--recompute-num-layers). The largest count tried is the largest that
  // costs less than `worth`; every layer, where that is all of them, is
  // the test of whether any fits. A count that misses by more than a
  // larger micro-batch could lower the peak (FarOver) misses there too, as
  // every smaller one does: `probe.least` starts that search above it.
  const uint32_t affordable =
      MostLayersRecomputedBelow(worth, stage_layers, entry.exchange);
  uint32_t missed = std::min(affordable, probe.least > 0 ? probe.least - 1 : 0);
  uint32_t least = 0;
  StagePeak least_peak;
  // Tries `n` layers, after any selective choice that costs no more than
  // the least count not ruled out; true where a choice that fits is found.
  auto found_by = [&](uint32_t n) {
    if (selective_fits(
            FullRecomputeCost(missed + 1, stage_layers, entry.exchange))) {
      return true;
    }
    if (fits(n)) {
      least = n;
      least_peak = peak;
      return false;
    }
    missed = n;
    if (FarOver(s, peak)) probe.least = std::max(probe.least, n + 1);
    return false;
  };
  for (uint32_t quarter = 1; quarter <= 4 && least == 0; ++quarter) {
    const uint32_t n = std::min(affordable, (stage_layers * quarter + 3) / 4);
    if (n > missed && found_by(n)) return false;
  }
  while (least > missed + 1) {
    if (found_by(missed + (least - missed) / 2)) return false;
  }
  if (least == 0) {
    // Every layer did not fit, by more than a larger micro-batch's fall;
    // nor, then, do selective modules (they keep more).
    if (probe.least > stage_layers) probe.hopeless = true;
    if (affordable == stage_layers) return true;
    // Not every count was tried (`worth`): a selective choice may cost
    // less than the first left out.
    selective_fits(any);
    return false;
  }
  const double cost = FullRecomputeCost(least, stage_layers, entry.exchange);
  if (selective_fits(cost)) return false;
  entry.peak_bytes = least_peak.admission;
  entry.zone = v1::ZONE_GREEN;
  entry.recompute = least;
  entry.recompute_cost = cost;
  entry.speed /= entry.recompute_cost;
  return false;
}

// The index in `chunkings` (1 or more) of the interleaving the cost model
// finds fastest. Speed depends on v only through the bubble, B / v with B
// = (p - 1) / m the plain one, and interleaving's extra sends, `send_share`
// of the compute for each of the v - 1 extra chunks (cost_model.h (4),
// (5)): it is the largest 1 / ((1 + B / v)(1 + send_share (v - 1))), the
// deeper on a tie (less memory).
size_t FastestInterleaving(const std::vector<Chunking>& chunkings,
                           const SpeedFactors& plain) {
  size_t best = chunkings.size() - 1;
  double best_cost = 0;
  for (size_t i = chunkings.size() - 1; i >= 1; --i) {
    const double v = chunkings[i].v;
    const double cost =
        (1 + plain.bubble / v) * (1 + plain.send_share * (v - 1));
    if (i == chunkings.size() - 1 || cost < best_cost) {
      best = i;
      best_cost = cost;
    }
  }
  return best;
}

// Every valid layout, estimated; stops early with the interrupt's status.
// A schedule that does not fit, even recomputing, is estimated whole to
// order it among the others that do not fit, which a plan shows only where
// fewer layouts fit than it shows (`shown`): once that many layouts
// (TP, CP, PP, EP, ETP, MBS) have a schedule that fits, later misses are
// left unresolved and never shown (RankLayouts keeps at least that many
// distinct layouts of each tier, or all of its own, before it reaches
// the misses: plan_ranking.cc). Most of a large plan's misses come after
// (a plan of DeepSeek-V3 on 16,384 GPUs finds 4 in 10 of its schedules not
// fitting and more than a thousand layouts that do); a plan where few fit
// does the work it did.
//
// Under a ranking that orders by the rule's group first (RuleGroupOf; not
// kCostModel), a layout none of whose schedules can have a group as small
// as the `shown`-th smallest of the layouts that fit as given so far is
// not estimated at all: RankLayouts lists those `shown` before it (tier 1
// by group; a competing recomputation only before a fit of a larger
// group; the rest after every fit), so it can never be shown. Most of a
// 16,384-GPU plan of the best ten is such (in the order visited, half of
// DeepSeek-V3's schedules, two thirds of Qwen3-235B's, nine in ten of
// the alternating MoE model's). `layouts` counts every valid layout,
// estimated or not.
absl::StatusOr<std::vector<Layout4D>> Enumerate(
    const Search& s, const std::vector<uint32_t>& gpu_divisors,
    const std::vector<PipelineChoices>& pipelines, uint64_t expected,
    size_t shown, Ranking ranking, const PlanInterrupt& interrupt,
    uint64_t& estimated, uint64_t& layouts) {
  const CostModel& cost = s.cost;
  std::vector<Layout4D> out;
  out.reserve(expected);
  absl::Status stop;
  LayerFigureShelf shelf;
  // Layouts with a schedule that fits so far: each (TP, CP, PP, EP, ETP,
  // MBS) is visited once, its schedules emitted together.
  size_t fitting_layouts = 0;
  // The `shown` smallest groups of the layouts that fit as given so far
  // (each layout's smallest), the largest on top.
  const bool by_group = ranking != Ranking::kCostModel;
  std::priority_queue<uint64_t> fitting_groups;
  ForEachGroup(s, gpu_divisors, [&](uint32_t t, uint32_t c, uint32_t p) {
    if (!stop.ok()) return;
    const uint32_t d = s.gpus / t / c / p;
    const PipelineChoices& choices = ChoicesFor(pipelines, gpu_divisors, p);
    // ForEachGroup visits only depths whose own split PipelinesOf tried.
    if (choices.splits.empty()) return;
    ForEachExpertLayout(s, t, p, [&](uint32_t ep, uint32_t etp) {
      // [LW] A layout Megatron packs past what memgate bounds is one
      // validation refuses: not proposed. Those it packs, it packs once a
      // schedule and rank, whatever the micro-batch and recomputation.
      if (!LayerWisePackingWithinBound(s, t, c, p, d, ep, etp)) return;
      LayerWiseMemo layer_wise;
      // Per split and schedule: micro-batch sizes come in increasing order.
      RecomputeProbe probe_table[kSplitsPerDepth][kMaxPlanVirtualStages];
      for (uint32_t b = 1; b <= s.max_mbs && stop.ok(); ++b) {
        if (s.gbs % b || (s.gbs / b) % d) continue;
        const uint32_t m = s.gbs / b / d;
        Layout l = LayoutFor(s, t, c, p, d, b, ep, etp);
        KeptLayerFigures& kept = shelf.For(t, c, ep, etp, b);
        for (LayoutLayerFigures* figures :
             {&kept.as_given, &kept.cheap, &kept.ffn, &kept.full}) {
          figures->routed.layer_wise = l.layer_wise() ? &layer_wise : nullptr;
        }
        ++layouts;
        // Megatron's interleaving rule, at its default group of p
        // micro-batches: m a multiple of p.
        auto interleaves_of = [&](const std::vector<Chunking>& chunkings) {
          return s.allow_interleave && chunkings.size() > 1 &&
                 InterleavedGroupsRun(p, p, m);
        };
        // Plain 1F1B's factors over a split (the first split's also give
        // the pruning below its exchange and bubble, which no split
        // changes).
        auto plain_of = [&](const StageSplit& split) {
          return SpeedOf(s.shape, s.weights, l, m, s.gpus_per_node, cost,
                         StageLayers{double(split.first),
                                     double(split.last)});
        };
        const SpeedFactors first_plain = plain_of(choices.splits[0].split);
        if (by_group && fitting_groups.size() >= shown) {
          // Its smallest group: its exchange, and the smallest bubble of
          // its schedules (the deepest interleaving's of any split, the
          // group growing with the bubble).
          const SpeedFactors& plain = first_plain;
          Layout4D smallest{};
          smallest.t = t;
          smallest.c = c;
          smallest.p = p;
          smallest.exchange = plain.expert;
          smallest.bubble = plain.bubble;
          for (const PipelineSplit& tried : choices.splits) {
            if (!interleaves_of(tried.chunkings)) continue;
            smallest.bubble = std::min(
                smallest.bubble, plain.bubble / tried.chunkings.back().v);
          }
          if (RuleGroupOf(smallest, ranking) > fitting_groups.top()) continue;
        }
        bool fits = false;  // some schedule of this layout
        // The smallest group of its schedules that fit as given.
        uint64_t fit_group = std::numeric_limits<uint64_t>::max();
        auto emit = [&](const Layout4D& entry) {
          fits = fits || entry.zone == v1::ZONE_GREEN;
          if (entry.zone == v1::ZONE_GREEN && !entry.recomputes()) {
            fit_group = std::min(fit_group, RuleGroupOf(entry, ranking));
          }
          out.push_back(entry);
          if (interrupt && out.size() % kInterruptEvery == 0) {
            stop = interrupt();
          }
        };
        // Each split the depth is tried with, its schedules listed apart:
        // a layout's variants are ranked together (plan_ranking.h).
        const uint32_t given_v = l.virtual_stages;
        // (PipelinesOf adds at most kSplitsPerDepth: probe_table's rows.)
        for (size_t k = 0;
             k < std::min(choices.splits.size(), kSplitsPerDepth) && stop.ok();
             ++k) {
          const StageSplit& split = choices.splits[k].split;
          const std::vector<Chunking>& chunkings = choices.splits[k].chunkings;
          RecomputeProbe* probes = probe_table[k];
          l.virtual_stages = given_v;
          const StageLayers stages{double(split.first), double(split.last)};
          const SpeedFactors plain = k == 0 ? first_plain : plain_of(split);
          const bool interleaves = interleaves_of(chunkings);
          // One schedule of the layout (chunkings[i]; 0 is plain 1F1B),
          // estimated, with the least recomputation that makes it fit.
          auto speed_of = [&](size_t i) {
            l.virtual_stages = chunkings[i].v;
            return i == 0 ? plain
                          : SpeedOf(s.shape, s.weights, l, m, s.gpus_per_node,
                                    cost, stages);
          };
          // Its entry, before any estimate (ZONE_UNSPECIFIED).
          auto entry_of = [&](size_t i) {
            const Chunking& chunking = chunkings[i];
            const bool accounted = chunking.form == ChunkForm::kAccounted;
            const SpeedFactors f = speed_of(i);
            Layout4D entry{t, c, p, b, d, ep, etp, split.first, split.last,
                           chunking.v, accounted && split.first < split.middle,
                           accounted && split.last < split.middle,
                           0, 1, 0, f.speed(), f.bubble, v1::ZONE_UNSPECIFIED};
            entry.exchange = f.expert;
            entry.mtp_layout = chunking.form == ChunkForm::kMtpLayout;
            return entry;
          };
          // The schedule as given: GREEN into `entry`; otherwise what its
          // probe found is kept for larger micro-batches (RecomputeProbe).
          auto try_as_given = [&](size_t i, bool probe, Layout4D& entry) {
            const StagePeak peak = PeakOf(s, l, split, chunkings[i].chunks,
                                          kept.as_given, probe);
            if (IsGreen(s, peak)) {
              entry.peak_bytes = peak.admission;
              entry.zone = v1::ZONE_GREEN;
            } else {
              probes[i].over_as_given = FarOver(s, peak);
              probes[i].model_states = peak.model_states;
            }
            return peak;
          };
          auto evaluate = [&](size_t i) {
            ++estimated;
            const Chunking& chunking = chunkings[i];
            Layout4D entry = entry_of(i);
            // Where recomputation may yet make it fit (a smaller micro-batch
            // of this schedule did not prove it hopeless), or where a miss
            // is left unresolved, the layout as given is first a probe: if
            // it does not fit, its figures are read only when no
            // recomputation fits either, and are then worked out whole
            // unless left unresolved. (A probe that fits estimated every
            // rank, as whole. The probe's model states are a lower bound:
            // the floor check may pass where the whole one would not, and
            // the probes that follow then fail, as the floor would have
            // said.)
            // (Where a smaller micro-batch's probe missed by more than a
            // larger one can fall, it is not made again: RecomputeProbe.)
            const bool may_recompute = s.allow_recompute && !probes[i].hopeless;
            const bool leave_miss = fitting_layouts >= shown;
            const bool probe = may_recompute || leave_miss;
            const bool known_over = may_recompute && probes[i].over_as_given;
            StagePeak peak;
            if (!known_over) {
              peak = try_as_given(i, probe, entry);
              if (entry.zone == v1::ZONE_GREEN) return entry;
            }
            if (may_recompute) {
              FitByRecomputing(s, l, split, chunking.chunks,
                               probes[i].model_states, entry, probes[i], kept);
              if (entry.zone == v1::ZONE_GREEN) return entry;
            }
            if (leave_miss) {
              entry.unresolved_chunking = static_cast<uint32_t>(i + 1);
              return entry;
            }
            const StagePeak whole =
                probe ? PeakOf(s, l, split, chunking.chunks, kept.as_given)
                      : peak;
            entry.peak_bytes = whole.admission;
            entry.zone = AdmissionZone(whole, s.capacity, s.threshold);
            return entry;
          };
          // A cut shallower than the fastest, where the best so far fits
          // only by recomputing, to rank before that best: as it is, then by
          // the recomputation that could beat its speed (FitByRecomputing's
          // `worth`: below its speed as it is over the best's) or, where the
          // best does not compete (ScheduleBefore), any that competes. Its
          // entry, ZONE_UNSPECIFIED where none of those fits (not worked
          // out); `none_fits` where no recomputation at all does.
          auto evaluate_shallower = [&](size_t i, const Layout4D& best,
                                        bool& none_fits) {
            none_fits = false;
            ++estimated;
            const Chunking& chunking = chunkings[i];
            Layout4D entry = entry_of(i);
            RecomputeProbe& probe = probes[i];
            if (!probe.over_as_given) {
              try_as_given(i, /*probe=*/true, entry);
              if (entry.zone == v1::ZONE_GREEN) return entry;
            }
            double worth = entry.speed / best.speed;
            if (!Competes(best)) {
              worth = std::max(worth, kCompetingRecomputeWorth);
            }
            none_fits = FitByRecomputing(s, l, split, chunking.chunks,
                                         probe.model_states, entry, probe, kept,
                                         worth);
            return entry;
          };
          // Plain (not with the EP overlap: Megatron then pipelines only
          // interleaved), then the fastest interleaving that fits and the
          // deepest.
          if (!(p > 1 && s.base.ep_overlap)) emit(evaluate(0));
          if (interleaves) {
            const size_t deepest = chunkings.size() - 1;
            const size_t fastest = FastestInterleaving(chunkings, plain);
            // Past the fastest a deeper cut is slower (its sends cost more
            // than its bubble saves) and holds less: where the fastest needs
            // recomputation to fit, a deeper one may need less and be faster
            // for it (Llama-3.1-70B's (8, 1, 2) on 64 H100s, 4 micro-batches
            // a step: its fastest cut does not fit as it is, 10 chunks a rank
            // do, at a 0.3% bubble). Deeper, until one fits without
            // recomputing or could not be faster even so, at most
            // kDeeperInterleavingsTried of them (planner.h): each deeper cut
            // adds sends, so those far past the fastest are rarely faster
            // after any recomputation.
            Layout4D best = evaluate(fastest);
            size_t best_index = fastest;
            std::optional<Layout4D> at_deepest;  // where the walk reached it
            auto fits_as_is = [](const Layout4D& e) {
              return e.zone == v1::ZONE_GREEN && !e.recomputes();
            };
            const size_t last_tried =
                std::min(deepest, fastest + kDeeperInterleavingsTried);
            for (size_t i = fastest + 1; i <= last_tried && !fits_as_is(best);
                 ++i) {
              const Layout4D e = evaluate(i);
              if (i == deepest) at_deepest = e;
              const bool green = e.zone == v1::ZONE_GREEN;
              if (green &&
                  (best.zone != v1::ZONE_GREEN || ScheduleBefore(e, best))) {
                best = e;
                best_index = i;
              }
              // Its speed before any recomputation bounds every deeper one's
              // (where the best competes: a slower one that competes ranks
              // before one that does not).
              if (best.zone == v1::ZONE_GREEN && Competes(best) &&
                  e.speed * e.recompute_cost <= best.speed) {
                break;
              }
            }
            // Shallower: Megatron recomputes whole layers of each chunk
            // (--recompute-num-layers a chunk), so a cut of one-layer chunks
            // recomputes all of a stage or none, one of two-layer chunks
            // half. Where the best so far fits only by recomputing, a
            // shallower cut, slower as it stands (a larger bubble) and
            // holding more, may fit by recomputing a smaller share and be
            // faster for it (Nemotron-4 340B's (8, 4, 8) on 16,384 H100s at
            // 32k, 16 micro-batches a step: its fastest cut, 12 one-layer
            // chunks, fits only recomputing every layer, x 4/3; 4 chunks of
            // three layers fit recomputing two of each, x 11/9, at a 10.9%
            // bubble where plain 1F1B, recomputing half, idles 43.8%; before
            // this walk the plain one was listed). Shallower while one could be
            // faster (its speed before recomputation bounds it, and the
            // recomputation that could make it faster than the best is all
            // it tries: evaluate_shallower; past the fastest, each shallower
            // cut is slower as it stands) and until one fits by no
            // recomputation at all (a heuristic stop: a shallower cut holds
            // more on the first ranks, where activations peak, rank r
            // L_r (p + (p - 2r - 1) / v) layers' worth in flight, if less on
            // the last ones), at most kShallowerInterleavingsTried of them
            // (planner.h).
            const size_t shallowest_tried =
                fastest > kShallowerInterleavingsTried
                    ? fastest - kShallowerInterleavingsTried
                    : 1;
            for (size_t i = fastest - 1;
                 i >= shallowest_tried && best.zone == v1::ZONE_GREEN &&
                 !fits_as_is(best);
                 --i) {
              if (Competes(best) && speed_of(i).speed() <= best.speed) break;
              bool none_fits = false;
              const Layout4D e = evaluate_shallower(i, best, none_fits);
              if (none_fits) break;  // nor, as a rule, a shallower one
              if (e.zone != v1::ZONE_GREEN) continue;
              if (ScheduleBefore(e, best)) {
                best = e;
                best_index = i;
              }
            }
            emit(best);
            if (best_index != deepest) {
              emit(at_deepest ? *at_deepest : evaluate(deepest));
            }
          }
        }  // each split
        if (fits) ++fitting_layouts;
        if (by_group && fit_group != std::numeric_limits<uint64_t>::max()) {
          fitting_groups.push(fit_group);
          if (fitting_groups.size() > shown) fitting_groups.pop();
        }
      }
    });
  });
  if (!stop.ok()) return stop;
  return out;
}

absl::StatusOr<Search> SearchFor(const v1::PlanRequest& request,
                                 const CostModel& cost = {}) {
  absl::StatusOr<v1::Job> job = TemplateJob(request);
  if (!job.ok()) return job.status();
  const double threshold =
      request.threshold() == 0 ? kDefaultThreshold : request.threshold();
  if (absl::Status st = ValidateThreshold(threshold); !st.ok()) return st;
  Search s;
  s.shape = ShapeOf(job->model());
  s.moe_act_shape = s.shape;
  s.moe_act_shape.grouped_experts = true;
  s.weights = ActiveWeightsPerToken(s.shape);
  s.base = LayoutOf(*job);
  s.capacity = static_cast<double>(job->accelerator().memory_bytes());
  s.threshold = threshold;
  s.gpus_per_node = job->accelerator().gpus_per_node();
  s.gpus = request.num_gpus();
  s.gbs = request.global_batch_size();
  s.seq = request.seq_length();
  s.max_mbs = request.max_micro_batch_size() ? request.max_micro_batch_size()
                                             : kDefaultMaxMicroBatch;
  s.head_in_layers = HeadInLayers(s.shape, s.weights, 1, s.seq);
  if (s.max_mbs > kMaxPlanMicroBatch) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_micro_batch_size: must be at most ",
                     kMaxPlanMicroBatch, " (got ", s.max_mbs, ")"));
  }
  if (s.gpus > kMaxPlanGpus) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_gpus: plans cover at most ", kMaxPlanGpus,
                     " GPUs (got ", s.gpus, ")"));
  }
  if (request.top_k() > kMaxPlanCandidates) {
    return absl::InvalidArgumentError(
        absl::StrCat("top_k: must be at most ", kMaxPlanCandidates,
                     " (got ", request.top_k(), "); 0 means as many"));
  }
  s.cross_node_tp = request.allow_cross_node_tp();
  s.heads = job->model().num_attention_heads();
  s.kv_heads = job->model().num_query_groups();
  s.vocab = job->model().vocab_size();
  s.layers = job->model().num_layers();
  s.mtp = job->model().mtp_num_layers();
  if (job->model().has_moe()) {
    s.expert_divisors = Divisors(job->model().moe().num_experts());
  }
  s.sharding = request.data_parallel_sharding();
  s.cost = WithDatasheetRatios(cost, job->accelerator().name());
  // Full recomputation is refused with the EP overlap (validation.cc);
  // selective is not.
  s.allow_recompute = !request.no_recompute();
  s.allow_full_recompute = !s.base.ep_overlap;
  // Over a launch's full recomputation no candidate can say selective
  // modules (LaunchSplit.full_recompute).
  if (s.allow_recompute && !request.launch_split().full_recompute()) {
    s.cheap = ModuleChoiceOf(s, CheapModulesFor(s.shape, s.base));
    s.ffn = ModuleChoiceOf(s, FfnModulesFor(s.shape, s.base));
  }
  s.allow_interleave = !request.no_interleave();
  // Megatron's rules for the forms together (arguments.py): a layout
  // stands alone, layers per virtual stage go with neither first/last
  // counts nor a virtual-stage count.
  const v1::LaunchSplit& forms = request.launch_split();
  const bool accounted =
      forms.account_for_embedding() || forms.account_for_loss();
  if ((forms.layout() && (forms.first_last() || forms.virtual_stages() ||
                          forms.layers_per_virtual_stage() || accounted)) ||
      (forms.layers_per_virtual_stage() &&
       (forms.first_last() || forms.virtual_stages())) ||
      (accounted && forms.first_last())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "launch_split: forms Megatron refuses together (a layout stands "
        "alone; layers per virtual stage go with neither first/last counts "
        "nor a virtual-stage count; accounted splits not with first/last "
        "counts) (got ",
        forms.ShortDebugString(), ")"));
  }
  s.launch_split = forms;
  return s;
}

// An uneven candidate's layers a (virtual) stage, entry j * p + i chunk j
// of rank i (estimate.cc), as the planner split them (ChunkLayers): the
// first and last stages' counts, or the accounted split's.
// An uneven candidate's split and chunk form, as the planner made them.
struct CandidateSplit {
  StageSplit split;
  ChunkForm form;
};

CandidateSplit CandidateSplitOf(const v1::Candidate& c, uint32_t layers) {
  const uint32_t p = c.pipeline_parallel();
  CandidateSplit out;
  // The middle stages share what the first and last leave (SplitLayers',
  // the accounted, MTP-counting and head-balanced splits alike). Two
  // stages have no middle one: an accounted split's is the longer.
  const uint64_t ends =
      uint64_t{c.first_stage_layers()} + c.last_stage_layers();
  out.split.middle =
      p > 2    ? static_cast<uint32_t>((layers > ends ? layers - ends : 0) /
                                       (p - 2))
      : p == 2 ? std::max(c.first_stage_layers(), c.last_stage_layers())
               : 0;
  out.split.first = c.first_stage_layers();
  out.split.last = c.last_stage_layers();
  out.form = c.account_for_embedding() || c.account_for_loss()
                 ? ChunkForm::kAccounted
                 : ChunkForm::kFirstLast;
  return out;
}

std::vector<uint32_t> UnevenChunkLayers(const v1::Candidate& c,
                                        uint32_t layers) {
  const uint32_t p = c.pipeline_parallel();
  const uint32_t v = std::max(1u, c.virtual_pipeline_stages());
  const auto [split, form] = CandidateSplitOf(c, layers);
  std::vector<uint32_t> chunks;
  chunks.reserve(uint64_t{p} * v);
  for (uint32_t j = 0; j < v; ++j) {
    for (uint32_t i = 0; i < p; ++i) {
      chunks.push_back(ChunkLayers(form, split, p, v, i, j));
    }
  }
  return chunks;
}

// A candidate's chunks in order (entry j * p + i chunk j of rank i), as
// runs of equal chunks: (layers, how many). O(v) whatever p: in each round
// of virtual stages the middle ranks' chunks are alike (ChunkLayers), so
// the work is bounded by kMaxPlanVirtualStages, not by p x v.
std::vector<std::pair<uint32_t, uint64_t>> ChunkRuns(const v1::Candidate& c,
                                                     uint32_t layers) {
  const uint32_t p = c.pipeline_parallel();
  const uint32_t v = std::max(1u, c.virtual_pipeline_stages());
  std::vector<std::pair<uint32_t, uint64_t>> runs;
  auto add = [&runs](uint32_t n, uint64_t count) {
    if (count == 0) return;
    if (!runs.empty() && runs.back().first == n) {
      runs.back().second += count;
    } else {
      runs.emplace_back(n, count);
    }
  };
  if (c.first_stage_layers() == 0) {  // even: L / (p v) a chunk
    add(layers / (p * v), uint64_t{p} * v);
    return runs;
  }
  const auto [split, form] = CandidateSplitOf(c, layers);
  for (uint32_t j = 0; j < v; ++j) {
    add(ChunkLayers(form, split, p, v, 0, j), 1);
    if (p > 2) add(ChunkLayers(form, split, p, v, 1, j), p - 2);
    if (p > 1) add(ChunkLayers(form, split, p, v, p - 1, j), 1);
  }
  return runs;
}

// Megatron's --pipeline-model-parallel-layout for (virtual) stages of the
// runs' layers in order: the embedding before the first, the MTP layers
// and the loss after the last, and runs of equal stages between written
// once, "(t*4|)*30", so that the text stays short whatever p x v.
std::string LayoutTextOf(std::vector<std::pair<uint32_t, uint64_t>> runs,
                         uint32_t mtp) {
  auto run = [](char c, uint32_t n) {  // n layers of kind c
    const std::string one(1, c);
    return n == 0 ? std::string() : n == 1 ? one : absl::StrCat(one, "*", n);
  };
  uint64_t total = 0;
  for (const auto& r : runs) total += r.second;
  if (total == 1) {
    return absl::StrCat("E", run('t', runs[0].first), run('m', mtp), "L");
  }
  // The first and the last chunk apart, the runs between.
  std::string text = absl::StrCat("E", run('t', runs.front().first), "|");
  const uint32_t last = runs.back().first;
  --runs.front().second;
  --runs.back().second;
  for (const auto& [n, count] : runs) {
    if (count == 0) continue;
    absl::StrAppend(&text, count == 1 ? absl::StrCat(run('t', n), "|")
                                      : absl::StrCat("(", run('t', n), "|)*",
                                                     count));
  }
  absl::StrAppend(&text, run('t', last), run('m', mtp), "L");
  return text;
}

// The candidate's virtual stages in the form the launch gives them
// (PlanRequest.launch_split): a count, 1 included, or the layers a chunk
// (even or accounted splits: LaunchCanSay), so
// that appended they replace the launch's.
void SayVirtualStagesAsTheLaunch(const Search& s, const Layout4D& l,
                                 std::string& args) {
  if (s.launch_split.layout()) return;
  if (s.launch_split.layers_per_virtual_stage()) {
    const std::string count =
        absl::StrCat(" --num-virtual-stages-per-pipeline-rank ", l.v);
    const size_t at = args.find(count);
    if (at != std::string::npos) args.erase(at, count.size());
    // Megatron counts the accounted embedding and loss as layers here.
    const uint64_t layers = uint64_t{s.layers} +
                            (s.launch_split.account_for_embedding() ? 1 : 0) +
                            (s.launch_split.account_for_loss() ? 1 : 0);
    absl::StrAppend(&args, " --num-layers-per-virtual-pipeline-stage ",
                    layers / (uint64_t{l.p} * l.v));
  } else if (s.launch_split.virtual_stages() && l.v <= 1) {
    args += " --num-virtual-stages-per-pipeline-rank 1";
  }
}

// The candidate's sequence length in the launch's form: Megatron asserts
// against --seq-length beside --encoder-seq-length.
void SaySequenceLengthAsTheLaunch(const Search& s, std::string& args) {
  if (!s.launch_split.encoder_seq_length()) return;
  const std::string seq = " --seq-length ";
  const size_t at = args.find(seq);
  if (at != std::string::npos) {
    args.replace(at, seq.size(), " --encoder-seq-length ");
  }
}

// Over a launch's full recomputation, a candidate that recomputes nothing
// says so in its form: block recomputation of 0 layers a stage.
void SayNoRecomputationAsTheLaunch(const Search& s, const Layout4D& l,
                                   std::string& args) {
  if (s.launch_split.full_recompute() && !l.recomputes()) {
    args +=
        " --recompute-granularity full --recompute-method block "
        "--recompute-num-layers 0";
  }
}

// The request's context-parallel exchange as Megatron arguments, for a
// layout of CP c: a2a+p2p's hierarchical sizes follow c (they multiply to
// it, and a launch's own would not), and without CP are one level of 1.
std::string ContextParallelCommArguments(const Layout& base, uint32_t c) {
  if (base.cp_comm == v1::CONTEXT_PARALLEL_COMM_UNSPECIFIED ||
      base.cp_comm == v1::CONTEXT_PARALLEL_COMM_P2P) {
    return "";
  }
  std::string args =
      absl::StrCat(" --cp-comm-type ", CpCommTypeName(base.cp_comm));
  if (base.cp_comm == v1::CONTEXT_PARALLEL_COMM_A2A_P2P) {
    const uint32_t inner = static_cast<uint32_t>(base.cp_a2a_size);
    absl::StrAppend(&args, " --hierarchical-context-parallel-sizes ",
                    c > 1 ? absl::StrCat(inner, " ", c / inner) : "1");
  }
  return args;
}

v1::Candidate ToCandidate(const Search& s, const Layout4D& l, double best) {
  const CostModel& cost = s.cost;
  Layout layout = LayoutFor(s, l.t, l.c, l.p, l.d, l.b, l.ep, l.etp);
  layout.virtual_stages = l.v;
  const SpeedFactors f = SpeedOf(s.shape, s.weights, layout,
                                 static_cast<double>(s.gbs) / l.b / l.d,
                                 s.gpus_per_node, cost,
                                 StageLayers{double(l.first_layers),
                                             double(l.last_layers)});
  v1::Candidate c;
  c.set_num_gpus(s.gpus);
  c.set_tensor_parallel(l.t);
  c.set_context_parallel(l.c);
  c.set_pipeline_parallel(l.p);
  c.set_micro_batch_size(l.b);
  c.set_data_parallel(l.d);
  if (!s.expert_divisors.empty()) {
    c.set_expert_parallel(l.ep);
    c.set_expert_tensor_parallel(l.etp);
  }
  c.set_first_stage_layers(l.first_layers);
  c.set_last_stage_layers(l.last_layers);
  if (l.v > 1) c.set_virtual_pipeline_stages(l.v);
  c.set_account_for_embedding(l.account_embedding);
  c.set_account_for_loss(l.account_loss);
  if (l.mtp_layout) {
    c.set_pipeline_layout(MtpLayoutText(SplitLayers(s.layers, l.p, s.mtp),
                                        l.p, l.v));
  } else if (s.launch_split.layout()) {
    // Every split as a layout (PlanRequest.launch_split): uneven ones as
    // planned, even ones L / (p v) a chunk.
    c.set_pipeline_layout(LayoutTextOf(ChunkRuns(c, s.layers), s.mtp));
  }
  if (s.launch_split.account_for_embedding() ||
      s.launch_split.account_for_loss()) {
    // The launch's switches, which give this split (LaunchCanSay).
    c.set_account_for_embedding(s.launch_split.account_for_embedding());
    c.set_account_for_loss(s.launch_split.account_for_loss());
  }
  if (s.launch_split.first_last() && l.first_layers == 0) {
    // An even split said as first/last counts, L / p each, where the
    // launch gives them (LaunchCanSay: p >= 2).
    c.set_first_stage_layers(s.layers / l.p);
    c.set_last_stage_layers(s.layers / l.p);
  }
  c.set_data_parallel_sharding(s.sharding);
  c.set_recompute_num_layers(l.recompute);
  if (l.modules != ModuleSet::kNone) {
    const ModuleChoice& choice =
        l.modules == ModuleSet::kCheap ? s.cheap : s.ffn;
    for (v1::Recompute::Module module : choice.arguments) {
      c.add_recompute_modules(module);
    }
  }
  c.set_peak_bytes(l.peak_bytes);
  c.set_peak_gib(ToGiB(l.peak_bytes));
  c.set_zone(l.zone);
  c.set_bubble_fraction(l.bubble);
  c.set_relative_speed(best > 0 ? l.speed / best : 0);
  c.set_why(WhyOf(l, f, s.capacity, s.threshold));
  std::string args = CandidateMegatronArguments(c, s.gbs, s.seq);
  SayVirtualStagesAsTheLaunch(s, l, args);
  SayNoRecomputationAsTheLaunch(s, l, args);
  SaySequenceLengthAsTheLaunch(s, args);
  if (OptimizerInstances(s) > 1) {
    absl::StrAppend(&args, " --num-distributed-optimizer-instances ",
                    OptimizerInstances(s));
  }
  absl::StrAppend(&args, ContextParallelCommArguments(s.base, l.c));
  if (s.sharding != v1::DATA_PARALLEL_SHARDING_UNSPECIFIED) {
    // The request's FSDP buffers, which a candidate does not record.
    if (s.base.fsdp_double_buffer) args += " --fsdp-double-buffer";
    if (s.base.fsdp_unit_size > 0) {
      // At most 2^40 (ValidateJob): exact in a double.
      absl::StrAppendFormat(&args, " --suggested-communication-unit-size %d",
                            static_cast<int64_t>(s.base.fsdp_unit_size));
    }
  }
  c.set_megatron_arguments(args);
  return c;
}

}  // namespace

v1::Job JobForCandidate(const v1::PlanRequest& request,
                        const v1::Candidate& c) {
  v1::Job job;
  *job.mutable_model() = request.model();
  *job.mutable_accelerator() = request.accelerator();
  job.set_num_gpus(c.num_gpus());
  v1::ParallelConfig& par = *job.mutable_parallel();
  par.set_tensor_parallel(c.tensor_parallel());
  par.set_context_parallel(c.context_parallel());
  par.set_pipeline_parallel(c.pipeline_parallel());
  SetRequestParallelOf(request, par);
  if (c.expert_parallel() > 0) {
    par.set_expert_parallel(c.expert_parallel());
    par.set_expert_tensor_parallel(c.expert_tensor_parallel());
  }
  if (c.virtual_pipeline_stages() > 1) {
    par.set_virtual_pipeline_stages(c.virtual_pipeline_stages());
  }
  const v1::ModelConfig model = RequestModel(request);
  if (!c.pipeline_layout().empty()) {
    // The planner's own text; one that does not parse leaves the stages
    // unset, and the job's estimate names what is wrong.
    absl::StatusOr<PipelineLayout> layout =
        ParsePipelineLayout(c.pipeline_layout(), c.pipeline_parallel(),
                            model.num_layers(), model.mtp_num_layers());
    if (layout.ok()) ApplyPipelineLayout(*layout, par);
  } else if (c.first_stage_layers() > 0) {
    for (uint32_t n :
         UnevenChunkLayers(c, model.num_layers())) {
      par.add_layers_per_stage(n);
    }
  }
  v1::TrainingConfig& t = *job.mutable_training();
  t = TrainingOf(request, c.micro_batch_size());
  if (c.recompute_num_layers() > 0) {
    v1::Recompute& r = *t.mutable_recompute();
    r.Clear();  // replaces the template's selective recomputation
    r.set_granularity(v1::Recompute::GRANULARITY_FULL);
    r.set_method(v1::Recompute::METHOD_BLOCK);
    r.set_num_layers(c.recompute_num_layers());
  } else if (c.recompute_modules_size() > 0) {
    // The candidate's list includes the template's modules. moe_act runs
    // with grouped GEMMs only (Megatron raises otherwise): the candidate's
    // arguments add --moe-grouped-gemm, and its job says so.
    RecomputeModulesIn(c.recompute_modules(), job);
  }
  return job;
}

v1::TrainingConfig PlanTemplateOf(const v1::TrainingConfig& training) {
  v1::TrainingConfig t = training;
  t.clear_micro_batch_size();
  t.clear_seq_length();
  t.clear_global_batch_size();
  t.clear_precision();
  t.clear_dataloader_attention_mask();
  if (t.recompute().granularity() == v1::Recompute::GRANULARITY_FULL) {
    t.clear_recompute();
  }
  return t;
}

namespace {

// Placing an irregular MoE model's layers over every pipeline the plan
// tries (DistinctRanksOf) is bounded before it starts.
absl::Status CheckPlacementWork(const Search& s,
                                const std::vector<uint32_t>& gpu_divisors) {
  const uint64_t work = PlacementWork(s.shape, s.layers, gpu_divisors);
  if (work <= kMaxPlanPlacementWork) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      "plan: placing the model's MoE and dense layers over every pipeline "
      "of ", s.gpus, " GPUs takes up to ", work, " steps; a plan takes at "
      "most ", kMaxPlanPlacementWork, " (fewer GPUs, or a model whose MoE "
      "layers follow its dense ones)"));
}

// [LW] Lion's and Muon's packing over every layout the plan may estimate
// (kMaxPlanLayerWiseWork): each layout within the estimator's bound (the
// others are not proposed) once for each schedule it may estimate (the
// layout's LayerWiseMemo packs a schedule's ranks once, whatever the
// micro-batch and recomputation, twice where moe_act's probe groups the
// experts the model does not), a schedule at most the packing of the
// ranks PeakOf estimates (a chunking's listed ranks; else the first and
// last and at most three middle ones: memory_model.h PeakRanks), each of
// a rank of the split's most layers (LayerWisePlanWork::rank), and at
// most the whole model's (the ranks' steps together are at most the
// whole's: steps grow faster than their sum).
absl::Status CheckLayerWiseWork(const Search& s,
                                const std::vector<uint32_t>& gpu_divisors,
                                const std::vector<PipelineChoices>& pipelines,
                                uint64_t max_work) {
  if (!s.base.layer_wise()) return absl::OkStatus();
  // A layout probed with moe_act packs its ranks again with grouped
  // experts (Search::moe_act_shape), where the model's are not.
  const double groupings =
      s.cheap.modules.moe_act && !s.shape.grouped_experts ? 2 : 1;
  double work = 0;
  ForEachGroup(s, gpu_divisors, [&](uint32_t t, uint32_t c, uint32_t p) {
    const uint32_t d = s.gpus / t / c / p;
    const PipelineChoices& choices = ChoicesFor(pipelines, gpu_divisors, p);
    for (const PipelineSplit& tried : choices.splits) {
      const StageSplit& split = tried.split;
      const double schedules =
          s.allow_interleave
              ? std::clamp<double>(tried.chunkings.size(), 1,
                                   kSchedulesEstimatedPerLayout)
              : 1;
      double ranks_estimated = std::min(p, 5u);
      for (const Chunking& chunking : tried.chunkings) {
        ranks_estimated =
            std::max<double>(ranks_estimated, chunking.chunks.size());
      }
      const double rank_layers =
          split.first == 0
              ? std::ceil(double(s.layers) / p)
              : double(std::max({split.first, split.middle, split.last}));
      ForEachExpertLayout(s, t, p, [&](uint32_t ep, uint32_t etp) {
        const LayerWisePlanWork w = LayerWisePlanWorkOf(
            s.shape, LayoutFor(s, t, c, p, d, 1, ep, etp), rank_layers);
        // Not proposed past the estimator's bound (Enumerate).
        if (w.validated > double(kMaxLayerWisePackingWork)) return;
        work += groupings * schedules *
                std::min(w.whole, ranks_estimated * w.rank + w.first_rank);
      });
    }
  });
  if (work <= double(max_work)) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      "training.optimizer: ",
      s.base.optimizer == v1::OPTIMIZER_MUON ? "Muon" : "Lion",
      "'s layer-wise distributed optimizer packs every layout's matrices "
      "over its data-parallel ranks: up to ", work, " steps (placing, "
      "listing and walking the matrices: estimator/layer_wise_terms.h) "
      "over the layouts of ", s.gpus, " GPUs, where a plan takes at most ",
      max_work, " (fewer GPUs",
      s.base.layer_wise_by_elements && s.base.layer_wise_by_cost
          ? ", the Megatron-Core release the job runs "
            "(training.megatron_core_version, memgate's --megatron-core): "
            "without one both releases' packings are counted"
          : "",
      ", or check a layout with memgate check)"));
}

// Why a plan has no layout at all, where the data-parallel rule says it:
// every (TP, CP, PP) group Megatron's rules allow on these GPUs leaves a
// data-parallel size that does not divide the global batch (each rank
// takes whole micro-batches), or there is no such group. The same loop as
// the search's (ForEachGroup), so bounded as it is. nullopt where groups
// with a dividing DP exist (the experts' or the optimizer's rules, or a
// launch's split forms, left none: the CLI names the latter).
std::optional<std::string> NoLayoutNote(const Search& s,
                                        const std::vector<uint32_t>& divisors) {
  uint64_t groups = 0;
  bool some_divide = false;
  uint32_t least_dp = 0, at_t = 0, at_c = 0, at_p = 0;
  ForEachGroup(s, divisors, [&](uint32_t t, uint32_t c, uint32_t p) {
    ++groups;
    const uint32_t d = s.gpus / t / c / p;
    if (s.gbs % d == 0) some_divide = true;
    if (least_dp == 0 || d < least_dp) {
      least_dp = d;
      at_t = t, at_c = c, at_p = p;
    }
  });
  if (some_divide) return std::nullopt;
  if (groups == 0) {
    return absl::StrCat(
        "no layout of ", s.gpus, " GPUs: no (TP, CP, PP) split of them "
        "passes the rules validation enforces for this job and the plan's "
        "bound of at least ", kMinTokensPerContextRank, " tokens a CP rank "
        "(memgate check of one layout names the rule it breaks)");
  }
  return absl::StrCat(
      "no layout of ", s.gpus, " GPUs: ",
      groups == 1
          ? "the one (TP, CP, PP) group"
          : absl::StrCat("each of the ", groups, " (TP, CP, PP) groups"),
      " Megatron's rules allow on them leaves a data-parallel size that does "
      "not divide the global batch ", s.gbs,
      " (each rank takes whole micro-batches); the smallest is DP ", least_dp,
      ", at (", at_t, ", ", at_c, ", ", at_p,
      "): a global batch that DP divides, or another GPU count, plans");
}

}  // namespace

absl::StatusOr<uint64_t> CountPlanLayouts(const v1::PlanRequest& request) {
  absl::StatusOr<Search> search = SearchFor(request);
  if (!search.ok()) return search.status();
  const std::vector<uint32_t> gpu_divisors = Divisors(search->gpus);
  if (absl::Status s = CheckPlacementWork(*search, gpu_divisors); !s.ok()) {
    return s;
  }
  const std::vector<PipelineChoices> pipelines =
      PipelinesOf(*search, gpu_divisors);
  const uint64_t count = CountLayouts(*search, gpu_divisors, pipelines);
  // A search past the layouts' bound is refused on its count (the caller
  // compares it), before the packing is counted.
  if (count > kMaxPlanLayouts) return count;
  if (absl::Status s = CheckLayerWiseWork(*search, gpu_divisors, pipelines,
                                          kMaxPlanLayerWiseWork);
      !s.ok()) {
    return s;
  }
  return count;
}

absl::StatusOr<v1::PlanResponse> PlanLayouts(const v1::PlanRequest& request,
                                             const PlanInterrupt& interrupt,
                                             const PlanOptions& options) {
  absl::StatusOr<Search> search = SearchFor(request, options.cost);
  if (!search.ok()) return search.status();
  search->most_recompute_probes = options.most_recompute_probes;
  const std::vector<uint32_t> gpu_divisors = Divisors(search->gpus);
  if (absl::Status s = CheckPlacementWork(*search, gpu_divisors); !s.ok()) {
    return s;
  }
  const std::vector<PipelineChoices> pipelines =
      PipelinesOf(*search, gpu_divisors);
  const uint64_t bound = CountLayouts(*search, gpu_divisors, pipelines);
  if (bound > kMaxPlanLayouts) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "plan: up to ", bound, " layouts for ", search->gpus,
        " GPUs and micro-batch sizes up to ", search->max_mbs,
        "; a plan estimates at most ", kMaxPlanLayouts,
        " (lower max_micro_batch_size)"));
  }
  // Over at most kMaxPlanLayouts layouts: the count is bounded too.
  if (absl::Status s = CheckLayerWiseWork(*search, gpu_divisors, pipelines,
                                          options.max_layer_wise_work);
      !s.ok()) {
    return s;
  }
  uint64_t estimated = 0;
  uint64_t valid_layouts = 0;
  const size_t wanted =
      request.top_k() == 0 ? kMaxPlanCandidates : request.top_k();
  absl::StatusOr<std::vector<Layout4D>> enumerated =
      Enumerate(*search, gpu_divisors, pipelines, bound, wanted,
                options.ranking, interrupt, estimated, valid_layouts);
  if (options.schedules_estimated != nullptr) {
    *options.schedules_estimated += estimated;
  }
  if (!enumerated.ok()) return enumerated.status();
  std::vector<Layout4D>& layouts = *enumerated;
  const std::vector<Layout4D> ranked =
      RankLayouts(layouts, std::min(wanted, layouts.size()), options.ranking);
  // Speeds are relative to the fastest candidate shown (the plan does not
  // estimate every layout: Enumerate).
  double best = 0;
  for (const Layout4D& l : ranked) {
    if (l.zone == v1::ZONE_GREEN) best = std::max(best, l.speed);
  }
  v1::PlanResponse response;
  response.set_considered(valid_layouts);
  for (size_t i = 0; i < ranked.size(); ++i) {
    // Enumerate leaves misses only where none can be shown.
    if (ranked[i].unresolved_chunking != 0) {
      return absl::InternalError(
          "plan: a layout that does not fit was ranked before its peak was "
          "worked out");
    }
    v1::Candidate* c = response.add_candidates();
    *c = ToCandidate(*search, ranked[i], best);
    c->set_rank(static_cast<uint32_t>(i + 1));
  }
  if (valid_layouts == 0) {
    if (std::optional<std::string> none = NoLayoutNote(*search, gpu_divisors)) {
      response.add_notes(*std::move(none));
    }
  }
  if (std::optional<std::string> starved =
          StarvedPipelineNote(request, response)) {
    response.add_notes(*std::move(starved));
  }
  if (search->base.layer_wise_by_elements && search->base.layer_wise_by_cost) {
    // [LW] What every candidate assumes where the release is not given
    // (as `check` says among its assumptions).
    response.add_notes(absl::StrCat(
        search->base.optimizer == v1::OPTIMIZER_MUON ? "Muon" : "Lion",
        " runs Megatron's layer-wise distributed optimizer, whose buffers "
        "core 0.18 and 0.19 pack by elements and later releases by "
        "Newton-Schulz cost: with no release given "
        "(training.megatron_core_version, --megatron-core) every layout "
        "counts the larger"));
  }
  return response;
}

}  // namespace memgate
