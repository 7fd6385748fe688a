#ifndef MEMGATE_SERVICE_STATUS_CONVERSION_H_
#define MEMGATE_SERVICE_STATUS_CONVERSION_H_

#include <string>

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace memgate {

// absl and gRPC share the canonical code numbers.
inline grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

}  // namespace memgate

#endif  // MEMGATE_SERVICE_STATUS_CONVERSION_H_
