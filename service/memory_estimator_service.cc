#include "service/memory_estimator_service.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "estimator/admission.h"
#include "estimator/estimate.h"
#include "estimator/planner.h"
#include "estimator/validation.h"
#include "service/status_conversion.h"

namespace memgate {
namespace {

grpc::ServerUnaryReactor* FinishWith(grpc::CallbackServerContext* context,
                                     const absl::Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

}  // namespace

MemoryEstimatorService::MemoryEstimatorService(const ServiceOptions& options)
    : options_(options) {
  // Estimates and decisions are built in place on a per-call arena.
  SetMessageAllocatorFor_Estimate(&estimate_allocator_);
  SetMessageAllocatorFor_Admit(&admit_allocator_);
}

absl::StatusOr<std::unique_ptr<MemoryEstimatorService>>
MemoryEstimatorService::Create(const ServiceOptions& options) {
  for (double t : {options.default_threshold, options.min_threshold,
                   options.max_threshold}) {
    if (absl::Status s = ValidateThreshold(t); !s.ok()) return s;
  }
  if (options.default_threshold < options.min_threshold ||
      options.default_threshold > options.max_threshold) {
    return absl::InvalidArgumentError(absl::StrCat(
        "threshold: the default ", options.default_threshold,
        " must lie within [", options.min_threshold, ", ",
        options.max_threshold, "]"));
  }
  return std::unique_ptr<MemoryEstimatorService>(
      new MemoryEstimatorService(options));
}

absl::StatusOr<double> MemoryEstimatorService::ThresholdFor(
    double requested) const {
  if (requested == 0) return options_.default_threshold;
  if (!(requested >= options_.min_threshold &&
        requested <= options_.max_threshold)) {
    return absl::InvalidArgumentError(
        absl::StrCat("threshold: must lie within [", options_.min_threshold,
                     ", ", options_.max_threshold,
                     "] on this server, or be 0 for its default ",
                     options_.default_threshold, " (got ", requested, ")"));
  }
  return requested;
}

grpc::ServerUnaryReactor* MemoryEstimatorService::Estimate(
    grpc::CallbackServerContext* context, const v1::EstimateRequest* request,
    v1::Estimate* response) {
  absl::StatusOr<double> threshold = ThresholdFor(request->threshold());
  if (!threshold.ok()) return FinishWith(context, threshold.status());
  return FinishWith(context,
                    EstimateJobInto(request->job(), *threshold, *response));
}

grpc::ServerUnaryReactor* MemoryEstimatorService::Admit(
    grpc::CallbackServerContext* context, const v1::AdmitRequest* request,
    v1::Decision* response) {
  absl::StatusOr<double> threshold = ThresholdFor(request->threshold());
  if (!threshold.ok()) return FinishWith(context, threshold.status());
  AdmissionPolicy policy;
  policy.threshold = *threshold;
  policy.admit_yellow = options_.admit_yellow;
  if (absl::Status s = AdmitJobInto(request->job(), policy, *response);
      !s.ok()) {
    return FinishWith(context, s);
  }
  response->set_request_id(
      request->request_id().empty()
          ? absl::StrCat("memgate-", absl::ToUnixMicros(absl::Now()), "-",
                         next_request_id_.fetch_add(1))
          : request->request_id());
  if (options_.decision_log != nullptr) {
    options_.decision_log->Record(*response, context->peer());
  }
  if (request->detail() != v1::DETAIL_FULL) {
    // Admission paths act on the verdict and the peak; the per-stage list
    // and the job echo are there for those who ask (and cost throughput).
    response->mutable_estimate()->clear_job();
    response->mutable_estimate()->clear_stages();
  }
  return FinishWith(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* MemoryEstimatorService::Plan(
    grpc::CallbackServerContext* context, const v1::PlanRequest* request,
    v1::PlanResponse* response) {
  absl::StatusOr<double> threshold = ThresholdFor(request->threshold());
  if (!threshold.ok()) return FinishWith(context, threshold.status());
  v1::PlanRequest bounded = *request;
  bounded.set_threshold(*threshold);
  absl::StatusOr<v1::PlanResponse> plan = PlanLayouts(bounded);
  if (!plan.ok()) return FinishWith(context, plan.status());
  *response = *std::move(plan);
  return FinishWith(context, absl::OkStatus());
}

}  // namespace memgate
