// The audit log's cost on the Admit path: formatting one line, and
// recording it (format + queue) while a writer thread drains to /dev/null.
//
//   bazel run -c opt //bench:decision_log_benchmark

#include "admission/admission.h"
#include "benchmark/benchmark.h"
#include "service/decision_log.h"
#include "tests/test_util.h"

namespace memgate {
namespace {

v1::Decision PaperDecision() {
  v1::Decision d = *AdmitJob(
      testing::PaperJob("llama-3.1-8b", "a100-40gb", 4, 1, 2, 1, 16, 8192),
      AdmissionPolicy());
  d.set_request_id("memgate-1700000000000000-42");
  return d;
}

void BM_LineFor(benchmark::State& state) {
  const v1::Decision d = PaperDecision();
  const std::string peer = "ipv4:127.0.0.1:54321";
  for (auto _ : state) {
    std::string line = DecisionLog::LineFor(d, peer, "", 1700000000123456);
    benchmark::DoNotOptimize(line);
  }
}
BENCHMARK(BM_LineFor);

void BM_Record(benchmark::State& state) {
  const v1::Decision d = PaperDecision();
  DecisionLogOptions options;
  options.path = "/dev/null";
  auto log = DecisionLog::Open(options);
  for (auto _ : state) {
    absl::Status s = (*log)->Record(d, "ipv4:127.0.0.1:54321", "");
    benchmark::DoNotOptimize(s);
  }
}
BENCHMARK(BM_Record)->ThreadRange(1, 2);

}  // namespace
}  // namespace memgate

BENCHMARK_MAIN();
