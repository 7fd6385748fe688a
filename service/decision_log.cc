#include "service/decision_log.h"

#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "estimator/units.h"
#include "google/protobuf/util/json_util.h"

namespace memgate {

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

DecisionLog::~DecisionLog() {
  if (owned_) std::fclose(file_);
}

v1::DecisionLogEntry DecisionLog::EntryFor(const v1::Decision& decision,
                                           const std::string& peer) {
  const v1::Estimate& e = decision.estimate();
  const v1::Job& job = e.job();
  v1::DecisionLogEntry entry;
  entry.set_time(absl::FormatTime(absl::RFC3339_full, absl::Now(),
                                  absl::UTCTimeZone()));
  entry.set_request_id(decision.request_id());
  entry.set_peer(peer);
  entry.set_verdict(decision.verdict());
  entry.set_zone(e.zone());
  entry.set_peak_gib(e.peak_gib());
  entry.set_peak_stage(e.peak().stage());
  entry.set_limit_gib(ToGiB(e.threshold() * e.capacity_bytes()));
  entry.set_capacity_gib(ToGiB(e.capacity_bytes()));
  entry.set_model(job.model().name());
  entry.set_accelerator(job.accelerator().name());
  entry.set_num_gpus(job.num_gpus());
  entry.set_tensor_parallel(job.parallel().tensor_parallel());
  entry.set_context_parallel(job.parallel().context_parallel());
  entry.set_pipeline_parallel(job.parallel().pipeline_parallel());
  entry.set_data_parallel(e.data_parallel());
  entry.set_micro_batch_size(job.training().micro_batch_size());
  entry.set_seq_length(job.training().seq_length());
  entry.set_reason(decision.reason());
  return entry;
}

void DecisionLog::Record(const v1::Decision& decision,
                         const std::string& peer) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string line;
  (void)google::protobuf::util::MessageToJsonString(EntryFor(decision, peer),
                                                    &line, options);
  line.push_back('\n');
  absl::MutexLock lock(&mu_);
  std::fputs(line.c_str(), file_);
  std::fflush(file_);
}

}  // namespace memgate
