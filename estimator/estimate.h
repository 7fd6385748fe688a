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

// What a training process cannot allocate of a GPU's memory, whatever its
// tensors (bench/RESULTS.md session 38):
// - its CUDA context, kernels and NCCL state beside PyTorch's allocations:
//   2,595,028,992 to 2,609,709,056 B in each of 61 steps measured on an H100
//   and one on an H200 (one GPU, PyTorch 2.11, CUDA 13); the most is taken;
// - the driver's share: CUDA reports 85,017,493,504 B of an H100 80GB
//   HBM3's 80 GiB (1.03% held back) and 150,109,880,320 B of an H200's 141
//   GiB (0.85%); the larger share is taken for every GPU.
// 3.25 GiB of an 80 GiB GPU. The 80% rule's headroom holds it; a transient
// checked against the whole GPU does not (jobs whose stage and loss
// transient memgate put at 78.2 and 79.2 GiB ran out of memory, one at
// 76.5 GiB ran). Measured with one process on one GPU: a floor where NCCL
// has more communicators and peers.
inline constexpr double kProcessRuntimeBytes = 2609709056.0;
inline constexpr double kDriverShare = 881852416.0 / 85899345920.0;
double UnallocatableBytes(double capacity_bytes);

// The bytes of a GPU of `capacity_bytes` a training process can allocate:
// where a stage and its transient must fit.
double AllocatableBytes(double capacity_bytes);

// A job's zone from its stages' peaks: ZoneOf its largest admission figure,
// and RED where a stage's transient (the loss's gradient cast, memory_model
// .cc [CE], the output layer's unfused weight gradient, [OW], the
// embedding's dense weight gradient, [EG], the optimizer step's fp32
// gradient copies, Lion's update and Muon's Newton-Schulz copies, [OS]
// [MU], or an evaluation's forward, [EV]) does not fit beside its
// admission figure in what a process can allocate (AllocatableBytes),
// whatever the threshold, or where a GREEN figure does not fit there
// itself (a threshold near 1, a GPU under about 17 GiB): the step would
// OOM.
v1::Zone AdmissionZone(const StagePeak& peak, double capacity_bytes,
                       double threshold);

// The largest of a stage's transients (StageFigures::transient_bytes),
// and what it is, in words, for a reason or a report.
double TransientBytes(const v1::StageMemory& stage);
const char* TransientName(const v1::StageMemory& stage);

// Whether `e` is RED though its peak fits in the GPU: a stage's transient
// or the peak itself does not fit in what a process can allocate.
bool RedThoughItsPeakFits(const v1::Estimate& e);

// What a stage holds when a transient comes: its total, its expert load
// margin and Megatron's attention score buffer (held for the run, outside
// the total).
double HeldBesideTransients(const v1::StageMemory& stage);

// The stage of `e` whose held bytes (HeldBesideTransients) and transient do
// not fit together in what a process can allocate, above the job's largest
// admission figure (AdmissionZone's rule, the same function), or nullptr:
// what makes a zone RED whose peak alone fits. A stage whose transient
// stays below another stage's larger figure leaves that figure's zone.
const v1::StageMemory* StageWhoseTransientOverflows(const v1::Estimate& e);

}  // namespace memgate

#endif  // MEMGATE_ESTIMATOR_ESTIMATE_H_
