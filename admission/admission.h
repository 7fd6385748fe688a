#ifndef MEMGATE_ADMISSION_ADMISSION_H_
#define MEMGATE_ADMISSION_ADMISSION_H_

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

// The verdict, reason and warnings for `decision.estimate()`, an estimate
// already made under policy.threshold.
void Decide(const AdmissionPolicy& policy, v1::Decision& decision);

// Estimate and decide in one step; a refusal also carries the best layouts
// that fit and the smallest GPU count at which this one does.
// INVALID_ARGUMENT for a bad job or policy.
absl::StatusOr<v1::Decision> AdmitJob(const v1::Job& job,
                                      const AdmissionPolicy& policy);

// The same, written into `decision` (cleared first), which may live on an
// arena.
absl::Status AdmitJobInto(const v1::Job& job, const AdmissionPolicy& policy,
                          v1::Decision& decision);

}  // namespace memgate

#endif  // MEMGATE_ADMISSION_ADMISSION_H_
