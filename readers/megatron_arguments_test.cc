#include "readers/megatron_arguments.h"

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "readers/megatron_args.h"

namespace memgate {
namespace {

// A Llama launch the way Megatron's own examples write one, every
// architecture switch explicit.
std::vector<std::string> LlamaLaunch() {
  return {"torchrun", "--nproc-per-node", "8", "pretrain_gpt.py",
          "--num-layers", "32", "--hidden-size", "4096",
          "--ffn-hidden-size", "14336", "--num-attention-heads", "32",
          "--group-query-attention", "--num-query-groups", "8",
          "--vocab-size", "128256", "--untie-embeddings-and-output-weights",
          "--swiglu", "--normalization", "RMSNorm", "--disable-bias-linear",
          "--position-embedding-type", "rope", "--hidden-dropout", "0",
          "--attention-dropout", "0", "--tensor-model-parallel-size", "4",
          "--pipeline-model-parallel-size", "2", "--sequence-parallel",
          "--use-distributed-optimizer", "--micro-batch-size", "1",
          "--global-batch-size", "1024", "--seq-length", "8192", "--bf16"};
}

TEST(MegatronArgumentsTest, TheDocumentIsGeneratedFromTheTable) {
  std::ifstream in("docs/megatron-arguments.md");
  ASSERT_TRUE(in) << "docs/megatron-arguments.md is missing";
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), MegatronArgumentsMarkdown())
      << "regenerate: bazel run //readers:megatron_arguments_doc > "
         "docs/megatron-arguments.md";
}

TEST(MegatronArgumentsTest, NamesAreUniqueAndFoundBothSpellings) {
  std::set<std::string> seen;
  for (const MegatronArgument& a : MegatronMemoryArguments()) {
    EXPECT_TRUE(seen.insert(a.name).second) << a.name;
    EXPECT_EQ(FindMegatronArgument(a.name), &a);
    std::string underscored = a.name;
    for (char& c : underscored) c = c == '-' ? '_' : c;
    EXPECT_EQ(FindMegatronArgument(underscored), &a);
  }
}

// Every refused argument, added to a launch that is otherwise fine, makes
// the launch invalid with an error naming it: none is read past.
TEST(MegatronArgumentsTest, EveryRefusedArgumentIsRefusedByName) {
  ASSERT_TRUE(ParseMegatronLaunch(LlamaLaunch(), nullptr).ok());
  int refused = 0;
  for (const MegatronArgument& a : MegatronMemoryArguments()) {
    if (a.handling != Handling::kRefused) continue;
    std::vector<std::string> argv = LlamaLaunch();
    argv.push_back(std::string("--") + a.name);
    if (a.takes_value) argv.push_back("2");
    absl::StatusOr<MegatronLaunch> parsed = ParseMegatronLaunch(argv, nullptr);
    ASSERT_FALSE(parsed.ok()) << a.name << " was read past";
    EXPECT_NE(parsed.status().message().find(std::string("--") + a.name),
              std::string::npos)
        << parsed.status();
    ++refused;
  }
  EXPECT_GT(refused, 20);
}

// Values of partly modelled arguments that memgate does not model are
// refused by name too.
TEST(MegatronArgumentsTest, UnmodelledValuesAreRefusedByName) {
  const std::vector<std::vector<std::string>> cases = {
      {"--normalization", "NoNorm"},
      {"--position-embedding-type", "learned_absolute",
       "--no-clone-scatter-output-in-embedding"},
      {"--position-embedding-type", "learned_absolute",
       "--disable-clone-scatter-output-in-embedding"},
      {"--position-embedding-type", "relative"},
      {"--main-grads-dtype", "bf16"},
      {"--exp-avg-dtype", "fp16"},
      {"--exp-avg-sq-dtype", "fp8"},
      {"--main-params-dtype", "fp16"},
      {"--context-parallel-size", "2", "--cp-comm-type", "allgather"},
      {"--context-parallel-size", "2", "--cp-comm-type", "ring"},
      {"--context-parallel-size", "2", "--cp-comm-type", "p2p", "a2a"},
      {"--cp-comm-type", "a2a+p2p"},
      {"--optimizer", "hybridadam"},
      {"--attention-backend", "ring"},
      {"--transformer-impl", "inference_optimized"},
      {"--recompute-granularity", "selective", "--recompute-modules",
       "core_attn", "gdn_norm_out"},
      {"--num-experts", "8", "--moe-router-dtype", "fp64"},
      {"--num-experts", "8", "--moe-layer-freq", "[1]*31"},
      {"--num-experts", "8", "--moe-token-dispatcher-type", "deepep"},
      {"--expert-model-parallel-size", "2"},
      {"--multi-latent-attention", "--group-query-attention"},
      {"--recompute-granularity", "full"},
      {"--recompute-granularity", "full", "--recompute-method", "uniform"},
      {"--recompute-num-layers", "2"},
      {"--fp16", "--accumulate-allreduce-grads-in-fp32"},
      {"--optimizer-cpu-offload"},
      {"--use-precision-aware-optimizer", "--main-params-dtype", "bf16"},
      {"--use-precision-aware-optimizer", "--optimizer-cpu-offload",
       "--optimizer-offload-fraction", "1.5"},
      {"--fp8-format", "e5m2"},
      {"--fp8-format", "e4m3", "--fp8-recipe", "custom"},
      {"--fp8-param-gather"},
      {"--use-megatron-fsdp"},
      {"--use-megatron-fsdp", "--data-parallel-sharding-strategy", "zero9"},
      {"--data-parallel-sharding-strategy", "optim"},
      {"--outer-dp-sharding-strategy", "optim"},
      {"--cuda-graph-impl", "local"},
      {"--use-megatron-fsdp", "--data-parallel-sharding-strategy", "optim",
       "--megatron-fsdp-main-grads-dtype", "bf16"},
      {"--megatron-fsdp-main-params-dtype", "bf16"},
  };
  for (const std::vector<std::string>& extra : cases) {
    std::vector<std::string> argv = LlamaLaunch();
    argv.insert(argv.end(), extra.begin(), extra.end());
    if (extra[0] == "--fp16") {
      argv.erase(std::find(argv.begin(), argv.end(), "--bf16"));
    }
    absl::StatusOr<MegatronLaunch> parsed = ParseMegatronLaunch(argv, nullptr);
    ASSERT_FALSE(parsed.ok()) << extra[0] << " " << extra.back();
    // The message names an argument of the case.
    bool named = false;
    for (const std::string& word : extra) {
      if (word.rfind("--", 0) == 0 &&
          parsed.status().message().find(word) != std::string::npos) {
        named = true;
      }
    }
    EXPECT_TRUE(named) << parsed.status();
  }
  // A value modelled only as one setting says which and why, quoting at
  // most 64 bytes of what the launch gave.
  std::vector<std::string> graphs = LlamaLaunch();
  graphs.insert(graphs.end(), {"--cuda-graph-impl", "transformer_engine"});
  absl::StatusOr<MegatronLaunch> parsed = ParseMegatronLaunch(graphs, nullptr);
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().message(),
            "--cuda-graph-impl: 'transformer_engine' is not modelled (none "
            "only): CUDA graphs keep static input and output buffers and a "
            "private memory pool beside the activations memgate counts");
  graphs.back() = std::string(100000, 'x');
  parsed = ParseMegatronLaunch(graphs, nullptr);
  ASSERT_FALSE(parsed.ok());
  EXPECT_LT(parsed.status().message().size(), 300u);
}

}  // namespace
}  // namespace memgate
