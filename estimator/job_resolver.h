#ifndef MEMGATE_ESTIMATOR_JOB_RESOLVER_H_
#define MEMGATE_ESTIMATOR_JOB_RESOLVER_H_

#include "absl/status/statusor.h"
#include "proto/memgate.pb.h"

namespace memgate {

// Fills what a job leaves to a catalog or to a documented default, so that
// the estimate can echo exactly what it assumed:
//   - model / accelerator fields left at 0 come from the catalog entry their
//     `name` names (fields that are set win);
//   - sequence_parallel and distributed_optimizer default to on, precision to
//     PRECISION_BF16_FP32_GRADS (the paper's settings);
//   - training.megatron_core_version sets what that release decides and the
//     job leaves unset (model.moe.routing_probs_applied: megatron_release.h);
//     a job that says otherwise is INVALID_ARGUMENT naming the field.
// Fails (NOT_FOUND / INVALID_ARGUMENT) when a name is unknown and the
// dimensions it would have supplied are missing. Does not validate: see
// ValidateJob.
absl::StatusOr<v1::Job> ResolveJob(const v1::Job& job);

// The same, in place (for a job that lives on an arena or in a response).
absl::Status ResolveJobInPlace(v1::Job& job);

// The model alone, filled as ResolveJob fills a job's (the catalog's
// dimensions and architecture where a name leaves them unset): for callers
// that need a named model's layers or softmax before the job is whole.
absl::StatusOr<v1::ModelConfig> ResolveModel(const v1::ModelConfig& model);

}  // namespace memgate

#endif  // MEMGATE_ESTIMATOR_JOB_RESOLVER_H_
