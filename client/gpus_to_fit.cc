#include "client/gpus_to_fit.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "planner/planner.h"

namespace memgate::cli {

absl::StatusOr<std::optional<GreenAt>> FirstDoublingWithGreen(
    const v1::PlanRequest& request, const PlanFunction& plan) {
  v1::PlanRequest larger = request;
  // Only the first candidate is read: GREEN layouts rank before the rest.
  larger.set_top_k(1);
  for (uint64_t gpus = uint64_t{request.num_gpus()} * 2;
       request.num_gpus() > 0 && gpus <= kMaxPlanGpus; gpus *= 2) {
    larger.set_num_gpus(static_cast<uint32_t>(gpus));
    absl::StatusOr<v1::PlanResponse> response = plan(larger);
    if (!response.ok()) {
      return absl::Status(response.status().code(),
                          absl::StrCat(gpus, " GPUs: ",
                                       response.status().message()));
    }
    if (HasGreen(*response)) {
      return GreenAt{static_cast<uint32_t>(gpus), response->candidates(0)};
    }
  }
  return std::nullopt;
}

bool HasGreen(const v1::PlanResponse& plan) {
  return plan.candidates_size() > 0 &&
         plan.candidates(0).zone() == v1::ZONE_GREEN;
}

std::string GpusToFitNote(const v1::PlanRequest& request,
                          const PlanFunction& plan) {
  const std::string nothing =
      absl::StrCat("nothing is GREEN on ", request.num_gpus(), " GPUs");
  absl::StatusOr<std::optional<GreenAt>> found =
      FirstDoublingWithGreen(request, plan);
  if (!found.ok()) {
    return absl::StrCat(nothing, "; planning doublings of them stopped at ",
                        found.status().message());
  }
  if (!found->has_value()) {
    return absl::StrCat(nothing, ", nor on any doubling of them up to ",
                        kMaxPlanGpus, " at global batch ",
                        request.global_batch_size());
  }
  const v1::Candidate& c = (*found)->candidate;
  return absl::StrFormat(
      "%s; at global batch %u the first doubling where a layout is GREEN is "
      "%u GPUs: (%u, %u, %u, %u) at %.2f GiB (memgate plan --gpus=%u ranks "
      "them)",
      nothing, request.global_batch_size(), (*found)->gpus,
      c.tensor_parallel(), c.context_parallel(), c.pipeline_parallel(),
      c.micro_batch_size(), c.peak_gib(), (*found)->gpus);
}

}  // namespace memgate::cli
