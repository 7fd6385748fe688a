#include "service/server.h"

#include <dirent.h>
#include <sys/resource.h>

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"
#include "readers/file_util.h"
#include "service/diagnostics.h"

namespace memgate {
namespace {

constexpr char kServiceName[] = "memgate.v1.MemoryEstimator";
// Descriptors that must be free before a re-created listener can work.
constexpr uint64_t kDescriptorHeadroom = 64;
constexpr absl::Duration kWatchEvery = absl::Milliseconds(100);

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

int Millis(absl::Duration d) {
  return static_cast<int>(std::clamp<int64_t>(absl::ToInt64Milliseconds(d), 1,
                                              INT32_MAX));
}

// Open descriptors of this process, counted in /proc/self/fd.
uint64_t OpenDescriptors() {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return UINT64_MAX;  // cannot even open a directory
  uint64_t n = 0;
  while (readdir(dir) != nullptr) ++n;
  closedir(dir);
  return n > 3 ? n - 3 : 0;  // ".", ".." and the directory's own
}

uint64_t OpenFileLimit() {
  rlimit limit{};
  getrlimit(RLIMIT_NOFILE, &limit);
  return limit.rlim_cur;
}

}  // namespace

absl::StatusOr<uint64_t> RaiseOpenFileLimit(uint64_t wanted) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) {
    return absl::InternalError("getrlimit(RLIMIT_NOFILE) failed");
  }
  const uint64_t hard = limit.rlim_max == RLIM_INFINITY
                            ? uint64_t{1} << 20
                            : std::min<uint64_t>(limit.rlim_max, 1u << 20);
  if (wanted > hard) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--max-open-files: at most the hard limit ", hard, " (got ", wanted,
        ")"));
  }
  limit.rlim_cur = wanted == 0 ? hard : wanted;
  if (setrlimit(RLIMIT_NOFILE, &limit) != 0) {
    return absl::InternalError("setrlimit(RLIMIT_NOFILE) failed");
  }
  return static_cast<uint64_t>(limit.rlim_cur);
}

absl::Status MemgateServer::BuildOn(const std::string& address) {
  absl::StatusOr<std::unique_ptr<MemoryEstimatorService>> service =
      MemoryEstimatorService::Create(config_.service);
  if (!service.ok()) return service.status();
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
      Credentials(config_);
  if (!credentials.ok()) return credentials.status();

  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(address, *credentials, &port);
  builder.RegisterService(service->get());
  builder.SetMaxReceiveMessageSize(config_.max_message_bytes);
  builder.SetMaxSendMessageSize(4 * 1024 * 1024);  // a full plan is larger
  // Connections that hold a descriptor without doing anything: a client
  // that never finishes the handshake, or one that stays idle, is closed.
  builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS,
                             Millis(config_.handshake_timeout));
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS,
                             Millis(config_.max_connection_idle));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS,
                             Millis(config_.keepalive_time));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS,
                             Millis(config_.keepalive_timeout));
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    const std::string why = RecentLibraryErrors();
    const bool tls = !config_.tls_cert_file.empty();
    if (tls && (absl::StrContains(why, "key") || absl::StrContains(why, "cert") ||
                absl::StrContains(why, "Handshaker") ||
                absl::StrContains(why, "SSL"))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--tls-cert / --tls-key: gRPC cannot use them (", why,
          "); does the key belong to the certificate?"));
    }
    return absl::UnavailableError(absl::StrCat(
        "--listen: cannot listen on ", address,
        " (in use, or not a HOST:PORT this machine has)",
        why.empty() ? "" : absl::StrCat(": ", why)));
  }
  grpc::HealthCheckServiceInterface* health = server->GetHealthCheckService();
  health->SetServingStatus(kServiceName, true);
  health->SetServingStatus(true);
  service_ = *std::move(service);
  server_ = std::move(server);
  port_ = port;
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<MemgateServer>> MemgateServer::Start(
    const ServerConfig& config) {
  // Process-wide: gRPC's and protobuf's logs become diagnostics (and tell
  // the watcher about accept failures); the other two are read when a
  // server is built.
  RouteLibraryLogs();
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();

  std::unique_ptr<MemgateServer> server(new MemgateServer(config));
  if (absl::Status s = server->BuildOn(config.listen); !s.ok()) return s;
  server->watcher_ = std::thread([s = server.get()] { s->Watch(); });
  return server;
}

void MemgateServer::RecreateListener() {
  const std::string host = config_.listen.substr(0, config_.listen.rfind(':'));
  const std::string address = absl::StrCat(host, ":", port_);
  std::lock_guard<std::mutex> lock(mu_);
  if (shut_down_) return;
  // The old listener is dead; its connections are shut down too, so the
  // new listener starts with the descriptors they held. (After a failed
  // attempt there is no old server left, only the port to bind again.)
  if (server_ != nullptr) {
    server_->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(1)));
    server_->Wait();
    server_.reset();
  }
  service_.reset();
  absl::Status s = BuildOn(address);
  if (s.ok()) {
    restarts_.fetch_add(1);
    Diagnose(absl::StrCat("listener re-created on ", address,
                          " after an accept failure"));
  } else {
    Diagnose(absl::StrCat("cannot re-create the listener yet: ", s.message()));
  }
}

void MemgateServer::Watch() {
  uint64_t failures_seen = AcceptFailureCount();
  absl::Time failed_at = absl::InfinitePast();
  bool pending = false;
  bool serving = true;
  while (!stop_watching_.load()) {
    absl::SleepFor(kWatchEvery);
    if (!pending && AcceptFailureCount() != failures_seen) {
      failures_seen = AcceptFailureCount();
      failed_at = absl::Now();
      pending = true;
      Diagnose("gRPC's listener failed to accept (out of descriptors?); "
               "re-creating it once descriptors are free");
    }
    if (pending || server_ == nullptr) {
      const bool headroom =
          OpenDescriptors() + kDescriptorHeadroom <= OpenFileLimit();
      if (headroom ||
          absl::Now() - failed_at >= config_.listener_recovery_wait) {
        RecreateListener();
        std::lock_guard<std::mutex> lock(mu_);
        pending = server_ == nullptr;
        failures_seen = AcceptFailureCount();
        serving = true;  // a new health service starts SERVING
      }
    }
    const bool healthy = config_.service.decision_log == nullptr ||
                         config_.service.decision_log->Healthy();
    if (healthy != serving) {
      std::lock_guard<std::mutex> lock(mu_);
      if (shut_down_ || server_ == nullptr) continue;
      server_->GetHealthCheckService()->SetServingStatus(kServiceName, healthy);
      server_->GetHealthCheckService()->SetServingStatus(healthy);
      serving = healthy;
      Diagnose(healthy ? "decision log writable again: SERVING"
                       : "decision log cannot be written: NOT_SERVING");
    }
  }
}

void MemgateServer::Shutdown(absl::Duration grace) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shut_down_) return;
    shut_down_ = true;
  }
  stop_watching_ = true;
  if (watcher_.joinable()) watcher_.join();
  if (server_ == nullptr) return;
  // Tell load balancers and health probes first, then drain.
  server_->GetHealthCheckService()->SetServingStatus(false);
  server_->Shutdown(absl::ToChronoTime(absl::Now() + grace));
  server_->Wait();
}

MemgateServer::~MemgateServer() { Shutdown(absl::ZeroDuration()); }

}  // namespace memgate
