// Load generator: starts a memgate_server on 127.0.0.1 (a free port), keeps
// --concurrency calls in flight with gRPC's callback API (generic stubs:
// requests pre-serialized, responses unparsed) for a bounded time, and
// compares Admit against the cheapest call the same server answers, the
// health Check, in the same run. Stops by itself; talks only to loopback.
//
//   bazel run -c opt //bench:load -- --seconds=5
//
// Last line: admit_qps=... empty_qps=... ratio=... admit_p99_us=...

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/support/byte_buffer.h"
#include "proto/memgate.grpc.pb.h"
#include "third_party/grpc_protos/health.grpc.pb.h"

ABSL_FLAG(double, seconds, 5, "total measuring time (both calls), 0.5..600");
ABSL_FLAG(int, concurrency, 32, "calls in flight at once");
ABSL_FLAG(int, channels, 2, "client channels (connections) to spread over");
ABSL_FLAG(std::string, server_binary, "service/memgate_server",
          "memgate_server to start (runfiles-relative under bazel run)");
ABSL_FLAG(std::string, only, "",
          "diagnostics: drive only 'admit' or only 'empty' (no ratio)");
ABSL_FLAG(int, attach_port, 0,
          "instead of starting a server, load one already listening on "
          "127.0.0.1:PORT (e.g. under a profiler)");

namespace {

using Clock = std::chrono::steady_clock;

struct Phase {
  uint64_t calls = 0;
  uint64_t errors = 0;
  double seconds = 0;
  std::vector<double> latencies_us;
};

// A server process on a free loopback port, stopped when this goes.
class ServerProcess {
 public:
  explicit ServerProcess(const std::string& binary) {
    int out[2];
    if (pipe(out) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out[1], STDOUT_FILENO);
      close(out[0]);
      close(out[1]);
      execl(binary.c_str(), binary.c_str(), "--listen=127.0.0.1:0",
            "--decision-log=/dev/null", static_cast<char*>(nullptr));
      _exit(127);
    }
    close(out[1]);
    FILE* stream = fdopen(out[0], "r");
    char line[256];
    if (stream != nullptr && fgets(line, sizeof line, stream) != nullptr) {
      const char* colon = strrchr(line, ':');
      if (colon != nullptr) port_ = atoi(colon + 1);
    }
    if (stream != nullptr) fclose(stream);
  }
  ~ServerProcess() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
  }
  int port() const { return port_; }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
};

memgate::v1::AdmitRequest AdmitRequest() {
  memgate::v1::AdmitRequest request;
  memgate::v1::Job& job = *request.mutable_job();
  job.mutable_model()->set_name("llama-3.1-8b");
  job.mutable_accelerator()->set_name("a100-40gb");
  job.mutable_parallel()->set_tensor_parallel(4);
  job.mutable_parallel()->set_pipeline_parallel(2);
  job.mutable_parallel()->set_context_parallel(1);
  job.mutable_training()->set_micro_batch_size(1);
  job.mutable_training()->set_seq_length(8192);
  job.mutable_training()->set_global_batch_size(1024);
  job.set_num_gpus(16);
  return request;
}

// Keeps `concurrency` calls to `method` in flight until `until`; each slot
// reissues its call from its completion callback. Requests go out
// pre-serialized and responses come back unparsed, for both methods alike:
// the client's own protobuf work must not be what is measured (gRPC's qps
// benchmarks use generic clients for the same reason).
Phase Drive(std::vector<std::unique_ptr<grpc::GenericStub>>& stubs,
            const std::string& method, const grpc::ByteBuffer& request,
            int concurrency, double seconds) {
  struct Slot {
    std::unique_ptr<grpc::ClientContext> context;
    grpc::ByteBuffer response;
    Clock::time_point sent;
  };
  const Clock::time_point until =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(seconds));
  std::mutex mu;
  std::condition_variable done_cv;
  int active = concurrency;
  Phase phase;
  phase.latencies_us.reserve(1 << 20);
  std::vector<Slot> slots(concurrency);
  std::function<void(int)> issue = [&](int i) {
    Slot& slot = slots[i];
    slot.context = std::make_unique<grpc::ClientContext>();
    slot.context->set_deadline(std::chrono::system_clock::now() +
                               std::chrono::seconds(5));
    slot.sent = Clock::now();
    stubs[i % stubs.size()]->UnaryCall(
        slot.context.get(), method, grpc::StubOptions(), &request,
        &slot.response, [&, i](grpc::Status status) {
          const Clock::time_point now = Clock::now();
          {
            std::lock_guard<std::mutex> lock(mu);
            ++phase.calls;
            if (!status.ok()) ++phase.errors;
            phase.latencies_us.push_back(
                std::chrono::duration<double, std::micro>(now - slots[i].sent)
                    .count());
          }
          if (now < until) {
            issue(i);
          } else {
            std::lock_guard<std::mutex> lock(mu);
            if (--active == 0) done_cv.notify_all();
          }
        });
  };
  const Clock::time_point begin = Clock::now();
  for (int i = 0; i < concurrency; ++i) issue(i);
  std::unique_lock<std::mutex> lock(mu);
  done_cv.wait(lock, [&] { return active == 0; });
  phase.seconds = std::chrono::duration<double>(Clock::now() - begin).count();
  return phase;
}

grpc::ByteBuffer Serialized(const google::protobuf::Message& message) {
  const std::string bytes = message.SerializeAsString();
  grpc::Slice slice(bytes);
  return grpc::ByteBuffer(&slice, 1);
}

// Before measuring: one typed call of each kind, answers checked, so a
// server that answers wrongly cannot pass as a fast one.
bool ServerAnswersCorrectly(const std::shared_ptr<grpc::Channel>& channel,
                            const memgate::v1::AdmitRequest& admit) {
  grpc::ClientContext admit_context;
  memgate::v1::Decision decision;
  const grpc::Status admitted =
      memgate::v1::MemoryEstimator::NewStub(channel)->Admit(&admit_context,
                                                            admit, &decision);
  grpc::ClientContext health_context;
  grpc::health::v1::HealthCheckResponse health;
  const grpc::Status checked = grpc::health::v1::Health::NewStub(channel)->Check(
      &health_context, grpc::health::v1::HealthCheckRequest(), &health);
  return admitted.ok() && decision.verdict() == memgate::v1::VERDICT_ADMIT &&
         decision.estimate().peak().total_bytes() > 0 && checked.ok() &&
         health.status() == grpc::health::v1::HealthCheckResponse::SERVING;
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  const size_t k = static_cast<size_t>(p * (v.size() - 1));
  std::nth_element(v.begin(), v.begin() + k, v.end());
  return v[k];
}

void Merge(Phase& into, const Phase& from) {
  into.calls += from.calls;
  into.errors += from.errors;
  into.seconds += from.seconds;
  into.latencies_us.insert(into.latencies_us.end(), from.latencies_us.begin(),
                           from.latencies_us.end());
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const double seconds = absl::GetFlag(FLAGS_seconds);
  const int concurrency = absl::GetFlag(FLAGS_concurrency);
  const int channel_count = absl::GetFlag(FLAGS_channels);
  if (!(seconds >= 0.5 && seconds <= 600) || concurrency < 1 ||
      concurrency > 10000 || channel_count < 1 || channel_count > 64) {
    std::fprintf(stderr, "load: --seconds in [0.5, 600], --concurrency in "
                         "[1, 10000], --channels in [1, 64]\n");
    return 2;
  }
  std::unique_ptr<ServerProcess> server;
  int port = absl::GetFlag(FLAGS_attach_port);
  if (port == 0) {
    server = std::make_unique<ServerProcess>(absl::GetFlag(FLAGS_server_binary));
    port = server->port();
  }
  if (port <= 0 || port > 65535) {
    std::fprintf(stderr, "load: could not start %s\n",
                 absl::GetFlag(FLAGS_server_binary).c_str());
    return 1;
  }
  const std::string address = "127.0.0.1:" + std::to_string(port);
  std::vector<std::unique_ptr<grpc::GenericStub>> stubs;
  std::shared_ptr<grpc::Channel> first_channel;
  for (int c = 0; c < channel_count; ++c) {
    grpc::ChannelArguments args;
    args.SetInt("grpc.channel_id", c);  // distinct connections
    auto channel = grpc::CreateCustomChannel(
        address, grpc::InsecureChannelCredentials(), args);
    if (c == 0) first_channel = channel;
    stubs.push_back(std::make_unique<grpc::GenericStub>(channel));
  }
  const memgate::v1::AdmitRequest admit = AdmitRequest();
  if (!ServerAnswersCorrectly(first_channel, admit)) {
    std::fprintf(stderr, "load: the server's answers are wrong\n");
    return 1;
  }
  const grpc::ByteBuffer admit_bytes = Serialized(admit);
  const grpc::ByteBuffer empty_bytes =
      Serialized(grpc::health::v1::HealthCheckRequest());
  const std::string admit_method = "/memgate.v1.MemoryEstimator/Admit";
  const std::string empty_method = "/grpc.health.v1.Health/Check";
  auto run_admit = [&](double s) {
    return Drive(stubs, admit_method, admit_bytes, concurrency, s);
  };
  auto run_empty = [&](double s) {
    return Drive(stubs, empty_method, empty_bytes, concurrency, s);
  };
  const std::string only = absl::GetFlag(FLAGS_only);
  if (!only.empty()) {  // one kind of call, e.g. under a profiler
    const Phase p = only == "admit" ? run_admit(seconds) : run_empty(seconds);
    std::printf("%s_qps=%.0f errors=%llu p99_us=%.0f\n", only.c_str(),
                p.calls / p.seconds, static_cast<unsigned long long>(p.errors),
                Percentile(p.latencies_us, 0.99));
    return p.errors == 0 ? 0 : 1;
  }
  // Warm both paths, then alternate in short rounds so that drift (other
  // processes, frequency changes) hits both alike.
  run_empty(0.5);
  run_admit(0.5);
  Phase admit_total, empty_total;
  const int rounds = 10;
  for (int r = 0; r < rounds; ++r) {
    Merge(empty_total, run_empty(seconds / (2 * rounds)));
    Merge(admit_total, run_admit(seconds / (2 * rounds)));
  }
  const double admit_qps = admit_total.calls / admit_total.seconds;
  const double empty_qps = empty_total.calls / empty_total.seconds;
  std::printf("admit: %llu calls, %llu errors, p50 %.0f us, p99 %.0f us\n",
              static_cast<unsigned long long>(admit_total.calls),
              static_cast<unsigned long long>(admit_total.errors),
              Percentile(admit_total.latencies_us, 0.5),
              Percentile(admit_total.latencies_us, 0.99));
  std::printf("empty: %llu calls, %llu errors, p50 %.0f us, p99 %.0f us\n",
              static_cast<unsigned long long>(empty_total.calls),
              static_cast<unsigned long long>(empty_total.errors),
              Percentile(empty_total.latencies_us, 0.5),
              Percentile(empty_total.latencies_us, 0.99));
  std::printf("admit_qps=%.0f empty_qps=%.0f ratio=%.3f admit_p99_us=%.0f\n",
              admit_qps, empty_qps, admit_qps / empty_qps,
              Percentile(admit_total.latencies_us, 0.99));
  return admit_total.errors + empty_total.errors == 0 ? 0 : 1;
}
