// memgate_server against what a hostile client, a heavy client or a broken
// disk does to it (the hardening issue): worst-case plans beside Admit,
// descriptor exhaustion, stalled / full / vanishing decision-log sinks,
// logrotate's SIGHUP, the shutdown grace under load, and a synced log that
// holds every acknowledged decision across a crash. Every server here is a
// real process on 127.0.0.1, started and stopped by its test.

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "grpcpp/create_channel.h"
#include "gtest/gtest.h"
#include "proto/memgate.grpc.pb.h"
#include "tests/subprocess.h"
#include "tests/test_util.h"
#include "third_party/grpc_protos/health.grpc.pb.h"

namespace memgate {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::RunfilePath;
using testing::ServerProcess;
using Clock = std::chrono::steady_clock;

v1::Job Green() {
  return testing::PaperJob("llama-3.1-8b", "a100-40gb", 4, 1, 2, 1, 8, 8192);
}

std::unique_ptr<ServerProcess> StartServer(std::vector<std::string> flags) {
  // A connected client keeps gRPC's shutdown waiting for the whole grace:
  // 1 s instead of the default 5 keeps the suite short (tests may override).
  std::vector<std::string> argv = {RunfilePath("service/memgate_server"),
                                   "--listen=127.0.0.1:0",
                                   "--shutdown-grace=1s"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  return std::make_unique<ServerProcess>(argv);
}

std::shared_ptr<grpc::Channel> Channel(const ServerProcess& server,
                                       int id = 0) {
  grpc::ChannelArguments args;
  args.SetInt("grpc.channel_id", id);  // a connection of its own
  return grpc::CreateCustomChannel(server.address(),
                                   grpc::InsecureChannelCredentials(), args);
}

grpc::Status Admit(const std::shared_ptr<grpc::Channel>& channel,
                   const std::string& request_id = "",
                   milliseconds timeout = milliseconds(5000),
                   v1::Decision* decision = nullptr) {
  v1::Decision ignored;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + timeout);
  v1::AdmitRequest request;
  *request.mutable_job() = Green();
  request.set_request_id(request_id);
  return v1::MemoryEstimator::NewStub(channel)->Admit(
      &context, request, decision ? decision : &ignored);
}

// SERVING, NOT_SERVING, or UNKNOWN when the health service did not answer.
grpc::health::v1::HealthCheckResponse::ServingStatus Health(
    const std::shared_ptr<grpc::Channel>& channel,
    milliseconds timeout = milliseconds(2000)) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + timeout);
  grpc::health::v1::HealthCheckResponse response;
  if (!grpc::health::v1::Health::NewStub(channel)
           ->Check(&context, {}, &response)
           .ok()) {
    return grpc::health::v1::HealthCheckResponse::UNKNOWN;
  }
  return response.status();
}

// Polls `done` every 50 ms for up to `limit`.
template <typename Done>
bool Eventually(Done done, milliseconds limit) {
  const auto until = Clock::now() + limit;
  while (Clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(milliseconds(50));
  }
  return done();
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/" + name;
}

// The largest plan the server accepts (tests/test_util.h's worst
// case narrowed to one micro-batch size): ~2^17 layouts, tens of ms each.
v1::PlanRequest HeavyPlan() { return testing::WorstCasePlanRequest(1); }

TEST(ServerHardeningTest, WorstCasePlansDoNotStarveAdmitOrHealth) {
  std::unique_ptr<ServerProcess> server = StartServer({"--decision-log=/dev/null"});
  ASSERT_GT(server->port(), 0);
  auto admit_channel = Channel(*server, 1);
  ASSERT_TRUE(Admit(admit_channel).ok());

  // An oversized plan is refused at once, before it can queue.
  {
    v1::PlanRequest oversized = HeavyPlan();
    oversized.set_max_micro_batch_size(1024);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + seconds(5));
    v1::PlanResponse response;
    const auto start = Clock::now();
    const grpc::Status s = v1::MemoryEstimator::NewStub(Channel(*server, 2))
                               ->Plan(&context, oversized, &response);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
        << s.error_message();
    EXPECT_LT(Clock::now() - start, milliseconds(1000));
  }

  // Four clients send the heaviest accepted plan back to back (some with
  // deadlines too short to finish) while Admit latency is measured.
  std::atomic<bool> stop{false};
  std::atomic<int> planned{0}, busy{0}, expired{0}, other{0};
  // The first unexpected status, to say what it was if one comes (a CI run
  // once saw 44,322 of them in one run, never reproduced).
  std::mutex first_other_mutex;
  std::string first_other;
  std::vector<std::thread> planners;
  for (int c = 0; c < 4; ++c) {
    planners.emplace_back([&, c] {
      auto stub = v1::MemoryEstimator::NewStub(Channel(*server, 10 + c));
      for (int i = 0; !stop.load(); ++i) {
        grpc::ClientContext context;
        context.set_deadline(std::chrono::system_clock::now() +
                             (i % 3 == 0 ? milliseconds(20) : seconds(10)));
        // A loaded client's connection attempt may fail (seen once in
        // session 50: UNAVAILABLE, "failed to connect to all addresses",
        // on a machine just out of a full CI run); without this the
        // channel then fails every call fast until its backoff ends. The
        // load, not the connection, is what this test makes: wait for the
        // channel, and count a wait past the deadline as expired.
        context.set_wait_for_ready(true);
        v1::PlanResponse response;
        const grpc::Status s = stub->Plan(&context, HeavyPlan(), &response);
        if (s.ok()) ++planned;
        else if (s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) ++busy;
        else if (s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) ++expired;
        else if (++other == 1) {
          std::lock_guard<std::mutex> lock(first_other_mutex);
          first_other = absl::StrCat("code ", s.error_code(), ": ",
                                     s.error_message());
        }
      }
    });
  }
  std::this_thread::sleep_for(milliseconds(300));  // the plans are running
  std::vector<double> admit_ms;
  int health_ok = 0;
  const auto until = Clock::now() + seconds(4);
  while (Clock::now() < until) {
    const auto start = Clock::now();
    ASSERT_TRUE(Admit(admit_channel, "", milliseconds(2000)).ok());
    admit_ms.push_back(
        std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    health_ok += Health(admit_channel, milliseconds(1000)) ==
                 grpc::health::v1::HealthCheckResponse::SERVING;
    std::this_thread::sleep_for(milliseconds(5));
  }
  stop = true;
  for (std::thread& t : planners) t.join();

  std::sort(admit_ms.begin(), admit_ms.end());
  const double p99 = admit_ms[admit_ms.size() * 99 / 100];
  std::printf("Admit under concurrent worst-case plans: %zu calls, p50 %.2f ms, "
              "p99 %.2f ms; plans: %d done, %d refused busy, %d past deadline\n",
              admit_ms.size(), admit_ms[admit_ms.size() / 2], p99,
              planned.load(), busy.load(), expired.load());
  EXPECT_LT(p99, 50.0);
  EXPECT_EQ(health_ok, static_cast<int>(admit_ms.size()));
  EXPECT_GT(planned.load(), 0);
  EXPECT_EQ(other.load(), 0) << "the first: " << first_other;
  EXPECT_EQ(server->Terminate(), 0);
}

// Raw TCP connections that say nothing: each holds a descriptor.
std::vector<int> OpenIdleConnections(int port, int count) {
  std::vector<int> fds;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int i = 0; i < count; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) break;
    if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
      close(fd);
      continue;
    }
    fds.push_back(fd);
  }
  return fds;
}

TEST(ServerHardeningTest, AcceptsAgainAfterDescriptorExhaustionEnds) {
  // 128 descriptors: 300 idle connections exhaust them; gRPC 1.51's
  // listener then stops accepting for good, unless memgate re-creates it.
  std::unique_ptr<ServerProcess> server =
      StartServer({"--decision-log=/dev/null", "--max-open-files=128"});
  ASSERT_GT(server->port(), 0);
  std::vector<int> idle = OpenIdleConnections(server->port(), 300);
  ASSERT_GT(idle.size(), 200u);
  std::this_thread::sleep_for(milliseconds(1500));  // accept4 hits EMFILE
  for (int fd : idle) close(fd);

  auto channel = Channel(*server, 1);
  EXPECT_TRUE(Eventually(
      [&] {
        return Health(channel, milliseconds(500)) ==
               grpc::health::v1::HealthCheckResponse::SERVING;
      },
      seconds(15)))
      << "no new connection accepted after the exhaustion ended";
  EXPECT_TRUE(Admit(channel).ok());
  EXPECT_EQ(kill(server->pid(), 0), 0) << "the server died";
  EXPECT_EQ(server->Terminate(), 0);
}

TEST(ServerHardeningTest, RecoversEvenWhileTheIdleConnectionsStayOpen) {
  // The attacker keeps its sockets: 5 s after the accept failure the old
  // listener and its connections are shut down and a new one serves.
  std::unique_ptr<ServerProcess> server =
      StartServer({"--decision-log=/dev/null", "--max-open-files=128"});
  ASSERT_GT(server->port(), 0);
  std::vector<int> idle = OpenIdleConnections(server->port(), 300);
  ASSERT_GT(idle.size(), 200u);
  auto channel = Channel(*server, 1);
  EXPECT_TRUE(Eventually(
      [&] {
        return Health(channel, milliseconds(500)) ==
               grpc::health::v1::HealthCheckResponse::SERVING;
      },
      seconds(20)));
  for (int fd : idle) close(fd);
  EXPECT_TRUE(Admit(channel).ok());
  EXPECT_EQ(server->Terminate(), 0);
}

TEST(ServerHardeningTest, AStalledLogSinkRefusesDecisionsUntilItDrains) {
  const std::string fifo = TempPath("stalled.fifo");
  unlink(fifo.c_str());
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  // A reader that opens the FIFO and then reads nothing.
  const int reader = open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(reader, 0);
  std::unique_ptr<ServerProcess> server = StartServer(
      {"--decision-log=" + fifo, "--decision-log-queue=65536",
       "--decision-log-wait=200ms"});
  ASSERT_GT(server->port(), 0);
  auto channel = Channel(*server, 1);

  // Fill the pipe (64 KiB) and the queue: decisions then stop being given.
  int given = 0;
  grpc::Status refused;
  for (int i = 0; i < 5000 && refused.ok(); ++i) {
    refused = Admit(channel, "stall-" + std::to_string(i));
    given += refused.ok();
  }
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAVAILABLE)
      << refused.error_message();
  EXPECT_NE(refused.error_message().find("decision log"), std::string::npos);
  EXPECT_TRUE(Eventually(
      [&] {
        return Health(channel) ==
               grpc::health::v1::HealthCheckResponse::NOT_SERVING;
      },
      seconds(5)));

  // The reader catches up: everything given is in the log, and the server
  // serves again.
  std::string drained;
  auto drain = [&] {
    char buffer[65536];
    ssize_t n;
    while ((n = read(reader, buffer, sizeof buffer)) > 0) drained.append(buffer, n);
  };
  EXPECT_TRUE(Eventually(
      [&] {
        drain();
        return Health(channel) == grpc::health::v1::HealthCheckResponse::SERVING;
      },
      seconds(10)));
  ASSERT_TRUE(Admit(channel, "after-drain").ok());
  EXPECT_TRUE(Eventually(
      [&] {
        drain();
        return drained.find("\"after-drain\"") != std::string::npos;
      },
      seconds(5)));
  for (int i = 0; i < given; ++i) {
    EXPECT_NE(drained.find("\"stall-" + std::to_string(i) + "\""),
              std::string::npos)
        << "decision stall-" << i << " was given but is not in the log";
  }
  EXPECT_EQ(server->Terminate(), 0);
  close(reader);
}

TEST(ServerHardeningTest, AFullDiskRefusesDecisionsAndReportsNotServing) {
  for (const char* sync : {"--decision-log-sync=false", "--decision-log-sync"}) {
    std::unique_ptr<ServerProcess> server =
        StartServer({"--decision-log=/dev/full", sync});
    ASSERT_GT(server->port(), 0);
    auto channel = Channel(*server, 1);
    grpc::Status last;
    EXPECT_TRUE(Eventually(
        [&] {
          last = Admit(channel);
          return last.error_code() == grpc::StatusCode::UNAVAILABLE;
        },
        seconds(5)))
        << sync;
    EXPECT_NE(last.error_message().find("No space left"), std::string::npos)
        << last.error_message();
    EXPECT_TRUE(Eventually(
        [&] {
          return Health(channel) ==
                 grpc::health::v1::HealthCheckResponse::NOT_SERVING;
        },
        seconds(5)));
    // It stays up, and stops within the grace (exit 1: lines unwritten).
    const auto start = Clock::now();
    EXPECT_EQ(server->Terminate(), 1) << sync;
    EXPECT_LT(Clock::now() - start, seconds(7));
  }
}

TEST(ServerHardeningTest, SyncedLogHoldsEveryAcknowledgedDecisionAfterACrash) {
  const std::string log = TempPath("synced.jsonl");
  unlink(log.c_str());
  std::unique_ptr<ServerProcess> server =
      StartServer({"--decision-log=" + log, "--decision-log-sync"});
  ASSERT_GT(server->port(), 0);
  std::vector<std::string> acknowledged;
  std::vector<std::thread> clients;
  std::mutex mu;
  for (int c = 0; c < 4; ++c) {
    clients.emplace_back([&, c] {
      auto channel = Channel(*server, c + 1);
      for (int i = 0; i < 50; ++i) {
        const std::string id = "sync-" + std::to_string(c) + "-" + std::to_string(i);
        if (Admit(channel, id).ok()) {
          std::lock_guard<std::mutex> lock(mu);
          acknowledged.push_back(id);
        }
      }
    });
  }
  for (std::thread& t : clients) t.join();
  server->Kill();  // no chance to flush anything
  const std::string text = ReadAll(log);
  EXPECT_EQ(acknowledged.size(), 200u);
  for (const std::string& id : acknowledged) {
    EXPECT_NE(text.find("\"" + id + "\""), std::string::npos)
        << id << " was acknowledged but is not in the log";
  }
}

TEST(ServerHardeningTest, SighupReopensTheLogForLogrotate) {
  const std::string log = TempPath("rotated.jsonl");
  unlink(log.c_str());
  unlink((log + ".1").c_str());
  std::unique_ptr<ServerProcess> server = StartServer({"--decision-log=" + log});
  ASSERT_GT(server->port(), 0);
  auto channel = Channel(*server, 1);
  ASSERT_TRUE(Admit(channel, "before-rotation").ok());
  ASSERT_TRUE(Eventually(
      [&] { return ReadAll(log).find("before-rotation") != std::string::npos; },
      seconds(5)));
  ASSERT_EQ(rename(log.c_str(), (log + ".1").c_str()), 0);
  ASSERT_EQ(kill(server->pid(), SIGHUP), 0);
  // The reopen happens before the next write; give the signal a moment.
  std::this_thread::sleep_for(milliseconds(300));
  ASSERT_TRUE(Admit(channel, "after-rotation").ok());
  EXPECT_TRUE(Eventually(
      [&] { return ReadAll(log).find("after-rotation") != std::string::npos; },
      seconds(5)));
  EXPECT_EQ(ReadAll(log).find("before-rotation"), std::string::npos);
  EXPECT_EQ(ReadAll(log + ".1").find("after-rotation"), std::string::npos);
  EXPECT_EQ(kill(server->pid(), 0), 0) << "SIGHUP killed the server";
  EXPECT_EQ(server->Terminate(), 0);
}

TEST(ServerHardeningTest, ALogReaderThatGoesAwayIsAWriteErrorNotSigpipe) {
  const std::string fifo = TempPath("vanishing.fifo");
  unlink(fifo.c_str());
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const int reader = open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(reader, 0);
  std::unique_ptr<ServerProcess> server = StartServer({"--decision-log=" + fifo});
  ASSERT_GT(server->port(), 0);
  auto channel = Channel(*server, 1);
  ASSERT_TRUE(Admit(channel).ok());
  close(reader);  // like `memgate_server | head -1`
  EXPECT_TRUE(Eventually(
      [&] { return Admit(channel).error_code() == grpc::StatusCode::UNAVAILABLE; },
      seconds(5)));
  EXPECT_EQ(kill(server->pid(), 0), 0) << "SIGPIPE killed the server";
  EXPECT_TRUE(Eventually(
      [&] {
        return Health(channel) ==
               grpc::health::v1::HealthCheckResponse::NOT_SERVING;
      },
      seconds(5)));
  server->Terminate();
}

TEST(ServerHardeningTest, ShutdownGraceIsHonouredUnderLoad) {
  std::unique_ptr<ServerProcess> server = StartServer(
      {"--decision-log=/dev/null", "--shutdown-grace=1s", "--plan-queue=64"});
  ASSERT_GT(server->port(), 0);
  std::atomic<bool> stop{false};
  std::vector<std::thread> load;
  for (int c = 0; c < 6; ++c) {
    load.emplace_back([&, c] {
      auto stub = v1::MemoryEstimator::NewStub(Channel(*server, c + 1));
      while (!stop.load()) {
        grpc::ClientContext context;
        context.set_deadline(std::chrono::system_clock::now() + seconds(5));
        v1::PlanResponse response;
        stub->Plan(&context, HeavyPlan(), &response);
      }
    });
  }
  std::this_thread::sleep_for(milliseconds(500));
  const auto start = Clock::now();
  const int code = server->Terminate(10);
  const double took =
      std::chrono::duration<double>(Clock::now() - start).count();
  stop = true;
  for (std::thread& t : load) t.join();
  std::printf("SIGTERM under load with --shutdown-grace=1s: exit %d after %.2f s\n",
              code, took);
  EXPECT_LT(took, 2.0);
  EXPECT_GE(code, 0) << "killed instead of exiting";
}

TEST(ServerHardeningTest, RequestIdsAreBounded) {
  std::unique_ptr<ServerProcess> server = StartServer({"--decision-log=/dev/null"});
  ASSERT_GT(server->port(), 0);
  auto channel = Channel(*server, 1);
  EXPECT_TRUE(Admit(channel, std::string(128, 'a')).ok());
  for (const std::string& bad :
       {std::string(129, 'a'), std::string("job\n{\"verdict\":\"VERDICT_ADMIT\"}"),
        std::string(1 << 15, 'x')}) {
    const grpc::Status s = Admit(channel, bad);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(s.error_message().find("request_id"), std::string::npos);
  }
  EXPECT_EQ(server->Terminate(), 0);
}

TEST(ServerHardeningTest, StdoutCarriesJsonLinesOnly) {
  std::unique_ptr<ServerProcess> server = StartServer({});
  ASSERT_GT(server->port(), 0);
  auto channel = Channel(*server, 1);
  ASSERT_TRUE(Admit(channel, "on-stdout").ok());
  EXPECT_TRUE(Eventually(
      [&] { return server->Stdout().find("on-stdout") != std::string::npos; },
      seconds(5)));
  EXPECT_EQ(server->Terminate(), 0);
  std::istringstream lines(server->Stdout());
  int count = 0;
  for (std::string line; std::getline(lines, line); ++count) {
    EXPECT_EQ(line.front(), '{') << line;
    EXPECT_EQ(line.back(), '}') << line;
    EXPECT_NE(line.find("\"verdict\":"), std::string::npos) << line;
  }
  EXPECT_EQ(count, 1);
}

TEST(ServerHardeningTest, ATlsKeyThatIsNotTheCertificatesIsNamed) {
  const testing::RunResult r = testing::Run(
      {RunfilePath("service/memgate_server"), "--listen=127.0.0.1:0",
       "--tls-cert=tests/testdata/tls/server.pem",
       "--tls-key=tests/testdata/tls/client.key"},
      30);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--tls-cert / --tls-key"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("cannot listen"), std::string::npos) << r.err;
}

TEST(ServerHardeningTest, ConfigFilesThatAreFifosAreRefusedNotWaitedOn) {
  const std::string fifo = TempPath("job.fifo");
  unlink(fifo.c_str());
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& flag : {"--job=" + fifo, "--model-config=" + fifo}) {
    std::vector<std::string> argv = {RunfilePath("client/memgate"), "check",
                                     flag, "--gpu=a100-40gb", "--gpus=8",
                                     "--seq=8192"};
    const auto start = Clock::now();
    const testing::RunResult r = testing::Run(argv, 10);
    EXPECT_EQ(r.exit_code, 2) << flag << ": " << r.err;
    EXPECT_NE(r.err.find("not a regular file"), std::string::npos) << r.err;
    EXPECT_LT(Clock::now() - start, seconds(5));
  }
}

}  // namespace
}  // namespace memgate
