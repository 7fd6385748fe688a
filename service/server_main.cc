// memgate_server: memgate.v1.MemoryEstimator over gRPC.
//
//   memgate_server --listen=127.0.0.1:50051 [--threshold=0.8] [--yellow=refuse]
//
// Standard output carries JSON lines only: first {"listening":"HOST:PORT"},
// then one line per Admit decision (unless --decision-log names a file).
// Diagnostics (memgate's, gRPC's, protobuf's) go to standard error.
//
// Signals: SIGTERM / SIGINT: health turns NOT_SERVING, calls in flight
// drain for up to --shutdown-grace, the decision log is flushed within the
// same grace, and the process exits 0 (1 if the grace ran out first).
// SIGHUP: the decision log file is reopened (for logrotate). SIGPIPE is
// ignored: a log reader that goes away is a write error, not a crash.

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "proto/request_limits.h"
#include "service/decision_log.h"
#include "service/diagnostics.h"
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
          "file to append one JSON line per Admit decision to; - is standard "
          "output. A decision that cannot be logged is not given "
          "(UNAVAILABLE)");
ABSL_FLAG(bool, decision_log_sync, false,
          "answer an Admit only once its line is written and fdatasync'd");
ABSL_FLAG(int64_t, decision_log_queue, 8 << 20,
          "bytes of decisions that may wait for the log's sink");
ABSL_FLAG(absl::Duration, decision_log_wait, absl::Milliseconds(500),
          "how long a decision waits for room in the log's queue (or, with "
          "--decision-log-sync, for the disk) before UNAVAILABLE");
ABSL_FLAG(std::string, tls_cert, "", "PEM server certificate (turns on TLS)");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls_cert");
ABSL_FLAG(std::string, tls_client_ca, "",
          "PEM CA that client certificates must chain to (mutual TLS)");
ABSL_FLAG(int, max_message_bytes,
          static_cast<int>(memgate::kMaxRequestBytes),
          "largest request accepted (at least what clients send, 65536); "
          "larger ones get RESOURCE_EXHAUSTED");
ABSL_FLAG(absl::Duration, shutdown_grace, absl::Seconds(5),
          "how long SIGTERM lets calls in flight finish and the decision log "
          "drain; the process is gone by then");
ABSL_FLAG(int, plan_threads, 1,
          "Plan calls computed at once, at lower CPU priority than Admit");
ABSL_FLAG(int, plan_queue, 4,
          "Plan calls that may wait for a thread; more get RESOURCE_EXHAUSTED");
ABSL_FLAG(int64_t, max_open_files, 0,
          "open-file soft limit to run with; 0 raises it to the hard limit");
ABSL_FLAG(absl::Duration, handshake_timeout, absl::Seconds(10),
          "a connection must finish its (TLS and HTTP/2) handshake within this");
ABSL_FLAG(absl::Duration, max_connection_idle, absl::Minutes(5),
          "a connection without calls for this long is closed");

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
  memgate::Diagnose(message);
  return 2;
}

// Whatever blocks (a handler, a sink), the process is gone shortly after
// the grace: an orchestrator's SIGKILL would otherwise come first.
void ExitAfter(absl::Duration grace) {
  std::thread([grace] {
    absl::SleepFor(grace);
    memgate::Diagnose("shutdown grace exceeded; exiting now");
    _exit(1);
  }).detach();
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

  // A log reader that exits must not kill the server (write gets EPIPE).
  signal(SIGPIPE, SIG_IGN);
  // Signals are taken by sigwait below, never by gRPC's threads: block them
  // before any thread starts so every thread inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  const std::string yellow = absl::GetFlag(FLAGS_yellow);
  if (yellow != "refuse" && yellow != "admit") {
    return Fail("--yellow: must be refuse or admit (got '" + yellow + "')");
  }
  // Below what clients send, a request a client sent could be refused for
  // its size (request_limits.h).
  if (absl::GetFlag(FLAGS_max_message_bytes) <
      static_cast<int>(memgate::kMaxRequestBytes)) {
    return Fail(absl::StrCat("--max_message_bytes: must be at least ",
                             memgate::kMaxRequestBytes,
                             " (what memgate's clients send at most)"));
  }
  const absl::Duration grace = absl::GetFlag(FLAGS_shutdown_grace);
  if (grace < absl::ZeroDuration() || grace > absl::Minutes(10)) {
    return Fail("--shutdown-grace: must be between 0 and 10m");
  }
  const int64_t open_files = absl::GetFlag(FLAGS_max_open_files);
  if (open_files != 0 && open_files < 64) {
    return Fail("--max-open-files: 0 (the hard limit) or at least 64");
  }
  absl::StatusOr<uint64_t> limit =
      memgate::RaiseOpenFileLimit(static_cast<uint64_t>(open_files));
  if (!limit.ok()) return Fail(std::string(limit.status().message()));

  memgate::DecisionLogOptions log_options;
  log_options.path = absl::GetFlag(FLAGS_decision_log);
  log_options.sync = absl::GetFlag(FLAGS_decision_log_sync);
  const int64_t queue = absl::GetFlag(FLAGS_decision_log_queue);
  log_options.max_pending_bytes = queue > 0 ? static_cast<size_t>(queue) : 0;
  log_options.max_wait = absl::GetFlag(FLAGS_decision_log_wait);
  if (log_options.max_wait <= absl::ZeroDuration() ||
      log_options.max_wait > absl::Seconds(30)) {
    return Fail("--decision-log-wait: must be above 0 and at most 30s");
  }
  absl::StatusOr<std::unique_ptr<memgate::DecisionLog>> log =
      memgate::DecisionLog::Open(log_options);
  if (!log.ok()) return Fail(std::string(log.status().message()));

  memgate::ServerConfig config;
  config.listen = absl::GetFlag(FLAGS_listen);
  config.tls_cert_file = absl::GetFlag(FLAGS_tls_cert);
  config.tls_key_file = absl::GetFlag(FLAGS_tls_key);
  config.tls_client_ca_file = absl::GetFlag(FLAGS_tls_client_ca);
  config.max_message_bytes = absl::GetFlag(FLAGS_max_message_bytes);
  config.handshake_timeout = absl::GetFlag(FLAGS_handshake_timeout);
  config.max_connection_idle = absl::GetFlag(FLAGS_max_connection_idle);
  config.service.default_threshold = absl::GetFlag(FLAGS_threshold);
  config.service.min_threshold = absl::GetFlag(FLAGS_min_threshold);
  config.service.max_threshold = absl::GetFlag(FLAGS_max_threshold);
  config.service.admit_yellow = yellow == "admit";
  config.service.decision_log = log->get();
  config.service.plan_threads = absl::GetFlag(FLAGS_plan_threads);
  config.service.plan_queue = absl::GetFlag(FLAGS_plan_queue);

  absl::StatusOr<std::unique_ptr<memgate::MemgateServer>> server =
      memgate::MemgateServer::Start(config);
  if (!server.ok()) return Fail(std::string(server.status().message()));
  const std::string host = config.listen.substr(0, config.listen.rfind(':'));
  // Tests and supervisors read the chosen port from this line.
  std::printf("{\"listening\":\"%s:%d\"}\n", host.c_str(), (*server)->port());
  std::fflush(stdout);
  memgate::Diagnose(absl::StrCat("listening on ", host, ":", (*server)->port(),
                                 " (open-file limit ", *limit, ")"));

  int signal_number = 0;
  while (true) {
    sigwait(&signals, &signal_number);
    if (signal_number != SIGHUP) break;
    (*log)->Reopen();
  }
  const absl::Time deadline = absl::Now() + grace;
  ExitAfter(grace + absl::Milliseconds(300));
  memgate::Diagnose(absl::StrCat("signal ", signal_number, ", draining"));
  // Calls get most of the grace, the log what is left (at least 100 ms:
  // the lines of the calls just drained), and the watchdog ends the
  // process shortly after whatever blocks.
  (*server)->Shutdown(grace * 0.8);
  const size_t unwritten = (*log)->Close(
      std::max(deadline, absl::Now() + absl::Milliseconds(100)));
  memgate::Diagnose("stopped");
  _exit(unwritten == 0 ? 0 : 1);
}
