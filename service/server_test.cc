// memgate_server's service in-process: every status code a client can get,
// health, drain on shutdown, TLS, and the decision log.

#include "service/server.h"

#include <atomic>
#include <fstream>
#include <thread>

#include "absl/synchronization/notification.h"
#include "estimator/estimate.h"
#include "google/protobuf/unknown_field_set.h"
#include "google/protobuf/util/json_util.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "proto/decision_log.pb.h"
#include "proto/memgate.grpc.pb.h"
#include "service/status_conversion.h"
#include "tests/subprocess.h"
#include "tests/test_util.h"
#include "third_party/grpc_protos/health.grpc.pb.h"

namespace memgate {
namespace {

// The paper's A100 table: 27.20 GiB (GREEN), 37.58 (YELLOW), 58.33 (RED).
v1::Job Green() { return testing::PaperA100Job(1); }
v1::Job Yellow() { return testing::PaperA100Job(2); }
v1::Job Red() { return testing::PaperA100Job(4); }

// What a newer client's field becomes in this build's message.
google::protobuf::UnknownFieldSet* UnknownFieldsOf(
    google::protobuf::Message& m) {
  return m.GetReflection()->MutableUnknownFields(&m);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class ServerTest : public ::testing::Test {
 protected:
  void Start(ServerConfig config = ServerConfig()) {
    config.listen = "127.0.0.1:0";
    absl::StatusOr<std::unique_ptr<MemgateServer>> server =
        MemgateServer::Start(config);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    channel_ = grpc::CreateChannel(Address(), grpc::InsecureChannelCredentials());
    stub_ = v1::MemoryEstimator::NewStub(channel_);
  }

  std::string Address() const {
    return "127.0.0.1:" + std::to_string(server_->port());
  }

  grpc::Status Admit(const v1::Job& job, v1::Decision* decision,
                     double threshold = 0) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(10));
    v1::AdmitRequest request;
    *request.mutable_job() = job;
    request.set_threshold(threshold);
    return stub_->Admit(&context, request, decision);
  }

  grpc::health::v1::HealthCheckResponse::ServingStatus Health(
      const std::string& service) {
    auto health = grpc::health::v1::Health::NewStub(channel_);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(5));
    grpc::health::v1::HealthCheckRequest request;
    request.set_service(service);
    grpc::health::v1::HealthCheckResponse response;
    const grpc::Status status = health->Check(&context, request, &response);
    if (!status.ok()) return grpc::health::v1::HealthCheckResponse::UNKNOWN;
    return response.status();
  }

  std::unique_ptr<MemgateServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::MemoryEstimator::Stub> stub_;
};

// Every status the service sends is bounded, whatever it quotes: a
// message past a client's metadata limit would arrive as
// RESOURCE_EXHAUSTED, not as the status.
TEST(StatusConversionTest, MessagesAreBoundedAndCodesKept) {
  const grpc::Status s =
      ToGrpcStatus(absl::InvalidArgumentError(std::string(100000, 'y')));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message().size(), kMaxStatusMessageBytes + 3);
  const grpc::Status short_one =
      ToGrpcStatus(absl::NotFoundError("model.name: unknown"));
  EXPECT_EQ(short_one.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(short_one.error_message(), "model.name: unknown");
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok());
}

TEST_F(ServerTest, EstimateIsTheEmbeddedEstimate) {
  Start();
  grpc::ClientContext context;
  v1::EstimateRequest request;
  *request.mutable_job() = Green();
  v1::Estimate response;
  ASSERT_TRUE(stub_->Estimate(&context, request, &response).ok());
  EXPECT_DOUBLE_EQ(response.peak().total_bytes(),
                   EstimateJob(Green())->peak().total_bytes());
  EXPECT_EQ(response.zone(), v1::ZONE_GREEN);
}

TEST_F(ServerTest, PlanIsThePlannersRanking) {
  Start();
  grpc::ClientContext context;
  v1::PlanRequest request;
  request.mutable_model()->set_name("llama-3.1-8b");
  request.mutable_accelerator()->set_name("a100-40gb");
  request.set_num_gpus(16);
  request.set_seq_length(8192);
  request.set_global_batch_size(1024);
  request.set_top_k(3);
  v1::PlanResponse response;
  ASSERT_TRUE(stub_->Plan(&context, request, &response).ok());
  ASSERT_EQ(response.candidates_size(), 3);
  EXPECT_EQ(response.candidates(0).zone(), v1::ZONE_GREEN);
  EXPECT_EQ(response.candidates(0).rank(), 1u);
  EXPECT_EQ(response.notes_size(), 0);

  // A global batch too small for the cluster: the plan says so to a gRPC
  // caller too (PlanResponse.notes).
  grpc::ClientContext starved_context;
  v1::PlanRequest starved = request;
  starved.mutable_model()->set_name("llama-3.1-405b");
  starved.mutable_accelerator()->set_name("h100-80gb");
  starved.set_num_gpus(16384);
  starved.set_seq_length(4096);
  starved.set_global_batch_size(256);
  v1::PlanResponse starved_plan;
  ASSERT_TRUE(stub_->Plan(&starved_context, starved, &starved_plan).ok());
  ASSERT_EQ(starved_plan.notes_size(), 1);
  EXPECT_NE(starved_plan.notes(0).find("A global batch of "),
            std::string::npos)
      << starved_plan.notes(0);

  // A training template reaches the plan: half the optimizer offloaded
  // lowers the first layout's peak.
  grpc::ClientContext offloaded;
  v1::PlanRequest with_template = request;
  v1::TrainingConfig& t = *with_template.mutable_training();
  t.mutable_precision_aware_optimizer();
  t.set_optimizer_offload_fraction(0.5);
  v1::PlanResponse lighter;
  ASSERT_TRUE(stub_->Plan(&offloaded, with_template, &lighter).ok());
  ASSERT_GT(lighter.candidates_size(), 0);
  int same_layout = 0;
  for (const v1::Candidate& c : lighter.candidates()) {
    if (c.megatron_arguments() == response.candidates(0).megatron_arguments()) {
      ++same_layout;
      EXPECT_LT(c.peak_bytes(), response.candidates(0).peak_bytes());
    }
  }
  EXPECT_EQ(same_layout, 1);

  grpc::ClientContext bad;
  request.set_global_batch_size(0);
  EXPECT_EQ(stub_->Plan(&bad, request, &response).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  // A template that sets what the plan searches: INVALID_ARGUMENT, and the
  // server still answers.
  grpc::ClientContext bad_template;
  with_template.mutable_training()->set_micro_batch_size(4);
  grpc::Status refused = stub_->Plan(&bad_template, with_template, &response);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(refused.error_message().find("training.micro_batch_size"),
            std::string::npos)
      << refused.error_message();
  grpc::ClientContext after;
  with_template.mutable_training()->clear_micro_batch_size();
  EXPECT_TRUE(stub_->Plan(&after, with_template, &response).ok());
}

TEST_F(ServerTest, AdmitAnswersASummaryUnlessAskedForDetail) {
  Start();
  v1::Decision summary;
  ASSERT_TRUE(Admit(Green(), &summary).ok());
  EXPECT_EQ(summary.estimate().stages_size(), 0);
  EXPECT_FALSE(summary.estimate().has_job());
  EXPECT_NEAR(summary.estimate().peak_gib(), 27.20, 0.01);
  EXPECT_EQ(summary.estimate().peak().stage(), 0u);
  EXPECT_EQ(summary.estimate().zone(), v1::ZONE_GREEN);

  grpc::ClientContext context;
  v1::AdmitRequest request;
  *request.mutable_job() = Green();
  request.set_detail(v1::DETAIL_FULL);
  v1::Decision full;
  ASSERT_TRUE(stub_->Admit(&context, request, &full).ok());
  EXPECT_EQ(full.estimate().stages_size(), 2);
  EXPECT_EQ(full.estimate().job().model().hidden_size(), 4096u);
  EXPECT_EQ(full.reason(), summary.reason());
}

TEST_F(ServerTest, RefusalsCarrySuggestions) {
  Start();
  v1::Decision d;
  ASSERT_TRUE(Admit(Yellow(), &d).ok());
  EXPECT_GT(d.suggestions_size(), 0);
  EXPECT_EQ(d.min_gpus_that_fit(), 16u);
}

TEST_F(ServerTest, AdmitsGreenRefusesYellowAndRed) {
  Start();
  v1::Decision d;
  ASSERT_TRUE(Admit(Green(), &d).ok());
  EXPECT_EQ(d.verdict(), v1::VERDICT_ADMIT);
  EXPECT_FALSE(d.request_id().empty());  // the server names every decision
  ASSERT_TRUE(Admit(Yellow(), &d).ok());
  EXPECT_EQ(d.verdict(), v1::VERDICT_REFUSE);
  EXPECT_EQ(d.estimate().zone(), v1::ZONE_YELLOW);
  ASSERT_TRUE(Admit(Red(), &d).ok());
  EXPECT_EQ(d.verdict(), v1::VERDICT_REFUSE);
  EXPECT_EQ(d.estimate().zone(), v1::ZONE_RED);
}

TEST_F(ServerTest, YellowPolicyAdmitsWithAWarning) {
  ServerConfig config;
  config.service.admit_yellow = true;
  Start(config);
  v1::Decision d;
  ASSERT_TRUE(Admit(Yellow(), &d).ok());
  EXPECT_EQ(d.verdict(), v1::VERDICT_ADMIT);
  EXPECT_EQ(d.warnings_size(), 1);
  ASSERT_TRUE(Admit(Red(), &d).ok());
  EXPECT_EQ(d.verdict(), v1::VERDICT_REFUSE);
}

TEST_F(ServerTest, InvalidJobIsInvalidArgumentNamingTheField) {
  Start();
  v1::Job job = Green();
  job.mutable_parallel()->set_tensor_parallel(3);
  job.set_num_gpus(12);  // 32 heads are not a multiple of TP 3
  v1::Decision d;
  const grpc::Status status = Admit(job, &d);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("model.num_attention_heads"),
            std::string::npos)
      << status.error_message();
  ASSERT_TRUE(Admit(Green(), &d).ok());  // and it stays up

  // A release string from the wire: its length is bounded before it is
  // read, and a long one is not echoed back.
  job = Green();
  job.mutable_training()->set_megatron_core_version(std::string(4096, '9'));
  const grpc::Status release = Admit(job, &d);
  EXPECT_EQ(release.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(release.error_message().rfind("training.megatron_core_version:", 0),
            0u)
      << release.error_message();
  EXPECT_LT(release.error_message().size(), 200u);
  ASSERT_TRUE(Admit(Green(), &d).ok());

  // Any name from the wire (an unknown model's, GPU's): a long one still
  // comes back as INVALID_ARGUMENT naming the field, its echo bounded.
  for (const bool model : {true, false}) {
    job = Green();
    const std::string name(60000, 'y');
    if (model) {
      job.mutable_model()->set_name(name);
    } else {
      job.mutable_accelerator()->Clear();
      job.mutable_accelerator()->set_name(name);
    }
    const grpc::Status long_name = Admit(job, &d);
    EXPECT_EQ(long_name.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
        << long_name.error_message().substr(0, 200);
    EXPECT_EQ(long_name.error_message().rfind(
                  model ? "model.name:" : "accelerator.name:", 0),
              0u)
        << long_name.error_message().substr(0, 200);
    EXPECT_LT(long_name.error_message().size(), 1000u);
  }
  ASSERT_TRUE(Admit(Green(), &d).ok());
}

// A newer client's field this server does not know (here number 999 of
// ParallelConfig) would be read past and the job answered without it: the
// server refuses the request, naming the field, and stays up.
TEST_F(ServerTest, AFieldThisServerDoesNotKnowIsInvalidArgument) {
  Start();
  v1::Job job = Green();
  UnknownFieldsOf(*job.mutable_parallel())->AddVarint(999, 4);
  v1::Decision d;
  const grpc::Status status = Admit(job, &d);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message().rfind("job.parallel: field 999", 0), 0u)
      << status.error_message();
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(10));
  v1::PlanRequest plan;
  *plan.mutable_model() = Green().model();
  UnknownFieldsOf(*plan.mutable_training())->AddVarint(998, 1);
  v1::PlanResponse response;
  const grpc::Status planned = stub_->Plan(&context, plan, &response);
  EXPECT_EQ(planned.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(planned.error_message().rfind("training: field 998", 0), 0u)
      << planned.error_message();
  ASSERT_TRUE(Admit(Green(), &d).ok());
}

TEST_F(ServerTest, RequestThresholdWithinTheServersBounds) {
  Start();  // default 0.8 within [0.5, 0.9]
  v1::Decision d;
  ASSERT_TRUE(Admit(Yellow(), &d, 0.9).ok());  // 37.58 of 40 is 94%
  EXPECT_EQ(d.verdict(), v1::VERDICT_REFUSE);
  const grpc::Status too_high = Admit(Yellow(), &d, 0.95);
  EXPECT_EQ(too_high.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(too_high.error_message().find("threshold"), std::string::npos);
  ASSERT_TRUE(Admit(Green(), &d, 0.6).ok());  // 27.2 > 24
  EXPECT_EQ(d.verdict(), v1::VERDICT_REFUSE);
}

TEST_F(ServerTest, BadServerOptionsAreRefused) {
  ServerConfig config;
  config.listen = "127.0.0.1:0";
  config.service.default_threshold = 0.95;  // above max 0.9
  EXPECT_FALSE(MemgateServer::Start(config).ok());
  config.service.default_threshold = 0.8;
  config.tls_cert_file = "/nonexistent.pem";
  EXPECT_FALSE(MemgateServer::Start(config).ok());
}

TEST_F(ServerTest, OversizedRequestIsResourceExhausted) {
  Start();
  v1::Job job = Green();
  job.set_name(std::string(200 * 1024, 'x'));
  v1::Decision d;
  EXPECT_EQ(Admit(job, &d).error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_TRUE(Admit(Green(), &d).ok());
}

TEST_F(ServerTest, ExpiredDeadlineIsDeadlineExceeded) {
  Start();
  // A 1 us deadline may or may not beat a local call; one already past
  // always loses, and the server must shrug it off.
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() -
                       std::chrono::milliseconds(1));
  v1::AdmitRequest request;
  *request.mutable_job() = Green();
  v1::Decision d;
  EXPECT_EQ(stub_->Admit(&context, request, &d).error_code(),
            grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_TRUE(Admit(Green(), &d).ok());
}

TEST_F(ServerTest, HealthIsServingUntilShutdown) {
  Start();
  using Response = grpc::health::v1::HealthCheckResponse;
  EXPECT_EQ(Health(""), Response::SERVING);
  EXPECT_EQ(Health("memgate.v1.MemoryEstimator"), Response::SERVING);
  server_->Shutdown(absl::Seconds(1));
  EXPECT_NE(Health(""), Response::SERVING);
}

TEST_F(ServerTest, ShutdownDrainsCallsInFlight) {
  Start();
  constexpr int kCalls = 200;
  std::atomic<int> done{0}, ok{0}, rejected{0}, other{0};
  absl::Notification all_done, some_answered;
  std::atomic<bool> notified{false};
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<v1::AdmitRequest> requests(kCalls);
  std::vector<v1::Decision> decisions(kCalls);
  for (int i = 0; i < kCalls; ++i) {
    contexts.push_back(std::make_unique<grpc::ClientContext>());
    *requests[i].mutable_job() = Green();
    stub_->async()->Admit(contexts[i].get(), &requests[i], &decisions[i],
                          [&, i](grpc::Status s) {
                            if (s.ok() &&
                                decisions[i].verdict() == v1::VERDICT_ADMIT) {
                              ++ok;
                            } else if (s.error_code() ==
                                           grpc::StatusCode::UNAVAILABLE ||
                                       s.error_code() ==
                                           grpc::StatusCode::CANCELLED) {
                              ++rejected;  // arrived after shutdown began
                            } else {
                              ++other;
                            }
                            if (ok >= kCalls / 4 && !notified.exchange(true)) {
                              some_answered.Notify();
                            }
                            if (++done == kCalls) all_done.Notify();
                          });
  }
  // Shut down while the rest are still on their way: every call must end,
  // answered or cleanly turned away, and none may hang or fail otherwise.
  ASSERT_TRUE(some_answered.WaitForNotificationWithTimeout(absl::Seconds(30)));
  server_->Shutdown(absl::Seconds(5));
  ASSERT_TRUE(all_done.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_EQ(other.load(), 0);
  EXPECT_EQ(ok + rejected, kCalls);
  EXPECT_GE(ok.load(), kCalls / 4);
}

std::string TlsFile(const std::string& name) {
  return "tests/testdata/tls/" + name;
}

std::shared_ptr<grpc::ChannelCredentials> ClientTls(bool with_cert) {
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = ReadFile(TlsFile("ca.pem"));
  if (with_cert) {
    options.pem_cert_chain = ReadFile(TlsFile("client.pem"));
    options.pem_private_key = ReadFile(TlsFile("client.key"));
  }
  return grpc::SslCredentials(options);
}

grpc::Status AdmitOver(std::shared_ptr<grpc::Channel> channel) {
  auto stub = v1::MemoryEstimator::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(5));
  v1::AdmitRequest request;
  *request.mutable_job() = Green();
  v1::Decision d;
  return stub->Admit(&context, request, &d);
}

TEST_F(ServerTest, Tls) {
  ServerConfig config;
  config.tls_cert_file = TlsFile("server.pem");
  config.tls_key_file = TlsFile("server.key");
  Start(config);
  EXPECT_TRUE(
      AdmitOver(grpc::CreateChannel(Address(), ClientTls(false))).ok());
  EXPECT_FALSE(AdmitOver(grpc::CreateChannel(
                             Address(), grpc::InsecureChannelCredentials()))
                   .ok());
}

TEST_F(ServerTest, MutualTlsRequiresAClientCertificate) {
  ServerConfig config;
  config.tls_cert_file = TlsFile("server.pem");
  config.tls_key_file = TlsFile("server.key");
  config.tls_client_ca_file = TlsFile("ca.pem");
  Start(config);
  EXPECT_TRUE(AdmitOver(grpc::CreateChannel(Address(), ClientTls(true))).ok());
  EXPECT_FALSE(
      AdmitOver(grpc::CreateChannel(Address(), ClientTls(false))).ok());
}

TEST_F(ServerTest, MutualTlsDecisionsRecordTheClientsIdentity) {
  const std::string path = testing::WriteTempFile("mtls.jsonl", "");
  DecisionLogOptions options;
  options.path = path;
  absl::StatusOr<std::unique_ptr<DecisionLog>> log = DecisionLog::Open(options);
  ASSERT_TRUE(log.ok());
  ServerConfig config;
  config.tls_cert_file = TlsFile("server.pem");
  config.tls_key_file = TlsFile("server.key");
  config.tls_client_ca_file = TlsFile("ca.pem");
  config.service.decision_log = log->get();
  Start(config);
  ASSERT_TRUE(AdmitOver(grpc::CreateChannel(Address(), ClientTls(true))).ok());
  server_->Shutdown(absl::Seconds(1));
  log->reset();
  v1::DecisionLogEntry entry;
  std::string line = ReadFile(path);
  ASSERT_FALSE(line.empty());
  line.pop_back();  // the newline
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(line, &entry).ok())
      << line;
  // tests/testdata/tls/client.pem: CN = memgate test client, no SAN.
  EXPECT_EQ(entry.client_identity(), "memgate test client");
}

TEST_F(ServerTest, DecisionLogHasOneJsonLinePerAdmit) {
  const std::string path = testing::WriteTempFile("decisions.jsonl", "");
  DecisionLogOptions options;
  options.path = path;
  absl::StatusOr<std::unique_ptr<DecisionLog>> log = DecisionLog::Open(options);
  ASSERT_TRUE(log.ok());
  ServerConfig config;
  config.service.decision_log = log->get();
  Start(config);
  v1::Decision d;
  grpc::ClientContext context;
  v1::AdmitRequest request;
  *request.mutable_job() = Yellow();
  request.set_request_id("job-42");
  ASSERT_TRUE(stub_->Admit(&context, request, &d).ok());
  EXPECT_EQ(d.request_id(), "job-42");
  ASSERT_TRUE(Admit(Green(), &d).ok());
  server_->Shutdown(absl::Seconds(1));
  log->reset();  // the writer thread writes what is queued, then stops

  std::istringstream lines(ReadFile(path));
  std::vector<v1::DecisionLogEntry> entries;
  for (std::string line; std::getline(lines, line);) {
    v1::DecisionLogEntry entry;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(line, &entry).ok())
        << line;
    entries.push_back(entry);
  }
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].request_id(), "job-42");
  EXPECT_EQ(entries[0].verdict(), v1::VERDICT_REFUSE);
  EXPECT_EQ(entries[0].zone(), v1::ZONE_YELLOW);
  EXPECT_NEAR(entries[0].peak_gib(), 37.58, 0.01);
  EXPECT_DOUBLE_EQ(entries[0].limit_gib(), 32);
  EXPECT_EQ(entries[0].model(), "llama-3.1-8b");
  EXPECT_EQ(entries[0].tensor_parallel(), 4u);
  EXPECT_EQ(entries[0].micro_batch_size(), 2u);
  EXPECT_FALSE(entries[0].time().empty());
  EXPECT_FALSE(entries[0].reason().empty());
  EXPECT_EQ(entries[1].verdict(), v1::VERDICT_ADMIT);
}

}  // namespace
}  // namespace memgate
