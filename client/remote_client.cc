#include "client/remote_client.h"

#include <memory>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "proto/memgate.grpc.pb.h"
#include "proto/request_limits.h"
#include "readers/file_util.h"

namespace memgate::cli {
namespace {

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> Credentials(
    const RemoteOptions& options) {
  if (options.tls_ca_file.empty()) {
    if (!options.tls_cert_file.empty() || !options.tls_key_file.empty()) {
      return absl::InvalidArgumentError(
          "--tls-cert / --tls-key: need --tls-ca (the server's CA)");
    }
    return grpc::InsecureChannelCredentials();
  }
  grpc::SslCredentialsOptions ssl;
  absl::StatusOr<std::string> ca = ReadSmallFile(options.tls_ca_file);
  if (!ca.ok()) return absl::InvalidArgumentError(absl::StrCat(
                    "--tls-ca: ", ca.status().message()));
  ssl.pem_root_certs = *ca;
  if (!options.tls_cert_file.empty() || !options.tls_key_file.empty()) {
    absl::StatusOr<std::string> cert = ReadSmallFile(options.tls_cert_file);
    absl::StatusOr<std::string> key = ReadSmallFile(options.tls_key_file);
    if (!cert.ok() || !key.ok()) {
      return absl::InvalidArgumentError(
          "--tls-cert / --tls-key: give both, as readable PEM files");
    }
    ssl.pem_cert_chain = *cert;
    ssl.pem_private_key = *key;
  }
  return grpc::SslCredentials(ssl);
}

absl::Status FromGrpc(const grpc::Status& status, const std::string& server) {
  const std::string message =
      status.error_code() == grpc::StatusCode::UNAVAILABLE ||
              status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED
          ? absl::StrCat("memgate service at ", server, ": ",
                         status.error_message())
          : status.error_message();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      message);
}

// One unary call with the deadline and credentials of `options`.
template <typename Request, typename Response, typename Method>
absl::StatusOr<Response> Call(const Request& request,
                              const RemoteOptions& options, Method method) {
  if (options.server.empty()) {
    return absl::InvalidArgumentError("--server: must be HOST:PORT");
  }
  // A request the server would refuse for its size comes back as
  // RESOURCE_EXHAUSTED, a failure to answer: refused here, as the invalid
  // job it is (request_limits.h).
  if (const size_t bytes = request.ByteSizeLong(); bytes > kMaxRequestBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "request: ", bytes, " bytes, more than a memgate service reads (",
        kMaxRequestBytes, "): its lists (parallel.layers_per_stage, "
        "model.moe.layer_pattern) or names are longer than any job memgate "
        "judges"));
  }
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      Credentials(options);
  if (!credentials.ok()) return credentials.status();
  auto stub = v1::MemoryEstimator::NewStub(
      grpc::CreateChannel(options.server, *credentials));
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + options.timeout));
  Response response;
  const grpc::Status status =
      ((*stub).*method)(&context, request, &response);
  if (!status.ok()) return FromGrpc(status, options.server);
  return response;
}

}  // namespace

absl::StatusOr<v1::Decision> AdmitRemotely(const v1::AdmitRequest& request,
                                           const RemoteOptions& options) {
  return Call<v1::AdmitRequest, v1::Decision>(
      request, options, &v1::MemoryEstimator::Stub::Admit);
}

absl::StatusOr<v1::Estimate> EstimateRemotely(
    const v1::EstimateRequest& request, const RemoteOptions& options) {
  return Call<v1::EstimateRequest, v1::Estimate>(
      request, options, &v1::MemoryEstimator::Stub::Estimate);
}

absl::StatusOr<v1::PlanResponse> PlanRemotely(const v1::PlanRequest& request,
                                              const RemoteOptions& options) {
  return Call<v1::PlanRequest, v1::PlanResponse>(
      request, options, &v1::MemoryEstimator::Stub::Plan);
}

bool ServiceDidNotAnswer(const absl::Status& status) {
  return status.code() == absl::StatusCode::kUnavailable ||
         status.code() == absl::StatusCode::kDeadlineExceeded;
}

}  // namespace memgate::cli
