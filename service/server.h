#ifndef MEMGATE_SERVICE_SERVER_H_
#define MEMGATE_SERVICE_SERVER_H_

// A running memgate gRPC server: the MemoryEstimator service, gRPC health
// checking (grpc.health.v1) and server reflection, on plaintext or TLS.
//
// It defends itself against clients that hold connections: a connection
// must finish its handshake within handshake_timeout, is closed after
// max_connection_idle without calls, and is probed by keepalive pings.
// And it survives descriptor exhaustion: gRPC 1.51's listener stops
// accepting for good once accept4 fails (EMFILE), so when gRPC reports that
// failure the server re-creates its listener on the same port, as soon as
// descriptors are free again or after listener_recovery_wait (shutting the
// old listener's connections down frees them).

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/server.h"
#include "proto/request_limits.h"
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
  // Larger requests are refused with RESOURCE_EXHAUSTED: a job is < 1 KiB,
  // and clients send at most kMaxRequestBytes (proto/request_limits.h).
  int max_message_bytes = static_cast<int>(kMaxRequestBytes);
  absl::Duration handshake_timeout = absl::Seconds(10);
  absl::Duration max_connection_idle = absl::Minutes(5);
  absl::Duration keepalive_time = absl::Minutes(1);
  absl::Duration keepalive_timeout = absl::Seconds(20);
  absl::Duration listener_recovery_wait = absl::Seconds(5);
  ServiceOptions service;
};

class MemgateServer {
 public:
  // Binds, starts serving and reports SERVING on the health service.
  static absl::StatusOr<std::unique_ptr<MemgateServer>> Start(
      const ServerConfig& config);
  ~MemgateServer();

  int port() const { return port_; }
  // Times the listener was re-created after an accept failure.
  int listener_restarts() const { return restarts_.load(); }

  // Reports NOT_SERVING, lets calls in flight finish for up to `grace`,
  // cancels what remains, and stops. Idempotent.
  void Shutdown(absl::Duration grace);

 private:
  explicit MemgateServer(const ServerConfig& config) : config_(config) {}

  // A gRPC server with a fresh service on `address`; null when it cannot.
  absl::Status BuildOn(const std::string& address);
  // Every 100 ms: mirrors the decision log's health into the health
  // service, and re-creates the listener after an accept failure.
  void Watch();
  void RecreateListener();

  const ServerConfig config_;
  std::mutex mu_;  // guards service_ and server_ against Shutdown
  std::unique_ptr<MemoryEstimatorService> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  bool shut_down_ = false;
  std::atomic<bool> stop_watching_{false};
  std::atomic<int> restarts_{0};
  std::thread watcher_;
};

// Raises the open-file soft limit to `wanted`, or to the hard limit when
// `wanted` is 0 (capped at 2^20); returns the limit now in force.
absl::StatusOr<uint64_t> RaiseOpenFileLimit(uint64_t wanted);

}  // namespace memgate

#endif  // MEMGATE_SERVICE_SERVER_H_
