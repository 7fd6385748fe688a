#include "admission/admission.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "estimator/attention_backend.h"
#include "estimator/clipped_text.h"
#include "estimator/estimate.h"
#include "estimator/fixed_format.h"
#include "estimator/report.h"
#include "estimator/validation.h"
#include "planner/refusal_hints.h"

namespace memgate {
namespace {

constexpr int kSuggestions = 3;

// "peak 37.58 GiB (stage 0) vs limit 32.00 GiB (80% of 40.00 GiB a100-40gb)"
// Built without printf: this runs on every Admit.
void AppendPeakVersusLimit(std::string& out, const v1::Estimate& e) {
  const double capacity = ToGiB(e.capacity_bytes());
  out += "peak ";
  AppendFixed(out, e.peak_gib(), 2);
  out += " GiB";
  if (e.peak().expert_imbalance_bytes() > 0) {
    out += " + ";
    AppendFixed(out, ToGiB(e.peak().expert_imbalance_bytes()), 2);
    out += " GiB expert load margin";
  }
  absl::StrAppend(&out, " (stage ", e.peak().stage(), ") vs limit ");
  AppendFixed(out, e.threshold() * capacity, 2);
  out += " GiB (";
  AppendFixed(out, 100 * e.threshold(), 0);
  out += "% of ";
  AppendFixed(out, capacity, 2);
  out += " GiB";
  // A GPU given by its memory alone has no name; a name from a request is
  // quoted by its first bytes.
  const std::string& gpu = e.job().accelerator().name();
  if (!gpu.empty()) absl::StrAppend(&out, " ", Clipped(gpu, kQuotedNameBytes));
  out += ")";
}

}  // namespace

void Decide(const AdmissionPolicy& policy, v1::Decision& decision) {
  const v1::Estimate& estimate = decision.estimate();
  const v1::Zone zone = estimate.zone();
  const bool admit =
      zone == v1::ZONE_GREEN || (zone == v1::ZONE_YELLOW && policy.admit_yellow);
  decision.set_verdict(admit ? v1::VERDICT_ADMIT : v1::VERDICT_REFUSE);

  const char* why = "exceeds GPU memory: will OOM";
  const char* zone_name = "RED";
  if (zone == v1::ZONE_GREEN) {
    why = "fits with headroom";
    zone_name = "GREEN";
  } else if (zone == v1::ZONE_YELLOW) {
    why = admit ? "within capacity but above the limit; may OOM from "
                  "temporary buffers and fragmentation"
                : "above the limit: temporary buffers and fragmentation "
                  "may OOM";
    zone_name = "YELLOW";
  }
  // Built in the decision's own string: this runs on every Admit.
  std::string& reason = *decision.mutable_reason();
  absl::StrAppend(&reason, admit ? "ADMIT [" : "REFUSE [", zone_name, "] ");
  AppendPeakVersusLimit(reason, estimate);
  absl::StrAppend(&reason, ": ", why);
  if (RedThoughItsPeakFits(estimate)) {
    reason += " (";
    if (const v1::StageMemory* stage = StageWhoseTransientOverflows(estimate)) {
      absl::StrAppend(&reason, TransientOverflowText(*stage), ", ");
    }
    reason += "more than the ";
    AppendFixed(reason, ToGiB(AllocatableBytes(estimate.capacity_bytes())), 2);
    reason += " GiB a process can allocate)";
  }
  if (admit && zone == v1::ZONE_YELLOW) {
    decision.add_warnings(
        "admitted in the YELLOW zone by policy: the paper saw OOMs here");
  }
}

absl::StatusOr<v1::Decision> AdmitJob(const v1::Job& job,
                                      const AdmissionPolicy& policy) {
  v1::Decision decision;
  if (absl::Status s = AdmitJobInto(job, policy, decision); !s.ok()) return s;
  return decision;
}

absl::Status AdmitJobInto(const v1::Job& job, const AdmissionPolicy& policy,
                          v1::Decision& decision) {
  decision.Clear();
  v1::Estimate& estimate = *decision.mutable_estimate();
  if (absl::Status s = EstimateJobInto(job, policy.threshold, estimate);
      !s.ok()) {
    return s;
  }
  Decide(policy, decision);
  if (decision.verdict() == v1::VERDICT_REFUSE) {
    // A refusal a user can act on: what would fit instead.
    for (v1::Candidate& c : SuggestLayouts(estimate.job(), policy.threshold,
                                           kSuggestions)) {
      *decision.add_suggestions() = std::move(c);
    }
    decision.set_min_gpus_that_fit(
        SmallestGpuCountThatFits(estimate.job(), policy.threshold));
    const uint32_t least_layers =
        LeastRecomputeThatFits(estimate.job(), policy.threshold);
    decision.set_min_recompute_layers_that_fit(least_layers);
    for (v1::Recompute::Module m : ModulesThatFit(
             estimate.job(), policy.threshold, least_layers)) {
      decision.add_fits_with_recompute_modules(m);
    }
    if (estimate.job().training().dataloader_attention_mask()) {
      // One more estimate: the cheapest change there is, a flag.
      v1::Job probe = estimate.job();
      probe.mutable_training()->set_dataloader_attention_mask(false);
      absl::StatusOr<v1::Estimate> e = EstimateJob(probe, policy.threshold);
      decision.set_fits_without_dataloader_mask(
          e.ok() && e->zone() == v1::ZONE_GREEN);
    }
    if (!estimate.job().training().fused_swiglu() &&
        IsSwigluMlp(estimate.job().model())) {
      // One more estimate: by name the paper's unfused count, which no
      // Megatron launch runs.
      v1::Job probe = estimate.job();
      probe.mutable_training()->set_fused_swiglu(true);
      absl::StatusOr<v1::Estimate> e = EstimateJob(probe, policy.threshold);
      decision.set_fits_with_fused_swiglu(e.ok() &&
                                          e->zone() == v1::ZONE_GREEN);
    }
    const v1::TrainingConfig& t = estimate.job().training();
    if (estimate.job().model().attention_logit_softcapping() > 0 &&
        (t.attention_kernel() == v1::ATTENTION_KERNEL_UNFUSED ||
         t.attention_kernel() == v1::ATTENTION_KERNEL_LOCAL) &&
        !t.dataloader_attention_mask() && !(t.attention_dropout() > 0)) {
      // One more estimate: Megatron-Bridge's FlexAttention path, which it
      // takes exactly then (attention_backend.h).
      v1::Job probe = estimate.job();
      probe.mutable_training()->set_attention_kernel(
          v1::ATTENTION_KERNEL_FLASH);
      absl::StatusOr<v1::Estimate> e = EstimateJob(probe, policy.threshold);
      decision.set_fits_with_flex_attention(e.ok() &&
                                            e->zone() == v1::ZONE_GREEN);
    }
    if (estimate.job().model().attention_logit_softcapping() == 0 &&
        (t.attention_kernel() == v1::ATTENTION_KERNEL_UNFUSED ||
         t.attention_kernel() == v1::ATTENTION_KERNEL_LOCAL) &&
        TransformerEngineAttention(estimate.job().model(), t.precision(),
                                   estimate.job().accelerator().name()) ==
            TeAttention::kFlashOrFused) {
      // One more estimate: TransformerEngine's own choice, a fused kernel,
      // where the launch or its environment asked for an unfused one.
      v1::Job probe = estimate.job();
      v1::TrainingConfig& pt = *probe.mutable_training();
      pt.set_attention_kernel(v1::ATTENTION_KERNEL_FLASH);
      pt.set_flash_attention_disabled(false);
      pt.set_te_deterministic_attention(false);
      absl::StatusOr<v1::Estimate> e = EstimateJob(probe, policy.threshold);
      decision.set_fits_with_fused_attention(e.ok() &&
                                             e->zone() == v1::ZONE_GREEN);
    }
  }
  return absl::OkStatus();
}

}  // namespace memgate
