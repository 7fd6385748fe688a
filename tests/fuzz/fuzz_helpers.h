#ifndef MEMGATE_TESTS_FUZZ_FUZZ_HELPERS_H_
#define MEMGATE_TESTS_FUZZ_FUZZ_HELPERS_H_

// What every fuzz target checks once an input parses: the estimator, the
// admission decision and the plan must answer (value or error), never crash,
// and never produce a non-finite number.

#include <cmath>
#include <cstdlib>

#include "admission/admission.h"
#include "estimator/estimate.h"
#include "planner/planner.h"

namespace memgate::fuzz {

inline void Require(bool condition) {
  if (!condition) std::abort();  // libFuzzer reports it as a crash
}

inline void ExerciseJob(const v1::Job& job) {
  absl::StatusOr<v1::Estimate> estimate = EstimateJob(job);
  if (estimate.ok()) {
    Require(std::isfinite(estimate->peak().total_bytes()));
    Require(estimate->peak().total_bytes() >= 0);
    Require(estimate->stages_size() ==
            static_cast<int>(estimate->job().parallel().pipeline_parallel()));
  } else {
    Require(estimate.status().code() == absl::StatusCode::kInvalidArgument);
  }
  absl::StatusOr<v1::Decision> decision = AdmitJob(job, AdmissionPolicy());
  Require(decision.ok() == estimate.ok());
  if (decision.ok()) {
    Require(!decision->reason().empty());
    for (const v1::Candidate& c : decision->suggestions()) {
      Require(c.zone() == v1::ZONE_GREEN);
    }
  }
}

}  // namespace memgate::fuzz

#endif  // MEMGATE_TESTS_FUZZ_FUZZ_HELPERS_H_
