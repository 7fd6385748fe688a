#ifndef MEMGATE_SERVICE_MEMORY_ESTIMATOR_SERVICE_H_
#define MEMGATE_SERVICE_MEMORY_ESTIMATOR_SERVICE_H_

// memgate.v1.MemoryEstimator on gRPC's callback API: a thin adapter over the
// estimator library. Every handler computes inline (microseconds; a plan of
// thousands of layouts, about a millisecond) and finishes at once, so no call
// holds a thread or waits on another.

#include <atomic>
#include <cstdint>

#include "absl/status/statusor.h"
#include "estimator/units.h"
#include "proto/memgate.grpc.pb.h"
#include "service/arena_allocator.h"
#include "service/decision_log.h"

namespace memgate {

struct ServiceOptions {
  // GREEN limit used when a request leaves its threshold at 0 ...
  double default_threshold = kDefaultThreshold;
  // ... and the range a request may ask for instead.
  double min_threshold = 0.5;
  double max_threshold = 0.9;
  // Policy for the YELLOW zone: refuse (the paper saw OOMs there) or admit
  // with a warning.
  bool admit_yellow = false;
  // Where Admit decisions are audited; nullptr: not logged.
  DecisionLog* decision_log = nullptr;
};

class MemoryEstimatorService final
    : public v1::MemoryEstimator::CallbackService {
 public:
  // INVALID_ARGUMENT when the thresholds are not fractions in (0, 1] or the
  // default lies outside [min, max].
  static absl::StatusOr<std::unique_ptr<MemoryEstimatorService>> Create(
      const ServiceOptions& options);

  grpc::ServerUnaryReactor* Estimate(grpc::CallbackServerContext* context,
                                     const v1::EstimateRequest* request,
                                     v1::Estimate* response) override;
  grpc::ServerUnaryReactor* Admit(grpc::CallbackServerContext* context,
                                  const v1::AdmitRequest* request,
                                  v1::Decision* response) override;
  grpc::ServerUnaryReactor* Plan(grpc::CallbackServerContext* context,
                                 const v1::PlanRequest* request,
                                 v1::PlanResponse* response) override;

 private:
  explicit MemoryEstimatorService(const ServiceOptions& options);

  // The request's threshold, or the default for 0; INVALID_ARGUMENT outside
  // the server's bounds.
  absl::StatusOr<double> ThresholdFor(double requested) const;

  const ServiceOptions options_;
  std::atomic<uint64_t> next_request_id_{1};
  ArenaMessageAllocator<v1::EstimateRequest, v1::Estimate> estimate_allocator_;
  ArenaMessageAllocator<v1::AdmitRequest, v1::Decision> admit_allocator_;
};

}  // namespace memgate

#endif  // MEMGATE_SERVICE_MEMORY_ESTIMATOR_SERVICE_H_
