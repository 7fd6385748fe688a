// `memgate plan` end to end: ranked lists, JSON, the paper-style table.

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "proto/memgate.pb.h"
#include "tests/recipe_launches.h"
#include "tests/subprocess.h"

namespace memgate {
namespace {

using testing::RunResult;

RunResult Plan(std::vector<std::string> args) {
  args.insert(args.begin(), {testing::RunfilePath("client/memgate"), "plan"});
  return testing::Run(args);
}

const std::vector<std::string> kA100 = {"--model=llama-3.1-8b",
                                        "--gpu=a100-40gb", "--seq=8192",
                                        "--gbs=1024"};

std::vector<std::string> With(std::vector<std::string> base,
                              std::vector<std::string> extra) {
  base.insert(base.end(), extra.begin(), extra.end());
  return base;
}

// `base` and then the words of `text`.
std::vector<std::string> WithWords(std::vector<std::string> base,
                                   absl::string_view text) {
  for (absl::string_view w : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    base.emplace_back(w);
  }
  return base;
}

// The plan a successful `memgate plan --format=json` printed (a test
// failure, and an empty plan, otherwise).
v1::PlanResponse PlanOf(const RunResult& r) {
  v1::PlanResponse plan;
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(r.out, &plan).ok())
      << r.out << r.err;
  return plan;
}

// The decision `memgate check FLAGS --format=json -- LAUNCH` printed: a
// candidate's arguments pasted into a launch are checked this way (a
// failure to run or parse is a test failure, and an empty decision).
v1::Decision CheckedLaunch(std::vector<std::string> flags,
                           const std::string& launch) {
  flags.insert(flags.begin(), {testing::RunfilePath("client/memgate"), "check"});
  flags.push_back("--format=json");
  flags.push_back("--");
  const RunResult run = testing::Run(WithWords(flags, launch));
  v1::Decision decision;
  EXPECT_TRUE(
      google::protobuf::util::JsonStringToMessage(run.out, &decision).ok())
      << run.out << run.err;
  return decision;
}

TEST(CliPlanTest, JsonListsCandidatesInRankOrder) {
  const RunResult r = Plan(With(kA100, {"--gpus=16", "--format=json"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  v1::PlanResponse plan;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(r.out, &plan).ok());
  ASSERT_GT(plan.candidates_size(), 10);
  // Every layout is counted and, all shown, listed once with its best
  // schedule (planner.h).
  EXPECT_EQ(plan.considered(), static_cast<uint64_t>(plan.candidates_size()));
  for (int i = 0; i < plan.candidates_size(); ++i) {
    EXPECT_EQ(plan.candidates(i).rank(), static_cast<uint32_t>(i + 1));
  }
  EXPECT_EQ(plan.candidates(0).zone(), v1::ZONE_GREEN);
  for (const char* field :
       {"\"tensor_parallel\"", "\"context_parallel\"", "\"pipeline_parallel\"",
        "\"micro_batch_size\"", "\"peak_bytes\"", "\"zone\"",
        "\"bubble_fraction\"", "\"why\"", "\"megatron_arguments\""}) {
    EXPECT_NE(r.out.find(field), std::string::npos) << field;
  }
}

TEST(CliPlanTest, TextListShowsTheTopK) {
  const RunResult r = Plan(With(kA100, {"--gpus=16", "--top=3"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("1     (4, 1, 1, 1)"), std::string::npos) << r.out;
  // The (TP, CP, PP, MBS) layouts (CP keeping 1024 tokens a rank), each
  // counted once whatever schedules it was tried with.
  EXPECT_NE(r.out.find("3 of 165 valid layouts shown."), std::string::npos)
      << r.out;
}

// A global batch too small for the cluster: the plan's first layout idles
// its pipeline, and a note on stderr says so with the batch that would feed
// it (planner/starved_pipeline.h); stdout stays the plan. A plan whose
// first layout is busy has no such note.
TEST(CliPlanTest, AStarvedFirstLayoutIsNotedWithTheBatchThatFeedsIt) {
  const std::vector<std::string> base = {"--model=llama-3.1-405b",
                                         "--gpu=h100-80gb", "--gpus=16384",
                                         "--seq=4096", "--top=1"};
  const RunResult starved = Plan(With(base, {"--gbs=256"}));
  ASSERT_EQ(starved.exit_code, 0) << starved.err;
  EXPECT_NE(starved.err.find("a pipeline bubble of "), std::string::npos)
      << starved.err;
  EXPECT_NE(starved.err.find("A global batch of "), std::string::npos)
      << starved.err;
  EXPECT_EQ(starved.out.find("pipeline bubble of"), std::string::npos) << starved.out;
  const RunResult json = Plan(With(base, {"--gbs=256", "--format=json"}));
  PlanOf(json);  // stdout is the plan alone
  EXPECT_NE(json.err.find("a pipeline bubble of "), std::string::npos);

  const RunResult busy = Plan(With(base, {"--gbs=4096"}));
  ASSERT_EQ(busy.exit_code, 0) << busy.err;
  EXPECT_EQ(busy.err.find("pipeline bubble of"), std::string::npos) << busy.err;
}

// A candidate pasted back as Megatron arguments is the same job: memgate
// check reads the launch (`model` + the candidate's line) on `gpu` x `gpus`
// (and `flags`, memgate's own, before the launch) and gives the candidate's
// own peak and verdict. Returns the lines checked.
int ExpectArgumentsRoundTrip(const RunResult& plan, const std::string& model,
                             const std::string& gpu, const std::string& gpus,
                             const std::vector<std::string>& flags = {}) {
  int checked = 0;
  std::string header;
  for (absl::string_view line : absl::StrSplit(plan.out, '\n')) {
    if (absl::StartsWith(line, "# rank")) {
      header = std::string(line);
      continue;
    }
    if (line.empty() || absl::StartsWith(line, "#")) continue;
    std::vector<std::string> args = {testing::RunfilePath("client/memgate"),
                                     "check", "--gpu=" + gpu,
                                     "--gpus=" + gpus};
    args.insert(args.end(), flags.begin(), flags.end());
    args.push_back("--");
    for (absl::string_view w :
         absl::StrSplit(model + std::string(line), ' ', absl::SkipEmpty())) {
      args.emplace_back(w);
    }
    const RunResult check = testing::Run(args);
    // "# rank N: GREEN 27.12 GiB on 64 GPUs" -> "ADMIT [GREEN] peak 27.12 GiB"
    const std::string zone = header.substr(header.find(": ") + 2,
                                           header.find(' ', header.find(": ") + 2) -
                                               header.find(": ") - 2);
    const std::string gib = header.substr(
        header.find(zone) + zone.size() + 1,
        header.find(" GiB") - header.find(zone) - zone.size() - 1);
    EXPECT_NE(check.out.find("[" + zone + "] peak " + gib + " GiB"),
              std::string::npos)
        << header << "\n" << line << "\n" << check.out << check.err;
    ++checked;
  }
  return checked;
}

// What every Llama-3 launch shares beyond its dimensions.
constexpr char kLlama3Launch[] =
    "--group-query-attention --num-query-groups 8 --vocab-size 128256 "
    "--make-vocab-size-divisible-by 1 --untie-embeddings-and-output-weights "
    "--swiglu --normalization RMSNorm --position-embedding-type rope "
    "--disable-bias-linear --hidden-dropout 0 --attention-dropout 0 --bf16 ";

// Llama-3.1-8B's dimensions and batch as launch arguments, with the
// rest of its launch (kLlama3Launch).
std::string Llama3Dims() {
  return "--num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 "
         "--num-attention-heads 32 --seq-length 8192 --global-batch-size "
         "1024 " +
         std::string(kLlama3Launch);
}

// The candidates' lines of a --format=megatron-args plan (its "#" lines
// apart).
std::vector<std::string> ArgumentLines(const std::string& out) {
  std::vector<std::string> lines;
  for (absl::string_view line : absl::StrSplit(out, '\n')) {
    if (!line.empty() && !absl::StartsWith(line, "#")) {
      lines.emplace_back(line);
    }
  }
  return lines;
}

// `memgate plan FLAGS -- LAUNCH`: planned as the launch runs.
RunResult PlanLaunch(std::vector<std::string> flags,
                     const std::string& launch) {
  flags.push_back("--");
  return Plan(WithWords(flags, launch));
}

// A small model's launch on 8 GPUs a node, with `extra` arguments.
std::string SmallLaunch(const std::string& extra) {
  return "torchrun --nproc-per-node 8 pretrain_gpt.py --num-layers 4 "
         "--hidden-size 1024 --num-attention-heads 8 --vocab-size 32000 "
         "--seq-length 4096 --global-batch-size 32 --micro-batch-size 1 "
         "--bf16 " + extra;
}

// The best layout of `launch` on 16 H100s, with `flags` besides.
RunResult PlanBestOnSixteen(std::vector<std::string> flags,
                            const std::string& launch) {
  flags.insert(flags.begin(), {"--gpu=h100-80gb", "--gpus=16", "--top=1"});
  return PlanLaunch(flags, launch);
}

// Over a launch, which says them itself, --fused-swiglu and
// --tp-comm-overlap may only agree (a plan with the fused count of a launch
// that runs the unfused glu() would hold less than it runs).
TEST(CliPlanTest, SwitchesMayOnlyAgreeWithALaunch) {
  const std::string launch =
      SmallLaunch("--swiglu --no-bias-swiglu-fusion");
  RunResult r = PlanBestOnSixteen({"--fused-swiglu"}, launch);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--fused-swiglu contradicts the launch command, which "
                       "does not give --swiglu with Megatron's fused kernel"),
            std::string::npos)
      << r.err;
  r = PlanBestOnSixteen({"--tp-comm-overlap"}, launch);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--tp-comm-overlap contradicts the launch command"),
            std::string::npos)
      << r.err;
  r = PlanBestOnSixteen({"--no-fused-swiglu", "--no-tp-comm-overlap"},
                        launch);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

// A plan takes --attention as check does: over a launch it may only agree
// with the launch's --attention-backend.
TEST(CliPlanTest, TheAttentionFlagMayOnlyAgreeWithALaunch) {
  const std::string launch = SmallLaunch("--attention-backend unfused");
  RunResult r = PlanBestOnSixteen({"--attention=flash"}, launch);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--attention=flash contradicts the launch command"),
            std::string::npos)
      << r.err;
  r = PlanBestOnSixteen({"--attention=unfused"}, launch);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  // And by name it means what it means for check: fused turns
  // FlashAttention off, local is --transformer-impl local (its spec too).
  for (const auto& [flag, field] :
       std::vector<std::pair<std::string, std::string>>{
           {"--attention=fused", "\"flash_attention_disabled\":true"},
           {"--attention=local", "\"local_layer_spec\":true"}}) {
    r = Plan({"--model=llama-3.1-8b", "--gpu=h100-80gb", "--gpus=8",
              "--seq=4096", "--gbs=64", "--top=1", "--format=jobs", flag});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find(field), std::string::npos) << flag << ": " << r.out;
  }
}

// A candidate of a plan from a launch, pasted into that launch, is the
// same job. A plan by name counts the paper's 8 bytes a unit of FFN width
// (an unfused SwiGLU), which no Megatron launch keeps: Megatron's fused
// kernel and TransformerEngine's op keep 6 (megatron_args.cc), so a
// by-name candidate pasted into a launch checks lower, and is admitted.
TEST(CliPlanTest, MegatronArgumentsRoundTripThroughCheck) {
  const std::string launch = "pretrain_gpt.py " + Llama3Dims();
  const RunResult r = PlanLaunch(
      {"--gpu=a100-40gb", "--gpus=64", "--top=6", "--format=megatron-args"},
      launch);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ExpectArgumentsRoundTrip(r, launch, "a100-40gb", "64"), 6);

  const std::string model =
      "pretrain_gpt.py --num-layers 32 --hidden-size 4096 "
      "--ffn-hidden-size 14336 --num-attention-heads 32 " +
      std::string(kLlama3Launch);

  const v1::PlanResponse plan =
      PlanOf(Plan(With(kA100, {"--gpus=64", "--top=2", "--format=json"})));
  ASSERT_EQ(plan.candidates_size(), 2);
  for (const v1::Candidate& c : plan.candidates()) {
    const v1::Decision decision = CheckedLaunch(
        {"--gpu=a100-40gb", "--gpus=64"}, model + c.megatron_arguments());
    EXPECT_EQ(decision.verdict(), v1::VERDICT_ADMIT);
    EXPECT_LT(decision.estimate().peak().total_bytes(), c.peak_bytes());
  }
}

// A launch with a layout of its own takes a candidate's arguments appended
// after it, as Megatron (argparse: the last value wins) does: each checks
// to its candidate's peak, and the check names the replaced arguments.
TEST(CliPlanTest, CandidateArgumentsAppendedToTheirLaunchReplaceItsOwn) {
  const std::string launch =
      "pretrain_gpt.py " + Llama3Dims() +
      "--tensor-model-parallel-size 8 --pipeline-model-parallel-size 2 "
      "--micro-batch-size 1 --sequence-parallel --use-distributed-optimizer "
      "--no-create-attention-mask-in-dataloader ";
  const RunResult r = PlanLaunch(
      {"--gpu=a100-40gb", "--gpus=64", "--top=3", "--format=megatron-args"},
      launch);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ExpectArgumentsRoundTrip(r, launch, "a100-40gb", "64"), 3);
  const v1::PlanResponse plan = PlanOf(PlanLaunch(
      {"--gpu=a100-40gb", "--gpus=64", "--top=1", "--format=json"}, launch));
  ASSERT_EQ(plan.candidates_size(), 1);
  ASSERT_NE(plan.candidates(0).tensor_parallel(), 8u);
  const RunResult check = testing::Run(WithWords(
      {testing::RunfilePath("client/memgate"), "check", "--gpu=a100-40gb",
       "--gpus=64", "--"},
      launch + plan.candidates(0).megatron_arguments()));
  EXPECT_NE(check.out.find("--tensor-model-parallel-size"), std::string::npos);
  EXPECT_NE(check.out.find("given more than once with different values; "
                           "Megatron (argparse) takes the last"),
            std::string::npos)
      << check.out;
}

// A 31-layer launch accounting for the loss alone (Megatron: every stage
// 32 / p layers, the last one fewer), and the same launch without it
// (two stages: 15 and 16): their plans list two-stage pipelines, which
// neither listed before, and each candidate line appended to its launch
// checks to its peak.
TEST(CliPlanTest, OddLayerCountsPlanTwoStagesAndOneEndAccounted) {
  const std::string dims =
      "--num-layers 31 --hidden-size 4096 --ffn-hidden-size 14336 "
      "--num-attention-heads 32 --seq-length 8192 --global-batch-size 64 " +
      std::string(kLlama3Launch) +
      "--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 "
      "--micro-batch-size 1 --sequence-parallel --use-distributed-optimizer "
      "--no-create-attention-mask-in-dataloader ";
  for (const std::string& accounted :
       {std::string("--account-for-loss-in-pipeline-split "),
        std::string()}) {
    const std::string launch = "pretrain_gpt.py " + dims + accounted;
    const v1::PlanResponse plan = PlanOf(PlanLaunch(
        {"--gpu=a100-80gb", "--gpus=16", "--top=0", "--format=json"},
        launch));
    int two_stages = 0;
    for (const v1::Candidate& c : plan.candidates()) {
      if (c.pipeline_parallel() != 2) continue;
      ++two_stages;
      EXPECT_EQ(c.first_stage_layers(), accounted.empty() ? 15u : 16u);
      EXPECT_EQ(c.last_stage_layers(), accounted.empty() ? 16u : 15u);
    }
    EXPECT_GT(two_stages, 0) << accounted;
    const RunResult r = PlanLaunch(
        {"--gpu=a100-80gb", "--gpus=16", "--top=6", "--format=megatron-args"},
        launch);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(ExpectArgumentsRoundTrip(r, launch, "a100-80gb", "16"), 6)
        << accounted;
  }
}

// A launch with --num-distributed-optimizer-instances is planned with its
// instances: the plan says so, each candidate's arguments carry them, and
// each candidate line appended to the launch checks to its peak.
TEST(CliPlanTest, DistributedOptimizerInstancesAreKeptByEveryCandidate) {
  const std::string launch =
      "pretrain_gpt.py " + Llama3Dims() +
      "--micro-batch-size 1 --sequence-parallel --use-distributed-optimizer "
      "--num-distributed-optimizer-instances 4 "
      "--no-create-attention-mask-in-dataloader ";
  const RunResult text =
      PlanLaunch({"--gpu=a100-40gb", "--gpus=64", "--top=3"}, launch);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE((text.out + text.err)
                .find("--num-distributed-optimizer-instances 4: every "
                      "candidate keeps it"),
            std::string::npos)
      << text.out << text.err;
  const RunResult r = PlanLaunch(
      {"--gpu=a100-40gb", "--gpus=64", "--top=3", "--format=megatron-args"},
      launch);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> lines = ArgumentLines(r.out);
  EXPECT_EQ(lines.size(), 3u);
  for (const std::string& line : lines) {
    EXPECT_TRUE(
        absl::StrContains(line, "--num-distributed-optimizer-instances 4"))
        << line;
  }
  EXPECT_EQ(ExpectArgumentsRoundTrip(r, launch, "a100-40gb", "64"), 3);
  // A flag that contradicts the launch is refused, naming both.
  const RunResult contradicts = PlanLaunch(
      {"--gpu=a100-40gb", "--gpus=64", "--distributed-optimizer-instances=2"},
      launch);
  EXPECT_EQ(contradicts.exit_code, 2);
  EXPECT_NE(contradicts.err.find("--num-distributed-optimizer-instances 4"),
            std::string::npos)
      << contradicts.err;
}

// A launch with an a2a+p2p context-parallel exchange is planned with it:
// the plan says so, each candidate's arguments carry the exchange and
// hierarchical sizes that multiply to the candidate's own CP (the launch's
// 2 x 2 would not), and each line appended to the launch checks to its
// candidate's peak.
TEST(CliPlanTest, AContextParallelExchangeIsKeptByEveryCandidate) {
  const std::string launch =
      "pretrain_gpt.py " + Llama3Dims() +
      "--micro-batch-size 1 --sequence-parallel --use-distributed-optimizer "
      "--no-create-attention-mask-in-dataloader --seq-length 65536 "
      "--global-batch-size 64 --context-parallel-size 4 "
      "--cp-comm-type a2a+p2p --hierarchical-context-parallel-sizes 2 2 ";
  const RunResult text =
      PlanLaunch({"--gpu=a100-40gb", "--gpus=64", "--top=5"}, launch);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE((text.out + text.err)
                .find("--cp-comm-type a2a+p2p: candidates with context "
                      "parallelism keep it"),
            std::string::npos)
      << text.out << text.err;
  const RunResult r = PlanLaunch(
      {"--gpu=a100-40gb", "--gpus=64", "--top=5", "--format=megatron-args"},
      launch);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int with_cp = 0;
  for (const std::string& line : ArgumentLines(r.out)) {
    EXPECT_TRUE(absl::StrContains(line, "--cp-comm-type a2a+p2p")) << line;
    for (uint32_t cp : {4u, 8u, 16u}) {
      if (!absl::StrContains(line,
                             absl::StrCat("--context-parallel-size ", cp, " ")))
        continue;
      EXPECT_TRUE(absl::StrContains(
          line, absl::StrCat("--hierarchical-context-parallel-sizes 2 ",
                             cp / 2)))
          << line;
      ++with_cp;
    }
  }
  EXPECT_GT(with_cp, 0) << r.out;
  EXPECT_EQ(ExpectArgumentsRoundTrip(r, launch, "a100-40gb", "64"), 5);
}

// --format=jobs prints each candidate as the memgate.v1.Job it is, one
// JSON a line, best first: `memgate check --job` on each admits it at the
// candidate's peak, uneven interleaved stages and recomputation included
// (Llama-3.1-405B by name on 16,384 H100s).
TEST(CliPlanTest, EachCandidateAsAJobChecksToItsPeak) {
  const std::vector<std::string> plan = {
      "--model=llama-3.1-405b", "--gpu=h100-80gb", "--gpus=16384",
      "--seq=8192", "--gbs=2048", "--top=5"};
  const v1::PlanResponse ranked = PlanOf(Plan(With(plan, {"--format=json"})));
  ASSERT_EQ(ranked.candidates_size(), 5);
  const RunResult jobs = Plan(With(plan, {"--format=jobs"}));
  ASSERT_EQ(jobs.exit_code, 0) << jobs.err;
  const std::vector<std::string> lines =
      absl::StrSplit(jobs.out, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 5u) << jobs.out;
  bool saw_uneven_interleaved = false;
  for (size_t i = 0; i < lines.size(); ++i) {
    const v1::Candidate& c = ranked.candidates(static_cast<int>(i));
    saw_uneven_interleaved |=
        c.virtual_pipeline_stages() > 1 && c.first_stage_layers() > 0;
    const std::string path = testing::WriteTempFile(
        absl::StrCat("candidate", i, ".json"), lines[i]);
    const RunResult check =
        testing::Run({testing::RunfilePath("client/memgate"), "check",
                      "--job=" + path, "--format=json"});
    ASSERT_EQ(check.exit_code, 0) << lines[i] << "\n" << check.err;
    v1::Decision d;
    ASSERT_TRUE(
        google::protobuf::util::JsonStringToMessage(check.out, &d).ok());
    EXPECT_EQ(d.verdict(), v1::VERDICT_ADMIT);
    EXPECT_NEAR(d.estimate().peak().total_bytes(), c.peak_bytes(), 1)
        << lines[i];
  }
  EXPECT_TRUE(saw_uneven_interleaved);
  EXPECT_EQ(Plan(With(plan, {"--format=jobs", "--table"})).exit_code, 2);
}

// The frontier case: Llama-3.1-405B on 16,384 H100s. Its candidates carry
// uneven interleaved stages in Megatron's accounted form, and still read
// back as the same job.
TEST(CliPlanTest, FrontierArgumentsRoundTripThroughCheck) {
  const std::string launch =
      "pretrain_gpt.py --num-layers 126 --hidden-size 16384 "
      "--ffn-hidden-size 53248 --num-attention-heads 128 --seq-length 8192 "
      "--global-batch-size 2048 " +
      std::string(kLlama3Launch);
  const RunResult r = PlanLaunch({"--gpu=h100-80gb", "--gpus=16384",
                                  "--top=5", "--format=megatron-args"},
                                 launch);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("--account-for-embedding-in-pipeline-split "
                       "--account-for-loss-in-pipeline-split "
                       "--num-virtual-stages-per-pipeline-rank 4"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(ExpectArgumentsRoundTrip(r, launch, "h100-80gb", "16384"), 5);
}

// --precision plans for the launch's precision: bf16 gradients (Megatron's
// --grad-reduce-in-bf16) hold half the gradient bytes, so the same layout
// peaks lower, and the arguments say which launch flags they assume; the
// candidates pasted into such a launch read back as the same jobs.
TEST(CliPlanTest, PrecisionIsPlannedAndSaid) {
  const std::vector<std::string> base =
      With(kA100, {"--gpus=64", "--no-recompute", "--format=json"});
  const v1::PlanResponse fp32_grads = PlanOf(Plan(base));
  const v1::PlanResponse bf16_grads =
      PlanOf(Plan(With(base, {"--precision=bf16-bf16-grads"})));
  ASSERT_GT(fp32_grads.candidates_size(), 0);
  const v1::Candidate& layout = fp32_grads.candidates(0);
  bool found = false;
  for (const v1::Candidate& c : bf16_grads.candidates()) {
    if (c.tensor_parallel() == layout.tensor_parallel() &&
        c.context_parallel() == layout.context_parallel() &&
        c.pipeline_parallel() == layout.pipeline_parallel() &&
        c.micro_batch_size() == layout.micro_batch_size() &&
        c.virtual_pipeline_stages() == layout.virtual_pipeline_stages()) {
      found = true;
      EXPECT_LT(c.peak_bytes(), layout.peak_bytes());
    }
  }
  EXPECT_TRUE(found);

  const RunResult args = Plan(With(kA100, {"--gpus=64", "--top=3",
                                           "--precision=bf16-bf16-grads",
                                           "--format=megatron-args"}));
  ASSERT_EQ(args.exit_code, 0) << args.err;
  // By name each line is a whole launch's arguments, its precision in it.
  const std::vector<std::string> lines = ArgumentLines(args.out);
  EXPECT_EQ(lines.size(), 3u);
  for (const std::string& line : lines) {
    EXPECT_TRUE(absl::StrContains(line, " --bf16 --grad-reduce-in-bf16 "))
        << line;
  }
  // A launch with bf16 gradients plans with them, and its candidates
  // read back as the same jobs.
  const std::string launch =
      "pretrain_gpt.py --grad-reduce-in-bf16 " + Llama3Dims();
  const RunResult planned = PlanLaunch(
      {"--gpu=a100-40gb", "--gpus=64", "--top=3", "--format=megatron-args"},
      launch);
  ASSERT_EQ(planned.exit_code, 0) << planned.err;
  EXPECT_EQ(ExpectArgumentsRoundTrip(planned, launch, "a100-40gb", "64"), 3);
  const RunResult bad = Plan(With(kA100, {"--gpus=8", "--precision=fp8"}));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--precision: must be"), std::string::npos)
      << bad.err;
}

// Without --gpus a torchrun launch is planned on its own GPU count (nodes
// x GPUs a node), said on stderr; a launch without one still needs --gpus.
TEST(CliPlanTest, ALaunchIsPlannedOnItsOwnGpuCount) {
  const std::vector<std::string> args = WithWords(
      {"--gpu=a100-40gb", "--top=2", "--format=json", "--", "torchrun",
       "--nnodes", "8", "--nproc-per-node", "8", "pretrain_gpt.py"},
      Llama3Dims());
  const RunResult r = Plan(args);
  const v1::PlanResponse plan = PlanOf(r);
  ASSERT_GT(plan.candidates_size(), 0);
  EXPECT_EQ(plan.candidates(0).num_gpus(), 64u);
  EXPECT_NE(r.err.find("planned on the launch's 64 GPUs"), std::string::npos)
      << r.err;

  std::vector<std::string> bare = args;
  bare.erase(bare.begin() + 4, bare.begin() + 9);  // torchrun and its counts
  const RunResult refused = Plan(bare);
  EXPECT_EQ(refused.exit_code, 2) << refused.out;
  EXPECT_NE(refused.err.find("--gpus: required (the launch has no torchrun"),
            std::string::npos)
      << refused.err;
}

// `memgate plan ... -- <launch>` plans as the launch runs: a launch with
// nothing beyond the catalog model's settings peaks lower than the flags
// in each layout both list (Megatron's fused SwiGLU keeps 6 bytes a unit
// of FFN width where a plan by name counts the paper's 8); one with the
// precision-aware optimizer and half its optimizer offloaded plans with
// them, says what it replaced, and each candidate pasted into that launch
// (in place of its layout arguments) reads back as the same job.
TEST(CliPlanTest, ALaunchIsPlannedAsItRuns) {
  const std::string dims = Llama3Dims();
  auto launch = [&](const std::string& extra) {
    std::vector<std::string> args = {"--gpu=a100-40gb", "--gpus=64", "--top=4",
                                     "--format=json", "--", "torchrun",
                                     "pretrain_gpt.py"};
    for (absl::string_view w :
         absl::StrSplit(dims + extra, ' ', absl::SkipEmpty())) {
      args.emplace_back(w);
    }
    return args;
  };
  const v1::PlanResponse by_flags =
      PlanOf(Plan(With(kA100, {"--gpus=64", "--top=4", "--format=json"})));
  const v1::PlanResponse fused = PlanOf(Plan(launch("")));
  int lower = 0;  // the loop below must compare something
  for (const v1::Candidate& c : by_flags.candidates()) {
    for (const v1::Candidate& f : fused.candidates()) {
      if (f.megatron_arguments() != c.megatron_arguments()) continue;
      ++lower;
      EXPECT_LT(f.peak_bytes(), c.peak_bytes()) << c.megatron_arguments();
    }
  }
  EXPECT_GT(lower, 0);

  const std::string settings =
      "--use-distributed-optimizer --sequence-parallel "
      "--no-create-attention-mask-in-dataloader --optimizer-cpu-offload "
      "--optimizer-offload-fraction 0.5 --use-precision-aware-optimizer "
      "--exp-avg-dtype bf16 --exp-avg-sq-dtype bf16 ";
  std::vector<std::string> args = launch(
      settings + "--tensor-model-parallel-size 8 --micro-batch-size 2");
  args[3] = "--format=megatron-args";
  const RunResult planned = Plan(args);
  ASSERT_EQ(planned.exit_code, 0) << planned.err;
  EXPECT_NE(planned.err.find("memgate plan: note: the launch's layout (TP 8, "
                             "CP 1, PP 1, MBS 2) is what the plan searches"),
            std::string::npos)
      << planned.err;
  EXPECT_NE(planned.out.find("and the planned launch's other settings"),
            std::string::npos)
      << planned.out;
  EXPECT_EQ(ExpectArgumentsRoundTrip(planned, "pretrain_gpt.py " + dims +
                                                  settings,
                                     "a100-40gb", "64"),
            4);
  // The offload and bf16 states lower the layouts' peaks.
  args[3] = "--format=json";
  const v1::PlanResponse offloaded = PlanOf(Plan(args));
  ASSERT_GT(offloaded.candidates_size(), 0);
  int compared = 0;  // the loop below must compare something
  for (const v1::Candidate& c : by_flags.candidates()) {
    for (const v1::Candidate& o : offloaded.candidates()) {
      if (o.megatron_arguments() == c.megatron_arguments()) {
        ++compared;
        EXPECT_LT(o.peak_bytes(), c.peak_bytes()) << c.megatron_arguments();
      }
    }
  }
  EXPECT_GT(compared, 0);
}

// Under Megatron's default padding (128 x TP) a plan from a TP 1 launch
// pads the vocabulary at each candidate's TP: a TP 8 candidate pasted into
// the launch checks to the byte of the plan's peak (129,024 rows, not the
// launch's 128,256). The plan padded every candidate at the launch's TP.
TEST(CliPlanTest, ACandidateOfLargerTpChecksToItsOwnPeak) {
  // kLlama3Launch pads by 1; this launch keeps Megatron's default.
  std::string launch = "pretrain_gpt.py " + Llama3Dims();
  const std::string no_padding = "--make-vocab-size-divisible-by 1 ";
  launch.erase(launch.find(no_padding), no_padding.size());
  const v1::PlanResponse plan = PlanOf(Plan(WithWords(
      {"--gpu=h100-80gb", "--gpus=64", "--top=200", "--format=json", "--",
       "torchrun"},
      launch)));
  int checked = 0;
  for (const v1::Candidate& c : plan.candidates()) {
    if (c.tensor_parallel() != 8 || checked == 2) continue;
    const v1::Decision decision =
        CheckedLaunch({"--gpu=h100-80gb", "--gpus=64"},
                      launch + " " + c.megatron_arguments());
    EXPECT_DOUBLE_EQ(decision.estimate().peak().total_bytes(), c.peak_bytes())
        << c.megatron_arguments();
    ++checked;
  }
  EXPECT_EQ(checked, 2);
}

// NVIDIA's DeepSeek-V3 H100 recipe (TP 2, PP 8, EP 64, interleaved in
// its layout, fp8 and the EP overlap) planned with its own launch: the
// published layout is among the first five, GREEN, in the recipe's
// layout form, with the peak `check` gives the launch itself.
TEST(CliPlanTest, TheDeepSeekV3RecipeRanksInTheFirstFive) {
  std::vector<std::string> launch;
  for (absl::string_view w :
       absl::StrSplit(testing::RecipeLaunch("deepseek_v3_h100",
                                            {"base", "fp8", "overlap"}),
                      ' ', absl::SkipEmpty())) {
    launch.emplace_back(w);
  }
  const RunResult r = Plan(
      With({"--gpu=h100-80gb", "--top=5", "--format=json", "--"}, launch));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  v1::PlanResponse plan;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(r.out, &plan).ok())
      << r.out;
  ASSERT_EQ(plan.candidates_size(), 5);
  const v1::Candidate* published = nullptr;
  for (const v1::Candidate& c : plan.candidates()) {
    EXPECT_EQ(c.zone(), v1::ZONE_GREEN) << c.why();
    if (c.tensor_parallel() == 2 && c.context_parallel() == 1 &&
        c.pipeline_parallel() == 8 && c.expert_parallel() == 64) {
      published = &c;
    }
  }
  ASSERT_NE(published, nullptr) << r.out;
  EXPECT_EQ(published->num_gpus(), 1024u);
  EXPECT_NE(published->megatron_arguments().find(
                "--pipeline-model-parallel-layout"),
            std::string::npos)
      << published->megatron_arguments();

  const RunResult check = testing::Run(
      With({testing::RunfilePath("client/memgate"), "check",
            "--gpu=h100-80gb", "--format=json", "--"},
           launch));
  ASSERT_EQ(check.exit_code, 0) << check.err;
  v1::Decision decision;
  ASSERT_TRUE(
      google::protobuf::util::JsonStringToMessage(check.out, &decision).ok())
      << check.out;
  EXPECT_EQ(decision.verdict(), v1::VERDICT_ADMIT);
  const v1::StageMemory& peak = decision.estimate().peak();
  EXPECT_NEAR(published->peak_bytes(),
              peak.total_bytes() + peak.expert_imbalance_bytes(), 1);
}

// By name, each --format=megatron-args line is a whole launch's arguments
// (the model's own, its precision, dropout 0, then the candidate's): after
// a script and nothing else, `memgate check` admits it at or below its
// candidate's peak (Megatron's fused SwiGLU keeps 6 B a unit of FFN where
// the plan by name counts the paper's 8), and with --fused-swiglu at the
// peak itself. Before, such a line read as Megatron's defaults (GeLU,
// LayerNorm, biases, fp32, dropout 0.1): Llama-3.1-405B's first
// candidate, GREEN at 57.90 GiB, checked YELLOW at 65.51.
TEST(CliPlanTest, ByNameEveryLineIsAWholeLaunch) {
  for (const bool fused : {false, true}) {
    std::vector<std::string> flags = {
        "--model=llama-3.1-405b", "--gpu=h100-80gb", "--gpus=1024",
        "--seq=8192", "--gbs=512", "--top=6", "--format=megatron-args"};
    if (fused) flags.push_back("--fused-swiglu");
    const RunResult r = Plan(flags);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(absl::StartsWith(r.out, "# every line is a launch's arguments"))
        << r.out;
    // The header says what the lines' peaks are to the candidates'.
    EXPECT_EQ(r.out.find("the plan by name counts the paper's 8") !=
                  std::string::npos,
              !fused)
        << r.out;
    int checked = 0;
    double planned = 0;
    for (absl::string_view line : absl::StrSplit(r.out, '\n')) {
      if (absl::StartsWith(line, "# rank")) {
        const std::string text(line);
        const size_t zone_end = text.find(' ', text.find(": ") + 2);
        ASSERT_TRUE(absl::SimpleAtod(
            text.substr(zone_end + 1, text.find(" GiB") - zone_end - 1),
            &planned))
            << text;
        continue;
      }
      if (line.empty() || absl::StartsWith(line, "#")) continue;
      std::string words = "pretrain_gpt.py " + std::string(line);
      words.erase(std::remove(words.begin(), words.end(), '"'), words.end());
      const v1::Decision d =
          CheckedLaunch({"--gpu=h100-80gb", "--gpus=1024"}, words);
      EXPECT_EQ(d.verdict(), v1::VERDICT_ADMIT) << line;
      const double checked_gib = d.estimate().peak_gib();
      if (fused) {
        EXPECT_NEAR(checked_gib, planned, 0.006) << line;
      } else {
        EXPECT_LE(checked_gib, planned + 0.006) << line;
      }
      ++checked;
    }
    EXPECT_EQ(checked, 6);
  }
}

// A launch gives its pipeline split, virtual stages or full recomputation
// in arguments that appending cannot remove, and Megatron refuses some
// forms beside others: each candidate says its split in the launch's
// forms (only splits they can say are planned), and every candidate line
// appended to its launch checks to its candidate's peak and zone. Before,
// a first/last launch's lines were refused or estimated as another split,
// a full-recomputation launch's lines all recomputed.
TEST(CliPlanTest, EveryCandidateAppendedToItsLaunchIsTheCandidate) {
  const std::string base =
      "pretrain_gpt.py " + Llama3Dims() +
      "--micro-batch-size 1 --use-distributed-optimizer --sequence-parallel "
      "--no-create-attention-mask-in-dataloader --tensor-model-parallel-size 2 ";
  for (const char* split :
       {"--pipeline-model-parallel-size 4 "
        "--num-layers-per-virtual-pipeline-stage 4",
        "--pipeline-model-parallel-size 4 --num-virtual-stages-per-pipeline-rank 2",
        "--pipeline-model-parallel-size 4 --decoder-first-pipeline-num-layers 7 "
        "--decoder-last-pipeline-num-layers 7",
        "--pipeline-model-parallel-size 2 --account-for-embedding-in-pipeline-split "
        "--account-for-loss-in-pipeline-split",
        "--pipeline-model-parallel-size 2 --recompute-granularity full "
        "--recompute-method uniform --recompute-num-layers 1"}) {
    const std::string launch = base + split + " ";
    const RunResult r = PlanLaunch(
        {"--gpu=a100-40gb", "--gpus=64", "--top=8", "--format=megatron-args"},
        launch);
    ASSERT_EQ(r.exit_code, 0) << split << "\n" << r.err;
    EXPECT_EQ(ExpectArgumentsRoundTrip(r, launch, "a100-40gb", "64"), 8)
        << split;
  }
  // Forms that leave no layout of these GPUs (33 accounted layers over a
  // divisor of 64) say so, rather than an empty plan alone.
  const RunResult none = PlanLaunch(
      {"--gpu=a100-40gb", "--gpus=64", "--top=3"},
      base + "--pipeline-model-parallel-size 3 "
             "--account-for-embedding-in-pipeline-split ");
  ASSERT_EQ(none.exit_code, 0) << none.err;
  EXPECT_NE(none.err.find("no layout of 64 GPUs splits the model in the "
                          "launch's forms"),
            std::string::npos)
      << none.err;
}

// [LW] A Muon launch with the distributed optimizer is planned as Megatron
// runs it (core 0.19's layer-wise optimizer, --megatron-core), and every
// candidate appended to it checks to its own peak; under a release before
// 0.18 the plan is refused naming the rule (Megatron asserts).
TEST(CliPlanTest, AMuonLaunchIsPlannedWithTheLayerWiseOptimizer) {
  const std::string launch =
      "pretrain_gpt.py " + Llama3Dims() +
      "--micro-batch-size 1 --use-distributed-optimizer --sequence-parallel "
      "--no-create-attention-mask-in-dataloader --tensor-model-parallel-size "
      "2 --optimizer muon ";
  const RunResult r =
      PlanLaunch({"--gpu=a100-40gb", "--gpus=64", "--top=4",
                  "--megatron-core=0.19.0", "--format=megatron-args"},
                 launch);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ExpectArgumentsRoundTrip(r, launch, "a100-40gb", "64",
                                     {"--megatron-core=0.19.0"}),
            4);
  const RunResult old =
      PlanLaunch({"--gpu=a100-40gb", "--gpus=64", "--megatron-core=0.17.0"},
                 launch);
  EXPECT_EQ(old.exit_code, 2) << old.out;
  EXPECT_NE(old.err.find("parallel.distributed_optimizer"), std::string::npos)
      << old.err;
}

// A launch whose softmax runs in cuDNN's fused attention (--softmax-type
// learnable --attention-backend fused) runs CP over an all-to-all only:
// its plan's CP candidates carry --cp-comm-type a2a, and every candidate
// appended to the launch checks to its own peak (with p2p they were
// refused).
TEST(CliPlanTest, ASoftmaxWithSinksPlansContextParallelOverAllToAll) {
  const std::string launch =
      "pretrain_gpt.py " + Llama3Dims() +
      "--micro-batch-size 1 --use-distributed-optimizer --sequence-parallel "
      "--no-create-attention-mask-in-dataloader --tensor-model-parallel-size 2 "
      "--softmax-type learnable --attention-backend fused ";
  const RunResult r = PlanLaunch(
      {"--gpu=a100-40gb", "--gpus=64", "--top=40", "--format=megatron-args"},
      launch);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("--softmax-type: TransformerEngine's fused attention"),
            std::string::npos)
      << r.err;
  int with_cp = 0;
  for (const std::string& line : ArgumentLines(r.out)) {
    if (line.find("--context-parallel-size 1 ") == std::string::npos) {
      ++with_cp;
      EXPECT_NE(line.find("--cp-comm-type a2a"), std::string::npos) << line;
    }
  }
  EXPECT_GT(with_cp, 0) << r.out;
  EXPECT_EQ(ExpectArgumentsRoundTrip(r, launch, "a100-40gb", "64"), 40);
}

// A launch that gives --pipeline-model-parallel-layout (NVIDIA's
// DeepSeek-V3 recipe, bf16) takes every candidate's arguments appended as
// they are: each says its split as a layout, which replaces the launch's,
// and checks to its candidate's peak. (A first/last split appended to it
// was refused: Megatron takes no such argument beside a layout.)
TEST(CliPlanTest, ALaunchWithALayoutTakesEveryCandidateAppended) {
  std::vector<std::string> launch;
  for (absl::string_view w :
       absl::StrSplit(testing::RecipeLaunch("deepseek_v3_h100", {"base"}),
                      ' ', absl::SkipEmpty())) {
    launch.emplace_back(w);
  }
  const RunResult r = Plan(
      With({"--gpu=h100-80gb", "--top=12", "--format=json", "--"}, launch));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("each candidate says its split as one"),
            std::string::npos)
      << r.err;
  v1::PlanResponse plan;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(r.out, &plan).ok());
  ASSERT_EQ(plan.candidates_size(), 12);
  for (const v1::Candidate& c : plan.candidates()) {
    std::vector<std::string> appended = launch;
    // The arguments as a shell reads them: the layout's quotes removed.
    for (absl::string_view w :
         absl::StrSplit(c.megatron_arguments(), ' ', absl::SkipEmpty())) {
      appended.emplace_back(absl::StripPrefix(absl::StripSuffix(w, "\""),
                                              "\""));
    }
    const RunResult check = testing::Run(
        With({testing::RunfilePath("client/memgate"), "check",
              "--gpu=h100-80gb", "--format=json", "--"},
             appended));
    ASSERT_EQ(check.exit_code, 0) << c.megatron_arguments() << "\n"
                                  << check.err;
    v1::Decision decision;
    ASSERT_TRUE(
        google::protobuf::util::JsonStringToMessage(check.out, &decision)
            .ok());
    const v1::StageMemory& peak = decision.estimate().peak();
    EXPECT_NEAR(c.peak_bytes(),
                peak.total_bytes() + peak.expert_imbalance_bytes(), 1)
        << c.megatron_arguments();
  }
}

// A candidate that fits by the cheap selective modules pastes back into
// its launch: NVIDIA's DeepSeek-V3 recipe (bf16) without its layout and
// recomputation, planned on its 1,024 GPUs; such a candidate's arguments
// appended to the launch check to the candidate's peak, admitted.
TEST(CliPlanTest, ACandidateRecomputingCheapModulesChecksToItsPeak) {
  std::string launch = testing::RecipeLaunch("deepseek_v3_h100", {"base"});
  for (const char* planned :
       {"--tensor-model-parallel-size 2 ", "--pipeline-model-parallel-size 8 ",
        "--expert-model-parallel-size 64 ", "--context-parallel-size 1 ",
        "--expert-tensor-parallel-size 1 ", "--micro-batch-size 1 ",
        "--recompute-granularity selective --recompute-modules mla_up_proj "
        "mlp ",
        "--pipeline-model-parallel-layout Et|(tt|)*30mL "}) {
    const size_t at = launch.find(planned);
    ASSERT_NE(at, std::string::npos) << planned;
    launch.erase(at, std::string(planned).size());
  }
  const v1::PlanResponse plan = PlanOf(Plan(WithWords(
      {"--gpu=h100-80gb", "--top=1000", "--format=json", "--"}, launch)));
  int checked = 0;
  for (const v1::Candidate& c : plan.candidates()) {
    if (c.recompute_modules_size() == 0 || checked == 2) continue;
    EXPECT_NE(c.megatron_arguments().find(
                  "--recompute-granularity selective --recompute-modules "
                  "moe_act layernorm mla_up_proj --moe-grouped-gemm"),
              std::string::npos)
        << c.megatron_arguments();
    std::string args = c.megatron_arguments();
    args.erase(std::remove(args.begin(), args.end(), '"'), args.end());
    const v1::Decision decision =
        CheckedLaunch({"--gpu=h100-80gb"}, launch + " " + args);
    EXPECT_EQ(decision.verdict(), v1::VERDICT_ADMIT);
    const v1::StageMemory& peak = decision.estimate().peak();
    EXPECT_NEAR(c.peak_bytes(),
                peak.total_bytes() + peak.expert_imbalance_bytes(), 1)
        << args;
    ++checked;
  }
  EXPECT_EQ(checked, 2);
}

// A Megatron-FSDP launch plans Megatron-FSDP layouts: every candidate
// shards with the launch's strategy and buffers, without a pipeline
// (Megatron-FSDP has none), and pasted back into the launch checks to its
// peak, admitted.
TEST(CliPlanTest, AnFsdpLaunchPlansFsdpLayoutsThatCheckToTheirPeak) {
  const std::string launch =
      "torchrun --nnodes 2 --nproc-per-node 8 pretrain_gpt.py " +
      Llama3Dims() +
      "--use-distributed-optimizer --use-megatron-fsdp "
      "--data-parallel-sharding-strategy optim_grads --fsdp-double-buffer "
      "--no-create-attention-mask-in-dataloader";
  const RunResult r = PlanLaunch({"--gpu=h100-80gb", "--format=json"}, launch);
  const v1::PlanResponse plan = PlanOf(r);
  EXPECT_NE(r.err.find("the launch shards with Megatron-FSDP (optim_grads)"),
            std::string::npos)
      << r.err;
  ASSERT_GT(plan.candidates_size(), 1);
  for (const v1::Candidate& c : plan.candidates()) {
    EXPECT_EQ(c.pipeline_parallel(), 1u) << c.ShortDebugString();
    EXPECT_EQ(c.data_parallel_sharding(),
              v1::DATA_PARALLEL_SHARDING_OPTIM_GRADS);
  }
  for (int i = 0; i < 2; ++i) {
    const v1::Candidate& c = plan.candidates(i);
    ASSERT_EQ(c.zone(), v1::ZONE_GREEN) << c.ShortDebugString();
    const v1::Decision decision = CheckedLaunch(
        {"--gpu=h100-80gb"}, launch + " " + c.megatron_arguments());
    EXPECT_EQ(decision.verdict(), v1::VERDICT_ADMIT);
    EXPECT_EQ(decision.estimate().job().parallel().data_parallel_sharding(),
              v1::DATA_PARALLEL_SHARDING_OPTIM_GRADS);
    EXPECT_NEAR(c.peak_bytes(), decision.estimate().peak().total_bytes(), 1)
        << c.megatron_arguments();
  }
  // By name, --fsdp plans the same way; a strategy Megatron does not have,
  // or one the launch contradicts, is refused naming the flag.
  const v1::PlanResponse by_name = PlanOf(
      Plan({"--model=llama-3.1-8b", "--gpu=h100-80gb", "--gpus=16",
            "--seq=8192", "--gbs=64", "--fsdp=optim_grads_params",
            "--format=json"}));
  ASSERT_GT(by_name.candidates_size(), 0);
  for (const v1::Candidate& c : by_name.candidates()) {
    EXPECT_EQ(c.pipeline_parallel(), 1u) << c.ShortDebugString();
    EXPECT_EQ(c.data_parallel_sharding(),
              v1::DATA_PARALLEL_SHARDING_OPTIM_GRADS_PARAMS);
  }
  RunResult bad = Plan({"--model=llama-3.1-8b", "--gpu=h100-80gb",
                        "--gpus=16", "--seq=8192", "--gbs=64", "--fsdp=zero3"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--fsdp: must be no_shard, optim, optim_grads or "
                         "optim_grads_params (got 'zero3')"),
            std::string::npos)
      << bad.err;
  bad = PlanLaunch({"--gpu=h100-80gb", "--fsdp=optim"}, launch);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--fsdp: optim but the launch shards with "
                         "optim_grads"),
            std::string::npos)
      << bad.err;
}

// A launch with --tp-comm-overlap plans layouts that run it: none at TP 1
// (Megatron asserts sequence parallelism, off there), said in a note; every
// candidate counts its userbuffers, and pasted back checks to its peak.
TEST(CliPlanTest, ATpCommOverlapLaunchPlansItsUserbuffers) {
  const std::string launch =
      "torchrun --nnodes 2 --nproc-per-node 8 pretrain_gpt.py " +
      Llama3Dims() +
      "--tensor-model-parallel-size 2 --sequence-parallel --tp-comm-overlap "
      "--use-distributed-optimizer --no-create-attention-mask-in-dataloader";
  const RunResult r = PlanLaunch({"--gpu=h100-80gb", "--format=json"}, launch);
  const v1::PlanResponse plan = PlanOf(r);
  EXPECT_NE(r.err.find("--tp-comm-overlap: every candidate counts its "
                       "userbuffers, and none has TP 1"),
            std::string::npos)
      << r.err;
  ASSERT_GT(plan.candidates_size(), 2);
  for (const v1::Candidate& c : plan.candidates()) {
    EXPECT_GT(c.tensor_parallel(), 1u) << c.ShortDebugString();
  }
  for (int i = 0; i < 2; ++i) {
    const v1::Candidate& c = plan.candidates(i);
    const v1::Decision decision = CheckedLaunch(
        {"--gpu=h100-80gb"}, launch + " " + c.megatron_arguments());
    const v1::StageMemory& peak = decision.estimate().peak();
    // 12 buffers of (8192 x MBS / CP) x 4096 bf16 elements, and flags.
    const double buffers = 12 * 2.0 * 8192 * c.micro_batch_size() /
                           c.context_parallel() * 4096;
    EXPECT_GT(peak.te_userbuffer_bytes(), buffers) << c.megatron_arguments();
    EXPECT_LT(peak.te_userbuffer_bytes(), buffers + 12 * 6 * (1 << 20));
    EXPECT_NEAR(c.peak_bytes(), peak.total_bytes(), 1)
        << c.megatron_arguments();
  }
}

// Meta's Llama-3.1-405B layout (Llama 3 paper, table 4: TP 8, CP 1, PP 16
// on 8,192 and on 16,384 H100s, 8k sequences, 16M-token batches: 2,048
// sequences), planned from a Megatron launch of the model: its TP x CP x
// PP is among the first five, GREEN, with the schedule it needs under
// Megatron's interleaving. By name it ranks lower: the plan counts the
// paper's unfused SwiGLU, 2 B a unit of FFN width more (bench/RESULTS.md).
TEST(CliPlanTest, MetasLlama405BLayoutRanksInTheFirstFiveFromItsLaunch) {
  const std::string launch =
      "torchrun pretrain_gpt.py --num-layers 126 --hidden-size 16384 "
      "--ffn-hidden-size 53248 --num-attention-heads 128 --seq-length 8192 "
      "--global-batch-size 2048 --no-create-attention-mask-in-dataloader "
      "--sequence-parallel --use-distributed-optimizer " +
      std::string(kLlama3Launch);
  for (const char* gpus : {"--gpus=8192", "--gpus=16384"}) {
    const v1::PlanResponse plan = PlanOf(Plan(WithWords(
        {"--gpu=h100-80gb", gpus, "--top=5", "--format=json", "--"}, launch)));
    ASSERT_EQ(plan.candidates_size(), 5) << gpus;
    int published = 0;
    for (const v1::Candidate& c : plan.candidates()) {
      EXPECT_EQ(c.zone(), v1::ZONE_GREEN) << c.why();
      published += c.tensor_parallel() == 8 && c.context_parallel() == 1 &&
                   c.pipeline_parallel() == 16;
    }
    EXPECT_EQ(published, 1) << gpus;
  }
}

// What a launch and the flags both give must agree, and a launch the
// planner cannot honour is refused by name.
// A plan by model name has no launch to date it: --megatron-core names
// the release, and every layout is estimated as that release runs it (a
// later release keeps no weighted unpermute copy: no layout estimated
// plainly holds more, some hold less). A release that names both sides
// is refused by flag.
TEST(CliPlanTest, TheReleaseFlagPlansAsThatReleaseRuns) {
  const std::vector<std::string> qwen = {
      "--model=qwen3-30b-a3b", "--gpu=h100-80gb", "--gpus=64", "--seq=4096",
      "--gbs=512", "--top=1000", "--format=json"};
  const RunResult unknown_run = Plan(qwen);
  const RunResult later_run = Plan(With(qwen, {"--megatron-core=0.13.0"}));
  ASSERT_EQ(unknown_run.exit_code, 0) << unknown_run.err;
  ASSERT_EQ(later_run.exit_code, 0) << later_run.err;
  const v1::PlanResponse unknown = PlanOf(unknown_run);
  const v1::PlanResponse later = PlanOf(later_run);
  auto key = [](const v1::Candidate& c) {
    return std::vector<uint32_t>{
        c.tensor_parallel(),        c.context_parallel(),
        c.pipeline_parallel(),      c.expert_parallel(),
        c.expert_tensor_parallel(), c.micro_batch_size(),
        c.virtual_pipeline_stages(), c.recompute_num_layers(),
        c.first_stage_layers(),     c.last_stage_layers()};
  };
  int compared = 0, lower = 0;
  for (const v1::Candidate& c : later.candidates()) {
    for (const v1::Candidate& u : unknown.candidates()) {
      if (key(c) != key(u)) continue;
      ++compared;
      EXPECT_LE(c.peak_bytes(), u.peak_bytes()) << c.ShortDebugString();
      if (c.peak_bytes() < u.peak_bytes()) ++lower;
    }
  }
  EXPECT_GT(compared, 20);
  EXPECT_GT(lower, compared / 2);

  const RunResult ambiguous = Plan(With(qwen, {"--megatron-core=0.12"}));
  EXPECT_EQ(ambiguous.exit_code, 2);
  EXPECT_NE(ambiguous.err.find("(--megatron-core): 0.12 names two"),
            std::string::npos)
      << ambiguous.err;
}

// --fused-swiglu plans by name as Megatron runs a SwiGLU model (its fused
// kernel; without it a note says so): Meta's Llama-3.1-405B layout on
// 8,192 H100s (TP 8, CP 1, PP 16) comes into the first five, where the
// paper's unfused count leaves it out (planner_test has the why).
TEST(CliPlanTest, TheFusedSwigluFlagPlansMegatronsKernel) {
  const std::vector<std::string> meta = {
      "--model=llama-3.1-405b", "--gpu=h100-80gb", "--gpus=8192",
      "--seq=8192", "--gbs=2048", "--top=5", "--format=json"};
  auto rank_of_meta = [](const v1::PlanResponse& plan) {
    for (const v1::Candidate& c : plan.candidates()) {
      if (c.tensor_parallel() == 8 && c.context_parallel() == 1 &&
          c.pipeline_parallel() == 16) {
        return c.rank();
      }
    }
    return 0u;
  };
  const RunResult paper = Plan(meta);
  const RunResult fused = Plan(With(meta, {"--fused-swiglu"}));
  ASSERT_EQ(paper.exit_code, 0) << paper.err;
  ASSERT_EQ(fused.exit_code, 0) << fused.err;
  EXPECT_EQ(rank_of_meta(PlanOf(paper)), 0u);
  // The paper's count is said, with the flag that changes it.
  EXPECT_NE(paper.err.find("--fused-swiglu plans as it does"),
            std::string::npos)
      << paper.err;
  EXPECT_EQ(fused.err.find("--fused-swiglu plans as it does"),
            std::string::npos)
      << fused.err;
  const uint32_t rank = rank_of_meta(PlanOf(fused));
  EXPECT_GE(rank, 1u);
  EXPECT_LE(rank, 5u);
  const RunResult gelu = Plan({"--model=nemotron-4-340b", "--gpu=h100-80gb",
                               "--gpus=2048", "--seq=4096", "--gbs=512",
                               "--fused-swiglu"});
  EXPECT_EQ(gelu.exit_code, 2);
  EXPECT_NE(gelu.err.find("--fused-swiglu"), std::string::npos) << gelu.err;
}

TEST(CliPlanTest, ALaunchThatDisagreesOrGroupsIsRefused) {
  const std::vector<std::string> launch = {
      "--", "torchrun", "pretrain_gpt.py", "--num-layers", "32",
      "--hidden-size", "4096", "--num-attention-heads", "32",
      "--seq-length", "8192", "--global-batch-size", "64", "--bf16",
      "--vocab-size", "32000"};
  RunResult r = Plan(With({"--gpu=a100-40gb", "--gpus=16", "--seq=4096"},
                          launch));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--seq: 4096 but the launch says --seq-length 8192"),
            std::string::npos)
      << r.err;
  r = Plan(With({"--gpu=a100-40gb", "--gpus=16", "--precision=fp32"}, launch));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--precision:"), std::string::npos) << r.err;
  // A micro-batch group must lie in [p, m]: fixed, it would be wrong for
  // most layouts, and a candidate pasted back would not override it.
  r = Plan(With(With({"--gpu=a100-40gb", "--gpus=16"}, launch),
                {"--pipeline-model-parallel-size", "2",
                 "--num-virtual-stages-per-pipeline-rank", "2",
                 "--microbatch-group-size-per-virtual-pipeline-stage", "4"}));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.find("memgate plan: --microbatch-group-size-per-virtual-"
                       "pipeline-stage: plans run interleaving with "
                       "Megatron's default group"),
            0u)
      << r.err;
  // Without --seq-length and --seq, nothing says the sequence length.
  r = Plan({"--gpu=a100-40gb", "--gpus=16", "--", "torchrun", "pretrain_gpt.py",
            "--num-layers", "32", "--hidden-size", "4096",
            "--num-attention-heads", "32", "--global-batch-size", "64",
            "--vocab-size", "32000"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("seq"), std::string::npos) << r.err;
}

TEST(CliPlanTest, PaperTableInTextCsvAndMarkdown) {
  const std::vector<std::string> table =
      With(kA100, {"--gpus=8,16,32,64,128,256", "--table", "--max-mbs=8"});
  RunResult r = Plan(table);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The paper's first A100 row, and no colour codes when not a terminal.
  EXPECT_NE(r.out.find("(4, 1, 2, 1)"), std::string::npos);
  EXPECT_NE(r.out.find("27.20 G     21.59 G     18.79 G     17.39 G     "
                       "16.69 G     16.34 G"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find('\033'), std::string::npos);

  r = Plan(With(table, {"--format=csv"}));
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.rfind("tp,cp,pp,mbs,8_gpus_gib,8_gpus_zone,16_gpus_gib", 0),
            0u)
      << r.out;
  EXPECT_NE(r.out.find("\n4,1,2,2,37.58,YELLOW,31.97,GREEN,"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("4,2,2,1,,,16.41,GREEN"), std::string::npos);

  r = Plan(With(table, {"--format=markdown"}));
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("| (TP, CP, PP, MBS) | 8 GPUs | 16 GPUs |"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("| (4, 1, 2, 2) | 37.58 Y | 31.97 G |"),
            std::string::npos);
}

// The table shows the layouts that are not RED at some GPU count, and says
// what it left out: a count of the others, or, where every plain layout is
// RED (Llama-3.1-405B's 126 layers split evenly only over 1 or 2 stages on
// 8,192 GPUs), that the table is empty for that reason and where to look.
TEST(CliPlanTest, PaperTableSaysWhatItLeftOut) {
  RunResult r = Plan({"--model=llama-3.1-70b", "--gpu=h100-80gb",
                      "--gpus=64,128", "--seq=8192", "--gbs=512", "--table"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("(8, 1, 2, 1)           62.40 G     56.24 G"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(" more plain layouts, RED at every GPU count, not "
                       "shown.\n"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("Every plain 1F1B layout"), std::string::npos);

  for (const char* format : {"--format=text", "--format=markdown"}) {
    r = Plan({"--model=llama-3.1-405b", "--gpu=h100-80gb", "--gpus=8192",
              "--seq=8192", "--gbs=2048", "--table", format});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out.find(" G "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("Every plain 1F1B layout (even stages, no "
                         "interleaving or recomputation) is RED at every GPU "
                         "count given ("),
              std::string::npos)
        << format << "\n" << r.out;
    EXPECT_NE(r.out.find("without --table the plan also searches uneven "
                         "stages, interleaving and recomputation.\n"),
              std::string::npos);
  }
  // CSV stays data: its header and no rows.
  r = Plan({"--model=llama-3.1-405b", "--gpu=h100-80gb", "--gpus=8192",
            "--seq=8192", "--gbs=2048", "--table", "--format=csv"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "tp,cp,pp,mbs,8192_gpus_gib,8192_gpus_zone\n");
}

// Where nothing is GREEN, a note says how many GPUs would do: the first
// doubling of the count at which the plan's first layout is GREEN (the
// same global batch). Llama-3.1-405B on 8 A100s (40 GB) at global batch
// 64: the count it names ranks a GREEN layout first, half of it does not,
// and a plan with a GREEN layout has no such note.
TEST(CliPlanTest, NothingGreenSaysHowManyGpusWould) {
  const std::vector<std::string> base = {"--model=llama-3.1-405b",
                                         "--gpu=a100-40gb", "--seq=8192",
                                         "--gbs=64", "--top=1"};
  RunResult r = Plan(With(base, {"--gpus=8"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(" RED "), std::string::npos) << r.out;
  const std::string lead =
      "memgate plan: note: nothing is GREEN on 8 GPUs; at global batch 64 "
      "the first doubling where a layout is GREEN is ";
  const size_t at = r.err.find(lead);
  ASSERT_NE(at, std::string::npos) << r.err;
  uint32_t gpus = 0;
  ASSERT_TRUE(absl::SimpleAtoi(
      r.err.substr(at + lead.size(),
                   r.err.find(' ', at + lead.size()) - at - lead.size()),
      &gpus))
      << r.err;
  EXPECT_NE(r.err.find(absl::StrCat("(memgate plan --gpus=", gpus,
                                    " ranks them)\n")),
            std::string::npos)
      << r.err;
  ASSERT_GT(gpus, 16u);
  RunResult there = Plan(With(base, {absl::StrCat("--gpus=", gpus)}));
  ASSERT_EQ(there.exit_code, 0) << there.err;
  EXPECT_NE(there.out.find(" GREEN "), std::string::npos) << there.out;
  EXPECT_EQ(there.err.find("nothing is GREEN"), std::string::npos);
  RunResult half = Plan(With(base, {absl::StrCat("--gpus=", gpus / 2)}));
  ASSERT_EQ(half.exit_code, 0) << half.err;
  EXPECT_EQ(half.out.find(" GREEN "), std::string::npos) << half.out;
  EXPECT_NE(half.err.find(absl::StrCat("nothing is GREEN on ", gpus / 2,
                                       " GPUs; at global batch 64 the first "
                                       "doubling where a layout is GREEN is ",
                                       gpus, " GPUs")),
            std::string::npos)
      << half.err;
}

TEST(CliPlanTest, BadInputExitsTwo) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{
           {"--model=llama-3.1-8b", "--gpu=a100-40gb", "--seq=8192",
            "--gpus=16"},
           With(kA100, {}),
           With(kA100, {"--gpus=16,x"}),
           With(kA100, {"--gpus=0"}),
           With(kA100, {"--gpus=16", "--format=csv"}),
           With(kA100, {"--gpus=16", "--format=xml"}),
           With(kA100, {"--gpus=16", "--threshold=3"}),
           With(kA100, {"--gpus=16", "--model=gpt-2"}),
           With(kA100, {"--gpus=16", "--max-mbs=0"})}) {
    const RunResult r = Plan(args);
    EXPECT_EQ(r.exit_code, 2) << args.back() << "\n" << r.out;
    EXPECT_FALSE(r.err.empty());
  }
  // 0 is the request's unset micro-batch bound: refused, never read as 16.
  EXPECT_NE(Plan(With(kA100, {"--gpus=16", "--max-mbs=0"}))
                .err.find("--max-mbs: must be at least 1"),
            std::string::npos);
}

TEST(CliPlanTest, RefusedCheckPrintsWhatFits) {
  const RunResult r = testing::Run(
      {testing::RunfilePath("client/memgate"), "check",
       "--model=llama-3.1-8b", "--gpu=a100-40gb", "--gpus=8", "--tp=4",
       "--pp=2", "--mbs=2", "--seq=8192", "--gbs=1024"});
  EXPECT_EQ(r.exit_code, 1);
  // The same layout at MBS 1, with its best schedule, named once. (1,024
  // micro-batches a step leave a 0.1% bubble; over an A100's NVLink the
  // cost model finds two chunks' extra sends cheaper than the half of it
  // they save, by a hair: interleaved x2, 29.83 GiB, plain 27.20.)
  const std::string layout = "fits instead on 8 GPUs: TP=4 CP=1 PP=2 MBS=1 (";
  const size_t first = r.out.find(layout);
  ASSERT_NE(first, std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(layout, first + 1), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("or this layout on 16 GPUs"), std::string::npos);
}

// A refused launch is told the least recomputation that makes it fit as it
// is; the launch with those arguments added is admitted.
TEST(CliPlanTest, RefusedLaunchLearnsTheRecomputationThatFits) {
  const std::string launch =
      "torchrun pretrain_gpt.py --num-layers 32 --hidden-size 4096 "
      "--ffn-hidden-size 14336 --num-attention-heads 32 " +
      std::string(kLlama3Launch) +
      "--tensor-model-parallel-size 4 --pipeline-model-parallel-size 2 "
      "--micro-batch-size 2 --global-batch-size 1024 --seq-length 8192 "
      "--max-position-embeddings 8192 --sequence-parallel "
      "--use-distributed-optimizer";
  auto check = [](const std::string& words) {
    std::vector<std::string> args = {testing::RunfilePath("client/memgate"),
                                     "check", "--gpu=a100-40gb", "--gpus=8",
                                     "--"};
    for (absl::string_view w : absl::StrSplit(words, ' ', absl::SkipEmpty())) {
      args.emplace_back(w);
    }
    return testing::Run(args);
  };
  const RunResult refused = check(launch);
  ASSERT_EQ(refused.exit_code, 1) << refused.out << refused.err;
  const size_t at = refused.out.find("fits with recomputation: ");
  ASSERT_NE(at, std::string::npos) << refused.out;
  const size_t open = refused.out.find("(--recompute-granularity", at);
  ASSERT_NE(open, std::string::npos) << refused.out;
  const std::string flags =
      refused.out.substr(open + 1, refused.out.find(')', open) - open - 1);
  EXPECT_EQ(flags.rfind("--recompute-granularity full --recompute-method "
                        "block --recompute-num-layers ", 0),
            0u)
      << flags;
  const RunResult admitted = check(launch + " " + flags);
  EXPECT_EQ(admitted.exit_code, 0) << admitted.out << admitted.err;
}

// A refused MoE launch is told the cheap selective modules that make it
// fit, before full recomputation: NVIDIA's DeepSeek-V3 recipe (bf16)
// without its own recomputation and grouped GEMMs, under an 85% limit;
// the launch with those arguments added is admitted.
TEST(CliPlanTest, RefusedLaunchLearnsTheCheapModulesThatFit) {
  std::string launch = testing::RecipeLaunch("deepseek_v3_h100", {"base"});
  for (const char* dropped :
       {"--recompute-granularity selective --recompute-modules mla_up_proj "
        "mlp ",
        "--moe-grouped-gemm "}) {
    const size_t at = launch.find(dropped);
    ASSERT_NE(at, std::string::npos) << dropped;
    launch.erase(at, std::string(dropped).size());
  }
  auto check = [](const std::string& words) {
    return testing::Run(WithWords({testing::RunfilePath("client/memgate"),
                                   "check", "--gpu=h100-80gb",
                                   "--threshold=0.85", "--"},
                                  words));
  };
  const RunResult refused = check(launch);
  ASSERT_EQ(refused.exit_code, 1) << refused.out << refused.err;
  const std::string hint = "fits with selective recomputation (";
  const size_t at = refused.out.find(hint);
  ASSERT_NE(at, std::string::npos) << refused.out;
  EXPECT_LT(at, refused.out.find("fits with recomputation: "));
  const size_t open = at + hint.size();
  const std::string flags =
      refused.out.substr(open, refused.out.find(')', open) - open);
  EXPECT_EQ(flags,
            "--recompute-granularity selective --recompute-modules moe_act "
            "layernorm mla_up_proj --moe-grouped-gemm");
  const RunResult admitted = check(launch + " " + flags);
  EXPECT_EQ(admitted.exit_code, 0) << admitted.out << admitted.err;
}

}  // namespace
}  // namespace memgate
