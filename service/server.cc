#include "service/server.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "estimator/file_util.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"

namespace memgate {
namespace {

constexpr char kServiceName[] = "memgate.v1.MemoryEstimator";

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> Credentials(
    const ServerConfig& config) {
  const bool tls = !config.tls_cert_file.empty() || !config.tls_key_file.empty();
  if (!tls) {
    if (!config.tls_client_ca_file.empty()) {
      return absl::InvalidArgumentError(
          "--tls-client-ca: needs --tls-cert and --tls-key");
    }
    return grpc::InsecureServerCredentials();
  }
  if (config.tls_cert_file.empty() || config.tls_key_file.empty()) {
    return absl::InvalidArgumentError(
        "--tls-cert / --tls-key: give both for TLS");
  }
  absl::StatusOr<std::string> cert = ReadSmallFile(config.tls_cert_file);
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = ReadSmallFile(config.tls_key_file);
  if (!key.ok()) return key.status();
  grpc::SslServerCredentialsOptions options;
  options.pem_key_cert_pairs.push_back({*key, *cert});
  if (!config.tls_client_ca_file.empty()) {
    absl::StatusOr<std::string> ca = ReadSmallFile(config.tls_client_ca_file);
    if (!ca.ok()) return ca.status();
    options.pem_root_certs = *ca;
    options.client_certificate_request =
        GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(options);
}

}  // namespace

absl::StatusOr<std::unique_ptr<MemgateServer>> MemgateServer::Start(
    const ServerConfig& config) {
  absl::StatusOr<std::unique_ptr<MemoryEstimatorService>> service =
      MemoryEstimatorService::Create(config.service);
  if (!service.ok()) return service.status();
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
      Credentials(config);
  if (!credentials.ok()) return credentials.status();

  // Both are process-wide switches read when a server is built.
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();

  std::unique_ptr<MemgateServer> server(new MemgateServer());
  server->service_ = *std::move(service);
  grpc::ServerBuilder builder;
  builder.AddListeningPort(config.listen, *credentials, &server->port_);
  builder.RegisterService(server->service_.get());
  builder.SetMaxReceiveMessageSize(config.max_message_bytes);
  builder.SetMaxSendMessageSize(4 * 1024 * 1024);  // a full plan is larger
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || server->port_ == 0) {
    return absl::UnavailableError(
        absl::StrCat("--listen: cannot listen on ", config.listen,
                     " (in use, or not a HOST:PORT this machine has)"));
  }
  grpc::HealthCheckServiceInterface* health =
      server->server_->GetHealthCheckService();
  health->SetServingStatus(kServiceName, true);
  health->SetServingStatus(true);
  return server;
}

void MemgateServer::Shutdown(absl::Duration grace) {
  if (shut_down_) return;
  shut_down_ = true;
  // Tell load balancers and health probes first, then drain.
  server_->GetHealthCheckService()->SetServingStatus(false);
  server_->Shutdown(absl::ToChronoTime(absl::Now() + grace));
  server_->Wait();
}

MemgateServer::~MemgateServer() {
  if (server_ != nullptr) Shutdown(absl::ZeroDuration());
}

}  // namespace memgate
