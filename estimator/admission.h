#ifndef MEMGATE_ESTIMATOR_ADMISSION_H_
#define MEMGATE_ESTIMATOR_ADMISSION_H_

// The 80% rule as a policy: admit a job whose per-GPU peak is GREEN; refuse
// RED; YELLOW (above the threshold, within capacity) is refused unless the
// policy lets it through with a warning.

#include "absl/status/statusor.h"
#include "estimator/units.h"
#include "proto/memgate.pb.h"

namespace memgate {

struct AdmissionPolicy {
  double threshold = kDefaultThreshold;
  bool admit_yellow = false;
};

// The decision for an estimate already made under policy.threshold.
v1::Decision Decide(const v1::Estimate& estimate,
                    const AdmissionPolicy& policy);

// Estimate and decide in one step; INVALID_ARGUMENT for a bad job or policy.
absl::StatusOr<v1::Decision> AdmitJob(const v1::Job& job,
                                      const AdmissionPolicy& policy);

}  // namespace memgate

#endif  // MEMGATE_ESTIMATOR_ADMISSION_H_
