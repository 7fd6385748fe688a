// `memgate estimate` end to end: the real binary, its output and exit codes.

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "estimator/units.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "proto/memgate.pb.h"
#include "tests/subprocess.h"

namespace memgate {
namespace {

using testing::Run;
using testing::RunResult;

RunResult Memgate(std::vector<std::string> args) {
  args.insert(args.begin(), testing::RunfilePath("client/memgate"));
  return Run(args);
}

const std::vector<std::string> kPaperCell = {
    "estimate", "--model=llama-3.1-8b", "--gpu=a100-40gb", "--gpus=8",
    "--tp=4",   "--pp=2",               "--seq=8192"};

std::vector<std::string> With(std::vector<std::string> base,
                              const std::string& extra) {
  base.push_back(extra);
  return base;
}

TEST(CliEstimateTest, TextShowsStagesPeakAndZone) {
  const RunResult r = Memgate(kPaperCell);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("stage"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("activations"), std::string::npos);
  EXPECT_NE(r.out.find("peak: 27.20 GiB (stage 0) = 68.0% of 40.00 GiB -> "
                       "GREEN"),
            std::string::npos)
      << r.out;
  EXPECT_TRUE(r.err.empty()) << r.err;
}

TEST(CliEstimateTest, JsonIsTheEstimateMessage) {
  const RunResult r = Memgate(With(kPaperCell, "--format=json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  v1::Estimate e;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(r.out, &e).ok())
      << r.out;
  EXPECT_NEAR(e.peak().total_bytes() / kBytesPerGiB, 27.20, 0.01);
  EXPECT_EQ(e.zone(), v1::ZONE_GREEN);
  EXPECT_EQ(e.stages_size(), 2);
  // Proto field names, enum names: what scripts grep for.
  EXPECT_NE(r.out.find("\"total_bytes\""), std::string::npos);
  EXPECT_NE(r.out.find("\"zone\": \"ZONE_GREEN\""), std::string::npos);
}

TEST(CliEstimateTest, RedZoneIsStillASuccessfulEstimate) {
  const RunResult r = Memgate(With(kPaperCell, "--mbs=4"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("58.33 GiB"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("RED"), std::string::npos);
}

TEST(CliEstimateTest, ExplicitDimensionsAndGpuMemory) {
  const RunResult r = Memgate(
      {"estimate", "--layers=32", "--hidden=4096", "--ffn-hidden=14336",
       "--heads=32", "--kv-heads=8", "--vocab=128256", "--gpu-memory-gib=40",
       "--gpus=8", "--tp=4", "--pp=2", "--seq=8192"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("peak: 27.20 GiB"), std::string::npos) << r.out;
}

// Llama-3-8B's Hugging Face config.json with `kv_heads` key-value heads,
// written to a temporary `file`; its path.
std::string Llama8BConfigFile(const std::string& file, int kv_heads) {
  return testing::WriteTempFile(
      file, absl::StrCat(R"({"model_type": "llama", "hidden_size": 4096,
          "num_hidden_layers": 32, "num_attention_heads": 32,
          "num_key_value_heads": )",
                         kv_heads, R"(, "intermediate_size": 14336,
          "vocab_size": 128256, "rope_theta": 500000.0})"));
}

TEST(CliEstimateTest, HuggingFaceConfig) {
  const std::string path = Llama8BConfigFile("config.json", 8);
  const RunResult r =
      Memgate({"estimate", "--model-config=" + path, "--gpu=a100-40gb",
               "--gpus=8", "--tp=4", "--pp=2", "--seq=8192"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("peak: 27.20 GiB"), std::string::npos) << r.out;
}

// A config's model that breaks a rule is named by the config's keys (the
// user wrote the file, not --heads), the file's path beside them.
TEST(CliEstimateTest, AConfigsBadModelNamesTheConfigsKeys) {
  const std::string path = Llama8BConfigFile("bad_kv_heads.json", 5);
  const RunResult r =
      Memgate({"estimate", "--model-config=" + path, "--gpu=a100-40gb",
               "--gpus=8", "--seq=8192"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("model.num_attention_heads (num_attention_heads in " +
                       path + "): must be a multiple of "
                       "model.num_query_groups (num_key_value_heads) = 5"),
            std::string::npos)
      << r.err;
}

struct BadInput {
  std::vector<std::string> args;
  std::string names;  // the flag or field the one-line error must name
};

TEST(CliEstimateTest, BadInputExitsTwoNamingTheFlag) {
  const std::vector<BadInput> cases = {
      {With(kPaperCell, "--tp=0"), "--tp"},
      {With(kPaperCell, "--tp=three"), "--tp"},
      {With(kPaperCell, "--mbs=-1"), "--mbs"},
      {With(kPaperCell, "--gpus=99999999999"), "--gpus"},
      {With(kPaperCell, "--gpus=12"), "--gpus"},
      {With(With(kPaperCell, "--pp=3"), "--gpus=24"), "pipeline_parallel"},
      {With(With(kPaperCell, "--cp=3"), "--gpus=24"), "--seq"},
      {With(With(kPaperCell, "--gbs=1023"), "--gpus=16"), "--gbs"},
      {With(kPaperCell, "--format=yaml"), "--format"},
      {With(kPaperCell, "--threshold=1.5"), "--threshold"},
      {With(kPaperCell, "--gpu-memory-gib=-3"), "--gpu-memory-gib"},
      {With(kPaperCell, "--model=gpt-9"), "--model"},
      {With(kPaperCell, "--gpu=tpu-v5"), "--gpu"},
      {With(kPaperCell, "--model-config=/nonexistent.json"), "--model-config"},
      {With(kPaperCell, "--precision=fp8"), "--precision"},
      {With(kPaperCell, "--bogus=1"), "--bogus"},
      {With(kPaperCell, "--heads=30"), "num_attention_heads = 30"},
      {{"estimate", "--model=llama-3.1-8b", "--gpu=a100-40gb", "--gpus=8"},
       "--seq"},
      {{"estimate", "--model=llama-3.1-8b", "--gpus=8", "--seq=8192"},
       "--gpu"},
      {{"estimate", "--gpu=a100-40gb", "--gpus=8", "--seq=8192"}, "--model"},
      {{"estimate", "--layers=32", "--gpu=a100-40gb", "--gpus=8",
        "--seq=8192"},
       "--hidden"},
  };
  for (const BadInput& c : cases) {
    const RunResult r = Memgate(c.args);
    std::string joined;
    for (const std::string& a : c.args) joined += a + " ";
    EXPECT_EQ(r.exit_code, 2) << joined << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find(c.names), std::string::npos)
        << joined << "\nstderr: " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1)
        << "one line: " << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
}

TEST(CliEstimateTest, HelpDocumentsEveryFlag) {
  const RunResult r = Memgate({"estimate", "--help"});
  ASSERT_EQ(r.exit_code, 0);
  for (const char* flag :
       {"--model=", "--model-config=", "--layers=", "--hidden=",
        "--ffn-hidden=", "--heads=", "--kv-heads=", "--vocab=",
        "--tie-embeddings", "--gpu=", "--gpu-memory-gib=", "--gpus-per-node=",
        "--gpus=", "--tp=", "--cp=", "--pp=", "--dp=", "--mbs=", "--seq=",
        "--gbs=", "--sequence-parallel", "--distributed-optimizer",
        "--precision=", "--format=", "--threshold="}) {
    EXPECT_NE(r.out.find(flag), std::string::npos) << flag;
  }
}

TEST(CliEstimateTest, UnknownCommandAndNoCommandExitTwo) {
  EXPECT_EQ(Memgate({"frobnicate"}).exit_code, 2);
  EXPECT_EQ(Memgate({}).exit_code, 2);
  const RunResult help = Memgate({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("estimate"), std::string::npos);
}

}  // namespace
}  // namespace memgate
