#include "service/diagnostics.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <deque>
#include <mutex>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/stubs/logging.h"
#include "grpc/support/log.h"

namespace memgate {
namespace {

constexpr size_t kRecentErrors = 4;

struct LibraryLogState {
  std::mutex mu;
  std::deque<std::string> recent_errors;
};

std::atomic<uint64_t> accept_failures{0};

LibraryLogState& State() {
  static LibraryLogState* state = new LibraryLogState();
  return *state;
}

void FromGrpc(gpr_log_func_args* args) {
  const absl::string_view message = args->message ? args->message : "";
  if (args->severity == GPR_LOG_SEVERITY_ERROR) {
    LibraryLogState& state = State();
    std::lock_guard<std::mutex> lock(state.mu);
    state.recent_errors.emplace_back(message);
    if (state.recent_errors.size() > kRecentErrors) {
      state.recent_errors.pop_front();
    }
    // tcp_server_posix.cc: "Failed accept4: Too many open files".
    if (absl::StrContains(message, "Failed accept4")) {
      accept_failures.fetch_add(1);
    }
  }
  Diagnose(absl::StrCat("grpc ", gpr_log_severity_string(args->severity), ": ",
                        message));
}

void FromProtobuf(google::protobuf::LogLevel level, const char*, int,
                  const std::string& message) {
  Diagnose(absl::StrCat("protobuf ",
                        level >= google::protobuf::LOGLEVEL_ERROR ? "ERROR"
                                                                  : "WARNING",
                        ": ", message));
}

}  // namespace

void Diagnose(absl::string_view message) {
  std::string line = absl::StrCat("memgate_server: ", message, "\n");
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(STDERR_FILENO, line.data() + done,
                              line.size() - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (!(n < 0 && errno == EINTR)) {
      return;  // nowhere left to complain to
    }
  }
}

uint64_t AcceptFailureCount() { return accept_failures.load(); }

void RouteLibraryLogs() {
  gpr_set_log_function(FromGrpc);
  google::protobuf::SetLogHandler(FromProtobuf);
}

std::string RecentLibraryErrors() {
  LibraryLogState& state = State();
  std::lock_guard<std::mutex> lock(state.mu);
  return absl::StrJoin(state.recent_errors, "; ");
}

}  // namespace memgate
