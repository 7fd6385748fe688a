#ifndef MEMGATE_SERVICE_STATUS_CONVERSION_H_
#define MEMGATE_SERVICE_STATUS_CONVERSION_H_

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "estimator/clipped_text.h"
#include "grpcpp/support/status.h"

namespace memgate {

// The most of a status message the service sends. gRPC carries it in the
// grpc-message trailer, percent-encoding bytes outside printable ASCII
// (three bytes each), and a client refuses metadata past its limit (8 KiB
// by default) with RESOURCE_EXHAUSTED in place of the status: a message
// quoting a long name from the request would reach the client as a
// transport error, which a scheduler's on-unavailable policy may admit.
// 2 KiB, encoded at worst 6 KiB, stays under it; memgate's own messages
// are well within it.
inline constexpr size_t kMaxStatusMessageBytes = 2048;

// absl and gRPC share the canonical code numbers. The message is bounded
// (kMaxStatusMessageBytes), whatever the request it quotes.
inline grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      Clipped(status.message(), kMaxStatusMessageBytes));
}

}  // namespace memgate

#endif  // MEMGATE_SERVICE_STATUS_CONVERSION_H_
