#include "estimator/megatron_args.h"

#include "absl/strings/str_split.h"
#include "estimator/catalog.h"
#include "estimator/estimate.h"
#include "gtest/gtest.h"

namespace memgate {
namespace {

std::vector<std::string> Words(const std::string& line) {
  return absl::StrSplit(line, ' ', absl::SkipEmpty());
}

// Llama-3.1-8B as the paper trained it with Megatron-LM (core_r0.8).
constexpr char kLlama31_8B[] =
    "torchrun --nnodes 2 --nproc-per-node 8 pretrain_gpt.py "
    "--num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 "
    "--num-attention-heads 32 --group-query-attention --num-query-groups 8 "
    "--vocab-size 128256 --untie-embeddings-and-output-weights --swiglu "
    "--normalization RMSNorm --use-rotary-position-embeddings "
    "--tensor-model-parallel-size 4 --pipeline-model-parallel-size 2 "
    "--sequence-parallel --use-distributed-optimizer --use-flash-attn "
    "--micro-batch-size 1 --global-batch-size 1024 --seq-length 8192 --bf16 "
    "--tokenizer-type Llama3Tokenizer --lr 1e-4 --train-iters 25000";

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
  EXPECT_EQ(job.model().vocab_size(), 128512u);  // padded to 128 x TP 4
  EXPECT_EQ(job.parallel().tensor_parallel(), 4u);
  EXPECT_EQ(job.parallel().pipeline_parallel(), 2u);
  EXPECT_EQ(job.parallel().context_parallel(), 1u);
  EXPECT_TRUE(job.parallel().sequence_parallel());
  EXPECT_TRUE(job.parallel().distributed_optimizer());
  EXPECT_EQ(job.training().seq_length(), 8192u);
  EXPECT_EQ(job.training().micro_batch_size(), 1u);
  EXPECT_EQ(job.training().global_batch_size(), 1024u);
  ASSERT_EQ(l->notes.size(), 1u);
  EXPECT_NE(l->notes[0].find("128256 -> 128512"), std::string::npos);

  // Close to the paper's 21.59 GiB: only the padded vocabulary differs.
  v1::Job with_gpu = job;
  with_gpu.mutable_accelerator()->set_name("a100-40gb");
  absl::StatusOr<v1::Estimate> e = EstimateJob(with_gpu);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_NEAR(e->peak_gib(), 21.59, 0.02);
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
  EXPECT_EQ(l->job.model().vocab_size(), 129024u);  // multiple of 1024
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
  EXPECT_EQ(l->job.model().vocab_size(), 128256u);  // already a multiple
  EXPECT_EQ(l->job.num_gpus(), 8u);
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
      {base + "--seq-length 4096 --seq-length 8192", "--seq-length"},
      {base + "--seq-length 4096 --num-query-groups 8", "--num-query-groups"},
      {base + "--seq-length 4096 --group-query-attention",
       "--num-query-groups"},
      {base + "--seq-length 4096 --num-layers-per-virtual-pipeline-stage 2",
       "--num-layers-per-virtual-pipeline-stage"},
      {"torchrun --nnodes 1:4 --nproc-per-node 8 " + base +
           "--seq-length 4096",
       "--nnodes"},
      {"torchrun --nproc-per-node gpu " + base + "--seq-length 4096",
       "--nproc-per-node"},
      {"pretrain_gpt.py --num-layers 32 --hidden-size 4096 "
       "--num-attention-heads 32 --vocab-size 32000 --seq-length 4096",
       "--swiglu"},
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
    ASSERT_FALSE(l->notes.empty());
    EXPECT_NE(l->notes[0].find("vocabulary 128256"), std::string::npos);
  }
  // Unknown dimensions and tokenizer: still an error naming --vocab-size.
  absl::StatusOr<MegatronLaunch> l = ParseMegatronLaunch(
      Words("pretrain_gpt.py --num-layers 7 --hidden-size 1024 "
            "--num-attention-heads 8 --swiglu --seq-length 2048"),
      nullptr);
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.status().message().find("--vocab-size"), std::string::npos);
}

TEST(MegatronArgsTest, UnknownArgumentsAreIgnored) {
  absl::StatusOr<MegatronLaunch> l = ParseMegatronLaunch(
      Words("pretrain_gpt.py --num-layers 32 --hidden-size 4096 "
            "--num-attention-heads 32 --swiglu --vocab-size 32000 "
            "--seq-length 4096 --some-new-flag 17 --another --data-path "
            "/data/x --save /ckpt"),
      nullptr);
  EXPECT_TRUE(l.ok()) << l.status();
}

}  // namespace
}  // namespace memgate
