// Fuzzes the planner on arbitrary plan requests: the input is a serialized
// memgate.v1.PlanRequest, so its own fields (the training template, the
// launch's split forms, FSDP, optimizer instances, CP communication,
// thresholds, top_k) take any value the wire format allows, not only
// those a Job carries (estimator_fuzzer plans a request built from a Job).
//
// Beyond "answers, never crashes", it checks what `memgate plan` promises
// (planner.h): the planner's work is bounded before it starts (an error is
// INVALID_ARGUMENT or RESOURCE_EXHAUSTED, and CountPlanLayouts refuses the
// same requests), and every candidate checked (up to 32, spread over the
// list) is a valid job whose estimate is the candidate's peak and zone, so
// that `memgate check` accepts it as printed.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "estimator/estimate.h"
#include "planner/planner.h"
#include "tests/fuzz/fuzz_helpers.h"

namespace {

using memgate::fuzz::Require;

bool PlannerError(const absl::Status& status) {
  return status.code() == absl::StatusCode::kInvalidArgument ||
         status.code() == absl::StatusCode::kResourceExhausted;
}

// The candidate's peak and zone are its job's estimate's (plan_fields_test
// checks the same, field by field, on chosen requests).
void RequireCandidateIsItsJob(const memgate::v1::PlanRequest& request,
                              const memgate::v1::Candidate& candidate) {
  Require(std::isfinite(candidate.peak_bytes()) && candidate.peak_bytes() >= 0);
  Require(std::isfinite(candidate.relative_speed()));
  const double threshold = request.threshold() == 0 ? memgate::kDefaultThreshold
                                                    : request.threshold();
  absl::StatusOr<memgate::v1::Estimate> estimate = memgate::EstimateJob(
      memgate::JobForCandidate(request, candidate), threshold);
  Require(estimate.ok());
  const double peak = estimate->peak().total_bytes() +
                      estimate->peak().expert_imbalance_bytes();
  Require(std::fabs(peak - candidate.peak_bytes()) <=
          1e-9 * std::max(1.0, peak));
  Require(estimate->zone() == candidate.zone());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  memgate::v1::PlanRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return 0;
  const absl::StatusOr<uint64_t> count = memgate::CountPlanLayouts(request);
  absl::StatusOr<memgate::v1::PlanResponse> response =
      memgate::PlanLayouts(request);
  // What the count refuses or finds over the bound, the plan refuses
  // before any work.
  if (!count.ok()) {
    Require(PlannerError(count.status()));
    Require(!response.ok());
  } else if (*count > memgate::kMaxPlanLayouts) {
    Require(!response.ok() &&
            response.status().code() == absl::StatusCode::kResourceExhausted);
  }
  if (!response.ok()) {
    Require(PlannerError(response.status()));
    return 0;
  }
  Require(count.ok() && response->considered() <= *count);
  const uint32_t wanted =
      request.top_k() == 0 ? memgate::kMaxPlanCandidates : request.top_k();
  Require(static_cast<uint32_t>(response->candidates_size()) <= wanted);
  // At most kChecked candidates, spread over the list: each check is a
  // whole estimate (O(layers) for a model's MoE pattern), and a thousand
  // of a 50,000-layer model outlast the fuzzer's timeout while the plan
  // itself took 0.1 s.
  constexpr int kChecked = 32;
  const int n = response->candidates_size();
  const int step = n <= kChecked ? 1 : (n + kChecked - 1) / kChecked;
  for (int i = 0; i < n; i += step) {
    RequireCandidateIsItsJob(request, response->candidates(i));
  }
  return 0;
}
