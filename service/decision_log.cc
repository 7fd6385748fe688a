#include "service/decision_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <mutex>
#include <thread>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "estimator/fixed_format.h"
#include "estimator/units.h"
#include "service/diagnostics.h"

namespace memgate {
namespace {

constexpr std::chrono::milliseconds kBatchWindow(5);

// A JSON string literal. memgate's own text needs no escaping: copy it
// whole, escape character by character only when something needs it.
void AppendJsonString(std::string& out, const std::string& text) {
  out.push_back('"');
  bool plain = true;
  for (unsigned char c : text) plain &= c >= 0x20 && c != '"' && c != '\\';
  if (plain) {
    out += text;
  } else {
    for (unsigned char c : text) {
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default:
          if (c < 0x20) {
            char escaped[8];
            std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
            out += escaped;
          } else {
            out.push_back(static_cast<char>(c));
          }
      }
    }
  }
  out.push_back('"');
}

void AppendTwoDigits(std::string& out, int v) {
  out.push_back(static_cast<char>('0' + v / 10));
  out.push_back(static_cast<char>('0' + v % 10));
}

// RFC 3339 UTC with microseconds: 2026-11-22T02:14:12.123456Z.
void AppendTime(std::string& out, int64_t unix_micros) {
  const time_t seconds = static_cast<time_t>(unix_micros / 1000000);
  std::tm utc;
  gmtime_r(&seconds, &utc);
  absl::StrAppend(&out, utc.tm_year + 1900, "-");
  AppendTwoDigits(out, utc.tm_mon + 1);
  out.push_back('-');
  AppendTwoDigits(out, utc.tm_mday);
  out.push_back('T');
  AppendTwoDigits(out, utc.tm_hour);
  out.push_back(':');
  AppendTwoDigits(out, utc.tm_min);
  out.push_back(':');
  AppendTwoDigits(out, utc.tm_sec);
  out.push_back('.');
  int micros = static_cast<int>(unix_micros % 1000000);
  char digits[6];
  for (int i = 5; i >= 0; --i, micros /= 10) {
    digits[i] = static_cast<char>('0' + micros % 10);
  }
  out.append(digits, sizeof digits);
  out.push_back('Z');
}

int OpenForAppend(const std::string& path) {
  return ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
}

// fdatasync on what cannot be synced (a pipe, a terminal) is not a failure.
bool SyncFailed(int fd, int& error) {
  if (::fdatasync(fd) == 0 || errno == EINVAL || errno == EROFS) return false;
  error = errno;
  return true;
}

}  // namespace

struct DecisionLog::Shared {
  explicit Shared(const DecisionLogOptions& o, int descriptor, bool own)
      : options(o), fd(descriptor), owned(own) {}

  const DecisionLogOptions options;
  int fd;  // replaced only by the writer thread (Reopen)
  const bool owned;

  std::mutex mu;
  std::condition_variable writer_wake;  // work for the writer
  std::condition_variable progress;     // room, lines written, a failure
  std::string pending;                  // complete lines not yet written
  uint64_t pending_lines = 0;           // lines in `pending`
  uint64_t queued_lines = 0;            // lines ever queued
  uint64_t written_lines = 0;           // of those, written (and synced)
  bool failed = false;                  // the last write failed
  std::string failure;                  // why, for Record's answer
  bool reopen = false;
  bool stopping = false;
  bool finished = false;                // the writer has returned
  bool closed = false;                  // Close ran
  size_t left_at_close = 0;             // what it reported
  absl::Time stop_by = absl::InfiniteFuture();
  std::atomic<int64_t> write_started_micros{0};  // 0: no write under way

  bool StalledLocked() const {
    const int64_t started = write_started_micros.load();
    return started != 0 && absl::Now() - absl::FromUnixMicros(started) >
                               options.stall_after;
  }

  // Writes `batch`; the bytes written, and errno when short.
  size_t WriteSome(const std::string& batch, int& error) {
    size_t done = 0;
    while (done < batch.size()) {
      const ssize_t n = ::write(fd, batch.data() + done, batch.size() - done);
      if (n > 0) {
        done += static_cast<size_t>(n);
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else {
        error = n < 0 ? errno : EIO;
        break;
      }
    }
    return done;
  }

  void ReopenNow() {
    if (!owned) return;
    const int fresh = OpenForAppend(options.path);
    if (fresh < 0) {
      Diagnose(absl::StrCat("decision log: cannot reopen ", options.path, ": ",
                            std::strerror(errno), "; still writing the old file"));
      return;
    }
    ::close(fd);
    fd = fresh;
    Diagnose(absl::StrCat("decision log: reopened ", options.path));
  }

  void WriteLoop() {
    std::unique_lock<std::mutex> lock(mu);
    while (true) {
      writer_wake.wait(lock,
                       [this] { return stopping || reopen || !pending.empty(); });
      if (reopen) {
        reopen = false;
        lock.unlock();
        ReopenNow();
        lock.lock();
      }
      if (pending.empty()) {
        if (stopping) break;
        continue;
      }
      if (!stopping && !options.sync && !failed) {
        // Let a burst gather: one write per 5 ms at most. (Sync mode
        // batches by itself: lines queue while the previous sync runs.)
        lock.unlock();
        std::this_thread::sleep_for(kBatchWindow);
        lock.lock();
      }
      std::string batch;
      batch.swap(pending);
      const uint64_t lines = pending_lines;
      pending_lines = 0;
      lock.unlock();
      progress.notify_all();  // room in the queue

      int error = 0;
      write_started_micros = absl::ToUnixMicros(absl::Now());
      const size_t done = WriteSome(batch, error);
      const bool ok = done == batch.size() &&
                      !(options.sync && SyncFailed(fd, error));
      write_started_micros = 0;

      lock.lock();
      if (ok) {
        written_lines += lines;
        if (failed) Diagnose("decision log: writing again");
        failed = false;
      } else {
        // Keep what was not written, ahead of what came since; lines
        // written whole before the failure count as written.
        const uint64_t whole = static_cast<uint64_t>(
            std::count(batch.begin(), batch.begin() + done, '\n'));
        if (done < batch.size()) {
          pending.insert(0, batch, done, std::string::npos);
          pending_lines += lines - whole;
        }
        written_lines += whole;
        if (!failed) {
          Diagnose(absl::StrCat(
              "decision log: write failed (", std::strerror(error),
              "); decisions are refused until it can be written again"));
        }
        failed = true;
        failure = std::strerror(error);
      }
      progress.notify_all();
      // Shutting down: a failing sink is not retried (the grace is short).
      if (stopping && (pending.empty() || !ok || absl::Now() >= stop_by)) {
        break;
      }
      if (!ok) {
        const absl::Duration wait =
            std::min(options.retry_every, stop_by - absl::Now());
        writer_wake.wait_for(lock, absl::ToChronoNanoseconds(wait),
                             [this] { return reopen; });
      }
    }
    finished = true;
    progress.notify_all();
  }
};

absl::StatusOr<std::unique_ptr<DecisionLog>> DecisionLog::Open(
    const DecisionLogOptions& options) {
  if (options.max_pending_bytes < 4096) {
    return absl::InvalidArgumentError(
        "--decision-log-queue: must be at least 4096 bytes");
  }
  int fd = STDOUT_FILENO;
  const bool owned = !(options.path.empty() || options.path == "-");
  if (owned) {
    fd = OpenForAppend(options.path);
    if (fd < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--decision-log: cannot open ", options.path, ": ",
          std::strerror(errno)));
    }
  }
  auto shared = std::make_shared<Shared>(options, fd, owned);
  std::thread([shared] { shared->WriteLoop(); }).detach();
  return std::unique_ptr<DecisionLog>(new DecisionLog(std::move(shared)));
}

DecisionLog::DecisionLog(std::shared_ptr<Shared> shared)
    : shared_(std::move(shared)) {}

DecisionLog::~DecisionLog() { Close(absl::Now() + absl::Seconds(1)); }

size_t DecisionLog::Close(absl::Time deadline) {
  Shared& s = *shared_;
  std::unique_lock<std::mutex> lock(s.mu);
  if (s.closed) return s.left_at_close;  // the destructor after an explicit Close
  if (!s.stopping) {
    s.stopping = true;
    s.stop_by = deadline;
    s.writer_wake.notify_all();
  }
  // The writer thread is detached and shares the state: if a write hangs
  // past the deadline it is simply left behind, and shutdown goes on.
  s.progress.wait_until(lock, absl::ToChronoTime(deadline),
                        [&s] { return s.finished; });
  const size_t left = s.pending.size();
  if (!s.finished || left > 0) {
    Diagnose(absl::StrCat("decision log: ", left,
                          " bytes of decisions could not be written before "
                          "shutdown",
                          s.finished ? "" : " (a write is blocked)"));
  }
  if (s.finished && s.owned && s.fd >= 0) {
    ::close(s.fd);
    s.fd = -1;
  }
  s.closed = true;
  s.left_at_close = s.finished ? left : std::max<size_t>(left, 1);
  return s.left_at_close;
}

bool DecisionLog::Healthy() const {
  std::lock_guard<std::mutex> lock(shared_->mu);
  return !shared_->failed && !shared_->StalledLocked();
}

void DecisionLog::Reopen() {
  std::lock_guard<std::mutex> lock(shared_->mu);
  shared_->reopen = true;
  shared_->writer_wake.notify_all();
}

absl::Status DecisionLog::Record(const v1::Decision& decision,
                                 const std::string& peer,
                                 const std::string& client_identity) {
  std::string line = LineFor(decision, peer, client_identity,
                             absl::ToUnixMicros(absl::Now()));
  line.push_back('\n');
  Shared& s = *shared_;
  const absl::Time deadline = absl::Now() + s.options.max_wait;
  std::unique_lock<std::mutex> lock(s.mu);
  auto refuse = [](absl::string_view why) {
    return absl::UnavailableError(absl::StrCat(
        "decision log: ", why, "; the decision is not given unlogged"));
  };
  if (s.stopping) return refuse("the server is shutting down");
  if (s.failed) return refuse(absl::StrCat("write failed (", s.failure, ")"));
  if (s.StalledLocked()) return refuse("a write has been blocked for too long");
  while (s.pending.size() + line.size() > s.options.max_pending_bytes) {
    if (s.progress.wait_until(lock, absl::ToChronoTime(deadline)) ==
            std::cv_status::timeout ||
        s.failed || s.stopping) {
      if (s.pending.size() + line.size() <= s.options.max_pending_bytes) break;
      return refuse(absl::StrCat(s.pending.size(),
                                 " bytes are waiting for a stalled sink"));
    }
  }
  const bool was_idle = s.pending.empty();
  s.pending += line;
  ++s.pending_lines;
  const uint64_t mine = ++s.queued_lines;
  if (was_idle || s.options.sync) s.writer_wake.notify_all();
  if (!s.options.sync) return absl::OkStatus();
  while (s.written_lines < mine) {
    if (s.failed) return refuse(absl::StrCat("write failed (", s.failure, ")"));
    if (s.progress.wait_until(lock, absl::ToChronoTime(deadline)) ==
            std::cv_status::timeout &&
        s.written_lines < mine) {
      return refuse("not on disk in time");
    }
  }
  return absl::OkStatus();
}

// Written by hand from the decision, without printf: the reflection-based
// JSON printer fed an intermediate DecisionLogEntry, and later printf's
// doubles, cost more than the whole Admit (bench/RESULTS.md).
std::string DecisionLog::LineFor(const v1::Decision& decision,
                                 const std::string& peer,
                                 const std::string& client_identity,
                                 int64_t unix_micros) {
  const v1::Estimate& e = decision.estimate();
  const v1::Job& job = e.job();
  const v1::ParallelConfig& par = job.parallel();
  std::string out;
  out.reserve(512);
  out += "{\"time\":\"";
  AppendTime(out, unix_micros);
  out += "\",\"request_id\":";
  AppendJsonString(out, decision.request_id());
  out += ",\"peer\":";
  AppendJsonString(out, peer);
  absl::StrAppend(&out, ",\"verdict\":\"", v1::Verdict_Name(decision.verdict()),
                  "\",\"zone\":\"", v1::Zone_Name(e.zone()),
                  "\",\"peak_gib\":");
  AppendFixed(out, e.peak_gib(), 4);
  absl::StrAppend(&out, ",\"peak_stage\":", e.peak().stage(), ",\"limit_gib\":");
  AppendFixed(out, ToGiB(e.threshold() * e.capacity_bytes()), 4);
  out += ",\"capacity_gib\":";
  AppendFixed(out, ToGiB(e.capacity_bytes()), 4);
  absl::StrAppend(&out, ",\"num_gpus\":", job.num_gpus(),
                  ",\"tensor_parallel\":", par.tensor_parallel(),
                  ",\"context_parallel\":", par.context_parallel(),
                  ",\"pipeline_parallel\":", par.pipeline_parallel(),
                  ",\"data_parallel\":", e.data_parallel(),
                  ",\"micro_batch_size\":", job.training().micro_batch_size(),
                  ",\"seq_length\":", job.training().seq_length(),
                  ",\"model\":");
  AppendJsonString(out, job.model().name());
  out += ",\"accelerator\":";
  AppendJsonString(out, job.accelerator().name());
  out += ",\"reason\":";
  AppendJsonString(out, decision.reason());
  if (!client_identity.empty()) {
    out += ",\"client_identity\":";
    AppendJsonString(out, client_identity);
  }
  out += "}";
  return out;
}

}  // namespace memgate
