// memgate_server as a real process on a free 127.0.0.1 port, and the
// `memgate check` binary against it, as a scheduler hook would run it.

#include <fstream>
#include <string>
#include <vector>

#include "grpcpp/create_channel.h"
#include "gtest/gtest.h"
#include "tests/subprocess.h"
#include "third_party/grpc_protos/health.grpc.pb.h"
#include "third_party/grpc_protos/reflection.grpc.pb.h"

namespace memgate {
namespace {

using testing::Run;
using testing::RunfilePath;
using testing::RunResult;
using testing::ServerProcess;

std::vector<std::string> ServerArgs(std::vector<std::string> extra = {}) {
  std::vector<std::string> argv = {RunfilePath("service/memgate_server"),
                                   "--listen=127.0.0.1:0"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

RunResult Check(const std::string& server, std::vector<std::string> args) {
  std::vector<std::string> argv = {RunfilePath("client/memgate"), "check",
                                   "--server=" + server};
  argv.insert(argv.end(), args.begin(), args.end());
  return Run(argv);
}

// (TP, CP, PP, MBS) cells of the paper's A100 table, 8 GPUs, 8k sequence.
std::vector<std::string> PaperCell(const std::string& tp,
                                   const std::string& pp,
                                   const std::string& mbs) {
  return {"--model=llama-3.1-8b", "--gpu=a100-40gb", "--gpus=8",
          "--tp=" + tp, "--pp=" + pp, "--mbs=" + mbs, "--seq=8192"};
}

// Llama-3.1-8B launched as the paper did, on 2 nodes x 8 A100s, TP 4, PP 2.
const std::vector<std::string> kMegatronLaunch = {
    "--gpu=a100-40gb", "--",
    "torchrun", "--nnodes", "2", "--nproc-per-node", "8", "pretrain_gpt.py",
    "--num-layers", "32", "--hidden-size", "4096", "--ffn-hidden-size",
    "14336", "--num-attention-heads", "32", "--group-query-attention",
    "--num-query-groups", "8", "--vocab-size", "128256",
    "--untie-embeddings-and-output-weights", "--swiglu", "--normalization", "RMSNorm", "--disable-bias-linear",
          "--position-embedding-type", "rope", "--hidden-dropout", "0",
          "--attention-dropout", "0", 
    "--tensor-model-parallel-size", "4", "--pipeline-model-parallel-size",
    "2", "--sequence-parallel", "--use-distributed-optimizer",
    "--micro-batch-size", "1", "--global-batch-size", "1024",
    "--seq-length", "8192", "--bf16", "--use-flash-attn", "--lr", "3e-4"};

TEST(ServerProcessTest, HealthAndReflectionForAnyGrpcClient) {
  ServerProcess server(ServerArgs());
  ASSERT_GT(server.port(), 0);
  auto channel = grpc::CreateChannel(server.address(),
                                     grpc::InsecureChannelCredentials());

  auto health = grpc::health::v1::Health::NewStub(channel);
  for (const std::string service : {"", "memgate.v1.MemoryEstimator"}) {
    grpc::ClientContext context;
    grpc::health::v1::HealthCheckRequest request;
    request.set_service(service);
    grpc::health::v1::HealthCheckResponse response;
    ASSERT_TRUE(health->Check(&context, request, &response).ok());
    EXPECT_EQ(response.status(),
              grpc::health::v1::HealthCheckResponse::SERVING);
  }

  auto reflection =
      grpc::reflection::v1alpha::ServerReflection::NewStub(channel);
  grpc::ClientContext context;
  auto stream = reflection->ServerReflectionInfo(&context);
  grpc::reflection::v1alpha::ServerReflectionRequest request;
  request.set_list_services("");
  ASSERT_TRUE(stream->Write(request));
  stream->WritesDone();
  grpc::reflection::v1alpha::ServerReflectionResponse response;
  ASSERT_TRUE(stream->Read(&response));
  std::vector<std::string> services;
  for (const auto& s : response.list_services_response().service()) {
    services.push_back(s.name());
  }
  EXPECT_NE(std::find(services.begin(), services.end(),
                      "memgate.v1.MemoryEstimator"),
            services.end());
  EXPECT_NE(std::find(services.begin(), services.end(),
                      "grpc.health.v1.Health"),
            services.end());
  while (stream->Read(&response)) {
  }
  EXPECT_TRUE(stream->Finish().ok());
}

TEST(ServerProcessTest, CheckExitCodesAgainstARealServer) {
  ServerProcess server(ServerArgs());
  ASSERT_GT(server.port(), 0);
  const RunResult green = Check(server.address(), PaperCell("4", "2", "1"));
  EXPECT_EQ(green.exit_code, 0) << green.out << green.err;
  EXPECT_EQ(green.out.rfind("ADMIT [GREEN] peak 27.20 GiB (stage 0)", 0), 0u)
      << green.out;

  const RunResult yellow = Check(server.address(), PaperCell("4", "2", "2"));
  EXPECT_EQ(yellow.exit_code, 1) << yellow.out << yellow.err;
  EXPECT_EQ(yellow.out.rfind("REFUSE [YELLOW] peak 37.58 GiB", 0), 0u)
      << yellow.out;

  const RunResult red = Check(server.address(), PaperCell("4", "2", "4"));
  EXPECT_EQ(red.exit_code, 1);
  EXPECT_NE(red.out.find("REFUSE [RED]"), std::string::npos);

  const RunResult invalid = Check(server.address(), PaperCell("3", "2", "1"));
  EXPECT_EQ(invalid.exit_code, 2) << invalid.out << invalid.err;
  EXPECT_NE(invalid.err.find("num_gpus"), std::string::npos) << invalid.err;

  const RunResult launch = Check(server.address(), kMegatronLaunch);
  EXPECT_EQ(launch.exit_code, 0) << launch.out << launch.err;
  EXPECT_NE(launch.out.find("on 16 x a100-40gb: TP=4 CP=1 PP=2 DP=2"),
            std::string::npos)
      << launch.out;

  const RunResult json =
      Check(server.address(), {"--model=llama-3.1-8b", "--gpu=a100-40gb",
                               "--gpus=8", "--tp=4", "--pp=2", "--seq=8192",
                               "--format=json", "--request-id=abc"});
  EXPECT_EQ(json.exit_code, 0);
  EXPECT_NE(json.out.find("\"verdict\": \"VERDICT_ADMIT\""), std::string::npos)
      << json.out;
  EXPECT_NE(json.out.find("\"request_id\": \"abc\""), std::string::npos);
}

TEST(ServerProcessTest, PlanThroughTheServer) {
  ServerProcess server(ServerArgs());
  ASSERT_GT(server.port(), 0);
  const RunResult r = testing::Run({RunfilePath("client/memgate"), "plan",
                           "--server=" + server.address(),
                           "--model=llama-3.1-8b", "--gpu=h100-94gb",
                           "--gpus=16", "--seq=8192", "--gbs=1024", "--top=2",
                           "--format=json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"rank\": 2"), std::string::npos) << r.out;
}

// Where nothing is GREEN, the note that says how many GPUs would do comes
// through the server too, the same as the embedded plan's, its doublings
// planned by the server within one --timeout.
TEST(ServerProcessTest, HowManyGpusWouldDoThroughTheServer) {
  ServerProcess server(ServerArgs());
  ASSERT_GT(server.port(), 0);
  const std::vector<std::string> plan = {
      RunfilePath("client/memgate"), "plan", "--model=llama-3.1-405b",
      "--gpu=a100-40gb", "--gpus=8", "--seq=8192", "--gbs=64", "--top=1"};
  std::vector<std::string> remote = plan;
  remote.push_back("--server=" + server.address());
  remote.push_back("--timeout=30");
  const RunResult through = testing::Run(remote);
  const RunResult embedded = testing::Run(plan);
  ASSERT_EQ(through.exit_code, 0) << through.err;
  ASSERT_EQ(embedded.exit_code, 0) << embedded.err;
  const std::string lead = "memgate plan: note: nothing is GREEN on 8 GPUs; ";
  const size_t at = through.err.find(lead);
  ASSERT_NE(at, std::string::npos) << through.err;
  const std::string note =
      through.err.substr(at, through.err.find('\n', at) - at);
  EXPECT_NE(note.find("the first doubling where a layout is GREEN is "),
            std::string::npos)
      << note;
  EXPECT_NE(embedded.err.find(note), std::string::npos)
      << embedded.err << "\n" << note;
}

TEST(ServerProcessTest, NothingListeningIsExitThreeOrThePolicy) {
  int port = 0;
  {
    ServerProcess server(ServerArgs());  // find a port, then free it
    port = server.port();
    ASSERT_EQ(server.Terminate(), 0);
  }
  const std::string address = "127.0.0.1:" + std::to_string(port);
  const RunResult refused = Check(address, PaperCell("4", "2", "1"));
  EXPECT_EQ(refused.exit_code, 3) << refused.err;
  EXPECT_NE(refused.err.find("--on-unavailable=refuse"), std::string::npos)
      << refused.err;

  std::vector<std::string> admit = PaperCell("4", "2", "1");
  admit.push_back("--on-unavailable=admit");
  const RunResult admitted = Check(address, admit);
  EXPECT_EQ(admitted.exit_code, 0) << admitted.err;
  EXPECT_NE(admitted.err.find("admitting unchecked"), std::string::npos);

  // Bad input is still bad input, whatever the service's state: a flag
  // refused as it is read, and a job whose fields break a rule, which only
  // the local classification of a job the service did not answer finds.
  const RunResult invalid = Check(address, PaperCell("0", "2", "1"));
  EXPECT_EQ(invalid.exit_code, 2);
  const RunResult broken = Check(address, PaperCell("3", "2", "1"));
  EXPECT_EQ(broken.exit_code, 2) << broken.err;
  EXPECT_NE(broken.err.find("num_gpus"), std::string::npos) << broken.err;
}

TEST(ServerProcessTest, SigtermStopsCleanly) {
  ServerProcess server(ServerArgs());
  ASSERT_GT(server.port(), 0);
  EXPECT_EQ(Check(server.address(), PaperCell("4", "2", "1")).exit_code, 0);
  EXPECT_EQ(server.Terminate(), 0);
  EXPECT_EQ(Check(server.address(), PaperCell("4", "2", "1")).exit_code, 3);
}

TEST(ServerProcessTest, YellowPolicyAndThresholdFlags) {
  ServerProcess server(ServerArgs({"--yellow=admit"}));
  ASSERT_GT(server.port(), 0);
  const RunResult yellow = Check(server.address(), PaperCell("4", "2", "2"));
  EXPECT_EQ(yellow.exit_code, 0) << yellow.out;
  EXPECT_NE(yellow.out.find("warning:"), std::string::npos) << yellow.out;

  std::vector<std::string> too_lax = PaperCell("4", "2", "1");
  too_lax.push_back("--threshold=0.99");  // above the server's 0.9
  const RunResult r = Check(server.address(), too_lax);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("threshold"), std::string::npos);
}

TEST(ServerProcessTest, DecisionLogFile) {
  const std::string log = testing::WriteTempFile("audit.jsonl", "");
  {
    ServerProcess server(ServerArgs({"--decision-log=" + log}));
    ASSERT_GT(server.port(), 0);
    Check(server.address(), PaperCell("4", "2", "2"));
    EXPECT_EQ(server.Terminate(), 0);
  }
  std::ifstream in(log);
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  EXPECT_NE(line.find("\"verdict\":\"VERDICT_REFUSE\""), std::string::npos)
      << line;
  EXPECT_NE(line.find("\"zone\":\"ZONE_YELLOW\""), std::string::npos);
  EXPECT_FALSE(std::getline(in, line)) << "one line per decision";
}

TEST(ServerProcessTest, BadFlagsFailFast) {
  for (const char* bad :
       {"--yellow=maybe", "--threshold=0.95", "--listen=256.1.1.1:1",
        "--tls_cert=/nonexistent.pem", "--max_message_bytes=2048"}) {
    const RunResult r = testing::Run(ServerArgs({bad}), 30);
    EXPECT_NE(r.exit_code, 0) << bad;
    EXPECT_FALSE(r.err.empty()) << bad;
  }
  // Below what clients send, a request could be refused for its size.
  const RunResult small =
      testing::Run(ServerArgs({"--max_message_bytes=65535"}), 30);
  EXPECT_NE(small.exit_code, 0);
  EXPECT_NE(small.err.find("--max_message_bytes: must be at least 65536"),
            std::string::npos)
      << small.err;
}

}  // namespace
}  // namespace memgate
