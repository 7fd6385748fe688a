// A real memgate_server under abuse: many concurrent clients, malformed and
// oversized messages, absurd values, expired deadlines, clients vanishing
// mid-call, raw garbage on the port. Every bad call gets the right status,
// healthy calls keep working throughout, and memory settles afterwards.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <map>
#include <string>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/strings/str_join.h"
#include "absl/synchronization/notification.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/generic/generic_stub.h"
#include "gtest/gtest.h"
#include "proto/memgate.grpc.pb.h"
#include "tests/subprocess.h"
#include "tests/test_util.h"
#include "third_party/grpc_protos/health.grpc.pb.h"

namespace memgate {
namespace {

using testing::RunfilePath;
using testing::ServerProcess;

// The paper's first A100 cell: 27.20 GiB of 40, GREEN.
v1::Job Green() {
  return testing::PaperJob("llama-3.1-8b", "a100-40gb", 4, 1, 2, 1, 8, 8192);
}

long RssKib(int pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

class AbuseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<ServerProcess>(std::vector<std::string>{
        RunfilePath("service/memgate_server"), "--listen=127.0.0.1:0",
        "--decision-log=/dev/null"});
    ASSERT_GT(server_->port(), 0);
    channel_ = NewChannel();
  }

  std::shared_ptr<grpc::Channel> NewChannel(int id = 0) {
    grpc::ChannelArguments args;
    args.SetInt("grpc.channel_id", id);  // a connection of its own
    return grpc::CreateCustomChannel(server_->address(),
                                     grpc::InsecureChannelCredentials(), args);
  }

  grpc::Status Admit(const v1::Job& job, v1::Decision* d = nullptr,
                     std::chrono::microseconds timeout =
                         std::chrono::seconds(10)) {
    v1::Decision ignored;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + timeout);
    v1::AdmitRequest request;
    *request.mutable_job() = job;
    return v1::MemoryEstimator::NewStub(channel_)->Admit(
        &context, request, d ? d : &ignored);
  }

  // The server answers health SERVING and admits a good job.
  void ExpectHealthy() {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(10));
    grpc::health::v1::HealthCheckResponse response;
    ASSERT_TRUE(grpc::health::v1::Health::NewStub(channel_)
                    ->Check(&context, {}, &response)
                    .ok());
    EXPECT_EQ(response.status(),
              grpc::health::v1::HealthCheckResponse::SERVING);
    v1::Decision d;
    ASSERT_TRUE(Admit(Green(), &d).ok());
    EXPECT_EQ(d.verdict(), v1::VERDICT_ADMIT);
  }

  std::unique_ptr<ServerProcess> server_;
  std::shared_ptr<grpc::Channel> channel_;
};

TEST_F(AbuseTest, StormOfConcurrentClientsThenMemorySettles) {
  // Warm up (thread pools, arenas, caches), then take the baseline.
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(Admit(Green()).ok());
  const long before = RssKib(server_->pid());
  ASSERT_GT(before, 0);

  constexpr int kClients = 128;
  constexpr int kCallsEach = 30;
  std::atomic<int> ok{0}, invalid{0}, other{0};
  std::mutex mu;
  std::map<std::string, int> other_codes;
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      auto stub = v1::MemoryEstimator::NewStub(NewChannel(c + 1));
      for (int i = 0; i < kCallsEach; ++i) {
        v1::AdmitRequest request;
        *request.mutable_job() = Green();
        if (i % 3 == 1) request.mutable_job()->set_num_gpus(7);  // invalid
        if (i % 3 == 2) request.mutable_job()->mutable_training()->set_micro_batch_size(4);
        grpc::ClientContext context;
        // 128 new connections at once on a loaded 2-core machine (under a
        // sanitizer, beside other tests): wait for the connection instead
        // of failing fast, within a generous deadline.
        context.set_wait_for_ready(true);
        context.set_deadline(std::chrono::system_clock::now() +
                             std::chrono::seconds(60));
        v1::Decision d;
        const grpc::Status s = stub->Admit(&context, request, &d);
        if (s.ok()) {
          ++ok;
        } else if (s.error_code() == grpc::StatusCode::INVALID_ARGUMENT) {
          ++invalid;
        } else {
          ++other;
          std::lock_guard<std::mutex> lock(mu);
          ++other_codes[std::to_string(s.error_code()) + " " +
                        s.error_message()];
        }
      }
    });
  }
  for (std::thread& t : clients) t.join();
  for (const auto& [code, n] : other_codes) {
    ADD_FAILURE() << n << " calls failed with " << code;
  }
  EXPECT_EQ(other.load(), 0);
  EXPECT_EQ(invalid.load(), kClients * kCallsEach / 3);
  EXPECT_EQ(ok.load(), kClients * kCallsEach * 2 / 3);
  ExpectHealthy();

  // Connections gone, memory back near where it was (allocator slack and
  // per-thread caches allowed).
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(Admit(Green()).ok());
  const long after = RssKib(server_->pid());
  std::printf("server RSS: %ld KiB before, %ld KiB after the storm\n", before,
              after);
#ifndef __SANITIZE_ADDRESS__
  EXPECT_LT(after, before + 16 * 1024);
#else
  // AddressSanitizer quarantines freed memory: RSS says nothing here.
  EXPECT_GT(after, 0);
#endif
}

TEST_F(AbuseTest, MalformedBytesAndOversizedMessages) {
  grpc::GenericStub generic(channel_);
  for (const std::string& garbage :
       {std::string("\xff\xff\xff\xff\xff", 5), std::string(1000, '\x0a'),
        std::string("\x0a\x05\x08", 3)}) {
    grpc::Slice slice(garbage);
    grpc::ByteBuffer request(&slice, 1), response;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(10));
    absl::Notification done;
    grpc::Status status;
    generic.UnaryCall(&context, "/memgate.v1.MemoryEstimator/Admit",
                      grpc::StubOptions(), &request, &response,
                      [&](grpc::Status s) {
                        status = s;
                        done.Notify();
                      });
    done.WaitForNotification();
    EXPECT_FALSE(status.ok()) << "garbage of " << garbage.size() << " bytes";
    EXPECT_NE(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  }
  v1::Job big = Green();
  big.set_name(std::string(1 << 20, 'x'));
  EXPECT_EQ(Admit(big).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  ExpectHealthy();
}

TEST_F(AbuseTest, AbsurdValuesAreInvalidArgumentsOrFiniteAnswers) {
  v1::Job zero = Green();
  zero.mutable_parallel()->set_tensor_parallel(0);
  EXPECT_EQ(Admit(zero).error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  v1::Job max = Green();  // every count at 2^32 - 1
  max.set_num_gpus(UINT32_MAX);
  max.mutable_parallel()->set_pipeline_parallel(UINT32_MAX);
  max.mutable_training()->set_seq_length(UINT32_MAX);
  EXPECT_EQ(Admit(max).error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  v1::Job huge = Green();  // valid but absurd: a finite RED estimate
  huge.mutable_parallel()->set_tensor_parallel(1);
  huge.mutable_parallel()->set_pipeline_parallel(1);
  huge.set_num_gpus(UINT32_MAX);
  huge.mutable_training()->set_global_batch_size(0);
  huge.mutable_training()->set_micro_batch_size(UINT32_MAX);
  huge.mutable_training()->set_seq_length(UINT32_MAX - 1);
  v1::Decision d;
  ASSERT_TRUE(Admit(huge, &d).ok());
  EXPECT_EQ(d.verdict(), v1::VERDICT_REFUSE);
  EXPECT_EQ(d.estimate().zone(), v1::ZONE_RED);
  EXPECT_TRUE(std::isfinite(d.estimate().peak_gib()));

  v1::Job unknown_enum = Green();
  unknown_enum.mutable_training()->set_precision(
      static_cast<v1::Precision>(12345));
  EXPECT_EQ(Admit(unknown_enum).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  ExpectHealthy();
}

TEST_F(AbuseTest, TinyDeadlinesAndClientsThatVanishMidCall) {
  for (int i = 0; i < 200; ++i) {
    const grpc::Status s = Admit(Green(), nullptr, std::chrono::microseconds(1));
    EXPECT_TRUE(s.ok() ||
                s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED)
        << s.error_message();
  }
  // Calls started, then cancelled, their channels dropped at once.
  for (int round = 0; round < 20; ++round) {
    auto channel = NewChannel(1000 + round);
    auto stub = v1::MemoryEstimator::NewStub(channel);
    std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
    std::vector<v1::Decision> responses(16);
    v1::AdmitRequest request;
    *request.mutable_job() = Green();
    std::atomic<int> finished{0};
    for (int i = 0; i < 16; ++i) {
      contexts.push_back(std::make_unique<grpc::ClientContext>());
      stub->async()->Admit(contexts.back().get(), &request, &responses[i],
                           [&](grpc::Status) { ++finished; });
    }
    for (auto& c : contexts) c->TryCancel();
    while (finished.load() < 16) std::this_thread::yield();
  }
  // Raw garbage on the port, not even HTTP/2.
  for (int i = 0; i < 20; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(server_->port()));
    inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
      const std::string junk = "GET / HTTP/1.0\r\n\r\n\x00\xff garbage";
      (void)!write(fd, junk.data(), junk.size());
    }
    close(fd);
  }
  ExpectHealthy();
}

// A listener that accepts and never answers: the client's deadline fires,
// and `memgate check` applies its --on-unavailable policy.
TEST(UnresponsiveServerTest, CheckExitsThreeOrFollowsThePolicy) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(fd, 16), 0);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const std::string server = "--server=127.0.0.1:" +
                             std::to_string(ntohs(addr.sin_port));
  const std::vector<std::string> check = {
      RunfilePath("client/memgate"), "check", server, "--timeout=0.5",
      "--model=llama-3.1-8b", "--gpu=a100-40gb", "--gpus=8", "--tp=4",
      "--pp=2", "--seq=8192"};
  testing::RunResult r = testing::Run(check);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("refusing (--on-unavailable=refuse)"),
            std::string::npos)
      << r.err;
  std::vector<std::string> lenient = check;
  lenient.push_back("--on-unavailable=admit");
  r = testing::Run(lenient);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("admitting unchecked"), std::string::npos);
  close(fd);
}

// A server killed while clients are checking: they get exit 3, not a hang.
TEST(DyingServerTest, ChecksInFlightWhenTheServerDiesExitThree) {
  ServerProcess server({RunfilePath("service/memgate_server"),
                        "--listen=127.0.0.1:0", "--decision-log=/dev/null"});
  ASSERT_GT(server.port(), 0);
  std::vector<std::thread> checks;
  std::atomic<int> ok_or_unavailable{0};
  // How each other ending came about (exit code or signal, time, stderr):
  // this test failed rarely in CI with one check past Run's 60 s and no
  // more said, twice before the watchdog and the _exit and once after.
  std::mutex mu;
  std::vector<std::string> others;
  for (int i = 0; i < 8; ++i) {
    checks.emplace_back([&] {
      for (int j = 0; j < 5; ++j) {
        const testing::RunResult r = testing::Run(
            {RunfilePath("client/memgate"), "check",
             "--server=" + server.address(), "--timeout=2",
             "--model=llama-3.1-8b", "--gpu=a100-40gb", "--gpus=8", "--tp=4",
             "--pp=2", "--seq=8192"});
        if (r.exit_code == 0 || r.exit_code == 3) {
          ++ok_or_unavailable;
        } else {
          std::lock_guard<std::mutex> lock(mu);
          others.push_back(testing::Describe(r));
        }
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  server.Kill();
  for (std::thread& t : checks) t.join();
  EXPECT_TRUE(others.empty()) << absl::StrJoin(others, "\n");
  EXPECT_EQ(ok_or_unavailable.load(), 40);
}

}  // namespace
}  // namespace memgate
