#ifndef MEMGATE_SERVICE_MEMORY_ESTIMATOR_SERVICE_H_
#define MEMGATE_SERVICE_MEMORY_ESTIMATOR_SERVICE_H_

// memgate.v1.MemoryEstimator on gRPC's callback API: a thin adapter over the
// estimator library. Estimate and Admit compute inline (microseconds) and
// finish at once. Plan, up to about 0.1 s of CPU, runs on a small bounded
// pool of lower-priority threads (plan_workers.h), stops when its caller
// cancels or its deadline passes, and is refused with RESOURCE_EXHAUSTED
// when the pool's queue is full: concurrent worst-case plans cannot starve
// Admit or the health service.

#include <atomic>
#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "estimator/units.h"
#include "proto/memgate.grpc.pb.h"
#include "service/arena_allocator.h"
#include "service/decision_log.h"
#include "service/plan_workers.h"

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
  // Where Admit decisions are audited; nullptr: not logged. A decision
  // the log cannot take is not given (UNAVAILABLE).
  DecisionLog* decision_log = nullptr;
  // Plans computed at once, and plans allowed to wait for a thread.
  int plan_threads = 1;
  int plan_queue = 4;
};

// Longest request_id accepted (it is echoed and logged).
inline constexpr size_t kMaxRequestIdBytes = 128;

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
  std::unique_ptr<PlanWorkers> plan_workers_;
  std::atomic<uint64_t> next_request_id_{1};
  ArenaMessageAllocator<v1::EstimateRequest, v1::Estimate> estimate_allocator_;
  ArenaMessageAllocator<v1::AdmitRequest, v1::Decision> admit_allocator_;
};

}  // namespace memgate

#endif  // MEMGATE_SERVICE_MEMORY_ESTIMATOR_SERVICE_H_
