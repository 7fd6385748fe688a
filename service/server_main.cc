// memgate_server: memgate.v1.MemoryEstimator over gRPC.
//
//   memgate_server --listen=127.0.0.1:50051 [--threshold=0.8] [--yellow=refuse]
//
// SIGTERM / SIGINT: health turns NOT_SERVING, calls in flight drain for up to
// --shutdown-grace, and the process exits 0.

#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "service/decision_log.h"
#include "service/server.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:50051",
          "HOST:PORT to serve on; port 0 picks a free port (printed)");
ABSL_FLAG(double, threshold, 0.8,
          "GREEN limit as a fraction of GPU memory, for requests that do not "
          "ask for one");
ABSL_FLAG(double, min_threshold, 0.5,
          "lowest threshold a request may ask for");
ABSL_FLAG(double, max_threshold, 0.9,
          "highest threshold a request may ask for");
ABSL_FLAG(std::string, yellow, "refuse",
          "policy for the YELLOW zone (above the threshold, within capacity): "
          "refuse, or admit with a warning");
ABSL_FLAG(std::string, decision_log, "-",
          "file to append one JSON line per Admit decision to; - is stderr");
ABSL_FLAG(std::string, tls_cert, "", "PEM server certificate (turns on TLS)");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls_cert");
ABSL_FLAG(std::string, tls_client_ca, "",
          "PEM CA that client certificates must chain to (mutual TLS)");
ABSL_FLAG(int, max_message_bytes, 64 * 1024,
          "largest request accepted; larger ones get RESOURCE_EXHAUSTED");
ABSL_FLAG(absl::Duration, shutdown_grace, absl::Seconds(5),
          "how long SIGTERM lets calls in flight finish");

namespace {

// absl flags spell names with underscores; users and the docs write
// --decision-log and --tls-cert. Accept both by rewriting the names.
std::vector<char*> WithUnderscoredFlagNames(int argc, char** argv,
                                            std::vector<std::string>& store) {
  store.assign(argv, argv + argc);
  for (size_t i = 1; i < store.size(); ++i) {
    std::string& arg = store[i];
    if (arg == "--") break;
    if (arg.rfind("--", 0) != 0) continue;
    const size_t end = std::min(arg.find('='), arg.size());
    for (size_t c = 2; c < end; ++c) {
      if (arg[c] == '-') arg[c] = '_';
    }
  }
  std::vector<char*> pointers;
  for (std::string& arg : store) pointers.push_back(arg.data());
  return pointers;
}

int Fail(const std::string& message) {
  std::cerr << "memgate_server: " << message << "\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "serves memgate.v1.MemoryEstimator (Estimate, Admit, Plan) with gRPC "
      "health checking and reflection.\nusage: memgate_server "
      "[--listen=HOST:PORT] [flags]\n(flag names take - or _ alike: "
      "--decision-log, --tls-cert, ...)");
  std::vector<std::string> arg_store;
  std::vector<char*> args = WithUnderscoredFlagNames(argc, argv, arg_store);
  absl::ParseCommandLine(static_cast<int>(args.size()), args.data());
  // Debian's Abseil is built with mutex deadlock detection on; gRPC takes
  // absl::Mutex on every call, and the detector's graph bookkeeping cost a
  // few percent of the server's CPU (bench/RESULTS.md). A server has no use
  // for it.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);

  // Signals are taken by sigwait below, never by gRPC's threads: block them
  // before any thread starts so every thread inherits the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  const std::string yellow = absl::GetFlag(FLAGS_yellow);
  if (yellow != "refuse" && yellow != "admit") {
    return Fail("--yellow: must be refuse or admit (got '" + yellow + "')");
  }
  if (absl::GetFlag(FLAGS_max_message_bytes) < 1024) {
    return Fail("--max_message_bytes: must be at least 1024");
  }
  absl::StatusOr<std::unique_ptr<memgate::DecisionLog>> log =
      memgate::DecisionLog::Open(absl::GetFlag(FLAGS_decision_log));
  if (!log.ok()) return Fail(std::string(log.status().message()));

  memgate::ServerConfig config;
  config.listen = absl::GetFlag(FLAGS_listen);
  config.tls_cert_file = absl::GetFlag(FLAGS_tls_cert);
  config.tls_key_file = absl::GetFlag(FLAGS_tls_key);
  config.tls_client_ca_file = absl::GetFlag(FLAGS_tls_client_ca);
  config.max_message_bytes = absl::GetFlag(FLAGS_max_message_bytes);
  config.service.default_threshold = absl::GetFlag(FLAGS_threshold);
  config.service.min_threshold = absl::GetFlag(FLAGS_min_threshold);
  config.service.max_threshold = absl::GetFlag(FLAGS_max_threshold);
  config.service.admit_yellow = yellow == "admit";
  config.service.decision_log = log->get();

  absl::StatusOr<std::unique_ptr<memgate::MemgateServer>> server =
      memgate::MemgateServer::Start(config);
  if (!server.ok()) return Fail(std::string(server.status().message()));
  const std::string host = config.listen.substr(0, config.listen.rfind(':'));
  // Tests and supervisors read the chosen port from this line.
  std::printf("memgate_server listening on %s:%d\n", host.c_str(),
              (*server)->port());
  std::fflush(stdout);

  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  std::fprintf(stderr, "memgate_server: signal %d, draining\n", signal_number);
  (*server)->Shutdown(absl::GetFlag(FLAGS_shutdown_grace));
  std::fprintf(stderr, "memgate_server: stopped\n");
  return 0;
}
