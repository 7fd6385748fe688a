// `memgate check` embedded: jobs from flags, files and launch lines.

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/subprocess.h"

namespace memgate {
namespace {

using testing::RunResult;

RunResult Check(std::vector<std::string> args) {
  args.insert(args.begin(), {testing::RunfilePath("client/memgate"), "check"});
  return testing::Run(args);
}

std::vector<std::string> Launch(std::vector<std::string> check_flags,
                                const std::string& extra_megatron = "") {
  std::vector<std::string> args = std::move(check_flags);
  for (const char* w :
       {"--", "torchrun", "--nnodes", "2", "--nproc-per-node", "8",
        "pretrain_gpt.py", "--num-layers", "32", "--hidden-size", "4096",
        "--ffn-hidden-size", "14336", "--num-attention-heads", "32",
        "--group-query-attention", "--num-query-groups", "8", "--vocab-size",
        "128256", "--untie-embeddings-and-output-weights", "--swiglu",
        "--normalization", "RMSNorm", "--disable-bias-linear",
        "--position-embedding-type", "rope", "--hidden-dropout", "0",
        "--attention-dropout", "0", "--bf16",
        "--tensor-model-parallel-size", "4", "--pipeline-model-parallel-size",
        "2", "--sequence-parallel", "--use-distributed-optimizer",
        "--micro-batch-size", "1", "--global-batch-size", "1024",
        "--seq-length", "8192", "--no-such-megatron-flag", "7"}) {
    args.push_back(w);
  }
  if (!extra_megatron.empty()) args.push_back(extra_megatron);
  return args;
}

// A batch script's launches (--launch-lines, as the Slurm hook passes
// them): the worst decides. A refusal decides whatever the rest say, so
// the rest are not checked (each refusal plans what would fit; a script
// of many could otherwise run past the hook's time limit), and are named
// as such; an invalid launch does not stop the check (a later refusal
// would decide).
TEST(CliCheckTest, ARefusedLaunchDecidesItsScriptAndEndsTheCheck) {
  const std::string fits =
      "torchrun --nnodes 1 --nproc-per-node 8 pretrain_gpt.py --num-layers "
      "32 --hidden-size 4096 --ffn-hidden-size 14336 --num-attention-heads "
      "32 --group-query-attention --num-query-groups 8 --vocab-size 128256 "
      "--swiglu --normalization RMSNorm --disable-bias-linear "
      "--position-embedding-type rope --hidden-dropout 0 --attention-dropout "
      "0 --bf16 --tensor-model-parallel-size 8 --sequence-parallel "
      "--use-distributed-optimizer --micro-batch-size 1 --global-batch-size "
      "64 --seq-length 4096";
  const std::string ooms = fits + " --micro-batch-size 64";
  const std::string invalid = fits + " --tensor-model-parallel-size 3";
  const std::string refused_first = testing::WriteTempFile(
      "refused_first.txt", fits + "\n" + ooms + "\n" + invalid + "\n" +
                               fits + "\n");
  RunResult r = Check({"--gpu=h100-80gb", "--launches-file=" + refused_first});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("4 launches in the script; the one above (launch 2, "
                       "line 2 of --launch-lines) decides"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("launches 3 to 4: not checked (the refusal above "
                       "decides the script)"),
            std::string::npos)
      << r.err;
  const std::string invalid_first = testing::WriteTempFile(
      "invalid_first.txt", invalid + "\n" + fits + "\n" + ooms + "\n");
  r = Check({"--gpu=h100-80gb", "--launches-file=" + invalid_first});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("(launch 3, line 3 of --launch-lines) decides"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("not checked"), std::string::npos) << r.err;
  // --launch-lines is its name now (the hook's: a memgate before it
  // refuses the flag rather than misread the hook's lines); the earlier
  // name reads the same, and the two together are refused.
  const RunResult lines =
      Check({"--gpu=h100-80gb", "--launch-lines=" + invalid_first});
  EXPECT_EQ(lines.exit_code, 1) << lines.out << lines.err;
  EXPECT_EQ(lines.err, r.err);
  const RunResult both =
      Check({"--gpu=h100-80gb", "--launch-lines=" + invalid_first,
             "--launches-file=" + invalid_first});
  EXPECT_EQ(both.exit_code, 2) << both.out << both.err;
  EXPECT_NE(both.err.find("--launch-lines: give it or --launches-file (its "
                          "earlier name), not both"),
            std::string::npos)
      << both.err;
}

// A launch after `--` is a command's argv: a run named "#1" or "|" is an
// argument like any other, and the micro-batch size after it is read (it
// once ended memgate's reading: admitted at MBS 1, run at 8). A line of
// --launch-lines is shell text, split as bash splits it: quoted, the
// same words are the program's; unquoted, the shell's; glued to an
// argument (`--micro-batch-size 8;`), the shell's too.
TEST(CliCheckTest, ArgvIsLiteralAndALaunchLineIsShellText) {
  for (const char* name : {"#1", "|", "&&", ";"}) {
    std::vector<std::string> args = Launch({"--gpu=a100-40gb"});
    args.insert(args.end(),
                {"--wandb-exp-name", name, "--micro-batch-size", "8"});
    const RunResult r = Check(args);
    EXPECT_EQ(r.exit_code, 1) << name << ": " << r.out << r.err;
    EXPECT_NE(r.out.find("REFUSE [RED]"), std::string::npos) << r.out;
  }
  std::string line;
  for (const std::string& w : Launch({})) {
    if (w != "--") line += w + " ";
  }
  // The launch with `tail`, a line of a launches file, checked.
  auto check_line = [&line](const std::string& tail) {
    const std::string file =
        testing::WriteTempFile("launch_line.txt", line + tail + "\n");
    return Check({"--gpu=a100-40gb", "--launch-lines=" + file});
  };
  for (const char* tail : {"--wandb-exp-name \"a | b\" --micro-batch-size 8",
                           "--wandb-exp-name '#1' --micro-batch-size 8",
                           "--micro-batch-size 8; echo done"}) {
    const RunResult r = check_line(tail);
    EXPECT_EQ(r.exit_code, 1) << tail << ": " << r.out << r.err;
    EXPECT_NE(r.out.find("REFUSE [RED]"), std::string::npos) << r.out;
  }
  // Two launches of the script on one line: each is checked.
  const RunResult twice =
      check_line("--micro-batch-size 1 && " + line + "--micro-batch-size 8");
  EXPECT_EQ(twice.exit_code, 1) << twice.out << twice.err;
  // (Named by its line too: the hook's labels are a line's.)
  EXPECT_NE(twice.err.find("2 launches in the script; the one above "
                           "(launch 2, line 1 of --launch-lines) decides"),
            std::string::npos)
      << twice.err;
  for (const char* tail :
       {"| tee --micro-batch-size 8", "# --micro-batch-size 8"}) {
    const RunResult r = check_line(tail);
    EXPECT_EQ(r.exit_code, 0) << tail << ": " << r.out << r.err;
  }
  // The file's bound counts launches, not lines: 32 lines of two launches
  // are checked; 33 are refused before any is.
  std::string pairs;
  for (int i = 0; i < 33; ++i) pairs += line + "&& " + line + "\n";
  const std::string most =
      testing::WriteTempFile("most_launches.txt",
                             pairs.substr(0, pairs.size() / 33 * 32));
  const RunResult at_bound =
      Check({"--gpu=a100-40gb", "--launch-lines=" + most});
  EXPECT_EQ(at_bound.exit_code, 0) << at_bound.out << at_bound.err;
  const std::string over = testing::WriteTempFile("over_launches.txt", pairs);
  const RunResult past =
      Check({"--gpu=a100-40gb", "--launch-lines=" + over});
  EXPECT_EQ(past.exit_code, 2) << past.out << past.err;
  EXPECT_NE(past.err.find("--launch-lines: more than 64 launches"),
            std::string::npos)
      << past.err;
  const RunResult r = check_line("--wandb-exp-name \"open");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("memgate check: launch: a quote or a substitution"),
            std::string::npos)
      << r.err;
}

// Gemma 2 soft-caps its attention scores, which no TransformerEngine
// kernel does: Megatron-Bridge runs it unfused, keeping a layer's scores,
// their tanh and the fp32 softmax (s > 4096); its GeGLU runs unfused too
// (10 B a unit of FFN width). Gemma-2-9B at 8k on one node of TP 8 was
// admitted at 28 GiB as if FlashAttention and the paper's SwiGLU count
// ran; it keeps 74.3 GiB. At 4k it fits; with context parallelism it
// cannot run at all. Where Megatron-Bridge runs FlexAttention instead
// (--attention=flash), it fits at 8k.
TEST(CliCheckTest, Gemma2sSoftCappedAttentionIsCountedUnfused) {
  const std::string config = testing::RunfilePath(
      "tests/testdata/hf/gemma-2-9b.json");
  const std::vector<std::string> node = {"--model-config=" + config,
                                         "--gpu=h100-80gb", "--gpus=8",
                                         "--tp=8"};
  std::vector<std::string> at8k = node;
  at8k.push_back("--seq=8192");
  RunResult r = Check(at8k);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(r.out.rfind("REFUSE [YELLOW] peak 74.28 GiB", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("fits where Megatron-Bridge runs Gemma 2's soft-capped "
                       "scores through FlexAttention"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("fits with selective recomputation "
                       "(--recompute-granularity selective "
                       "--recompute-modules core_attn)"),
            std::string::npos)
      << r.out;
  std::vector<std::string> at4k = node;
  at4k.push_back("--seq=4096");
  r = Check(at4k);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  std::vector<std::string> cp = {"--model-config=" + config, "--gpu=h100-80gb",
                                 "--gpus=8", "--tp=4", "--cp=2", "--seq=8192"};
  r = Check(cp);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("parallel.context_parallel (--cp): attention logit "
                       "soft-capping"),
            std::string::npos)
      << r.err;
  // Recent Megatron-Bridge's FlexAttention, said with --attention=flash:
  // no scores, and the 8k job fits.
  at8k.push_back("--attention=flash");
  r = Check(at8k);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("FlexAttention"), std::string::npos) << r.out;
  at8k.back() = "--attention=sdpa";
  r = Check(at8k);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--attention: must be flash, fused, unfused or local"),
            std::string::npos)
      << r.err;
}

// gpt-oss by name is the catalog's whole model, its attention sinks
// included: which kernel runs them (cuDNN's fused attention, or
// TransformerEngine's unfused one, keeping s x s scores) is the job's to
// say, as with its Hugging Face config. By name it was estimated without
// sinks and admitted at 8k where the unfused kernel needs 126 GiB.
TEST(CliCheckTest, GptOssByNameAsksWhichKernelRunsItsSinks) {
  const std::vector<std::string> job = {"--gpu=h100-80gb", "--gpus=64",
                                        "--seq=8192", "--tp=4", "--ep=8",
                                        "--pp=2"};
  const std::string config =
      "--model-config=" +
      testing::RunfilePath("tests/testdata/hf/gpt-oss-120b.json");
  for (const std::string& model : {std::string("--model=gpt-oss-120b"),
                                   config}) {
    std::vector<std::string> args = job;
    args.push_back(model);
    RunResult r = Check(args);
    EXPECT_EQ(r.exit_code, 2) << model << r.out << r.err;
    EXPECT_NE(r.err.find("model.softmax_type: FlashAttention cannot run "
                         "attention sinks"),
              std::string::npos)
        << r.err;
    args.push_back("--attention=unfused");
    r = Check(args);
    EXPECT_EQ(r.exit_code, 1) << model << r.out << r.err;
    EXPECT_EQ(r.out.rfind("REFUSE [RED] peak 126.49 GiB", 0), 0u) << r.out;
    args.back() = "--attention=fused";
    r = Check(args);
    EXPECT_EQ(r.exit_code, 0) << model << r.out << r.err;
    EXPECT_EQ(r.out.rfind("ADMIT [GREEN] peak 51.25 GiB", 0), 0u) << r.out;
  }
}

// Uneven stages by name: --pipeline-layout in Megatron's layout syntax
// checks what the same stages in a launch check. Llama-3.1-405B over 16
// ranks x 4 chunks, the embedding and the loss each counted as a layer
// (Megatron's accounted split), one layer of each chunk recomputed, on
// 8,192 H100s: the launch and the flags give one verdict and peak. Beside
// a launch the flag is refused: the launch says its own split.
TEST(CliCheckTest, ThePipelineLayoutFlagChecksAsTheLaunchDoes) {
  const RunResult by_flags = Check(
      {"--model=llama-3.1-405b", "--gpu=h100-80gb", "--gpus=8192",
       "--seq=8192", "--gbs=2048", "--tp=8", "--pp=16", "--fused-swiglu",
       "--recompute=full", "--recompute-method=block", "--recompute-layers=1",
       "--pipeline-layout=Et|(tt|)*62tL"});
  const std::vector<std::string> launch = {
      "--gpu=h100-80gb", "--gpus=8192", "--", "torchrun", "pretrain_gpt.py",
      "--num-layers", "126", "--hidden-size", "16384", "--ffn-hidden-size",
      "53248", "--num-attention-heads", "128", "--group-query-attention",
      "--num-query-groups", "8", "--padded-vocab-size", "128256", "--swiglu",
      "--normalization", "RMSNorm", "--disable-bias-linear",
      "--position-embedding-type", "rope",
      "--untie-embeddings-and-output-weights", "--bf16", "--hidden-dropout",
      "0", "--attention-dropout", "0", "--tensor-model-parallel-size", "8",
      "--pipeline-model-parallel-size", "16", "--micro-batch-size", "1",
      "--global-batch-size", "2048", "--seq-length", "8192",
      "--sequence-parallel", "--use-distributed-optimizer",
      "--no-create-attention-mask-in-dataloader",
      "--account-for-embedding-in-pipeline-split",
      "--account-for-loss-in-pipeline-split",
      "--num-virtual-stages-per-pipeline-rank", "4",
      "--recompute-granularity", "full", "--recompute-method", "block",
      "--recompute-num-layers", "1"};
  const RunResult by_launch = Check(launch);
  ASSERT_EQ(by_flags.exit_code, 0) << by_flags.out << by_flags.err;
  ASSERT_EQ(by_launch.exit_code, 0) << by_launch.out << by_launch.err;
  const std::string verdict = by_flags.out.substr(0, by_flags.out.find('\n'));
  EXPECT_EQ(verdict.rfind("ADMIT [GREEN] peak 59.47 GiB (stage 1)", 0), 0u)
      << verdict;
  EXPECT_EQ(by_launch.out.rfind(verdict, 0), 0u) << by_launch.out;

  std::vector<std::string> both = launch;
  both.insert(both.begin(), "--pipeline-layout=Et|(tt|)*62tL");
  const RunResult refused = Check(both);
  EXPECT_EQ(refused.exit_code, 2) << refused.out << refused.err;
  EXPECT_NE(refused.err.find("--pipeline-layout: a launch gives its stages "
                             "itself"),
            std::string::npos)
      << refused.err;
}

// --attention says which kernel a job from flags runs; over a launch its
// --attention-backend decides, and a flag that contradicts it is invalid
// input, naming both.
TEST(CliCheckTest, TheAttentionFlagMayOnlyAgreeWithALaunch) {
  RunResult r = Check(Launch({"--gpu=a100-40gb", "--attention=flash"},
                             "--attention-backend=unfused"));
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--attention=flash contradicts the launch command, "
                       "which runs ATTENTION_KERNEL_UNFUSED"),
            std::string::npos)
      << r.err;
  r = Check(Launch({"--gpu=a100-40gb", "--attention=unfused"},
                   "--attention-backend=unfused"));
  EXPECT_NE(r.exit_code, 2) << r.out << r.err;
  // So does --attention-softmax-in-fp32 with the launch's own flags.
  r = Check(Launch({"--gpu=a100-40gb", "--attention-softmax-in-fp32"},
                   "--attention-backend=local"));
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--attention-softmax-in-fp32 contradicts the launch"),
            std::string::npos)
      << r.err;
  r = Check(Launch({"--gpu=a100-40gb", "--attention-softmax-in-fp32"},
                   "--apply-query-key-layer-scaling"));
  EXPECT_NE(r.exit_code, 2) << r.out << r.err;
}

TEST(CliCheckTest, EmbeddedVerdictsAndExitCodes) {
  const std::vector<std::string> base = {"--model=llama-3.1-8b",
                                         "--gpu=a100-40gb", "--gpus=8",
                                         "--tp=4", "--pp=2", "--seq=8192"};
  RunResult r = Check(base);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("ADMIT [GREEN]", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("peak stage 0: weights"), std::string::npos);

  std::vector<std::string> yellow = base;
  yellow.push_back("--mbs=2");
  r = Check(yellow);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("limit 32.00 GiB"), std::string::npos) << r.out;

  yellow.push_back("--admit-yellow");
  r = Check(yellow);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("warning:"), std::string::npos);
}

TEST(CliCheckTest, MegatronLaunchOnSixteenA100s) {
  const RunResult r = Check(Launch({"--gpu=a100-40gb"}));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("16 x a100-40gb: TP=4 CP=1 PP=2 DP=2"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("vocabulary padded 128256 -> 128512"),
            std::string::npos);
}

TEST(CliCheckTest, FlagsFillOrContradictTheLaunch) {
  RunResult r = Check(Launch({"--gpu=a100-40gb", "--gpus=8"}));
  EXPECT_EQ(r.exit_code, 0) << r.err;  // --gpus overrides torchrun's 16
  EXPECT_NE(r.out.find("on 8 x a100-40gb"), std::string::npos) << r.out;

  r = Check(Launch({"--gpu=a100-40gb", "--tp=2"}));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--tp=2 contradicts the launch command, which says 4"),
            std::string::npos)
      << r.err;
  // So does a switch (the launch runs with --sequence-parallel), and
  // --precision (it trains in bf16).
  r = Check(Launch({"--gpu=a100-40gb", "--no-sequence-parallel"}));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--no-sequence-parallel contradicts the launch "
                       "command, which gives --sequence-parallel"),
            std::string::npos)
      << r.err;
  r = Check(Launch({"--gpu=a100-40gb", "--precision=fp32"}));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--precision=fp32 contradicts the launch command"),
            std::string::npos)
      << r.err;

  r = Check(Launch({}));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--gpu"), std::string::npos) << r.err;

  r = Check(Launch({"--gpu=a100-40gb"}, "--use-torch-fsdp2"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--use-torch-fsdp2: not modelled"), std::string::npos)
      << r.err;

  // Interleaving is modelled: 4 layers a chunk over PP 2 is v = 4, and
  // rank 0 holds 2(p - 1) + (v - 1)p + 1 = 9 chunks in flight.
  r = Check(Launch({"--gpu=a100-40gb"},
                   "--num-layers-per-virtual-pipeline-stage=4"));
  EXPECT_NE(r.exit_code, 2) << r.err;
  EXPECT_NE(r.out.find("0           16         9"), std::string::npos)
      << r.out;

  r = Check({"--gpu=a100-40gb", "--", "python", "train.py"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no Megatron-LM arguments"), std::string::npos);
}

// A launch without --global-batch-size runs Megatron's default, one
// micro-batch a step at the job's data-parallel size, taken after memgate's
// flags: on 8 GPUs (--gpus overrides torchrun's 16) at TP 4, PP 2 that is 1,
// and the first stage holds one micro-batch, not two. --gbs gives another.
TEST(CliCheckTest, AMissingGlobalBatchIsMegatronsDefaultAtTheFinalGpuCount) {
  std::vector<std::string> args = Launch({"--gpu=a100-40gb", "--gpus=8"});
  const auto at = std::find(args.begin(), args.end(), "--global-batch-size");
  ASSERT_NE(at, args.end());
  args.erase(at, at + 2);
  RunResult r = Check(args);
  EXPECT_NE(r.exit_code, 2) << r.err;
  EXPECT_NE(r.out.find("no --global-batch-size: Megatron's default, "
                       "micro-batch x data-parallel size = 1"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("0           16         1"), std::string::npos) << r.out;

  args.insert(args.begin(), "--gbs=64");
  r = Check(args);
  EXPECT_NE(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.out.find("no --global-batch-size"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("0           16         2"), std::string::npos) << r.out;
}

// An invalid launch is named in its own arguments (Megatron's, not
// memgate's flags), with what reading it noted: here --num-layers 32 over
// a last --pipeline-model-parallel-size of 3, given twice.
TEST(CliCheckTest, AnInvalidLaunchIsNamedInItsOwnArguments) {
  const RunResult r = Check(Launch({"--gpu=a100-40gb", "--gpus=12"},
                                   "--pipeline-model-parallel-size=3"));
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(r.err.rfind("memgate check: model.num_layers (--num-layers): must "
                        "be a multiple of parallel.pipeline_parallel = 3",
                        0),
            0u)
      << r.err;
  EXPECT_NE(r.err.find("for uneven stages give "
                       "--decoder-first-pipeline-num-layers"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("note: --pipeline-model-parallel-size: given more "
                       "than once"),
            std::string::npos)
      << r.err;
}

// A launch whose model --model-config fills: a field the config gives is
// named by its key (the user wrote the file, not the launch's argument),
// one the launch gives by its argument.
TEST(CliCheckTest, WhatAConfigFillsIsNamedByItsKeys) {
  const std::string path = testing::WriteTempFile(
      "five_kv_heads.json",
      R"({"model_type": "llama", "hidden_size": 4096,
          "num_hidden_layers": 32, "num_attention_heads": 32,
          "num_key_value_heads": 5, "intermediate_size": 14336,
          "vocab_size": 128256})");
  std::vector<std::string> args = {
      "--model-config=" + path, "--gpu=h100-80gb", "--gpus=8", "--",
      "pretrain_gpt.py", "--seq-length", "8192", "--micro-batch-size", "1",
      "--bf16"};
  // Invalid (exit 2), the one-line error starting with `error`.
  auto expect_invalid = [&](const std::string& error) {
    const RunResult r = Check(args);
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_EQ(r.err.rfind("memgate check: " + error, 0), 0u) << r.err;
  };
  expect_invalid("model.num_attention_heads (num_attention_heads in " + path +
                 "): must be a multiple of model.num_query_groups "
                 "(num_key_value_heads) = 5 (got 32)");
  args.push_back("--num-attention-heads=33");
  expect_invalid("model.hidden_size (hidden_size in " + path +
                 "): must be a multiple of model.num_attention_heads = 33");
  args.push_back("--hidden-size=4095");
  expect_invalid(
      "model.hidden_size (--hidden-size): must be a multiple of "
      "model.num_attention_heads = 33");
}

// A refused job's suggestions are plans, which shard the optimizer and
// split activations over TP: a job that does neither is told so (it holds
// more than those layouts as it is written), and a job that does both is
// not.
TEST(CliCheckTest, SuggestionsSayWhatTheyArePlannedWith) {
  const std::vector<std::string> job = {
      "--model=llama-3.1-8b", "--gpu=a100-40gb", "--gpus=8", "--tp=4",
      "--pp=2", "--mbs=2", "--seq=8192"};
  std::vector<std::string> without = job;
  without.push_back("--no-distributed-optimizer");
  without.push_back("--no-sequence-parallel");
  RunResult r = Check(without);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("fits instead on 8 GPUs"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(those layouts are planned with "
                       "--use-distributed-optimizer and --sequence-parallel "
                       "(where TP > 1), which this job does not use)"),
            std::string::npos)
      << r.out;
  r = Check(job);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("fits instead on 8 GPUs"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("those layouts are planned with"), std::string::npos)
      << r.out;
}

// A --model-config key memgate has not reviewed is named in the check's
// notes and on estimate's stderr, also when a launch is checked with it.
// A Llama config.json with a key memgate has not reviewed
// (use_parallel_residual), written under the test's temporary directory.
std::string ConfigWithAnUnreviewedKey(const std::string& name) {
  const std::string path = ::testing::TempDir() + "/" + name;
  FILE* f = fopen(path.c_str(), "w");
  EXPECT_NE(f, nullptr) << path;
  if (f == nullptr) return path;
  fputs(R"({"model_type": "llama", "hidden_size": 4096,
            "num_hidden_layers": 32, "num_attention_heads": 32,
            "num_key_value_heads": 8, "intermediate_size": 14336,
            "vocab_size": 128256, "use_parallel_residual": true})",
        f);
  fclose(f);
  return path;
}

TEST(CliCheckTest, UnreviewedConfigKeysAreNoted) {
  const std::string path = ConfigWithAnUnreviewedKey("unreviewed.json");
  const std::string said =
      "keys memgate has not reviewed, read past: use_parallel_residual";
  RunResult r = Check({"--model-config=" + path, "--gpu=h100-80gb",
                       "--gpus=8", "--seq=4096"});
  EXPECT_NE(r.exit_code, 2) << r.err;  // a verdict, whichever
  EXPECT_NE(r.out.find("note: " + path + ": " + said), std::string::npos)
      << r.out;
  r = Check(Launch({"--model-config=" + path, "--gpu=h100-80gb"}));
  EXPECT_NE(r.out.find(said), std::string::npos) << r.out << r.err;
  r = testing::Run({testing::RunfilePath("client/memgate"), "estimate",
                    "--model-config=" + path, "--gpu=h100-80gb", "--gpus=8",
                    "--seq=4096"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("memgate estimate: note: " + path + ": " + said),
            std::string::npos)
      << r.err;
}

// A site that refuses what memgate has not reviewed (--refuse-unreviewed,
// the Slurm hook's on_unreviewed = "refuse"): the launch's unreviewed
// argument, or a config's unreviewed key, makes the input invalid (exit
// 2), named; by default both are read past with a note. `exec` passes the
// flag through.
TEST(CliCheckTest, RefuseUnreviewedMakesWhatIsNotReadInvalid) {
  RunResult r = Check(Launch({"--gpu=a100-40gb"}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("not read: --no-such-megatron-flag"), std::string::npos)
      << r.out;
  r = Check(Launch({"--gpu=a100-40gb", "--refuse-unreviewed"}));
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("--no-such-megatron-flag: not an argument of "
                       "Megatron-LM"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("refused, as this site asks (--refuse-unreviewed)"),
            std::string::npos)
      << r.err;
  std::vector<std::string> exec = Launch({"--gpu=a100-40gb",
                                          "--refuse-unreviewed", "--dry-run"});
  exec.insert(exec.begin(), {testing::RunfilePath("client/memgate"), "exec"});
  EXPECT_EQ(testing::Run(exec).exit_code, 2);

  const std::string path = ConfigWithAnUnreviewedKey("strict.json");
  r = Check({"--model-config=" + path, "--gpu=h100-80gb", "--gpus=8",
             "--seq=4096", "--refuse-unreviewed"});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("keys memgate has not reviewed: use_parallel_residual: "
                       "refused"),
            std::string::npos)
      << r.err;
}

TEST(CliCheckTest, JobFilesInJsonAndTextFormat) {
  const std::string json = testing::WriteTempFile(
      "job.json",
      R"({"model": {"name": "llama-3.1-8b"}, "accelerator": {"name": "h100-94gb"},
          "parallel": {"tensor_parallel": 2, "pipeline_parallel": 1, "context_parallel": 1},
          "training": {"micro_batch_size": 1, "seq_length": 8192, "global_batch_size": 1024},
          "num_gpus": 4})");
  RunResult r = Check({"--job=" + json});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("peak 67.52 GiB"), std::string::npos) << r.out;

  r = Check({"--job=" + json, "--mbs=2"});  // flags override the file
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("peak 90.16 GiB"), std::string::npos) << r.out;

  const std::string text = testing::WriteTempFile(
      "job.textproto",
      "model { name: 'llama-3.1-8b' } accelerator { name: 'h100-94gb' }\n"
      "parallel { tensor_parallel: 2 pipeline_parallel: 1 context_parallel: 1 }\n"
      "training { micro_batch_size: 4 seq_length: 8192 } num_gpus: 4\n");
  r = Check({"--job=" + text});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("REFUSE [RED] peak 135.45 GiB"), std::string::npos)
      << r.out;

  const std::string broken =
      testing::WriteTempFile("bad.json", "{\"num_gpus\": -4}");
  r = Check({"--job=" + broken});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--job"), std::string::npos) << r.err;

  r = Check(Launch({"--gpu=a100-40gb", "--job=" + json}));
  EXPECT_EQ(r.exit_code, 2);
}

// The peak of a verdict line: "ADMIT [GREEN] peak 40.37 GiB ...".
double PeakGiB(const std::string& out) {
  const size_t at = out.find("peak ");
  return at == std::string::npos ? -1 : std::stod(out.substr(at + 5));
}

// --megatron-core names the release a job runs, so a job checked by flags
// (no launch to date it) gets its release's MoE term: core 0.12.0 keeps
// the weighted unpermute copy, 0.13.0 does not, an unknown release counts
// the larger; the assumptions say which. A release that names both sides
// is refused by flag; a dense model takes any release.
TEST(CliCheckTest, TheReleaseFlagSetsTheMoeTerm) {
  const std::vector<std::string> job = {
      "--model=qwen3-30b-a3b", "--gpu=h100-80gb", "--gpus=32", "--tp=1",
      "--pp=4", "--ep=8", "--seq=4096", "--gbs=256"};
  auto with = [&](const std::string& release) {
    std::vector<std::string> args = job;
    if (!release.empty()) args.push_back("--megatron-core=" + release);
    return Check(args);
  };
  const RunResult unknown = with("");
  const RunResult older = with("0.12.0");
  const RunResult later = with("core_v0.13.0");
  for (const RunResult* r : {&unknown, &older, &later}) {
    ASSERT_EQ(r->exit_code, 0) << r->out << r->err;
  }
  EXPECT_GT(PeakGiB(older.out), PeakGiB(later.out) + 1) << later.out;
  EXPECT_DOUBLE_EQ(PeakGiB(unknown.out), PeakGiB(older.out));
  EXPECT_NE(unknown.out.find("Megatron-Core release unknown"),
            std::string::npos)
      << unknown.out;
  EXPECT_NE(later.out.find("routing probabilities applied in the experts"),
            std::string::npos)
      << later.out;

  const RunResult ambiguous = with("0.12");
  EXPECT_EQ(ambiguous.exit_code, 2);
  EXPECT_NE(ambiguous.err.find("training.megatron_core_version "
                               "(--megatron-core): 0.12 names two"),
            std::string::npos)
      << ambiguous.err;

  const RunResult dense = Check({"--model=llama-3.1-8b", "--gpu=a100-40gb",
                                 "--gpus=8", "--tp=4", "--pp=2", "--seq=8192",
                                 "--megatron-core=0.13.0"});
  EXPECT_EQ(dense.exit_code, 0) << dense.err;
}

// A launch that groups 8 micro-batches a chunk over PP 2 (Megatron's
// --microbatch-group-size-per-virtual-pipeline-stage) holds 2 + 8 + 1
// chunks on rank 0, not the default's 2 + 2 + 1: the same launch that fits
// with the default group is refused with it. memgate used to read the
// group past and admit it at the default's peak.
TEST(CliCheckTest, AMicrobatchGroupAboveThePipelineIsCounted) {
  std::vector<std::string> launch = {
      "--gpu=h100-80gb", "--",
      "torchrun", "--nnodes", "2", "--nproc-per-node", "8", "pretrain_gpt.py",
      "--num-layers", "32", "--hidden-size", "4096", "--ffn-hidden-size",
      "14336", "--num-attention-heads", "32", "--group-query-attention",
      "--num-query-groups", "8", "--vocab-size", "128256",
      "--untie-embeddings-and-output-weights", "--swiglu", "--normalization",
      "RMSNorm", "--disable-bias-linear", "--position-embedding-type", "rope",
      "--hidden-dropout", "0", "--attention-dropout", "0", "--bf16",
      "--no-create-attention-mask-in-dataloader",
      "--tensor-model-parallel-size", "4", "--pipeline-model-parallel-size",
      "2", "--num-virtual-stages-per-pipeline-rank", "2",
      "--sequence-parallel", "--use-distributed-optimizer",
      "--micro-batch-size", "4", "--global-batch-size", "1024",
      "--seq-length", "8192"};
  const RunResult by_default = Check(launch);
  EXPECT_EQ(by_default.exit_code, 0) << by_default.out << by_default.err;
  launch.insert(launch.end(),
                {"--microbatch-group-size-per-virtual-pipeline-stage", "8"});
  const RunResult grouped = Check(launch);
  EXPECT_EQ(grouped.exit_code, 1) << grouped.out << grouped.err;
  EXPECT_GT(PeakGiB(grouped.out), 1.5 * PeakGiB(by_default.out))
      << grouped.out;
  EXPECT_NE(grouped.out.find("8 micro-batches a chunk in a row"),
            std::string::npos)
      << grouped.out;
}

// torchrun's --nproc-per-node gpu is the node's GPU count, settled when
// the command runs: the check takes the job's from --gpus (as the Slurm
// hooks pass the request's), says so, and without it names what is
// missing and why (it refused the count before and advised --gpus, which
// did not help).
TEST(CliCheckTest, ANodeCountedLaunchTakesItsGpuCountFromTheFlag) {
  std::vector<std::string> launch = Launch({"--gpu=h100-80gb"});
  const auto per_node =
      std::find(launch.begin(), launch.end(), "--nproc-per-node");
  ASSERT_NE(per_node, launch.end());
  *(per_node + 1) = "gpu";
  const RunResult without = Check(launch);
  EXPECT_EQ(without.exit_code, 2) << without.out << without.err;
  EXPECT_NE(without.err.find("--gpus: required (the launch has no torchrun "
                             "count of GPUs memgate can read"),
            std::string::npos)
      << without.err;
  launch.insert(launch.begin(), "--gpus=16");
  const RunResult with = Check(launch);
  EXPECT_TRUE(with.exit_code == 0 || with.exit_code == 1)
      << with.out << with.err;
  EXPECT_NE(with.out.find("on 16 x h100-80gb"), std::string::npos)
      << with.out;
  EXPECT_NE(with.out.find("--nproc-per-node gpu: torchrun counts the node's "
                          "GPUs when the command runs"),
            std::string::npos)
      << with.out;
}

TEST(CliCheckTest, HelpListsTheCheckFlags) {
  const RunResult r = Check({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  for (const char* flag :
       {"--job=", "--server=", "--timeout=", "--on-unavailable=",
        "--threshold=", "--admit-yellow", "--request-id=", "--tls-ca=",
        "--tls-cert=", "--tls-key=", "--format=", "--tp=", "--model=",
        "--megatron-core="}) {
    EXPECT_NE(r.out.find(flag), std::string::npos) << flag;
  }
}

}  // namespace
}  // namespace memgate
