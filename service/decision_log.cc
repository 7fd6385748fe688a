#include "service/decision_log.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "estimator/fixed_format.h"
#include "estimator/units.h"

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

}  // namespace

absl::StatusOr<std::unique_ptr<DecisionLog>> DecisionLog::Open(
    const std::string& path) {
  if (path.empty() || path == "-") {
    return std::unique_ptr<DecisionLog>(new DecisionLog(stderr, false));
  }
  FILE* file = std::fopen(path.c_str(), "a");
  if (file == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--decision-log: cannot open ", path, ": ", std::strerror(errno)));
  }
  return std::unique_ptr<DecisionLog>(new DecisionLog(file, true));
}

DecisionLog::DecisionLog(FILE* file, bool owned)
    : file_(file), owned_(owned), writer_([this] { WriteLoop(); }) {}

DecisionLog::~DecisionLog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_one();
  writer_.join();
  if (owned_) std::fclose(file_);
}

// One write(2) for the whole batch where the kernel takes it (stdio would
// cut it into 4 KiB writes); lines are complete, so readers never see half.
void DecisionLog::WriteAll(const std::string& batch) {
  const int fd = fileno(file_);
  size_t done = 0;
  while (done < batch.size()) {
    const ssize_t n = ::write(fd, batch.data() + done, batch.size() - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      return;  // disk full or closed: the service must not stop for it
    }
  }
}

void DecisionLog::WriteLoop() {
  std::string batch;
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    wake_.wait(lock, [this] { return stopping_ || !pending_.empty(); });
    if (!stopping_) {
      // Let a burst gather: one write per 5 ms at most, instead of a
      // wake-up and a syscall per decision.
      lock.unlock();
      std::this_thread::sleep_for(kBatchWindow);
      lock.lock();
    }
    batch.swap(pending_);
    const bool stop = stopping_ && batch.empty();
    lock.unlock();
    if (!batch.empty()) {
      WriteAll(batch);
      batch.clear();
    }
    if (stop) return;
    lock.lock();
  }
}

// Written by hand from the decision: the reflection-based JSON printer,
// fed an intermediate DecisionLogEntry, cost more than the whole Admit.
namespace {

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

}  // namespace

// Written by hand from the decision, without printf: the reflection-based
// JSON printer fed an intermediate DecisionLogEntry, and later printf's
// doubles, cost more than the whole Admit (bench/RESULTS.md).
std::string DecisionLog::LineFor(const v1::Decision& decision,
                                 const std::string& peer,
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
  out += "}";
  return out;
}

void DecisionLog::Record(const v1::Decision& decision,
                         const std::string& peer) {
  std::string line =
      LineFor(decision, peer, absl::ToUnixMicros(absl::Now()));
  line.push_back('\n');
  bool was_idle;
  {
    std::lock_guard<std::mutex> lock(mu_);
    was_idle = pending_.empty();
    pending_ += line;
  }
  if (was_idle) wake_.notify_one();  // else the writer is already on its way
}

}  // namespace memgate
