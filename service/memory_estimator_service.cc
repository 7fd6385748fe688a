#include "service/memory_estimator_service.h"

#include <cctype>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "admission/admission.h"
#include "estimator/estimate.h"
#include "estimator/validation.h"
#include "planner/planner.h"
#include "service/status_conversion.h"
#include "service/unknown_fields.h"

namespace memgate {
namespace {

// "" or a request id that is safe to echo and log.
absl::Status ValidateRequestId(const std::string& id) {
  bool plain = id.size() <= kMaxRequestIdBytes;
  for (unsigned char c : id) {
    plain &= std::isalnum(c) || std::strchr("._:/@+=-", c) != nullptr;
  }
  if (plain) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "request_id: at most ", kMaxRequestIdBytes,
      " characters of A-Z a-z 0-9 . _ : / @ + = - (got ", id.size(),
      " bytes)"));
}

// Who a verified client certificate says the caller is: its peer identity
// (subject alternative names, else common name), "" without mutual TLS.
std::string ClientIdentity(const grpc::CallbackServerContext& context) {
  std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  if (auth == nullptr || !auth->IsPeerAuthenticated()) return "";
  std::string identity;
  for (const grpc::string_ref& name : auth->GetPeerIdentity()) {
    if (!identity.empty()) identity += ",";
    identity.append(name.data(), name.size());
    if (identity.size() > 256) {
      identity.resize(256);  // a certificate with hundreds of names
      break;
    }
  }
  return identity;
}

grpc::ServerUnaryReactor* FinishWith(grpc::CallbackServerContext* context,
                                     const absl::Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

}  // namespace

MemoryEstimatorService::MemoryEstimatorService(const ServiceOptions& options)
    : options_(options),
      plan_workers_(std::make_unique<PlanWorkers>(
          options.plan_threads, static_cast<size_t>(options.plan_queue))) {
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
  if (options.plan_threads < 1 || options.plan_threads > 64 ||
      options.plan_queue < 0 || options.plan_queue > 1024) {
    return absl::InvalidArgumentError(
        "--plan-threads / --plan-queue: 1 to 64 threads, 0 to 1024 queued");
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
  if (absl::Status s = RefuseUnknownFields(*request, ""); !s.ok()) {
    return FinishWith(context, s);
  }
  absl::StatusOr<double> threshold = ThresholdFor(request->threshold());
  if (!threshold.ok()) return FinishWith(context, threshold.status());
  return FinishWith(context,
                    EstimateJobInto(request->job(), *threshold, *response));
}

grpc::ServerUnaryReactor* MemoryEstimatorService::Admit(
    grpc::CallbackServerContext* context, const v1::AdmitRequest* request,
    v1::Decision* response) {
  if (absl::Status s = RefuseUnknownFields(*request, ""); !s.ok()) {
    return FinishWith(context, s);
  }
  absl::StatusOr<double> threshold = ThresholdFor(request->threshold());
  if (!threshold.ok()) return FinishWith(context, threshold.status());
  if (absl::Status s = ValidateRequestId(request->request_id()); !s.ok()) {
    return FinishWith(context, s);
  }
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
    // No decision is given that is not logged (decision_log.h).
    if (absl::Status s = options_.decision_log->Record(
            *response, context->peer(), ClientIdentity(*context));
        !s.ok()) {
      return FinishWith(context, s);
    }
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
  if (absl::Status s = RefuseUnknownFields(*request, ""); !s.ok()) {
    return FinishWith(context, s);
  }
  absl::StatusOr<double> threshold = ThresholdFor(request->threshold());
  if (!threshold.ok()) return FinishWith(context, threshold.status());
  // The bounds are checked here, before the call waits for a thread: an
  // oversized search is refused at once.
  v1::PlanRequest bounded = *request;
  bounded.set_threshold(*threshold);
  absl::StatusOr<uint64_t> size = CountPlanLayouts(bounded);
  if (!size.ok()) return FinishWith(context, size.status());
  if (*size > kMaxPlanLayouts) {
    return FinishWith(context, PlanLayouts(bounded).status());
  }
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  const bool queued = plan_workers_->TrySubmit(
      [context, reactor, response, bounded = std::move(bounded)] {
        const absl::Time deadline =
            absl::FromChrono(context->deadline());
        auto interrupt = [context, deadline] {
          if (context->IsCancelled()) {
            return absl::CancelledError("plan: cancelled by the client");
          }
          if (absl::Now() > deadline) {
            return absl::DeadlineExceededError("plan: deadline passed");
          }
          return absl::OkStatus();
        };
        absl::Status status = interrupt();
        if (status.ok()) {
          absl::StatusOr<v1::PlanResponse> plan =
              PlanLayouts(bounded, interrupt);
          status = plan.status();
          if (plan.ok()) *response = *std::move(plan);
        }
        reactor->Finish(ToGrpcStatus(status));
      });
  if (!queued) {
    reactor->Finish(ToGrpcStatus(absl::ResourceExhaustedError(
        "plan: the server is busy with other plans; retry later")));
  }
  return reactor;
}

}  // namespace memgate
