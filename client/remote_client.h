#ifndef MEMGATE_CLIENT_REMOTE_CLIENT_H_
#define MEMGATE_CLIENT_REMOTE_CLIENT_H_

// Asking a memgate_server instead of estimating in-process.

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "proto/memgate.pb.h"

namespace memgate::cli {

struct RemoteOptions {
  std::string server;  // HOST:PORT
  absl::Duration timeout = absl::Seconds(2);
  // PEM files: a CA turns on TLS; cert + key add a client certificate.
  std::string tls_ca_file, tls_cert_file, tls_key_file;
};

// The server's answer, or its error with gRPC's code carried over:
// UNAVAILABLE / DEADLINE_EXCEEDED mean the service could not answer;
// INVALID_ARGUMENT means the job is bad.
absl::StatusOr<v1::Decision> AdmitRemotely(const v1::AdmitRequest& request,
                                           const RemoteOptions& options);
absl::StatusOr<v1::Estimate> EstimateRemotely(
    const v1::EstimateRequest& request, const RemoteOptions& options);
absl::StatusOr<v1::PlanResponse> PlanRemotely(const v1::PlanRequest& request,
                                              const RemoteOptions& options);

// True when `status` says the service was not reached or did not answer in
// time, as opposed to an answer about the job.
bool ServiceDidNotAnswer(const absl::Status& status);

}  // namespace memgate::cli

#endif  // MEMGATE_CLIENT_REMOTE_CLIENT_H_
