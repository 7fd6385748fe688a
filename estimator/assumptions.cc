#include "estimator/assumptions.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "estimator/attention_backend.h"
#include "estimator/catalog.h"
#include "estimator/megatron_names.h"
#include "estimator/memory_model.h"
#include "estimator/moe_terms.h"
#include "estimator/te_userbuffers.h"

namespace memgate {

namespace {

// What bounds Megatron-FSDP's un-sharded units (memory_model.cc [MFC]).
std::string FsdpUnshardedText(const Layout& l) {
  if (l.fsdp_double_buffer) return "two FSDP units (double buffer)";
  if (l.fsdp_unit_size > 0) {
    return absl::StrFormat(
        "its queues (--suggested-communication-unit-size %.0f: gradients "
        "of that many parameters, weights of half)",
        l.fsdp_unit_size);
  }
  return "its queues at Megatron's default unit (at least 10^9 parameters' "
         "gradients and half that of weights; --fsdp-double-buffer holds "
         "two units)";
}

// What the router is taken to keep (moe_terms.cc [RS]); unknown settings
// are counted at their largest, and said so.
std::string RouterAssumption(const v1::MoeConfig& moe) {
  std::string score;
  switch (moe.router_score_function()) {
    case v1::MoeConfig::ROUTER_SCORE_SOFTMAX_AFTER_TOPK:
      score = "softmax after the top-k";
      break;
    case v1::MoeConfig::ROUTER_SCORE_SOFTMAX:
      score = "softmax over every expert";
      break;
    case v1::MoeConfig::ROUTER_SCORE_SIGMOID:
      score = "sigmoid";
      break;
    case v1::MoeConfig::ROUTER_SCORE_SQRTSOFTPLUS:
      score = "sqrt(softplus)";
      break;
    default:
      score = "score function unknown (sqrt(softplus)'s counted)";
      break;
  }
  auto known = [](bool has, bool value, const char* on, const char* off,
                  const char* unknown) {
    return !has ? unknown : value ? on : off;
  };
  std::string out = absl::StrCat(
      "router: ", score, ", ",
      known(moe.has_router_fusion(), moe.router_fusion(),
            "TransformerEngine's fused kernel", "unfused",
            "fused or not unknown (the larger counted)"),
      ", ",
      known(moe.has_aux_loss(), moe.aux_loss(), "a load-balancing loss",
            "no load-balancing loss",
            "a load-balancing loss counted (unknown)"),
      ", ",
      known(moe.has_z_loss(), moe.z_loss(), "the z-loss", "no z-loss",
            "the z-loss counted (unknown)"));
  if (moe.router_group_topk() > 0) {
    absl::StrAppend(&out, ", ", moe.router_group_topk(), " of ",
                    moe.router_num_groups(), " expert groups");
  }
  return out + "; beside the permutation's map of every expert and token";
}

// Where the routing probabilities are applied (moe_terms.cc [PA]).
std::string RoutingProbsAssumption(const v1::MoeConfig& moe) {
  switch (moe.routing_probs_applied()) {
    case v1::MoeConfig::PROBS_APPLIED_AT_UNPERMUTE:
      return "routing probabilities applied at unpermute (Megatron-Core "
             "0.12.0 and earlier): the weighted expert outputs kept, 2h B "
             "a routed copy";
    case v1::MoeConfig::PROBS_APPLIED_IN_EXPERTS:
      return "routing probabilities applied in the experts (Megatron-Core "
             "0.12.1 and later): no weighted copy kept";
    case v1::MoeConfig::PROBS_APPLIED_ON_INPUT:
      return "routing probabilities applied to the expert input: the "
             "unweighted input kept, 2h B a routed copy";
    default:
      return "Megatron-Core release unknown: MoE layers count the larger "
             "of 0.12.0's weighted unpermute copy and later releases' "
             "in-expert weighting (training.megatron_core_version, "
             "memgate's --megatron-core, or model.moe.routing_probs_applied "
             "says which)";
  }
}

// What selective recomputation drops, named by Megatron's
// --recompute-modules (its default, core_attn, where the job lists none):
// the assumption once named core attention whatever the modules were.
std::string SelectiveRecomputeAssumption(const v1::TrainingConfig& t,
                                         bool unfused_attention) {
  std::vector<std::string> names;
  bool core_attn = t.recompute().modules().empty();
  for (const int module : t.recompute().modules()) {
    const auto m = static_cast<v1::Recompute::Module>(module);
    core_attn = core_attn || m == v1::Recompute::MODULE_CORE_ATTN;
    names.push_back(RecomputeModuleName(m));
  }
  if (names.empty()) names.push_back("core_attn (Megatron's default)");
  std::string text = absl::StrCat(
      "selective recomputation of ", absl::StrJoin(names, ", "),
      ": their outputs dropped, recomputed from the inputs kept (one "
      "layer's remade at its backward, counted once a stage)");
  if (core_attn && !unfused_attention) {
    absl::StrAppend(&text, "; core attention saves nothing with "
                           "FlashAttention");
  }
  return text;
}

}  // namespace

std::vector<std::string> AssumptionsOf(const v1::Job& job) {
  std::vector<std::string> out;
  const v1::TrainingConfig& t = job.training();
  const v1::ModelConfig& m = job.model();
  const uint32_t v = job.parallel().virtual_pipeline_stages();
  if (v > 1) {
    const uint32_t group = job.parallel().microbatch_group_size();
    out.push_back(absl::StrCat(
        "interleaved 1F1B, ", v, " model chunks a rank",
        group == 0 ? ""
                   : absl::StrCat(", ", group,
                                  " micro-batches a chunk in a row"),
        ": rank r holds up to 2(p - r - 1) + (v - 1)",
        group == 0 ? "p" : absl::StrCat(group), " + 1 chunks of L/(p v) "
        "layers"));
  }
  switch (t.precision()) {
    case v1::PRECISION_FP32:
      out.push_back("fp32 training: 4 B weights + 4 B gradients + 8 B Adam "
                    "states a parameter, 4-byte activations");
      break;
    case v1::PRECISION_FP16:
      out.push_back("fp16 training: 2 B weights + 2 B gradients + 12 B "
                    "optimizer states (fp32 master, Adam); the optimizer "
                    "step copies its share of the gradients to fp32 (4 B a "
                    "parameter) once the activations are freed, kept "
                    "through an evaluation's forward (measured: not "
                    "between steps)");
      break;
    case v1::PRECISION_BF16_BF16_GRADS:
      out.push_back("bf16 gradients (2 B a parameter); the optimizer step "
                    "copies its share to fp32 (4 B a parameter) once the "
                    "activations are freed, kept through an evaluation's "
                    "forward");
      break;
    default:
      break;
  }
  if (t.optimizer() == v1::OPTIMIZER_SGD) {
    const float momentum = t.has_sgd_momentum() ? t.sgd_momentum() : 0.9f;
    out.push_back(momentum > 0 ? "SGD with momentum: 4 B of state a parameter"
                               : "SGD without momentum: no optimizer state");
  }
  const Layout l = LayoutOf(job);
  if (t.optimizer() == v1::OPTIMIZER_MUON) {
    const char* mode =
        l.muon_tp_mode == v1::Muon::TP_MODE_BLOCKWISE ? "blockwise"
        : l.muon_tp_mode == v1::Muon::TP_MODE_DISTRIBUTED ? "distributed"
                                                          : "duplicated";
    const char* whence =
        t.muon().tp_mode() != v1::Muon::TP_MODE_UNSPECIFIED ? "as given"
        : t.megatron_core_version().empty()
            ? "no release given: main's default, the larger"
            : "the release's default";
    out.push_back(absl::StrCat(
        "Muon: one fp32 momentum (4 B) for each matrix; the word embeddings, "
        "LM head, norms and biases with ",
        l.muon_scalar_lion ? "Lion (4 B)" : "Adam (m, v: 8 B)",
        t.muon().scalar_optimizer() == v1::OPTIMIZER_LION &&
                !l.muon_scalar_lion
            ? " (--muon-scalar-optimizer lion counted as Adam: core 0.18.0 "
              "keeps Adam; name the release)"
            : "",
        "; at the step, once the activations are freed, its largest "
        "matrix's Newton-Schulz copies (tp mode ", mode, ", ", whence,
        l.muon_fp32_iteration ? "; fp32 iteration" : "; bf16 iteration",
        ")"));
  }
  if (t.optimizer() == v1::OPTIMIZER_LION) {
    switch (l.lion_scalars) {
      case LionScalarOptimizer::kLion:
        out.push_back("Lion (Megatron core 0.17): one fp32 momentum (4 B) "
                      "for every parameter; its step makes each parameter's "
                      "update anew (two fp32 copies of the largest, once the "
                      "activations are freed)");
        break;
      case LionScalarOptimizer::kAdam:
        out.push_back("Lion (Megatron core 0.18.0 on): one fp32 momentum "
                      "(4 B) for the matrices; the word embeddings, LM head, "
                      "norms and biases trained with Adam (m, v: 8 B); its "
                      "step makes each matrix's update anew (two fp32 copies "
                      "of the largest, once the activations are freed)");
        break;
      case LionScalarOptimizer::kEither:
        out.push_back("Lion, release not given (training.megatron_core_"
                      "version, --megatron-core): the larger of core 0.17's "
                      "and 0.18's: Adam's m and v (8 B) for the word "
                      "embeddings, LM head, norms and biases, one fp32 "
                      "momentum (4 B) for the matrices, and at the step two "
                      "fp32 copies of the largest parameter, the vocabulary "
                      "shard included");
        break;
    }
  }
  if (l.layer_wise()) {
    out.push_back(absl::StrCat(
        "Megatron's layer-wise distributed optimizer (",
        l.optimizer == v1::OPTIMIZER_MUON ? "Muon" : "Lion",
        " with the distributed optimizer, core 0.18.0 on): each matrix "
        "whole on one data-parallel rank (routed experts' over the expert "
        "data-parallel group), which alone keeps its fp32 master and "
        "momentum; the matrices' bf16 weights and gradients in buffers "
        "every rank holds whole, padded to DP x each bucket's fullest shard "
        "(in the weights and gradients), packed ",
        l.layer_wise_by_elements && l.layer_wise_by_cost
            ? "by elements (core 0.18, 0.19) and by Newton-Schulz cost "
              "(after 0.19), no release given: the larger"
        : l.layer_wise_by_elements ? "by elements (core 0.18, 0.19)"
                                   : "by Newton-Schulz cost (after core 0.19)",
        "; the first rank's first chunk in DDP's buckets "
        "(--overlap-grad-reduce) and in one, the larger; norms, biases and "
        "the vocabulary's matrices in the plain distributed optimizer"));
  }
  const ModelShape shape = ShapeOf(m);
  if (l.precision_aware) {
    out.push_back(absl::StrCat(
        "precision-aware optimizer: ", l.main_grad_bytes,
        " B gradients, ", l.master_bytes, " B master weights",
        l.master_bytes == 2 && t.precision_aware_optimizer()
                                       .main_params_dtype() != v1::DTYPE_FP16
            ? " (16-bit remainders, TransformerEngine 2.1 or later)"
            : "",
        ", ", l.exp_avg_bytes + l.exp_avg_sq_bytes,
        " B Adam states a parameter"));
  }
  if (l.optimizer_instances > 1 && l.distributed_optimizer) {
    out.push_back(absl::StrFormat(
        "%.0f distributed-optimizer instances: optimizer states sharded "
        "over DP x CP / %.0f = %.0f GPUs, not %.0f",
        l.optimizer_instances, l.optimizer_instances,
        l.data * l.context / l.optimizer_instances, l.data * l.context));
  }
  if (l.context > 1) {
    switch (l.cp_comm) {
      case v1::CONTEXT_PARALLEL_COMM_ALL_GATHER:
        out.push_back(
            "context parallelism by all-gather: while a layer's attention "
            "runs backward, the whole sequence's keys and values and their "
            "gradients are held, about 3.5 copies of them above the stored "
            "activations");
        break;
      case v1::CONTEXT_PARALLEL_COMM_A2A:
      case v1::CONTEXT_PARALLEL_COMM_A2A_P2P:
        if (ContextParallelAllToAll(l)) {
          out.push_back(absl::StrCat(
              "context parallelism by all-to-all (Ulysses",
              l.cp_comm == v1::CONTEXT_PARALLEL_COMM_A2A_P2P
                  ? absl::StrFormat(" over %.0f ranks, then p2p",
                                    l.cp_a2a_size)
                  : std::string(),
              "): the attention output kept before and after its "
              "all-to-all, twice a layer",
              l.recompute == RecomputeKind::kSelective && l.recompute_core_attn
                  ? " (not with core attention recomputed)"
                  : ""));
        }
        break;
      default:
        break;
    }
  }
  if (l.rs_fp32_accumulation) {
    out.push_back(
        "fp32-accumulating reduce-scatter: a scratch copy of the stage's "
        "whole gradient buffer from the last micro-batch's backward to the "
        "step's end (every bucket live, as before Megatron-Core 0.18), "
        "counted above the activations it outlives");
  }
  if (l.optimizer_offload > 0) {
    out.push_back(absl::StrCat("optimizer CPU offload: ",
                               l.optimizer_offload * 100,
                               "% of the optimizer in host memory"));
  }
  if (l.fp8) {
    const char* recipe = "delayed";
    switch (t.fp8().recipe()) {
      case v1::Fp8::RECIPE_TENSORWISE: recipe = "tensorwise"; break;
      case v1::Fp8::RECIPE_BLOCKWISE: recipe = "blockwise"; break;
      case v1::Fp8::RECIPE_MXFP8: recipe = "MXFP8"; break;
      case v1::Fp8::RECIPE_NVFP4:
        recipe = "NVFP4, counted at MXFP8's bytes (an upper bound)";
        break;
      default: break;
    }
    out.push_back(absl::StrCat(
        "fp8 (TransformerEngine, ", recipe, l.fp8_scale_bytes > 0
            ? absl::StrCat(", ", l.fp8_scale_bytes, " B of scales an "
                           "activation element")
            : "",
        "): ",
        l.fp8_param_gather ? "GEMM weights in fp8 only"
                           : "+2 B fp8 copies of each GEMM weight",
        "; GEMM inputs saved in fp8",
        m.has_moe() ? absl::StrCat("; each local expert's tokens "
                                           "padded to a multiple of ",
                                           ExpertRowAlign(l))
                            : "",
        l.fp8_amax_history > 0
            ? absl::StrCat("; delayed scaling's amax history of ",
                           static_cast<uint64_t>(l.fp8_amax_history),
                           l.fp8_amax_history == 1 ? " row" : " rows",
                           t.fp8().amax_history_len() == 0
                               ? " (Megatron's default)"
                               : "",
                           " in each fp8 module")
            : ""));
    if (l.bf16_first_layers > 0 || l.bf16_last_layers > 0) {
      out.push_back(absl::StrCat(
          "the first ", l.bf16_first_layers, " and last ",
          l.bf16_last_layers,
          " layers outside fp8: their activations counted in bf16 where "
          "that is more, their fp8 weight copies still counted"));
    }
    if (l.fp8_output_projection) {
      out.push_back("the LM head in MXFP8 (--fp8-output-proj): its weight's "
                    "fp8 pair counted beside the bf16 weight, its input in "
                    "bf16 (upper bounds)");
    }
  }
  switch (l.sharding) {
    case FsdpSharding::kNoShard:
      out.push_back("Megatron-FSDP no_shard: nothing sharded");
      break;
    case FsdpSharding::kOptim:
      out.push_back("Megatron-FSDP optim: optimizer states sharded");
      break;
    case FsdpSharding::kOptimGrads:
      out.push_back(absl::StrCat(
          "Megatron-FSDP optim_grads: optimizer states and gradients "
          "sharded; un-sharded gradients: ", FsdpUnshardedText(l)));
      break;
    case FsdpSharding::kOptimGradsParams:
      out.push_back(absl::StrCat(
          "Megatron-FSDP optim_grads_params: all model states sharded; "
          "un-sharded weights and gradients: ", FsdpUnshardedText(l)));
      break;
    default:
      break;
  }
  if (m.has_moe()) {
    const v1::MoeConfig& moe = m.moe();
    const double most_loaded =
        std::min<double>(l.load_imbalance, MaxExpertLoad(shape, l));
    std::string routing =
        moe.capacity_factor() > 0
            ? absl::StrCat("capacity ", moe.capacity_factor(), "x",
                           moe.pad_to_capacity() ? ", padded" : "")
        : most_loaded > 1
            ? absl::StrCat("dropless: balanced load estimated, the zone "
                           "counts the most loaded EP rank at ",
                           most_loaded, "x")
            : "dropless: every expert on this rank, no load margin";
    out.push_back(absl::StrCat(
        "MoE: ", moe.num_experts(), " experts, top-", moe.router_topk(),
        ", EP ", l.expert_parallel, ", ETP ", l.expert_tensor, " (",
        l.allgather_dispatcher ? "allgather"
        : l.deepep_dispatcher
            ? absl::StrCat("flex: DeepEP with ", l.deepep_sms,
                           " SMs, its NVLink/RDMA buffers and workspace "
                           "counted")
            : "all-to-all",
        "; ", routing, ")"));
    out.push_back(RouterAssumption(moe));
    out.push_back(RoutingProbsAssumption(moe));
    if (moe.grouped_tensor()) {
      out.push_back(
          "TransformerEngine GroupedTensor experts: each local expert's "
          "tokens padded to a multiple of 256 (up to 255 more copies an "
          "expert)");
    }
    if (moe.overlap_expert_parallel_comm()) {
      out.push_back(
          "EP all-to-all overlap (combined 1F1B): one more micro-batch (or "
          "chunk) in flight on every rank; the exchange still priced "
          "un-overlapped in plans");
    }
  }
  if (l.tp_comm_overlap) {
    out.push_back(absl::StrCat(
        "TP communication overlap: TransformerEngine's ",
        kTeUserbufferCommunicators, " userbuffers of (s x b / c) x h on every "
        "GPU",
        l.tp_comm_overlap_custom
            ? ", each counted at its largest (a bf16 reduce-scatter ring): "
              "--tp-comm-overlap-cfg is not read, an upper bound"
            : absl::StrCat(" (TE's defaults: ", kTeUserbufferAllGathers,
                           " all-gathers in ",
                           l.fp8 && !l.nvfp4 ? "fp8" : "bf16",
                           ", the reduce-scatters in bf16)"),
        ", and their communicators' flags; TE before 2.8 makes 10, counted "
        "as 12"));
  }
  if (m.has_mla()) {
    out.push_back(
        m.mla().fused_down_projection()
            ? "multi-latent attention: latents stored on every TP rank, "
              "down projections fused and split over TP "
              "(--mla-down-proj-fusion)"
            : "multi-latent attention: latents stored on every TP rank, "
              "down projections replicated");
  }
  // LayoutOf decides what is standalone (memory_model.h Layout.mtp_rank).
  if (m.mtp_num_layers() > 0 && l.mtp_rank >= 0) {
    out.push_back(absl::StrCat(
        m.mtp_num_layers(),
        " multi-token-prediction layer(s) standalone in pipeline rank ",
        l.mtp_rank,
        "'s last chunk, with an embedding of their own; their logits on "
        "the last stage"));
  } else if (m.mtp_num_layers() > 0) {
    out.push_back(absl::StrCat(m.mtp_num_layers(),
                               " multi-token-prediction layer(s) and their "
                               "logits on the last stage"));
  }
  if (t.hidden_dropout() > 0) {
    out.push_back(absl::StrCat("hidden dropout ", t.hidden_dropout(),
                               ": 1-byte masks (2sbh a layer, sbh at the "
                               "embedding)"));
  }
  const bool local = t.attention_kernel() == v1::ATTENTION_KERNEL_LOCAL;
  if (t.local_layer_spec()) {
    out.push_back("Megatron's local layer spec (torch norms apart from the "
                  "linear layers): recomputing \"layernorm\" drops both "
                  "norms' outputs; a QK-norm's input keeps the QKV output");
  }
  const bool unfused =
      local || t.attention_kernel() == v1::ATTENTION_KERNEL_UNFUSED;
  const bool selective = t.recompute().granularity() ==
                         v1::Recompute::GRANULARITY_SELECTIVE;
  const UnfusedAttentionKept kept = UnfusedAttentionKeeps(shape, l);
  if (!unfused && m.attention_logit_softcapping() > 0) {
    out.push_back("soft-capped scores through Megatron-Bridge's "
                  "FlexAttention (the flash kernel given): no scores kept; "
                  "the attention output twice (the kernel's and the output "
                  "projection's copy) and an fp32 logsumexp a head");
  }
  if (!unfused && t.flash_attention_disabled() &&
      m.attention_logit_softcapping() == 0) {
    // On Blackwell a deterministic backward needs cuDNN 9.18.1
    // (attention_backend.cc CudnnTrains): assumed, and said.
    const bool blackwell_deterministic =
        t.te_deterministic_attention() &&
        IsBlackwell(FamilyOfAccelerator(job.accelerator().name()));
    out.push_back(absl::StrCat(
        "FlashAttention disabled (NVTE_FLASH_ATTN=0 or --attention-backend "
        "fused): cuDNN's fused attention, which trains these head "
        "dimensions here",
        blackwell_deterministic
            ? " (deterministically on Blackwell from cuDNN 9.18.1, assumed "
              "installed)"
            : "",
        ": no scores kept"));
  }
  if (!unfused && m.softmax_type() != v1::SOFTMAX_TYPE_VANILLA) {
    out.push_back(absl::StrCat(
        "attention sinks (", v1::SoftmaxType_Name(m.softmax_type()),
        ") in cuDNN's fused attention, which has them from cuDNN 9.13.1: no "
        "scores kept",
        m.softmax_type() == v1::SOFTMAX_TYPE_LEARNABLE
            ? "; a learned logit a head counted"
            : ""));
  }
  if (!unfused && FamilyOfAccelerator(job.accelerator().name()) ==
                       GpuFamily::kUnknown) {
    // A GPU given by its capacity alone is taken for an H100, the most
    // permissive of the catalog's (attention_backend.cc): say where that
    // choice counts no scores that another GPU's kernels would keep.
    std::vector<std::string> unfused_on;
    for (const std::string& gpu : AcceleratorNames()) {
      if (TransformerEngineAttention(m, t.precision(), gpu,
                                     TeSwitchesOf(t)) ==
          TeAttention::kUnfusedOnly) {
        unfused_on.push_back(gpu);
      }
    }
    if (!unfused_on.empty()) {
      out.push_back(absl::StrCat(
          "the GPU is not named (accelerator.name, --gpu): its attention "
          "kernels are taken to be an H100's, which train these head "
          "dimensions fused (no scores kept); on ",
          absl::StrJoin(unfused_on, ", "),
          " TransformerEngine runs them unfused and keeps the scores: name "
          "the GPU"));
    }
  }
  if (unfused) {
    // 2-byte scores, 4-byte in fp32 training (memory_model.cc); the
    // dropout mask is 1 byte either way.
    const int e = t.precision() == v1::PRECISION_FP32 ? 4 : 2;
    out.push_back(
        !kept.scores
            ? std::string("unfused attention, its scores recomputed "
                          "(selective)")
        : t.attention_dropout() > 0
            ? absl::StrCat("unfused attention with dropout: ", 2 * e + 1,
                           "as^2b a layer (softmax output, dropout mask and "
                           "output)")
            : absl::StrCat("unfused attention: the softmax output, ", e,
                           "as^2b a layer"));
    // Why, where TransformerEngine has no fused kernel for it.
    const std::string why =
        WhyNoFusedAttention(m, t.precision(), job.accelerator().name(),
                            TeSwitchesOf(t));
    if (!why.empty()) {
      out.push_back(absl::StrCat(why, ": attention runs unfused"));
    }
    std::vector<std::string> also;
    if (kept.expanded_kv) also.push_back("K and V expanded to the query heads");
    if (kept.qkv_output) {
      also.push_back("the whole QKV output (V is a view of it)");
    }
    if (kept.causal_masks) {
      also.push_back(kept.capped_scores
                         ? "each layer's s x s bool mask (causal, or Gemma "
                           "2's sliding window)"
                         : "each layer's s x s bool causal mask (no mask "
                           "from the dataloader)");
    }
    if (kept.fp32_softmax) {
      also.push_back(absl::StrCat(
          "its softmax's fp32 output, ",
          t.attention_dropout() > 0 ? 2 : 4,
          kept.scores_buffer
              ? "as^2b a layer (Megatron's fused softmax takes 16 < s <= "
                "4096, s a multiple of 4, b x a/t a multiple of 4)"
          : t.te_masked_softmax_fusion_disabled()
              ? "as^2b a layer (NVTE_MASKED_SOFTMAX_FUSION=0: "
                "TransformerEngine's fused softmax off)"
              : "as^2b a layer (TransformerEngine's fused softmax takes 16 "
                "< s < 16384, s a multiple of 8, b x a/t a multiple of 4)"));
    }
    if (kept.capped_scores) {
      also.push_back(absl::StrCat("the soft-capped scores' tanh, ", e,
                                  "as^2b a layer"));
    }
    if (kept.scores_buffer) {
      also.push_back(absl::StrCat(
          "Megatron's global buffer of one layer's scores (", e,
          "as^2b/t once a GPU) is held outside the total, in the "
          "headroom as measured, and checked beside the stage and its "
          "transients in what a process can allocate"));
    }
    if (local && kept.scores && !kept.fp32_softmax &&
        t.precision() != v1::PRECISION_FP32) {
      also.push_back(t.attention_softmax_in_fp32()
                         ? "no fp32 softmax output (Megatron's kernel runs)"
                         : "no fp32 softmax output (Megatron's local softmax "
                           "runs in bf16 past its kernel without "
                           "--attention-softmax-in-fp32)");
    }
    if (!also.empty()) {
      out.push_back(absl::StrCat("unfused attention also keeps ",
                                 absl::StrJoin(also, "; ")));
    }
  } else if (t.attention_dropout() > 0) {
    out.push_back("attention dropout inside the fused kernel: no mask "
                  "stored");
  }
  if (selective) out.push_back(SelectiveRecomputeAssumption(t, unfused));
  if (t.dataloader_attention_mask()) {
    const bool kept = DataloaderMaskIsSaved(l);
    out.push_back(absl::StrCat(
        "dataloader attention mask: b x s x s bool on the first and last "
        "stages (s/c rows a context-parallel rank), ",
        kept ? "kept for every micro-batch in flight (saved for backward)"
             : "the current micro-batch's"));
  }
  if (t.recompute().granularity() == v1::Recompute::GRANULARITY_FULL) {
    out.push_back(absl::StrCat(
        "full recomputation (",
        t.recompute().method() == v1::Recompute::METHOD_BLOCK
            ? "block, the first "
            : "uniform, groups of ",
        t.recompute().num_layers(),
        " layers): layer inputs stored, plus the working set of the layers "
        "being recomputed"));
  }
  if (m.head_dim() != 0 &&
      static_cast<uint64_t>(m.head_dim()) * m.num_attention_heads() !=
          m.hidden_size()) {
    out.push_back(absl::StrCat("head_dim ", m.head_dim(), " (a x d = ",
                               uint64_t{m.head_dim()} * m.num_attention_heads(),
                               ", not h)"));
  }
  if (t.fused_swiglu()) {
    out.push_back(t.activation_fp8_input_store()
                      ? "fused SwiGLU with its input stored in fp8: the MLP "
                        "keeps its FC1 output (1 B an element) and FC2 input, "
                        "4 B a unit of FFN width (the paper counts 8); routed "
                        "experts counted with a 16-bit input"
                      : "fused SwiGLU: the MLP keeps its FC1 output and FC2 "
                        "input, 6 B a unit of FFN width (the paper counts 8)");
  }
  if (t.glu_linear_copy()) {
    out.push_back(absl::StrCat(
        "unfused SwiGLU (Megatron's glu()): the MLP keeps its FC1 output, "
        "silu's output, x_linear + offset and FC2's input, ",
        job.model().activation_clamp() ? "with the clamped gate 12" : "10",
        " B a unit of FFN width (the paper counts 8)"));
  }
  if (t.fp32_local_grad_accumulation()) {
    out.push_back(
        "fp32 local gradient accumulation: every parameter counted with an "
        "fp32 gradient (4 B) beside its 16-bit one");
  }
  if (t.defer_embedding_wgrad()) {
    out.push_back(absl::StrCat(
        "deferred output-layer weight gradient: the last stage keeps the "
        "output layer's input and the logits' gradient of ",
        t.wgrad_deferral_limit() == 0
            ? std::string("every call of the step")
            : absl::StrCat("at most ", t.wgrad_deferral_limit(), " calls"),
        " until the pipeline flush"));
  }
  if (m.mlp_activation() == v1::MLP_ACTIVATION_GELU) {
    out.push_back("GeLU MLP (2 matrices)");
  }
  if (m.mlp_activation() == v1::MLP_ACTIVATION_SQUARED_RELU) {
    out.push_back("squared-ReLU MLP (2 matrices; keeps what GeLU keeps)");
  }
  if (m.mlp_activation() == v1::MLP_ACTIVATION_GEGLU) {
    out.push_back("GeGLU MLP (a gated GeLU, as Gemma's), unfused as Megatron "
                  "runs it: 10 bytes an FFN column a token (x_linear + "
                  "offset from core 0.15: an upper bound before)");
  }
  if (m.mlp_activation() == v1::MLP_ACTIVATION_QUICK_GEGLU) {
    out.push_back(t.jit_fuser_disabled()
                      ? "quick-GeGLU MLP, unfused and eager "
                        "(--disable-jit-fuser): 12 bytes an FFN column a "
                        "token (quick_gelu keeps its sigmoid)"
                      : "quick-GeGLU MLP, unfused as Megatron runs it: 10 "
                        "bytes an FFN column a token (measured)");
    if (m.has_moe() && m.moe().num_experts() > 0 && m.linear_bias() &&
        !m.moe().expert_activation_unfused()) {
      out.push_back(absl::StrCat(
          "quick-GeGLU experts with biases: Megatron's fused bias-activation "
          "(on with biases unless --no-bias-gelu-fusion), ",
          m.activation_clamp() ? 10 : 6,
          " bytes an expert FFN column a routed copy"));
    }
  }
  if (m.normalization() == v1::NORMALIZATION_LAYERNORM) {
    out.push_back("LayerNorm (weight and bias)");
  }
  if (m.linear_bias()) out.push_back("biases on every linear layer");
  if (m.qk_norm()) {
    out.push_back(m.has_mla()
                      ? "latent norms (--qk-layernorm with MLA): fused into "
                        "the up projections, their inputs stored"
                      : "QK-norm: norms on Q and K, inputs stored");
  }
  if (m.qk_l2_norm()) {
    out.push_back("QK L2 norms (--qk-l2-norm): no weights; K's input, a view "
                  "of the QKV output, keeps that whole output (measured)");
  }
  if (m.sandwich_norms()) {
    out.push_back("sandwich norms (Gemma 2/3): 4 norms a layer, inputs "
                  "stored");
  }
  if (m.final_logit_softcapping() > 0) {
    out.push_back("final logit soft-capping: the logits' tanh stored "
                  "(2sbv/t)");
  }
  if (m.attention_logit_softcapping() > 0) {
    out.push_back(absl::StrCat(
        "attention logit soft-capping (", m.attention_logit_softcapping(),
        "): Gemma 2's own attention, context parallel 1 only"));
  }
  if (!m.linear_bias() && m.qkv_bias()) out.push_back("a QKV bias");
  if (m.position_embedding() == v1::POSITION_EMBEDDING_LEARNED_ABSOLUTE) {
    out.push_back(absl::StrCat("learned absolute positions (",
                               m.max_position_embeddings(),
                               " x h on the first stage)"));
  }
  // The term's own decision (memory_model.cc [RU]), not a second one.
  if (UnfusedRopeTables(shape, l) > 0) {
    out.push_back(absl::StrCat(
        "unfused RoPE (",
        !shape.rope_always_unfused ? "--no-rope-fusion"
        : shape.mla ? "MLA's RoPE runs unfused beside any positions but rope"
                    : "YaRN and mRoPE always run it",
        "): each layer keeps cos and sin for Q and for K, 4 x s/c x d_rot "
        "in the activations' dtype, whole on every TP rank"));
  }
  return out;
}

}  // namespace memgate
