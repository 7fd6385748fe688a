#ifndef MEMGATE_ESTIMATOR_ESTIMATE_H_
#define MEMGATE_ESTIMATOR_ESTIMATE_H_

// memgate's core question: how much memory does each GPU of this job need,
// and how close is that to the GPU's capacity?

#include "absl/status/statusor.h"
#include "estimator/memory_model.h"
#include "estimator/units.h"
#include "proto/memgate.pb.h"

namespace memgate {

// Resolves (catalogs, defaults), validates and estimates `job`: every
// pipeline stage's weights, gradients, optimizer states and activations per
// GPU, the peak stage and its zone against `threshold` (GREEN limit as a
// fraction of capacity). INVALID_ARGUMENT names the field and the rule.
absl::StatusOr<v1::Estimate> EstimateJob(
    const v1::Job& job, double threshold = kDefaultThreshold);

// The same, written into `estimate` (cleared first), which may live on an
// arena: the service builds responses in place this way.
absl::Status EstimateJobInto(const v1::Job& job, double threshold,
                             v1::Estimate& estimate);

// GREEN at or below threshold * capacity, YELLOW up to capacity, RED above.
v1::Zone ZoneOf(double bytes, double capacity_bytes, double threshold);

// A job's zone from its stages' peaks: ZoneOf its largest admission figure,
// and RED where a stage's transient (the loss's gradient cast, memory_model
// .cc [CE], or the output layer's unfused weight gradient, [OW]) does not
// fit in the GPU beside its admission figure, whatever the threshold: the
// step would OOM.
v1::Zone AdmissionZone(const StagePeak& peak, double capacity_bytes,
                       double threshold);

// The larger of a stage's two transients (StageFigures::transient_bytes),
// and what it is, in words, for a reason or a report.
double TransientBytes(const v1::StageMemory& stage);
const char* TransientName(const v1::StageMemory& stage);

// The stage of `e` whose total, expert load margin and transient do not
// fit in the GPU together, or nullptr: what makes a zone RED whose peak
// alone fits.
const v1::StageMemory* StageWhoseTransientOverflows(const v1::Estimate& e);

}  // namespace memgate

#endif  // MEMGATE_ESTIMATOR_ESTIMATE_H_
