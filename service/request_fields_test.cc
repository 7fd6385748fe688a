// Every field of the service's EstimateRequest and AdmitRequest (listed
// from their descriptors, so a field added without a row fails) has a
// stated effect, checked against a live server on 127.0.0.1: the job is
// what is estimated (its own fields are classified one by one in
// estimator/job_fields_test.cc), the threshold moves the zone and the
// verdict but never the estimate, the request id is echoed and nothing
// else, and the detail changes what an answer carries, not what it
// decides. A request field the server read past would be a setting a
// client believes it sent and the answer ignored; one that moved the
// estimate while said to steer only would be a silent change of the
// number an admission rests on. PlanRequest's fields are classified in
// planner/plan_request_fields_test.cc.

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "estimator/estimate.h"
#include "google/protobuf/descriptor.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "proto/memgate.grpc.pb.h"
#include "service/server.h"
#include "tests/test_util.h"

namespace memgate {
namespace {

// The paper's A100 table: 27.20 GiB (GREEN under 0.8 x 40 GB) and 37.58
// (YELLOW); whether each is GREEN changes with the threshold alone.
v1::Job Green() { return testing::PaperA100Job(1); }
v1::Job Yellow() { return testing::PaperA100Job(2); }

class Server {
 public:
  Server() {
    ServerConfig config;
    config.listen = "127.0.0.1:0";
    absl::StatusOr<std::unique_ptr<MemgateServer>> server =
        MemgateServer::Start(config);
    EXPECT_TRUE(server.ok()) << server.status();
    if (!server.ok()) return;
    server_ = *std::move(server);
    stub_ = v1::MemoryEstimator::NewStub(
        grpc::CreateChannel("127.0.0.1:" + std::to_string(server_->port()),
                            grpc::InsecureChannelCredentials()));
  }
  ~Server() {
    if (server_) server_->Shutdown(absl::Seconds(1));
  }

  v1::Estimate Estimate(const v1::EstimateRequest& request) {
    v1::Estimate response;
    grpc::ClientContext context;
    context.set_deadline(Deadline());
    const grpc::Status status = stub_->Estimate(&context, request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return response;
  }

  v1::Decision Admit(const v1::AdmitRequest& request) {
    v1::Decision response;
    grpc::ClientContext context;
    context.set_deadline(Deadline());
    const grpc::Status status = stub_->Admit(&context, request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return response;
  }

  bool started() const { return server_ != nullptr; }

 private:
  static std::chrono::system_clock::time_point Deadline() {
    return std::chrono::system_clock::now() + std::chrono::seconds(10);
  }

  std::unique_ptr<MemgateServer> server_;
  std::unique_ptr<v1::MemoryEstimator::Stub> stub_;
};

double EmbeddedPeak(const v1::Job& job) {
  absl::StatusOr<v1::Estimate> estimate = EstimateJob(job);
  EXPECT_TRUE(estimate.ok()) << estimate.status();
  return estimate.ok() ? estimate->peak().total_bytes() : -1;
}

// One row a field: the claim about it, checked against the server.
using FieldCheck = std::function<void(Server&)>;

// The fields of `descriptor` without a row, and the rows without a field.
void ExpectEveryFieldHasARow(const google::protobuf::Descriptor& descriptor,
                             const std::map<std::string, FieldCheck>& rows) {
  std::set<std::string> fields;
  for (int i = 0; i < descriptor.field_count(); ++i) {
    const std::string name = descriptor.field(i)->name();
    fields.insert(name);
    EXPECT_TRUE(rows.count(name))
        << descriptor.full_name() << "." << name
        << " has no row: say what it does to the answer, and check it";
  }
  for (const auto& [name, check] : rows) {
    EXPECT_TRUE(fields.count(name))
        << "a row for " << descriptor.full_name() << "." << name
        << ", which the message no longer has";
  }
}

std::map<std::string, FieldCheck> EstimateRequestRows() {
  return {
      // What is estimated: the answer is the embedded estimate of the job
      // sent, and another job is another number.
      {"job",
       [](Server& server) {
         v1::EstimateRequest request;
         *request.mutable_job() = Green();
         const v1::Estimate green = server.Estimate(request);
         *request.mutable_job() = Yellow();
         const v1::Estimate yellow = server.Estimate(request);
         EXPECT_DOUBLE_EQ(green.peak().total_bytes(), EmbeddedPeak(Green()));
         EXPECT_DOUBLE_EQ(yellow.peak().total_bytes(), EmbeddedPeak(Yellow()));
         EXPECT_NE(green.peak().total_bytes(), yellow.peak().total_bytes());
       }},
      // Moves the zone, never the estimate: 27.20 GiB of 40 GB is GREEN
      // under 0.8 and not under 0.6.
      {"threshold",
       [](Server& server) {
         v1::EstimateRequest request;
         *request.mutable_job() = Green();
         const v1::Estimate by_default = server.Estimate(request);
         request.set_threshold(0.6);
         const v1::Estimate strict = server.Estimate(request);
         EXPECT_EQ(by_default.zone(), v1::ZONE_GREEN);
         EXPECT_NE(strict.zone(), v1::ZONE_GREEN);
         EXPECT_DOUBLE_EQ(strict.peak().total_bytes(),
                          by_default.peak().total_bytes());
         EXPECT_EQ(strict.stages_size(), by_default.stages_size());
       }},
  };
}

std::map<std::string, FieldCheck> AdmitRequestRows() {
  return {
      // What is decided on: the decision's estimate is the job's, and a job
      // that fits is admitted where one that does not is refused.
      {"job",
       [](Server& server) {
         v1::AdmitRequest request;
         *request.mutable_job() = Green();
         const v1::Decision green = server.Admit(request);
         *request.mutable_job() = Yellow();
         const v1::Decision yellow = server.Admit(request);
         EXPECT_EQ(green.verdict(), v1::VERDICT_ADMIT);
         EXPECT_EQ(yellow.verdict(), v1::VERDICT_REFUSE);
         EXPECT_DOUBLE_EQ(green.estimate().peak().total_bytes(),
                          EmbeddedPeak(Green()));
         EXPECT_DOUBLE_EQ(yellow.estimate().peak().total_bytes(),
                          EmbeddedPeak(Yellow()));
       }},
      // Moves the verdict, never the estimate.
      {"threshold",
       [](Server& server) {
         v1::AdmitRequest request;
         *request.mutable_job() = Green();
         const v1::Decision by_default = server.Admit(request);
         request.set_threshold(0.6);
         const v1::Decision strict = server.Admit(request);
         EXPECT_EQ(by_default.verdict(), v1::VERDICT_ADMIT);
         EXPECT_EQ(strict.verdict(), v1::VERDICT_REFUSE);
         EXPECT_DOUBLE_EQ(strict.estimate().peak().total_bytes(),
                          by_default.estimate().peak().total_bytes());
       }},
      // Echoed, and nothing else: the same verdict, reason and estimate.
      {"request_id",
       [](Server& server) {
         v1::AdmitRequest request;
         *request.mutable_job() = Yellow();
         const v1::Decision unnamed = server.Admit(request);
         request.set_request_id("job-7");
         const v1::Decision named = server.Admit(request);
         EXPECT_EQ(named.request_id(), "job-7");
         EXPECT_NE(unnamed.request_id(), "job-7");
         EXPECT_EQ(named.verdict(), unnamed.verdict());
         EXPECT_EQ(named.reason(), unnamed.reason());
         EXPECT_EQ(named.suggestions_size(), unnamed.suggestions_size());
         EXPECT_DOUBLE_EQ(named.estimate().peak().total_bytes(),
                          unnamed.estimate().peak().total_bytes());
       }},
      // What the answer carries (every stage and the resolved job), not
      // what it decides.
      {"detail",
       [](Server& server) {
         v1::AdmitRequest request;
         *request.mutable_job() = Yellow();
         const v1::Decision summary = server.Admit(request);
         request.set_detail(v1::DETAIL_FULL);
         const v1::Decision full = server.Admit(request);
         EXPECT_EQ(summary.estimate().stages_size(), 0);
         EXPECT_GT(full.estimate().stages_size(), 0);
         EXPECT_TRUE(full.estimate().has_job());
         EXPECT_EQ(full.verdict(), summary.verdict());
         EXPECT_EQ(full.reason(), summary.reason());
         EXPECT_EQ(full.estimate().zone(), summary.estimate().zone());
         EXPECT_DOUBLE_EQ(full.estimate().peak().total_bytes(),
                          summary.estimate().peak().total_bytes());
       }},
  };
}

TEST(RequestFieldsTest, EveryEstimateRequestFieldHasACheckedEffect) {
  const std::map<std::string, FieldCheck> rows = EstimateRequestRows();
  ExpectEveryFieldHasARow(*v1::EstimateRequest::descriptor(), rows);
  Server server;
  ASSERT_TRUE(server.started());
  for (const auto& [name, check] : rows) {
    SCOPED_TRACE("EstimateRequest." + name);
    check(server);
  }
}

TEST(RequestFieldsTest, EveryAdmitRequestFieldHasACheckedEffect) {
  const std::map<std::string, FieldCheck> rows = AdmitRequestRows();
  ExpectEveryFieldHasARow(*v1::AdmitRequest::descriptor(), rows);
  Server server;
  ASSERT_TRUE(server.started());
  for (const auto& [name, check] : rows) {
    SCOPED_TRACE("AdmitRequest." + name);
    check(server);
  }
}

}  // namespace
}  // namespace memgate
