#include "readers/megatron_args.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "estimator/catalog.h"
#include "estimator/estimate.h"
#include "estimator/job_resolver.h"
#include "estimator/memory_model.h"
#include "estimator/pipeline_layout.h"
#include "gtest/gtest.h"
#include "readers/hf_config.h"
#include "tests/recipe_launches.h"

namespace memgate {
namespace {

std::vector<std::string> Words(const std::string& line) {
  return absl::StrSplit(line, ' ', absl::SkipEmpty());
}

// A line of a batch script, as `check --launch-lines` (the Slurm hook's)
// reads it: its launch command (the first, the strongest), then that
// command's argv.
absl::StatusOr<MegatronLaunch> FromShellLine(const std::string& line) {
  absl::StatusOr<std::vector<std::vector<std::string>>> commands =
      LaunchCommandsOfShellLine(line);
  if (!commands.ok()) return commands.status();
  if (commands->empty()) return ParseMegatronLaunch({}, nullptr);
  return ParseMegatronLaunch(commands->front(), nullptr);
}

// Llama-3.1-8B as the paper trained it with Megatron-LM (core_r0.8).
constexpr char kLlama31_8B[] =
    "torchrun --nnodes 2 --nproc-per-node 8 pretrain_gpt.py "
    "--num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 "
    "--num-attention-heads 32 --group-query-attention --num-query-groups 8 "
    "--vocab-size 128256 --untie-embeddings-and-output-weights --swiglu "
    "--normalization RMSNorm --use-rotary-position-embeddings "
    "--disable-bias-linear --hidden-dropout 0 --attention-dropout 0 "
    "--tensor-model-parallel-size 4 --pipeline-model-parallel-size 2 "
    "--sequence-parallel --use-distributed-optimizer --use-flash-attn "
    "--micro-batch-size 1 --global-batch-size 1024 --seq-length 8192 --bf16 "
    "--tokenizer-type Llama3Tokenizer --lr 1e-4 --train-iters 25000";

// The Llama-3.1-8B launch with `extra` appended and `drop` (words split by
// '|') removed, read.
absl::StatusOr<MegatronLaunch> ReadLlamaLaunch(const std::string& extra,
                                               const std::string& drop) {
  std::string line = std::string(kLlama31_8B) + " " + extra;
  // `drop` may name several words, split by '|'.
  for (const std::string& word : std::vector<std::string>(
           absl::StrSplit(drop, '|', absl::SkipEmpty()))) {
    line.replace(line.find(word), word.size(), "");
  }
  return ParseMegatronLaunch(Words(line), nullptr);
}

// Dropped from that launch for Megatron-FSDP, which runs one stage only.
constexpr char kTwoStages[] = "--pipeline-model-parallel-size 2 ";

// That launch read into a job on H100-80GB (a failure is reported and
// gives an empty job).
v1::Job LlamaLaunchJob(const std::string& extra,
                       const std::string& drop = "") {
  absl::StatusOr<MegatronLaunch> l = ReadLlamaLaunch(extra, drop);
  EXPECT_TRUE(l.ok()) << extra << ": " << l.status();
  v1::Job job = l.ok() ? l->job : v1::Job();
  job.mutable_accelerator()->set_name("h100-80gb");
  return job;
}

// That launch on one pipeline stage, as Megatron-FSDP runs (validation.cc).
v1::Job OneStageLaunchJob(const std::string& extra) {
  return LlamaLaunchJob(extra, kTwoStages);
}

// The refusal of that launch; empty when it is read.
std::string LaunchRefusal(const std::string& extra,
                          const std::string& drop = "") {
  absl::StatusOr<MegatronLaunch> l = ReadLlamaLaunch(extra, drop);
  return l.ok() ? "" : std::string(l.status().message());
}

// Whether that launch is refused with every one of `names` in the message.
::testing::AssertionResult RefusedNaming(
    const std::string& extra, const std::string& drop,
    const std::vector<std::string>& names) {
  const std::string refusal = LaunchRefusal(extra, drop);
  if (refusal.empty()) {
    return ::testing::AssertionFailure() << extra << ": read, not refused";
  }
  for (const std::string& name : names) {
    if (!absl::StrContains(refusal, name)) {
      return ::testing::AssertionFailure()
             << extra << ": refusal without " << name << ": " << refusal;
    }
  }
  return ::testing::AssertionSuccess();
}

// The job's peak (what the zone decides on is checked elsewhere).
double PeakOf(const v1::Job& job) {
  absl::StatusOr<v1::Estimate> e = EstimateJob(job);
  EXPECT_TRUE(e.ok()) << e.status();
  return e.ok() ? e->peak().total_bytes() : 0.0;
}

// The peak of `line`, read and estimated on `gpu`; the reader's or the
// estimator's error otherwise.
absl::StatusOr<double> PeakOfLaunchOn(const std::string& line,
                                      const char* gpu) {
  absl::StatusOr<MegatronLaunch> l = ParseMegatronLaunch(Words(line), nullptr);
  if (!l.ok()) return l.status();
  v1::Job job = l->job;
  job.mutable_accelerator()->set_name(gpu);
  absl::StatusOr<v1::Estimate> e = EstimateJob(job);
  if (!e.ok()) return e.status();
  return e->peak().total_bytes();
}

// Every note of a read launch, one a line.
std::string AllNotes(const MegatronLaunch& l) {
  std::string notes;
  for (const std::string& n : l.notes) notes += n + "\n";
  return notes;
}

TEST(MegatronArgsTest, ReadsTheLlama31_8BLaunch) {
  absl::StatusOr<MegatronLaunch> l =
      ParseMegatronLaunch(Words(kLlama31_8B), nullptr);
  ASSERT_TRUE(l.ok()) << l.status();
  const v1::Job& job = l->job;
  EXPECT_EQ(job.num_gpus(), 16u);
  EXPECT_EQ(job.model().num_layers(), 32u);
  EXPECT_EQ(job.model().hidden_size(), 4096u);
  EXPECT_EQ(job.model().ffn_hidden_size(), 14336u);
  EXPECT_EQ(job.model().num_query_groups(), 8u);
  EXPECT_FALSE(job.model().tie_word_embeddings());
  // The tokenizer's vocabulary and Megatron's multiple: padded to 128 x TP
  // 4 where the layout is known (the estimate; a plan at each candidate's
  // TP).
  EXPECT_EQ(job.model().vocab_size(), 128256u);
  EXPECT_EQ(job.model().vocab_size_divisible_by(), 128u);
  EXPECT_EQ(VocabRows(ShapeOf(job.model()), 4), 128512);
  EXPECT_EQ(job.parallel().tensor_parallel(), 4u);
  EXPECT_EQ(job.parallel().pipeline_parallel(), 2u);
  EXPECT_EQ(job.parallel().context_parallel(), 1u);
  EXPECT_TRUE(job.parallel().sequence_parallel());
  EXPECT_TRUE(job.parallel().distributed_optimizer());
  EXPECT_EQ(job.training().seq_length(), 8192u);
  EXPECT_EQ(job.training().micro_batch_size(), 1u);
  EXPECT_EQ(job.training().global_batch_size(), 1024u);
  EXPECT_TRUE(job.training().fused_swiglu());
  ASSERT_EQ(l->notes.size(), 3u);
  EXPECT_NE(l->notes[0].find("fused SwiGLU"), std::string::npos);
  EXPECT_NE(l->notes[1].find("128256 -> 128512"), std::string::npos);
  EXPECT_NE(l->notes[2].find("attention mask"), std::string::npos);

  // The paper's 21.59 GiB plus what its equations leave out: the padded
  // vocabulary and Megatron's dataloader mask, 8192^2 bytes (1/16 GiB);
  // less what they over-count: the fused SwiGLU keeps 2 h_ffn bytes a
  // token less, over TP 4, in the 16 layers of stage 0 for each of its 2
  // micro-batches in flight.
  v1::Job with_gpu = job;
  with_gpu.mutable_accelerator()->set_name("a100-40gb");
  absl::StatusOr<v1::Estimate> e = EstimateJob(with_gpu);
  ASSERT_TRUE(e.ok()) << e.status();
  const double fused_gib = 2.0 * 14336 * 8192 / 4 * 16 * 2 / (1 << 30);
  EXPECT_NEAR(e->peak_gib(), 21.59 + 1.0 / 16 - fused_gib, 0.02);
  EXPECT_EQ(e->peak().stage(), 0u);
  EXPECT_EQ(e->zone(), v1::ZONE_GREEN);
}

TEST(MegatronArgsTest, ReadsTheLlama31_70BLaunchWithEqualsAndUnderscores) {
  absl::StatusOr<MegatronLaunch> l = ParseMegatronLaunch(
      Words("python -m torch.distributed.run --nnodes=8 --nproc_per_node=8 "
            "pretrain_gpt.py --num-layers=80 --hidden-size=8192 "
            "--ffn-hidden-size=28672 --num-attention-heads=64 "
            "--group-query-attention --num-query-groups=8 --vocab-size=128256 "
            "--untie-embeddings-and-output-weights --swiglu "
            "--tensor-model-parallel-size=8 --pipeline-model-parallel-size=4 "
            "--context-parallel-size=2 --sequence-parallel "
            "--use-distributed-optimizer --micro-batch-size=1 "
            "--global-batch-size=1024 --seq-length=8192"),
      nullptr);
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->job.num_gpus(), 64u);
  EXPECT_EQ(l->job.parallel().context_parallel(), 2u);
  EXPECT_EQ(VocabRows(ShapeOf(l->job.model()), 8), 129024);  // of 1024
}

// A number the shell was to expand (a batch script's variable a Slurm
// hook could not read as one literal value) is refused naming the word
// and why; a non-number is refused as before, and a hostile one is quoted
// by its first 64 bytes only.
TEST(MegatronArgsTest, ANumberLeftToTheShellIsRefusedSayingWhy) {
  const std::string mbs = LaunchRefusal("--micro-batch-size $MBS",
                                        "--micro-batch-size 1 ");
  EXPECT_TRUE(absl::StrContains(
      mbs, "--micro-batch-size: must be a whole number (got '$MBS'): a "
           "shell expansion whose value is decided when the command runs"))
      << mbs;
  EXPECT_TRUE(absl::StrContains(mbs, "memgate exec")) << mbs;
  const std::string ratio =
      LaunchRefusal("--optimizer sgd --sgd-momentum ${MOMENTUM}", "");
  EXPECT_TRUE(absl::StrContains(ratio, "--sgd-momentum: must be a non-"
                                       "negative number (got '${MOMENTUM}'): "
                                       "a shell expansion"))
      << ratio;
  const std::string word = LaunchRefusal("--micro-batch-size four",
                                         "--micro-batch-size 1 ");
  EXPECT_TRUE(absl::StrContains(word, "must be a whole number (got 'four')"))
      << word;
  EXPECT_FALSE(absl::StrContains(word, "shell expansion")) << word;
  const std::string huge = LaunchRefusal(
      "--micro-batch-size " + std::string(100000, 'x'), "--micro-batch-size 1 ");
  EXPECT_LT(huge.size(), 400u) << huge.substr(0, 400);
}

TEST(MegatronArgsTest, CatalogModelFillsWhatTheLaunchLeavesOut) {
  const v1::ModelConfig model = *FindModel("llama-3.1-8b");
  absl::StatusOr<MegatronLaunch> l = ParseMegatronLaunch(
      Words("torchrun --nproc-per-node 8 pretrain_gpt.py "
            "--tensor-model-parallel-size 2 --seq-length 4096 "
            "--sequence-parallel --use-distributed-optimizer"),
      &model);
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->job.model().name(), "llama-3.1-8b");
  EXPECT_EQ(l->job.model().num_layers(), 32u);
  EXPECT_EQ(l->job.model().num_query_groups(), 8u);
  EXPECT_EQ(VocabRows(ShapeOf(l->job.model()), 2), 128256);  // a multiple
  EXPECT_EQ(l->job.num_gpus(), 8u);
}

// A filled model's tied embedding and output layer are untied by the
// launch's --untie-embeddings-and-output-weights, which Megatron obeys
// whatever the model it fills from says (a tied config read as tied held
// a vocabulary matrix less on a one-stage pipeline).
TEST(MegatronArgsTest, TheLaunchUntiesAFilledModel) {
  v1::ModelConfig tied = *FindModel("llama-3.1-8b");
  tied.set_tie_word_embeddings(true);
  const std::string launch =
      "pretrain_gpt.py --tensor-model-parallel-size 2 --seq-length 4096";
  absl::StatusOr<MegatronLaunch> l = ParseMegatronLaunch(Words(launch), &tied);
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_TRUE(l->job.model().tie_word_embeddings());
  l = ParseMegatronLaunch(
      Words(launch + " --untie-embeddings-and-output-weights"), &tied);
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_FALSE(l->job.model().tie_word_embeddings());
}

// A filled model's heads keep their width where the launch gives no
// dimensions (Gemma-7B's 256 over h / a = 192: they were read as 192), and
// take --kv-channels, or Megatron's h / a where the launch sets the model.
TEST(MegatronArgsTest, AFilledModelKeepsItsHeadWidth) {
  v1::ModelConfig wide = *FindModel("llama-3.1-8b");
  wide.set_head_dim(256);
  const std::string launch =
      "pretrain_gpt.py --tensor-model-parallel-size 2 --seq-length 4096";
  for (const auto& [extra, head_dim] :
       std::vector<std::pair<std::string, uint32_t>>{
           {"", 256}, {" --kv-channels 64", 64}, {" --num-layers 16", 0}}) {
    absl::StatusOr<MegatronLaunch> l =
        ParseMegatronLaunch(Words(launch + extra), &wide);
    ASSERT_TRUE(l.ok()) << l.status();
    EXPECT_EQ(l->job.model().head_dim(), head_dim) << extra;
  }
}

TEST(MegatronArgsTest, MegatronDefaultsApply) {
  absl::StatusOr<MegatronLaunch> l = ParseMegatronLaunch(
      Words("pretrain_gpt.py --num-layers 32 --hidden-size 4096 "
            "--num-attention-heads 32 --swiglu --vocab-size 32000 "
            "--seq-length 4096"),
      nullptr);
  ASSERT_TRUE(l.ok()) << l.status();
  const v1::Job& job = l->job;
  EXPECT_EQ(job.model().ffn_hidden_size(), 10880u);  // int(4h*2/3 / 64) * 64
  EXPECT_EQ(job.model().num_query_groups(), 32u);  // multi-head
  EXPECT_TRUE(job.model().tie_word_embeddings());  // Megatron ties by default
  EXPECT_FALSE(job.parallel().sequence_parallel());
  EXPECT_FALSE(job.parallel().distributed_optimizer());
  EXPECT_EQ(job.parallel().tensor_parallel(), 1u);
  EXPECT_EQ(job.training().micro_batch_size(), 1u);
  EXPECT_EQ(job.num_gpus(), 0u);  // no torchrun: the caller must say
}

TEST(MegatronArgsTest, UnevenPipelineStages) {
  absl::StatusOr<MegatronLaunch> l = ParseMegatronLaunch(
      Words("pretrain_gpt.py --num-layers 30 --hidden-size 4096 "
            "--num-attention-heads 32 --swiglu --vocab-size 32000 "
            "--seq-length 4096 --pipeline-model-parallel-size 4 "
            "--decoder-first-pipeline-num-layers 6 "
            "--decoder-last-pipeline-num-layers 6"),
      nullptr);
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(std::vector<uint32_t>(l->job.parallel().layers_per_stage().begin(),
                                  l->job.parallel().layers_per_stage().end()),
            (std::vector<uint32_t>{6, 9, 9, 6}));
}

TEST(MegatronArgsTest, MissingMalformedAndContradictoryValuesAreNamed) {
  const std::string base =
      "pretrain_gpt.py --num-layers 32 --hidden-size 4096 "
      "--num-attention-heads 32 --swiglu --vocab-size 32000 ";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {base, "--seq-length"},
      {base + "--seq-length 4096 --tensor-model-parallel-size four",
       "--tensor-model-parallel-size"},
      {base + "--seq-length 4096 --num-query-groups 8", "--num-query-groups"},
      {base + "--seq-length 4096 --group-query-attention",
       "--num-query-groups"},
      {base + "--seq-length 4096 --num-layers-per-virtual-pipeline-stage 2",
       "--num-layers-per-virtual-pipeline-stage"},
      {"torchrun --nnodes 4:1 --nproc-per-node 8 " + base +
           "--seq-length 4096",
       "--nnodes"},
      {"torchrun --nnodes 1:4:8 --nproc-per-node 8 " + base +
           "--seq-length 4096",
       "--nnodes"},
      {"torchrun --nnodes 0 --nproc-per-node 8 " + base + "--seq-length 4096",
       "--nnodes"},
      {"torchrun --nproc-per-node cpu " + base + "--seq-length 4096",
       "--nproc-per-node"},
      {"torchrun --nproc-per-node cpu --nnodes $N " + base +
           "--seq-length 4096",
       "--nproc-per-node"},
      {"torchrun --nproc-per-node gpu --nnodes 1:4:8 " + base +
           "--seq-length 4096",
       "--nnodes"},
      {"pretrain_gpt.py --num-layers 32 --hidden-size 4096 "
       "--num-attention-heads 32 --swiglu --seq-length 4096",
       "--vocab-size"},
      {"pretrain_gpt.py --hidden-size 4096 --seq-length 4096 --swiglu",
       "--num-layers"},
      {base + "--seq-length", "--seq-length"},
      {base + "--seq-length 4096 --tensor-model-parallel-size 0",
       "--tensor-model-parallel-size"},
      {base + "--seq-length 4096 --pipeline-model-parallel-size 0",
       "--pipeline-model-parallel-size"},
      {"python train.py --epochs 3", "Megatron"},
  };
  for (const auto& [line, named] : cases) {
    absl::StatusOr<MegatronLaunch> l = ParseMegatronLaunch(Words(line), nullptr);
    ASSERT_FALSE(l.ok()) << line;
    EXPECT_EQ(l.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(l.status().message().find(named), std::string::npos)
        << line << "\n" << l.status();
  }
}

// A size or count Megatron cannot build at 0, given as 0 (here appended,
// the last value winning), is refused naming it: each was read as "not
// given" and estimated at Megatron's default or a catalog model's
// (--kv-channels 0 as h / a, --vocab-size 0 as the tokenizer's,
// --decoder-last-pipeline-num-layers 0 as an even split), or misnamed
// (--micro-batch-size 0 as --eval-micro-batch-size, --ffn-hidden-size 0 as
// an unknown model). Counts whose 0 Megatron reads as none still read.
TEST(MegatronArgsTest, ASizeGivenAsZeroIsRefusedNamingIt) {
  for (const char* name :
       {"num-layers", "hidden-size", "ffn-hidden-size", "num-attention-heads",
        "num-query-groups", "kv-channels", "seq-length", "micro-batch-size",
        "max-position-embeddings", "vocab-size", "moe-ffn-hidden-size",
        "moe-shared-expert-intermediate-size",
        "decoder-first-pipeline-num-layers",
        "decoder-last-pipeline-num-layers", "moe-router-topk", "q-lora-rank",
        "kv-lora-rank", "qk-head-dim", "qk-pos-emb-head-dim", "v-head-dim"}) {
    const absl::StatusOr<MegatronLaunch> l =
        ReadLlamaLaunch(absl::StrCat("--", name, " 0"), "");
    ASSERT_FALSE(l.ok()) << name;
    EXPECT_EQ(l.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(l.status().message(),
              absl::StrCat("--", name, ": must be at least 1 (got 0)"));
  }
  for (const char* none : {"--mtp-num-layers 0", "--eval-iters 0",
                           "--ddp-bucket-size 0 --overlap-grad-reduce"}) {
    const absl::StatusOr<MegatronLaunch> l = ReadLlamaLaunch(none, "");
    EXPECT_TRUE(l.ok()) << none << ": " << l.status();
  }
}

// A launch's words are quoted in its errors and notes, bounded whatever
// their length (the Slurm hook relays them from inside slurmctld): a
// value Megatron does not take keeps the rule after its quote, an unknown
// argument's name is named by its first bytes.
TEST(MegatronArgsTest, ALaunchsLongWordsAreQuotedBounded) {
  const std::string word(100000, 'x');
  const absl::StatusOr<MegatronLaunch> value =
      ReadLlamaLaunch("--normalization " + word, "--normalization RMSNorm");
  ASSERT_FALSE(value.ok());
  EXPECT_LT(value.status().message().size(), 300u);
  EXPECT_NE(value.status().message().find("...' is not modelled (LayerNorm "
                                          "or RMSNorm)"),
            std::string::npos)
      << value.status().message().substr(0, 300);
  const absl::StatusOr<MegatronLaunch> name =
      ReadLlamaLaunch("--" + word + " 1", "");
  ASSERT_TRUE(name.ok()) << name.status().message().substr(0, 300);
  for (const std::string& note : name->notes) {
    EXPECT_LT(note.size(), 1100u) << note.substr(0, 300);
  }
  EXPECT_NE(AllNotes(*name).find("not read: --" + word.substr(0, 64) +
                                 "...: not an argument of"),
            std::string::npos);
}

// Megatron asserts max_position_embeddings >= seq_length (arguments.py),
// whatever the positions: a shorter table is refused naming both, an
// equal or longer one read.
TEST(MegatronArgsTest, APositionTableShorterThanTheSequenceIsRefused) {
  const absl::StatusOr<MegatronLaunch> short_table =
      ReadLlamaLaunch("--max-position-embeddings 4096", "");
  ASSERT_FALSE(short_table.ok());
  EXPECT_EQ(short_table.status().message(),
            "--max-position-embeddings: must be at least --seq-length = 8192 "
            "(got 4096; Megatron's arguments.py asserts it)");
  // Megatron's other spelling of the sequence, where --seq-length is absent.
  const absl::StatusOr<MegatronLaunch> encoder = ReadLlamaLaunch(
      "--encoder-seq-length 8192 --max-position-embeddings 2048",
      "--seq-length 8192");
  ASSERT_FALSE(encoder.ok());
  EXPECT_EQ(encoder.status().message(),
            "--max-position-embeddings: must be at least --encoder-seq-length "
            "= 8192 (got 2048; Megatron's arguments.py asserts it)");
  for (const char* rows : {"8192", "131072"}) {
    const absl::StatusOr<MegatronLaunch> l =
        ReadLlamaLaunch(absl::StrCat("--max-position-embeddings ", rows), "");
    EXPECT_TRUE(l.ok()) << rows << ": " << l.status();
  }
}

// An argument given again takes its last value, as argparse does for
// Megatron: a plan's candidate arguments appended to the launch replace
// its own. Each such argument is named in a note.
TEST(MegatronArgsTest, AnArgumentGivenAgainTakesItsLastValue) {
  absl::StatusOr<MegatronLaunch> l = ReadLlamaLaunch(
      "--tensor-model-parallel-size 2 --seq-length 4096 --micro-batch-size 1",
      "");
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->job.parallel().tensor_parallel(), 2u);
  EXPECT_EQ(l->job.training().seq_length(), 4096u);
  const std::string notes = AllNotes(*l);
  EXPECT_NE(notes.find("--tensor-model-parallel-size, --seq-length: given "
                       "more than once with different values; Megatron "
                       "(argparse) takes the last"),
            std::string::npos)
      << notes;
  // The same value again is no override.
  EXPECT_EQ(notes.find("micro-batch-size"), std::string::npos) << notes;

  // The note is bounded: 8 names, then a count.
  absl::StatusOr<MegatronLaunch> many = ReadLlamaLaunch(
      "--num-layers 16 --hidden-size 2048 --ffn-hidden-size 8192 "
      "--num-attention-heads 16 --num-query-groups 4 --vocab-size 32000 "
      "--tensor-model-parallel-size 2 --pipeline-model-parallel-size 1 "
      "--global-batch-size 512 --seq-length 4096",
      "");
  ASSERT_TRUE(many.ok()) << many.status();
  const std::string many_notes = AllNotes(*many);
  EXPECT_NE(many_notes.find(" and 2 more: given more than once"),
            std::string::npos)
      << many_notes;
  EXPECT_EQ(many_notes.find("--seq-length"), std::string::npos) << many_notes;
}

TEST(MegatronArgsTest, VocabularyFromTheTokenizerOrTheCatalog) {
  const std::string llama8b =
      "pretrain_gpt.py --num-layers 32 --hidden-size 4096 --ffn-hidden-size "
      "14336 --num-attention-heads 32 --group-query-attention "
      "--num-query-groups 8 --swiglu --seq-length 8192 ";
  for (const std::string& tokenizer :
       {std::string("--tokenizer-type Llama3Tokenizer"),
        std::string("--tokenizer-type HuggingFaceTokenizer --tokenizer-model "
                    "meta-llama/Meta-Llama-3.1-8B"),
        std::string("--tokenizer-type SentencePieceTokenizer")}) {
    absl::StatusOr<MegatronLaunch> l =
        ParseMegatronLaunch(Words(llama8b + tokenizer), nullptr);
    ASSERT_TRUE(l.ok()) << tokenizer << ": " << l.status();
    EXPECT_EQ(l->job.model().vocab_size(), 128256u) << tokenizer;
    bool said = false;
    for (const std::string& n : l->notes) {
      said |= n.find("vocabulary 128256") != std::string::npos;
    }
    EXPECT_TRUE(said) << tokenizer;
  }
  // Unknown dimensions and tokenizer: still an error naming --vocab-size.
  absl::StatusOr<MegatronLaunch> l = ParseMegatronLaunch(
      Words("pretrain_gpt.py --num-layers 7 --hidden-size 1024 "
            "--num-attention-heads 8 --swiglu --seq-length 2048"),
      nullptr);
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.status().message().find("--vocab-size"), std::string::npos);
  // Llama 3's dimensions with another family's tokenizer were given Llama
  // 3's 128,256 rows (Qwen's has 151,665): a tokenizer that names another
  // family than the catalog model whose dimensions these are is not that
  // model's, and its size is unknown.
  for (const char* other : {"Qwen/Qwen2.5-7B", "/data/tokenizers/gemma-2b",
                            "mistralai/Mistral-7B-v0.1"}) {
    const absl::StatusOr<MegatronLaunch> foreign = ParseMegatronLaunch(
        Words(llama8b + "--tokenizer-type HuggingFaceTokenizer "
                        "--tokenizer-model " + other),
        nullptr);
    ASSERT_FALSE(foreign.ok()) << other;
    EXPECT_NE(foreign.status().message().find(absl::StrCat(
                  "--vocab-size: missing: Megatron takes it from the "
                  "tokenizer (", other, "), which memgate cannot read")),
              std::string::npos)
        << foreign.status();
  }
  // A path that names no family is taken to be the model's own, as before
  // (a family's name inside a word, as in /home/robert, names none).
  for (const char* path : {"/models/tokenizer", "/home/robert/tokenizer"}) {
    const absl::StatusOr<MegatronLaunch> own = ParseMegatronLaunch(
        Words(llama8b + "--tokenizer-type HuggingFaceTokenizer "
                        "--tokenizer-model " + path),
        nullptr);
    ASSERT_TRUE(own.ok()) << path << ": " << own.status();
    EXPECT_EQ(own->job.model().vocab_size(), 128256u) << path;
  }
  // A hostile name (1 MiB of family names inside words) is one pass a
  // family, names none, and is quoted a line's worth when refused.
  std::string hostile;
  while (hostile.size() < (1u << 20)) hostile += "robertxqwenagemma";
  const absl::StatusOr<MegatronLaunch> read = ParseMegatronLaunch(
      Words(llama8b + "--tokenizer-type HuggingFaceTokenizer "
                      "--tokenizer-model /" + hostile),
      nullptr);
  ASSERT_TRUE(read.ok()) << read.status().message().substr(0, 200);
  EXPECT_EQ(read->job.model().vocab_size(), 128256u);
  const absl::StatusOr<MegatronLaunch> refused = ParseMegatronLaunch(
      Words(llama8b + "--tokenizer-type HuggingFaceTokenizer "
                      "--tokenizer-model qwen/" + hostile),
      nullptr);
  ASSERT_FALSE(refused.ok());
  EXPECT_LT(refused.status().message().size(), 400u);
  // The experts are part of the dimensions: Mixtral 8x7B's attention and
  // expert widths are Llama 3 8B's, its vocabulary 32,000 (it was given
  // Llama 3's), and Mistral's tokenizer is its own.
  for (const char* tokenizer :
       {"", "--tokenizer-type HuggingFaceTokenizer --tokenizer-model "
            "mistralai/Mixtral-8x7B-v0.1"}) {
    const absl::StatusOr<MegatronLaunch> mixtral = ParseMegatronLaunch(
        Words(llama8b + "--disable-bias-linear --num-experts 8 "
                        "--moe-router-topk 2 " + tokenizer),
        nullptr);
    ASSERT_TRUE(mixtral.ok()) << tokenizer << ": " << mixtral.status();
    EXPECT_EQ(mixtral->job.model().vocab_size(), 32000u) << tokenizer;
    EXPECT_NE(AllNotes(*mixtral).find("vocabulary 32000 of mixtral-8x7b"),
              std::string::npos)
        << AllNotes(*mixtral);
  }
}

// Megatron sizes only NullTokenizer, NullMultimodalTokenizer and
// TikTokenizer by --vocab-size (core/tokenizers/utils/build_tokenizer.py);
// the others read their own size. A Llama 3 tokenizer beside a stale
// --vocab-size 32000 was estimated with 32,000 rows: Megatron builds
// 128,256.
TEST(MegatronArgsTest, TokenizersThatReadTheirOwnSizeIgnoreVocabSize) {
  const std::string llama8b =
      "pretrain_gpt.py --num-layers 32 --hidden-size 4096 --ffn-hidden-size "
      "14336 --num-attention-heads 32 --group-query-attention "
      "--num-query-groups 8 --swiglu --seq-length 8192 ";
  const absl::StatusOr<MegatronLaunch> stale = ParseMegatronLaunch(
      Words(llama8b + "--tokenizer-type HuggingFaceTokenizer --tokenizer-model "
                      "meta-llama/Llama-3.1-8B --vocab-size 32000"),
      nullptr);
  ASSERT_TRUE(stale.ok()) << stale.status();
  EXPECT_EQ(stale->job.model().vocab_size(), 128256u);
  EXPECT_NE(AllNotes(*stale).find("not from --vocab-size 32000"),
            std::string::npos)
      << AllNotes(*stale);

  // The tokenizers Megatron sizes by it take it as given, whatever the
  // model's name says.
  for (const char* sized : {"NullTokenizer", "TikTokenizer"}) {
    const absl::StatusOr<MegatronLaunch> l = ParseMegatronLaunch(
        Words(llama8b + "--tokenizer-type " + sized +
              " --tokenizer-model meta-llama/Llama-3.1-8B --vocab-size 32000"),
        nullptr);
    ASSERT_TRUE(l.ok()) << sized << ": " << l.status();
    EXPECT_EQ(l->job.model().vocab_size(), 32000u) << sized;
    EXPECT_EQ(AllNotes(*l).find("takes its size from the tokenizer"),
              std::string::npos)
        << AllNotes(*l);
  }

  // A tokenizer memgate cannot name: --vocab-size stands for it, and the
  // note says so (with a long path cut to a line).
  const std::string path(4096, 'p');
  const absl::StatusOr<MegatronLaunch> unknown = ParseMegatronLaunch(
      Words(llama8b + "--tokenizer-type HuggingFaceTokenizer --tokenizer-model " +
            path + " --vocab-size 151936"),
      nullptr);
  ASSERT_TRUE(unknown.ok()) << unknown.status();
  EXPECT_EQ(unknown->job.model().vocab_size(), 151936u);
  const std::string notes = AllNotes(*unknown);
  EXPECT_NE(notes.find("vocabulary 151936 as --vocab-size says: Megatron's "
                       "HuggingFaceTokenizer takes its size from the "
                       "tokenizer (ppp"),
            std::string::npos)
      << notes;
  EXPECT_LT(notes.size(), 2000u);

  // The legacy NullTokenizer adds its end-of-document token.
  const absl::StatusOr<MegatronLaunch> legacy = ParseMegatronLaunch(
      Words(llama8b + "--legacy-tokenizer --tokenizer-type NullTokenizer "
                      "--vocab-size 131072"),
      nullptr);
  ASSERT_TRUE(legacy.ok()) << legacy.status();
  EXPECT_EQ(legacy->job.model().vocab_size(), 131073u);
}

// --padded-vocab-size (TokenizerConfig, generated by ArgumentGroupFactory)
// is the model's vocabulary as given: Megatron pads only when it is absent.
// It was read past: a launch that gave 256,000 was estimated with the
// tokenizer's 128,256 padded to 128,512.
TEST(MegatronArgsTest, PaddedVocabularySizeIsTheModelsVocabulary) {
  const v1::Job given = LlamaLaunchJob("--padded-vocab-size 256000");
  EXPECT_EQ(given.model().vocab_size(), 256000u);
  EXPECT_EQ(given.model().vocab_size_divisible_by(), 0u);
  EXPECT_GT(PeakOf(given), PeakOf(LlamaLaunchJob("")));
  // Not rounded up to 128 x TP on top.
  EXPECT_EQ(LlamaLaunchJob("--padded-vocab-size 128260").model().vocab_size(),
            128260u);
  // But split over TP 4, which Megatron asserts divides it.
  absl::StatusOr<MegatronLaunch> odd = ParseMegatronLaunch(
      Words(std::string(kLlama31_8B) + " --padded-vocab-size 128257"),
      nullptr);
  ASSERT_FALSE(odd.ok());
  EXPECT_NE(odd.status().message().find(
                "--padded-vocab-size: must be a multiple of the "
                "tensor-parallel size 4"),
            std::string::npos)
      << odd.status();
  // A padding multiple past validation's ceiling is refused by its name.
  absl::StatusOr<MegatronLaunch> huge = ParseMegatronLaunch(
      Words(std::string(kLlama31_8B) +
            " --make-vocab-size-divisible-by 65537"),
      nullptr);
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("--make-vocab-size-divisible-by: "
                                         "must be 1 to 65536"),
            std::string::npos)
      << huge.status();
  absl::StatusOr<MegatronLaunch> zero = ParseMegatronLaunch(
      Words(std::string(kLlama31_8B) + " --padded-vocab-size 0"), nullptr);
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.status().message().find("--padded-vocab-size"),
            std::string::npos);
}

// An evaluation's forward (memory_model.cc [EV]): at the training's
// micro-batch, with fp32 gradients, the training step bounds it (nothing
// more); at 8 sequences where training takes 1 the last stage's LM head
// and loss hold 8 micro-batches' logits, above the training peak, checked
// as a transient. --eval-iters 0: Megatron never evaluates.
TEST(MegatronArgsTest, AnEvaluationsLargerMicroBatchIsCheckedBesideTheStates) {
  const v1::Job same = LlamaLaunchJob("--eval-micro-batch-size 1");
  EXPECT_EQ(same.training().eval_micro_batch_size(), 0u);
  absl::StatusOr<v1::Estimate> plain = EstimateJob(same);
  ASSERT_TRUE(plain.ok()) << plain.status();
  for (const v1::StageMemory& s : plain->stages()) {
    EXPECT_EQ(s.evaluation_bytes(), 0);
  }
  const v1::Job larger = LlamaLaunchJob("--eval-micro-batch-size 8");
  EXPECT_EQ(larger.training().eval_micro_batch_size(), 8u);
  absl::StatusOr<v1::Estimate> e = EstimateJob(larger);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->peak().total_bytes(), plain->peak().total_bytes());
  EXPECT_GT(e->stages(1).evaluation_bytes(), 0);
  const v1::Job off =
      LlamaLaunchJob("--eval-micro-batch-size 8 --eval-iters 0");
  EXPECT_TRUE(off.training().evaluation_off());
  absl::StatusOr<v1::Estimate> none = EstimateJob(off);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->stages(1).evaluation_bytes(), 0);
  // --full-validation evaluates whatever --eval-iters says.
  EXPECT_FALSE(LlamaLaunchJob("--eval-iters 0 --full-validation")
                   .training()
                   .evaluation_off());
  EXPECT_TRUE(RefusedNaming("--eval-micro-batch-size 0", "",
                            {"--eval-micro-batch-size"}));
}

// What Megatron builds when a launch says nothing (arguments.py): fp32,
// dropout 0.1, LayerNorm, biases, learned absolute positions, a GeLU MLP
// of 4h; each default is applied and said in a note.
TEST(MegatronArgsTest, MegatronsDefaultsAreAppliedAndSaid) {
  absl::StatusOr<MegatronLaunch> l = ParseMegatronLaunch(
      Words("pretrain_gpt.py --num-layers 24 --hidden-size 2048 "
            "--num-attention-heads 16 --vocab-size 50304 --seq-length 2048"),
      nullptr);
  ASSERT_TRUE(l.ok()) << l.status();
  const v1::ModelConfig& m = l->job.model();
  const v1::TrainingConfig& t = l->job.training();
  EXPECT_EQ(t.precision(), v1::PRECISION_FP32);
  EXPECT_FLOAT_EQ(t.hidden_dropout(), 0.1f);
  EXPECT_FLOAT_EQ(t.attention_dropout(), 0.1f);
  // fp32: TransformerEngine's auto backend has no FlashAttention for it.
  EXPECT_EQ(t.attention_kernel(), v1::ATTENTION_KERNEL_UNFUSED);
  EXPECT_EQ(t.optimizer(), v1::OPTIMIZER_ADAM);
  EXPECT_EQ(m.mlp_activation(), v1::MLP_ACTIVATION_GELU);
  EXPECT_EQ(m.ffn_hidden_size(), 4u * 2048);
  EXPECT_EQ(m.normalization(), v1::NORMALIZATION_LAYERNORM);
  EXPECT_TRUE(m.linear_bias());
  EXPECT_EQ(m.position_embedding(), v1::POSITION_EMBEDDING_LEARNED_ABSOLUTE);
  EXPECT_TRUE(m.tie_word_embeddings());
  const std::string notes = AllNotes(*l);
  for (const char* said : {"fp32", "--hidden-dropout", "--attention-dropout",
                           "LayerNorm", "--disable-bias-linear",
                           "learned absolute", "GeLU", "--ffn-hidden-size",
                           "unfused attention"}) {
    EXPECT_NE(notes.find(said), std::string::npos) << said << "\n" << notes;
  }
}

// Without --bf16 or --fp16 TransformerEngine has no FlashAttention or
// cuDNN fused attention (they take bf16 / fp16 Q, K and V only:
// get_attention_backend's data-type filter): Megatron's default backend,
// auto, runs the unfused attention, which keeps the s x s scores; flash or
// fused leave the run without a backend and are refused by name. The fp32
// scores' flags change nothing in fp32 and are read; with --bf16 auto
// stays FlashAttention.
TEST(MegatronArgsTest, Fp32RunsTransformerEnginesUnfusedAttention) {
  const std::string fp32 =
      "pretrain_gpt.py --num-layers 4 --hidden-size 1024 "
      "--num-attention-heads 16 --vocab-size 32000 --seq-length 4096 ";
  auto kernel = [&](const std::string& extra)
      -> absl::StatusOr<v1::AttentionKernel> {
    absl::StatusOr<MegatronLaunch> l =
        ParseMegatronLaunch(Words(fp32 + extra), nullptr);
    if (!l.ok()) return l.status();
    return l->job.training().attention_kernel();
  };
  EXPECT_EQ(*kernel(""), v1::ATTENTION_KERNEL_UNFUSED);
  EXPECT_EQ(*kernel("--attention-backend auto"), v1::ATTENTION_KERNEL_UNFUSED);
  EXPECT_EQ(*kernel("--attention-backend unfused"),
            v1::ATTENTION_KERNEL_UNFUSED);
  EXPECT_EQ(*kernel("--transformer-impl local"), v1::ATTENTION_KERNEL_LOCAL);
  // The local layer spec (torch norms) only with --transformer-impl local;
  // TE's layers around Megatron's local attention keep TE's norms.
  auto local_spec = [&](const std::string& extra) {
    absl::StatusOr<MegatronLaunch> l =
        ParseMegatronLaunch(Words(fp32 + extra), nullptr);
    return l.ok() && l->job.training().local_layer_spec();
  };
  EXPECT_TRUE(local_spec("--transformer-impl local"));
  EXPECT_FALSE(local_spec("--attention-backend local"));
  EXPECT_FALSE(local_spec(""));
  EXPECT_EQ(*kernel("--attention-softmax-in-fp32"),
            v1::ATTENTION_KERNEL_UNFUSED);
  EXPECT_EQ(*kernel("--apply-query-key-layer-scaling"),
            v1::ATTENTION_KERNEL_UNFUSED);
  for (const char* backend : {"flash", "fused"}) {
    const absl::StatusOr<v1::AttentionKernel> refused =
        kernel(absl::StrCat("--attention-backend ", backend));
    ASSERT_FALSE(refused.ok()) << backend;
    EXPECT_TRUE(absl::StartsWith(refused.status().message(),
                                 "--attention-backend: "))
        << refused.status();
    EXPECT_NE(refused.status().message().find("bf16"), std::string::npos);
  }
  // bf16's auto: unset, what the job's GPU allows (FlashAttention here).
  EXPECT_EQ(*kernel("--bf16"), v1::ATTENTION_KERNEL_UNSPECIFIED);
  EXPECT_EQ(*kernel("--fp16 --attention-backend fused"),
            v1::ATTENTION_KERNEL_FLASH);
  // Megatron's local attention takes either flag: its softmax in fp32
  // where its kernel cannot run (TrainingConfig.attention_softmax_in_fp32);
  // TransformerEngine's unfused attention takes neither (its softmax runs
  // in fp32 wherever its kernel cannot, counted): read, with a note.
  for (const char* local : {"--attention-backend local",
                            "--transformer-impl local"}) {
    for (const char* flag : {"", "--attention-softmax-in-fp32",
                             "--apply-query-key-layer-scaling"}) {
      absl::StatusOr<MegatronLaunch> l = ParseMegatronLaunch(
          Words(absl::StrCat(fp32, "--bf16 ", local, " ", flag)), nullptr);
      ASSERT_TRUE(l.ok()) << local << " " << flag << ": " << l.status();
      EXPECT_EQ(l->job.training().attention_kernel(),
                v1::ATTENTION_KERNEL_LOCAL);
      EXPECT_EQ(l->job.training().attention_softmax_in_fp32(), *flag != 0)
          << local << " " << flag;
    }
  }
  // Without the masked-softmax kernel every local softmax would run in
  // fp32: refused by name; alone the switch changes nothing.
  const absl::StatusOr<MegatronLaunch> no_kernel = ParseMegatronLaunch(
      Words(fp32 + "--bf16 --transformer-impl local "
                   "--attention-softmax-in-fp32 --no-masked-softmax-fusion"),
      nullptr);
  ASSERT_FALSE(no_kernel.ok());
  EXPECT_TRUE(absl::StartsWith(no_kernel.status().message(),
                               "--no-masked-softmax-fusion: "))
      << no_kernel.status();
  EXPECT_TRUE(ParseMegatronLaunch(Words(fp32 + "--bf16 --transformer-impl "
                                               "local "
                                               "--no-masked-softmax-fusion"),
                                  nullptr)
                  .ok());
  // Under TransformerEngine the launch's setting is kept too (it changes
  // nothing there).
  absl::StatusOr<MegatronLaunch> te = ParseMegatronLaunch(
      Words(fp32 + "--bf16 --attention-backend unfused "
                   "--attention-softmax-in-fp32"),
      nullptr);
  ASSERT_TRUE(te.ok()) << te.status();
  EXPECT_EQ(te->job.training().attention_kernel(),
            v1::ATTENTION_KERNEL_UNFUSED);
  EXPECT_TRUE(te->job.training().attention_softmax_in_fp32());
  bool noted = false;
  for (const std::string& n : te->notes) {
    noted |= absl::StartsWith(n, "--attention-softmax-in-fp32: no change");
  }
  EXPECT_TRUE(noted);
}

// Head dimensions that no FlashAttention 2 or cuDNN fused kernel trains
// (estimator/attention_backend.h): over 256 TransformerEngine has only its
// unfused attention, so auto runs it (counted) and flash / fused are
// refused; not a multiple of 8, FlashAttention 3 (Hopper, where installed)
// runs it, so flash is taken as said, fused refused, auto counted unfused.
TEST(MegatronArgsTest, HeadDimensionsNoFusedKernelTakesRunUnfused) {
  auto kernel = [](const std::string& dims, const std::string& backend)
      -> absl::StatusOr<v1::AttentionKernel> {
    absl::StatusOr<MegatronLaunch> l = ParseMegatronLaunch(
        Words("pretrain_gpt.py --num-layers 4 --vocab-size 32000 "
              "--seq-length 4096 --bf16 " + dims + " " + backend),
        nullptr);
    if (!l.ok()) return l.status();
    return l->job.training().attention_kernel();
  };
  const std::string wide =
      "--hidden-size 1024 --num-attention-heads 2 --kv-channels 512";
  const std::string odd = "--hidden-size 1000 --num-attention-heads 10";
  EXPECT_EQ(*kernel(wide, ""), v1::ATTENTION_KERNEL_UNFUSED);
  EXPECT_EQ(*kernel(odd, ""), v1::ATTENTION_KERNEL_UNFUSED);
  EXPECT_EQ(*kernel(odd, "--attention-backend flash"),
            v1::ATTENTION_KERNEL_FLASH);
  for (const auto& [dims, backend] :
       {std::pair<std::string, std::string>{wide, "--attention-backend flash"},
        {wide, "--attention-backend fused"},
        {odd, "--attention-backend fused"}}) {
    const absl::StatusOr<v1::AttentionKernel> refused = kernel(dims, backend);
    ASSERT_FALSE(refused.ok()) << dims << " " << backend;
    EXPECT_TRUE(absl::StartsWith(refused.status().message(),
                                 "--attention-backend: "))
        << refused.status();
  }
  EXPECT_EQ(*kernel("--hidden-size 4096 --num-attention-heads 32", ""),
            v1::ATTENTION_KERNEL_UNSPECIFIED);
}

// TransformerEngine's attention switches in the launch's environment
// (readers/te_attention_environment.h), as a shell prefix, after env, or
// in srun's --export list, the last of each taken. Where Megatron leaves
// them to TE (a launch not dated core 0.11 or later): FlashAttention and
// cuDNN's fused attention off run the unfused attention, whose scores are
// counted; FlashAttention alone off leaves the kernel to the GPU (cuDNN
// trains Llama's 128 everywhere: no change); cuDNN alone off changes
// nothing; all three off, or a value int() refuses, is refused by name.
TEST(MegatronArgsTest, TransformerEnginesEnvironmentChoosesTheAttention) {
  auto read = [](const std::string& before) {
    return ParseMegatronLaunch(Words(before + " " + kLlama31_8B), nullptr);
  };
  const v1::Job flash = LlamaLaunchJob("");
  for (const char* unfused :
       {"NVTE_FLASH_ATTN=0 NVTE_FUSED_ATTN=0",
        "env NVTE_FUSED_ATTN=0 NVTE_FLASH_ATTN=00",
        "srun --export=ALL,NVTE_FLASH_ATTN=0,NVTE_FUSED_ATTN=0",
        "NVTE_FLASH_ATTN=1 NVTE_FUSED_ATTN=0 env NVTE_FLASH_ATTN=+0",
        "NVTE_FLASH_ATTN_V2=0 NVTE_FUSED_ATTN=-0 NVTE_UNFUSED_ATTN=1",
        "bash -c \"export NVTE_FLASH_ATTN='0'; export NVTE_FUSED_ATTN=0 &&"}) {
    absl::StatusOr<MegatronLaunch> l = read(unfused);
    ASSERT_TRUE(l.ok()) << unfused << ": " << l.status();
    EXPECT_EQ(l->job.training().attention_kernel(),
              v1::ATTENTION_KERNEL_UNFUSED)
        << unfused;
    EXPECT_NE(AllNotes(*l).find("unfused attention, which keeps the s x s"),
              std::string::npos)
        << AllNotes(*l);
    v1::Job job = l->job;
    job.mutable_accelerator()->set_name("h100-80gb");
    // 8 heads a TP rank x 8192^2 scores a layer: gigabytes more.
    EXPECT_GT(PeakOf(job), PeakOf(flash) + 4.0 * (1u << 30)) << unfused;
  }
  for (const auto& [unchanged, flash_off] :
       std::vector<std::pair<std::string, bool>>{
           {"NVTE_FLASH_ATTN=0", true},
           {"NVTE_FLASH_ATTN=0 NVTE_FUSED_ATTN=0 env NVTE_FUSED_ATTN=1_0",
            true},
           {"NVTE_FUSED_ATTN=0", false},
           {"NVTE_UNFUSED_ATTN=0", false},
           {"XNVTE_FLASH_ATTN=0 NVTE_FUSED_ATTN=0", false}}) {
    absl::StatusOr<MegatronLaunch> l = read(unchanged);
    ASSERT_TRUE(l.ok()) << unchanged << ": " << l.status();
    EXPECT_EQ(l->job.training().attention_kernel(),
              v1::ATTENTION_KERNEL_UNSPECIFIED)
        << unchanged;
    EXPECT_EQ(l->job.training().flash_attention_disabled(), flash_off)
        << unchanged;
    v1::Job job = l->job;
    job.mutable_accelerator()->set_name("h100-80gb");
    EXPECT_EQ(PeakOf(job), PeakOf(flash)) << unchanged;
  }
  for (const auto& [env, named] : std::vector<std::pair<std::string, std::string>>{
           {"NVTE_FLASH_ATTN=0 NVTE_FUSED_ATTN=0 NVTE_UNFUSED_ATTN=0",
            "no attention left"},
           {"NVTE_FLASH_ATTN=false", "NVTE_FLASH_ATTN=false"},
           {"NVTE_FUSED_ATTN=0x0", "not a whole number"},
           {"NVTE_FUSED_ATTN=1__0", "not a whole number"},
           // The Slurm hook's word for a value it could not read as one.
           {"NVTE_FLASH_ATTN=?", "the batch script sets it in a way its hook "
                                 "cannot read as one value"},
           {"NVTE_UNFUSED_ATTN=" + std::string(100, '9') + "z",
            "NVTE_UNFUSED_ATTN=" + std::string(32, '9') + " "}}) {
    absl::StatusOr<MegatronLaunch> l = read(env);
    ASSERT_FALSE(l.ok()) << env;
    EXPECT_NE(l.status().message().find(named), std::string::npos)
        << l.status();
    EXPECT_LT(l.status().message().size(), 400u);
  }
  // Hostile words cost one search a name: 4 MiB of assignments chained by
  // '=' (each a valid start) read as the last one, a value of a million
  // digits refused by name without being copied whole.
  std::string chained;
  for (int i = 0; i < (4 << 20) / 16; ++i) chained += "NVTE_FLASH_ATTN=";
  absl::StatusOr<MegatronLaunch> hostile = read(chained + "0 NVTE_FUSED_ATTN=0");
  ASSERT_TRUE(hostile.ok()) << hostile.status();
  EXPECT_EQ(hostile->job.training().attention_kernel(),
            v1::ATTENTION_KERNEL_UNFUSED);
  hostile = read("NVTE_FLASH_ATTN=" + std::string(1 << 20, '0'));
  ASSERT_FALSE(hostile.ok());
  EXPECT_NE(hostile.status().message().find("not a whole number"),
            std::string::npos);
  EXPECT_LT(hostile.status().message().size(), 400u);
  // Set to 1, as a later Megatron's auto sets them: nothing to say.
  absl::StatusOr<MegatronLaunch> on =
      read("NVTE_FLASH_ATTN=1 NVTE_FUSED_ATTN=1 NVTE_UNFUSED_ATTN=1");
  ASSERT_TRUE(on.ok()) << on.status();
  EXPECT_EQ(AllNotes(*on).find("NVTE_"), std::string::npos) << AllNotes(*on);
  on = read("NVTE_FUSED_ATTN=0");
  ASSERT_TRUE(on.ok()) << on.status();
  EXPECT_NE(AllNotes(*on).find("NVTE_FUSED_ATTN=0: no change: FlashAttention "
                               "stays on (no s x s scores); Megatron-LM from "
                               "core 0.11 on stops at start"),
            std::string::npos)
      << AllNotes(*on);
  // fp32 has the unfused attention only, which NVTE_UNFUSED_ATTN=0 takes.
  std::string fp32 = std::string("NVTE_UNFUSED_ATTN=0 ") + kLlama31_8B;
  fp32.replace(fp32.find("--bf16"), 6, "");
  const absl::StatusOr<MegatronLaunch> no_backend =
      ParseMegatronLaunch(Words(fp32), nullptr);
  ASSERT_FALSE(no_backend.ok());
  for (const char* named : {"NVTE_UNFUSED_ATTN=0", "fp32 training",
                            "no attention backend"}) {
    EXPECT_NE(no_backend.status().message().find(named), std::string::npos)
        << named << ": " << no_backend.status();
  }
  // Megatron's own attention reads none of them.
  absl::StatusOr<MegatronLaunch> local =
      read("NVTE_FLASH_ATTN=0 NVTE_FUSED_ATTN=0 torchrun pretrain_gpt.py "
           "--transformer-impl local");
  ASSERT_TRUE(local.ok()) << local.status();
  EXPECT_EQ(local->job.training().attention_kernel(),
            v1::ATTENTION_KERNEL_LOCAL);
  EXPECT_FALSE(local->job.training().flash_attention_disabled());
}

// From core 0.11 on Megatron sets the three switches from
// --attention-backend and stops at start where one is set otherwise
// (language_module.py _set_attention_backend): a launch dated so by
// --attention-backend, or by an argument of a release after core 0.12.0,
// is refused naming the variable where they disagree, and read as its
// backend says where they agree. FlashAttention 2 alone off (which
// Megatron leaves alone) still takes FlashAttention from auto.
TEST(MegatronArgsTest, MegatronsAttentionBackendMustAgreeWithTheEnvironment) {
  auto read = [](const std::string& before, const std::string& after) {
    return ParseMegatronLaunch(
        Words(before + " " + kLlama31_8B + " " + after), nullptr);
  };
  for (const auto& [env, backend] :
       std::vector<std::pair<std::string, std::string>>{
           {"NVTE_FLASH_ATTN=0", "--attention-backend auto"},
           {"NVTE_FUSED_ATTN=0", "--attention-backend fused"},
           {"NVTE_FLASH_ATTN=0 NVTE_FUSED_ATTN=0", "--attention-backend flash"},
           {"NVTE_UNFUSED_ATTN=1", "--attention-backend flash"},
           {"NVTE_FLASH_ATTN=00", "--attention-backend unfused"},
           {"NVTE_FLASH_ATTN=1", "--attention-backend local --transformer-impl "
                                 "local --no-persist-layer-norm"},
           {"NVTE_FUSED_ATTN=0", "--allow-ambiguous-pad-tokens"}}) {
    absl::StatusOr<MegatronLaunch> l = read(env, backend);
    ASSERT_FALSE(l.ok()) << env << " " << backend;
    for (const char* named : {"_set_attention_backend", "core 0.11",
                              "--attention-backend"}) {
      EXPECT_NE(l.status().message().find(named), std::string::npos)
          << named << ": " << l.status();
    }
    EXPECT_NE(l.status().message().find(env.substr(0, env.find(' '))),
              std::string::npos)
        << l.status();
  }
  absl::StatusOr<MegatronLaunch> agreed =
      read("NVTE_FLASH_ATTN=0 NVTE_FUSED_ATTN=0 NVTE_UNFUSED_ATTN=1",
           "--attention-backend unfused");
  ASSERT_TRUE(agreed.ok()) << agreed.status();
  EXPECT_EQ(agreed->job.training().attention_kernel(),
            v1::ATTENTION_KERNEL_UNFUSED);
  agreed = read("NVTE_FLASH_ATTN=1 NVTE_FUSED_ATTN=0", "--attention-backend flash");
  ASSERT_TRUE(agreed.ok()) << agreed.status();
  EXPECT_EQ(agreed->job.training().attention_kernel(),
            v1::ATTENTION_KERNEL_FLASH);
  EXPECT_FALSE(agreed->job.training().flash_attention_disabled());
  // fused says FlashAttention is off, environment or not.
  agreed = read("", "--attention-backend fused");
  ASSERT_TRUE(agreed.ok()) << agreed.status();
  EXPECT_TRUE(agreed->job.training().flash_attention_disabled());
  agreed = read("NVTE_FLASH_ATTN_V2=0", "--attention-backend auto");
  ASSERT_TRUE(agreed.ok()) << agreed.status();
  EXPECT_TRUE(agreed->job.training().flash_attention_disabled());
  EXPECT_EQ(agreed->job.training().attention_kernel(),
            v1::ATTENTION_KERNEL_UNSPECIFIED);
  // --flash-attention-version 3 / 4 pins that FlashAttention and sets
  // NVTE_FLASH_ATTN_V2=0 (asserting a set one agrees): FlashAttention 2
  // off under auto; 2 changes nothing; others are not Megatron's.
  for (const char* pinned : {"3", "4"}) {
    agreed = read("", absl::StrCat("--flash-attention-version ", pinned));
    ASSERT_TRUE(agreed.ok()) << agreed.status();
    EXPECT_TRUE(agreed->job.training().flash_attention_disabled()) << pinned;
    EXPECT_NE(AllNotes(*agreed).find("FlashAttention 2 off"),
              std::string::npos)
        << AllNotes(*agreed);
  }
  agreed = read("", "--flash-attention-version 2");
  ASSERT_TRUE(agreed.ok()) << agreed.status();
  EXPECT_FALSE(agreed->job.training().flash_attention_disabled());
  agreed = read("", "--flash-attention-version 3 --attention-backend flash");
  ASSERT_TRUE(agreed.ok()) << agreed.status();
  EXPECT_FALSE(agreed->job.training().flash_attention_disabled());
  EXPECT_TRUE(RefusedNaming("--flash-attention-version 5", "",
                            {"--flash-attention-version", "2, 3 or 4"}));
  const absl::StatusOr<MegatronLaunch> v2_on =
      read("NVTE_FLASH_ATTN_V2=1", "--flash-attention-version 3");
  ASSERT_FALSE(v2_on.ok());
  EXPECT_NE(v2_on.status().message().find("NVTE_FLASH_ATTN_V2=1"),
            std::string::npos)
      << v2_on.status();
}

// Without FlashAttention the GPU decides (attention_backend.h): Gemma's
// head dimension of 256 trains in cuDNN's fused attention on an H100 (no
// change) but not on an A100, where NVTE_FLASH_ATTN=0 runs the unfused
// attention (counted: the estimate grows by the scores) and
// --attention-backend fused has no kernel (refused by validation, naming
// the field and the GPU).
TEST(MegatronArgsTest, WithoutFlashAttentionTheGpuDecidesGemmasAttention) {
  const std::string gemma =
      "torchrun --nproc-per-node 8 pretrain_gpt.py --num-layers 28 "
      "--hidden-size 3072 --ffn-hidden-size 24576 --num-attention-heads 16 "
      "--kv-channels 256 --vocab-size 256000 --swiglu --normalization RMSNorm "
      "--disable-bias-linear --hidden-dropout 0 --attention-dropout 0 "
      "--tensor-model-parallel-size 8 --sequence-parallel "
      "--use-distributed-optimizer --micro-batch-size 1 --global-batch-size "
      "64 --seq-length 8192 --bf16 --no-create-attention-mask-in-dataloader";
  auto peak = [&](const std::string& before, const std::string& after,
                  const char* gpu) {
    return PeakOfLaunchOn(before + " " + gemma + " " + after, gpu);
  };
  for (const char* gpu : {"h100-80gb", "a100-80gb"}) {
    ASSERT_TRUE(peak("", "", gpu).ok()) << gpu << peak("", "", gpu).status();
  }
  EXPECT_EQ(*peak("NVTE_FLASH_ATTN=0", "", "h100-80gb"),
            *peak("", "", "h100-80gb"));
  EXPECT_EQ(*peak("", "--attention-backend fused", "h100-80gb"),
            *peak("", "", "h100-80gb"));
  // 2 heads a rank x 8192^2 x 2 B x 28 layers: about 7 GiB of scores.
  EXPECT_GT(*peak("NVTE_FLASH_ATTN=0", "", "a100-80gb"),
            *peak("", "", "a100-80gb") + 6.0 * (1u << 30));
  EXPECT_EQ(*peak("NVTE_FLASH_ATTN=0", "", "a100-80gb"),
            *peak("NVTE_FLASH_ATTN=0 NVTE_FUSED_ATTN=0", "", "a100-80gb"));
  const absl::StatusOr<double> fused =
      peak("", "--attention-backend fused", "a100-80gb");
  ASSERT_FALSE(fused.ok());
  for (const char* named : {"training.attention_kernel", "a100-80gb",
                            "FlashAttention disabled"}) {
    EXPECT_NE(fused.status().message().find(named), std::string::npos)
        << named << ": " << fused.status();
  }
}

// Deterministic execution (NVTE_ALLOW_NONDETERMINISTIC_ALGO=0, or
// --deterministic-mode, which Megatron raises on without it) takes cuDNN's
// fused attention from GPUs below sm90: with FlashAttention off Llama's
// heads then run unfused on an A100 (the scores counted) and fused on an
// H100; with FlashAttention on nothing changes; --attention-backend fused
// has no kernel on the A100 (refused by validation, naming why).
TEST(MegatronArgsTest, DeterministicAttentionWithoutFlashAttentionOnAnA100) {
  auto peak = [](const std::string& before, const std::string& after,
                 const char* gpu) {
    return PeakOfLaunchOn(before + " " + kLlama31_8B + " " + after, gpu);
  };
  const double a100 = *peak("", "", "a100-80gb");
  const double h100 = *peak("", "", "h100-80gb");
  for (const auto& [before, after] :
       std::vector<std::pair<std::string, std::string>>{
           {"NVTE_FLASH_ATTN=0 NVTE_ALLOW_NONDETERMINISTIC_ALGO=0", ""},
           {"NVTE_FLASH_ATTN=0 NVTE_ALLOW_NONDETERMINISTIC_ALGO=00",
            "--deterministic-mode"}}) {
    EXPECT_GT(*peak(before, after, "a100-80gb"), a100 + 4.0 * (1u << 30))
        << before << " " << after;
    EXPECT_EQ(*peak(before, after, "h100-80gb"), h100) << before;
  }
  EXPECT_GT(*peak("NVTE_FLASH_ATTN=0", "--deterministic-mode", "a100-80gb"),
            a100 + 4.0 * (1u << 30));
  EXPECT_EQ(*peak("NVTE_ALLOW_NONDETERMINISTIC_ALGO=0", "--deterministic-mode",
                  "a100-80gb"),
            a100);
  EXPECT_EQ(*peak("NVTE_FLASH_ATTN=0 NVTE_ALLOW_NONDETERMINISTIC_ALGO=1", "",
                  "a100-80gb"),
            a100);
  const absl::StatusOr<double> raises =
      peak("NVTE_ALLOW_NONDETERMINISTIC_ALGO=1", "--deterministic-mode",
           "h100-80gb");
  ASSERT_FALSE(raises.ok());
  EXPECT_NE(raises.status().message().find("Megatron raises at start"),
            std::string::npos)
      << raises.status();
  const absl::StatusOr<double> fused =
      peak("", "--attention-backend fused --deterministic-mode", "a100-80gb");
  ASSERT_FALSE(fused.ok());
  for (const char* named :
       {"training.attention_kernel", "te_deterministic_attention", "sm90"}) {
    EXPECT_NE(fused.status().message().find(named), std::string::npos)
        << named << ": " << fused.status();
  }
  EXPECT_EQ(*peak("", "--attention-backend fused --deterministic-mode",
                  "h100-80gb"),
            h100);
}

// On Blackwell cuDNN's backward is deterministic only without attention
// dropout (TransformerEngine fused_attn.cpp): with FlashAttention off and
// deterministic execution, Llama's heads at dropout 0.1 run unfused on a
// B200 (the scores counted; before, taken to be cuDNN's and left out) and
// fused on an H100; at dropout 0 fused on both. --attention-backend fused
// leaves TE no kernel there (Megatron turns the unfused one off), refused
// naming the dropout.
TEST(MegatronArgsTest, DeterministicAttentionWithDropoutOnABlackwell) {
  auto peak = [](const std::string& before, const std::string& after,
                 const char* gpu, bool dropout) {
    std::string launch = kLlama31_8B;
    if (dropout) {
      const std::string off = "--attention-dropout 0 ";
      launch.replace(launch.find(off), off.size(), "--attention-dropout 0.1 ");
    }
    return PeakOfLaunchOn(before + " " + launch + " " + after, gpu);
  };
  const std::string off_and_deterministic =
      "NVTE_FLASH_ATTN=0 NVTE_ALLOW_NONDETERMINISTIC_ALGO=0";
  for (const char* gpu : {"b200-180gb", "gb200-186gb"}) {
    const double fused = *peak("", "", gpu, true);
    // 8 heads a rank x 8192^2 x 5 B (softmax, mask, dropout output) x 16
    // layers a stage: 40 GiB of scores.
    EXPECT_GT(*peak(off_and_deterministic, "", gpu, true),
              fused + 30.0 * (1u << 30))
        << gpu;
    EXPECT_EQ(*peak(off_and_deterministic, "", gpu, false),
              *peak("", "", gpu, false))
        << gpu;
    EXPECT_EQ(*peak("NVTE_FLASH_ATTN=0", "", gpu, true), fused) << gpu;
    EXPECT_EQ(*peak("NVTE_ALLOW_NONDETERMINISTIC_ALGO=0", "", gpu, true),
              fused)
        << gpu;
    const absl::StatusOr<double> no_kernel = peak(
        "", "--attention-backend fused --deterministic-mode", gpu, true);
    ASSERT_FALSE(no_kernel.ok()) << gpu;
    for (const char* named :
         {"training.attention_kernel", "training.attention_dropout",
          "Blackwell"}) {
      EXPECT_NE(no_kernel.status().message().find(named), std::string::npos)
          << named << ": " << no_kernel.status();
    }
  }
  EXPECT_EQ(*peak(off_and_deterministic, "", "h100-80gb", true),
            *peak("", "", "h100-80gb", true));
}

// --window-size windows the layers --window-attn-skip-freq leaves
// (transformer/utils.py is_layer_window_attention; TE applies no window of
// (-1, -1) or (-1, 0)): ModelConfig.sliding_window. Its memory: with
// attention dropout, TransformerEngine's cuDNN attention takes no window,
// so with FlashAttention off the windowed layers keep their scores (about
// 40 GiB here, every layer counted); FlashAttention runs windows.
TEST(MegatronArgsTest, SlidingWindowsAreReadAsMegatronAppliesThem) {
  for (const auto& [extra, windowed] :
       std::vector<std::pair<std::string, bool>>{
           {"", false},
           {"--window-size 4096,0", true},
           {"--window-size (127,0)", true},
           {"--window-size '127,0'", true},
           {"--window-size -1,0", false},
           {"--window-size -1,-1", false},
           {"--window-size 127,0 --window-attn-skip-freq 1", false},
           {"--window-size 127,0 --window-attn-skip-freq 2", true},
           {"--window-size 127,0 --window-attn-skip-freq '[0]*32'", false},
           {"--window-size 127,0 --window-attn-skip-freq [1,0]*16", true},
           {"--window-size 127,0 --window-attn-skip-freq [0,1]*20", true},
           {"--window-attn-skip-freq 2", false}}) {
    absl::StatusOr<MegatronLaunch> l = ReadLlamaLaunch(extra, "");
    ASSERT_TRUE(l.ok()) << extra << ": " << l.status();
    EXPECT_EQ(l->job.model().sliding_window(), windowed) << extra;
  }
  for (const auto& [extra, flag] :
       std::vector<std::pair<std::string, std::string>>{
           {"--window-size 127", "--window-size: "},
           {"--window-size 127,0,1", "--window-size: "},
           {"--window-size a,b", "--window-size: "},
           {"--window-size -2,0", "--window-size: "},
           {"--window-size 127,0 --window-attn-skip-freq 0",
            "--window-attn-skip-freq: "},
           {"--window-size 127,0 --window-attn-skip-freq [1,0]*8",
            "--window-attn-skip-freq: "}}) {
    absl::StatusOr<MegatronLaunch> l = ReadLlamaLaunch(extra, "");
    ASSERT_FALSE(l.ok()) << extra;
    EXPECT_EQ(l.status().message().rfind(flag, 0), 0u) << l.status();
  }
  auto peak = [](const std::string& before, const std::string& after,
                 bool dropout) {
    std::string launch = kLlama31_8B;
    if (dropout) {
      const std::string off = "--attention-dropout 0 ";
      launch.replace(launch.find(off), off.size(), "--attention-dropout 0.1 ");
    }
    return PeakOfLaunchOn(before + " " + launch + " " + after, "h100-80gb");
  };
  const std::string window = "--window-size 4096,0";
  const double fused = *peak("NVTE_FLASH_ATTN=0", "", true);
  EXPECT_GT(*peak("NVTE_FLASH_ATTN=0", window, true),
            fused + 30.0 * (1u << 30));
  EXPECT_EQ(*peak("NVTE_FLASH_ATTN=0", window, false),
            *peak("NVTE_FLASH_ATTN=0", "", false));
  EXPECT_EQ(*peak("", window, true), *peak("", "", true));
  const absl::StatusOr<double> no_kernel =
      peak("", window + " --attention-backend fused", true);
  ASSERT_FALSE(no_kernel.ok());
  EXPECT_NE(no_kernel.status().message().find("model.sliding_window"),
            std::string::npos)
      << no_kernel.status();
  // gpt-oss's attention (Megatron's examples/gptoss: sinks, a window on
  // every other layer, dropout left at 0.1) under auto: FlashAttention has
  // no sinks and cuDNN no window with dropout, so TE runs the windowed
  // layers unfused (all counted); without dropout cuDNN or the unfused
  // attention may run it, by the installed cuDNN: the launch must say.
  const std::string oss = window + " --window-attn-skip-freq 2 "
                          "--softmax-type learnable --attention-backend auto";
  const absl::StatusOr<double> sinks = peak("", oss, true);
  ASSERT_TRUE(sinks.ok()) << sinks.status();
  EXPECT_GT(*sinks, *peak("", "", true) + 30.0 * (1u << 30));
  const absl::StatusOr<double> either = peak("", oss, false);
  ASSERT_FALSE(either.ok());
  EXPECT_EQ(either.status().message().rfind("--softmax-type: ", 0), 0u)
      << either.status();
}

// NVTE_MASKED_SOFTMAX_FUSION=0 takes the fused softmax from
// TransformerEngine's unfused attention (softmax.py is_kernel_available):
// Llama 3.1 8B at 8k, whose unfused attention the kernel takes (8k < 16k,
// 8 heads a TP rank), keeps torch's fp32 softmax output too: 4 bytes a
// score, 2 GiB a layer. FlashAttention and Megatron's local attention
// (its own softmax) do not change; a value int() refuses is named.
TEST(MegatronArgsTest, NoMaskedSoftmaxFusionKeepsAnFp32CopyOfTheScores) {
  auto peak = [](const std::string& before, const std::string& after) {
    return PeakOfLaunchOn(before + " " + kLlama31_8B + " " + after,
                          "h100-80gb");
  };
  const std::string unfused = "NVTE_FLASH_ATTN=0 NVTE_FUSED_ATTN=0";
  const double kept = *peak(unfused, "");
  EXPECT_GT(*peak(unfused + " NVTE_MASKED_SOFTMAX_FUSION=0", ""),
            kept + 16 * 2.0 * (1u << 30));
  EXPECT_EQ(*peak(unfused + " NVTE_MASKED_SOFTMAX_FUSION=1", ""), kept);
  EXPECT_EQ(*peak("NVTE_MASKED_SOFTMAX_FUSION=0", ""), *peak("", ""));
  EXPECT_EQ(*peak("NVTE_MASKED_SOFTMAX_FUSION=0", "--transformer-impl local"),
            *peak("", "--transformer-impl local"));

  const absl::StatusOr<MegatronLaunch> said = ParseMegatronLaunch(
      Words("srun --export=ALL,NVTE_MASKED_SOFTMAX_FUSION=0 " +
            std::string(kLlama31_8B)),
      nullptr);
  ASSERT_TRUE(said.ok()) << said.status();
  EXPECT_TRUE(said->job.training().te_masked_softmax_fusion_disabled());
  EXPECT_NE(AllNotes(*said).find("NVTE_MASKED_SOFTMAX_FUSION=0: "
                                 "TransformerEngine's fused softmax off"),
            std::string::npos)
      << AllNotes(*said);
  const absl::StatusOr<MegatronLaunch> bad = ParseMegatronLaunch(
      Words("NVTE_MASKED_SOFTMAX_FUSION=no " + std::string(kLlama31_8B)),
      nullptr);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(
                "NVTE_MASKED_SOFTMAX_FUSION=no (the launch's environment): "
                "not a whole number"),
            std::string::npos)
      << bad.status();
}

// NVTE_BACKWARD_OVERRIDE (TE common/recipe/__init__.py): high_precision has
// the fp8 GEMMs keep their 16-bit inputs (module/linear.py
// save_original_input), as --no-fp8-wgrad: refused by name; dequantized
// keeps what memgate counts; delayed scaling and other values make TE
// assert at start; without fp8 nothing reads it.
TEST(MegatronArgsTest, TransformerEnginesBackwardOverride) {
  const std::string fp8 =
      std::string(kLlama31_8B) + " --fp8-format hybrid --fp8-recipe tensorwise";
  auto read = [](const std::string& line) {
    return ParseMegatronLaunch(Words(line), nullptr);
  };
  for (const auto& [line, named] :
       std::vector<std::pair<std::string, std::string>>{
           {"NVTE_BACKWARD_OVERRIDE=high_precision " + fp8,
            "NVTE_BACKWARD_OVERRIDE=high_precision (the launch's "
            "environment): the fp8 GEMMs keep their 16-bit inputs"},
           {"srun --export=ALL,NVTE_BACKWARD_OVERRIDE=high_precision " + fp8,
            "as --no-fp8-wgrad does: not modelled"},
           {"NVTE_BACKWARD_OVERRIDE=dequantized " + std::string(kLlama31_8B) +
                " --fp8-format hybrid",
            "delayed scaling (this job's fp8 recipe) asserts it unset"},
           {"NVTE_BACKWARD_OVERRIDE=HIGH " + fp8,
            "asserts it is unset, high_precision or dequantized"}}) {
    const absl::StatusOr<MegatronLaunch> l = read(line);
    ASSERT_FALSE(l.ok()) << line;
    EXPECT_EQ(l.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(l.status().message().find(named), std::string::npos)
        << l.status();
  }
  const absl::StatusOr<MegatronLaunch> plain = read(fp8);
  const absl::StatusOr<MegatronLaunch> dequantized =
      read("NVTE_BACKWARD_OVERRIDE=dequantized " + fp8);
  ASSERT_TRUE(plain.ok()) << plain.status();
  ASSERT_TRUE(dequantized.ok()) << dequantized.status();
  EXPECT_EQ(dequantized->job.SerializeAsString(),
            plain->job.SerializeAsString());
  EXPECT_NE(AllNotes(*dequantized).find("dequantizes their saved fp8 inputs"),
            std::string::npos)
      << AllNotes(*dequantized);
  const absl::StatusOr<MegatronLaunch> bf16 = read(
      "NVTE_BACKWARD_OVERRIDE=high_precision " + std::string(kLlama31_8B));
  ASSERT_TRUE(bf16.ok()) << bf16.status();
  EXPECT_NE(AllNotes(*bf16).find("no change: TransformerEngine reads it into "
                                 "fp8 recipes"),
            std::string::npos)
      << AllNotes(*bf16);
}

// A word after the script that the shell expands when the command runs
// ($EXTRA_ARGS, ${ARGS[@]}, "$@", $(cat args)) supplies arguments memgate
// never sees: they were read past, and the launch admitted without them
// (an --micro-batch-size 4 among them, four times the activations). Now it
// is refused naming the word, unless an argument takes it as its value:
// one value after Megatron's single-valued arguments, any number after its
// lists (--data-path) unless named as arguments; after names memgate does
// not know, which may be switches, none.
TEST(MegatronArgsTest, ArgumentsTheShellSuppliesAtRunTimeAreRefused) {
  for (const char* hidden :
       {"$EXTRA_ARGS", "${MODEL_ARGS[@]}", "\"$@\"", "$(cat args.txt)",
        "`cat args.txt`", "--bf16 $EXTRA", "--eval-iters 10 ${MORE}",
        "--log-throughput $EXTRA", "--data-path a b --seed 1 $EXTRA",
        // a switch of an older release only (core 0.12 to 0.14)
        "--no-async-tensor-model-parallel-allreduce $EXTRA"}) {
    const absl::StatusOr<MegatronLaunch> l = ParseMegatronLaunch(
        Words(std::string(kLlama31_8B) + " " + hidden), nullptr);
    ASSERT_FALSE(l.ok()) << hidden;
    EXPECT_EQ(l.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(l.status().message().find(
                  "after pretrain_gpt.py is a shell expansion that supplies "
                  "arguments only when the command runs"),
              std::string::npos)
        << hidden << ": " << l.status();
  }
  // After a name memgate does not know, which may be a switch, the word
  // may be its value or more arguments: refused, naming both.
  for (const char* unknown :
       {"--my-fork-option $X $Y", "--my-fork-switch $EXTRA_ARGS",
        "--my-fork-option x \"$@\""}) {
    const absl::StatusOr<MegatronLaunch> l = ParseMegatronLaunch(
        Words(std::string(kLlama31_8B) + " " + unknown), nullptr);
    ASSERT_FALSE(l.ok()) << unknown;
    EXPECT_EQ(l.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(l.status().message().find(
                  "after pretrain_gpt.py follows --my-fork-"),
              std::string::npos)
        << unknown << ": " << l.status();
    EXPECT_NE(l.status().message().find("an argument memgate does not know"),
              std::string::npos)
        << l.status();
  }
  // Among a list's values (--data-path takes any number of words), a word
  // named as arguments (the script's own, $EXTRA_ARGS, ${TRAIN_OPTS}) is
  // not a path: refused, naming the list.
  for (const char* named :
       {"--data-path $DATA_PATH $EXTRA_ARGS", "--data-path a \"$@\"",
        "--train-data-path x ${TRAIN_OPTS}", "--data-path $D $MODEL_FLAGS"}) {
    const absl::StatusOr<MegatronLaunch> l = ParseMegatronLaunch(
        Words(std::string(kLlama31_8B) + " " + named), nullptr);
    ASSERT_FALSE(l.ok()) << named;
    EXPECT_NE(l.status().message().find("among the values of --"),
              std::string::npos)
        << named << ": " << l.status();
  }
  // Values: of Megatron's arguments (one, or a list's many: paths by any
  // name, an array of them), given inline to a name memgate does not
  // know, and launcher words before the script.
  for (const char* value :
       {"--data-path $DATA_PATH", "--data-path 0.5 $A 0.5 ${B}",
        "--data-path \"${PATHS[@]}\"", "--data-path $DATA_PREFIX/$SPLIT",
        "--save $CKPT --load ${CKPT}", "--wandb-exp-name run_$DATE",
        "--my-fork-option=$X", "--my-fork-option literal --seed 1",
        "--data-cache-path=$CACHE"}) {
    const absl::StatusOr<MegatronLaunch> l = ParseMegatronLaunch(
        Words(std::string(kLlama31_8B) + " " + value), nullptr);
    EXPECT_TRUE(l.ok()) << value << ": " << l.status();
  }
  // The shell's own syntax after the script, as batch scripts write it:
  // redirections (and their targets) are not arguments, and a control
  // operator or a comment ends the command (what follows is another's).
  for (const char* shell :
       {"2>&1 | tee $LOG", "> $LOG_DIR/out.log 2>&1", "&& echo $DONE",
        "; echo $X", ">> ${LOG}", "|& tee -a $LOG", "&> $LOG", ">$LOG",
        "# $X", "& wait $PID", "< $IN"}) {
    const absl::StatusOr<MegatronLaunch> l =
        FromShellLine(std::string(kLlama31_8B) + " " + shell);
    EXPECT_TRUE(l.ok()) << shell << ": " << l.status();
  }
  for (const char* hidden : {"2>&1 $EXTRA", "> log $EXTRA"}) {
    EXPECT_FALSE(
        FromShellLine(std::string(kLlama31_8B) + " " + hidden)
            .ok())
        << hidden;
  }
  const absl::StatusOr<MegatronLaunch> piped =
      FromShellLine(std::string(kLlama31_8B) + " | tee --micro-batch-size 4");
  ASSERT_TRUE(piped.ok()) << piped.status();
  EXPECT_EQ(piped->job.training().micro_batch_size(), 1u);
  // A line of several commands: the launch is the one whose script is
  // given Megatron's arguments, wherever it stands.
  for (const std::string& line :
       {"cd $DIR && " + std::string(kLlama31_8B),
        "python prep.py --out $X --micro-batch-size 8 ; " +
            std::string(kLlama31_8B),
        std::string(kLlama31_8B) +
            " && python eval.py --micro-batch-size 8 $MORE"}) {
    const absl::StatusOr<MegatronLaunch> l =
        FromShellLine(line);
    ASSERT_TRUE(l.ok()) << line << ": " << l.status();
    EXPECT_EQ(l->job.training().micro_batch_size(), 1u) << line;
    EXPECT_EQ(l->job.model().num_layers(), 32u) << line;
  }
  // torchrun's GPU count set at run time (by the shell, by the node's
  // GPUs, by an elastic rendezvous): the job's comes from memgate's --gpus
  // (the launch leaves it 0, with a note), not a refusal.
  for (const auto& [given, count] :
       std::vector<std::pair<std::string, std::string>>{
           {"--nproc-per-node 8", "--nproc-per-node $GPUS"},
           {"--nnodes 2", "--nnodes ${N}"},
           {"--nproc-per-node 8", "--nproc-per-node gpu"},
           {"--nproc-per-node 8", "--nproc-per-node auto"},
           {"--nnodes 2", "--nnodes 1:4"}}) {
    std::string line = std::string(kLlama31_8B);
    line.replace(line.find(given), given.size(), count);
    const absl::StatusOr<MegatronLaunch> l =
        ParseMegatronLaunch(Words(line), nullptr);
    ASSERT_TRUE(l.ok()) << count << ": " << l.status();
    EXPECT_EQ(l->job.num_gpus(), 0u) << count;
    EXPECT_NE(AllNotes(*l).find("the GPU count is memgate's --gpus"),
              std::string::npos)
        << AllNotes(*l);
  }
  // A range of one node count is that count.
  std::string fixed = std::string(kLlama31_8B);
  fixed.replace(fixed.find("--nnodes 2"), 10, "--nnodes 2:2");
  const absl::StatusOr<MegatronLaunch> two_nodes =
      ParseMegatronLaunch(Words(fixed), nullptr);
  ASSERT_TRUE(two_nodes.ok()) << two_nodes.status();
  EXPECT_EQ(two_nodes->job.num_gpus(), 16u);
  // A hostile line of a hundred thousand commands (600,000 words) is one
  // pass over its words: the launch among them is found and read.
  std::string many;
  for (int i = 0; i < 100000; ++i) many += "python x.py --bf16 --seed $S ; ";
  const absl::StatusOr<MegatronLaunch> hostile =
      FromShellLine(many + kLlama31_8B);
  ASSERT_TRUE(hostile.ok()) << hostile.status();
  EXPECT_EQ(hostile->job.model().num_layers(), 32u);
  EXPECT_TRUE(hostile->unreviewed_script.empty());
  const absl::StatusOr<MegatronLaunch> launcher = ParseMegatronLaunch(
      Words("torchrun $DISTRIBUTED_ARGS " +
            std::string(kLlama31_8B).substr(std::string("torchrun").size())),
      nullptr);
  EXPECT_TRUE(launcher.ok()) << launcher.status();
  // A hostile word is echoed a line's worth.
  const absl::StatusOr<MegatronLaunch> long_word = ParseMegatronLaunch(
      Words(std::string(kLlama31_8B) + " $" + std::string(1 << 20, 'X')),
      nullptr);
  ASSERT_FALSE(long_word.ok());
  EXPECT_LT(long_word.status().message().size(), 500u);
}

// Megatron-DeepSpeed's pretrain_gpt.py with --deepspeed trains under
// DeepSpeed's engine (ZeRO's buckets and stages, its optimizer): it was
// read as Megatron-LM's, its DeepSpeed arguments noted as unknown, and
// admitted. The switches that hand training to that engine are refused by
// name; the fork's other DeepSpeed arguments act only under them and stay
// notes.
TEST(MegatronArgsTest, DeepSpeedsEngineAndModelOptsChangesAreRefusedByName) {
  for (const auto& [extra, named] :
       std::vector<std::pair<std::string, std::string>>{
           {"--deepspeed --deepspeed_config ds.json --zero-stage 1",
            "--deepspeed: "},
           {"--deepspeed_config=ds.json", "--deepspeed-config: "},
           {"--zero-stage 3 --deepscale", "--deepscale: "},
           {"--ds-sequence-parallel-size 4", "--ds-sequence-parallel-size: "}}) {
    const absl::StatusOr<MegatronLaunch> l = ParseMegatronLaunch(
        Words(std::string(kLlama31_8B) + " " + extra), nullptr);
    ASSERT_FALSE(l.ok()) << extra;
    EXPECT_EQ(l.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(absl::StartsWith(l.status().message(), named))
        << l.status();
    EXPECT_NE(l.status().message().find("DeepSpeed's engine"),
              std::string::npos)
        << l.status();
  }
  // ModelOpt's arguments, which pretrain_gpt.py adds when nvidia-modelopt
  // is installed: a distillation teacher on the same GPUs, Megatron's
  // local attention, quantization-aware training, ... were noted as
  // unknown and admitted. Those that enable ModelOpt are refused by name.
  for (const char* modelopt :
       {"--export-kd-teacher-load /ckpt/teacher", "--modelopt-enabled"}) {
    const absl::StatusOr<MegatronLaunch> l = ParseMegatronLaunch(
        Words(std::string(kLlama31_8B) + " " + modelopt), nullptr);
    ASSERT_FALSE(l.ok()) << modelopt;
    EXPECT_TRUE(absl::StartsWith(
        l.status().message(),
        std::string(modelopt).substr(0, std::string(modelopt).find(' '))))
        << l.status();
    EXPECT_NE(l.status().message().find("not modelled"), std::string::npos)
        << l.status();
  }
  // Those only ModelOpt's model builder reads act only where ModelOpt is
  // enabled: refused where a --load checkpoint may enable it, an enabling
  // argument does, or the script is not pretrain_gpt.py (which may build
  // ModelOpt's model: examples/post_training/modelopt/finetune.py); where
  // pretrain_gpt.py trains without any (NVIDIA's GPT-OSS example), noted
  // as changing nothing, all of them in one note.
  const std::string own_script = absl::StrReplaceAll(
      kLlama31_8B, {{"pretrain_gpt.py", "examples/post_training/modelopt/"
                                        "finetune.py"}});
  for (const char* modelopt :
       {"--export-force-local-attention", "--export-quant-cfg fp8",
        "--export-model-type HybridModel", "--enable-gpt-oss",
        "--export-real-quant-cfg fp8_real_quant", "--export-qk-l2-norm",
        "--export-moe-apply-probs-on-input"}) {
    const std::string name =
        std::string(modelopt).substr(0, std::string(modelopt).find(' '));
    for (const std::string& refused :
         {std::string(kLlama31_8B) + " " + modelopt + " --load /ckpt",
          std::string(kLlama31_8B) + " --load=/ckpt " + modelopt,
          std::string(kLlama31_8B) + " " + modelopt + " --modelopt-enabled",
          own_script + " " + modelopt}) {
      const absl::StatusOr<MegatronLaunch> l =
          ParseMegatronLaunch(Words(refused), nullptr);
      ASSERT_FALSE(l.ok()) << refused;
      EXPECT_TRUE(absl::StartsWith(l.status().message(),
                                   refused.find("finetune.py") !=
                                               std::string::npos ||
                                           refused.find("--load") !=
                                               std::string::npos
                                       ? name
                                       : std::string("--")))
          << l.status();
    }
    const absl::StatusOr<MegatronLaunch> with_load =
        ParseMegatronLaunch(Words(std::string(kLlama31_8B) + " " + modelopt +
                                  " --load /ckpt"),
                            nullptr);
    EXPECT_NE(with_load.status().message().find(
                  "with --load, a checkpoint that holds ModelOpt's state "
                  "builds ModelOpt's model"),
              std::string::npos)
        << with_load.status();
    const absl::StatusOr<MegatronLaunch> inert = ParseMegatronLaunch(
        Words(std::string(kLlama31_8B) + " " + modelopt), nullptr);
    ASSERT_TRUE(inert.ok()) << modelopt << ": " << inert.status();
    EXPECT_NE(AllNotes(*inert).find(
                  name + ": ModelOpt's, read only by its model builder, which "
                         "pretrain_gpt.py uses only with ModelOpt enabled"),
              std::string::npos)
        << AllNotes(*inert);
    EXPECT_NE(AllNotes(*inert).find("this launch enables none: no effect"),
              std::string::npos);
  }
  const absl::StatusOr<MegatronLaunch> both = ParseMegatronLaunch(
      Words(std::string(kLlama31_8B) +
            " --export-force-local-attention --enable-gpt-oss"),
      nullptr);
  ASSERT_TRUE(both.ok()) << both.status();
  EXPECT_NE(AllNotes(*both).find(
                "--export-force-local-attention, --enable-gpt-oss: ModelOpt's"),
            std::string::npos)
      << AllNotes(*both);
  const absl::StatusOr<MegatronLaunch> teacher = ParseMegatronLaunch(
      Words(std::string(kLlama31_8B) + " --export-kd-teacher-load /t"),
      nullptr);
  ASSERT_FALSE(teacher.ok());
  EXPECT_NE(teacher.status().message().find(
                "a teacher model beside the student on the same GPUs"),
            std::string::npos)
      << teacher.status();
  // One that only removes layers (an offline speculative model) is noted.
  const absl::StatusOr<MegatronLaunch> offline = ParseMegatronLaunch(
      Words(std::string(kLlama31_8B) + " --export-offline-model"), nullptr);
  EXPECT_TRUE(offline.ok()) << offline.status();
  const absl::StatusOr<MegatronLaunch> without = ParseMegatronLaunch(
      Words(std::string(kLlama31_8B) + " --zero-stage 1"), nullptr);
  ASSERT_TRUE(without.ok()) << without.status();
  EXPECT_NE(AllNotes(*without).find("--zero-stage"), std::string::npos);
  // Before the script it is the launcher's, not Megatron's.
  const absl::StatusOr<MegatronLaunch> launcher = ParseMegatronLaunch(
      Words("deepspeed --deepspeed " +
            std::string(kLlama31_8B).substr(std::string("torchrun ").size())),
      nullptr);
  EXPECT_TRUE(launcher.ok()) << launcher.status();
}

// The script: memgate models what pretrain_gpt.py builds. Megatron-LM's
// other entry points build other models (a vision encoder beside the
// language model, Mamba layers, an encoder-decoder, an inference engine
// beside training) and were read as its GPT model, and admitted; they are
// refused by name now. A script of the site's own is read as building the
// GPT model, with a note, and refused where the site refuses what memgate
// has not reviewed.
TEST(MegatronArgsTest, TheScriptBuildsTheModel) {
  const std::string args = std::string(kLlama31_8B).substr(
      std::string(kLlama31_8B).find("pretrain_gpt.py") +
      std::string("pretrain_gpt.py").size());
  auto read = [&](const std::string& script) {
    return ParseMegatronLaunch(
        Words("torchrun --nproc-per-node 8 " + script + args), nullptr);
  };
  for (const char* other :
       {"pretrain_mamba.py", "pretrain_hybrid.py", "pretrain_vlm.py",
        "examples/multimodal/train.py", "/src/Megatron-LM/pretrain_bert.py",
        "pretrain_t5.py", "pretrain_retro.py", "train_rl.py",
        "examples/mimo/train.py"}) {
    const absl::StatusOr<MegatronLaunch> l = read(other);
    ASSERT_FALSE(l.ok()) << other;
    EXPECT_NE(l.status().message().find(
                  ": not modelled (memgate models pretrain_gpt.py's GPT "
                  "model)"),
              std::string::npos)
        << l.status();
  }
  for (const char* gpt : {"pretrain_gpt.py", "/src/Megatron-LM/pretrain_gpt.py",
                          "${MEGATRON}/pretrain_gpt.py"}) {
    const absl::StatusOr<MegatronLaunch> l = read(gpt);
    ASSERT_TRUE(l.ok()) << gpt << ": " << l.status();
    EXPECT_TRUE(l->unreviewed_script.empty());
    EXPECT_TRUE(RefuseUnreviewedArguments(*l).ok());
  }
  const absl::StatusOr<MegatronLaunch> own = read("train.py");
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_EQ(own->unreviewed_script, "train.py");
  EXPECT_NE(AllNotes(*own).find("the script train.py is not Megatron-LM's "
                                "pretrain_gpt.py: read as building its GPT "
                                "model"),
            std::string::npos)
      << AllNotes(*own);
  const absl::Status refused = RefuseUnreviewedArguments(*own);
  EXPECT_NE(refused.message().find("train.py: not a Megatron-LM entry point"),
            std::string::npos)
      << refused;
  const absl::StatusOr<MegatronLaunch> long_path =
      read("/" + std::string(4096, 'd') + "/train.py");
  ASSERT_TRUE(long_path.ok()) << long_path.status();
  EXPECT_LT(AllNotes(*long_path).size(), 2000u);
}

// A command's argv (memgate exec, `memgate check -- ...`, the preflight
// API) holds no shell syntax: a run named '#1' or '|', or a stray word
// '&&', is the program's like any other, and what follows it is read. It
// once ended memgate's reading, and each of these ran at the MBS 8 after
// it, admitted at 1. A batch script's line (--launch-lines, the Slurm
// hook's) is split as the shell splits it: the same words quoted are the
// program's; unquoted, the shell's.
TEST(MegatronArgsTest, AnArgvWordIsTheProgramsWhateverItHolds) {
  for (const char* word : {"#1", "|", ";", "&&", "&", "2>&1", ">", "# x"}) {
    for (const char* before : {"--wandb-exp-name", "--bf16"}) {
      std::vector<std::string> argv = Words(kLlama31_8B);
      argv.insert(argv.end(), {before, word, "--micro-batch-size", "8"});
      const absl::StatusOr<MegatronLaunch> l =
          ParseMegatronLaunch(argv, nullptr);
      ASSERT_TRUE(l.ok()) << word << ": " << l.status();
      EXPECT_EQ(l->job.training().micro_batch_size(), 8u)
          << before << " " << word;
    }
    const absl::StatusOr<MegatronLaunch> quoted =
        FromShellLine(absl::StrCat(kLlama31_8B, " --wandb-exp-name '", word,
                                   "' --micro-batch-size 8"));
    ASSERT_TRUE(quoted.ok()) << word << ": " << quoted.status();
    EXPECT_EQ(quoted->job.training().micro_batch_size(), 8u) << word;
  }
  // Unquoted in a line, the shell's: the command ends, or the words are
  // a redirection's or a comment.
  for (const char* shell : {" ; echo --micro-batch-size 8",
                            " | tee --micro-batch-size 8",
                            " # --micro-batch-size 8",
                            " > --micro-batch-size 8"}) {
    const absl::StatusOr<MegatronLaunch> ended =
        FromShellLine(absl::StrCat(kLlama31_8B, shell));
    ASSERT_TRUE(ended.ok()) << shell << ": " << ended.status();
    EXPECT_EQ(ended->job.training().micro_batch_size(), 1u) << shell;
  }
  // Glued to an argument too (`if ...; then torchrun ... --bf16; fi`):
  // --bf16 read, not an unknown `--bf16;` (which left the job fp32).
  std::string glued = kLlama31_8B;
  glued.replace(glued.find(" --bf16"), 7, "");
  const absl::StatusOr<MegatronLaunch> bf16 =
      FromShellLine("if [ -n \"$X\" ]; then " + glued + " --bf16; fi");
  ASSERT_TRUE(bf16.ok()) << bf16.status();
  EXPECT_NE(bf16->job.training().precision(), v1::PRECISION_FP32);
  // An earlier command's export of TE's switches is the launch's
  // environment.
  const absl::StatusOr<MegatronLaunch> exported = FromShellLine(
      absl::StrCat("export NVTE_FLASH_ATTN=0 NVTE_FUSED_ATTN=0; ",
                   kLlama31_8B));
  ASSERT_TRUE(exported.ok()) << exported.status();
  EXPECT_EQ(exported->job.training().attention_kernel(),
            v1::ATTENTION_KERNEL_UNFUSED);
  // An earlier command's own assignments are its alone, as bash gives them.
  const absl::StatusOr<MegatronLaunch> own = FromShellLine(absl::StrCat(
      "NVTE_FLASH_ATTN=0 NVTE_FUSED_ATTN=0 cd $DIR && ", kLlama31_8B));
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_NE(own->job.training().attention_kernel(),
            v1::ATTENTION_KERNEL_UNFUSED);
  EXPECT_FALSE(FromShellLine(absl::StrCat(kLlama31_8B, " --x 'open")).ok());
  // A shell run on a string runs its commands (as batch scripts start a
  // launch a node): the launch among them is read, with the TE switches
  // the words before it set.
  std::string mbs8 = kLlama31_8B;
  mbs8.replace(mbs8.find("--micro-batch-size 1"), 20, "--micro-batch-size 8");
  for (const std::string& line :
       {"srun bash -c \"cd $DIR && " + mbs8 + " 2>&1\" | tee log",
        "srun --export=ALL,NVTE_FLASH_ATTN=0 /bin/sh -lc 'export "
        "NVTE_FUSED_ATTN=0; " + mbs8 + "'",
        "bash -c \"bash -c '" + mbs8 + "'\""}) {
    const absl::StatusOr<MegatronLaunch> l = FromShellLine(line);
    ASSERT_TRUE(l.ok()) << line << ": " << l.status();
    EXPECT_EQ(l->job.training().micro_batch_size(), 8u) << line;
  }
  const absl::StatusOr<MegatronLaunch> te = FromShellLine(
      "srun --export=ALL,NVTE_FLASH_ATTN=0 /bin/sh -lc 'export "
      "NVTE_FUSED_ATTN=0; " + mbs8 + "'");
  ASSERT_TRUE(te.ok()) << te.status();
  EXPECT_EQ(te->job.training().attention_kernel(),
            v1::ATTENTION_KERNEL_UNFUSED);
  // A launch echoed (`echo "torchrun ..." | bash` runs it) is read as
  // one; an echo of text that is no shell line leaves the launch beside
  // it as it was.
  for (const std::string& line :
       {"echo \"Running: " + mbs8 + "\" | bash",
        "NVTE_DEBUG=1 /bin/echo " + mbs8,
        mbs8 + " && echo \"it's done\"",
        "printf '%s\\n' \"" + mbs8 + "\" > launch.sh"}) {
    const absl::StatusOr<MegatronLaunch> l = FromShellLine(line);
    ASSERT_TRUE(l.ok()) << line << ": " << l.status();
    EXPECT_EQ(l->job.training().micro_batch_size(), 8u) << line;
  }
  // Every command of a line that runs the launch's script, or scores as
  // high, is a launch of its own (the worst decides), a warm-up run's and
  // an echoed decoy's too; a preprocessing script beside it is not.
  const std::string mbs1 = kLlama31_8B;
  for (const auto& [line, count] :
       std::vector<std::pair<std::string, size_t>>{
           {mbs1 + " && " + mbs8, 2},
           {mbs8 + " ; echo \"" + mbs1 + " --seed 7\"", 2},
           {"python tools/preprocess_data.py --tokenizer-type "
            "Llama3Tokenizer --seq-length 8192; " + mbs8, 1}}) {
    const absl::StatusOr<std::vector<std::vector<std::string>>> launches =
        LaunchCommandsOfShellLine(line);
    ASSERT_TRUE(launches.ok()) << line << ": " << launches.status();
    EXPECT_EQ(launches->size(), count) << line;
  }
  std::string many_launches;
  for (size_t i = 0; i <= kMaxLaunchesALine; ++i) {
    many_launches += "torchrun pretrain_gpt.py --num-layers 2; ";
  }
  const absl::StatusOr<std::vector<std::vector<std::string>>> too_many =
      LaunchCommandsOfShellLine(many_launches);
  ASSERT_FALSE(too_many.ok());
  EXPECT_NE(too_many.status().message().find("more than 64 launches on one "
                                             "line"),
            std::string::npos)
      << too_many.status();
  // A hostile line of a million shell-named options is one pass.
  std::string options;
  for (int i = 0; i < 1000000; ++i) options += "-/bash ";
  EXPECT_FALSE(FromShellLine("bash " + options).ok());
}

// An argument with shell syntax in its name (quoted with it: '--bf16;')
// is none of Megatron's, which refuses the launch, and `--$FLAG` supplies
// an argument only when the
// command runs: each was an unknown argument read past with a note (the
// run's --tp-comm-overlap; its userbuffers uncounted). Refused naming the
// word.
TEST(MegatronArgsTest, ShellSyntaxInAnArgumentsNameIsRefused) {
  for (const char* word : {"--tp-comm-overlap;", "--bf16&&", "--bf16|tee",
                           "--bf16>log", "--recompute-activations)",
                           "--bf16\"", "--tp-comm-overlap'"}) {
    std::vector<std::string> argv = Words(kLlama31_8B);
    argv.push_back(word);
    const absl::StatusOr<MegatronLaunch> l = ParseMegatronLaunch(argv, nullptr);
    ASSERT_FALSE(l.ok()) << word;
    EXPECT_NE(l.status().message().find(absl::StrCat(
                  "launch: '", word,
                  "' holds shell syntax (an operator or a quote) in an "
                  "argument's name")),
              std::string::npos)
        << l.status();
  }
  for (const char* word : {"--$FLAG", "--${RECOMPUTE}", "--`hostname`"}) {
    const absl::StatusOr<MegatronLaunch> l =
        ParseMegatronLaunch(Words(absl::StrCat(kLlama31_8B, " ", word)),
                            nullptr);
    ASSERT_FALSE(l.ok()) << word;
    EXPECT_NE(l.status().message().find(absl::StrCat(
                  "launch: '", word,
                  "' after pretrain_gpt.py is a shell expansion")),
              std::string::npos)
        << l.status();
  }
  // Before the script, the launcher's words are not Megatron's: a
  // launcher option holding one is not refused.
  const absl::StatusOr<MegatronLaunch> launcher = ParseMegatronLaunch(
      Words(absl::StrCat("torchrun --rdzv-endpoint=$HOST:29500 ",
                         std::string(kLlama31_8B).substr(9))),
      nullptr);
  EXPECT_TRUE(launcher.ok()) << launcher.status();
}

// A script the shell names when the command runs (`torchrun $SCRIPT
// --num-layers ...`, no word ending in .py) was not looked at, nor were
// the words after it: `$EXTRA_ARGS` there was read past and the launch
// admitted without it. Now Megatron's arguments begin at the first of its
// argument names, the launcher's words before them; the expansion among
// the launcher's positional words is the script (noted, as a site's own
// script is, and refused under --refuse-unreviewed), and expansions among
// the arguments are refused as after a named script.
TEST(MegatronArgsTest, AScriptTheShellNamesIsReadAsOne) {
  const std::string args = std::string(kLlama31_8B).substr(
      std::string(kLlama31_8B).find("pretrain_gpt.py") +
      std::string("pretrain_gpt.py").size());
  for (const std::string launcher :
       {"torchrun --nproc-per-node 8 $SCRIPT",
        "torchrun --nproc-per-node $GPUS --nnodes ${NODES} ${SCRIPT}",
        "torchrun --standalone $SCRIPT", "srun python -u $SCRIPT",
        "$LAUNCHER $SCRIPT",
        // After a switch memgate does not know, and after an unknown
        // option's value.
        "torchrun --nproc-per-node 8 --virtual-local-rank $SCRIPT",
        "torchrun --site-option value $SCRIPT"}) {
    const absl::StatusOr<MegatronLaunch> l =
        ParseMegatronLaunch(Words(launcher + args), nullptr);
    ASSERT_TRUE(l.ok()) << launcher << ": " << l.status();
    EXPECT_EQ(l->job.model().num_layers(), 32u);
    EXPECT_NE(l->unreviewed_script.find("SCRIPT"), std::string::npos)
        << launcher << ": " << l->unreviewed_script;
    EXPECT_NE(AllNotes(*l).find("which the shell names only when the command "
                                "runs: read as Megatron-LM's pretrain_gpt.py"),
              std::string::npos)
        << AllNotes(*l);
    EXPECT_FALSE(RefuseUnreviewedArguments(*l).ok()) << launcher;
    // Words the shell supplies among its arguments are refused; the shell's
    // own syntax after them is not an argument.
    const absl::StatusOr<MegatronLaunch> hidden = ParseMegatronLaunch(
        Words(launcher + args + " $EXTRA_ARGS"), nullptr);
    ASSERT_FALSE(hidden.ok()) << launcher;
    EXPECT_NE(hidden.status().message().find(
                  "'$EXTRA_ARGS' after --num-layers is a shell expansion"),
              std::string::npos)
        << hidden.status();
    const absl::StatusOr<MegatronLaunch> logged =
        FromShellLine(launcher + args + " 2>&1 | tee $LOG");
    EXPECT_TRUE(logged.ok()) << launcher << ": " << logged.status();
  }
  // Megatron's arguments alone (`memgate check -- --num-layers ...`):
  // no script, and a word the shell supplies among them is refused too.
  const absl::StatusOr<MegatronLaunch> alone =
      ParseMegatronLaunch(Words(args.substr(1)), nullptr);
  ASSERT_TRUE(alone.ok()) << alone.status();
  EXPECT_TRUE(alone->unreviewed_script.empty());
  EXPECT_FALSE(
      ParseMegatronLaunch(Words(args.substr(1) + " ${ARGS[@]}"), nullptr)
          .ok());
  // Of several commands, the one given Megatron's arguments, though
  // another names a .py.
  const absl::StatusOr<MegatronLaunch> after_prep =
      FromShellLine("python prep.py ; torchrun $SCRIPT" + args);
  ASSERT_TRUE(after_prep.ok()) << after_prep.status();
  EXPECT_EQ(after_prep->unreviewed_script, "$SCRIPT");
  EXPECT_EQ(after_prep->job.model().num_layers(), 32u);
  // torchrun's options' values are the launcher's, not a script.
  const absl::StatusOr<MegatronLaunch> values = ParseMegatronLaunch(
      Words("torchrun --nproc-per-node $GPUS --rdzv-endpoint $HOST:29500" +
            args),
      nullptr);
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_TRUE(values->unreviewed_script.empty()) << values->unreviewed_script;
}

// A literal script without .py was not looked at: `torchrun pretrain_mamba
// --num-layers ...` was read as the GPT model, and a wrapper (`bash
// train.sh ...`, which may add arguments) went unsaid. The launcher's last
// positional word is the script, literal or not: Megatron's other entry
// points are refused by name (with or without .py), anything else is a
// site's own script (noted; refused under --refuse-unreviewed); launcher
// programs, options, their values and assignments are not scripts; a
// module run with -m is (torch.distributed's launcher is not).
TEST(MegatronArgsTest, ALiteralScriptWithoutPyIsReadAsOne) {
  const std::string args = std::string(kLlama31_8B).substr(
      std::string(kLlama31_8B).find("pretrain_gpt.py") +
      std::string("pretrain_gpt.py").size());
  auto read = [&](const std::string& launcher) {
    return ParseMegatronLaunch(Words(launcher + args), nullptr);
  };
  for (const std::string launcher :
       {"torchrun --nproc-per-node 8 pretrain_mamba",
        "srun python -u /opt/megatron/pretrain_mamba",
        "python -m pretrain_mamba",
        // A switch memgate does not know before it was read as taking the
        // script as its value: the launch was admitted as the GPT model,
        // unsaid.
        "torchrun --nproc-per-node 8 --virtual-local-rank pretrain_mamba",
        "srun --exclusive pretrain_mamba"}) {
    const absl::StatusOr<MegatronLaunch> mamba = read(launcher);
    ASSERT_FALSE(mamba.ok()) << launcher;
    EXPECT_NE(mamba.status().message().find(
                  "pretrain_mamba.py: Megatron-LM's entry point"),
              std::string::npos)
        << mamba.status();
  }
  for (const auto& [launcher, script] :
       std::vector<std::pair<std::string, std::string>>{
           {"bash train.sh", "train.sh"},
           {"CUDA_DEVICE_MAX_CONNECTIONS=1 srun python -u train", "train"},
           {"torchrun --standalone --nproc-per-node 8 ./run_megatron",
            "./run_megatron"},
           {"torchrun --nproc-per-node 8 -m site.train", "site.train"},
           {"python -m torch.distributed.run --nproc-per-node 8 -m "
            "site.train",
            "site.train"},
       }) {
    const absl::StatusOr<MegatronLaunch> own = read(launcher);
    ASSERT_TRUE(own.ok()) << launcher << ": " << own.status();
    EXPECT_EQ(own->unreviewed_script, script) << launcher;
    EXPECT_NE(AllNotes(*own).find(" is not Megatron-LM's pretrain_gpt.py"),
              std::string::npos)
        << AllNotes(*own);
    EXPECT_FALSE(RefuseUnreviewedArguments(*own).ok()) << launcher;
    EXPECT_EQ(own->job.model().num_layers(), 32u);
  }
  // Hostile launcher words: 600,000 of them before the arguments (options,
  // values, assignments, positional words) are one pass; a 1 MiB script
  // name is quoted a line's worth.
  std::vector<std::string> many = {"torchrun"};
  for (int i = 0; i < 100000; ++i) {
    for (const char* w : {"--rdzv-id", "7", "A_B=1", "-m", "x.y", "w"}) {
      many.emplace_back(w);
    }
  }
  many.push_back("./site_train");
  for (const std::string& w : Words(args.substr(1))) many.push_back(w);
  const absl::StatusOr<MegatronLaunch> hostile =
      ParseMegatronLaunch(many, nullptr);
  ASSERT_TRUE(hostile.ok()) << hostile.status();
  EXPECT_EQ(hostile->unreviewed_script, "./site_train");
  const absl::StatusOr<MegatronLaunch> long_name =
      read("torchrun " + std::string(1 << 20, 's'));
  ASSERT_TRUE(long_name.ok()) << long_name.status();
  EXPECT_LT(AllNotes(*long_name).size(), 4000u);
  for (const std::string launcher :
       {"torchrun --standalone pretrain_gpt", "torchrun --nproc-per-node 8",
        "python -m torch.distributed.run --nproc-per-node 8",
        "NCCL_DEBUG=INFO torchrun --rdzv-endpoint host:29500"}) {
    const absl::StatusOr<MegatronLaunch> gpt = read(launcher);
    ASSERT_TRUE(gpt.ok()) << launcher << ": " << gpt.status();
    EXPECT_TRUE(gpt->unreviewed_script.empty())
        << launcher << ": " << gpt->unreviewed_script;
  }
}

// Megatron's --softmax-type (attention sinks): TransformerEngine runs an
// off-by-one or learnable softmax in cuDNN's fused attention or its
// unfused one, never FlashAttention, and with CP only fused over an
// all-to-all. Under auto the installed cuDNN picks: refused, naming the
// flag, as is flash; fused has no s x s term (CP only with a2a, which the
// plans of such a launch keep); unfused, and fp32's auto, keep the scores.
TEST(MegatronArgsTest, SoftmaxTypesRunWhereTransformerEngineRunsThem) {
  const std::string base =
      "pretrain_gpt.py --num-layers 4 --hidden-size 1024 "
      "--num-attention-heads 16 --vocab-size 32000 --seq-length 4096 ";
  auto read = [&](const std::string& extra) {
    return ParseMegatronLaunch(Words(base + extra), nullptr);
  };
  auto refused_by_name = [&](const std::string& extra) {
    const absl::StatusOr<MegatronLaunch> l = read(extra);
    ASSERT_FALSE(l.ok()) << extra;
    EXPECT_TRUE(absl::StartsWith(l.status().message(), "--softmax-type: "))
        << l.status();
  };
  refused_by_name("--bf16 --softmax-type learnable");
  refused_by_name("--bf16 --softmax-type off-by-one --attention-backend auto");
  refused_by_name("--bf16 --softmax-type learnable --attention-backend flash");
  refused_by_name("--bf16 --softmax-type sigmoid --attention-backend fused");
  refused_by_name("--bf16 --softmax-type learnable --attention-backend fused "
                  "--context-parallel-size 2");
  refused_by_name("--bf16 --softmax-type learnable --attention-backend fused "
                  "--context-parallel-size 2 --cp-comm-type all_gather");

  absl::StatusOr<MegatronLaunch> fused =
      read("--bf16 --softmax-type learnable --attention-backend fused");
  ASSERT_TRUE(fused.ok()) << fused.status();
  EXPECT_EQ(fused->job.training().attention_kernel(),
            v1::ATTENTION_KERNEL_FLASH);
  EXPECT_TRUE(fused->context_parallel_all_to_all_only);
  EXPECT_NE(AllNotes(*fused).find("cuDNN's fused attention"),
            std::string::npos);
  // The job carries the softmax, so that validation keeps its rules for
  // every candidate a plan makes of it.
  EXPECT_EQ(fused->job.model().softmax_type(), v1::SOFTMAX_TYPE_LEARNABLE);
  EXPECT_TRUE(fused->job.training().flash_attention_disabled());
  v1::Job on_gpus = fused->job;
  on_gpus.mutable_accelerator()->set_name("h100-80gb");
  on_gpus.set_num_gpus(8);
  EXPECT_TRUE(EstimateJob(on_gpus).ok()) << EstimateJob(on_gpus).status();
  absl::StatusOr<MegatronLaunch> over_a2a =
      read("--bf16 --softmax-type off-by-one --attention-backend fused "
           "--context-parallel-size 2 --cp-comm-type a2a");
  ASSERT_TRUE(over_a2a.ok()) << over_a2a.status();
  EXPECT_EQ(over_a2a->job.model().softmax_type(),
            v1::SOFTMAX_TYPE_OFF_BY_ONE);
  for (const char* unfused :
       {"--bf16 --softmax-type learnable --attention-backend unfused",
        "--bf16 --softmax-type learnable --transformer-impl local",
        "--softmax-type learnable"}) {  // fp32: auto runs unfused
    absl::StatusOr<MegatronLaunch> l = read(unfused);
    ASSERT_TRUE(l.ok()) << unfused << ": " << l.status();
    EXPECT_EQ(l->job.training().attention_kernel(),
              absl::StrContains(unfused, "local") ? v1::ATTENTION_KERNEL_LOCAL
                                                  : v1::ATTENTION_KERNEL_UNFUSED)
        << unfused;
    EXPECT_FALSE(l->context_parallel_all_to_all_only);
    EXPECT_EQ(l->job.model().softmax_type(), v1::SOFTMAX_TYPE_LEARNABLE);
  }
  absl::StatusOr<MegatronLaunch> vanilla =
      read("--bf16 --softmax-type vanilla");
  ASSERT_TRUE(vanilla.ok()) << vanilla.status();
  EXPECT_EQ(vanilla->job.training().attention_kernel(),
            v1::ATTENTION_KERNEL_UNSPECIFIED);
  EXPECT_EQ(vanilla->job.model().softmax_type(), v1::SOFTMAX_TYPE_VANILLA);
}

// A launch of a release from core 0.12.0 on may give arguments the
// reviewed revision no longer has: the memory-relevant ones are refused by
// name (the legacy models' attention is unfused without --use-flash-attn),
// the others read past without a note that memgate did not review them.
TEST(MegatronArgsTest, OlderReleasesArgumentsAreReviewedToo) {
  const std::string base =
      "pretrain_gpt.py --num-layers 4 --hidden-size 1024 "
      "--num-attention-heads 16 --vocab-size 32000 --seq-length 4096 --bf16 ";
  for (const char* refused :
       {"--use-legacy-models", "--moe-extended-tp",
        "--encoder-tensor-model-parallel-size 2",
        "--pipeline-model-parallel-split-rank 1",
        "--hybrid-attention-ratio 0.1", "--retro-add-retriever"}) {
    const absl::StatusOr<MegatronLaunch> l =
        ParseMegatronLaunch(Words(base + refused), nullptr);
    ASSERT_FALSE(l.ok()) << refused;
    const std::string name =
        std::string(refused).substr(0, std::string(refused).find(' '));
    EXPECT_TRUE(absl::StartsWith(l.status().message(), name + ": "))
        << l.status();
  }
  const absl::StatusOr<MegatronLaunch> l = ParseMegatronLaunch(
      Words(base + "--legacy-tokenizer --no-async-tensor-model-parallel-"
                   "allreduce --keep-fp8-transpose-cache-when-using-custom-"
                   "fsdp"),
      nullptr);
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_TRUE(l->unreviewed.empty());
  EXPECT_EQ(l->unreviewed_count, 0u);
}

// --qk-clip and --log-max-attention-logit have TransformerEngine return
// the largest attention logit, which FlashAttention cannot: under auto
// cuDNN's version picks fused (9.21 on) or unfused, so they are refused by
// name, as with flash; fused counts no scores, unfused and Megatron's
// local attention (which takes the max of its stored scores) count them.
TEST(MegatronArgsTest, MaxLogitsRunWhereTransformerEngineRunsThem) {
  const std::string base =
      "pretrain_gpt.py --num-layers 4 --hidden-size 1024 "
      "--num-attention-heads 16 --vocab-size 32000 --seq-length 4096 --bf16 ";
  for (const char* flag : {"--qk-clip", "--log-max-attention-logit"}) {
    for (const char* backend : {"", "--attention-backend auto",
                                "--attention-backend flash"}) {
      const absl::StatusOr<MegatronLaunch> l = ParseMegatronLaunch(
          Words(base + flag + " " + backend), nullptr);
      ASSERT_FALSE(l.ok()) << flag << " " << backend;
      EXPECT_TRUE(absl::StartsWith(l.status().message(),
                                   std::string(flag) + ": "))
          << l.status();
    }
    absl::StatusOr<MegatronLaunch> fused = ParseMegatronLaunch(
        Words(base + flag + " --attention-backend fused"), nullptr);
    ASSERT_TRUE(fused.ok()) << fused.status();
    EXPECT_EQ(fused->job.training().attention_kernel(),
              v1::ATTENTION_KERNEL_FLASH);
    EXPECT_FALSE(fused->context_parallel_all_to_all_only);
    for (const char* unfused :
         {" --attention-backend unfused", " --transformer-impl local"}) {
      absl::StatusOr<MegatronLaunch> l =
          ParseMegatronLaunch(Words(base + flag + unfused), nullptr);
      ASSERT_TRUE(l.ok()) << l.status();
      EXPECT_EQ(l->job.training().attention_kernel(),
                absl::StrContains(unfused, "local")
                    ? v1::ATTENTION_KERNEL_LOCAL
                    : v1::ATTENTION_KERNEL_UNFUSED);
    }
  }
}

// --use-checkpoint-args has Megatron take the model's arguments from the
// checkpoint, overriding some the launch gives (load_args_from_checkpoint
// force=True): memgate cannot read the checkpoint, so it is refused by
// name, as --yaml-cfg is; without it the two flags that only refine it do
// nothing and are read past.
TEST(MegatronArgsTest, ArgumentsFromACheckpointAreRefused) {
  const std::string base =
      "pretrain_gpt.py --num-layers 4 --hidden-size 1024 "
      "--num-attention-heads 16 --vocab-size 32000 --seq-length 4096 --bf16 "
      "--load /ckpt ";
  const absl::StatusOr<MegatronLaunch> refused =
      ParseMegatronLaunch(Words(base + "--use-checkpoint-args"), nullptr);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(absl::StartsWith(refused.status().message(),
                               "--use-checkpoint-args: "))
      << refused.status();
  EXPECT_TRUE(ParseMegatronLaunch(
                  Words(base + "--use-mp-args-from-checkpoint-args "
                               "--use-tokenizer-model-from-checkpoint-args"),
                  nullptr)
                  .ok());
}

// Megatron's global batch (arguments.py, num_microbatches_calculator.py):
// absent, it is micro-batch x data-parallel size, one micro-batch a step,
// so a 2-stage pipeline's first stage holds one micro-batch's activations,
// not two; --decrease-batch-size-if-needed rounds the given one down; a
// --step-batch-size-schedule leaves it unknown (the most a stage can hold)
// and is refused beside either (Megatron raises). Each is said in a note.
TEST(MegatronArgsTest, TheGlobalBatchIsSettledAsMegatronSettlesIt) {
  constexpr char kGiven[] = "--global-batch-size 1024 ";
  auto settled = [&](const std::string& extra, const std::string& drop,
                     std::vector<std::string>& notes) -> absl::StatusOr<v1::Job> {
    absl::StatusOr<MegatronLaunch> l = ReadLlamaLaunch(extra, drop);
    if (!l.ok()) return l.status();
    v1::Job job = l->job;
    job.mutable_accelerator()->set_name("h100-80gb");
    notes = l->notes;
    if (absl::Status s =
            ApplyMegatronGlobalBatch(l->global_batch_rule, job, notes);
        !s.ok()) {
      return s;
    }
    return job;
  };
  auto in_flight = [](const v1::Job& job) {
    absl::StatusOr<v1::Estimate> e = EstimateJob(job);
    EXPECT_TRUE(e.ok()) << e.status();
    return e.ok() ? e->stages(0).microbatches_in_flight() : 0u;
  };
  std::vector<std::string> notes;
  // 16 GPUs at TP 4, PP 2: d = 2.
  absl::StatusOr<v1::Job> given = settled("", "", notes);
  ASSERT_TRUE(given.ok()) << given.status();
  EXPECT_EQ(given->training().global_batch_size(), 1024u);
  EXPECT_EQ(in_flight(*given), 2u);

  absl::StatusOr<v1::Job> by_default = settled("", kGiven, notes);
  ASSERT_TRUE(by_default.ok()) << by_default.status();
  EXPECT_EQ(by_default->training().global_batch_size(), 2u);
  EXPECT_EQ(in_flight(*by_default), 1u);
  EXPECT_NE(absl::StrJoin(notes, "\n").find(
                "no --global-batch-size: Megatron's default, micro-batch x "
                "data-parallel size = 2 (one micro-batch a step)"),
            std::string::npos)
      << absl::StrJoin(notes, "\n");
  // A global batch memgate's flags give (here set on the job) stays.
  absl::StatusOr<MegatronLaunch> l = ReadLlamaLaunch("", kGiven);
  ASSERT_TRUE(l.ok());
  v1::Job flagged = l->job;
  flagged.mutable_training()->set_global_batch_size(64);
  notes.clear();
  ASSERT_TRUE(
      ApplyMegatronGlobalBatch(l->global_batch_rule, flagged, notes).ok());
  EXPECT_EQ(flagged.training().global_batch_size(), 64u);
  EXPECT_TRUE(notes.empty());

  absl::StatusOr<v1::Job> rounded = settled(
      "--micro-batch-size 2 --global-batch-size 1023 "
      "--decrease-batch-size-if-needed",
      "--micro-batch-size 1 --global-batch-size 1024 ", notes);
  ASSERT_TRUE(rounded.ok()) << rounded.status();
  EXPECT_EQ(rounded->training().global_batch_size(), 1020u);
  EXPECT_NE(absl::StrJoin(notes, "\n").find("rounds --global-batch-size "
                                            "1023 down to 1020"),
            std::string::npos);
  // Without it, Megatron asserts the divisibility, and so does memgate.
  absl::StatusOr<v1::Job> undivided =
      settled("--global-batch-size 1023", kGiven, notes);
  ASSERT_TRUE(undivided.ok());
  EXPECT_FALSE(EstimateJob(*undivided).ok());
  absl::StatusOr<v1::Job> none = settled(
      "--global-batch-size 1 --decrease-batch-size-if-needed", kGiven, notes);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("--decrease-batch-size-if-needed"),
            std::string::npos)
      << none.status();

  absl::StatusOr<v1::Job> scheduled = settled(
      "--step-batch-size-schedule 0:768", kGiven, notes);
  ASSERT_TRUE(scheduled.ok()) << scheduled.status();
  EXPECT_EQ(scheduled->training().global_batch_size(), 0u);
  EXPECT_EQ(in_flight(*scheduled), 2u);
  EXPECT_NE(absl::StrJoin(notes, "\n").find("--step-batch-size-schedule"),
            std::string::npos);
  EXPECT_TRUE(RefusedNaming("--step-batch-size-schedule 0:768", "",
                            {"--step-batch-size-schedule",
                             "--global-batch-size"}));
  EXPECT_TRUE(RefusedNaming(
      "--step-batch-size-schedule 0:768 --decrease-batch-size-if-needed",
      kGiven, {"--step-batch-size-schedule", "--decrease-batch-size-if-needed"}));
  EXPECT_TRUE(RefusedNaming("--global-batch-size 0", kGiven,
                            {"--global-batch-size", "above 0"}));
}

// --tp-comm-overlap: TransformerEngine's userbuffers, 12 buffers of
// (s x b / c) x h on every GPU (768 MiB for this 8B launch at 8k in bf16,
// 512 MiB under fp8) and their communicators' flags, on top of everything
// else; a --tp-comm-overlap-cfg is counted at its upper bound and said;
// without sequence parallelism Megatron asserts, and memgate refuses.
TEST(MegatronArgsTest, TpCommOverlapCountsTransformerEnginesUserbuffers) {
  auto peak = [](const v1::Job& job) {
    absl::StatusOr<v1::Estimate> e = EstimateJob(job);
    EXPECT_TRUE(e.ok()) << e.status();
    return e.ok() ? e->peak() : v1::StageMemory();
  };
  const v1::StageMemory plain = peak(LlamaLaunchJob(""));
  const v1::StageMemory overlap = peak(LlamaLaunchJob("--tp-comm-overlap"));
  const double buffers = 12 * 2.0 * 8192 * 4096;
  EXPECT_GT(overlap.te_userbuffer_bytes(), buffers);
  EXPECT_LT(overlap.te_userbuffer_bytes(), buffers + 12 * 5 * (1 << 20));
  EXPECT_DOUBLE_EQ(overlap.communication_buffer_bytes(),
                   overlap.te_userbuffer_bytes());
  EXPECT_DOUBLE_EQ(overlap.total_bytes(),
                   plain.total_bytes() + overlap.te_userbuffer_bytes());
  EXPECT_DOUBLE_EQ(overlap.activation_bytes(), plain.activation_bytes());

  const v1::StageMemory fp8 = peak(LlamaLaunchJob(
      "--tp-comm-overlap --fp8-format hybrid --fp8-recipe tensorwise"));
  EXPECT_NEAR(overlap.te_userbuffer_bytes() - fp8.te_userbuffer_bytes(),
              8 * 8192 * 4096.0, 1);

  absl::StatusOr<MegatronLaunch> custom =
      ReadLlamaLaunch("--tp-comm-overlap --tp-comm-overlap-cfg ub.yaml", "");
  ASSERT_TRUE(custom.ok()) << custom.status();
  EXPECT_EQ(custom->job.training().tp_comm_overlap(),
            v1::TrainingConfig::TP_COMM_OVERLAP_CUSTOM_CONFIG);
  EXPECT_NE(AllNotes(*custom).find("an upper bound"), std::string::npos);
  v1::Job custom_job = custom->job;
  custom_job.mutable_accelerator()->set_name("h100-80gb");
  EXPECT_NEAR(peak(custom_job).te_userbuffer_bytes() -
                  overlap.te_userbuffer_bytes(),
              buffers * (7.0 / 4 - 1), 12 * 2 * (1 << 20));

  // The YAML alone does nothing, and says so.
  absl::StatusOr<MegatronLaunch> cfg_only =
      ReadLlamaLaunch("--tp-comm-overlap-cfg ub.yaml", "");
  ASSERT_TRUE(cfg_only.ok());
  EXPECT_EQ(cfg_only->job.training().tp_comm_overlap(),
            v1::TrainingConfig::TP_COMM_OVERLAP_OFF);
  EXPECT_NE(AllNotes(*cfg_only).find("without --tp-comm-overlap"),
            std::string::npos);

  EXPECT_TRUE(RefusedNaming("--tp-comm-overlap", "--sequence-parallel ",
                            {"--tp-comm-overlap", "--sequence-parallel"}));
  EXPECT_TRUE(RefusedNaming("--tp-comm-overlap --tensor-model-parallel-size 1",
                            "--tensor-model-parallel-size 4 ",
                            {"--tp-comm-overlap"}));
}

// --first-last-layers-bf16 under fp8: the first and last layers (1 each
// by Megatron's default) run in bf16 and keep bf16 activations; with
// --tp-comm-overlap TransformerEngine makes a second, unquantized set of
// userbuffers. Without fp8 it does nothing, and says so; with the delayed
// recipe Megatron raises, and so does the estimate.
TEST(MegatronArgsTest, LayersKeptInBf16UnderFp8AreRead) {
  constexpr char kFp8[] = "--fp8-format hybrid --fp8-recipe tensorwise ";
  absl::StatusOr<MegatronLaunch> l = ReadLlamaLaunch(
      std::string(kFp8) + "--first-last-layers-bf16", "");
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->job.training().fp8().bf16_first_layers(), 1u);
  EXPECT_EQ(l->job.training().fp8().bf16_last_layers(), 1u);
  EXPECT_NE(AllNotes(*l).find("--first-last-layers-bf16: the first 1 and "
                              "last 1 layers run outside fp8"),
            std::string::npos);
  const v1::Job fp8 = LlamaLaunchJob(kFp8);
  const v1::Job kept = LlamaLaunchJob(
      std::string(kFp8) + "--first-last-layers-bf16 "
                          "--num-layers-at-start-in-bf16 2 "
                          "--num-layers-at-end-in-bf16 0");
  EXPECT_EQ(kept.training().fp8().bf16_first_layers(), 2u);
  EXPECT_EQ(kept.training().fp8().bf16_last_layers(), 0u);
  EXPECT_GT(PeakOf(kept), PeakOf(fp8));
  // The counts alone do nothing.
  EXPECT_EQ(LlamaLaunchJob(std::string(kFp8) + "--num-layers-at-start-in-bf16 4")
                .training()
                .fp8()
                .bf16_first_layers(),
            0u);

  absl::StatusOr<v1::Estimate> overlap = EstimateJob(LlamaLaunchJob(
      std::string(kFp8) + "--first-last-layers-bf16 --tp-comm-overlap"));
  absl::StatusOr<v1::Estimate> fp8_overlap =
      EstimateJob(LlamaLaunchJob(std::string(kFp8) + "--tp-comm-overlap"));
  absl::StatusOr<v1::Estimate> bf16_overlap =
      EstimateJob(LlamaLaunchJob("--tp-comm-overlap"));
  ASSERT_TRUE(overlap.ok() && fp8_overlap.ok() && bf16_overlap.ok());
  EXPECT_DOUBLE_EQ(overlap->peak().te_userbuffer_bytes(),
                   fp8_overlap->peak().te_userbuffer_bytes() +
                       bf16_overlap->peak().te_userbuffer_bytes());

  l = ReadLlamaLaunch("--first-last-layers-bf16", "");
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_FALSE(l->job.training().has_fp8());
  EXPECT_NE(AllNotes(*l).find("no effect without fp8"), std::string::npos);

  absl::StatusOr<v1::Estimate> delayed = EstimateJob(LlamaLaunchJob(
      "--fp8-format hybrid --first-last-layers-bf16"));
  EXPECT_NE(delayed.status().message().find(
                "training.fp8.bf16_first_layers: needs an fp8 recipe other "
                "than delayed"),
            std::string::npos)
      << delayed.status();
}

// --ddp-reduce-scatter-with-fp32-accumulation: counted where Megatron runs
// it (16-bit gradient reduction with the distributed optimizer), said in a
// note; off under --bf16's fp32 reduction, as Megatron turns it off;
// beside optimizer instances refused, as Megatron asserts.
TEST(MegatronArgsTest, Fp32AccumulatingReduceScatterIsRead) {
  constexpr char kRs[] = "--ddp-reduce-scatter-with-fp32-accumulation ";
  absl::StatusOr<MegatronLaunch> l =
      ReadLlamaLaunch(std::string(kRs) + "--grad-reduce-in-bf16", "");
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_TRUE(l->job.training().reduce_scatter_fp32_accumulation());
  EXPECT_NE(AllNotes(*l).find("its all-to-all scratch counted"),
            std::string::npos);
  v1::Job job = l->job;
  job.mutable_accelerator()->set_name("h100-80gb");
  absl::StatusOr<v1::Estimate> e = EstimateJob(job);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_GT(e->stages(1).gradient_scratch_bytes(), 0);

  l = ReadLlamaLaunch(kRs, "");
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_FALSE(l->job.training().reduce_scatter_fp32_accumulation());
  EXPECT_NE(AllNotes(*l).find("Megatron turns it off"), std::string::npos);

  absl::StatusOr<v1::Estimate> instances = EstimateJob(LlamaLaunchJob(
      std::string(kRs) +
      "--grad-reduce-in-bf16 --num-distributed-optimizer-instances 2"));
  EXPECT_NE(instances.status().message().find(
                "parallel.distributed_optimizer_instances: above 1 with "
                "training.reduce_scatter_fp32_accumulation"),
            std::string::npos)
      << instances.status();
}

// --num-distributed-optimizer-instances N: N copies of the distributed
// optimizer, each sharded over d x c / N ranks (memory_model.cc [DO]): a
// GPU holds N times its share of the optimizer, nothing else changes.
// Refused where Megatron asserts or divides by it, and with Megatron-FSDP,
// where it turns on hybrid FSDP.
TEST(MegatronArgsTest, DistributedOptimizerInstancesAreRead) {
  const v1::Job two = LlamaLaunchJob("--num-distributed-optimizer-instances 2");
  EXPECT_EQ(two.parallel().distributed_optimizer_instances(), 2u);
  absl::StatusOr<v1::Estimate> plain = EstimateJob(LlamaLaunchJob(""));
  absl::StatusOr<v1::Estimate> shared = EstimateJob(two);
  ASSERT_TRUE(plain.ok() && shared.ok()) << shared.status();
  EXPECT_DOUBLE_EQ(shared->peak().optimizer_bytes(),
                   2 * plain->peak().optimizer_bytes());
  EXPECT_DOUBLE_EQ(
      shared->peak().total_bytes() - shared->peak().optimizer_bytes(),
      plain->peak().total_bytes() - plain->peak().optimizer_bytes());
  EXPECT_EQ(LlamaLaunchJob("--num-distributed-optimizer-instances 1")
                .parallel()
                .distributed_optimizer_instances(),
            0u);
  // 2 nodes x 8 GPUs over TP 4 x PP 2: d x c = 2, which 4 does not divide.
  absl::StatusOr<v1::Estimate> four =
      EstimateJob(LlamaLaunchJob("--num-distributed-optimizer-instances 4"));
  EXPECT_NE(four.status().message().find(
                "parallel.distributed_optimizer_instances: must divide the "
                "data-parallel ranks d x c = 2"),
            std::string::npos)
      << four.status();
  EXPECT_TRUE(RefusedNaming("--num-distributed-optimizer-instances 0", "",
                            {"--num-distributed-optimizer-instances",
                             "at least 1"}));
  EXPECT_TRUE(RefusedNaming("--num-distributed-optimizer-instances 2",
                            "--use-distributed-optimizer ",
                            {"--num-distributed-optimizer-instances",
                             "needs --use-distributed-optimizer"}));
  EXPECT_TRUE(RefusedNaming(
      "--num-distributed-optimizer-instances 2 --use-megatron-fsdp "
      "--data-parallel-sharding-strategy optim",
      kTwoStages, {"--num-distributed-optimizer-instances", "hybrid FSDP"}));
}

// Megatron's forms that say "none" (so that a plan's candidate, appended,
// can replace a launch's own): block recomputation of 0 layers a stage
// recomputes nothing (uniform groups of 0 never advance: refused), and one
// virtual stage a rank is no interleaving, whatever the pipeline.
TEST(MegatronArgsTest, FormsThatSayNoneAreRead) {
  const v1::Job none = LlamaLaunchJob(
      "--recompute-granularity full --recompute-method block "
      "--recompute-num-layers 0");
  EXPECT_EQ(none.training().recompute().num_layers(), 0u);
  EXPECT_EQ(PeakOf(none), PeakOf(LlamaLaunchJob("")));
  EXPECT_TRUE(RefusedNaming(
      "--recompute-granularity full --recompute-method uniform "
      "--recompute-num-layers 0",
      "", {"--recompute-num-layers", "uniform"}));
  EXPECT_TRUE(RefusedNaming(
      "--recompute-granularity full --recompute-method block", "",
      {"--recompute-num-layers", "must be given"}));
  for (const char* one : {"--num-virtual-stages-per-pipeline-rank 1",
                          "--num-layers-per-virtual-pipeline-stage 32"}) {
    const v1::Job plain = LlamaLaunchJob(one, kTwoStages);
    EXPECT_EQ(plain.parallel().virtual_pipeline_stages(), 0u) << one;
    EXPECT_EQ(PeakOf(plain), PeakOf(LlamaLaunchJob("", kTwoStages))) << one;
  }
  EXPECT_TRUE(RefusedNaming("--num-virtual-stages-per-pipeline-rank 2",
                            kTwoStages,
                            {"--num-virtual-stages-per-pipeline-rank",
                             "2 or more"}));
}

// --distribute-saved-activations: full recomputation's stored inputs
// split over TP (memory_model.cc LayerInput); Megatron's rules refused by
// name: it needs full recomputation, TP > 1 and no sequence parallelism.
TEST(MegatronArgsTest, DistributedSavedActivationsAreRead) {
  const std::string full =
      "--recompute-granularity full --recompute-method uniform "
      "--recompute-num-layers 1 ";
  const v1::Job replicated = LlamaLaunchJob(full, "--sequence-parallel ");
  const v1::Job distributed = LlamaLaunchJob(
      full + "--distribute-saved-activations", "--sequence-parallel ");
  EXPECT_TRUE(
      distributed.training().recompute().distribute_saved_activations());
  EXPECT_LT(PeakOf(distributed), PeakOf(replicated));
  EXPECT_TRUE(RefusedNaming("--distribute-saved-activations", "",
                            {"--distribute-saved-activations",
                             "--recompute-granularity full"}));
  const absl::StatusOr<v1::Estimate> with_sp =
      EstimateJob(LlamaLaunchJob(full + "--distribute-saved-activations"));
  EXPECT_NE(with_sp.status().message().find(
                "training.recompute.distribute_saved_activations"),
            std::string::npos)
      << with_sp.status();
}

// --cp-comm-type (memory_model.cc [CPX]) in TransformerEngine's
// spellings, one type or one a layer alike, and a2a+p2p's
// --hierarchical-context-parallel-sizes (its first level the all-to-all),
// with Megatron's and TransformerEngine's rules.
TEST(MegatronArgsTest, ContextParallelExchangesAreRead) {
  const std::string cp2 = "--context-parallel-size 2 ";
  auto comm = [](const v1::Job& j) { return j.parallel().context_parallel_comm(); };
  const v1::Job p2p = LlamaLaunchJob(cp2);
  EXPECT_EQ(comm(p2p), v1::CONTEXT_PARALLEL_COMM_UNSPECIFIED);
  EXPECT_EQ(comm(LlamaLaunchJob(cp2 + "--cp-comm-type p2p")),
            v1::CONTEXT_PARALLEL_COMM_P2P);
  const v1::Job a2a = LlamaLaunchJob(cp2 + "--cp-comm-type a2a");
  EXPECT_EQ(comm(a2a), v1::CONTEXT_PARALLEL_COMM_A2A);
  const v1::Job gather = LlamaLaunchJob(cp2 + "--cp-comm-type all_gather");
  EXPECT_EQ(comm(gather), v1::CONTEXT_PARALLEL_COMM_ALL_GATHER);
  const v1::Job hierarchical = LlamaLaunchJob(
      cp2 + "--cp-comm-type a2a+p2p --hierarchical-context-parallel-sizes 2 1");
  EXPECT_EQ(comm(hierarchical), v1::CONTEXT_PARALLEL_COMM_A2A_P2P);
  EXPECT_EQ(hierarchical.parallel().context_parallel_a2a_size(), 2u);
  std::string per_layer = cp2 + "--cp-comm-type";
  for (int i = 0; i < 32; ++i) per_layer += " a2a";
  EXPECT_EQ(comm(LlamaLaunchJob(per_layer)), v1::CONTEXT_PARALLEL_COMM_A2A);
  // The all-to-all keeps the output twice; inside 2 ranks of CP 2 the
  // hierarchical exchange is a2a; all_gather holds its working set.
  EXPECT_GT(PeakOf(a2a), PeakOf(p2p));
  EXPECT_DOUBLE_EQ(PeakOf(hierarchical), PeakOf(a2a));
  EXPECT_GT(PeakOf(gather), PeakOf(p2p));
  // Hierarchical sizes that only build groups change nothing.
  EXPECT_DOUBLE_EQ(
      PeakOf(LlamaLaunchJob(cp2 + "--hierarchical-context-parallel-sizes 1 2")),
      PeakOf(p2p));

  EXPECT_TRUE(RefusedNaming(cp2 + "--cp-comm-type allgather", "",
                            {"--cp-comm-type", "'all_gather'"}));
  EXPECT_TRUE(RefusedNaming(cp2 + "--cp-comm-type ring", "",
                            {"--cp-comm-type", "'ring'"}));
  EXPECT_TRUE(RefusedNaming(cp2 + "--cp-comm-type p2p a2a", "",
                            {"--cp-comm-type", "one a layer (32)"}));
  std::string mixed = cp2 + "--cp-comm-type";
  for (int i = 0; i < 32; ++i) mixed += i % 2 ? " a2a" : " p2p";
  EXPECT_TRUE(RefusedNaming(mixed, "", {"--cp-comm-type", "differ by layer"}));
  EXPECT_TRUE(RefusedNaming(cp2 + "--cp-comm-type a2a+p2p", "",
                            {"--hierarchical-context-parallel-sizes"}));
  EXPECT_TRUE(RefusedNaming(cp2 + "--hierarchical-context-parallel-sizes 4",
                            "", {"--hierarchical-context-parallel-sizes",
                                 "multiply to --context-parallel-size 2"}));
  EXPECT_TRUE(RefusedNaming(cp2 + "--hierarchical-context-parallel-sizes 2 x",
                            "", {"--hierarchical-context-parallel-sizes",
                                 "positive integer"}));
  EXPECT_TRUE(RefusedNaming(
      cp2 + "--cp-comm-type a2a+p2p --hierarchical-context-parallel-sizes 1 2 1",
      "", {"--hierarchical-context-parallel-sizes", "two sizes"}));
  // Without CP no layer uses a type: any is read past with a note (not
  // kept), except a2a+p2p without its sizes, which Megatron asserts.
  for (const char* harmless : {"--cp-comm-type allgather",
                               "--cp-comm-type p2p a2a", "--cp-comm-type x"}) {
    absl::StatusOr<MegatronLaunch> read = ReadLlamaLaunch(harmless, "");
    ASSERT_TRUE(read.ok()) << harmless << ": " << read.status();
    EXPECT_EQ(comm(read->job), v1::CONTEXT_PARALLEL_COMM_UNSPECIFIED);
    EXPECT_NE(AllNotes(*read).find("no effect without context parallelism"),
              std::string::npos)
        << AllNotes(*read);
  }
  EXPECT_EQ(comm(LlamaLaunchJob("--cp-comm-type a2a")),
            v1::CONTEXT_PARALLEL_COMM_A2A);
  EXPECT_TRUE(RefusedNaming("--cp-comm-type a2a+p2p", "",
                            {"--hierarchical-context-parallel-sizes"}));
  // Hostile lengths are one pass over the words, then a refusal by name:
  // 100,000 types against 32 layers; 100,000 levels of 1 that never make
  // CP 2 (the product is checked as it grows, so it cannot wrap).
  std::string long_types = cp2 + "--cp-comm-type";
  std::string long_sizes = cp2 + "--hierarchical-context-parallel-sizes";
  for (int i = 0; i < 100000; ++i) {
    long_types += " a2a";
    long_sizes += " 1";
  }
  EXPECT_TRUE(RefusedNaming(long_types, "",
                            {"--cp-comm-type", "gives 100000 types"}));
  EXPECT_TRUE(RefusedNaming(long_sizes, "",
                            {"--hierarchical-context-parallel-sizes",
                             "multiply to --context-parallel-size 2"}));
  std::string huge = cp2 + "--hierarchical-context-parallel-sizes";
  for (int i = 0; i < 8; ++i) huge += " 65536";
  EXPECT_TRUE(RefusedNaming(huge, "",
                            {"--hierarchical-context-parallel-sizes",
                             "multiply to"}));
  // CP 4 over TP 4's 2 key heads a rank: TransformerEngine asserts.
  const absl::StatusOr<v1::Estimate> split = EstimateJob(LlamaLaunchJob(
      "--context-parallel-size 4 --cp-comm-type a2a", kTwoStages));
  EXPECT_NE(split.status().message().find(
                "parallel.context_parallel_comm: its all-to-all scatters"),
            std::string::npos)
      << split.status();
}

TEST(MegatronArgsTest, MemoryArgumentsMapToTheJob) {
  auto parse = [](const std::string& extra, const std::string& drop = "") {
    return LlamaLaunchJob(extra, drop);
  };
  EXPECT_EQ(parse("--grad-reduce-in-bf16").training().precision(),
            v1::PRECISION_BF16_BF16_GRADS);
  EXPECT_EQ(parse("--fp16", "--bf16").training().precision(),
            v1::PRECISION_FP16);
  EXPECT_EQ(parse("", "--bf16").training().precision(), v1::PRECISION_FP32);
  EXPECT_EQ(parse("--attention-backend unfused").training().attention_kernel(),
            v1::ATTENTION_KERNEL_UNFUSED);
  EXPECT_EQ(parse("--transformer-impl local").training().attention_kernel(),
            v1::ATTENTION_KERNEL_LOCAL);
  EXPECT_EQ(parse("--attention-backend fused").training().attention_kernel(),
            v1::ATTENTION_KERNEL_FLASH);
  v1::Recompute r = parse("--recompute-granularity full --recompute-method "
                          "block --recompute-num-layers 3")
                        .training()
                        .recompute();
  EXPECT_EQ(r.granularity(), v1::Recompute::GRANULARITY_FULL);
  EXPECT_EQ(r.method(), v1::Recompute::METHOD_BLOCK);
  EXPECT_EQ(r.num_layers(), 3u);
  EXPECT_EQ(parse("--recompute-activations").training().recompute().granularity(),
            v1::Recompute::GRANULARITY_SELECTIVE);
  v1::Job sgd = parse("--optimizer sgd --sgd-momentum 0");
  EXPECT_EQ(sgd.training().optimizer(), v1::OPTIMIZER_SGD);
  EXPECT_FLOAT_EQ(sgd.training().sgd_momentum(), 0);
  EXPECT_EQ(parse("--kv-channels 256").model().head_dim(), 256u);
  EXPECT_FLOAT_EQ(parse("--hidden-dropout 0.2", "--hidden-dropout 0 ")
                      .training()
                      .hidden_dropout(),
                  0.2f);
  EXPECT_TRUE(parse("--add-qkv-bias").model().qkv_bias());
  EXPECT_EQ(parse("", "--swiglu").model().mlp_activation(),
            v1::MLP_ACTIVATION_GELU);
  // Quick GeGLU is gated (three matrices, like SwiGLU), and unfused.
  EXPECT_EQ(parse("--quick-geglu", "--swiglu").model().mlp_activation(),
            v1::MLP_ACTIVATION_QUICK_GEGLU);
  EXPECT_EQ(parse("--no-position-embedding").model().position_embedding(),
            v1::POSITION_EMBEDDING_ROPE);
}

// --fp8-output-proj: the LM head in MXFP8 adds its weight's fp8 pair on
// the last stage (memory_model.cc [TE]); Megatron raises without the MXFP8
// recipe and beside --output-logit-dtype or the deferred embedding wgrad.
TEST(MegatronArgsTest, ReadsTheMxfp8OutputProjection) {
  const std::string mxfp8 = "--fp8-format e4m3 --fp8-recipe mxfp8";
  // On Blackwell, where TransformerEngine runs MXFP8.
  auto on_b200 = [](v1::Job job) {
    job.mutable_accelerator()->set_name("b200-180gb");
    return job;
  };
  const v1::Job head = on_b200(LlamaLaunchJob(mxfp8 + " --fp8-output-proj"));
  EXPECT_TRUE(head.training().fp8().output_projection());
  const absl::StatusOr<v1::Estimate> with_head = EstimateJob(head);
  const absl::StatusOr<v1::Estimate> without =
      EstimateJob(on_b200(LlamaLaunchJob(mxfp8)));
  ASSERT_TRUE(with_head.ok()) << with_head.status();
  ASSERT_TRUE(without.ok()) << without.status();
  // 128,256 rows padded to 128,512 over TP 4, h 4,096.
  EXPECT_DOUBLE_EQ(with_head->stages(1).weight_bytes() -
                       without->stages(1).weight_bytes(),
                   2 * (1 + 1.0 / 32) * 128512 / 4 * 4096);
  EXPECT_EQ(with_head->stages(0).weight_bytes(),
            without->stages(0).weight_bytes());
  EXPECT_TRUE(std::any_of(
      with_head->assumptions().begin(), with_head->assumptions().end(),
      [](const std::string& a) {
        return absl::StrContains(a, "--fp8-output-proj");
      }));
  EXPECT_TRUE(RefusedNaming("--fp8-format e4m3 --fp8-output-proj", "",
                            {"--fp8-output-proj", "mxfp8"}));
  EXPECT_TRUE(RefusedNaming("--fp8-output-proj", "",
                            {"--fp8-output-proj", "--fp8-format"}));
  EXPECT_TRUE(RefusedNaming(
      mxfp8 + " --fp8-output-proj --output-logit-dtype bf16", "",
      {"--fp8-output-proj", "--output-logit-dtype"}));
}

// [BP] DDP's bucket arguments were read past (or said to change nothing):
// the distributed optimizer pads each bucket's end in its gradient and
// parameter buffers (memory_model.cc [BP]). Megatron asserts one of the
// bucket size and count, and a positive count; a size of 0 closes a
// bucket at every parameter, as 1 does.
TEST(MegatronArgsTest, ReadsTheDdpBucketsTheDistributedOptimizerPads) {
  const v1::Job plain = LlamaLaunchJob("");
  EXPECT_EQ(plain.parallel().ddp_bucket_size(), 0u);
  EXPECT_FALSE(plain.parallel().pad_buckets_for_high_nccl_busbw());
  const v1::Job padded = LlamaLaunchJob(
      "--overlap-grad-reduce --ddp-bucket-size 10000000 "
      "--ddp-pad-buckets-for-high-nccl-busbw");
  EXPECT_EQ(padded.parallel().ddp_bucket_size(), 10000000u);
  EXPECT_TRUE(padded.parallel().pad_buckets_for_high_nccl_busbw());
  EXPECT_EQ(LlamaLaunchJob("--ddp-num-buckets 8").parallel().ddp_num_buckets(),
            8u);
  EXPECT_EQ(LlamaLaunchJob("--ddp-bucket-size 0").parallel().ddp_bucket_size(),
            1u);
  // Stage 0 of 16 GPUs at TP 4 x PP 2: DP 2, buckets of 10^7 elements each
  // padded to 2^16 rather than 128: more weights and gradients.
  const absl::StatusOr<v1::Estimate> before = EstimateJob(plain);
  const absl::StatusOr<v1::Estimate> after = EstimateJob(padded);
  ASSERT_TRUE(before.ok()) << before.status();
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_GT(after->stages(0).gradient_bytes(),
            before->stages(0).gradient_bytes());
  EXPECT_GT(after->stages(0).weight_bytes(), before->stages(0).weight_bytes());
  EXPECT_TRUE(RefusedNaming("--ddp-num-buckets 8 --ddp-bucket-size 1000", "",
                            {"--ddp-num-buckets", "--ddp-bucket-size"}));
  EXPECT_TRUE(RefusedNaming("--ddp-num-buckets 0", "",
                            {"--ddp-num-buckets", "greater than 0"}));
}

// [DS] --fp8-amax-history-len was read past: the delayed recipe's amax
// history in every fp8 module (memory_model.cc [DS]), Megatron's default
// of 1 row said in a note; TransformerEngine raises on 0; the other
// recipes keep none.
TEST(MegatronArgsTest, ReadsTheDelayedRecipesAmaxHistory) {
  const std::string delayed = "--fp8-format hybrid";
  absl::StatusOr<MegatronLaunch> plain = ReadLlamaLaunch(delayed, "");
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->job.training().fp8().amax_history_len(), 1u);
  EXPECT_TRUE(absl::StrContains(AllNotes(*plain), "Megatron's default 1 row"));
  const v1::Job history =
      LlamaLaunchJob(delayed + " --fp8-amax-history-len 1024");
  EXPECT_EQ(history.training().fp8().amax_history_len(), 1024u);
  v1::Job one_row = plain->job;
  one_row.mutable_accelerator()->set_name("h100-80gb");
  const absl::StatusOr<v1::Estimate> longer = EstimateJob(history);
  const absl::StatusOr<v1::Estimate> shorter = EstimateJob(one_row);
  ASSERT_TRUE(longer.ok()) << longer.status();
  ASSERT_TRUE(shorter.ok()) << shorter.status();
  // 16 layers a stage, 4 GEMMs a layer, 5 quantizers a GEMM, 1,023 more
  // rows of 4 B each.
  EXPECT_DOUBLE_EQ(longer->stages(0).weight_bytes() -
                       shorter->stages(0).weight_bytes(),
                   16 * 4 * 5 * 4 * 1023.0);
  EXPECT_TRUE(std::any_of(
      longer->assumptions().begin(), longer->assumptions().end(),
      [](const std::string& a) {
        return absl::StrContains(a, "amax history of 1024 rows");
      }));
  EXPECT_TRUE(RefusedNaming(delayed + " --fp8-amax-history-len 0", "",
                            {"--fp8-amax-history-len", "at least 1"}));
  // A count past 32 bits is said to be one, too large.
  EXPECT_TRUE(RefusedNaming(delayed + " --fp8-amax-history-len 99999999999",
                            "", {"--fp8-amax-history-len",
                                 "at most 4294967295"}));
  EXPECT_TRUE(RefusedNaming(delayed + " --fp8-amax-history-len -5", "",
                            {"--fp8-amax-history-len", "a whole number"}));
  absl::StatusOr<MegatronLaunch> tensorwise = ReadLlamaLaunch(
      delayed + " --fp8-recipe tensorwise --fp8-amax-history-len 1024", "");
  ASSERT_TRUE(tensorwise.ok()) << tensorwise.status();
  EXPECT_EQ(tensorwise->job.training().fp8().amax_history_len(), 0u);
  EXPECT_TRUE(absl::StrContains(AllNotes(*tensorwise),
                                "no effect with the tensorwise recipe"));
}

// --fp4-format e2m1 was refused. Now TransformerEngine's NVFP4 recipe,
// counted at MXFP8's bytes (memory_model.cc [F4]), under Megatron's rules:
// e2m1 only, not beside fp8, the nvfp4 recipe; --fp4-param-gather's fp4
// weights refused.
TEST(MegatronArgsTest, ReadsNvfp4AsAnUpperBound) {
  absl::StatusOr<MegatronLaunch> fp4 = ReadLlamaLaunch("--fp4-format e2m1", "");
  ASSERT_TRUE(fp4.ok()) << fp4.status();
  EXPECT_EQ(fp4->job.training().fp8().recipe(), v1::Fp8::RECIPE_NVFP4);
  EXPECT_TRUE(absl::StrContains(AllNotes(*fp4), "NVFP4 recipe, counted at "
                                                "MXFP8's bytes"));
  v1::Job nvfp4 = fp4->job;
  nvfp4.mutable_accelerator()->set_name("b200-180gb");
  v1::Job mxfp8 = LlamaLaunchJob("--fp8-format e4m3 --fp8-recipe mxfp8");
  mxfp8.mutable_accelerator()->set_name("b200-180gb");
  EXPECT_DOUBLE_EQ(PeakOf(nvfp4), PeakOf(mxfp8));
  EXPECT_EQ(LlamaLaunchJob("--fp4 e2m1 --fp4-recipe nvfp4")
                .training()
                .fp8()
                .recipe(),
            v1::Fp8::RECIPE_NVFP4);
  EXPECT_TRUE(RefusedNaming("--fp4-format e2m1 --fp8-format e4m3", "",
                            {"--fp4-format", "--fp8-format"}));
  EXPECT_TRUE(RefusedNaming("--fp4-format e4m3", "", {"--fp4-format",
                                                      "e2m1"}));
  EXPECT_TRUE(RefusedNaming("--fp4-format e2m1 --fp4-recipe custom", "",
                            {"--fp4-recipe", "'custom'"}));
  EXPECT_TRUE(RefusedNaming("--fp4-format e2m1 --fp4-param-gather", "",
                            {"--fp4-param-gather", "not modelled"}));
  EXPECT_TRUE(RefusedNaming("--fp4-recipe nvfp4", "",
                            {"--fp4-recipe", "needs --fp4-format"}));
  EXPECT_TRUE(RefusedNaming("--fp4-format e2m1", "--bf16",
                            {"--fp4-format", "--bf16"}));
  // On a Hopper, where TransformerEngine raises.
  v1::Job on_h100 = fp4->job;
  on_h100.mutable_accelerator()->set_name("h100-80gb");
  EXPECT_NE(EstimateJob(on_h100).status().message().find(
                "RECIPE_NVFP4 needs a Blackwell GPU"),
            std::string::npos);
}

// --optimizer lion: emerging_optimizers' Lion keeps one fp32 momentum a
// parameter beside the fp32 master (memory_model.cc [OS]): 8 B where Adam
// keeps 12, on every parameter in core 0.17; from core 0.18.0 on Megatron
// leaves the word embeddings, the LM head and the norms to Adam: 4 B more
// each of those, 4096 x 128512 / 4 on either stage (the vocabulary padded
// to a multiple of 128 x TP), and 16 layers' two
// norms of 4096 (and the final norm on the last stage). Without a release
// memgate counts them so. Read without the distributed optimizer here
// (with it: ReadsLionAndMuonWithTheLayerWiseOptimizer), and refused in
// fp16, where Megatron raises.
TEST(MegatronArgsTest, ReadsLionWithoutTheDistributedOptimizer) {
  const std::string plain = "--use-distributed-optimizer";
  v1::Job lion = LlamaLaunchJob("--optimizer lion", plain);
  EXPECT_EQ(lion.training().optimizer(), v1::OPTIMIZER_LION);
  const absl::StatusOr<v1::Estimate> unknown = EstimateJob(lion);
  lion.mutable_training()->set_megatron_core_version("0.17.1");
  const absl::StatusOr<v1::Estimate> core_0_17 = EstimateJob(lion);
  lion.mutable_training()->set_megatron_core_version("0.18.0");
  const absl::StatusOr<v1::Estimate> core_0_18 = EstimateJob(lion);
  const absl::StatusOr<v1::Estimate> with_adam =
      EstimateJob(LlamaLaunchJob("", plain));
  ASSERT_TRUE(unknown.ok()) << unknown.status();
  ASSERT_TRUE(core_0_17.ok()) << core_0_17.status();
  ASSERT_TRUE(core_0_18.ok()) << core_0_18.status();
  ASSERT_TRUE(with_adam.ok()) << with_adam.status();
  ASSERT_EQ(core_0_17->stages_size(), 2);
  for (int i = 0; i < 2; ++i) {
    const double lion_only = with_adam->stages(i).optimizer_bytes() * 8 / 12;
    EXPECT_DOUBLE_EQ(core_0_17->stages(i).optimizer_bytes(), lion_only);
    const double adam = 4096.0 * 128512 / 4 + 16 * 2 * 4096 + i * 4096;
    EXPECT_DOUBLE_EQ(core_0_18->stages(i).optimizer_bytes(),
                     lion_only + 4 * adam);
    EXPECT_DOUBLE_EQ(unknown->stages(i).optimizer_bytes(),
                     lion_only + 4 * adam);
  }
  EXPECT_TRUE(RefusedNaming("--optimizer lion --fp16", "--bf16|" + plain,
                            {"--optimizer", "fp16"}));
  EXPECT_TRUE(RefusedNaming("--optimizer soap", "", {"--optimizer", "soap"}));
}

// --optimizer muon (memory_model.cc [MU]): read without the distributed
// optimizer, with the --muon-* arguments that change its step; dist_muon
// (core 0.16 and 0.17's ping-pong layer-wise path) is refused, fp16
// raises. Megatron's defaults:
// medium precision, no Nesterov, QKV split, Adam for the rest; the
// NS mode left to the release, with a note.
TEST(MegatronArgsTest, ReadsMuonWithoutTheDistributedOptimizer) {
  const std::string plain = "--use-distributed-optimizer";
  const absl::StatusOr<MegatronLaunch> defaults =
      ReadLlamaLaunch("--optimizer muon", plain);
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  const v1::TrainingConfig& t = defaults->job.training();
  EXPECT_EQ(t.optimizer(), v1::OPTIMIZER_MUON);
  EXPECT_EQ(t.muon().tp_mode(), v1::Muon::TP_MODE_UNSPECIFIED);
  EXPECT_FALSE(t.muon().fp32_iteration());
  EXPECT_FALSE(t.muon().nesterov());
  EXPECT_FALSE(t.muon().no_split_qkv());
  EXPECT_EQ(t.muon().scalar_optimizer(), v1::OPTIMIZER_UNSPECIFIED);
  EXPECT_TRUE(std::any_of(
      defaults->notes.begin(), defaults->notes.end(),
      [](const std::string& n) {
        return absl::StrContains(n, "--muon-tp-mode not given");
      }));
  const v1::Job given = LlamaLaunchJob(
      "--optimizer muon --muon-tp-mode distributed --muon-fp32-matmul-prec "
      "high --muon-nesterov --muon-no-split-qkv --muon-scalar-optimizer lion",
      plain);
  const v1::Muon& muon = given.training().muon();
  EXPECT_EQ(muon.tp_mode(), v1::Muon::TP_MODE_DISTRIBUTED);
  EXPECT_TRUE(muon.fp32_iteration());
  EXPECT_TRUE(muon.nesterov());
  EXPECT_TRUE(muon.no_split_qkv());
  EXPECT_EQ(muon.scalar_optimizer(), v1::OPTIMIZER_LION);
  const absl::StatusOr<v1::Estimate> e = EstimateJob(given);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_TRUE(RefusedNaming("--optimizer dist_muon", plain,
                            {"--optimizer", "ping-pong"}));
  EXPECT_TRUE(RefusedNaming("--optimizer muon --fp16", "--bf16|" + plain,
                            {"--optimizer", "fp16"}));
  EXPECT_TRUE(RefusedNaming("--optimizer muon --muon-tp-mode sharded", plain,
                            {"--muon-tp-mode", "sharded"}));
  EXPECT_TRUE(RefusedNaming("--optimizer muon --muon-scalar-optimizer sgd",
                            plain, {"--muon-scalar-optimizer", "sgd"}));
}

// Lion and Muon with --use-distributed-optimizer (memory_model.cc [LW]):
// Megatron's layer-wise distributed optimizer from core 0.18.0, read as
// the distributed optimizer and estimated with its padded buffers: more
// weights and gradients than Adam's plain distributed optimizer holds,
// never less. Core 0.17 asserts against it under Muon (refused by
// validation); --no-use-layer-wise-param-layout (the ping-pong path) is
// refused by name.
TEST(MegatronArgsTest, ReadsLionAndMuonWithTheLayerWiseOptimizer) {
  const v1::Job adam = LlamaLaunchJob("", "");
  const absl::StatusOr<v1::Estimate> plain = EstimateJob(adam);
  ASSERT_TRUE(plain.ok()) << plain.status();
  for (const char* optimizer : {"lion", "muon"}) {
    SCOPED_TRACE(optimizer);
    v1::Job job = LlamaLaunchJob(absl::StrCat("--optimizer ", optimizer), "");
    EXPECT_TRUE(job.parallel().distributed_optimizer());
    const absl::StatusOr<v1::Estimate> e = EstimateJob(job);
    ASSERT_TRUE(e.ok()) << e.status();
    for (int i = 0; i < e->stages_size(); ++i) {
      EXPECT_GE(e->stages(i).weight_bytes(), plain->stages(i).weight_bytes());
      EXPECT_GE(e->stages(i).gradient_bytes(),
                plain->stages(i).gradient_bytes());
    }
    EXPECT_TRUE(RefusedNaming(
        absl::StrCat("--optimizer ", optimizer,
                     " --no-use-layer-wise-param-layout"),
        "", {"--no-use-layer-wise-param-layout", "ping-pong"}));
    // Experts' weights as one parameter a layer: packed whole (or left to
    // the plain optimizer), not modelled.
    for (const char* one : {"--moe-use-legacy-grouped-gemm",
                            "--moe-single-grouped-weight"}) {
      EXPECT_TRUE(RefusedNaming(absl::StrCat("--optimizer ", optimizer, " ",
                                             one),
                                "", {one, "layer-wise"}));
    }
  }
  v1::Job muon = LlamaLaunchJob("--optimizer muon", "");
  muon.mutable_training()->set_megatron_core_version("0.17.0");
  const absl::StatusOr<v1::Estimate> old = EstimateJob(muon);
  ASSERT_FALSE(old.ok());
  EXPECT_TRUE(absl::StrContains(old.status().message(),
                                "parallel.distributed_optimizer"))
      << old.status();
}

// Rotary positions: Megatron fuses them through TransformerEngine unless
// --no-rope-fusion, and never fuses YaRN or mRoPE (arguments.py turns the
// fusion off for any type but rope); unfused, each layer keeps its cos and
// sin tables (memory_model.cc [RU]): 4 x 8,192 x 128 x 2 B = 8 MiB a layer
// on every TP rank, 16 layers a stage here, one micro-batch in flight at
// the last stage of two. "none" has no positions at all.
TEST(MegatronArgsTest, UnfusedRopeKeepsItsTablesInEveryLayer) {
  const v1::Job fused = LlamaLaunchJob("");
  const v1::Job unfused = LlamaLaunchJob("--no-rope-fusion");
  EXPECT_FALSE(fused.training().rope_fusion_disabled());
  EXPECT_TRUE(unfused.training().rope_fusion_disabled());
  const double tables = 4 * 8192.0 * 128 * 2;
  absl::StatusOr<v1::Estimate> a = EstimateJob(fused);
  absl::StatusOr<v1::Estimate> b = EstimateJob(unfused);
  ASSERT_TRUE(a.ok() && b.ok());
  const v1::StageMemory& last_a = a->stages(a->stages_size() - 1);
  const v1::StageMemory& last_b = b->stages(b->stages_size() - 1);
  EXPECT_DOUBLE_EQ(last_b.activation_bytes() - last_a.activation_bytes(),
                   16 * tables);
  const std::string rope = "--use-rotary-position-embeddings";
  const v1::Job yarn =
      LlamaLaunchJob("--position-embedding-type yarn", rope);
  EXPECT_EQ(yarn.model().position_embedding(), v1::POSITION_EMBEDDING_YARN);
  EXPECT_EQ(PeakOf(yarn), PeakOf(unfused));
  EXPECT_EQ(LlamaLaunchJob("--position-embedding-type mrope", rope)
                .model()
                .position_embedding(),
            v1::POSITION_EMBEDDING_MROPE);
  const v1::Job none = LlamaLaunchJob("--position-embedding-type none", rope);
  EXPECT_EQ(none.model().position_embedding(), v1::POSITION_EMBEDDING_NONE);
  EXPECT_EQ(PeakOf(none), PeakOf(fused));
  EXPECT_EQ(PeakOf(LlamaLaunchJob("--position-embedding-type none "
                                  "--no-rope-fusion",
                                  rope)),
            PeakOf(fused));
}

// --mtp-use-repeated-layer builds one MTP layer for all --mtp-num-layers
// applications: one layer's parameters on the last stage, which keeps the
// three applications' activations all the same.
// --mtp-hsm mixes hidden states from the second MTP depth on: read with
// two or more MTP layers (the last stage then keeps more); below that
// Megatron's launcher turns it off, and a note says so.
TEST(MegatronArgsTest, MtpHiddenStateMixingNeedsTwoDepths) {
  const v1::Job two = LlamaLaunchJob("--mtp-num-layers 2");
  const v1::Job mixing = LlamaLaunchJob("--mtp-num-layers 2 --mtp-hsm");
  EXPECT_TRUE(mixing.model().mtp_hidden_state_mixing());
  absl::StatusOr<v1::Estimate> m = EstimateJob(mixing);
  absl::StatusOr<v1::Estimate> t = EstimateJob(two);
  ASSERT_TRUE(m.ok() && t.ok());
  EXPECT_GT(m->stages(m->stages_size() - 1).activation_bytes(),
            t->stages(t->stages_size() - 1).activation_bytes());
  absl::StatusOr<MegatronLaunch> one =
      ReadLlamaLaunch("--mtp-num-layers 1 --mtp-hsm", "");
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_FALSE(one->job.model().mtp_hidden_state_mixing());
  bool said = false;
  for (const std::string& note : one->notes) {
    said = said || note.find("--mtp-hsm: Megatron turns") != std::string::npos;
  }
  EXPECT_TRUE(said);
}

TEST(MegatronArgsTest, ARepeatedMtpLayerIsOneLayersParameters) {
  const v1::Job three = LlamaLaunchJob("--mtp-num-layers 3");
  const v1::Job repeated =
      LlamaLaunchJob("--mtp-num-layers 3 --mtp-use-repeated-layer");
  const v1::Job one = LlamaLaunchJob("--mtp-num-layers 1");
  EXPECT_FALSE(three.model().mtp_repeated_layer());
  EXPECT_TRUE(repeated.model().mtp_repeated_layer());
  EXPECT_DOUBLE_EQ(TotalParameters(ShapeOf(repeated.model())),
                   TotalParameters(ShapeOf(one.model())));
  absl::StatusOr<v1::Estimate> r = EstimateJob(repeated);
  absl::StatusOr<v1::Estimate> t = EstimateJob(three);
  ASSERT_TRUE(r.ok() && t.ok());
  const v1::StageMemory& last_r = r->stages(r->stages_size() - 1);
  const v1::StageMemory& last_t = t->stages(t->stages_size() - 1);
  EXPECT_EQ(last_r.activation_bytes(), last_t.activation_bytes());
  EXPECT_LT(last_r.weight_bytes(), last_t.weight_bytes());
  // Without MTP layers the switch changes nothing.
  EXPECT_FALSE(
      LlamaLaunchJob("--mtp-use-repeated-layer").model().mtp_repeated_layer());
}

// --squared-relu (Nemotron-4): an ungated MLP keeping what GeLU keeps
// (moe_terms.cc [SR]), and Megatron's two rules about it refused by name.
TEST(MegatronArgsTest, SquaredReluIsModelledAsMegatronRunsIt) {
  const v1::Job relu2 = LlamaLaunchJob("--squared-relu", "--swiglu");
  EXPECT_EQ(relu2.model().mlp_activation(), v1::MLP_ACTIVATION_SQUARED_RELU);
  const v1::Job gelu = LlamaLaunchJob("", "--swiglu");
  EXPECT_EQ(PeakOf(relu2), PeakOf(gelu));
  EXPECT_LT(PeakOf(relu2), PeakOf(LlamaLaunchJob("")));  // 2 matrices, not 3

  auto refusal = [](const std::string& line) {
    absl::StatusOr<MegatronLaunch> l = ParseMegatronLaunch(Words(line), nullptr);
    EXPECT_FALSE(l.ok()) << line;
    return l.ok() ? std::string() : std::string(l.status().message());
  };
  const std::string with_swiglu =
      refusal(std::string(kLlama31_8B) + " --squared-relu");
  EXPECT_NE(with_swiglu.find("--squared-relu"), std::string::npos);
  EXPECT_NE(with_swiglu.find("--swiglu"), std::string::npos);
  std::string biased = std::string(kLlama31_8B) + " --squared-relu";
  for (const char* drop : {"--swiglu", "--disable-bias-linear"}) {
    biased.replace(biased.find(drop), std::string(drop).size(), "");
  }
  EXPECT_NE(refusal(biased).find("--no-bias-gelu-fusion"), std::string::npos);
  absl::StatusOr<MegatronLaunch> unfused =
      ParseMegatronLaunch(Words(biased + " --no-bias-gelu-fusion"), nullptr);
  ASSERT_TRUE(unfused.ok()) << unfused.status();
  EXPECT_TRUE(unfused->job.model().linear_bias());
  EXPECT_EQ(unfused->job.model().mlp_activation(),
            v1::MLP_ACTIVATION_SQUARED_RELU);
}

// NVIDIA's Nemotron-4 340B as its report and NeMo's recipe train it (TP 8,
// PP 12, 8 virtual stages, 6,144 GPUs, global batch 2304) reads as the
// catalog's nemotron-4-340b: the same peak as that model by name.
TEST(MegatronArgsTest, TheNemotron4LaunchIsTheCatalogModel) {
  absl::StatusOr<MegatronLaunch> l = ParseMegatronLaunch(
      Words("torchrun --nnodes 768 --nproc-per-node 8 pretrain_gpt.py "
            "--num-layers 96 --hidden-size 18432 --ffn-hidden-size 73728 "
            "--num-attention-heads 96 --group-query-attention "
            "--num-query-groups 8 --squared-relu --normalization LayerNorm "
            "--apply-layernorm-1p --position-embedding-type rope "
            "--rotary-percent 0.5 --untie-embeddings-and-output-weights "
            "--disable-bias-linear --hidden-dropout 0 --attention-dropout 0 "
            "--vocab-size 256000 --tensor-model-parallel-size 8 "
            "--pipeline-model-parallel-size 12 "
            "--num-layers-per-virtual-pipeline-stage 1 --sequence-parallel "
            "--use-distributed-optimizer --micro-batch-size 1 "
            "--global-batch-size 2304 --seq-length 4096 --bf16"),
      nullptr);
  ASSERT_TRUE(l.ok()) << l.status();
  v1::Job launch = l->job;
  launch.mutable_accelerator()->set_name("h100-80gb");
  v1::Job by_name = launch;
  *by_name.mutable_model() = v1::ModelConfig();
  by_name.mutable_model()->set_name("nemotron-4-340b");
  absl::StatusOr<v1::Job> resolved = ResolveJob(by_name);
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_EQ(resolved->model().mlp_activation(),
            v1::MLP_ACTIVATION_SQUARED_RELU);
  EXPECT_EQ(resolved->model().normalization(), v1::NORMALIZATION_LAYERNORM);
  EXPECT_EQ(PeakOf(launch), PeakOf(*resolved));
  EXPECT_EQ(launch.parallel().virtual_pipeline_stages(), 8u);
}

// Each optimizer-storage, fp8 and FSDP argument reaches the job and moves
// the estimate the way its term says.
TEST(MegatronArgsTest, OptimizerStorageFp8AndFsdpMoveThePeakTheRightWay) {
  auto parse = [](const std::string& extra) { return LlamaLaunchJob(extra); };
  const auto peak = PeakOf;
  const double baseline = peak(parse(""));

  const v1::Job pa = parse(
      "--use-precision-aware-optimizer --main-grads-dtype bf16 "
      "--exp-avg-dtype bf16 --exp-avg-sq-dtype bf16");
  ASSERT_TRUE(pa.training().has_precision_aware_optimizer());
  EXPECT_EQ(pa.training().precision_aware_optimizer().exp_avg_dtype(),
            v1::DTYPE_BF16);
  EXPECT_EQ(pa.training().precision(), v1::PRECISION_BF16_BF16_GRADS);
  EXPECT_LT(peak(pa), baseline);

  const v1::Job offload = parse(
      "--use-precision-aware-optimizer --optimizer-cpu-offload "
      "--optimizer-offload-fraction 0.5");
  EXPECT_DOUBLE_EQ(offload.training().optimizer_offload_fraction(), 0.5);
  EXPECT_LT(peak(offload), baseline);
  EXPECT_DOUBLE_EQ(parse("--use-precision-aware-optimizer "
                         "--optimizer-cpu-offload")
                       .training()
                       .optimizer_offload_fraction(),
                   1.0);  // Megatron's default fraction

  const v1::Job fp8 = parse("--fp8-format hybrid");
  ASSERT_TRUE(fp8.training().has_fp8());
  EXPECT_EQ(fp8.training().fp8().recipe(), v1::Fp8::RECIPE_DELAYED);
  const v1::Job fp8_gather =
      parse("--fp8-format hybrid --fp8-recipe tensorwise --fp8-param-gather");
  EXPECT_TRUE(fp8_gather.training().fp8().param_gather());
  EXPECT_EQ(fp8_gather.training().fp8().recipe(), v1::Fp8::RECIPE_TENSORWISE);
  // The fp8 weight copies cost more than the fp8 activations save here;
  // keeping the weights in fp8 only is cheaper than bf16.
  EXPECT_GT(peak(fp8), baseline);
  EXPECT_LT(peak(fp8_gather), baseline);
  EXPECT_EQ(parse("--fp8 e4m3").training().has_fp8(), true);

  // Megatron-FSDP runs on one pipeline stage (validation.cc).
  const double one_stage_baseline = peak(OneStageLaunchJob(""));
  const v1::Job zero3 = OneStageLaunchJob(
      "--use-megatron-fsdp --data-parallel-sharding-strategy "
      "optim_grads_params");
  EXPECT_EQ(zero3.parallel().data_parallel_sharding(),
            v1::DATA_PARALLEL_SHARDING_OPTIM_GRADS_PARAMS);
  EXPECT_LT(peak(zero3), one_stage_baseline);
  const v1::Job no_shard = OneStageLaunchJob(
      "--use-custom-fsdp --data-parallel-sharding-strategy no_shard");
  EXPECT_GT(peak(no_shard), one_stage_baseline);
  // Megatron-FSDP's buffers: the double buffer (also set by NCCL user
  // buffers and the max-pool allocator) holds two units, less than the
  // default queues; a small communication unit holds less too.
  const char kZero2[] =
      "--use-megatron-fsdp --data-parallel-sharding-strategy optim_grads ";
  const double queues = peak(OneStageLaunchJob(kZero2));
  for (const char* buffer :
       {"--fsdp-double-buffer", "--use-nccl-ub",
        "--megatron-fsdp-max-pool-double-buffer"}) {
    const v1::Job doubled = OneStageLaunchJob(std::string(kZero2) + buffer);
    EXPECT_TRUE(doubled.parallel().fsdp_double_buffer()) << buffer;
    EXPECT_LT(peak(doubled), queues) << buffer;
  }
  const v1::Job unit = OneStageLaunchJob(std::string(kZero2) +
                                 "--suggested-communication-unit-size 1000000");
  EXPECT_EQ(unit.parallel().fsdp_communication_unit_size(), 1000000u);
  EXPECT_LT(peak(unit), queues);
  const absl::StatusOr<MegatronLaunch> zero_unit = ReadLlamaLaunch(
      std::string(kZero2) + "--suggested-communication-unit-size 0",
      kTwoStages);
  EXPECT_NE(zero_unit.status().message().find(
                "suggested-communication-unit-size"),
            std::string::npos)
      << zero_unit.status();
  // Megatron-FSDP v2 (its own buffers) and the ZeRO-2 queue a bucket sets
  // are refused by name; a bucket under the unit's floor is not.
  for (const auto& [extra, named] :
       std::vector<std::pair<std::string, std::string>>{
           {"--megatron-fsdp-version 2", "megatron-fsdp-version"},
           {"--ddp-bucket-size 2000000000", "ddp-bucket-size"},
           {"--ddp-num-buckets 4", "ddp-num-buckets"}}) {
    const absl::StatusOr<MegatronLaunch> refused =
        ReadLlamaLaunch(std::string(kZero2) + extra, kTwoStages);
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument)
        << extra;
    EXPECT_NE(refused.status().message().find(named), std::string::npos)
        << refused.status();
  }
  EXPECT_TRUE(ReadLlamaLaunch(std::string(kZero2) + "--megatron-fsdp-version 1 "
                              "--ddp-bucket-size 500000000",
                              kTwoStages)
                  .ok());
  EXPECT_TRUE(ReadLlamaLaunch("--use-megatron-fsdp "
                              "--data-parallel-sharding-strategy "
                              "optim_grads_params --ddp-num-buckets 4",
                              kTwoStages)
                  .ok());
  // With two stages the launch never trains, and is refused naming it.
  const absl::StatusOr<v1::Estimate> staged = EstimateJob(
      parse("--use-megatron-fsdp --data-parallel-sharding-strategy optim"));
  EXPECT_EQ(staged.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(staged.status().message().find(
                "parallel.data_parallel_sharding: needs "
                "parallel.pipeline_parallel 1"),
            std::string::npos)
      << staged.status();
}

// Megatron-FSDP's gradient dtypes (read past before): an fp32 gradient
// buffer, or fp32 buckets in ZeRO-2's reduce-scatter queue, under
// --grad-reduce-in-bf16 are counted as fp32 gradients, the launch without
// --grad-reduce-in-bf16; narrower buckets change nothing; a communication
// dtype under no_shard / optim other than the buffer's (a copy of each
// bucket) and fp32 gradients of fp16 training are refused by name;
// without Megatron-FSDP Megatron's DDP never reads either.
TEST(MegatronArgsTest, FsdpGradientDtypesThatWidenTheBuffersAreCounted) {
  const std::string zero2 =
      "--use-megatron-fsdp --data-parallel-sharding-strategy optim_grads ";
  const std::string bf16_grads = zero2 + "--grad-reduce-in-bf16 ";
  const double fp32_peak = PeakOf(OneStageLaunchJob(zero2));
  const double bf16_peak = PeakOf(OneStageLaunchJob(bf16_grads));
  ASSERT_LT(bf16_peak, fp32_peak);
  for (const char* widening : {"--megatron-fsdp-main-grads-dtype fp32",
                               "--megatron-fsdp-grad-comm-dtype fp32"}) {
    const absl::StatusOr<MegatronLaunch> l =
        ReadLlamaLaunch(bf16_grads + widening, kTwoStages);
    ASSERT_TRUE(l.ok()) << widening << ": " << l.status();
    EXPECT_EQ(l->job.training().precision(), v1::PRECISION_BF16_FP32_GRADS)
        << widening;
    EXPECT_DOUBLE_EQ(PeakOf(OneStageLaunchJob(bf16_grads + widening)), fp32_peak)
        << widening;
    const std::string flag = std::string(widening).substr(0, 31);
    EXPECT_TRUE(std::any_of(l->notes.begin(), l->notes.end(),
                            [&](const std::string& note) {
                              return absl::StrContains(note, flag) &&
                                     absl::StrContains(note, "fp32 (4 B)");
                            }))
        << widening;
  }
  for (const char* narrow : {"--megatron-fsdp-grad-comm-dtype bf16",
                             "--megatron-fsdp-grad-comm-dtype fp16",
                             "--megatron-fsdp-grad-comm-dtype auto",
                             "--megatron-fsdp-main-grads-dtype auto"}) {
    EXPECT_DOUBLE_EQ(PeakOf(OneStageLaunchJob(bf16_grads + narrow)), bf16_peak)
        << narrow;
  }
  EXPECT_DOUBLE_EQ(
      PeakOf(OneStageLaunchJob(zero2 + "--megatron-fsdp-grad-comm-dtype fp32")),
      fp32_peak);
  // The precision-aware optimizer's bf16 buffer widens the same way.
  const std::string pa = zero2 +
                         "--use-precision-aware-optimizer "
                         "--main-grads-dtype bf16 ";
  const v1::Job pa_fp32 =
      OneStageLaunchJob(pa + "--megatron-fsdp-grad-comm-dtype fp32");
  EXPECT_EQ(pa_fp32.training().precision_aware_optimizer().main_grads_dtype(),
            v1::DTYPE_FP32);
  EXPECT_GT(PeakOf(pa_fp32), PeakOf(OneStageLaunchJob(pa)));

  // Under no_shard / optim a communication dtype other than the gradient
  // buffer's copies each bucket: refused. The buffer's own dtype is no
  // copy, and neither is any dtype under bf16 training's fp32 reduction
  // (fp32 both up to core 0.18; from 0.19 a bf16 buffer counted at 4 B).
  for (const char* strategy : {"no_shard", "optim"}) {
    const std::string fsdp =
        std::string("--use-megatron-fsdp --data-parallel-sharding-strategy ") +
        strategy + " ";
    EXPECT_TRUE(RefusedNaming(
        fsdp + "--grad-reduce-in-bf16 --megatron-fsdp-grad-comm-dtype fp16",
        kTwoStages,
        {"--megatron-fsdp-grad-comm-dtype", "no_shard or optim", "bf16"}));
    EXPECT_TRUE(RefusedNaming(
        fsdp + "--megatron-fsdp-main-grads-dtype fp32 "
               "--megatron-fsdp-grad-comm-dtype bf16",
        kTwoStages, {"--megatron-fsdp-grad-comm-dtype", "fp32"}));
    EXPECT_DOUBLE_EQ(
        PeakOf(OneStageLaunchJob(fsdp + "--grad-reduce-in-bf16 "
                                "--megatron-fsdp-grad-comm-dtype bf16")),
        PeakOf(OneStageLaunchJob(fsdp + "--grad-reduce-in-bf16")))
        << strategy;
    for (const char* any : {"bf16", "fp16", "fp32"}) {
      EXPECT_DOUBLE_EQ(
          PeakOf(OneStageLaunchJob(fsdp + "--megatron-fsdp-grad-comm-dtype " + any)),
          PeakOf(OneStageLaunchJob(fsdp)))
          << strategy << " " << any;
    }
  }
  EXPECT_TRUE(RefusedNaming(
      zero2 + "--megatron-fsdp-grad-comm-dtype fp64", kTwoStages,
      {"--megatron-fsdp-grad-comm-dtype"}));
  EXPECT_TRUE(RefusedNaming(
      zero2 + "--fp16 --megatron-fsdp-main-grads-dtype fp32", "--bf16 ",
      {"--megatron-fsdp-main-grads-dtype", "fp16"}));
  // Without Megatron-FSDP: read past by Megatron, and by memgate.
  EXPECT_DOUBLE_EQ(
      PeakOf(LlamaLaunchJob("--grad-reduce-in-bf16 "
                            "--megatron-fsdp-grad-comm-dtype fp32 "
                            "--megatron-fsdp-main-grads-dtype fp32")),
      PeakOf(LlamaLaunchJob("--grad-reduce-in-bf16")));
}

// --ddp-param-name-patterns-for-fp32-local-accumulation (read past
// before): an fp32 gradient of each matched parameter beside the bf16
// buffer, every parameter counted (the pattern 'all' exactly, others as an
// upper bound, with a note): three times the bf16 gradients. With fp32
// gradient reduction Megatron asserts, and the launch is refused by name
// (under Megatron-FSDP too); otherwise Megatron-FSDP does not read it (a
// note). Its neighbour, the
// fp32-accumulating reduce-scatter, is refused where it runs.
TEST(MegatronArgsTest, Fp32LocalAccumulationCountsAnFp32GradientAParameter) {
  constexpr char kPatterns[] =
      "--ddp-param-name-patterns-for-fp32-local-accumulation";
  const std::string bf16_grads = "--grad-reduce-in-bf16 ";
  auto stage0 = [](const v1::Job& job) {
    absl::StatusOr<v1::Estimate> e = EstimateJob(job);
    EXPECT_TRUE(e.ok()) << e.status();
    return e.ok() ? e->stages(0) : v1::StageMemory();
  };
  const v1::StageMemory plain = stage0(LlamaLaunchJob(bf16_grads));
  for (const char* patterns : {"all", "*embedding* *output_layer*"}) {
    const std::string extra =
        bf16_grads + kPatterns + " " + patterns + " --lr 1e-4";
    const absl::StatusOr<MegatronLaunch> l = ReadLlamaLaunch(extra, "");
    ASSERT_TRUE(l.ok()) << l.status();
    EXPECT_TRUE(l->job.training().fp32_local_grad_accumulation());
    const v1::StageMemory local = stage0(LlamaLaunchJob(extra));
    // The fp32 copy a parameter, beside the padded 2-byte buffer
    // (memory_model.cc [BP]).
    EXPECT_DOUBLE_EQ(local.gradient_bytes(),
                     plain.gradient_bytes() + 4 * plain.parameters())
        << patterns;
    EXPECT_DOUBLE_EQ(local.optimizer_bytes(), plain.optimizer_bytes());
    const bool noted = std::any_of(
        l->notes.begin(), l->notes.end(), [](const std::string& note) {
          return absl::StrContains(note, "an upper bound");
        });
    EXPECT_EQ(noted, std::string(patterns) != "all") << patterns;
  }
  EXPECT_TRUE(RefusedNaming(std::string(kPatterns) + " all", "",
                            {std::string(kPatterns), "--grad-reduce-in-bf16"}));
  // The fp32-accumulating reduce-scatter: its scratch counted with bf16
  // gradients (Fp32AccumulatingReduceScatterIsRead), a no-op Megatron
  // turns off otherwise.
  absl::StatusOr<v1::Estimate> scratch = EstimateJob(LlamaLaunchJob(
      bf16_grads + "--ddp-reduce-scatter-with-fp32-accumulation"));
  absl::StatusOr<v1::Estimate> none = EstimateJob(LlamaLaunchJob(bf16_grads));
  ASSERT_TRUE(scratch.ok() && none.ok());
  EXPECT_GT(scratch->stages(1).total_bytes(), none->stages(1).total_bytes());
  EXPECT_DOUBLE_EQ(
      PeakOf(LlamaLaunchJob("--ddp-reduce-scatter-with-fp32-accumulation")),
      PeakOf(LlamaLaunchJob("")));
  EXPECT_TRUE(RefusedNaming(
      std::string("--use-megatron-fsdp --data-parallel-sharding-strategy "
                  "optim ") +
          kPatterns + " all",
      kTwoStages, {std::string(kPatterns), "--grad-reduce-in-bf16"}));
  const absl::StatusOr<MegatronLaunch> fsdp = ReadLlamaLaunch(
      bf16_grads +
          "--use-megatron-fsdp --data-parallel-sharding-strategy optim " +
          kPatterns + " all",
      kTwoStages);
  ASSERT_TRUE(fsdp.ok()) << fsdp.status();
  EXPECT_FALSE(fsdp->job.training().fp32_local_grad_accumulation());
}

// A split written as a layout estimates as the same split written with
// Megatron's other arguments (the issue: GREEN one way, YELLOW the other).
TEST(MegatronArgsTest, PipelineLayoutEstimatesAsTheSameSplitOtherwiseWritten) {
  const std::string base = std::string(kLlama31_8B);
  auto stage = [&](const std::string& extra, int index) {
    absl::StatusOr<MegatronLaunch> l =
        ParseMegatronLaunch(Words(base + " " + extra), nullptr);
    EXPECT_TRUE(l.ok()) << extra << ": " << l.status();
    if (!l.ok()) return 0.0;
    l->job.mutable_accelerator()->set_name("h100-80gb");
    absl::StatusOr<v1::Estimate> e = EstimateJob(l->job);
    EXPECT_TRUE(e.ok()) << extra << ": " << e.status();
    if (!e.ok()) return 0.0;
    return index < 0 ? e->peak().total_bytes()
                     : e->stages(index).total_bytes();
  };
  auto peak = [&](const std::string& extra) { return stage(extra, -1); };
  EXPECT_DOUBLE_EQ(peak("--pipeline-model-parallel-layout Et*15|t*17L"),
                   peak("--decoder-first-pipeline-num-layers 15 "
                        "--decoder-last-pipeline-num-layers 17"));
  // Quoted as a batch script would write it.
  EXPECT_DOUBLE_EQ(peak("--pipeline-model-parallel-layout 'Et*15|t*17L'"),
                   peak("--decoder-first-pipeline-num-layers 15"));
  // Four chunks of 8 layers over PP 2 is v = 2, as 8 layers a virtual stage.
  EXPECT_NEAR(peak("--pipeline-model-parallel-layout E(t*8|)*3,t*8L"),
              peak("--num-layers-per-virtual-pipeline-stage 8"), 1.0);
  // Rank 0 keeps 16 layers, but fewer on chunk 0, which has more
  // micro-batches in flight (3 of its 5): 3 x 4 + 2 x 12 = 36 layers'
  // activations instead of 5 x 8 = 40.
  EXPECT_LT(stage("--pipeline-model-parallel-layout Et*4|t*8|t*12|t*8L", 0),
            stage("--pipeline-model-parallel-layout E(t*8|)*3,t*8L", 0));

  absl::StatusOr<MegatronLaunch> l = ParseMegatronLaunch(
      Words(base + " --pipeline-model-parallel-layout Et*16|t*16L "
                   "--num-layers-per-virtual-pipeline-stage 8"),
      nullptr);
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.status().message().find(
                "--num-layers-per-virtual-pipeline-stage: cannot be given "
                "with --pipeline-model-parallel-layout"),
            std::string::npos);
  l = ParseMegatronLaunch(
      Words(base + " --pipeline-model-parallel-layout Et*16|t*15mL"),
      nullptr);
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.status().message().find("--pipeline-model-parallel-layout"),
            std::string::npos);
}

// --microbatch-group-size-per-virtual-pipeline-stage N (read past before:
// a group above p holds more chunks in flight than memgate counted).
// Interleaved over PP 2 with m = 512: the group reaches the job; N = p is
// Megatron's default; N = 8 holds 2 + 8 + 1 = 11 chunks on rank 0, not 5,
// so the peak grows; without interleaving Megatron never reads it (a
// note); 0 and groups Megatron's schedule raises on are refused.
TEST(MegatronArgsTest, MicrobatchGroupSetsTheInterleavedWarmUp) {
  const std::string interleaved = "--num-virtual-stages-per-pipeline-rank 2 ";
  const v1::Job plain = LlamaLaunchJob(interleaved);
  const v1::Job grouped = LlamaLaunchJob(
      interleaved + "--microbatch-group-size-per-virtual-pipeline-stage 8");
  EXPECT_EQ(grouped.parallel().microbatch_group_size(), 8u);
  EXPECT_DOUBLE_EQ(
      PeakOf(LlamaLaunchJob(
          interleaved + "--microbatch-group-size-per-virtual-pipeline-stage 2")),
      PeakOf(plain));
  v1::Job set_by_field = plain;
  set_by_field.mutable_parallel()->set_microbatch_group_size(8);
  EXPECT_DOUBLE_EQ(PeakOf(grouped), PeakOf(set_by_field));
  // Rank 0's activations: chunks of 16 layers, 11 in flight against 5.
  absl::StatusOr<v1::Estimate> more = EstimateJob(grouped);
  absl::StatusOr<v1::Estimate> fewer = EstimateJob(plain);
  ASSERT_TRUE(more.ok() && fewer.ok());
  EXPECT_GT(more->stages(0).activation_bytes(),
            2 * fewer->stages(0).activation_bytes());

  absl::StatusOr<MegatronLaunch> l = ParseMegatronLaunch(
      Words(std::string(kLlama31_8B) +
            " --microbatch-group-size-per-virtual-pipeline-stage 8"),
      nullptr);
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->job.parallel().microbatch_group_size(), 0u);
  EXPECT_NE(AllNotes(*l).find("--microbatch-group-size-per-virtual-pipeline-"
                              "stage: no effect without interleaving"),
            std::string::npos)
      << AllNotes(*l);

  l = ParseMegatronLaunch(
      Words(std::string(kLlama31_8B) + " " + interleaved +
            "--microbatch-group-size-per-virtual-pipeline-stage 0"),
      nullptr);
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.status().message().find(
                "--microbatch-group-size-per-virtual-pipeline-stage: must be "
                "at least 1"),
            std::string::npos)
      << l.status();
  for (const char* group : {"1", "513", "7"}) {
    v1::Job bad = LlamaLaunchJob(
        interleaved +
        "--microbatch-group-size-per-virtual-pipeline-stage " + group);
    const absl::Status s = EstimateJob(bad).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << group;
    EXPECT_EQ(s.message().rfind("parallel.microbatch_group_size:", 0), 0u)
        << s;
  }
}

// --no-gradient-accumulation-fusion was read as changing nothing: each
// weight gradient is a new tensor before the main gradient takes it, and
// the output layer's (v/t x h) is the last stage's transient beside the
// loss's (memory_model.cc [OW]). Read, noted, and the stage's totals left
// as they were.
TEST(MegatronArgsTest, UnfusedGradientAccumulationIsTheLastStagesTransient) {
  absl::StatusOr<MegatronLaunch> l =
      ReadLlamaLaunch("--no-gradient-accumulation-fusion", "");
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_TRUE(l->job.training().gradient_accumulation_unfused());
  bool noted = false;
  for (const std::string& note : l->notes) {
    noted |= absl::StrContains(note, "--no-gradient-accumulation-fusion");
  }
  EXPECT_TRUE(noted);
  // At 2,048 tokens a micro-batch (below h = 4096) the larger transient.
  const std::string short_sequences = "--seq-length 2048";
  const v1::Job fused = LlamaLaunchJob(short_sequences, "--seq-length 8192");
  EXPECT_FALSE(fused.training().gradient_accumulation_unfused());
  absl::StatusOr<v1::Estimate> f = EstimateJob(fused);
  absl::StatusOr<v1::Estimate> u = EstimateJob(LlamaLaunchJob(
      short_sequences + " --no-gradient-accumulation-fusion",
      "--seq-length 8192"));
  ASSERT_TRUE(f.ok() && u.ok());
  ASSERT_EQ(u->stages_size(), 2);
  EXPECT_EQ(u->stages(0).output_weight_gradient_bytes(), 0);
  // bf16, TP 4: 2 B x 4096 x (128512 / 4 + 2048), less the fp32 softmax
  // above the logits' bf16 gradient, 2 B x 2048 x 128512 / 4.
  const double wgrad =
      2.0 * 4096 * (128512 / 4 + 2048) - 2.0 * 2048 * 128512 / 4;
  EXPECT_DOUBLE_EQ(u->stages(1).output_weight_gradient_bytes(), wgrad);
  EXPECT_GT(wgrad, u->stages(1).loss_gradient_cast_bytes());
  EXPECT_EQ(f->stages(1).output_weight_gradient_bytes(), 0);
  EXPECT_DOUBLE_EQ(u->stages(1).total_bytes(), f->stages(1).total_bytes());
  // fp32 logits keep their fp32 gradient beside it: refused by name.
  absl::StatusOr<MegatronLaunch> fp32_logits = ReadLlamaLaunch(
      "--no-gradient-accumulation-fusion --output-logit-dtype fp32", "");
  ASSERT_FALSE(fp32_logits.ok());
  EXPECT_EQ(fp32_logits.status().message().rfind(
                "--no-gradient-accumulation-fusion: with --output-logit-dtype "
                "fp32",
                0),
            0u)
      << fp32_logits.status();
}

// --defer-embedding-wgrad-compute (read past before: the last stage's
// deferred output-layer tensors were not counted). The paper's 8B launch
// over PP 2 with m = 512 micro-batches a step: each keeps the LM head's
// input (8192/4 x 4096) and the logits' gradient (8192 x 128512/4), 2 B
// each, on the last stage: 512 x 2 x (8,388,608 + 263,192,576) B, about
// 259 GiB; --wgrad-deferral-limit 4 keeps 4. Megatron raises without
// gradient accumulation fusion; fp32 logits (4 B gradients) are refused;
// the limit alone does nothing (a note).
TEST(MegatronArgsTest, DeferredEmbeddingWgradHoldsTheStepsHeadTensors) {
  const v1::Job plain = LlamaLaunchJob("");
  const v1::Job deferred = LlamaLaunchJob("--defer-embedding-wgrad-compute");
  const v1::Job limited = LlamaLaunchJob(
      "--defer-embedding-wgrad-compute --wgrad-deferral-limit 4");
  EXPECT_TRUE(deferred.training().defer_embedding_wgrad());
  EXPECT_EQ(limited.training().wgrad_deferral_limit(), 4u);
  absl::StatusOr<v1::Estimate> p = EstimateJob(plain);
  absl::StatusOr<v1::Estimate> d = EstimateJob(deferred);
  absl::StatusOr<v1::Estimate> k = EstimateJob(limited);
  ASSERT_TRUE(p.ok() && d.ok() && k.ok());
  const double entry = 2 * (8192.0 / 4 * 4096 + 8192.0 * 128512 / 4);
  EXPECT_DOUBLE_EQ(d->stages(1).activation_bytes(),
                   p->stages(1).activation_bytes() + 512 * entry);
  EXPECT_DOUBLE_EQ(k->stages(1).activation_bytes(),
                   p->stages(1).activation_bytes() + 4 * entry);
  EXPECT_DOUBLE_EQ(d->stages(0).activation_bytes(),
                   p->stages(0).activation_bytes());

  absl::StatusOr<MegatronLaunch> l = ParseMegatronLaunch(
      Words(std::string(kLlama31_8B) +
            " --defer-embedding-wgrad-compute "
            "--no-gradient-accumulation-fusion"),
      nullptr);
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.status().message().rfind("--defer-embedding-wgrad-compute: "
                                       "needs gradient accumulation fusion",
                                       0),
            0u)
      << l.status();
  l = ParseMegatronLaunch(
      Words(std::string(kLlama31_8B) +
            " --defer-embedding-wgrad-compute --output-logit-dtype fp32"),
      nullptr);
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.status().message().find("--output-logit-dtype fp32"),
            std::string::npos)
      << l.status();
  l = ParseMegatronLaunch(
      Words(std::string(kLlama31_8B) + " --wgrad-deferral-limit 4"), nullptr);
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_FALSE(l->job.training().defer_embedding_wgrad());
  EXPECT_EQ(l->job.training().wgrad_deferral_limit(), 0u);
  EXPECT_NE(AllNotes(*l).find("--wgrad-deferral-limit: no effect"),
            std::string::npos);
}

// Megatron's generalized TP (--tensor-parallel-num-weight-shards and the
// experts' --expert-tensor-parallel-num-weight-shards) adds an axis of its
// own to the world: read past, memgate would have taken DP from TP x CP x
// PP alone. At the TP size (Megatron's default) it changes nothing; above
// it, it is refused by name.
TEST(MegatronArgsTest, GeneralizedTensorParallelismIsRefusedByName) {
  EXPECT_DOUBLE_EQ(
      PeakOf(LlamaLaunchJob("--tensor-parallel-num-weight-shards 4")),
      PeakOf(LlamaLaunchJob("")));
  auto refused = [](const std::string& extra) { return LaunchRefusal(extra); };
  EXPECT_EQ(refused("--tensor-parallel-num-weight-shards 8")
                .rfind("--tensor-parallel-num-weight-shards: only "
                       "--tensor-model-parallel-size (4) is modelled; 8 "
                       "shards turn on generalized TP",
                       0),
            0u)
      << refused("--tensor-parallel-num-weight-shards 8");
  const std::string experts =
      "--num-experts 8 --expert-model-parallel-size 2 "
      "--expert-tensor-parallel-size 1 ";
  // The argument is newer than Megatron-Core 0.12.0, so it dates the
  // launch (routing probabilities applied in the experts): compared with
  // the same release.
  v1::Job sharded =
      LlamaLaunchJob(experts + "--expert-tensor-parallel-num-weight-shards 1");
  v1::Job plain = LlamaLaunchJob(experts);
  EXPECT_EQ(sharded.model().moe().routing_probs_applied(),
            v1::MoeConfig::PROBS_APPLIED_IN_EXPERTS);
  plain.mutable_model()->mutable_moe()->set_routing_probs_applied(
      sharded.model().moe().routing_probs_applied());
  EXPECT_DOUBLE_EQ(PeakOf(sharded), PeakOf(plain));
  EXPECT_EQ(refused(experts + "--expert-tensor-parallel-num-weight-shards 2")
                .rfind("--expert-tensor-parallel-num-weight-shards: only "
                       "--expert-tensor-parallel-size (1) is modelled",
                       0),
            0u);
  // Without experts the expert TP size is TP's.
  EXPECT_EQ(refused("--expert-tensor-parallel-num-weight-shards 8")
                .rfind("--expert-tensor-parallel-num-weight-shards: only the "
                       "expert TP size (4) is modelled",
                       0),
            0u);
  EXPECT_TRUE(
      refused("--expert-tensor-parallel-num-weight-shards 4").empty());
}

// --encoder-seq-length is Megatron's sequence length when --seq-length is
// absent (arguments.py), and asserted absent beside it.
TEST(MegatronArgsTest, EncoderSeqLengthIsTheSequenceLengthAlone) {
  const v1::Job spelled = LlamaLaunchJob("--encoder-seq-length 8192",
                                         "--seq-length 8192");
  EXPECT_EQ(spelled.training().seq_length(), 8192u);
  EXPECT_DOUBLE_EQ(PeakOf(spelled), PeakOf(LlamaLaunchJob("")));
  absl::StatusOr<MegatronLaunch> l = ParseMegatronLaunch(
      Words(std::string(kLlama31_8B) + " --encoder-seq-length 4096"),
      nullptr);
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.status().message(),
            "--encoder-seq-length: cannot be given with --seq-length "
            "(Megatron asserts)");
}

// TransformerEngine's GroupedTensor experts pad every local expert's rows
// to 256 in bf16 too: --moe-use-grouped-tensor, or the op fuser with
// grouped GEMMs, add activations the plain grouped GEMM does not keep; the
// grouped tensor needs grouped GEMMs, and the op fuser's fused grouped MLP
// no expert TP (Megatron raises and asserts; memgate refuses by name).
TEST(MegatronArgsTest, GroupedTensorExpertsPadTo256Rows) {
  const std::string experts =
      "--num-experts 8 --expert-model-parallel-size 2 --moe-router-topk 2 "
      "--moe-ffn-hidden-size 7168 --expert-tensor-parallel-size 1 "
      "--moe-grouped-gemm ";
  const v1::Job grouped = LlamaLaunchJob(experts);
  const v1::Job tensor =
      LlamaLaunchJob(experts + "--moe-use-grouped-tensor");
  const v1::Job fuser =
      LlamaLaunchJob(experts + "--use-transformer-engine-op-fuser");
  EXPECT_FALSE(grouped.model().moe().grouped_tensor());
  EXPECT_TRUE(tensor.model().moe().grouped_tensor());
  EXPECT_TRUE(fuser.model().moe().grouped_tensor());
  EXPECT_FALSE(tensor.model().moe().fused_grouped_mlp());
  EXPECT_TRUE(fuser.model().moe().fused_grouped_mlp());
  EXPECT_GT(PeakOf(tensor), PeakOf(grouped));
  EXPECT_DOUBLE_EQ(PeakOf(fuser), PeakOf(tensor));
  // Without grouped GEMMs the op fuser leaves the experts alone.
  const v1::Job sequential = LlamaLaunchJob(
      "--num-experts 8 --expert-model-parallel-size 2 --moe-router-topk 2 "
      "--moe-ffn-hidden-size 7168 --expert-tensor-parallel-size 1 "
      "--use-transformer-engine-op-fuser");
  EXPECT_FALSE(sequential.model().moe().grouped_tensor());

  EXPECT_TRUE(RefusedNaming(
      "--num-experts 8 --expert-model-parallel-size 2 "
      "--moe-use-grouped-tensor",
      "", {"--moe-use-grouped-tensor", "--moe-grouped-gemm"}));
  // Expert TP defaults to TP (4 here).
  EXPECT_TRUE(RefusedNaming(
      "--num-experts 8 --expert-model-parallel-size 2 --moe-grouped-gemm "
      "--use-transformer-engine-op-fuser",
      "", {"--use-transformer-engine-op-fuser", "expert TP"}));
}

// Biases on MoE layers (Megatron's default; gpt-oss trains with them):
// the router's and each expert's FC1 and FC2 biases are counted, and on
// the GroupedTensor experts the fp32 copy of FC2's bias each routed copy
// keeps (moe_terms.cc [EB]). A launch Megatron cannot start is refused by
// the argument: grouped GEMMs with biases need --no-bias-dropout-fusion,
// and the legacy GroupedMLP takes no bias.
TEST(MegatronArgsTest, BiasesOnExpertsAreModelled) {
  const std::string experts =
      "--num-experts 8 --expert-model-parallel-size 2 --moe-router-topk 2 "
      "--moe-ffn-hidden-size 7168 --expert-tensor-parallel-size 1 "
      "--moe-grouped-gemm ";
  const std::string no_bias = "--disable-bias-linear";
  EXPECT_TRUE(RefusedNaming(experts, no_bias,
                            {"--moe-grouped-gemm", "--no-bias-dropout-fusion",
                             "TEGroupedMLP"}));
  EXPECT_TRUE(RefusedNaming(experts + "--moe-use-legacy-grouped-gemm "
                                      "--no-bias-dropout-fusion",
                            no_bias,
                            {"--moe-use-legacy-grouped-gemm",
                             "bias not supported"}));
  const std::string fusion_off = "--no-bias-dropout-fusion ";
  const v1::Job biased = LlamaLaunchJob(experts + fusion_off, no_bias);
  const v1::Job plain = LlamaLaunchJob(experts + fusion_off);
  EXPECT_TRUE(biased.model().linear_bias());
  ASSERT_TRUE(EstimateJob(biased).ok())
      << EstimateJob(biased).status();
  // A layer's biases: QKV's (4,096 + 2 x 1,024) and the output
  // projection's (4,096), the router's (8), and 8 experts' FC1 (2 x 7,168)
  // and FC2 (4,096) biases; 32 layers.
  EXPECT_DOUBLE_EQ(TotalParameters(ShapeOf(biased.model())) -
                       TotalParameters(ShapeOf(plain.model())),
                   32.0 * (6144 + 4096 + 8 + 8 * (2 * 7168 + 4096)));
  // The fp32 bias copies: only on the GroupedTensor path.
  const std::string tensor = "--moe-use-grouped-tensor ";
  const double grouped_gain =
      PeakOf(biased) - PeakOf(plain);
  const double tensor_gain =
      PeakOf(LlamaLaunchJob(experts + fusion_off + tensor, no_bias)) -
      PeakOf(LlamaLaunchJob(experts + fusion_off + tensor));
  EXPECT_GT(tensor_gain, grouped_gain + 1e6);

  // Quick-GeGLU with biases: Megatron's dense MLP cannot fuse its bias and
  // raises, so a dense layer or shared experts need --no-bias-gelu-fusion;
  // routed experts alone (gpt-oss) fuse it with their probabilities.
  const std::string quick = "--quick-geglu ";
  const std::string swiglu = "--swiglu";
  EXPECT_TRUE(RefusedNaming(quick, no_bias + "|" + swiglu,
                            {"--quick-geglu", "--no-bias-gelu-fusion"}))
      << "dense";
  // Shared experts take no bias at all (SharedExpertMLP asserts), whatever
  // their activation.
  for (const std::string& activation : {quick, std::string()}) {
    EXPECT_TRUE(RefusedNaming(
        activation + experts + fusion_off +
            "--moe-shared-expert-intermediate-size 1024",
        no_bias + "|" + swiglu,
        {"--moe-shared-expert-intermediate-size", "SharedExpertMLP"}))
        << activation;
  }
  EXPECT_EQ(LaunchRefusal(quick + experts + fusion_off,
                          no_bias + "|" + swiglu),
            "");
  EXPECT_EQ(LaunchRefusal(quick + "--no-bias-gelu-fusion",
                          no_bias + "|" + swiglu),
            "");
  // GeLU experts (no --swiglu) fuse no bias: refused unless turned off.
  EXPECT_TRUE(RefusedNaming(experts + fusion_off, no_bias + "|" + swiglu,
                            {"--num-experts", "GeLU experts",
                             "--no-bias-gelu-fusion"}));
  EXPECT_EQ(LaunchRefusal(experts + fusion_off + "--no-bias-gelu-fusion",
                          no_bias + "|" + swiglu),
            "");
  // SwiGLU experts without grouped GEMMs (SequentialMLP) hand FC1's bias
  // to the weighted SwiGLU fusion, which raises on it: they need the
  // fusion off, which runs (measured, bench/RESULTS.md session 35).
  const std::string sequential =
      "--num-experts 8 --expert-model-parallel-size 2 --moe-router-topk 2 "
      "--moe-ffn-hidden-size 7168 --expert-tensor-parallel-size 1 ";
  EXPECT_TRUE(RefusedNaming(sequential, no_bias,
                            {"--swiglu", "--moe-grouped-gemm",
                             "--no-bias-swiglu-fusion"}));
  EXPECT_EQ(LaunchRefusal(sequential + "--no-bias-swiglu-fusion", no_bias),
            "");
  // The experts run the fused bias-activation, unless turned off.
  const v1::Job fused_experts =
      LlamaLaunchJob(quick + experts + fusion_off, no_bias + "|" + swiglu);
  const v1::Job unfused_experts = LlamaLaunchJob(
      quick + experts + fusion_off + "--no-bias-gelu-fusion",
      no_bias + "|" + swiglu);
  EXPECT_FALSE(fused_experts.model().moe().expert_activation_unfused());
  EXPECT_TRUE(unfused_experts.model().moe().expert_activation_unfused());
  EXPECT_LT(PeakOf(fused_experts), PeakOf(unfused_experts));
}

// gpt-oss-120b launched as Megatron-Bridge's GPTOSSProvider configures it
// (quick-GeGLU with offset and clamp, biases, learned sinks on cuDNN's
// attention, YaRN positions, alternating windows) is the model its
// config.json reads as: the same parameters, and, at the release the launch
// dates, the same memory stage by stage on a layout with expert and
// pipeline parallelism.
TEST(MegatronArgsTest, AGptOssLaunchIsItsConfig) {
  const std::string line =
      "torchrun --nnodes 16 --nproc-per-node 8 pretrain_gpt.py "
      "--num-layers 36 --hidden-size 2880 --ffn-hidden-size 2880 "
      "--num-attention-heads 64 --group-query-attention "
      "--num-query-groups 8 --kv-channels 64 --padded-vocab-size 201088 "
      "--quick-geglu --glu-linear-offset 1.0 --activation-func-clamp-value 7 "
      "--normalization RMSNorm --position-embedding-type yarn "
      "--untie-embeddings-and-output-weights --bf16 --hidden-dropout 0 "
      "--attention-dropout 0 --num-experts 128 --moe-router-topk 4 "
      "--moe-ffn-hidden-size 2880 --moe-grouped-gemm "
      "--moe-token-dispatcher-type alltoall --no-bias-dropout-fusion "
      "--softmax-type learnable --attention-backend fused "
      "--window-size 128,0 --window-attn-skip-freq 2 --seq-length 8192 "
      "--micro-batch-size 1 --global-batch-size 512 "
      "--tensor-model-parallel-size 2 --pipeline-model-parallel-size 4 "
      "--expert-model-parallel-size 8 --expert-tensor-parallel-size 1 "
      "--sequence-parallel --use-distributed-optimizer "
      "--no-create-attention-mask-in-dataloader";
  const absl::StatusOr<MegatronLaunch> launch =
      ParseMegatronLaunch(Words(line), nullptr);
  ASSERT_TRUE(launch.ok()) << launch.status();
  const absl::StatusOr<v1::ModelConfig> hf =
      ReadHuggingFaceConfig("tests/testdata/hf/gpt-oss-120b.json");
  ASSERT_TRUE(hf.ok()) << hf.status();
  const v1::ModelConfig& read = launch->job.model();
  EXPECT_EQ(read.softmax_type(), hf->softmax_type());
  EXPECT_EQ(read.mlp_activation(), hf->mlp_activation());
  EXPECT_TRUE(read.activation_clamp() && read.linear_bias());
  EXPECT_DOUBLE_EQ(TotalParameters(ShapeOf(read)),
                   TotalParameters(ShapeOf(*hf)));
  // The launch dates its release (after core 0.12.0: the probabilities
  // applied in the experts); the config cannot, and would count the larger
  // of the releases' terms.
  v1::Job from_config = launch->job;
  *from_config.mutable_model() = *hf;
  from_config.mutable_model()->mutable_moe()->set_routing_probs_applied(
      read.moe().routing_probs_applied());
  // Nor its router's settings (kernel and losses; [RS]).
  v1::MoeConfig& router = *from_config.mutable_model()->mutable_moe();
  router.set_router_score_function(read.moe().router_score_function());
  router.set_router_fusion(read.moe().router_fusion());
  router.set_aux_loss(read.moe().aux_loss());
  router.set_z_loss(read.moe().z_loss());
  from_config.mutable_accelerator()->set_name("h100-80gb");
  v1::Job from_launch = launch->job;
  from_launch.mutable_accelerator()->set_name("h100-80gb");
  const absl::StatusOr<v1::Estimate> a = EstimateJob(from_launch);
  const absl::StatusOr<v1::Estimate> b = EstimateJob(from_config);
  ASSERT_TRUE(a.ok() && b.ok()) << a.status() << " " << b.status();
  ASSERT_EQ(a->stages_size(), b->stages_size());
  for (int i = 0; i < a->stages_size(); ++i) {
    EXPECT_DOUBLE_EQ(a->stages(i).total_bytes(), b->stages(i).total_bytes())
        << "stage " << i;
  }
}

// The issue's launch: experts were read past, giving the dense peak. Now
// the experts, their parallelism and routing reach the job and the peak.
TEST(MegatronArgsTest, MixtureOfExpertsLaunchIsModelled) {
  auto parse = [](const std::string& extra, const std::string& drop = "") {
    return LlamaLaunchJob(extra, drop);
  };
  const auto peak = PeakOf;
  const v1::Job moe = parse(
      "--num-experts 8 --expert-model-parallel-size 2 --moe-router-topk 2 "
      "--moe-token-dispatcher-type alltoall --moe-ffn-hidden-size 7168");
  EXPECT_EQ(moe.model().moe().num_experts(), 8u);
  EXPECT_EQ(moe.model().moe().expert_ffn_hidden_size(), 7168u);
  EXPECT_EQ(moe.parallel().expert_parallel(), 2u);
  EXPECT_EQ(moe.parallel().expert_tensor_parallel(), 4u);  // = TP
  EXPECT_EQ(moe.model().moe().token_dispatcher(),
            v1::MoeConfig::DISPATCHER_ALLTOALL);
  EXPECT_GT(peak(moe), 1.5 * peak(parse("")));

  // DeepSeek-style: a layer pattern, shared experts, MLA and MTP.
  const v1::Job v3 = parse(
      "--num-experts 16 --moe-layer-freq ([0]*2+[1]*30) "
      "--moe-shared-expert-intermediate-size 2048 --multi-latent-attention "
      "--q-lora-rank 1536 --kv-lora-rank 512 --mtp-num-layers 1 "
      "--expert-model-parallel-size 2 --expert-tensor-parallel-size 1 "
      "--moe-expert-capacity-factor 1.0 --moe-pad-expert-input-to-capacity "
      "--moe-grouped-gemm "
      "--recompute-granularity selective --recompute-modules moe_act "
      "shared_experts",
      "--group-query-attention --num-query-groups 8");
  EXPECT_EQ(v3.model().moe().layer_pattern_size(), 32);
  EXPECT_EQ(v3.model().moe().layer_pattern(1), 0u);
  EXPECT_EQ(v3.model().mla().kv_lora_rank(), 512u);
  EXPECT_EQ(v3.model().mla().qk_pos_emb_head_dim(), 64u);  // default
  EXPECT_EQ(v3.model().mtp_num_layers(), 1u);
  EXPECT_EQ(v3.training().recompute().modules_size(), 2);
  EXPECT_GT(peak(v3), 0);
  // --qk-layernorm with MLA is DeepSeek's latent norms (Megatron makes the
  // up projections LayerNormLinear): modelled, no longer refused; the
  // norms' inputs are stored, so the same launch with them peaks higher.
  // Attention biases with MLA stay refused by name.
  const std::string v3_args =
      "--num-experts 16 --moe-layer-freq ([0]*2+[1]*30) "
      "--moe-shared-expert-intermediate-size 2048 --multi-latent-attention "
      "--q-lora-rank 1536 --kv-lora-rank 512 --expert-model-parallel-size 2 "
      "--expert-tensor-parallel-size 1";
  const std::string no_gqa = "--group-query-attention --num-query-groups 8";
  const v1::Job latent_norms = parse(v3_args + " --qk-layernorm", no_gqa);
  EXPECT_TRUE(latent_norms.model().qk_norm());
  EXPECT_GT(peak(latent_norms), peak(parse(v3_args, no_gqa)));
  absl::StatusOr<v1::Estimate> biased = EstimateJob(
      LlamaLaunchJob(v3_args + " --add-qkv-bias", no_gqa));
  EXPECT_EQ(biased.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(biased.status().message().find("model.mla"), std::string::npos)
      << biased.status();
  // --recompute-modules mla_up_proj: modelled (the recipes' setting), and
  // refused without MLA, as Megatron refuses it.
  const std::string selective = " --recompute-granularity selective "
                                "--recompute-modules ";
  EXPECT_LT(peak(parse(v3_args + selective + "mla_up_proj mlp", no_gqa)),
            peak(parse(v3_args + selective + "mlp", no_gqa)));
  absl::StatusOr<v1::Estimate> no_mla =
      EstimateJob(LlamaLaunchJob(selective + "mla_up_proj"));
  EXPECT_NE(no_mla.status().message().find("training.recompute.modules"),
            std::string::npos)
      << no_mla.status();
  std::string l2_line =
      std::string(kLlama31_8B) + " " + v3_args + " --qk-l2-norm";
  l2_line.replace(l2_line.find(no_gqa), no_gqa.size(), "");
  absl::StatusOr<MegatronLaunch> l2 =
      ParseMegatronLaunch(Words(l2_line), nullptr);
  EXPECT_NE(l2.status().message().find("--qk-l2-norm: cannot be given with "
                                       "--multi-latent-attention"),
            std::string::npos)
      << l2.status();
  // Megatron's own core attention cannot be built for MLA (it takes no
  // k_channels / v_channels): refused by the argument that chose it.
  for (const std::string argument : {"transformer-impl", "attention-backend"}) {
    std::string line = std::string(kLlama31_8B) + " " + v3_args + " --" +
                       argument + " local";
    line.replace(line.find(no_gqa), no_gqa.size(), "");
    absl::StatusOr<MegatronLaunch> refused =
        ParseMegatronLaunch(Words(line), nullptr);
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument)
        << argument;
    EXPECT_NE(refused.status().message().find(
                  "--" + argument + ": local cannot run --multi-latent"),
              std::string::npos)
        << refused.status();
  }

  // --mla-down-proj-fusion: the down projections split over TP (the
  // Llama launch's TP 4 here), so the same launch holds fewer weights;
  // without MLA Megatron asserts, and memgate refuses it by name.
  const v1::Job fused_down = parse(v3_args + " --mla-down-proj-fusion", no_gqa);
  EXPECT_TRUE(fused_down.model().mla().fused_down_projection());
  EXPECT_FALSE(parse(v3_args, no_gqa).model().mla().fused_down_projection());
  EXPECT_LT(peak(fused_down), peak(parse(v3_args, no_gqa)));
  EXPECT_NE(ReadLlamaLaunch("--mla-down-proj-fusion", "")
                .status()
                .message()
                .find("--mla-down-proj-fusion: needs --multi-latent-attention"),
            std::string::npos);

  // MLA's RoPE as rope (not the config's yarn) has no fused kernel:
  // Megatron raises unless --no-rope-fusion.
  std::string rope_line =
      std::string(kLlama31_8B) + " " + v3_args + " --rope-type rope";
  rope_line.replace(rope_line.find(no_gqa), no_gqa.size(), "");
  absl::StatusOr<MegatronLaunch> fused_rope =
      ParseMegatronLaunch(Words(rope_line), nullptr);
  EXPECT_NE(fused_rope.status().message().find(
                "--rope-type: rope with --multi-latent-attention needs "
                "--no-rope-fusion"),
            std::string::npos)
      << fused_rope.status();
  EXPECT_TRUE(
      ParseMegatronLaunch(Words(rope_line + " --no-rope-fusion"), nullptr)
          .ok());
  // YaRN by --rope-type is MLA's alone; other values are not Megatron's.
  EXPECT_NE(ReadLlamaLaunch("--rope-type yarn", "")
                .status()
                .message()
                .find("--rope-type: yarn needs --multi-latent-attention"),
            std::string::npos);
  EXPECT_NE(ReadLlamaLaunch("--rope-type ntk", "")
                .status()
                .message()
                .find("--rope-type: 'ntk' is not Megatron's"),
            std::string::npos);
  EXPECT_TRUE(ReadLlamaLaunch("--rope-type rope", "").ok());

  // --moe-layer-recompute keeps only the MoE blocks' inputs.
  EXPECT_LT(peak(parse("--num-experts 8 --moe-layer-recompute")),
            peak(parse("--num-experts 8")));
}

// NVIDIA's DeepSeek-V3 H100 recipe (tests/testdata/launches/
// deepseek_v3_h100.txt: Megatron-MoE-ModelZoo best_practice/deepseek-v3 on
// 1,024 GPUs): "base" in bf16, "fp8" its PR=fp8 arguments, "overlap" its
// A2A_OVERLAP ones.
std::string DeepSeekV3(const std::vector<std::string>& parts) {
  return testing::RecipeLaunch("deepseek_v3_h100", parts);
}

// Megatron's standalone MTP: the recipe's layout with its MTP layer moved
// from the loss's stage into rank 6's last chunk ("Et|(tt|)*29,ttm|L":
// the same transformer layers a stage; pipeline_parallel_layer_layout.py
// allows it, docs/user-guide/features/pipeline_parallel_layout.md shows
// DeepSeek-V3 so). It was refused; now rank 6 holds the MTP layer and an
// embedding of its own, which rank 7 no longer holds.
TEST(MegatronArgsTest, ReadsAStandaloneMtpLayout) {
  const std::string beside_line = DeepSeekV3({"base"});
  const std::string beside_layout = "Et|(tt|)*30mL";
  ASSERT_NE(beside_line.find(beside_layout), std::string::npos);
  std::string standalone_line = beside_line;
  standalone_line.replace(standalone_line.find(beside_layout),
                          beside_layout.size(), "Et|(tt|)*29,ttm|L");
  absl::StatusOr<MegatronLaunch> beside =
      ParseMegatronLaunch(Words(beside_line), nullptr);
  absl::StatusOr<MegatronLaunch> standalone =
      ParseMegatronLaunch(Words(standalone_line), nullptr);
  ASSERT_TRUE(beside.ok()) << beside.status();
  ASSERT_TRUE(standalone.ok()) << standalone.status();
  EXPECT_FALSE(beside->job.parallel().has_mtp_pipeline_rank());
  EXPECT_EQ(standalone->job.parallel().mtp_pipeline_rank(), 6u);
  EXPECT_EQ(standalone->job.parallel().layers_per_stage().size(), 32);
  for (int k = 0; k < 32; ++k) {
    EXPECT_EQ(standalone->job.parallel().layers_per_stage(k),
              beside->job.parallel().layers_per_stage(k))
        << k;
  }
  v1::Job beside_job = beside->job, standalone_job = standalone->job;
  beside_job.mutable_accelerator()->set_name("h100-80gb");
  standalone_job.mutable_accelerator()->set_name("h100-80gb");
  const absl::StatusOr<v1::Estimate> b = EstimateJob(beside_job);
  const absl::StatusOr<v1::Estimate> s = EstimateJob(standalone_job);
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_TRUE(s.ok()) << s.status();
  const double moved =
      s->stages(6).parameters() - b->stages(6).parameters();
  EXPECT_GT(moved, 0);
  EXPECT_DOUBLE_EQ(b->stages(7).parameters() - s->stages(7).parameters(),
                   moved);
  for (int k : {0, 5}) {
    EXPECT_DOUBLE_EQ(s->stages(k).total_bytes(), b->stages(k).total_bytes())
        << k;
  }
  bool said = false;
  for (const std::string& a : s->assumptions()) {
    said = said || a.find("standalone in pipeline rank 6") !=
                       std::string::npos;
  }
  EXPECT_TRUE(said);
}

// FP8 with experts and MLA and an MTP layer in the pipeline layout were
// refused; the recipe now reads as it runs, and its fp8 saves memory.
TEST(MegatronArgsTest, ReadsTheDeepSeekV3RecipeWithItsFp8AndMtpLayout) {
  const std::string fp8_line =
      DeepSeekV3({"base", "fp8"});
  absl::StatusOr<MegatronLaunch> fp8 =
      ParseMegatronLaunch(Words(fp8_line), nullptr);
  ASSERT_TRUE(fp8.ok()) << fp8.status();
  const v1::Job& job = fp8->job;
  EXPECT_EQ(job.training().fp8().recipe(), v1::Fp8::RECIPE_BLOCKWISE);
  EXPECT_TRUE(job.training().fp8().param_gather());
  EXPECT_EQ(job.num_gpus(), 1024u);
  EXPECT_EQ(job.model().mtp_num_layers(), 1u);
  EXPECT_EQ(job.parallel().virtual_pipeline_stages(), 4u);
  ASSERT_EQ(job.parallel().layers_per_stage_size(), 32);
  EXPECT_EQ(job.parallel().layers_per_stage(0), 1u);
  EXPECT_EQ(job.parallel().layers_per_stage(31), 0u);  // "mL"
  absl::StatusOr<MegatronLaunch> bf16 =
      ParseMegatronLaunch(Words(DeepSeekV3({"base"})), nullptr);
  ASSERT_TRUE(bf16.ok()) << bf16.status();
  v1::Job fp8_job = job, bf16_job = bf16->job;
  fp8_job.mutable_accelerator()->set_name("h100-80gb");
  bf16_job.mutable_accelerator()->set_name("h100-80gb");
  EXPECT_LT(PeakOf(fp8_job), PeakOf(bf16_job));

  // The layout's 'm's count against the launch's --mtp-num-layers, as
  // Megatron counts them, never against a named model's MTP layers (the
  // launch without the argument has none).
  std::string no_mtp = fp8_line;
  const std::string mtp_args = "--mtp-num-layers 1 ";
  ASSERT_NE(no_mtp.find(mtp_args), std::string::npos);
  no_mtp.erase(no_mtp.find(mtp_args), mtp_args.size());
  absl::StatusOr<MegatronLaunch> unmatched =
      ParseMegatronLaunch(Words(no_mtp), LookupModel("deepseek-v3"));
  EXPECT_NE(unmatched.status().message().find(
                "has 1 MTP layers ('m'); --mtp-num-layers is 0"),
            std::string::npos)
      << unmatched.status();

  // With the recipe's EP all-to-all overlap (A2A_OVERLAP=1), one more
  // chunk in flight: a higher peak. Megatron's rules for it are checked:
  // full recomputation beside it is refused by field.
  const std::string overlap_line = DeepSeekV3({"base", "fp8", "overlap"});
  absl::StatusOr<MegatronLaunch> overlap =
      ParseMegatronLaunch(Words(overlap_line), nullptr);
  ASSERT_TRUE(overlap.ok()) << overlap.status();
  EXPECT_TRUE(overlap->job.model().moe().overlap_expert_parallel_comm());
  v1::Job overlap_job = overlap->job;
  overlap_job.mutable_accelerator()->set_name("h100-80gb");
  EXPECT_GT(PeakOf(overlap_job), PeakOf(fp8_job));
  absl::StatusOr<MegatronLaunch> full = ParseMegatronLaunch(
      Words(DeepSeekV3({"base"}) + " --overlap-moe-expert-parallel-comm"),
      nullptr);
  ASSERT_TRUE(full.ok()) << full.status();
  v1::Job full_job = full->job;
  full_job.mutable_accelerator()->set_name("h100-80gb");
  v1::Recompute& r = *full_job.mutable_training()->mutable_recompute();
  r.Clear();
  r.set_granularity(v1::Recompute::GRANULARITY_FULL);
  r.set_method(v1::Recompute::METHOD_UNIFORM);
  r.set_num_layers(1);
  absl::StatusOr<v1::Estimate> refused = EstimateJob(full_job);
  EXPECT_NE(refused.status().message().find(
                "model.moe.overlap_expert_parallel_comm: cannot be used with "
                "full recomputation"),
            std::string::npos)
      << refused.status();

  // The experts' delayed weight gradients keep nothing of their own beyond
  // the layer's backward (the same peak), and Megatron asserts against
  // them beside either overlap.
  absl::StatusOr<MegatronLaunch> delayed = ParseMegatronLaunch(
      Words(DeepSeekV3({"base", "fp8"}) +
            " --overlap-dispatch-backward-with-experts-wgrad"),
      nullptr);
  ASSERT_TRUE(delayed.ok()) << delayed.status();
  v1::Job delayed_job = delayed->job;
  delayed_job.mutable_accelerator()->set_name("h100-80gb");
  EXPECT_DOUBLE_EQ(PeakOf(delayed_job), PeakOf(fp8_job));
  for (const char* excluded :
       {" --overlap-moe-expert-parallel-comm", " --delay-wgrad-compute"}) {
    absl::StatusOr<MegatronLaunch> both = ParseMegatronLaunch(
        Words(DeepSeekV3({"base", "fp8"}) +
              " --overlap-dispatch-backward-with-experts-wgrad" + excluded),
        nullptr);
    EXPECT_NE(both.status().message().find(
                  "--overlap-dispatch-backward-with-experts-wgrad: cannot be "
                  "given with"),
              std::string::npos)
        << excluded << ": " << both.status();
  }
}

// The recipe names arguments no Megatron-Core before the probabilities
// moved into the experts accepts (the first: --moe-router-fusion), so it
// is read as the release it runs, and fits under the 80% rule. Read as an
// unknown release (core 0.12.0's weighted unpermute copy counted, 2h B a
// routed copy) it does not.
TEST(MegatronArgsTest, TheDeepSeekV3RecipeFitsAsItsReleaseRunsIt) {
  absl::StatusOr<MegatronLaunch> l = ParseMegatronLaunch(
      Words(DeepSeekV3({"base", "fp8", "overlap"})), nullptr);
  ASSERT_TRUE(l.ok()) << l.status();
  v1::Job job = l->job;
  EXPECT_EQ(job.model().moe().routing_probs_applied(),
            v1::MoeConfig::PROBS_APPLIED_IN_EXPERTS);
  EXPECT_TRUE(absl::StrContains(
      AllNotes(*l),
      "--moe-router-fusion dates the launch after Megatron-Core 0.12.0"));
  job.mutable_accelerator()->set_name("h100-80gb");
  absl::StatusOr<v1::Estimate> fits = EstimateJob(job);
  ASSERT_TRUE(fits.ok()) << fits.status();
  EXPECT_EQ(fits->zone(), v1::ZONE_GREEN);
  for (v1::MoeConfig::ProbsApplied older :
       {v1::MoeConfig::PROBS_APPLIED_UNSPECIFIED,
        v1::MoeConfig::PROBS_APPLIED_AT_UNPERMUTE}) {
    job.mutable_model()->mutable_moe()->set_routing_probs_applied(older);
    absl::StatusOr<v1::Estimate> e = EstimateJob(job);
    ASSERT_TRUE(e.ok()) << e.status();
    EXPECT_NE(e->zone(), v1::ZONE_GREEN) << older;
  }
}

// Where a launch's MoE layers apply the routing probabilities: unknown
// (the larger term, said in a note) unless an argument dates the launch;
// --moe-apply-probs-on-input weights the expert input (top-1 only, as
// Megatron asserts); the legacy GroupedMLP, interleaved GLU halves and
// TE's activation module run the activation unfused, which keeps more.
TEST(MegatronArgsTest, RoutingProbabilitiesFollowTheLaunchsRelease) {
  const std::string moe =
      "--num-experts 8 --expert-model-parallel-size 2 --moe-router-topk 2 "
      "--moe-ffn-hidden-size 7168 --moe-token-dispatcher-type alltoall ";
  absl::StatusOr<MegatronLaunch> undated = ParseMegatronLaunch(
      Words(absl::StrCat(kLlama31_8B, " ", moe)), nullptr);
  ASSERT_TRUE(undated.ok()) << undated.status();
  EXPECT_EQ(undated->job.model().moe().routing_probs_applied(),
            v1::MoeConfig::PROBS_APPLIED_UNSPECIFIED);
  EXPECT_TRUE(
      absl::StrContains(AllNotes(*undated), "no argument dates the launch"));
  // A dated launch keeps less: no weighted unpermute copy.
  const v1::Job dated = LlamaLaunchJob(moe + "--moe-router-fusion");
  EXPECT_EQ(dated.model().moe().routing_probs_applied(),
            v1::MoeConfig::PROBS_APPLIED_IN_EXPERTS);
  EXPECT_LT(PeakOf(dated), PeakOf(LlamaLaunchJob(moe)));
  // Unfused activations keep more than the fused SwiGLU.
  for (const char* unfused :
       {"--moe-use-legacy-grouped-gemm", "--moe-mlp-glu-interleave-size 32"}) {
    const v1::Job job =
        LlamaLaunchJob(moe + "--moe-router-fusion " + unfused);
    EXPECT_TRUE(job.model().moe().expert_activation_unfused()) << unfused;
    EXPECT_GT(PeakOf(job), PeakOf(dated)) << unfused;
  }
  // Input jitter keeps the noise and the jittered input: more.
  const v1::Job jittered =
      LlamaLaunchJob(moe + "--moe-router-fusion --moe-input-jitter-eps 0.01");
  EXPECT_TRUE(jittered.model().moe().input_jitter());
  EXPECT_GT(PeakOf(jittered), PeakOf(dated));
  // The shared experts beside the dispatcher: with TP 4 and sequence
  // parallelism FC1 saves the all-gathered input (more); Megatron's rules
  // for it hold (allgather refused).
  const std::string shared = moe + "--moe-router-fusion "
                                   "--moe-shared-expert-intermediate-size 2048 ";
  const v1::Job overlapped =
      LlamaLaunchJob(shared + "--moe-shared-expert-overlap");
  EXPECT_TRUE(overlapped.model().moe().shared_expert_overlap());
  EXPECT_GT(PeakOf(overlapped), PeakOf(LlamaLaunchJob(shared)));
  absl::StatusOr<v1::Estimate> gathered = EstimateJob(LlamaLaunchJob(
      shared + "--moe-shared-expert-overlap "
               "--moe-token-dispatcher-type allgather"));
  EXPECT_NE(gathered.status().message().find(
                "model.moe.shared_expert_overlap: needs the alltoall"),
            std::string::npos)
      << gathered.status();
  // The interleaved halves run TEGroupedMLP's glu(), which keeps x_linear +
  // offset apart: more than the legacy GroupedMLP; a clamp keeps the
  // clamped gate too. The fused kernel clamps inside: no change.
  const v1::Job legacy =
      LlamaLaunchJob(moe + "--moe-router-fusion --moe-use-legacy-grouped-gemm");
  const v1::Job interleaved =
      LlamaLaunchJob(moe + "--moe-router-fusion --moe-mlp-glu-interleave-size 32");
  EXPECT_TRUE(interleaved.model().moe().expert_glu_linear_copy());
  EXPECT_FALSE(legacy.model().moe().expert_glu_linear_copy());
  EXPECT_GT(PeakOf(interleaved), PeakOf(legacy));
  const v1::Job clamped = LlamaLaunchJob(
      moe + "--moe-router-fusion --moe-mlp-glu-interleave-size 32 "
            "--activation-func-clamp-value 7");
  EXPECT_TRUE(clamped.model().activation_clamp());
  EXPECT_GT(PeakOf(clamped), PeakOf(interleaved));
  EXPECT_DOUBLE_EQ(
      PeakOf(LlamaLaunchJob(moe + "--moe-router-fusion "
                                  "--activation-func-clamp-value 7")),
      PeakOf(dated));
  // TransformerEngine's op keeps what the kernel keeps, and the
  // probabilities' multiply after it its output: between the two.
  const v1::Job te = LlamaLaunchJob(
      moe + "--moe-router-fusion --use-te-activation-func "
            "--no-bias-swiglu-fusion");
  EXPECT_TRUE(te.model().moe().expert_activation_te_op());
  EXPECT_FALSE(te.model().moe().expert_activation_unfused());
  EXPECT_GT(PeakOf(te), PeakOf(dated));
  EXPECT_LT(PeakOf(te),
            PeakOf(LlamaLaunchJob(moe + "--moe-router-fusion "
                                        "--moe-use-legacy-grouped-gemm")));
  // On the input: top-1 only.
  const std::string top1 =
      "--num-experts 8 --expert-model-parallel-size 2 --moe-router-topk 1 "
      "--moe-router-pre-softmax "
      "--moe-ffn-hidden-size 7168 --moe-token-dispatcher-type alltoall ";
  const v1::Job on_input = LlamaLaunchJob(top1 + "--moe-apply-probs-on-input");
  EXPECT_EQ(on_input.model().moe().routing_probs_applied(),
            v1::MoeConfig::PROBS_APPLIED_ON_INPUT);
  EXPECT_GT(PeakOf(on_input),
            PeakOf(LlamaLaunchJob(top1 + "--moe-router-fusion")));
  absl::StatusOr<MegatronLaunch> top2 = ParseMegatronLaunch(
      Words(absl::StrCat(kLlama31_8B, " ", moe, "--moe-apply-probs-on-input")),
      nullptr);
  ASSERT_TRUE(top2.ok()) << top2.status();
  v1::Job refused = top2->job;
  refused.mutable_accelerator()->set_name("h100-80gb");
  absl::StatusOr<v1::Estimate> e = EstimateJob(refused);
  EXPECT_NE(e.status().message().find(
                "model.moe.routing_probs_applied: PROBS_APPLIED_ON_INPUT "
                "(--moe-apply-probs-on-input) needs router_topk 1"),
            std::string::npos)
      << e.status();
}

// [RS] The router's settings were read past (its kept scores counted as
// one fp32 tensor of every expert whatever they were). Now each is read
// as router.py runs it, Megatron's defaults (a softmax after the top-k,
// no load-balancing loss: --moe-aux-loss-coeff 0, no z-loss) named where
// they apply, and Megatron's raises refused by name.
TEST(MegatronArgsTest, TheRouterIsReadAsMegatronRunsIt) {
  const std::string moe =
      "--num-experts 64 --expert-model-parallel-size 2 --moe-router-topk 8 "
      "--moe-ffn-hidden-size 1792 --moe-token-dispatcher-type alltoall ";
  absl::StatusOr<MegatronLaunch> plain = ReadLlamaLaunch(moe, "");
  ASSERT_TRUE(plain.ok()) << plain.status();
  const v1::MoeConfig& defaults = plain->job.model().moe();
  EXPECT_EQ(defaults.router_score_function(),
            v1::MoeConfig::ROUTER_SCORE_SOFTMAX_AFTER_TOPK);
  EXPECT_TRUE(defaults.has_router_fusion() && !defaults.router_fusion());
  EXPECT_TRUE(defaults.has_aux_loss() && !defaults.aux_loss());
  EXPECT_TRUE(defaults.has_z_loss() && !defaults.z_loss());
  EXPECT_TRUE(absl::StrContains(AllNotes(*plain),
                                "no --moe-aux-loss-coeff: Megatron's 0"));
  // DeepSeek-V3's router as NVIDIA's recipe runs it.
  const v1::Job deepseek = LlamaLaunchJob(
      moe +
      "--moe-router-score-function sigmoid --moe-router-enable-expert-bias "
      "--moe-router-load-balancing-type seq_aux_loss --moe-aux-loss-coeff "
      "1e-4 --moe-router-num-groups 8 --moe-router-group-topk 4 "
      "--moe-router-fusion");
  const v1::MoeConfig& router = deepseek.model().moe();
  EXPECT_EQ(router.router_score_function(),
            v1::MoeConfig::ROUTER_SCORE_SIGMOID);
  EXPECT_TRUE(router.router_fusion() && router.aux_loss());
  EXPECT_FALSE(router.z_loss());
  EXPECT_EQ(router.router_num_groups(), 8u);
  EXPECT_EQ(router.router_group_topk(), 4u);
  // Beside the same fused router (which dates the release) without the
  // loss: the loss's scores, 4E B a token.
  EXPECT_GT(PeakOf(deepseek),
            PeakOf(LlamaLaunchJob(moe + "--moe-router-fusion")));
  EXPECT_EQ(LlamaLaunchJob(moe + "--moe-router-pre-softmax")
                .model()
                .moe()
                .router_score_function(),
            v1::MoeConfig::ROUTER_SCORE_SOFTMAX);
  EXPECT_TRUE(LlamaLaunchJob(moe + "--moe-z-loss-coeff 0").model().moe()
                  .z_loss());  // computed whenever it is set
  // Several load-balancing types, a coefficient each: a loss where one
  // with a coefficient above 0 is a loss type.
  const std::string two =
      "--moe-router-load-balancing-type aux_loss global_aux_loss "
      "--moe-aux-loss-coeff ";
  EXPECT_TRUE(LlamaLaunchJob(moe + two + "0 0.001").model().moe().aux_loss());
  EXPECT_FALSE(LlamaLaunchJob(moe + two + "0 0").model().moe().aux_loss());
  EXPECT_TRUE(RefusedNaming(moe + two + "0.01", "",
                            {"--moe-aux-loss-coeff", "Megatron asserts"}));
  EXPECT_TRUE(RefusedNaming(moe + "--moe-aux-loss-coeff 0.01 0.001", "",
                            {"--moe-aux-loss-coeff", "one coefficient"}));
  // Sinkhorn keeps a softmax over every expert, unfused.
  const v1::MoeConfig sinkhorn =
      LlamaLaunchJob(moe +
                     "--moe-router-load-balancing-type sinkhorn "
                     "--moe-router-fusion")
          .model()
          .moe();
  EXPECT_EQ(sinkhorn.router_score_function(),
            v1::MoeConfig::ROUTER_SCORE_SOFTMAX);
  EXPECT_FALSE(sinkhorn.router_fusion());
  // Megatron's raises.
  EXPECT_TRUE(RefusedNaming(
      moe + "--moe-router-load-balancing-type sinkhorn "
            "--moe-aux-loss-coeff 0.01",
      "", {"--moe-aux-loss-coeff", "sinkhorn"}));
  EXPECT_TRUE(RefusedNaming(moe + "--moe-router-enable-expert-bias", "",
                            {"--moe-router-enable-expert-bias", "sigmoid"}));
  EXPECT_TRUE(RefusedNaming(moe + "--moe-router-score-function tanh", "",
                            {"--moe-router-score-function", "'tanh'"}));
  EXPECT_TRUE(RefusedNaming(moe + "--moe-router-load-balancing-type bogus",
                            "", {"--moe-router-load-balancing-type"}));
  EXPECT_TRUE(RefusedNaming(moe + "--moe-router-group-topk 4", "",
                            {"--moe-router-num-groups", "divide"}));
  EXPECT_TRUE(RefusedNaming(
      moe + "--moe-router-num-groups 4 --moe-router-group-topk 8", "",
      {"--moe-router-group-topk", "at most"}));
  EXPECT_TRUE(RefusedNaming(
      "--num-experts 8 --moe-router-topk 1 --moe-ffn-hidden-size 1792 ", "",
      {"--moe-router-topk", "--moe-router-pre-softmax"}));
  EXPECT_TRUE(RefusedNaming(
      moe + "--moe-router-load-balancing-type quantile_balancing "
            "--moe-router-fusion",
      "", {"quantile_balancing"}));
}

// --moe-token-dispatcher-type flex: DeepEP's buffers were read past (the
// job estimated as alltoall). Now they are on every GPU of an MoE stage,
// sized by the SMs; the other backends, and DeepEP's settings without
// flex, are refused by name.
TEST(MegatronArgsTest, FlexDispatcherCountsDeepEpsBuffers) {
  const std::string moe =
      "--num-experts 8 --expert-model-parallel-size 2 --moe-router-topk 2 "
      "--moe-ffn-hidden-size 7168 --moe-token-dispatcher-type ";
  v1::Job alltoall = LlamaLaunchJob(moe + "alltoall");
  v1::Job flex = LlamaLaunchJob(moe + "flex");
  // Core 0.12.0 keeps the weighted expert outputs on the tokens' rank
  // under alltoall, on the experts' under DeepEP (ETP x as many): compare
  // the releases that keep neither.
  for (v1::Job* job : {&alltoall, &flex}) {
    job->mutable_model()->mutable_moe()->set_routing_probs_applied(
        v1::MoeConfig::PROBS_APPLIED_IN_EXPERTS);
  }
  EXPECT_EQ(flex.model().moe().token_dispatcher(),
            v1::MoeConfig::DISPATCHER_FLEX);
  EXPECT_EQ(flex.model().moe().flex_dispatcher_num_sms(), 20u);
  absl::StatusOr<v1::Estimate> e = EstimateJob(flex);
  ASSERT_TRUE(e.ok()) << e.status();
  // EP 2 x ETP 4 = 8 ranks in a node: NVLink buffer and workspace only.
  const double buffers = e->peak().communication_buffer_bytes();
  EXPECT_GT(buffers, 200e6);
  EXPECT_LT(buffers, 300e6);
  // Routing's permutation maps differ too ([RS]): alltoall's argsort
  // keeps 8E + 4 + 8k = 84 B a token, DeepEP's map 8E/EP + 20 + k = 54 B a
  // routed copy, 8 copies a token (top-2 of the tokens ETP 4 gathers):
  // 348 B more a token, 2048 tokens (8192 over TP 4) in each of 32 layers.
  EXPECT_NEAR(PeakOf(flex) - PeakOf(alltoall),
              buffers + 32 * 2048 * (8 * 54 - 84.0), 1);
  // More SMs, larger buffers; the older flags say the same.
  const v1::Job sms = LlamaLaunchJob(moe + "flex --moe-flex-dispatcher-num-sms 32");
  EXPECT_EQ(sms.model().moe().flex_dispatcher_num_sms(), 32u);
  EXPECT_GT(PeakOf(sms), PeakOf(flex));
  EXPECT_EQ(LlamaLaunchJob(moe + "flex --moe-enable-deepep --moe-deepep-num-sms 32")
                .model().moe().flex_dispatcher_num_sms(),
            32u);

  auto refused = [&](const std::string& extra) {
    return LaunchRefusal(moe + extra);
  };
  EXPECT_NE(refused("flex --moe-flex-dispatcher-backend hybridep")
                .find("moe-flex-dispatcher-backend"),
            std::string::npos);
  EXPECT_NE(refused("flex --moe-flex-dispatcher-backend ncclep")
                .find("moe-flex-dispatcher-backend"),
            std::string::npos);
  EXPECT_NE(refused("flex --moe-flex-dispatcher-num-sms 21")
                .find("moe-flex-dispatcher-num-sms"),
            std::string::npos);
  EXPECT_NE(refused("flex --moe-flex-dispatcher-num-sms 24 "
                    "--moe-deepep-num-sms 32")
                .find("moe-deepep-num-sms"),
            std::string::npos);
  EXPECT_NE(refused("flex --moe-paged-stash").find("moe-paged-stash"),
            std::string::npos);
  EXPECT_NE(refused("alltoall --moe-enable-deepep").find("moe-enable-deepep"),
            std::string::npos);
  EXPECT_NE(refused("alltoall --moe-deepep-num-sms 24")
                .find("moe-deepep-num-sms"),
            std::string::npos);
}

// Megatron's dataloader builds a b x 1 x s x s bool mask unless told not
// to: at s = 8192, b = 1 and PP 2 that is 64 MiB on each stage (both read
// data), and only that (no recomputation: the current micro-batch's).
TEST(MegatronArgsTest, DataloaderAttentionMaskIsMegatronsDefault) {
  const v1::Job with_mask = LlamaLaunchJob("");
  EXPECT_TRUE(with_mask.training().dataloader_attention_mask());
  const v1::Job without = LlamaLaunchJob("--no-create-attention-mask-in-dataloader");
  EXPECT_FALSE(without.training().dataloader_attention_mask());
  EXPECT_DOUBLE_EQ(PeakOf(with_mask) - PeakOf(without), 8192.0 * 8192);
  EXPECT_FALSE(LlamaLaunchJob("--dataloader-inter-document-masking")
                   .training()
                   .dataloader_attention_mask());
  // The note says so; the flag is a switch (the next word stays a flag).
  absl::StatusOr<MegatronLaunch> l =
      ParseMegatronLaunch(Words(kLlama31_8B), nullptr);
  ASSERT_TRUE(l.ok()) << l.status();
  const std::string notes = AllNotes(*l);
  EXPECT_NE(notes.find("--no-create-attention-mask-in-dataloader"),
            std::string::npos)
      << notes;
  EXPECT_EQ(LlamaLaunchJob("--no-create-attention-mask-in-dataloader --fp16",
                           "--bf16")
                .training()
                .precision(),
            v1::PRECISION_FP16);
}

// --quick-geglu is its own activation (unfused, 10 bytes an FFN column);
// the unfused SwiGLU (--no-bias-swiglu-fusion) runs mlp.py's glu(), 10
// bytes an FFN column where the fused kernel keeps 6 (moe_terms.cc
// DenseMlpBytes): Llama-3.1-8B at TP 4, 8k, 32 layers a stage... 4 B x
// 8192 x 14336 / 4 more a layer. Without --swiglu the fusion flag changes
// nothing; with the op fuser the MLP runs TE's SwiGLU op (no change), and
// beside shared experts (mlp.py's glu() there) it is refused.
TEST(MegatronArgsTest, GatedActivationFusionIsReadNotPassed) {
  EXPECT_TRUE(LlamaLaunchJob("").training().fused_swiglu());
  EXPECT_FALSE(
      LlamaLaunchJob("--quick-geglu", "--swiglu").training().fused_swiglu());
  EXPECT_EQ(LlamaLaunchJob("--quick-geglu", "--swiglu").model().mlp_activation(),
            v1::MLP_ACTIVATION_QUICK_GEGLU);
  EXPECT_GT(PeakOf(LlamaLaunchJob("--quick-geglu", "--swiglu")),
            PeakOf(LlamaLaunchJob("")));
  // --disable-jit-fuser runs quick_gelu eagerly, which keeps its sigmoid
  // too; the fused SwiGLU keeps what it keeps either way.
  EXPECT_TRUE(
      LlamaLaunchJob("--disable-jit-fuser").training().jit_fuser_disabled());
  EXPECT_GT(PeakOf(LlamaLaunchJob("--quick-geglu --disable-jit-fuser",
                                  "--swiglu")),
            PeakOf(LlamaLaunchJob("--quick-geglu", "--swiglu")));
  EXPECT_EQ(PeakOf(LlamaLaunchJob("--disable-jit-fuser")),
            PeakOf(LlamaLaunchJob("")));
  const v1::Job unfused = LlamaLaunchJob("--no-bias-swiglu-fusion");
  EXPECT_FALSE(unfused.training().fused_swiglu());
  EXPECT_TRUE(unfused.training().glu_linear_copy());
  const absl::StatusOr<v1::Estimate> fused_e = EstimateJob(LlamaLaunchJob(""));
  const absl::StatusOr<v1::Estimate> unfused_e = EstimateJob(unfused);
  ASSERT_TRUE(fused_e.ok() && unfused_e.ok()) << unfused_e.status();
  EXPECT_DOUBLE_EQ(unfused_e->peak().activation_bytes() -
                       fused_e->peak().activation_bytes(),
                   unfused_e->peak().num_layers() *
                       fused_e->stages(0).microbatches_in_flight() * 4.0 *
                       8192 * 14336 / 4);
  EXPECT_EQ(PeakOf(LlamaLaunchJob("--no-bias-swiglu-fusion", "--swiglu")),
            PeakOf(LlamaLaunchJob("", "--swiglu")));
  const v1::Job fuser = LlamaLaunchJob(
      "--no-bias-swiglu-fusion --use-transformer-engine-op-fuser");
  EXPECT_TRUE(fuser.training().fused_swiglu());
  EXPECT_EQ(PeakOf(fuser), PeakOf(LlamaLaunchJob("")));
  EXPECT_TRUE(RefusedNaming(
      "--no-bias-swiglu-fusion --use-transformer-engine-op-fuser "
      "--num-experts 8 --moe-shared-expert-intermediate-size 1024",
      "", {"--no-bias-swiglu-fusion", "shared experts"}));
  // Routed experts run TEGroupedMLP's glu() likewise (experts.py); the
  // legacy GroupedMLP multiplies the half itself.
  const v1::MoeConfig grouped =
      LlamaLaunchJob("--no-bias-swiglu-fusion --num-experts 8 "
                     "--moe-grouped-gemm")
          .model()
          .moe();
  EXPECT_TRUE(grouped.expert_activation_unfused());
  EXPECT_TRUE(grouped.expert_glu_linear_copy());
  const v1::MoeConfig legacy =
      LlamaLaunchJob("--no-bias-swiglu-fusion --num-experts 8 "
                     "--moe-grouped-gemm --moe-use-legacy-grouped-gemm")
          .model()
          .moe();
  EXPECT_TRUE(legacy.expert_activation_unfused());
  EXPECT_FALSE(legacy.expert_glu_linear_copy());
}

// [TA] TransformerEngine's SwiGLU op keeps only its input, as the fused
// kernel: the same 6 B a unit of FFN. Megatron runs it only with the
// kernel turned off and only for gelu, silu and relu; the rest raises.
TEST(MegatronArgsTest, TransformerEngineActivationKeepsWhatTheKernelKeeps) {
  const v1::Job te =
      LlamaLaunchJob("--use-te-activation-func --no-bias-swiglu-fusion");
  EXPECT_TRUE(te.training().fused_swiglu());
  EXPECT_EQ(PeakOf(te), PeakOf(LlamaLaunchJob("")));
  // Fusion on (the --swiglu default): "cannot be both true".
  EXPECT_TRUE(RefusedNaming("--use-te-activation-func", "",
                            {"--use-te-activation-func",
                             "--no-bias-swiglu-fusion"}));
  // The local spec has no TE module: silu on both halves, FC2 fails.
  EXPECT_TRUE(RefusedNaming(
      "--use-te-activation-func --no-bias-swiglu-fusion "
      "--transformer-impl local",
      "", {"--use-te-activation-func", "--transformer-impl local"}));
  EXPECT_TRUE(RefusedNaming("--use-te-activation-func --quick-geglu",
                            "--swiglu",
                            {"--use-te-activation-func", "--quick-geglu"}));
  EXPECT_TRUE(RefusedNaming("--use-te-activation-func --squared-relu",
                            "--swiglu",
                            {"--use-te-activation-func", "--squared-relu"}));
  // GeLU: its op keeps what the fused bias-GeLU keeps; the launch has no
  // biases, so the fusion is off and Megatron runs it.
  const v1::Job gelu = LlamaLaunchJob("--use-te-activation-func", "--swiglu");
  EXPECT_EQ(gelu.model().mlp_activation(), v1::MLP_ACTIVATION_GELU);
  EXPECT_EQ(PeakOf(gelu), PeakOf(LlamaLaunchJob("", "--swiglu")));
  const std::string with_biases =
      "--swiglu --normalization RMSNorm --use-rotary-position-embeddings "
      "--disable-bias-linear";
  EXPECT_TRUE(RefusedNaming("--use-te-activation-func --normalization RMSNorm "
                            "--use-rotary-position-embeddings",
                            with_biases,
                            {"--use-te-activation-func",
                             "--no-bias-gelu-fusion"}));
  EXPECT_EQ(LaunchRefusal("--use-te-activation-func --no-bias-gelu-fusion",
                          "--swiglu"),
            "");
}

// Megatron-LM has no --activation-func-fp8-input-store: arguments.py
// generates TransformerConfig's arguments but excludes
// activation_func_fp8_input_store ("no CLI argument exists"). A launch
// that gives it is told so and counted with the 16-bit input (an upper
// bound); a job (TrainingConfig.activation_fp8_input_store, for configs
// set in code) counts the SwiGLU input in fp8 [F8S]: 2 B a unit of FFN
// less in every dense layer.
TEST(MegatronArgsTest, Fp8ActivationInputStoreIsNotALaunchArgument) {
  absl::StatusOr<MegatronLaunch> l = ParseMegatronLaunch(
      Words(std::string(kLlama31_8B) + " --activation-func-fp8-input-store"),
      nullptr);
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_TRUE(absl::StrContains(
      AllNotes(*l), "not read: --activation-func-fp8-input-store"))
      << AllNotes(*l);
  EXPECT_FALSE(l->job.training().activation_fp8_input_store());
  const v1::Job launch = LlamaLaunchJob("--activation-func-fp8-input-store");
  EXPECT_EQ(PeakOf(launch), PeakOf(LlamaLaunchJob("")));
  v1::Job stored = launch;
  stored.mutable_training()->set_activation_fp8_input_store(true);
  // The first stage of PP 2 holds 2 micro-batches of 16 layers in flight
  // (1F1B warm-up), each 8192 tokens x 14336 / TP 4 FFN columns.
  const double saved = 2.0 * 16 * 8192 * 14336 / 4 * 2;
  EXPECT_DOUBLE_EQ(PeakOf(launch) - PeakOf(stored), saved);
}

// Megatron's native fused cross entropy stores what the unfused loss does,
// and its backward's new fp32 gradient of the logits is counted on the
// last stage (memory_model.cc [CE]: 8192 x 128,512 / TP 4 x 4 B, the
// vocabulary padded to 128 x TP) and said
// in a note; TransformerEngine's loss, or the eager one, makes none.
TEST(MegatronArgsTest, FusedCrossEntropysGradientIsCountedOnTheLastStage) {
  const v1::Job fused = LlamaLaunchJob("--cross-entropy-loss-fusion");
  const v1::Job plain = LlamaLaunchJob("");
  EXPECT_TRUE(fused.training().cross_entropy_new_gradient());
  absl::StatusOr<v1::Estimate> f = EstimateJob(fused);
  absl::StatusOr<v1::Estimate> p = EstimateJob(plain);
  ASSERT_TRUE(f.ok() && p.ok());
  ASSERT_EQ(f->stages_size(), 2);
  EXPECT_DOUBLE_EQ(f->stages(1).activation_bytes() -
                       p->stages(1).activation_bytes(),
                   4.0 * 8192 * 128512 / 4);
  EXPECT_EQ(f->stages(0).activation_bytes(), p->stages(0).activation_bytes());
  for (const auto& [extra, said] : std::vector<std::pair<std::string, bool>>{
           {"--cross-entropy-loss-fusion", true},
           {"--cross-entropy-loss-fusion --cross-entropy-fusion-impl native",
            true},
           {"--cross-entropy-loss-fusion --cross-entropy-fusion-impl te",
            false},
           {"--cross-entropy-fusion-impl native", false},
           {"--cross-entropy-loss-fusion --disable-jit-fuser", false},
       }) {
    absl::StatusOr<MegatronLaunch> l = ReadLlamaLaunch(extra, "");
    ASSERT_TRUE(l.ok()) << extra << ": " << l.status();
    EXPECT_EQ(AllNotes(*l).find("new fp32 gradient of the logits") !=
                  std::string::npos,
              said)
        << extra;
    EXPECT_EQ(l->job.training().cross_entropy_new_gradient(), said) << extra;
  }
}

// Arguments Megatron generates from TransformerConfig's fields
// (argument_utils.py ArgumentGroupFactory) are read too: --qk-l2-norm is
// Megatron's L2Norm on Q and K, whose K input keeps the whole QKV output
// (memory_model.cc [QN]: more than --qk-layernorm's TE norms keep; it wins
// where both are given, as in Megatron's spec), and new layer kinds (gated
// attention output, hyper-connections, experimental attention variants)
// are refused by name
// (MegatronArgumentsTest.EveryRefusedArgumentIsRefusedByName).
TEST(MegatronArgsTest, GeneratedTransformerConfigArgumentsAreRead) {
  const v1::Job l2 = LlamaLaunchJob("--qk-l2-norm");
  EXPECT_TRUE(l2.model().qk_l2_norm());
  EXPECT_FALSE(l2.model().qk_norm());
  EXPECT_GT(PeakOf(l2), PeakOf(LlamaLaunchJob("--qk-layernorm")));
  EXPECT_GT(PeakOf(LlamaLaunchJob("--qk-layernorm")),
            PeakOf(LlamaLaunchJob("")));
  const v1::Job both = LlamaLaunchJob("--qk-layernorm --qk-l2-norm");
  EXPECT_TRUE(both.model().qk_l2_norm());
  EXPECT_FALSE(both.model().qk_norm());
  EXPECT_EQ(PeakOf(both), PeakOf(l2));
  for (const char* flag :
       {"--attention-output-gate", "--enable-mhc-connections",
        "--experimental-attention-variant gdn"}) {
    absl::StatusOr<MegatronLaunch> l = ParseMegatronLaunch(
        Words(std::string(kLlama31_8B) + " " + flag), nullptr);
    ASSERT_FALSE(l.ok()) << flag;
    EXPECT_NE(l.status().message().find(
                  std::string(flag).substr(0, std::string(flag).find(' '))),
              std::string::npos)
        << l.status();
  }
}

// Megatron counts the embedding / the loss as a layer in the split: 32
// layers + 2 over 2 stages is 17 each, so 16 transformer layers each; with
// the embedding only, 33 does not split over 2 (refused), over 3 it is 11:
// 10, 11, 11.
TEST(MegatronArgsTest, EmbeddingAndLossCanCountInThePipelineSplit) {
  const std::string base = std::string(kLlama31_8B);
  absl::StatusOr<MegatronLaunch> l = ParseMegatronLaunch(
      Words(base + " --account-for-embedding-in-pipeline-split "
                   "--account-for-loss-in-pipeline-split"),
      nullptr);
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->job.parallel().layers_per_stage_size(), 2);
  EXPECT_EQ(l->job.parallel().layers_per_stage(0), 16u);
  EXPECT_EQ(l->job.parallel().layers_per_stage(1), 16u);
  l = ParseMegatronLaunch(
      Words(base + " --account-for-embedding-in-pipeline-split"), nullptr);
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.status().message().find("--account-for-embedding"),
            std::string::npos);
  std::string three = base;
  three.replace(three.find("--pipeline-model-parallel-size 2"),
                std::string("--pipeline-model-parallel-size 2").size(),
                "--pipeline-model-parallel-size 3");
  three.replace(three.find("--nproc-per-node 8"),
                std::string("--nproc-per-node 8").size(),
                "--nproc-per-node 12");
  l = ParseMegatronLaunch(
      Words(three + " --account-for-embedding-in-pipeline-split"), nullptr);
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->job.parallel().layers_per_stage(0), 10u);
  EXPECT_EQ(l->job.parallel().layers_per_stage(1), 11u);
  EXPECT_EQ(l->job.parallel().layers_per_stage(2), 11u);
}

// The Llama-3.1-8B launch with other --num-layers and PP sizes.
std::string WithLayers(uint32_t layers, uint32_t pp) {
  std::string line = kLlama31_8B;
  auto set = [&](const std::string& from, const std::string& to) {
    line.replace(line.find(from), from.size(), to);
  };
  set("--num-layers 32", absl::StrCat("--num-layers ", layers));
  set("--pipeline-model-parallel-size 2",
      absl::StrCat("--pipeline-model-parallel-size ", pp));
  return line;
}

// Megatron allows both uneven splits with interleaving (transformer_config.py,
// "Uneven PP"): every rank's layers a multiple of v, chunk j of rank i being
// virtual stage j * p + i. With the embedding and the loss accounted, the 34
// units do not split over 2 x 4 chunks (refused), and 30 layers + 2 over
// PP 2 x v 2 is 8 a chunk: 7, 8, 8, 7.
TEST(MegatronArgsTest, UnevenSplitsCombineWithInterleaving) {
  auto layers_of = [](const std::string& extra, uint32_t layers = 32) {
    std::vector<uint32_t> out;
    absl::StatusOr<MegatronLaunch> l = ParseMegatronLaunch(
        Words(WithLayers(layers, 2) + " " + extra), nullptr);
    EXPECT_TRUE(l.ok()) << extra << ": " << l.status();
    if (l.ok()) {
      for (uint32_t n : l->job.parallel().layers_per_stage()) out.push_back(n);
      EXPECT_EQ(l->job.parallel().virtual_pipeline_stages(), 2u);
    }
    return out;
  };
  EXPECT_EQ(layers_of("--decoder-first-pipeline-num-layers 12 "
                      "--num-virtual-stages-per-pipeline-rank 2"),
            (std::vector<uint32_t>{6, 10, 6, 10}));
  EXPECT_EQ(layers_of("--account-for-embedding-in-pipeline-split "
                      "--account-for-loss-in-pipeline-split "
                      "--num-virtual-stages-per-pipeline-rank 2",
                      30),
            (std::vector<uint32_t>{7, 8, 8, 7}));

  auto error_of = [](const std::string& extra) {
    absl::StatusOr<MegatronLaunch> l = ParseMegatronLaunch(
        Words(std::string(kLlama31_8B) + " " + extra), nullptr);
    return l.ok() ? std::string("accepted") : std::string(l.status().message());
  };
  // 13 first-stage layers do not split over 2 chunks.
  EXPECT_NE(error_of("--decoder-first-pipeline-num-layers 13 "
                     "--decoder-last-pipeline-num-layers 19 "
                     "--num-virtual-stages-per-pipeline-rank 2")
                .find("--decoder-first-pipeline-num-layers: a stage of 13 "
                      "layers does not split over 2 virtual stages"),
            std::string::npos);
  // 34 units over 2 x 4 chunks.
  EXPECT_NE(error_of("--account-for-embedding-in-pipeline-split "
                     "--account-for-loss-in-pipeline-split "
                     "--num-virtual-stages-per-pipeline-rank 4")
                .find("--account-for-embedding-in-pipeline-split: needs"),
            std::string::npos);
  EXPECT_NE(error_of("--account-for-loss-in-pipeline-split "
                     "--decoder-first-pipeline-num-layers 16")
                .find("--account-for-loss-in-pipeline-split: cannot be given"),
            std::string::npos);
}

// --num-layers-per-virtual-pipeline-stage counts the accounted embedding
// and loss as layers (arguments.py): 30 layers + 2 over PP 2 is 16 a rank,
// 8 a chunk, v = 2 (7, 8, 8, 7), as NVIDIA's Qwen3-235B recipe gives it
// (94 + 2 over PP 8, 3 a chunk). Without the accounting 30 does not divide.
TEST(MegatronArgsTest, LayersPerVirtualStageCountTheAccountedUnits) {
  const v1::Job job = LlamaLaunchJob(
      "--num-layers 30 --account-for-embedding-in-pipeline-split "
      "--account-for-loss-in-pipeline-split "
      "--num-layers-per-virtual-pipeline-stage 8",
      "--num-layers 32");
  EXPECT_EQ(job.parallel().virtual_pipeline_stages(), 2u);
  std::vector<uint32_t> layers(job.parallel().layers_per_stage().begin(),
                               job.parallel().layers_per_stage().end());
  EXPECT_EQ(layers, (std::vector<uint32_t>{7, 8, 8, 7}));
  std::string line = std::string(kLlama31_8B) +
                     " --num-layers-per-virtual-pipeline-stage 8";
  line.replace(line.find("--num-layers 32"), 15, "--num-layers 30");
  absl::StatusOr<MegatronLaunch> refused =
      ParseMegatronLaunch(Words(line), nullptr);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find(
                "--num-layers-per-virtual-pipeline-stage: x pipeline size "
                "must divide --num-layers 30"),
            std::string::npos)
      << refused.status();
}

// Selective recomputation of "layernorm" is read (NVIDIA's MoE recipes use
// it with moe_act) and lowers an MoE model's peak; memory_model_test and
// moe_terms_test hold the term itself.
TEST(MegatronArgsTest, ReadsLayernormRecomputation) {
  const std::string moe =
      "--num-experts 8 --moe-ffn-hidden-size 1792 --moe-router-topk 2 "
      "--expert-model-parallel-size 2 --moe-grouped-gemm "
      "--moe-token-dispatcher-type alltoall ";
  const v1::Job plain = LlamaLaunchJob(moe);
  const v1::Job norms = LlamaLaunchJob(
      moe + "--recompute-granularity selective --recompute-modules "
            "moe_act layernorm");
  ASSERT_EQ(norms.training().recompute().modules_size(), 2);
  EXPECT_EQ(norms.training().recompute().modules(1),
            v1::Recompute::MODULE_LAYERNORM);
  EXPECT_LT(PeakOf(norms), PeakOf(plain));
  // Megatron refuses moe_act without grouped GEMMs, and moe_act or
  // layernorm under fp8's delayed recipe (transformer_config.py).
  std::string ungrouped = moe + "--recompute-granularity selective "
                                "--recompute-modules moe_act";
  ungrouped.erase(ungrouped.find("--moe-grouped-gemm "), 19);
  EXPECT_TRUE(RefusedNaming(ungrouped, "",
                           {"--recompute-modules: moe_act needs "
                            "--moe-grouped-gemm"}));
  for (const char* module : {"moe_act", "layernorm"}) {
    const std::string fp8 =
        moe + "--fp8-format hybrid --recompute-granularity selective "
              "--recompute-modules " + module;
    EXPECT_TRUE(RefusedNaming(fp8, "", {"fp8 recipe delayed"})) << module;
    EXPECT_TRUE(
        EstimateJob(LlamaLaunchJob(fp8 + " --fp8-recipe tensorwise")).ok())
        << module;
  }
}

// One accounted unit a chunk: rank 0's first chunk holds only the embedding
// and the last rank's last only the loss (Megatron builds empty blocks;
// Megatron-Bridge's 405B preset on TP 4, PP 16, v 8 is such a split). It
// reads as the same job as the explicit layout "E|(t|)*30L" and estimates
// to the same peak, instead of being refused.
TEST(MegatronArgsTest, AccountedChunksMayHoldOnlyTheEmbeddingOrTheLoss) {
  const v1::Job accounted = LlamaLaunchJob(
      "--num-layers 30 --account-for-embedding-in-pipeline-split "
      "--account-for-loss-in-pipeline-split "
      "--num-virtual-stages-per-pipeline-rank 16",
      "--num-layers 32");
  EXPECT_EQ(accounted.parallel().virtual_pipeline_stages(), 16u);
  ASSERT_EQ(accounted.parallel().layers_per_stage_size(), 32);
  EXPECT_EQ(accounted.parallel().layers_per_stage(0), 0u);
  EXPECT_EQ(accounted.parallel().layers_per_stage(1), 1u);
  EXPECT_EQ(accounted.parallel().layers_per_stage(31), 0u);
  const v1::Job explicit_layout = LlamaLaunchJob(
      "--num-layers 30 --pipeline-model-parallel-layout E|(t|)*30L",
      "--num-layers 32");
  ASSERT_EQ(explicit_layout.parallel().layers_per_stage_size(), 32);
  for (int k = 0; k < 32; ++k) {
    EXPECT_EQ(accounted.parallel().layers_per_stage(k),
              explicit_layout.parallel().layers_per_stage(k));
  }
  EXPECT_DOUBLE_EQ(PeakOf(accounted), PeakOf(explicit_layout));
}

// One entry a (virtual) stage is written only after PP x v is bounded: a
// launch asking for billions of stages is refused at once.
TEST(MegatronArgsTest, StageCountIsBoundedBeforeSplitting) {
  const std::string error = [] {
    absl::StatusOr<MegatronLaunch> l = ParseMegatronLaunch(
        Words(WithLayers(4000000000u, 2000000000u) +
              " --decoder-first-pipeline-num-layers 2"),
        nullptr);
    return l.ok() ? std::string("accepted") : std::string(l.status().message());
  }();
  EXPECT_NE(error.find(absl::StrCat(
                "--pipeline-model-parallel-size: x virtual stages is "
                "2000000000; at most ",
                kMaxExpandedLayout, " stages are modelled")),
            std::string::npos)
      << error;
}

// The bound is also what keeps a batch script's work short (64 launches
// under the Slurm hook's time limit): one over it is refused, one at it
// is estimated (PP 4,096 of 2 chunks, 8,192 stages).
TEST(MegatronArgsTest, AStageCountAtTheBoundIsEstimatedOneOverItRefused) {
  const std::string launch =
      "torchrun --nnodes 512 --nproc-per-node 8 pretrain_gpt.py "
      "--num-layers 8192 --hidden-size 64 --num-attention-heads 4 "
      "--seq-length 128 --max-position-embeddings 128 --micro-batch-size 1 "
      "--global-batch-size 4096 --vocab-size 100 --bf16 "
      "--pipeline-model-parallel-size 4096 "
      "--decoder-first-pipeline-num-layers 2 "
      "--decoder-last-pipeline-num-layers 2 ";
  const absl::StatusOr<MegatronLaunch> at =
      ParseMegatronLaunch(Words(launch + "--num-virtual-stages-per-pipeline-"
                                         "rank 2"),
                          nullptr);
  ASSERT_TRUE(at.ok()) << at.status();
  EXPECT_EQ(at->job.parallel().layers_per_stage_size(),
            static_cast<int>(kMaxExpandedLayout));
  const absl::StatusOr<MegatronLaunch> over =
      ParseMegatronLaunch(Words(launch + "--num-virtual-stages-per-pipeline-"
                                         "rank 4"),
                          nullptr);
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.status().message().find("x virtual stages is 16384"),
            std::string::npos)
      << over.status();
}

// Arguments that are neither memory-relevant (the table) nor Megatron-LM's
// at the reviewed revision (a newer Megatron's, a fork's) are not read, and
// a note names them: one may change memory. Megatron's own other
// arguments (--data-path, --save) and the launcher's words before the
// script are not named.
TEST(MegatronArgsTest, UnreviewedArgumentsAreNamedInANote) {
  absl::StatusOr<MegatronLaunch> l = ParseMegatronLaunch(
      Words("torchrun --nproc_per_node 8 --rdzv-backend c10d pretrain_gpt.py "
            "--num-layers 32 --hidden-size 4096 --num-attention-heads 32 "
            "--swiglu --vocab-size 32000 --seq-length 4096 --some-new-flag 17 "
            "--another --data-path /data/x --save /ckpt --another"),
      nullptr);
  ASSERT_TRUE(l.ok()) << l.status();
  std::string note;
  for (const std::string& n : l->notes) {
    if (n.find("not read:") != std::string::npos) note = n;
  }
  EXPECT_NE(note.find("--some-new-flag, --another:"), std::string::npos)
      << note;
  EXPECT_NE(note.find("not arguments of Megatron-LM d98e8a6"),
            std::string::npos)
      << note;
  for (const char* known : {"data-path", "save", "rdzv", "nproc"}) {
    EXPECT_EQ(note.find(known), std::string::npos) << note;
  }
  // Bounded: the first eight are named, the rest counted.
  std::string many = std::string(kLlama31_8B);
  for (int i = 0; i < 20; ++i) absl::StrAppend(&many, " --fork-flag-", i);
  l = ParseMegatronLaunch(Words(many), nullptr);
  ASSERT_TRUE(l.ok()) << l.status();
  bool counted = false;
  for (const std::string& n : l->notes) {
    if (n.find("--fork-flag-7 and 12 more:") != std::string::npos) {
      counted = true;
      EXPECT_EQ(n.find("fork-flag-8"), std::string::npos) << n;
    }
  }
  EXPECT_TRUE(counted);
}

}  // namespace
}  // namespace memgate
