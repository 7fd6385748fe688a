#include "readers/megatron_moe_args.h"

#include <algorithm>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "estimator/deepep_buffers.h"
#include "readers/layer_pattern.h"

namespace memgate {
namespace {

// --moe-layer-freq: an integer N (layer i is MoE when i % N == 0) or a
// list expression, as arguments.py's moe_freq_type reads it.
absl::Status FillLayerFrequency(const Arguments& args, v1::MoeConfig& moe,
                                uint32_t layers) {
  if (!args.Has("moe-layer-freq")) {
    moe.set_layer_frequency(1);
    return absl::OkStatus();
  }
  const std::string text = Unquoted(args.Text("moe-layer-freq"));
  if (text.find('[') == std::string::npos) {
    MEMGATE_ASSIGN_OR_RETURN(freq, args.Number("moe-layer-freq", 1));
    if (freq == 0) return Bad("moe-layer-freq", "must be at least 1");
    moe.set_layer_frequency(freq);
    return absl::OkStatus();
  }
  absl::StatusOr<std::vector<uint32_t>> pattern =
      ParseMoeLayerPattern(text, layers);
  if (!pattern.ok()) return pattern.status();
  for (uint32_t x : *pattern) moe.add_layer_pattern(x);
  return absl::OkStatus();
}

// --moe-token-dispatcher-type flex: Megatron's backend is DeepEP unless
// --moe-flex-dispatcher-backend says otherwise (transformer_config.py);
// HybridEP and NCCL EP hold buffers of other shapes, not modelled. The
// SMs DeepEP gets size its buffers (deepep_buffers.h).
absl::Status FillFlexBackend(const Arguments& args, MegatronLaunch& launch,
                             v1::MoeConfig& moe) {
  const std::string backend = args.Has("moe-flex-dispatcher-backend")
                                  ? args.Text("moe-flex-dispatcher-backend")
                                  : std::string("deepep");
  if (backend != "deepep") {
    return Bad("moe-flex-dispatcher-backend",
               absl::StrCat(Quoted(backend),
                            " holds communication buffers memgate does not "
                            "model (deepep is modelled)"));
  }
  if (args.Has("moe-flex-dispatcher-num-sms") &&
      args.Has("moe-deepep-num-sms") &&
      args.Text("moe-flex-dispatcher-num-sms") !=
          args.Text("moe-deepep-num-sms")) {
    return Bad("moe-deepep-num-sms",
               "contradicts --moe-flex-dispatcher-num-sms (its newer name)");
  }
  const char* sms_flag = args.Has("moe-flex-dispatcher-num-sms")
                             ? "moe-flex-dispatcher-num-sms"
                             : "moe-deepep-num-sms";
  MEMGATE_ASSIGN_OR_RETURN(sms, args.Number(sms_flag, kDefaultDeepEpSms));
  if (sms == 0 || sms % 2 != 0) {
    return Bad(sms_flag, "must be a positive even number (DeepEP pairs SMs)");
  }
  moe.set_flex_dispatcher_num_sms(sms);
  launch.notes.push_back(absl::StrCat(
      "flex dispatcher: DeepEP with ", sms, " SMs",
      args.Has(sms_flag) ? "" : " (Megatron's default)",
      ", its buffers counted on every GPU of a stage with MoE layers"));
  return absl::OkStatus();
}

// Where the routing probabilities weight the expert outputs depends on
// the Megatron-Core release (moe_terms.cc [PA]); an argument that no
// release before ADLR/megatron-lm!2668 accepts dates the launch after it
// (Megatron's argparse refuses arguments it does not know).
void FillProbsApplied(const Arguments& args, MegatronLaunch& launch,
                      v1::MoeConfig& moe) {
  const bool legacy = args.Has("moe-use-legacy-grouped-gemm");
  // Quick-GeGLU experts with biases run the fused bias-activation unless
  // --no-bias-gelu-fusion turns it off (moe_terms.cc [QF]).
  if (args.Has("quick-geglu") && args.Has("no-bias-gelu-fusion")) {
    moe.set_expert_activation_unfused(true);
  }
  if (args.Has("moe-mlp-glu-interleave-size") || legacy ||
      RunsUnfusedSwiglu(args)) {
    moe.set_expert_activation_unfused(true);
    // The interleaved halves, or any halves without the bias-activation
    // fusion, run TEGroupedMLP's glu(), whose x_linear + offset is a
    // tensor of its own (moe_terms.cc [QG]); the legacy GroupedMLP
    // multiplies the half itself. Both given: the larger.
    moe.set_expert_glu_linear_copy(args.Has("moe-mlp-glu-interleave-size") ||
                                   (RunsUnfusedSwiglu(args) && !legacy));
  } else if (args.Has("use-te-activation-func")) {
    moe.set_expert_activation_te_op(true);
  }
  if (args.Has("moe-apply-probs-on-input")) {
    // Top-1 only: validation names the rule.
    moe.set_routing_probs_applied(v1::MoeConfig::PROBS_APPLIED_ON_INPUT);
    return;
  }
  if (!args.after_core_0_12_0().empty()) {
    moe.set_routing_probs_applied(v1::MoeConfig::PROBS_APPLIED_IN_EXPERTS);
    launch.notes.push_back(absl::StrCat(
        "--", args.after_core_0_12_0(),
        " dates the launch after Megatron-Core 0.12.0: the routing "
        "probabilities are applied in the experts, unpermute keeps no "
        "weighted copy"));
    return;
  }
  launch.notes.push_back(
      "no argument dates the launch after Megatron-Core 0.12.0: unless "
      "memgate's --megatron-core=VERSION names the release, MoE layers "
      "count the larger of 0.12.0's weighted unpermute copy (2h B a routed "
      "copy) and later releases' in-expert weighting");
}

absl::Status FillDispatch(const Arguments& args, MegatronLaunch& launch,
                          v1::MoeConfig& moe) {
  const std::string dispatcher = args.Has("moe-token-dispatcher-type")
                                     ? args.Text("moe-token-dispatcher-type")
                                     : std::string("allgather");
  if (!args.Has("moe-token-dispatcher-type")) {
    launch.notes.push_back(
        "no --moe-token-dispatcher-type: Megatron's default allgather");
  }
  if (dispatcher != "flex") {
    // Megatron refuses these without the flex dispatcher.
    for (const char* needs : {"moe-enable-deepep",
                              "moe-flex-dispatcher-num-sms",
                              "moe-deepep-num-sms"}) {
      if (args.Has(needs)) {
        return Bad(needs, "needs --moe-token-dispatcher-type flex");
      }
    }
    if (args.Text("moe-flex-dispatcher-backend") == "ncclep") {
      return Bad("moe-flex-dispatcher-backend",
                 "ncclep needs --moe-token-dispatcher-type flex");
    }
  }
  if (dispatcher == "allgather") {
    moe.set_token_dispatcher(v1::MoeConfig::DISPATCHER_ALLGATHER);
  } else if (dispatcher == "alltoall") {
    moe.set_token_dispatcher(v1::MoeConfig::DISPATCHER_ALLTOALL);
  } else if (dispatcher == "flex") {
    moe.set_token_dispatcher(v1::MoeConfig::DISPATCHER_FLEX);
    if (absl::Status s = FillFlexBackend(args, launch, moe); !s.ok()) return s;
  } else {
    return Bad("moe-token-dispatcher-type",
               absl::StrCat(Quoted(dispatcher),
                            " is not one of allgather, "
                            "alltoall, flex"));
  }
  MEMGATE_ASSIGN_OR_RETURN(capacity,
                           args.Decimal("moe-expert-capacity-factor", 0));
  moe.set_capacity_factor(static_cast<float>(capacity));
  moe.set_pad_to_capacity(args.Has("moe-pad-expert-input-to-capacity"));
  if (moe.pad_to_capacity() && capacity == 0) {
    return Bad("moe-pad-expert-input-to-capacity",
               "needs --moe-expert-capacity-factor");
  }
  if (capacity == 0) {
    launch.notes.push_back(
        "dropless routing: estimated at the balanced load; the zone counts "
        "the most loaded expert-parallel rank at 1.25x its share");
  }
  const std::string router = args.Text("moe-router-dtype");
  if (!router.empty() && router != "fp32") {
    return Bad("moe-router-dtype",
               absl::StrCat(Quoted(router), " is not modelled (fp32)"));
  }
  moe.set_router_dtype(v1::DTYPE_FP32);  // default: an upper bound
  moe.set_grouped_gemm(args.Has("moe-grouped-gemm"));
  // Biases on experts (Megatron's default, no --disable-bias-linear;
  // moe_terms.cc [EB]): the legacy GroupedMLP asserts it has none, and
  // TEGroupedMLP asserts that the bias-dropout fusion, on unless
  // --no-bias-dropout-fusion, is off (moe/experts.py): either job never
  // trains.
  const bool biases = !args.Has("disable-bias-linear");
  // Two more such jobs, each raising at its first step (d98e8a6; the
  // second seen on an H100, bench/RESULTS.md session 35):
  // SharedExpertMLP asserts add_bias_linear is off (shared_experts.py),
  // and SequentialMLP's experts (no --moe-grouped-gemm) hand FC1's bias to
  // the weighted SwiGLU fusion, which raises on it (fused_bias_swiglu.py
  // weighted_bias_swiglu_impl; TEGroupedMLP adds FC1's bias inside the
  // GEMM and passes none).
  if (biases && args.Has("moe-shared-expert-intermediate-size")) {
    return Bad("moe-shared-expert-intermediate-size",
               "with biases on (no --disable-bias-linear): Megatron's "
               "SharedExpertMLP asserts 'bias is not supported in the "
               "shared experts'");
  }
  if (biases && !moe.grouped_gemm() && args.Has("swiglu") &&
      !args.Has("no-bias-swiglu-fusion")) {
    return Bad("swiglu",
               "experts without --moe-grouped-gemm (SequentialMLP) with "
               "biases on (no --disable-bias-linear) need "
               "--no-bias-swiglu-fusion: Megatron's weighted SwiGLU fusion "
               "raises 'Bias is not supported for weighted swiglu fusion'");
  }
  if (moe.grouped_gemm() && biases) {
    if (args.Has("moe-use-legacy-grouped-gemm")) {
      return Bad("moe-use-legacy-grouped-gemm",
                 "with biases on (no --disable-bias-linear): Megatron's "
                 "GroupedMLP asserts 'bias not supported in Grouped GEMM "
                 "yet'");
    }
    if (!args.Has("no-bias-dropout-fusion")) {
      return Bad("moe-grouped-gemm",
                 "with biases on (no --disable-bias-linear) needs "
                 "--no-bias-dropout-fusion: TEGroupedMLP asserts "
                 "'bias_dropout_fusion is not supported in TEGroupedMLP "
                 "when add_bias_linear=True'");
    }
  }
  // transformer_config.py: the op fuser turns the GroupedTensor path on
  // with grouped GEMMs, which it needs; moe_utils.py then pads every
  // local expert to 256 rows.
  const bool op_fuser = args.Has("use-transformer-engine-op-fuser");
  if (args.Has("moe-use-grouped-tensor") && !moe.grouped_gemm()) {
    return Bad("moe-use-grouped-tensor",
               "needs --moe-grouped-gemm (Megatron raises)");
  }
  moe.set_grouped_tensor(args.Has("moe-use-grouped-tensor") ||
                         (op_fuser && moe.grouped_gemm()));
  moe.set_fused_grouped_mlp(op_fuser && moe.grouped_gemm());
  // Megatron's rules for it are validation's (ValidateExpertOverlap).
  moe.set_overlap_expert_parallel_comm(
      args.Has("overlap-moe-expert-parallel-comm"));
  // The experts' delayed weight gradients: no term of their own
  // (megatron_arguments.cc), but Megatron asserts against both overlaps
  // beside them (transformer_config.py).
  constexpr char kDelayedExpertWgrad[] =
      "overlap-dispatch-backward-with-experts-wgrad";
  if (args.Has(kDelayedExpertWgrad)) {
    for (const char* excluded :
         {"overlap-moe-expert-parallel-comm", "delay-wgrad-compute"}) {
      if (args.Has(excluded)) {
        return Bad(kDelayedExpertWgrad,
                   absl::StrCat("cannot be given with --", excluded,
                                " (Megatron asserts)"));
      }
    }
  }
  return absl::OkStatus();
}

// How the router balances its load, from --moe-router-load-balancing-type
// and --moe-aux-loss-coeff (both lists; Megatron asserts equal lengths
// when either is several): a loss is computed where an aux_loss,
// seq_aux_loss or global_aux_loss type has a coefficient above 0
// (router.py is_aux_loss_enabled).
struct LoadBalancing {
  bool aux_loss = false, sinkhorn = false, quantile = false;
};

absl::StatusOr<LoadBalancing> ReadLoadBalancing(const Arguments& args) {
  const std::vector<std::string> types =
      args.Has("moe-router-load-balancing-type")
          ? absl::StrSplit(args.Text("moe-router-load-balancing-type"), ' ',
                           absl::SkipEmpty())
          : std::vector<std::string>{"aux_loss"};
  std::vector<double> coeffs;
  for (absl::string_view word :
       absl::StrSplit(args.Text("moe-aux-loss-coeff"), ' ',
                      absl::SkipEmpty())) {
    double c = 0;
    if (!absl::SimpleAtod(word, &c) || !(c >= 0)) {
      return Bad("moe-aux-loss-coeff", "each coefficient must be a number "
                                       "of at least 0");
    }
    coeffs.push_back(c);
  }
  if (coeffs.empty()) coeffs.push_back(0);  // Megatron's default
  if ((types.size() > 1 || coeffs.size() > 1) &&
      coeffs.size() != types.size()) {
    return Bad("moe-aux-loss-coeff",
               "must give one coefficient a load-balancing type (Megatron "
               "asserts, or compares a list with 0)");
  }
  LoadBalancing out;
  for (size_t i = 0; i < types.size(); ++i) {
    const std::string& type = types[i];
    const double coeff = coeffs[std::min(i, coeffs.size() - 1)];
    if (type == "aux_loss" || type == "seq_aux_loss" ||
        type == "global_aux_loss") {
      out.aux_loss = out.aux_loss || coeff > 0;
    } else if (type == "sinkhorn" || type == "quantile_balancing") {
      (type == "sinkhorn" ? out.sinkhorn : out.quantile) = true;
      if (coeff > 0) {
        return Bad("moe-aux-loss-coeff",
                   absl::StrCat("must be 0 with ", type,
                                " routing (Megatron asserts)"));
      }
    } else if (type != "none") {
      return Bad("moe-router-load-balancing-type",
                 absl::StrCat(Quoted(type),
                              " is not one of aux_loss, seq_aux_loss, "
                              "global_aux_loss, sinkhorn, "
                              "quantile_balancing, none"));
    }
  }
  return out;
}

// What the router keeps (moe_terms.cc [RS]), as router.py and
// moe_utils.py run it, with transformer_config.py's rules.
absl::Status FillRouter(const Arguments& args, MegatronLaunch& launch,
                        v1::MoeConfig& moe) {
  MEMGATE_ASSIGN_OR_RETURN(balancing, ReadLoadBalancing(args));
  moe.set_aux_loss(balancing.aux_loss);
  if (!args.Has("moe-aux-loss-coeff")) {
    launch.notes.push_back(
        "no --moe-aux-loss-coeff: Megatron's 0, no load-balancing loss");
  }
  moe.set_z_loss(args.Has("moe-z-loss-coeff"));
  const std::string function = args.Has("moe-router-score-function")
                                   ? args.Text("moe-router-score-function")
                                   : std::string("softmax");
  const bool pre_softmax = args.Has("moe-router-pre-softmax");
  using S = v1::MoeConfig;
  if (balancing.sinkhorn) {
    // router.py sinkhorn_load_balancing: a softmax (a sigmoid for top-1)
    // over every expert, kept; the fused router is not run.
    moe.set_router_score_function(S::ROUTER_SCORE_SOFTMAX);
  } else if (function == "softmax") {
    moe.set_router_score_function(pre_softmax
                                      ? S::ROUTER_SCORE_SOFTMAX
                                      : S::ROUTER_SCORE_SOFTMAX_AFTER_TOPK);
  } else if (function == "sigmoid") {
    moe.set_router_score_function(S::ROUTER_SCORE_SIGMOID);
  } else if (function == "sqrtsoftplus") {
    moe.set_router_score_function(S::ROUTER_SCORE_SQRTSOFTPLUS);
  } else {
    return Bad("moe-router-score-function",
               absl::StrCat(Quoted(function),
                            " is not one of softmax, sigmoid, "
                            "sqrtsoftplus"));
  }
  if (args.Has("moe-router-enable-expert-bias") && function == "softmax") {
    return Bad("moe-router-enable-expert-bias",
               "needs --moe-router-score-function sigmoid or sqrtsoftplus "
               "(Megatron raises)");
  }
  if (moe.router_score_function() == S::ROUTER_SCORE_SOFTMAX_AFTER_TOPK &&
      moe.router_topk() == 1) {
    return Bad("moe-router-topk",
               "1 with a softmax after the top-k: Megatron raises 'Please "
               "use --moe-router-pre-softmax when topk is 1'");
  }
  const bool fused = args.Has("moe-router-fusion");
  if (balancing.quantile &&
      (fused || args.Has("moe-router-num-groups") ||
       args.Has("moe-router-group-topk"))) {
    return Bad("moe-router-load-balancing-type",
               "quantile_balancing runs neither --moe-router-fusion nor "
               "group-limited routing (Megatron asserts)");
  }
  moe.set_router_fusion(fused && !balancing.sinkhorn);
  MEMGATE_ASSIGN_OR_RETURN(groups, args.Number("moe-router-num-groups", 0));
  MEMGATE_ASSIGN_OR_RETURN(group_topk,
                           args.Number("moe-router-group-topk", 0));
  if (group_topk > 0 && (groups == 0 || moe.num_experts() % groups != 0)) {
    return Bad("moe-router-num-groups",
               absl::StrCat("must divide --num-experts (",
                            moe.num_experts(),
                            ") with --moe-router-group-topk (Megatron "
                            "raises or asserts)"));
  }
  if (group_topk > groups && groups > 0) {
    return Bad("moe-router-group-topk",
               "must be at most --moe-router-num-groups (Megatron asserts)");
  }
  moe.set_router_num_groups(groups);
  moe.set_router_group_topk(group_topk);
  return absl::OkStatus();
}

absl::Status FillMoe(const Arguments& args, MegatronLaunch& launch) {
  v1::ModelConfig& m = *launch.job.mutable_model();
  v1::ParallelConfig& p = *launch.job.mutable_parallel();
  if (!args.Has("num-experts")) {
    // Without experts the expert TP size is TP's (Megatron's default).
    if (absl::Status s = RequireUnshardedWeights(
            args, "expert-tensor-parallel-num-weight-shards",
            "the expert TP size", p.tensor_parallel());
        !s.ok()) {
      return s;
    }
    for (const char* needs : {"expert-model-parallel-size",
                              "expert-tensor-parallel-size",
                              "moe-layer-recompute",
                              "overlap-moe-expert-parallel-comm"}) {
      if (args.Has(needs)) return Bad(needs, "needs --num-experts");
    }
    return absl::OkStatus();
  }
  MEMGATE_ASSIGN_OR_RETURN(experts, args.Number("num-experts", 0));
  if (experts == 0) return Bad("num-experts", "must be at least 1");
  v1::MoeConfig& moe = *m.mutable_moe();
  moe.set_num_experts(experts);
  MEMGATE_ASSIGN_OR_RETURN(topk, args.Number("moe-router-topk", 2));
  if (!args.Has("moe-router-topk")) {
    launch.notes.push_back("no --moe-router-topk: Megatron's default 2");
  }
  moe.set_router_topk(topk);
  MEMGATE_ASSIGN_OR_RETURN(
      ffn, args.Number("moe-ffn-hidden-size", m.ffn_hidden_size()));
  moe.set_expert_ffn_hidden_size(ffn);
  MEMGATE_ASSIGN_OR_RETURN(
      shared, args.Number("moe-shared-expert-intermediate-size", 0));
  moe.set_shared_expert_ffn_hidden_size(shared);
  moe.set_shared_expert_gate(args.Has("moe-shared-expert-gate"));
  // Megatron's rules for it are validation's (ValidateSharedExpertOverlap).
  moe.set_shared_expert_overlap(args.Has("moe-shared-expert-overlap"));
  moe.set_input_jitter(args.Has("moe-input-jitter-eps"));
  if (absl::Status s = FillRouter(args, launch, moe); !s.ok()) return s;
  if (absl::Status s = FillLayerFrequency(args, moe, m.num_layers());
      !s.ok()) {
    return s;
  }
  if (absl::Status s = FillDispatch(args, launch, moe); !s.ok()) return s;
  FillProbsApplied(args, launch, moe);
  MEMGATE_ASSIGN_OR_RETURN(ep, args.Number("expert-model-parallel-size", 1));
  if (ep == 0) return Bad("expert-model-parallel-size", "must be at least 1");
  p.set_expert_parallel(ep);
  MEMGATE_ASSIGN_OR_RETURN(
      etp, args.Number("expert-tensor-parallel-size", p.tensor_parallel()));
  if (etp == 0) return Bad("expert-tensor-parallel-size", "must be at least 1");
  if (absl::Status s = RequireUnshardedWeights(
          args, "expert-tensor-parallel-num-weight-shards",
          "--expert-tensor-parallel-size", etp);
      !s.ok()) {
    return s;
  }
  p.set_expert_tensor_parallel(etp);
  if (args.Has("use-transformer-engine-op-fuser") && moe.grouped_gemm()) {
    // experts.py TEGroupedMLP asserts _is_fused_impl_supported: no expert
    // TP (its tp_group is the expert TP group), no probabilities applied
    // on the input.
    if (etp > 1) {
      return Bad("use-transformer-engine-op-fuser",
                 "with --moe-grouped-gemm needs an expert TP size of 1 "
                 "(--expert-tensor-parallel-size, TP by default): Megatron "
                 "asserts its fused grouped MLP runs without expert TP");
    }
    if (args.Has("moe-apply-probs-on-input")) {
      return Bad("use-transformer-engine-op-fuser",
                 "with --moe-grouped-gemm cannot run "
                 "--moe-apply-probs-on-input (Megatron asserts)");
    }
  }
  if (args.Has("moe-layer-recompute")) {
    // Checkpointing the whole MoE block keeps only its input, as
    // --recompute-modules moe does.
    v1::Recompute& r = *launch.job.mutable_training()->mutable_recompute();
    if (r.granularity() == v1::Recompute::GRANULARITY_FULL) {
      return absl::OkStatus();  // full recomputation already covers it
    }
    if (r.granularity() != v1::Recompute::GRANULARITY_SELECTIVE) {
      r.set_granularity(v1::Recompute::GRANULARITY_SELECTIVE);
      r.add_modules(v1::Recompute::MODULE_CORE_ATTN);
    }
    r.add_modules(v1::Recompute::MODULE_MOE);
  }
  return absl::OkStatus();
}

absl::Status FillMla(const Arguments& args, MegatronLaunch& launch) {
  v1::ModelConfig& m = *launch.job.mutable_model();
  const std::string rope_type = args.Text("rope-type");
  if (!rope_type.empty() && rope_type != "rope" && rope_type != "yarn") {
    return Bad("rope-type", absl::StrCat(Quoted(rope_type),
                                         " is not Megatron's (rope or yarn)"));
  }
  if (!args.Has("multi-latent-attention")) {
    // argument_utils.py asserts rope_type rope outside MLA.
    if (rope_type == "yarn") {
      return Bad("rope-type",
                 "yarn needs --multi-latent-attention (Megatron asserts; "
                 "--position-embedding-type yarn is YaRN for other "
                 "attention)");
    }
    for (const char* needs :
         {"q-lora-rank", "kv-lora-rank", "mla-down-proj-fusion"}) {
      if (args.Has(needs)) return Bad(needs, "needs --multi-latent-attention");
    }
  } else {
    v1::MlaConfig& mla = *m.mutable_mla();
    // arguments.py's defaults.
    MEMGATE_ASSIGN_OR_RETURN(q, args.Number("q-lora-rank", 0));
    MEMGATE_ASSIGN_OR_RETURN(kv, args.Number("kv-lora-rank", 32));
    MEMGATE_ASSIGN_OR_RETURN(qk, args.Number("qk-head-dim", 128));
    MEMGATE_ASSIGN_OR_RETURN(rope, args.Number("qk-pos-emb-head-dim", 64));
    MEMGATE_ASSIGN_OR_RETURN(v, args.Number("v-head-dim", 128));
    mla.set_q_lora_rank(q);
    mla.set_kv_lora_rank(kv);
    mla.set_qk_head_dim(qk);
    mla.set_qk_pos_emb_head_dim(rope);
    mla.set_v_head_dim(v);
    mla.set_fused_down_projection(args.Has("mla-down-proj-fusion"));
    for (const char* defaulted : {"kv-lora-rank", "qk-head-dim",
                                  "qk-pos-emb-head-dim", "v-head-dim"}) {
      if (!args.Has(defaulted)) {
        launch.notes.push_back(
            absl::StrCat("no --", defaulted, ": Megatron's default"));
      }
    }
    if (args.Has("group-query-attention")) {
      return Bad("group-query-attention",
                 "cannot be given with --multi-latent-attention (Megatron "
                 "refuses it)");
    }
    // gpt_layer_specs.py asserts qk_l2_norm is off with MLA;
    // --qk-layernorm is MLA's latent norms (MlaActivations).
    if (args.Has("qk-l2-norm")) {
      return Bad("qk-l2-norm",
                 "cannot be given with --multi-latent-attention (Megatron "
                 "refuses it)");
    }
    // Megatron's own core attention (--transformer-impl local, or
    // --attention-backend local: FillTraining) cannot run MLA:
    // multi_latent_attention.py builds its core attention with k_channels
    // and v_channels, which dot_product_attention.py does not take (a
    // TypeError at model build, d98e8a6; so since MLA was added). The
    // estimator models it all the same (measured with a class that takes
    // them, bench/gpu/megatron_step.py); a launch cannot start.
    if (launch.job.training().attention_kernel() ==
        v1::ATTENTION_KERNEL_LOCAL) {
      const bool impl = args.Has("transformer-impl") &&
                        args.Text("transformer-impl") == "local";
      return Bad(impl ? "transformer-impl" : "attention-backend",
                 "local cannot run --multi-latent-attention: Megatron's own "
                 "DotProductAttention takes no k_channels / v_channels, "
                 "which MLA builds it with (a TypeError at model build); "
                 "use TransformerEngine's attention");
    }
    // MLATransformerConfig.__post_init__ raises "apply_rope_fusion for
    // MLA only works with YARN RoPE": --rope-type rope with the fusion on
    // (rope positions without --no-rope-fusion; arguments.py turns it off
    // for the other position types).
    if (rope_type == "rope" &&
        m.position_embedding() == v1::POSITION_EMBEDDING_ROPE &&
        !launch.job.training().rope_fusion_disabled()) {
      return Bad("rope-type",
                 "rope with --multi-latent-attention needs --no-rope-fusion "
                 "(Megatron raises: apply_rope_fusion for MLA only works "
                 "with YARN RoPE)");
    }
    m.set_num_query_groups(m.num_attention_heads());
  }
  MEMGATE_ASSIGN_OR_RETURN(mtp, args.Number("mtp-num-layers", 0));
  m.set_mtp_num_layers(mtp);
  m.set_mtp_repeated_layer(mtp > 0 && args.Has("mtp-use-repeated-layer"));
  // --mtp-hsm: Megatron's launcher turns it off below two MTP layers
  // (arguments.py, with a warning).
  if (args.Has("mtp-hsm")) {
    if (mtp >= 2) {
      m.set_mtp_hidden_state_mixing(true);
    } else {
      launch.notes.push_back(
          "--mtp-hsm: Megatron turns hidden-state mixing off with fewer "
          "than two MTP layers (arguments.py)");
    }
  }
  return absl::OkStatus();
}

}  // namespace

bool RunsUnfusedSwiglu(const Arguments& args) {
  return args.Has("swiglu") && args.Has("no-bias-swiglu-fusion") &&
         !args.Has("use-te-activation-func") &&
         !args.Has("use-transformer-engine-op-fuser");
}

namespace {

// Whether some MLP of the model is a dense one (mlp.py without the
// routing probabilities): a dense model's, a dense layer's in a layer
// pattern, or shared experts.
bool HasDenseMlp(const v1::ModelConfig& m) {
  const v1::MoeConfig& moe = m.moe();
  if (!m.has_moe() || moe.num_experts() == 0) return true;
  if (moe.shared_expert_ffn_hidden_size() > 0 || moe.layer_frequency() > 1) {
    return true;
  }
  return std::find(moe.layer_pattern().begin(), moe.layer_pattern().end(),
                   0u) != moe.layer_pattern().end();
}

// With biases on, --bias-gelu-fusion stays on (arguments.py turns it off
// only without biases) and becomes the bias-activation fusion of every
// non-SwiGLU MLP (argument_utils.py). A dense MLP fuses a bias into GeLU
// and SwiGLU only and raises "Only support fusion of gelu and swiglu" for
// quick-GeGLU (mlp.py); routed experts, which pass their probabilities,
// fuse quick-GeGLU too (experts.py, mlp.py weighted_bias_quick_geglu_impl),
// so a model of routed experts only (gpt-oss) trains.
// Routed experts in turn fuse SwiGLU and quick-GeGLU only: GeLU experts
// (Megatron's MLP without --swiglu) raise "Only support fusion of swiglu
// and quick_gelu" (experts.py TEGroupedMLP; mlp.py with the
// probabilities, SequentialMLP's experts).
absl::Status RefuseUnfusableActivation(const Arguments& args,
                                       const MegatronLaunch& launch) {
  const v1::ModelConfig& m = launch.job.model();
  if (!m.linear_bias() || args.Has("no-bias-gelu-fusion")) {
    return absl::OkStatus();
  }
  const bool experts = m.has_moe() && m.moe().num_experts() > 0;
  if (m.mlp_activation() == v1::MLP_ACTIVATION_QUICK_GEGLU &&
      HasDenseMlp(m)) {
    return Bad("quick-geglu",
               "with biases on (no --disable-bias-linear) and a dense MLP "
               "(dense layers or shared experts) needs --no-bias-gelu-fusion: "
               "Megatron's MLP raises 'Only support fusion of gelu and "
               "swiglu'");
  }
  if (m.mlp_activation() == v1::MLP_ACTIVATION_GELU && experts) {
    return Bad("num-experts",
               "GeLU experts (no --swiglu) with biases on (no "
               "--disable-bias-linear) need --no-bias-gelu-fusion: Megatron's "
               "experts raise 'Only support fusion of swiglu and quick_gelu'");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status FillExpertsFromLaunch(const Arguments& args,
                                   MegatronLaunch& launch) {
  if (absl::Status s = FillMoe(args, launch); !s.ok()) return s;
  if (absl::Status s = RefuseUnfusableActivation(args, launch); !s.ok()) {
    return s;
  }
  return FillMla(args, launch);
}

}  // namespace memgate
