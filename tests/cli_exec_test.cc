// `memgate exec`: admitted launches replace memgate untouched; refused ones
// never start.

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/subprocess.h"

namespace memgate {
namespace {

using testing::RunResult;

// Megatron arguments for Llama-3.1-8B, TP 4, PP 2, MBS `mbs`.
std::vector<std::string> Megatron(const std::string& mbs) {
  return {"--num-layers", "32", "--hidden-size", "4096",
          "--ffn-hidden-size", "14336", "--num-attention-heads", "32",
          "--group-query-attention", "--num-query-groups", "8",
          "--vocab-size", "128256", "--untie-embeddings-and-output-weights",
          "--swiglu", "--normalization", "RMSNorm", "--disable-bias-linear",
          "--position-embedding-type", "rope", "--hidden-dropout", "0",
          "--attention-dropout", "0", "--bf16",  "--tensor-model-parallel-size", "4",
          "--pipeline-model-parallel-size", "2", "--sequence-parallel",
          "--use-distributed-optimizer", "--micro-batch-size", mbs,
          "--seq-length", "8192", "--arg with spaces"};
}

RunResult Exec(std::vector<std::string> flags, std::vector<std::string> cmd) {
  std::vector<std::string> argv = {testing::RunfilePath("client/memgate"),
                                   "exec"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.push_back("--");
  argv.insert(argv.end(), cmd.begin(), cmd.end());
  return testing::Run(argv);
}

TEST(CliExecTest, AdmittedLaunchRunsWithArgvAndEnvironmentUntouched) {
  setenv("MEMGATE_EXEC_TEST", "kept", 1);  // inherited through fork + exec
  std::vector<std::string> cmd = {
      "/bin/sh", "-c", "echo \"env=$MEMGATE_EXEC_TEST\"; printf '[%s]' \"$@\"",
      "sh"};
  const std::vector<std::string> megatron = Megatron("1");
  cmd.insert(cmd.end(), megatron.begin(), megatron.end());
  const RunResult r = Exec({"--gpu=a100-40gb", "--gpus=8"}, cmd);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string expected_args;
  for (const std::string& a : megatron) expected_args += "[" + a + "]";
  EXPECT_EQ(r.out, "env=kept\n" + expected_args);
  EXPECT_NE(r.err.find("memgate: ADMIT [GREEN]"), std::string::npos) << r.err;
}

// Llama-3.1-8B on 16 A100s, TP 4, PP 2: MBS 2 fits (31.97 GiB), MBS 4 not.
std::string JobFile(const std::string& name, int mbs) {
  return testing::WriteTempFile(
      name,
      "{\"model\": {\"name\": \"llama-3.1-8b\"}, \"accelerator\": {\"name\": "
      "\"a100-40gb\"}, \"parallel\": {\"tensor_parallel\": 4, "
      "\"pipeline_parallel\": 2, \"context_parallel\": 1}, \"training\": {\"micro_batch_size\": " +
          std::to_string(mbs) +
          ", \"seq_length\": 8192, \"global_batch_size\": 1024}, "
          "\"num_gpus\": 16}");
}

TEST(CliExecTest, AnOpaqueCommandRunsWhenItsJobFileIsAdmitted) {
  const RunResult r = Exec({"--job=" + JobFile("fits.json", 2)},
                           {"/bin/sh", "-c", "echo RAN \"$0\"", "train.sh"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "RAN train.sh\n");
  EXPECT_NE(r.err.find("memgate: ADMIT [GREEN] peak 31.9"), std::string::npos)
      << r.err;
}

TEST(CliExecTest, AnOpaqueCommandNeverStartsWhenItsJobIsRefused) {
  RunResult r = Exec({"--job=" + JobFile("ooms.json", 4)},
                     {"/bin/sh", "-c", "echo STARTED"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.out.find("STARTED"), std::string::npos);
  EXPECT_NE(r.err.find("REFUSE"), std::string::npos) << r.err;
  // The same by flags alone.
  r = Exec({"--model=llama-3.1-8b", "--gpu=a100-40gb", "--gpus=8", "--tp=4",
            "--pp=2", "--mbs=4", "--seq=8192"},
           {"/bin/sh", "-c", "echo STARTED"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.out.find("STARTED"), std::string::npos);
}

// An opaque command inherits memgate's environment too: the job its file
// describes (MBS 2: 31.9 GiB with FlashAttention) runs TE's unfused
// attention where FlashAttention and cuDNN's fused attention are switched
// off, and never starts; a job file that says FlashAttention runs
// contradicts that environment (invalid, exit 2).
TEST(CliExecTest, AnOpaqueCommandsJobRunsWithItsEnvironment) {
  setenv("NVTE_FLASH_ATTN", "0", 1);
  setenv("NVTE_FUSED_ATTN", "0", 1);
  const RunResult unfused = Exec({"--job=" + JobFile("fits_env.json", 2)},
                                 {"/bin/sh", "-c", "echo STARTED"});
  const RunResult says_flash =
      Exec({"--job=" + JobFile("fits_env.json", 2), "--attention=flash"},
           {"/bin/sh", "-c", "echo STARTED"});
  unsetenv("NVTE_FLASH_ATTN");
  unsetenv("NVTE_FUSED_ATTN");
  EXPECT_EQ(unfused.exit_code, 1) << unfused.err;
  EXPECT_EQ(unfused.out.find("STARTED"), std::string::npos);
  EXPECT_NE(unfused.err.find("note: the command's environment: "
                             "NVTE_FLASH_ATTN=0 NVTE_FUSED_ATTN=0: "
                             "TransformerEngine runs its unfused attention"),
            std::string::npos)
      << unfused.err;
  EXPECT_EQ(says_flash.exit_code, 2) << says_flash.err;
  EXPECT_NE(says_flash.err.find("switches FlashAttention and cuDNN's fused "
                                "attention off"),
            std::string::npos)
      << says_flash.err;
}

TEST(CliExecTest, AnOpaqueCommandWithoutAJobIsInvalidAndSaysWhy) {
  const RunResult r = Exec({}, {"/bin/sh", "-c", "echo STARTED"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out.find("STARTED"), std::string::npos);
  EXPECT_NE(r.err.find("carries no Megatron-LM arguments"), std::string::npos)
      << r.err;
}

TEST(CliExecTest, ALaunchIsCrossCheckedWithItsJobFile) {
  std::vector<std::string> cmd = {"/bin/sh", "-c", "echo STARTED", "sh"};
  std::vector<std::string> megatron = Megatron("2");
  // Megatron's default dropout (0.1: its masks are kept) and an
  // interleaved schedule of 4-layer chunks put this launch at the edge.
  for (const char* zero : {"--hidden-dropout", "--attention-dropout"}) {
    const auto at = std::find(megatron.begin(), megatron.end(), zero);
    ASSERT_NE(at, megatron.end()) << zero;
    megatron.erase(at, at + 2);
  }
  megatron.push_back("--num-layers-per-virtual-pipeline-stage");
  megatron.push_back("4");
  cmd.insert(cmd.end(), megatron.begin(), megatron.end());
  // At 32.02 of 32 GiB, Megatron's dataloader mask (2 x 8192^2 bytes,
  // 0.125 GiB) decides: the launch must turn it off to fit.
  RunResult r = Exec({"--job=" + JobFile("with_mask.json", 2)}, cmd);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("REFUSE [YELLOW] peak 32.02"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("fits without the dataloader's attention mask "
                       "(--no-create-attention-mask-in-dataloader"),
            std::string::npos)
      << r.err;
  // Its suggestions are plans, which do not count the mask: said so.
  EXPECT_NE(r.err.find("fits instead on 16 GPUs"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("planned without the dataloader's attention mask"),
            std::string::npos)
      << r.err;
  cmd.push_back("--no-create-attention-mask-in-dataloader");
  r = Exec({"--job=" + JobFile("agrees.json", 2)}, cmd);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "STARTED\n");

  // The job file says MBS 4; the launch says 2.
  r = Exec({"--job=" + JobFile("disagrees.json", 4)}, cmd);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.out.find("STARTED"), std::string::npos);
  EXPECT_NE(r.err.find("training.micro_batch_size = 4 but the launch says 2"),
            std::string::npos)
      << r.err;
}

TEST(CliExecTest, RefusedLaunchNeverStarts) {
  std::vector<std::string> cmd = {"/bin/sh", "-c", "echo STARTED", "sh"};
  const std::vector<std::string> megatron = Megatron("4");
  cmd.insert(cmd.end(), megatron.begin(), megatron.end());
  const RunResult r = Exec({"--gpu=a100-40gb", "--gpus=8"}, cmd);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out.find("STARTED"), std::string::npos);
  // The launch has no --global-batch-size: Megatron's default, one
  // micro-batch a step, is past the 80% rule, and said; with the loss's
  // 16-bit gradient of the logits beside the last stage, past the GPU.
  EXPECT_NE(r.err.find("REFUSE [RED]"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the loss's backward casts the logits' gradient"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("no --global-batch-size: Megatron's default"),
            std::string::npos)
      << r.err;
}

// The command inherits memgate's environment, and with it
// TransformerEngine's attention switches: FlashAttention and cuDNN's fused
// attention off leave TE's unfused attention, whose 8192^2 scores a head
// do not fit the launch that fits with FlashAttention; the launch's own
// `env` assignment (cuDNN back on) is the command's, and wins.
TEST(CliExecTest, TransformerEnginesEnvironmentIsTheLaunchs) {
  std::vector<std::string> cmd = {"/bin/sh", "-c", "echo STARTED", "sh"};
  const std::vector<std::string> megatron = Megatron("1");
  cmd.insert(cmd.end(), megatron.begin(), megatron.end());
  setenv("NVTE_FLASH_ATTN", "0", 1);
  setenv("NVTE_FUSED_ATTN", "0", 1);
  const RunResult refused = Exec({"--gpu=a100-40gb", "--gpus=8"}, cmd);
  std::vector<std::string> fused_back = {"env", "NVTE_FUSED_ATTN=1"};
  fused_back.insert(fused_back.end(), cmd.begin(), cmd.end());
  const RunResult admitted = Exec({"--gpu=a100-40gb", "--gpus=8"}, fused_back);
  unsetenv("NVTE_FLASH_ATTN");
  unsetenv("NVTE_FUSED_ATTN");
  EXPECT_EQ(refused.exit_code, 1) << refused.err;
  EXPECT_EQ(refused.out.find("STARTED"), std::string::npos);
  EXPECT_NE(refused.err.find("NVTE_FLASH_ATTN=0 NVTE_FUSED_ATTN=0: "
                             "TransformerEngine runs its unfused attention"),
            std::string::npos)
      << refused.err;
  // The refusal says what unsetting them would do.
  EXPECT_NE(refused.err.find("fits with TransformerEngine's fused attention "
                             "(FlashAttention or cuDNN"),
            std::string::npos)
      << refused.err;
  EXPECT_EQ(admitted.exit_code, 0) << admitted.err;
  EXPECT_EQ(admitted.out, "STARTED\n");
  EXPECT_NE(admitted.err.find("memgate: ADMIT [GREEN]"), std::string::npos)
      << admitted.err;
}

TEST(CliExecTest, InvalidLaunchExitsTwo) {
  std::vector<std::string> cmd = {"/bin/echo"};
  std::vector<std::string> megatron = Megatron("1");
  megatron.push_back("--tensor-model-parallel-size");
  megatron.push_back("3");  // the last wins, as in argparse: TP 3
  cmd.insert(cmd.end(), megatron.begin(), megatron.end());
  const RunResult r = Exec({"--gpu=a100-40gb", "--gpus=8"}, cmd);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("tensor_parallel x pipeline_parallel x "
                       "context_parallel = 3 x 2 x 1"),
            std::string::npos)
      << r.err;
}

TEST(CliExecTest, DryRunPrintsTheCommand) {
  std::vector<std::string> cmd = {"torchrun", "pretrain_gpt.py"};
  const std::vector<std::string> megatron = Megatron("1");
  cmd.insert(cmd.end(), megatron.begin(), megatron.end());
  const RunResult r = Exec({"--gpu=a100-40gb", "--gpus=8", "--dry-run"}, cmd);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("memgate exec: would run: torchrun pretrain_gpt.py "
                        "--num-layers 32",
                        0),
            0u)
      << r.out;
  EXPECT_NE(r.out.find("'--arg with spaces'"), std::string::npos);
}

TEST(CliExecTest, MissingProgramAndMissingLaunch) {
  std::vector<std::string> cmd = {"/nonexistent/launcher"};
  const std::vector<std::string> megatron = Megatron("1");
  cmd.insert(cmd.end(), megatron.begin(), megatron.end());
  RunResult r = Exec({"--gpu=a100-40gb", "--gpus=8"}, cmd);
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_NE(r.err.find("cannot run '/nonexistent/launcher'"),
            std::string::npos);
  r = testing::Run({testing::RunfilePath("client/memgate"), "exec",
                    "--gpu=a100-40gb"});
  EXPECT_EQ(r.exit_code, 2);
}

}  // namespace
}  // namespace memgate
