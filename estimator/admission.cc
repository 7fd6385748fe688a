#include "estimator/admission.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "estimator/estimate.h"
#include "estimator/planner.h"
#include "estimator/report.h"

namespace memgate {
namespace {

constexpr int kSuggestions = 3;

// "peak 37.58 GiB (stage 0) vs limit 32.00 GiB (80% of 40.00 GiB a100-40gb)"
std::string PeakVersusLimit(const v1::Estimate& e) {
  const double capacity = ToGiB(e.capacity_bytes());
  return absl::StrFormat(
      "peak %.2f GiB (stage %u) vs limit %.2f GiB (%.0f%% of %.2f GiB %s)",
      e.peak_gib(), e.peak().stage(), e.threshold() * capacity,
      100 * e.threshold(), capacity, e.job().accelerator().name());
}

}  // namespace

v1::Decision Decide(const v1::Estimate& estimate,
                    const AdmissionPolicy& policy) {
  v1::Decision decision;
  const v1::Zone zone = estimate.zone();
  const bool admit =
      zone == v1::ZONE_GREEN || (zone == v1::ZONE_YELLOW && policy.admit_yellow);
  decision.set_verdict(admit ? v1::VERDICT_ADMIT : v1::VERDICT_REFUSE);

  std::string why;
  switch (zone) {
    case v1::ZONE_GREEN:
      why = "fits with headroom";
      break;
    case v1::ZONE_YELLOW:
      why = admit ? "within capacity but above the limit; may OOM from "
                    "temporary buffers and fragmentation"
                  : "above the limit: temporary buffers and fragmentation "
                    "may OOM";
      break;
    default:
      why = "exceeds GPU memory: will OOM";
  }
  decision.set_reason(absl::StrCat(admit ? "ADMIT" : "REFUSE", " [",
                                    ZoneName(zone), "] ",
                                    PeakVersusLimit(estimate), ": ", why));
  if (admit && zone == v1::ZONE_YELLOW) {
    decision.add_warnings(
        "admitted in the YELLOW zone by policy: the paper saw OOMs here");
  }
  *decision.mutable_estimate() = estimate;
  return decision;
}

absl::StatusOr<v1::Decision> AdmitJob(const v1::Job& job,
                                      const AdmissionPolicy& policy) {
  absl::StatusOr<v1::Estimate> estimate = EstimateJob(job, policy.threshold);
  if (!estimate.ok()) return estimate.status();
  v1::Decision decision = Decide(*estimate, policy);
  if (decision.verdict() == v1::VERDICT_REFUSE) {
    // A refusal a user can act on: what would fit instead.
    for (v1::Candidate& c : SuggestLayouts(estimate->job(), policy.threshold,
                                           kSuggestions)) {
      *decision.add_suggestions() = std::move(c);
    }
    decision.set_min_gpus_that_fit(
        SmallestGpuCountThatFits(estimate->job(), policy.threshold));
  }
  return decision;
}

}  // namespace memgate
