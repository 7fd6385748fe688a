#ifndef MEMGATE_SERVICE_SERVER_H_
#define MEMGATE_SERVICE_SERVER_H_

// A running memgate gRPC server: the MemoryEstimator service, gRPC health
// checking (grpc.health.v1) and server reflection, on plaintext or TLS.

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/server.h"
#include "service/memory_estimator_service.h"

namespace memgate {

struct ServerConfig {
  // HOST:PORT; port 0 picks a free one (see MemgateServer::port).
  std::string listen = "127.0.0.1:50051";
  // PEM files. Cert and key together turn on TLS; a client CA additionally
  // requires and verifies client certificates (mutual TLS).
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_client_ca_file;
  // Larger requests are refused with RESOURCE_EXHAUSTED: a job is < 1 KiB.
  int max_message_bytes = 64 * 1024;
  ServiceOptions service;
};

class MemgateServer {
 public:
  // Binds, starts serving and reports SERVING on the health service.
  static absl::StatusOr<std::unique_ptr<MemgateServer>> Start(
      const ServerConfig& config);
  ~MemgateServer();

  int port() const { return port_; }

  // Reports NOT_SERVING, lets calls in flight finish for up to `grace`,
  // cancels what remains, and stops. Idempotent.
  void Shutdown(absl::Duration grace);

 private:
  MemgateServer() = default;

  std::unique_ptr<MemoryEstimatorService> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  bool shut_down_ = false;
};

}  // namespace memgate

#endif  // MEMGATE_SERVICE_SERVER_H_
