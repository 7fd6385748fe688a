// The example launcher, built from the public preflight header alone.

#include <cstdlib>

#include "gtest/gtest.h"
#include "tests/subprocess.h"

namespace {


using memgate::testing::RunResult;

std::vector<std::string> Launcher(const std::string& mbs,
                                  const std::string& program) {
  return {memgate::testing::RunfilePath("examples/preflight_launcher"),
          "--gpu=a100-40gb",
          "--",
          program,
          "--nproc-per-node", "8", "pretrain_gpt.py",
          "--num-layers", "32", "--hidden-size", "4096", "--ffn-hidden-size",
          "14336", "--num-attention-heads", "32", "--group-query-attention",
          "--num-query-groups", "8", "--vocab-size", "128256",
          "--untie-embeddings-and-output-weights", "--swiglu", "--normalization", "RMSNorm", "--disable-bias-linear",
          "--position-embedding-type", "rope", "--hidden-dropout", "0",
          "--attention-dropout", "0", "--bf16", 
          "--tensor-model-parallel-size", "4",
          "--pipeline-model-parallel-size", "2", "--sequence-parallel",
          "--use-distributed-optimizer", "--micro-batch-size", mbs,
          "--seq-length", "8192"};
}

TEST(PreflightLauncherTest, AdmittedJobIsLaunched) {
  const RunResult r = memgate::testing::Run(Launcher("1", "/bin/echo"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("preflight: ADMIT [GREEN]"), std::string::npos);
  // "launching: ..." then /bin/echo's own output of the same arguments.
  EXPECT_NE(r.out.find("launching: /bin/echo --nproc-per-node 8"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\n--nproc-per-node 8 pretrain_gpt.py"),
            std::string::npos)
      << r.out;
}

TEST(PreflightLauncherTest, RefusedJobIsNotLaunched) {
  const RunResult r = memgate::testing::Run(Launcher("4", "/bin/echo"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out.find("launching"), std::string::npos);
  // Without --global-batch-size the launch runs Megatron's default, one
  // micro-batch a step (d = 1 here): 38 GiB, past the 80% rule, and with
  // the loss's 16-bit gradient of the logits beside the last stage (2 GiB)
  // past the GPU.
  EXPECT_NE(r.err.find("REFUSE [RED]"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("would fit: TP="), std::string::npos) << r.err;
}

// PreflightOptions.refuse_unreviewed: an argument of no Megatron-LM
// memgate was reviewed against is read past with a note by default, and
// is invalid input where the launcher refuses what memgate has not
// reviewed.
TEST(PreflightLauncherTest, UnreviewedArgumentsRefusedWhereAsked) {
  std::vector<std::string> argv = Launcher("1", "/bin/echo");
  argv.push_back("--my-fork-flag");
  EXPECT_EQ(memgate::testing::Run(argv).exit_code, 0);
  argv.insert(argv.begin() + 2, "--refuse-unreviewed");
  const RunResult r = memgate::testing::Run(argv);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--my-fork-flag: not an argument of Megatron-LM"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.out.find("launching"), std::string::npos);
}

// PreflightOptions.environment: the launcher passes its environment, so
// TransformerEngine's attention switches in it are read: FlashAttention
// and cuDNN's fused attention off leave the unfused attention, whose
// scores do not fit where FlashAttention's launch does.
TEST(PreflightLauncherTest, TheEnvironmentsAttentionSwitchesAreRead) {
  setenv("NVTE_FLASH_ATTN", "0", 1);
  setenv("NVTE_FUSED_ATTN", "0", 1);
  const RunResult r = memgate::testing::Run(Launcher("1", "/bin/echo"));
  unsetenv("NVTE_FLASH_ATTN");
  unsetenv("NVTE_FUSED_ATTN");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.out.find("launching"), std::string::npos);
  EXPECT_NE(r.err.find("preflight: REFUSE"), std::string::npos) << r.err;
}

TEST(PreflightLauncherTest, InvalidLaunchAndUnreachableServer) {
  std::vector<std::string> argv = Launcher("1", "/bin/echo");
  argv.push_back("--tensor-model-parallel-size=3");
  EXPECT_EQ(memgate::testing::Run(argv).exit_code, 2);

  argv = Launcher("1", "/bin/echo");
  argv.insert(argv.begin() + 2, "--server=127.0.0.1:1");
  EXPECT_EQ(memgate::testing::Run(argv).exit_code, 3);
}

}  // namespace
