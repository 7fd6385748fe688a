// Model states and fp8 beyond the paper's setting: the precision-aware
// optimizer, optimizer CPU offload, Megatron-FSDP's sharding strategies and
// TransformerEngine fp8. Each expectation is written out from the equation
// and its source (memory_model.cc [PA], [MF], [TE]) on the small model of
// memory_terms_test.cc:
//   L = 2, h = 1024, h_ffn = 4096, a = k = 8, v = 32000 (untied),
//   s = 1024, b = 1, one pipeline stage, t = c = 1, d = 4.
// Parameters: a layer 2h^2(1 + k/a) + 3h*h_ffn + 2h = 16,779,264, of which
// the four GEMMs' weights are 4h^2 + 3h*h_ffn = 16,777,216; the embedding
// and the LM head 32,768,000 each; the final norm 1024.

#include "estimator/memory_model.h"
#include "estimator/validation.h"
#include "gtest/gtest.h"

namespace memgate {
namespace {

constexpr double kLayer = 16779264;
constexpr double kLayerGemms = 16777216;
constexpr double kVocabMatrix = 1024.0 * 32000;
constexpr double kParams = 2 * kLayer + 2 * kVocabMatrix + 1024;
constexpr double kSbh = 1024.0 * 1024;
// [DS] Under the delayed recipe each of the 2 layers' 4 GEMMs (QKV, the
// output projection, FC1, FC2) keeps 5 quantizers (3 forward, 2
// backward), each an amax history of Megatron's default 1 row and a
// scale: 8 B.
constexpr double kDelayedScalingState = 2 * 4 * 5 * 8;

v1::Job SmallJob() {
  v1::Job job;
  v1::ModelConfig& m = *job.mutable_model();
  m.set_num_layers(2);
  m.set_hidden_size(1024);
  m.set_ffn_hidden_size(4096);
  m.set_num_attention_heads(8);
  m.set_num_query_groups(8);
  m.set_vocab_size(32000);
  v1::ParallelConfig& p = *job.mutable_parallel();
  p.set_tensor_parallel(1);
  p.set_pipeline_parallel(1);
  p.set_context_parallel(1);
  p.set_sequence_parallel(false);
  p.set_distributed_optimizer(true);
  v1::TrainingConfig& t = *job.mutable_training();
  t.set_micro_batch_size(1);
  t.set_seq_length(1024);
  t.set_precision(v1::PRECISION_BF16_FP32_GRADS);
  job.set_num_gpus(4);
  job.mutable_accelerator()->set_memory_bytes(80ull << 30);
  return job;
}

StageFigures Figures(const v1::Job& job) {
  EXPECT_TRUE(ValidateJob(job).ok()) << ValidateJob(job);
  return StageMemoryOf(ShapeOf(job.model()), LayoutOf(job), 0, 2);
}

// The gradient and parameter buffers' elements under the distributed
// optimizer: SmallJob's parameters and the padding it lays out beside them
// (memory_model.cc [BP], asserted by
// TheDistributedOptimizerPadsItsBuckets).
double BufferElements() {
  return kParams + Figures(SmallJob()).padding_elements;
}

TEST(ModelStatesTest, BaselineIsTheDistributedOptimizersSixPlusTwelveOverD) {
  const StageFigures f = Figures(SmallJob());
  EXPECT_DOUBLE_EQ(f.weight_bytes, 2 * BufferElements());
  EXPECT_DOUBLE_EQ(f.gradient_bytes, 4 * BufferElements());
  EXPECT_DOUBLE_EQ(f.optimizer_bytes, 12 * kParams / 4);
}

// [BP] The distributed optimizer lays the gradient and parameter buffers
// out with padding: each tensor's start on a multiple of 64 elements, each
// bucket's end on a multiple of lcm(DP, 128) (lcm(DP, 128, 2^16) with
// --ddp-pad-buckets-for-high-nccl-busbw); the one stage's only chunk is
// cut into buckets of 4e7 elements (as --overlap-grad-reduce does; one
// bucket without it, counted as with it). SmallJob: 99,140,608
// parameters, at most 66 tensors (8 beside the layers, 29 a dense layer),
// DP 4: 3 buckets.
TEST(ModelStatesTest, TheDistributedOptimizerPadsItsBuckets) {
  auto padding = [](const v1::Job& job) {
    return Figures(job).padding_elements;
  };
  v1::Job job = SmallJob();
  const double tensors = 63 * 66.0;
  EXPECT_DOUBLE_EQ(padding(job), tensors + 3 * 127);
  const StageFigures f = Figures(job);
  EXPECT_DOUBLE_EQ(f.weight_bytes, 2 * (kParams + f.padding_elements));
  EXPECT_DOUBLE_EQ(f.gradient_bytes, 4 * (kParams + f.padding_elements));

  // Buckets of 10^7 elements: 10. Of 10^6: each of the 11 large tensors
  // (8 GEMM weights, the embedding and LM head, 3 counted beside the
  // layers) closes one at most, the norms' 5,120 elements none: 12 (as
  // Megatron cuts them). Of one element: one a tensor, and one more.
  v1::ParallelConfig& p = *job.mutable_parallel();
  p.set_ddp_bucket_size(10000000);
  EXPECT_DOUBLE_EQ(padding(job), tensors + 10 * 127);
  p.set_ddp_bucket_size(1000000);
  EXPECT_DOUBLE_EQ(padding(job), tensors + 12 * 127);
  p.set_ddp_bucket_size(1);
  EXPECT_DOUBLE_EQ(padding(job), tensors + 67 * 127);
  // --ddp-num-buckets 4: buckets of a quarter of the rank's parameters.
  p.set_ddp_bucket_size(0);
  p.set_ddp_num_buckets(4);
  EXPECT_DOUBLE_EQ(padding(job), tensors + 5 * 127);
  p.set_ddp_num_buckets(0);

  // 2^16 with the NCCL padding; DP 3: lcm(3, 128) = 384, and with the
  // NCCL padding 3 x 2^16.
  p.set_pad_buckets_for_high_nccl_busbw(true);
  EXPECT_DOUBLE_EQ(padding(job), tensors + 3 * 65535.0);
  job.set_num_gpus(3);
  EXPECT_DOUBLE_EQ(padding(job), tensors + 3 * (3 * 65536.0 - 1));
  p.set_pad_buckets_for_high_nccl_busbw(false);
  EXPECT_DOUBLE_EQ(padding(job), tensors + 3 * 383);

  // Without the distributed optimizer, none (param_and_grad_buffer.py).
  p.set_distributed_optimizer(false);
  EXPECT_DOUBLE_EQ(padding(job), 0);
}

// [PA] bf16 main gradients 2 B; the fp32 master of a bf16 weight kept as an
// int16 remainder, 2 B; Adam m in bf16 (2 B) and v in fp8 (1 B).
TEST(ModelStatesTest, PrecisionAwareOptimizerStoresTheChosenDtypes) {
  v1::Job job = SmallJob();
  v1::PrecisionAwareOptimizer& pa =
      *job.mutable_training()->mutable_precision_aware_optimizer();
  pa.set_main_grads_dtype(v1::DTYPE_BF16);
  pa.set_exp_avg_dtype(v1::DTYPE_BF16);
  pa.set_exp_avg_sq_dtype(v1::DTYPE_FP8);
  StageFigures f = Figures(job);
  EXPECT_DOUBLE_EQ(f.gradient_bytes, 2 * BufferElements());
  EXPECT_DOUBLE_EQ(f.optimizer_bytes, (2 + 2 + 1) * kParams / 4);

  pa.set_store_param_remainders(false);  // a full fp32 master: 4 B
  EXPECT_DOUBLE_EQ(Figures(job).optimizer_bytes, (4 + 2 + 1) * kParams / 4);
  pa.set_main_params_dtype(v1::DTYPE_FP16);  // fp16 master: 2 B
  EXPECT_DOUBLE_EQ(Figures(job).optimizer_bytes, (2 + 2 + 1) * kParams / 4);

  // Every dtype left at Megatron's default: fp32 gradients, the 2-byte
  // remainder, fp32 m and v.
  v1::Job defaults = SmallJob();
  defaults.mutable_training()->mutable_precision_aware_optimizer();
  f = Figures(defaults);
  EXPECT_DOUBLE_EQ(f.gradient_bytes, 4 * BufferElements());
  EXPECT_DOUBLE_EQ(f.optimizer_bytes, (2 + 4 + 4) * kParams / 4);
}

// Megatron's DDP with --ddp-param-name-patterns-for-fp32-local-accumulation
// (param_and_grad_buffer.py extra_main_grads): an fp32 gradient of every
// parameter beside the 2-byte buffer, un-sharded, 2 + 4 B; fp32 training
// gets the fp32 tensor beside its fp32 buffer, 4 + 4 B. The optimizer is
// unchanged.
TEST(ModelStatesTest, Fp32LocalAccumulationAddsAnFp32GradientAParameter) {
  v1::Job job = SmallJob();
  job.mutable_training()->set_precision(v1::PRECISION_BF16_BF16_GRADS);
  const StageFigures plain = Figures(job);
  EXPECT_DOUBLE_EQ(plain.gradient_bytes, 2 * BufferElements());
  job.mutable_training()->set_fp32_local_grad_accumulation(true);
  const StageFigures local = Figures(job);
  EXPECT_DOUBLE_EQ(local.gradient_bytes, 2 * BufferElements() + 4 * kParams);
  EXPECT_DOUBLE_EQ(local.optimizer_bytes, plain.optimizer_bytes);
  job.mutable_training()->set_precision(v1::PRECISION_FP32);
  EXPECT_DOUBLE_EQ(Figures(job).gradient_bytes,
                   4 * BufferElements() + 4 * kParams);
}

// [PA] the hybrid optimizer moves the first 25% of the rank's parameters'
// optimizer to the host; what stays keeps a full fp32 copy (no remainder).
TEST(ModelStatesTest, OffloadedOptimizerShareLeavesTheGpu) {
  v1::Job job = SmallJob();
  job.mutable_training()->mutable_precision_aware_optimizer();
  job.mutable_training()->set_optimizer_offload_fraction(0.25);
  EXPECT_DOUBLE_EQ(Figures(job).optimizer_bytes,
                   (4 + 4 + 4) * kParams / 4 * 0.75);
  job.mutable_training()->set_optimizer_offload_fraction(1);
  EXPECT_DOUBLE_EQ(Figures(job).optimizer_bytes, 0);
}

// [DO] N distributed-optimizer instances: each holds the whole optimizer
// sharded over its d*c/N ranks, so a GPU holds N times the d*c share;
// weights and gradients (reduce-scattered in an instance, all-reduced
// across) are unchanged.
TEST(ModelStatesTest, DistributedOptimizerInstancesShardOverTheirOwnRanks) {
  v1::Job job = SmallJob();
  const StageFigures one = Figures(job);
  job.mutable_parallel()->set_distributed_optimizer_instances(2);
  const StageFigures two = Figures(job);
  EXPECT_DOUBLE_EQ(two.optimizer_bytes, 12 * kParams / 2);
  EXPECT_DOUBLE_EQ(two.weight_bytes, one.weight_bytes);
  EXPECT_DOUBLE_EQ(two.gradient_bytes, one.gradient_bytes);
  job.mutable_parallel()->set_distributed_optimizer_instances(4);
  EXPECT_DOUBLE_EQ(Figures(job).optimizer_bytes, 12 * kParams);
  // 1 is one instance, as unset.
  job.mutable_parallel()->set_distributed_optimizer_instances(1);
  EXPECT_DOUBLE_EQ(Figures(job).optimizer_bytes, one.optimizer_bytes);
  // With the CPU offload, the instance's share leaves the GPU as before.
  job.mutable_parallel()->set_distributed_optimizer_instances(2);
  job.mutable_training()->mutable_precision_aware_optimizer();
  job.mutable_training()->set_optimizer_offload_fraction(0.5);
  EXPECT_DOUBLE_EQ(Figures(job).optimizer_bytes, 12 * kParams / 2 * 0.5);
}

// [RSA] the fp32-accumulating reduce-scatter's scratch: a copy of the
// stage's whole gradient buffer from the last micro-batch's backward on.
// One stage holds one micro-batch, so nothing is outlived: all of it
// counts, in the buffer's dtype (2 B with bf16 gradients, 4 B in fp32
// training). Megatron runs it only where gradients are reduced in 16 bits
// or fp32 training's own dtype, and only for the distributed optimizer.
TEST(ModelStatesTest, Fp32AccumulatingReduceScatterHoldsAGradientCopy) {
  v1::Job job = SmallJob();
  job.mutable_training()->set_precision(v1::PRECISION_BF16_BF16_GRADS);
  const StageFigures plain = Figures(job);
  job.mutable_training()->set_reduce_scatter_fp32_accumulation(true);
  StageFigures f = Figures(job);
  EXPECT_DOUBLE_EQ(f.gradient_scratch_bytes, 2 * BufferElements());
  EXPECT_DOUBLE_EQ(f.total_bytes(),
                   plain.total_bytes() + 2 * BufferElements());
  job.mutable_training()->set_precision(v1::PRECISION_FP32);
  EXPECT_DOUBLE_EQ(Figures(job).gradient_scratch_bytes,
                   4 * BufferElements());
  job.mutable_training()->set_precision(v1::PRECISION_BF16_FP32_GRADS);
  EXPECT_DOUBLE_EQ(Figures(job).gradient_scratch_bytes, 0);
  job.mutable_training()->mutable_precision_aware_optimizer()
      ->set_main_grads_dtype(v1::DTYPE_BF16);
  EXPECT_DOUBLE_EQ(Figures(job).gradient_scratch_bytes,
                   2 * BufferElements());
  // --grad-reduce-in-bf16 with fp32 main gradients: Megatron leaves the
  // flag on (accumulate_allreduce_grads_in_fp32 is off), and the scratch
  // copies the 4-byte buffer.
  job.mutable_training()->set_precision(v1::PRECISION_BF16_BF16_GRADS);
  job.mutable_training()->mutable_precision_aware_optimizer()
      ->set_main_grads_dtype(v1::DTYPE_FP32);
  EXPECT_DOUBLE_EQ(Figures(job).gradient_scratch_bytes,
                   4 * BufferElements());
  job.mutable_training()->set_precision(v1::PRECISION_BF16_FP32_GRADS);
  job.mutable_training()->mutable_precision_aware_optimizer()
      ->set_main_grads_dtype(v1::DTYPE_BF16);
  job.mutable_parallel()->set_distributed_optimizer(false);
  EXPECT_DOUBLE_EQ(Figures(job).gradient_scratch_bytes, 0);
  // Beside several optimizer instances Megatron asserts.
  job.mutable_parallel()->set_distributed_optimizer(true);
  job.mutable_parallel()->set_distributed_optimizer_instances(2);
  EXPECT_NE(ValidateJob(job).message().find(
                "distributed_optimizer_instances: above 1 with "
                "training.reduce_scatter_fp32_accumulation"),
            std::string::npos)
      << ValidateJob(job);
  job.mutable_training()->clear_precision_aware_optimizer();
  EXPECT_TRUE(ValidateJob(job).ok()) << ValidateJob(job);  // turned off
}

// [MF] with the double buffer the two largest FSDP units of the single
// stage, the embedding and the LM head (32,768,000 each, larger than a
// layer), are held un-sharded.
TEST(ModelStatesTest, MegatronFsdpShardsByStrategyPlusTwoUnits) {
  constexpr double kTwoUnits = 2 * kVocabMatrix;
  v1::Job job = SmallJob();
  job.mutable_parallel()->set_fsdp_double_buffer(true);
  job.mutable_parallel()->set_data_parallel_sharding(
      v1::DATA_PARALLEL_SHARDING_OPTIM_GRADS_PARAMS);
  StageFigures f = Figures(job);
  EXPECT_DOUBLE_EQ(f.weight_bytes, 2 * (kParams / 4 + kTwoUnits));
  EXPECT_DOUBLE_EQ(f.gradient_bytes, 4 * (kParams / 4 + kTwoUnits));
  EXPECT_DOUBLE_EQ(f.optimizer_bytes, 12 * kParams / 4);

  job.mutable_parallel()->set_data_parallel_sharding(
      v1::DATA_PARALLEL_SHARDING_OPTIM_GRADS);
  f = Figures(job);
  EXPECT_DOUBLE_EQ(f.weight_bytes, 2 * kParams);
  EXPECT_DOUBLE_EQ(f.gradient_bytes, 4 * (kParams / 4 + kTwoUnits));

  job.mutable_parallel()->set_data_parallel_sharding(
      v1::DATA_PARALLEL_SHARDING_OPTIM);
  f = Figures(job);
  EXPECT_DOUBLE_EQ(f.gradient_bytes, 4 * kParams);
  EXPECT_DOUBLE_EQ(f.optimizer_bytes, 12 * kParams / 4);

  // no_shard keeps the whole optimizer, whatever distributed_optimizer says.
  job.mutable_parallel()->set_data_parallel_sharding(
      v1::DATA_PARALLEL_SHARDING_NO_SHARD);
  EXPECT_DOUBLE_EQ(Figures(job).optimizer_bytes, 12 * kParams);

  // With tied embeddings on one stage the one matrix is one unit: the two
  // largest are it and a layer.
  job.mutable_model()->set_tie_word_embeddings(true);
  job.mutable_parallel()->set_data_parallel_sharding(
      v1::DATA_PARALLEL_SHARDING_OPTIM_GRADS_PARAMS);
  const double tied = 2 * kLayer + kVocabMatrix + 1024;
  EXPECT_DOUBLE_EQ(Figures(job).weight_bytes,
                   2 * (tied / 4 + kVocabMatrix + kLayer));
}

// [MFC] without the double buffer Megatron-FSDP's queues decide: the
// reduce-scatter queue keeps a communication unit C of un-sharded
// gradients (and the unit entering it), all-gathers prefetch C / 2 of
// weights past the unit computing. Megatron's default C is at least 10^9
// parameters, more than this whole model (99,095,552): it is held whole,
// beside its shards. A given C of 10^7 holds two units plus C (gradients)
// and plus C / 2 (weights); ZeRO-2 holds the weights whole anyway.
TEST(ModelStatesTest, MegatronFsdpQueuesHoldACommunicationUnit) {
  constexpr double kTwoUnits = 2 * kVocabMatrix;
  v1::Job job = SmallJob();
  job.mutable_parallel()->set_data_parallel_sharding(
      v1::DATA_PARALLEL_SHARDING_OPTIM_GRADS_PARAMS);
  StageFigures f = Figures(job);
  EXPECT_DOUBLE_EQ(f.weight_bytes, 2 * (kParams / 4 + kParams));
  EXPECT_DOUBLE_EQ(f.gradient_bytes, 4 * (kParams / 4 + kParams));

  job.mutable_parallel()->set_fsdp_communication_unit_size(10000000);
  f = Figures(job);
  EXPECT_DOUBLE_EQ(f.weight_bytes, 2 * (kParams / 4 + kTwoUnits + 5e6));
  EXPECT_DOUBLE_EQ(f.gradient_bytes, 4 * (kParams / 4 + kTwoUnits + 1e7));

  job.mutable_parallel()->set_data_parallel_sharding(
      v1::DATA_PARALLEL_SHARDING_OPTIM_GRADS);
  f = Figures(job);
  EXPECT_DOUBLE_EQ(f.weight_bytes, 2 * kParams);
  EXPECT_DOUBLE_EQ(f.gradient_bytes, 4 * (kParams / 4 + kTwoUnits + 1e7));

  // Past the ceiling (2^40 parameters) the unit is refused by name.
  job.mutable_parallel()->set_fsdp_communication_unit_size((1ull << 40) + 1);
  const absl::Status refused = ValidateJob(job);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("parallel.fsdp_communication_unit_size"),
            std::string::npos)
      << refused;
}

// [TE] delayed-scaling fp8: 2 B of fp8 copies per GEMM weight; per layer the
// two norm outputs drop from 2 to 1 B (-2 sbh), the second MLP GEMM's input
// too (-sb*h_ffn = -4 sbh), the attention output gains an fp8 copy
// (+sb*a*d = +1 sbh): 48 sbh becomes 43 sbh.
TEST(ModelStatesTest, Fp8AddsWeightCopiesAndSavesGemmInputsInOneByte) {
  const StageFigures bf16 = Figures(SmallJob());
  v1::Job job = SmallJob();
  job.mutable_training()->mutable_fp8()->set_recipe(
      v1::Fp8::RECIPE_DELAYED);
  StageFigures f = Figures(job);
  EXPECT_DOUBLE_EQ(f.weight_bytes, 2 * BufferElements() +
                                       2 * 2 * kLayerGemms +
                                       kDelayedScalingState);
  EXPECT_DOUBLE_EQ(f.activation_bytes, bf16.activation_bytes - 2 * 5 * kSbh);

  // --fp8-param-gather: the fp8 pair replaces the bf16 weight.
  job.mutable_training()->mutable_fp8()->set_param_gather(true);
  // Its fp8 weights sit in a buffer of their own: one more bucket's end
  // padded (lcm(4, 128) - 1 elements).
  EXPECT_DOUBLE_EQ(Figures(job).weight_bytes,
                   2 * (BufferElements() + 127) + kDelayedScalingState);

  // MXFP8: one 1-byte scale per 32 elements of every fp8 tensor.
  job.mutable_training()->mutable_fp8()->set_param_gather(false);
  job.mutable_training()->mutable_fp8()->set_recipe(v1::Fp8::RECIPE_MXFP8);
  f = Figures(job);
  EXPECT_DOUBLE_EQ(f.weight_bytes,
                   2 * BufferElements() + 2 * (1 + 1.0 / 32) * 2 * kLayerGemms);
  EXPECT_DOUBLE_EQ(f.activation_bytes,
                   bf16.activation_bytes - 2 * (5 - 7.0 / 32) * kSbh);

  // Blockwise (DeepSeek's recipe): one fp32 scale per 1 x 128 tile of an
  // activation (1/32 B an element, as MXFP8) and per 128 x 128 block of a
  // weight (4/16384 B).
  job.mutable_training()->mutable_fp8()->set_recipe(
      v1::Fp8::RECIPE_BLOCKWISE);
  f = Figures(job);
  EXPECT_DOUBLE_EQ(f.weight_bytes,
                   2 * BufferElements() + 2 * (1 + 4.0 / 16384) * 2 * kLayerGemms);
  EXPECT_DOUBLE_EQ(f.activation_bytes,
                   bf16.activation_bytes - 2 * (5 - 7.0 / 32) * kSbh);
}

// [TE] --fp8-output-proj: the LM head a TransformerEngine Linear in MXFP8,
// its h x v weight's rowwise and columnwise copies cached for the step
// (2 x 1.03 B a weight), counted beside the bf16 weight even under
// --fp8-param-gather (an upper bound); nothing more is stored. With two
// stages only the last holds the head.
TEST(ModelStatesTest, Fp8OutputProjectionCachesTheHeadsFp8Copies) {
  v1::Job job = SmallJob();
  job.mutable_training()->mutable_fp8()->set_recipe(v1::Fp8::RECIPE_MXFP8);
  const StageFigures layers_only = Figures(job);
  job.mutable_training()->mutable_fp8()->set_output_projection(true);
  StageFigures f = Figures(job);
  EXPECT_DOUBLE_EQ(f.weight_bytes, layers_only.weight_bytes +
                                       2 * (1 + 1.0 / 32) * kVocabMatrix);
  EXPECT_DOUBLE_EQ(f.activation_bytes, layers_only.activation_bytes);
  job.mutable_training()->mutable_fp8()->set_param_gather(true);
  v1::Job gathered = job;
  gathered.mutable_training()->mutable_fp8()->set_output_projection(false);
  EXPECT_DOUBLE_EQ(Figures(job).weight_bytes,
                   Figures(gathered).weight_bytes +
                       2 * (1 + 1.0 / 32) * kVocabMatrix);
  job.mutable_parallel()->set_pipeline_parallel(2);
  job.set_num_gpus(8);
  const ModelShape m = ShapeOf(job.model());
  const Layout l = LayoutOf(job);
  gathered.mutable_parallel()->set_pipeline_parallel(2);
  gathered.set_num_gpus(8);
  const Layout without = LayoutOf(gathered);
  EXPECT_DOUBLE_EQ(StageMemoryOf(m, l, 0, 1).weight_bytes,
                   StageMemoryOf(m, without, 0, 1).weight_bytes);
  EXPECT_DOUBLE_EQ(StageMemoryOf(m, l, 1, 1).weight_bytes,
                   StageMemoryOf(m, without, 1, 1).weight_bytes +
                       2 * (1 + 1.0 / 32) * kVocabMatrix);
}

// [F8L] --first-last-layers-bf16: the first and last layers run outside
// fp8 and keep what bf16 keeps: each of the two layers given back the
// 5 sbh fp8 saved; the fp8 weight copies stay counted (an over-count).
// Where fp8 saves nothing (a recomputed MLP) nothing changes. Megatron's
// rules: not with the delayed recipe, at most L / p layers at either end.
TEST(ModelStatesTest, LayersKeptInBf16UnderFp8KeepBf16Activations) {
  const StageFigures bf16 = Figures(SmallJob());
  v1::Job job = SmallJob();
  v1::Fp8& fp8 = *job.mutable_training()->mutable_fp8();
  fp8.set_recipe(v1::Fp8::RECIPE_TENSORWISE);
  const StageFigures all_fp8 = Figures(job);
  fp8.set_bf16_first_layers(1);
  StageFigures f = Figures(job);
  EXPECT_DOUBLE_EQ(f.activation_bytes, all_fp8.activation_bytes + 5 * kSbh);
  EXPECT_DOUBLE_EQ(f.weight_bytes, all_fp8.weight_bytes);
  fp8.set_bf16_last_layers(1);
  EXPECT_DOUBLE_EQ(Figures(job).activation_bytes, bf16.activation_bytes);
  fp8.set_bf16_first_layers(0);
  EXPECT_DOUBLE_EQ(Figures(job).activation_bytes,
                   all_fp8.activation_bytes + 5 * kSbh);

  v1::Recompute& r = *job.mutable_training()->mutable_recompute();
  r.set_granularity(v1::Recompute::GRANULARITY_SELECTIVE);
  r.add_modules(v1::Recompute::MODULE_MLP);
  fp8.set_bf16_first_layers(1);
  const double recomputed = Figures(job).activation_bytes;
  job.mutable_training()->clear_fp8();
  EXPECT_DOUBLE_EQ(recomputed, Figures(job).activation_bytes);

  v1::Job refused = SmallJob();
  refused.mutable_training()->mutable_fp8()->set_bf16_last_layers(1);
  EXPECT_NE(ValidateJob(refused).message().find(
                "training.fp8.bf16_last_layers: needs an fp8 recipe other "
                "than delayed"),
            std::string::npos)
      << ValidateJob(refused);
  refused.mutable_training()->mutable_fp8()->set_recipe(
      v1::Fp8::RECIPE_MXFP8);
  refused.mutable_training()->mutable_fp8()->set_bf16_last_layers(3);
  EXPECT_EQ(ValidateJob(refused).message(),
            "training.fp8.bf16_last_layers: must be at most num_layers / "
            "pipeline_parallel = 2 (got 3)");
}

// With the MLP recomputed its checkpoint keeps the 16-bit input and
// nothing inside: fp8 changes only attention's input (-1 sbh) and adds the
// output projection's copy (+1 sbh), so the activations equal bf16's.
// (The MLP's fp8 savings were once subtracted from bytes not counted.)
TEST(ModelStatesTest, Fp8SavesNothingOfARecomputedMlp) {
  v1::Job job = SmallJob();
  v1::Recompute& r = *job.mutable_training()->mutable_recompute();
  r.set_granularity(v1::Recompute::GRANULARITY_SELECTIVE);
  r.add_modules(v1::Recompute::MODULE_MLP);
  const StageFigures bf16 = Figures(job);
  job.mutable_training()->mutable_fp8()->set_recipe(
      v1::Fp8::RECIPE_DELAYED);
  // [DS] but the copy recomputation keeps of the MLP GEMMs' forward
  // history and scales: 3 quantizers of 8 B a GEMM, 2 a layer.
  EXPECT_DOUBLE_EQ(Figures(job).activation_bytes,
                   bf16.activation_bytes + 2 * 2 * 3 * 8);
}

// [DS] TransformerEngine's delayed recipe keeps, in each fp8 module, an
// fp32 amax history of Fp8.amax_history_len rows and a scale for each
// quantizer, 3 forward and 2 backward a GEMM, for the run; recomputation
// copies the forward's for each micro-batch in flight, from its forward
// to its backward. The other recipes keep none.
TEST(ModelStatesTest, DelayedScalingKeepsAnAmaxHistoryPerQuantizer) {
  v1::Job job = SmallJob();
  job.mutable_parallel()->set_pipeline_parallel(2);  // 2 in flight
  v1::Fp8& fp8 = *job.mutable_training()->mutable_fp8();
  fp8.set_recipe(v1::Fp8::RECIPE_DELAYED);
  const StageFigures one_row = Figures(job);
  fp8.set_amax_history_len(1024);
  const StageFigures history = Figures(job);
  const double gemms = 2 * 4;  // two layers' QKV, output, FC1 and FC2
  EXPECT_DOUBLE_EQ(history.weight_bytes - one_row.weight_bytes,
                   gemms * 5 * 4 * 1023);
  EXPECT_DOUBLE_EQ(history.activation_bytes, one_row.activation_bytes);

  // Full recomputation copies every layer's 3 forward quantizers a GEMM
  // for each of the 2 micro-batches in flight.
  v1::Recompute& r = *job.mutable_training()->mutable_recompute();
  r.set_granularity(v1::Recompute::GRANULARITY_FULL);
  r.set_method(v1::Recompute::METHOD_UNIFORM);
  r.set_num_layers(1);
  const StageFigures recomputed = Figures(job);
  fp8.set_amax_history_len(1);
  EXPECT_DOUBLE_EQ(recomputed.activation_bytes - Figures(job).activation_bytes,
                   2 * gemms * 3 * 4 * 1023);

  // The per-tensor current scaling keeps no history.
  fp8.set_recipe(v1::Fp8::RECIPE_TENSORWISE);
  const StageFigures tensorwise = Figures(job);
  fp8.set_amax_history_len(1024);
  EXPECT_DOUBLE_EQ(Figures(job).weight_bytes, tensorwise.weight_bytes);
  EXPECT_DOUBLE_EQ(Figures(job).activation_bytes,
                   tensorwise.activation_bytes);
}

TEST(ModelStatesTest, ValidationNamesTheFieldAndTheRule) {
  const auto message = [](const v1::Job& job) {
    return std::string(ValidateJob(job).message());
  };
  v1::Job sgd = SmallJob();
  sgd.mutable_training()->set_optimizer(v1::OPTIMIZER_SGD);
  sgd.mutable_training()->mutable_precision_aware_optimizer();
  EXPECT_NE(message(sgd).find("training.precision_aware_optimizer: needs "
                              "Adam"),
            std::string::npos);

  v1::Job dtype = SmallJob();
  dtype.mutable_training()
      ->mutable_precision_aware_optimizer()
      ->set_main_params_dtype(v1::DTYPE_FP8);
  EXPECT_NE(message(dtype).find("main_params_dtype: must be fp32 or fp16"),
            std::string::npos);

  v1::Job offload = SmallJob();
  offload.mutable_training()->set_optimizer_offload_fraction(0.5);
  EXPECT_NE(message(offload).find("optimizer_offload_fraction: needs "
                                  "training.precision_aware_optimizer"),
            std::string::npos);
  offload.mutable_training()->mutable_precision_aware_optimizer();
  offload.mutable_training()->set_optimizer_offload_fraction(1.5);
  EXPECT_NE(message(offload).find("must be a fraction in [0, 1]"),
            std::string::npos);

  v1::Job fp8 = SmallJob();
  fp8.mutable_training()->set_precision(v1::PRECISION_FP32);
  fp8.mutable_training()->mutable_fp8();
  EXPECT_NE(message(fp8).find("training.fp8: needs bf16 or fp16"),
            std::string::npos);
  fp8 = SmallJob();
  fp8.mutable_parallel()->set_distributed_optimizer(false);
  fp8.mutable_training()->mutable_fp8()->set_param_gather(true);
  EXPECT_NE(message(fp8).find("training.fp8.param_gather: needs the "
                              "distributed optimizer"),
            std::string::npos);

  v1::Job sharding = SmallJob();
  sharding.mutable_parallel()->set_data_parallel_sharding(
      static_cast<v1::DataParallelSharding>(17));
  EXPECT_NE(message(sharding).find("parallel.data_parallel_sharding"),
            std::string::npos);

  // Megatron's rules for the partial distributed optimizer (d*c = 4).
  v1::Job instances = SmallJob();
  instances.mutable_parallel()->set_distributed_optimizer_instances(3);
  EXPECT_EQ(message(instances),
            "parallel.distributed_optimizer_instances: must divide the "
            "data-parallel ranks d x c = 4 (got 3)");
  instances.mutable_parallel()->set_distributed_optimizer_instances(2);
  instances.mutable_parallel()->set_distributed_optimizer(false);
  EXPECT_NE(message(instances).find("distributed_optimizer_instances: above "
                                    "1 needs parallel.distributed_optimizer"),
            std::string::npos);
  instances.mutable_parallel()->set_data_parallel_sharding(
      v1::DATA_PARALLEL_SHARDING_OPTIM);
  EXPECT_NE(message(instances).find("hybrid FSDP (HSDP), which is not "
                                    "modelled"),
            std::string::npos);
  // d*c counts the context-parallel ranks: DP 4 x CP 2 = 8 take N = 8,
  // which does not divide d alone.
  instances = SmallJob();
  instances.set_num_gpus(8);
  instances.mutable_parallel()->set_context_parallel(2);
  instances.mutable_parallel()->set_distributed_optimizer_instances(8);
  EXPECT_TRUE(ValidateJob(instances).ok()) << ValidateJob(instances);
  instances.mutable_parallel()->set_distributed_optimizer_instances(16);
  EXPECT_NE(message(instances).find("d x c = 8 (got 16)"), std::string::npos);
}

}  // namespace
}  // namespace memgate
