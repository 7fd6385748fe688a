#include "client/job_flags.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "estimator/estimate.h"
#include "gtest/gtest.h"

namespace memgate::cli {
namespace {

absl::StatusOr<v1::Job> Build(const std::vector<std::string>& args) {
  JobFlags jf;
  FlagSet flags("test");
  jf.Register(flags);
  if (absl::Status s = flags.Parse(args); !s.ok()) return s;
  return jf.ToJob();
}

TEST(JobFlagsTest, DefaultsAreOneWayParallelAndMbsOne) {
  absl::StatusOr<v1::Job> job = Build(
      {"--model=llama-3.1-8b", "--gpu=a100-40gb", "--gpus=8", "--seq=8192"});
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->parallel().tensor_parallel(), 1u);
  EXPECT_EQ(job->parallel().context_parallel(), 1u);
  EXPECT_EQ(job->parallel().pipeline_parallel(), 1u);
  EXPECT_EQ(job->training().micro_batch_size(), 1u);
  EXPECT_FALSE(job->parallel().has_sequence_parallel());  // estimator's default
  EXPECT_EQ(job->num_gpus(), 8u);
}

TEST(JobFlagsTest, DimensionsOverrideTheNamedModel) {
  absl::StatusOr<v1::Job> job =
      Build({"--model=llama-3.1-8b", "--layers=16", "--gpu-memory-gib=80",
             "--gpus=8", "--seq=4096", "--no-sequence-parallel",
             "--precision=bf16-bf16-grads"});
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->model().name(), "llama-3.1-8b");
  EXPECT_EQ(job->model().num_layers(), 16u);
  EXPECT_EQ(job->accelerator().memory_bytes(), 80ull << 30);
  EXPECT_FALSE(job->parallel().sequence_parallel());
  EXPECT_EQ(job->training().precision(), v1::PRECISION_BF16_BF16_GRADS);
}

// --fused-swiglu: Megatron's kernel, 6 bytes a unit of FFN width where the
// paper (by name, unset) counts 8: the same job holds less; on a GeLU
// model the estimator refuses it naming the flag.
TEST(JobFlagsTest, FusedSwigluIsMegatronsKernelByName) {
  const std::vector<std::string> llama = {"--model=llama-3.1-8b",
                                          "--gpu=h100-80gb", "--gpus=8",
                                          "--tp=2", "--seq=8192"};
  absl::StatusOr<v1::Job> paper = Build(llama);
  std::vector<std::string> with = llama;
  with.push_back("--fused-swiglu");
  absl::StatusOr<v1::Job> fused = Build(with);
  ASSERT_TRUE(paper.ok() && fused.ok());
  EXPECT_FALSE(paper->training().fused_swiglu());
  EXPECT_TRUE(fused->training().fused_swiglu());
  absl::StatusOr<v1::Estimate> a = EstimateJob(*paper);
  absl::StatusOr<v1::Estimate> b = EstimateJob(*fused);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_LT(b->peak().activation_bytes(), a->peak().activation_bytes());
  absl::StatusOr<v1::Job> gelu =
      Build({"--model=nemotron-4-340b", "--gpu=h100-80gb", "--gpus=8",
             "--tp=8", "--seq=4096", "--fused-swiglu"});
  ASSERT_TRUE(gelu.ok());
  absl::StatusOr<v1::Estimate> refused = EstimateJob(*gelu);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(WithFlagHint(std::string(refused.status().message()))
                .rfind("training.fused_swiglu (--fused-swiglu):", 0),
            0u)
      << refused.status();
}

// --tp-comm-overlap by name: TransformerEngine's default userbuffers on
// top of the same job; refused at TP 1 naming the flag; on a launch's own
// configuration (its YAML's upper bound) the flag keeps it, and
// --no-tp-comm-overlap turns it off.
TEST(JobFlagsTest, TpCommOverlapAddsTheUserbuffersByName) {
  const std::vector<std::string> llama = {"--model=llama-3.1-8b",
                                          "--gpu=h100-80gb", "--gpus=8",
                                          "--tp=2", "--seq=8192"};
  std::vector<std::string> with = llama;
  with.push_back("--tp-comm-overlap");
  absl::StatusOr<v1::Job> plain = Build(llama);
  absl::StatusOr<v1::Job> overlap = Build(with);
  ASSERT_TRUE(plain.ok() && overlap.ok());
  EXPECT_EQ(overlap->training().tp_comm_overlap(),
            v1::TrainingConfig::TP_COMM_OVERLAP_DEFAULT);
  absl::StatusOr<v1::Estimate> a = EstimateJob(*plain);
  absl::StatusOr<v1::Estimate> b = EstimateJob(*overlap);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_GT(b->peak().te_userbuffer_bytes(), 12 * 2.0 * 8192 * 4096);
  EXPECT_DOUBLE_EQ(b->peak().total_bytes(),
                   a->peak().total_bytes() + b->peak().te_userbuffer_bytes());

  std::vector<std::string> tp1 = with;
  tp1[3] = "--tp=1";
  absl::StatusOr<v1::Job> at_tp1 = Build(tp1);
  ASSERT_TRUE(at_tp1.ok());
  absl::StatusOr<v1::Estimate> refused = EstimateJob(*at_tp1);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(WithFlagHint(std::string(refused.status().message()))
                .rfind("training.tp_comm_overlap (--tp-comm-overlap):", 0),
            0u)
      << refused.status();

  v1::TrainingConfig t;
  t.set_tp_comm_overlap(v1::TrainingConfig::TP_COMM_OVERLAP_CUSTOM_CONFIG);
  SetTpCommOverlap(true, t);
  EXPECT_EQ(t.tp_comm_overlap(),
            v1::TrainingConfig::TP_COMM_OVERLAP_CUSTOM_CONFIG);
  SetTpCommOverlap(false, t);
  EXPECT_EQ(t.tp_comm_overlap(), v1::TrainingConfig::TP_COMM_OVERLAP_OFF);
}

TEST(JobFlagsTest, DistributedOptimizerInstancesByFlag) {
  const std::vector<std::string> llama = {
      "--model=llama-3.1-8b", "--gpu=h100-80gb", "--gpus=16", "--tp=2",
      "--seq=8192", "--distributed-optimizer-instances=4"};
  absl::StatusOr<v1::Job> job = Build(llama);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->parallel().distributed_optimizer_instances(), 4u);
  ASSERT_TRUE(EstimateJob(*job).ok()) << EstimateJob(*job).status();
  // d x c = 8 ranks: 3 instances do not divide them, named by flag.
  std::vector<std::string> three = llama;
  three.back() = "--distributed-optimizer-instances=3";
  job = Build(three);
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(WithFlagHint(std::string(EstimateJob(*job).status().message())),
            "parallel.distributed_optimizer_instances "
            "(--distributed-optimizer-instances): must divide the "
            "data-parallel ranks d x c = 8 (got 3)");
}

TEST(JobFlagsTest, ContextParallelExchangeByFlag) {
  const std::vector<std::string> llama = {
      "--model=llama-3.1-8b", "--gpu=h100-80gb", "--gpus=16", "--tp=2",
      "--cp=4", "--seq=32768"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> flags = llama;
    flags.insert(flags.end(), extra.begin(), extra.end());
    return Build(flags);
  };
  absl::StatusOr<v1::Job> job = with({"--cp-comm-type=a2a"});
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->parallel().context_parallel_comm(),
            v1::CONTEXT_PARALLEL_COMM_A2A);
  ASSERT_TRUE(EstimateJob(*job).ok()) << EstimateJob(*job).status();
  job = with({"--cp-comm-type=a2a+p2p", "--cp-a2a-size=2"});
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->parallel().context_parallel_a2a_size(), 2u);
  ASSERT_TRUE(EstimateJob(*job).ok()) << EstimateJob(*job).status();
  // TP 2 leaves 4 key heads a rank, which CP 8 does not split: named by
  // flag.
  job = Build({"--model=llama-3.1-8b", "--gpu=h100-80gb", "--gpus=16",
               "--tp=2", "--cp=8", "--seq=32768", "--cp-comm-type=a2a"});
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(WithFlagHint(std::string(EstimateJob(*job).status().message()))
                .rfind("parallel.context_parallel_comm (--cp-comm-type):", 0),
            0u)
      << EstimateJob(*job).status();
  for (const std::vector<std::string>& bad :
       std::vector<std::vector<std::string>>{
           {"--cp-comm-type=allgather"},
           {"--cp-comm-type=a2a+p2p"},
           {"--cp-comm-type=a2a", "--cp-a2a-size=2"},
           {"--cp-a2a-size=2"}}) {
    job = with(bad);
    ASSERT_FALSE(job.ok()) << bad[0];
    EXPECT_NE(job.status().message().find("--cp-"), std::string::npos)
        << job.status();
  }
}

// --attention names the kernel: flash, fused (cuDNN's alone), unfused
// (TransformerEngine's) or local (Megatron's own), in any case; anything else is refused naming the
// flag, its echo bounded. A kernel the job cannot run is refused by
// validation, named by flag (FLASH in fp32).
TEST(JobFlagsTest, AttentionKernelByFlag) {
  const std::vector<std::string> llama = {"--model=llama-3.1-8b",
                                          "--gpu=h100-80gb", "--gpus=8",
                                          "--tp=8", "--seq=8192"};
  const std::pair<const char*, v1::AttentionKernel> kernels[] = {
      {"flash", v1::ATTENTION_KERNEL_FLASH},
      {"Fused", v1::ATTENTION_KERNEL_FLASH},
      {"Unfused", v1::ATTENTION_KERNEL_UNFUSED},
      {"LOCAL", v1::ATTENTION_KERNEL_LOCAL}};
  for (const auto& [name, kernel] : kernels) {
    std::vector<std::string> flags = llama;
    flags.push_back(std::string("--attention=") + name);
    absl::StatusOr<v1::Job> job = Build(flags);
    ASSERT_TRUE(job.ok()) << name << ": " << job.status();
    EXPECT_EQ(job->training().attention_kernel(), kernel) << name;
    // fused: cuDNN's alone (FlashAttention off), which trains Llama's
    // heads on an H100: the flash estimate.
    EXPECT_EQ(job->training().flash_attention_disabled(),
              std::string(name) == "Fused")
        << name;
    EXPECT_TRUE(EstimateJob(*job).ok()) << name;
  }
  std::vector<std::string> bad = llama;
  bad.push_back("--attention=" + std::string(4096, 's'));
  absl::StatusOr<v1::Job> job = Build(bad);
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().message().rfind("--attention: must be flash, "
                                         "fused, unfused or local",
                                         0),
            0u);
  EXPECT_LT(job.status().message().size(), 120u);
  // Megatron's own attention, its softmax in fp32 past its kernel: more
  // kept at 8k than without the flag.
  std::vector<std::string> local = llama;
  local.push_back("--attention=local");
  absl::StatusOr<v1::Estimate> bf16_softmax = EstimateJob(*Build(local));
  local.push_back("--attention-softmax-in-fp32");
  job = Build(local);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_TRUE(job->training().attention_softmax_in_fp32());
  // local is --transformer-impl local: its layer spec with it.
  EXPECT_TRUE(job->training().local_layer_spec());
  absl::StatusOr<v1::Estimate> fp32_softmax = EstimateJob(*job);
  ASSERT_TRUE(bf16_softmax.ok() && fp32_softmax.ok());
  EXPECT_GT(fp32_softmax->peak().activation_bytes(),
            bf16_softmax->peak().activation_bytes());
  std::vector<std::string> fp32 = llama;
  fp32.insert(fp32.end(), {"--attention=flash", "--precision=fp32"});
  job = Build(fp32);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(WithFlagHint(std::string(EstimateJob(*job).status().message()))
                .rfind("training.attention_kernel (--attention):", 0),
            0u)
      << EstimateJob(*job).status();
}

// A launch that runs Megatron's local attention inside TransformerEngine's
// layers (--attention-backend local) keeps TE's spec when the flag agrees
// with it; without such a launch, --attention=local is the local spec.
TEST(JobFlagsTest, AgreeingLocalAttentionKeepsTheLaunchsSpec) {
  JobFlags jf;
  FlagSet flags("test");
  jf.Register(flags);
  ASSERT_TRUE(flags.Parse({"--attention=local"}).ok());
  v1::Job te_layers;
  te_layers.mutable_training()->set_attention_kernel(
      v1::ATTENTION_KERNEL_LOCAL);
  ASSERT_TRUE(jf.ApplyTo(te_layers, /*refuse_conflicts=*/true).ok());
  EXPECT_FALSE(te_layers.training().local_layer_spec());
  v1::Job unset;
  ASSERT_TRUE(jf.ApplyTo(unset, /*refuse_conflicts=*/false).ok());
  EXPECT_TRUE(unset.training().local_layer_spec());
}

// Recomputation and interleaving had no flags: a refusal's "fits with
// recomputation" or "interleaved x16" could only be checked with a job
// file or a launch. --recompute, --recompute-method, --recompute-layers,
// --recompute-modules and --vp say them; the same job holds less with
// them; misuse is named.
TEST(JobFlagsTest, RecomputationAndInterleavingByFlag) {
  const std::vector<std::string> llama = {"--model=llama-3.1-8b",
                                          "--gpu=a100-40gb", "--gpus=8",
                                          "--tp=4", "--pp=2", "--mbs=2",
                                          "--seq=8192"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = llama;
    args.insert(args.end(), extra.begin(), extra.end());
    return Build(args);
  };
  absl::StatusOr<v1::Job> plain = Build(llama);
  absl::StatusOr<v1::Job> full = with(
      {"--recompute=full", "--recompute-method=block", "--recompute-layers=8"});
  ASSERT_TRUE(plain.ok() && full.ok()) << full.status();
  EXPECT_EQ(full->training().recompute().granularity(),
            v1::Recompute::GRANULARITY_FULL);
  EXPECT_EQ(full->training().recompute().method(),
            v1::Recompute::METHOD_BLOCK);
  EXPECT_EQ(full->training().recompute().num_layers(), 8u);
  absl::StatusOr<v1::Estimate> a = EstimateJob(*plain);
  absl::StatusOr<v1::Estimate> b = EstimateJob(*full);
  ASSERT_TRUE(a.ok() && b.ok()) << b.status();
  EXPECT_LT(b->peak().activation_bytes(), a->peak().activation_bytes());

  absl::StatusOr<v1::Job> selective = with(
      {"--recompute=selective", "--recompute-modules=mlp, layernorm,mlp"});
  ASSERT_TRUE(selective.ok()) << selective.status();
  ASSERT_EQ(selective->training().recompute().modules_size(), 2);
  EXPECT_EQ(selective->training().recompute().modules(0),
            v1::Recompute::MODULE_MLP);
  EXPECT_EQ(selective->training().recompute().modules(1),
            v1::Recompute::MODULE_LAYERNORM);

  absl::StatusOr<v1::Job> interleaved = with({"--vp=4", "--gbs=64"});
  ASSERT_TRUE(interleaved.ok()) << interleaved.status();
  EXPECT_EQ(interleaved->parallel().virtual_pipeline_stages(), 4u);
  absl::StatusOr<v1::Estimate> c = EstimateJob(*interleaved);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_NE(c->peak().activation_bytes(), a->peak().activation_bytes());

  for (const auto& [extra, message] :
       std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--recompute=partial"}, "--recompute: must be none"},
           {{"--recompute-layers=2"}, "need --recompute=full or selective"},
           {{"--recompute=selective", "--recompute-layers=2"},
            "with --recompute=full only"},
           {{"--recompute=full", "--recompute-modules=mlp"},
            "with --recompute=selective only"},
           {{"--recompute=full", "--recompute-method=half"},
            "--recompute-method: must be uniform or block"},
           {{"--recompute=selective", "--recompute-modules=mlp,bogus"},
            "'bogus' is not one of"},
       }) {
    absl::StatusOr<v1::Job> bad = with(extra);
    ASSERT_FALSE(bad.ok()) << extra.back();
    EXPECT_NE(bad.status().message().find(message), std::string::npos)
        << bad.status();
  }
  // Beside a launch that says its own, a different setting contradicts it.
  JobFlags jf;
  FlagSet flags("test");
  jf.Register(flags);
  ASSERT_TRUE(flags.Parse({"--recompute=full", "--recompute-method=uniform",
                           "--recompute-layers=1"})
                  .ok());
  v1::Job launch;
  v1::Recompute& r = *launch.mutable_training()->mutable_recompute();
  r.set_granularity(v1::Recompute::GRANULARITY_FULL);
  r.set_method(v1::Recompute::METHOD_BLOCK);
  r.set_num_layers(4);
  absl::Status conflict = jf.ApplyTo(launch, /*refuse_conflicts=*/true);
  EXPECT_NE(conflict.message().find("contradicts the launch command"),
            std::string::npos)
      << conflict;
  r.set_method(v1::Recompute::METHOD_UNIFORM);
  r.set_num_layers(1);
  EXPECT_TRUE(jf.ApplyTo(launch, /*refuse_conflicts=*/true).ok());
}

// Beside a launch, which sets each of them (as given or by Megatron's
// default), a switch, --precision or the embedding's tying (the launch
// below unties it) that says otherwise is an error
// naming the launch's argument: the estimate would be of a job the launch
// does not run (an SP or fused-SwiGLU estimate of a launch without them
// holds less). One that agrees is taken; a job file's are overridden.
TEST(JobFlagsTest, SwitchesMayOnlyAgreeWithALaunch) {
  v1::Job launch;
  launch.mutable_parallel()->set_sequence_parallel(true);
  launch.mutable_parallel()->set_distributed_optimizer(false);
  launch.mutable_training()->set_fused_swiglu(true);
  launch.mutable_training()->set_precision(v1::PRECISION_BF16_FP32_GRADS);
  const struct {
    std::string flag, error;
  } cases[] = {
      {"--no-sequence-parallel",
       "--no-sequence-parallel contradicts the launch command, which gives "
       "--sequence-parallel"},
      {"--distributed-optimizer",
       "--distributed-optimizer contradicts the launch command, which does "
       "not give --use-distributed-optimizer"},
      {"--no-fused-swiglu",
       "--no-fused-swiglu contradicts the launch command, which gives "
       "--swiglu with Megatron's fused kernel"},
      {"--tp-comm-overlap",
       "--tp-comm-overlap contradicts the launch command, which does not "
       "give --tp-comm-overlap"},
      {"--precision=fp32",
       "--precision=fp32 contradicts the launch command, which trains in "
       "bf16 (--bf16)"},
      {"--tie-embeddings",
       "--tie-embeddings contradicts the launch command, which runs its "
       "embedding and output layer untied"},
  };
  for (const auto& c : cases) {
    JobFlags jf;
    FlagSet flags("test");
    jf.Register(flags);
    ASSERT_TRUE(flags.Parse({c.flag}).ok()) << c.flag;
    v1::Job job = launch;
    const absl::Status conflict = jf.ApplyTo(job, /*refuse_conflicts=*/true);
    EXPECT_EQ(conflict.code(), absl::StatusCode::kInvalidArgument) << c.flag;
    EXPECT_EQ(conflict.message().rfind(c.error, 0), 0u) << conflict;
    // A job file's setting is replaced.
    job = launch;
    EXPECT_TRUE(jf.ApplyTo(job, /*refuse_conflicts=*/false).ok()) << c.flag;
  }
  JobFlags agreeing;
  FlagSet flags("test");
  agreeing.Register(flags);
  ASSERT_TRUE(flags.Parse({"--sequence-parallel", "--no-distributed-optimizer",
                           "--fused-swiglu", "--no-tp-comm-overlap",
                           "--precision=bf16", "--no-tie-embeddings"})
                  .ok());
  v1::Job job = launch;
  EXPECT_TRUE(agreeing.ApplyTo(job, /*refuse_conflicts=*/true).ok());
  EXPECT_TRUE(job.parallel().sequence_parallel());
  EXPECT_FALSE(job.parallel().distributed_optimizer());
  EXPECT_TRUE(job.training().fused_swiglu());
  EXPECT_EQ(job.training().tp_comm_overlap(),
            v1::TrainingConfig::TP_COMM_OVERLAP_OFF);
  EXPECT_EQ(job.training().precision(), v1::PRECISION_BF16_FP32_GRADS);
  EXPECT_FALSE(job.model().tie_word_embeddings());
}

TEST(JobFlagsTest, MissingRequiredFlagsAreNamed) {
  absl::StatusOr<v1::Job> job =
      Build({"--model=llama-3.1-8b", "--gpu=a100-40gb", "--seq=8192"});
  ASSERT_FALSE(job.ok());
  EXPECT_NE(job.status().message().find("--gpus"), std::string::npos);
}

// A model given by its dimensions alone names each one left out as
// missing (it read "must be at least 1 (got 0)" for a value never given);
// all six given, it builds.
TEST(JobFlagsTest, AModelByDimensionsNamesTheDimensionsLeftOut) {
  const std::vector<std::string> all = {
      "--layers=32", "--hidden=4096", "--ffn-hidden=14336", "--heads=32",
      "--kv-heads=8", "--vocab=128256", "--gpu=h100-80gb", "--gpus=8",
      "--seq=8192"};
  ASSERT_TRUE(Build(all).ok()) << Build(all).status();
  for (size_t left_out = 0; left_out < 6; ++left_out) {
    std::vector<std::string> args = all;
    const std::string flag = args[left_out].substr(0, args[left_out].find('='));
    args.erase(args.begin() + left_out);
    absl::StatusOr<v1::Job> job = Build(args);
    ASSERT_FALSE(job.ok()) << flag;
    EXPECT_EQ(job.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(absl::StartsWith(job.status().message(), flag + ": required"))
        << job.status();
  }
  // A named model fills what its dimensions leave out.
  EXPECT_TRUE(Build({"--model=llama-3.1-8b", "--layers=16", "--gpu=h100-80gb",
                     "--gpus=8", "--seq=8192"})
                  .ok());
}

TEST(JobFlagsTest, FlagHintsForEstimatorFields) {
  EXPECT_EQ(WithFlagHint("parallel.tensor_parallel: must be at least 1"),
            "parallel.tensor_parallel (--tp): must be at least 1");
  EXPECT_EQ(WithFlagHint("num_gpus: x"), "num_gpus (--gpus): x");
  EXPECT_EQ(WithFlagHint("something else"), "something else");
  // A launch's job names the launch's argument, the CLI's flag otherwise.
  EXPECT_EQ(WithLaunchHint("training.recompute.num_layers: x"),
            "training.recompute.num_layers (--recompute-num-layers): x");
  EXPECT_EQ(WithFlagHint("training.recompute.num_layers: x"),
            "training.recompute.num_layers (--recompute-layers): x");
  EXPECT_EQ(WithLaunchHint("training.recompute: x"),
            "training.recompute (--recompute-granularity): x");
  EXPECT_EQ(WithLaunchHint("accelerator.name: x"),
            "accelerator.name (--gpu): x");
  EXPECT_EQ(WithLaunchHint("training.attention_kernel: x"),
            "training.attention_kernel (--attention-backend): x");
  EXPECT_EQ(WithLaunchHint("parallel.virtual_pipeline_stages: x"),
            "parallel.virtual_pipeline_stages "
            "(--num-layers-per-virtual-pipeline-stage or "
            "--num-virtual-stages-per-pipeline-rank): x");
}

// A model read from --model-config is named by the config's keys, which
// the user wrote (not by --heads, which the user did not give); a flag
// that overrides a key keeps its own name.
TEST(JobFlagsTest, AConfigsModelIsNamedByTheConfigsKeys) {
  JobFlags from_file;
  from_file.model_config = "config.json";
  const std::string heads =
      "model.num_attention_heads: must be a multiple of "
      "model.num_query_groups = 5 (got 32)";
  EXPECT_EQ(from_file.WithHint(heads),
            "model.num_attention_heads (num_attention_heads in config.json): "
            "must be a multiple of model.num_query_groups "
            "(num_key_value_heads) = 5 (got 32)");
  // Fields the file does not give keep their flags; a longer field name
  // that starts like a key's field is not that field.
  EXPECT_EQ(from_file.WithHint("parallel.tensor_parallel: must divide "
                               "model.num_query_groups = 8"),
            "parallel.tensor_parallel (--tp): must divide "
            "model.num_query_groups (num_key_value_heads) = 8");
  EXPECT_EQ(from_file.WithHint("model.vocab_size_divisible_by: x"),
            "model.vocab_size_divisible_by: x");
  JobFlags overridden = from_file;
  overridden.heads = 7;
  EXPECT_EQ(overridden.WithHint(heads),
            "model.num_attention_heads (--heads): must be a multiple of "
            "model.num_query_groups (num_key_value_heads) = 5 (got 32)");
  // Without a config: WithFlagHint.
  EXPECT_EQ(JobFlags().WithHint(heads), WithFlagHint(heads));

  // A launch's job: the config names what the launch leaves it to fill,
  // the launch's argument what the launch gives (either spelling).
  const std::vector<std::string> without_heads = {
      "pretrain_gpt.py", "--num-layers", "32", "--seq-length", "8192"};
  EXPECT_EQ(from_file.WithHint(heads, without_heads),
            "model.num_attention_heads (num_attention_heads in config.json): "
            "must be a multiple of model.num_query_groups "
            "(num_key_value_heads) = 5 (got 32)");
  for (const std::vector<std::string>& launch :
       {std::vector<std::string>{"pretrain_gpt.py", "--num-attention-heads",
                                 "32"},
        std::vector<std::string>{"pretrain_gpt.py",
                                 "--num-attention-heads=32"}}) {
    EXPECT_EQ(from_file.WithHint(heads, launch),
              "model.num_attention_heads (--num-attention-heads): must be a "
              "multiple of model.num_query_groups (num_key_value_heads) = 5 "
              "(got 32)");
  }
  EXPECT_EQ(from_file.WithHint("model.num_layers: x", without_heads),
            "model.num_layers (--num-layers): x");
  // A field no config key gives: the launch's argument, as without one.
  EXPECT_EQ(from_file.WithHint("training.recompute.num_layers: x",
                               without_heads),
            WithLaunchHint("training.recompute.num_layers: x"));
  EXPECT_EQ(JobFlags().WithHint(heads, without_heads), WithLaunchHint(heads));
}

// A model whose layers do not divide over PP (DeepSeek-V3's 61 over 8) has
// no flag for uneven stages: the error says where they come from.
TEST(JobFlagsTest, UnevenStagesPointToTheLaunch) {
  absl::StatusOr<v1::Job> job =
      Build({"--model=deepseek-v3", "--gpu=h100-80gb", "--gpus=1024",
             "--tp=2", "--pp=8", "--ep=64", "--seq=4096"});
  ASSERT_TRUE(job.ok()) << job.status();
  absl::StatusOr<v1::Estimate> estimate = EstimateJob(*job);
  ASSERT_FALSE(estimate.ok());
  const std::string message =
      WithFlagHint(std::string(estimate.status().message()));
  EXPECT_EQ(message.rfind("model.num_layers (--layers): must be a multiple "
                          "of parallel.pipeline_parallel = 8 for even stages "
                          "(got 61; uneven stages: give "
                          "parallel.layers_per_stage)",
                          0),
            0u)
      << message;
  EXPECT_NE(message.find("give them with --pipeline-layout"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("--decoder-first-pipeline-num-layers"),
            std::string::npos);
  EXPECT_NE(message.find("memgate plan --format=megatron-args"),
            std::string::npos);
  EXPECT_EQ(message.find('\n'), std::string::npos);  // errors are one line
}

// --pipeline-layout says uneven stages by name, in Megatron's layout
// syntax, against the catalog model's layers and MTP layers: Llama-3.1-
// 405B's 126 layers over 16 stages one short at either end, the same over
// 16 x 4 chunks in the accounted form, DeepSeek-V3's NVIDIA layout with
// its MTP layer beside the loss. Each job estimates; a layout that holds
// another layer count, contradicts --vp, or has no model to count against
// is refused naming the flag.
TEST(JobFlagsTest, ThePipelineLayoutFlagSaysUnevenStagesByName) {
  const std::vector<std::string> llama = {
      "--model=llama-3.1-405b", "--gpu=h100-80gb", "--gpus=8192",
      "--tp=8", "--pp=16", "--seq=8192"};
  auto with = [](std::vector<std::string> args, const std::string& more) {
    args.push_back(more);
    return args;
  };
  absl::StatusOr<v1::Job> plain =
      Build(with(llama, "--pipeline-layout=Et*7|(t*8|)*14t*7L"));
  ASSERT_TRUE(plain.ok()) << plain.status();
  std::vector<uint32_t> expected(16, 8);
  expected.front() = expected.back() = 7;
  EXPECT_EQ(std::vector<uint32_t>(plain->parallel().layers_per_stage().begin(),
                                  plain->parallel().layers_per_stage().end()),
            expected);
  EXPECT_EQ(plain->parallel().virtual_pipeline_stages(), 0u);
  EXPECT_TRUE(EstimateJob(*plain).ok());

  absl::StatusOr<v1::Job> chunks =
      Build(with(llama, "--pipeline-layout=Et|(tt|)*62tL"));
  ASSERT_TRUE(chunks.ok()) << chunks.status();
  EXPECT_EQ(chunks->parallel().virtual_pipeline_stages(), 4u);
  ASSERT_EQ(chunks->parallel().layers_per_stage_size(), 64);
  EXPECT_EQ(chunks->parallel().layers_per_stage(0), 1u);
  EXPECT_EQ(chunks->parallel().layers_per_stage(1), 2u);
  EXPECT_EQ(chunks->parallel().layers_per_stage(63), 1u);
  EXPECT_TRUE(EstimateJob(*chunks).ok());
  std::vector<std::string> agreeing = with(llama, "--vp=4");
  EXPECT_TRUE(Build(with(agreeing, "--pipeline-layout=Et|(tt|)*62tL")).ok());

  absl::StatusOr<v1::Job> deepseek = Build(
      {"--model=deepseek-v3", "--gpu=h100-80gb", "--gpus=1024", "--tp=2",
       "--pp=8", "--ep=64", "--seq=4096", "--pipeline-layout=Et|(tt|)*30mL"});
  ASSERT_TRUE(deepseek.ok()) << deepseek.status();
  EXPECT_TRUE(EstimateJob(*deepseek).ok());
  EXPECT_FALSE(deepseek->parallel().has_mtp_pipeline_rank());
  // Megatron's own DeepSeek-V3 example, its MTP layer standalone in rank
  // 14's last chunk.
  absl::StatusOr<v1::Job> standalone = Build(
      {"--model=deepseek-v3", "--gpu=h100-80gb", "--gpus=1024", "--tp=2",
       "--pp=16", "--ep=32", "--seq=4096",
       "--pipeline-layout=Et*3|(tt|)*29,m|L"});
  ASSERT_TRUE(standalone.ok()) << standalone.status();
  EXPECT_EQ(standalone->parallel().mtp_pipeline_rank(), 14u);
  EXPECT_TRUE(EstimateJob(*standalone).ok());

  auto refusal = [&](const std::vector<std::string>& args) {
    absl::StatusOr<v1::Job> job = Build(args);
    return job.ok() ? std::string() : std::string(job.status().message());
  };
  EXPECT_EQ(refusal(with(llama, "--pipeline-layout=Et|(tt|)*61tL"))
                .rfind("--pipeline-layout: ", 0),
            0u);
  std::vector<std::string> no_pp = llama;
  no_pp.erase(std::find(no_pp.begin(), no_pp.end(), "--pp=16"));
  EXPECT_NE(refusal(with(no_pp, "--pipeline-layout=Et*7|(t*8|)*14t*7L"))
                .find("its 16 stages need --pp"),
            std::string::npos);
  EXPECT_NE(refusal(with(with(llama, "--vp=2"),
                         "--pipeline-layout=Et|(tt|)*62tL"))
                .find("4 chunks a rank, --vp says 2"),
            std::string::npos);
  // DeepSeek-V3's MTP layer must be in the layout, as Megatron counts it.
  EXPECT_EQ(refusal({"--model=deepseek-v3", "--gpu=h100-80gb", "--gpus=1024",
                     "--tp=2", "--pp=8", "--ep=64", "--seq=4096",
                     "--pipeline-layout=Et|(tt|)*30tL"})
                .rfind("--pipeline-layout: ", 0),
            0u);
  EXPECT_EQ(refusal({"--hidden=4096", "--ffn-hidden=11008", "--heads=32",
                     "--kv-heads=32", "--vocab=32000", "--gpu=h100-80gb",
                     "--gpus=8", "--pp=2", "--seq=4096",
                     "--pipeline-layout=Et|tL"})
                .rfind("--layers: required", 0),
            0u);

  // A launch says its own split (ApplyTo with refuse_conflicts).
  JobFlags jf;
  jf.pipeline_layout = "Et*7|(t*8|)*14t*7L";
  v1::Job launch = *plain;
  EXPECT_NE(std::string(jf.ApplyTo(launch, /*refuse_conflicts=*/true)
                            .message())
                .find("put Megatron's --pipeline-model-parallel-layout in "
                      "the launch"),
            std::string::npos);
}

}  // namespace
}  // namespace memgate::cli
