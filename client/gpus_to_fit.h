#ifndef MEMGATE_CLIENT_GPUS_TO_FIT_H_
#define MEMGATE_CLIENT_GPUS_TO_FIT_H_

// The question a plan where nothing fits leaves: how many GPUs would do?
// `memgate plan` answers it in a note by planning doublings of the count.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "proto/memgate.pb.h"

namespace memgate::cli {

using PlanFunction =
    std::function<absl::StatusOr<v1::PlanResponse>(const v1::PlanRequest&)>;

struct GreenAt {
  uint32_t gpus = 0;
  v1::Candidate candidate;  // the first-ranked layout there, GREEN
};

// For `request` (nothing GREEN on its num_gpus): the first of 2x, 4x, ...
// its GPU count, up to the planner's kMaxPlanGpus, at which `plan` ranks a
// GREEN layout first, with the global batch and every other setting kept;
// nullopt when none does. At most log2(kMaxPlanGpus) = 20 plans, each
// bounded by the planner's own limits (through a server, `memgate plan`
// keeps the whole search to one --timeout); the first that fails (a plan
// past its bound, an unreachable server, the time up) ends the search with
// its status.
absl::StatusOr<std::optional<GreenAt>> FirstDoublingWithGreen(
    const v1::PlanRequest& request, const PlanFunction& plan);

// Whether `plan` ranks a GREEN layout first (GREEN ones rank first).
bool HasGreen(const v1::PlanResponse& plan);

// The note `memgate plan` prints where nothing is GREEN on `request`'s
// GPUs: the count FirstDoublingWithGreen finds and its first layout, that
// none up to kMaxPlanGpus is, or where the search stopped and why.
std::string GpusToFitNote(const v1::PlanRequest& request,
                          const PlanFunction& plan);

}  // namespace memgate::cli

#endif  // MEMGATE_CLIENT_GPUS_TO_FIT_H_
