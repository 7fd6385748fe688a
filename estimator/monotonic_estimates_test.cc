// Directions every estimate must keep, whatever the equations inside: on
// jobs drawn with a fixed seed (dense and MoE catalog models, MLA,
// soft-capped scores, three GPUs, TP/CP/PP/EP/ETP, interleaving,
// precisions, recomputation, optimizer sharding), a change that only adds to
// what a GPU holds (longer sequences, larger micro-batches at the same
// micro-batch count, more layers, a wider vocabulary, a switch Megatron
// documents as keeping more) never lowers a job's largest stage or its
// stage-plus-transient, and one that only takes away (more GPUs sharing the
// same work, recomputation, the distributed optimizer, sequence parallelism)
// never raises them. A term whose sign or scope is wrong shows here without a
// number to compare with: selective recomputation once estimated below full
// recomputation's stage by its remade attention scores (memory_model.cc
// [SR]).
//
// Exceptions that are Megatron's, not memgate's, are kept out of the
// claims they would break, each said where its claim is made.

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "estimator/estimate.h"
#include "estimator/memory_model.h"
#include "gtest/gtest.h"
#include "proto/memgate.pb.h"

namespace memgate {
namespace {

// A job drawn from `rng`; deterministic for a seed (mt19937 and modulo).
v1::Job SampleJob(std::mt19937& rng) {
  static const char* const kModels[] = {
      "llama-3.1-8b", "llama-3.1-70b", "llama-2-13b", "nemotron-4-340b",
      "mixtral-8x7b", "qwen3-30b-a3b", "gpt-oss-20b", "deepseek-v3"};
  static const char* const kGpus[] = {"h100-80gb", "a100-40gb", "h200-141gb"};
  v1::Job job;
  const int model = static_cast<int>(rng() % 8);
  const bool moe = model >= 4;
  job.mutable_model()->set_name(kModels[model]);
  job.mutable_accelerator()->set_name(kGpus[rng() % 3]);
  // Gemma 2's soft-capped scores and logits on a dense model, at times:
  // Megatron's own attention and its score buffer ([GA]).
  if (!moe && rng() % 6 == 0) {
    job.mutable_model()->set_attention_logit_softcapping(50);
    job.mutable_model()->set_final_logit_softcapping(30);
  }
  v1::ParallelConfig& par = *job.mutable_parallel();
  const uint32_t t = 1u << (rng() % 4), c = 1u << (rng() % 3),
                 p = 1u << (rng() % 4), d = 1u << (rng() % 4);
  par.set_tensor_parallel(t);
  par.set_context_parallel(c);
  par.set_pipeline_parallel(p);
  if (moe) {
    par.set_expert_parallel(1u << (rng() % 4));
    par.set_expert_tensor_parallel(rng() % 2 ? 1 : t);
  }
  if (p > 1 && rng() % 2) par.set_virtual_pipeline_stages(2u << (rng() % 2));
  if (rng() % 3 == 0) par.set_distributed_optimizer(rng() % 2);
  if (t > 1 && rng() % 4 == 0) par.set_sequence_parallel(false);
  job.set_num_gpus(t * c * p * d);
  v1::TrainingConfig& training = *job.mutable_training();
  training.set_seq_length(4096u << (rng() % 2));
  training.set_micro_batch_size(1 + rng() % 2);
  training.set_global_batch_size(d * training.micro_batch_size() *
                                 (1 + rng() % 8));
  training.set_precision(rng() % 3 ? v1::PRECISION_BF16_FP32_GRADS
                                   : v1::PRECISION_FP32);
  if (rng() % 3 == 0) training.set_dataloader_attention_mask(false);
  v1::Recompute& recompute = *training.mutable_recompute();
  switch (rng() % 4) {
    case 1:
      recompute.set_granularity(v1::Recompute::GRANULARITY_SELECTIVE);
      break;
    case 2:
      recompute.set_granularity(v1::Recompute::GRANULARITY_FULL);
      recompute.set_method(rng() % 2 ? v1::Recompute::METHOD_UNIFORM
                                     : v1::Recompute::METHOD_BLOCK);
      recompute.set_num_layers(1);
      break;
    default:
      break;
  }
  // gpt-oss's attention sinks: the job says which kernel runs them
  // (validation.cc), cuDNN's fused attention (over an all-to-all under CP)
  // or TransformerEngine's unfused one.
  if (std::string_view(kModels[model]) == "gpt-oss-20b") {
    if (rng() % 2) {
      training.set_flash_attention_disabled(true);
      par.set_context_parallel_comm(v1::CONTEXT_PARALLEL_COMM_A2A);
    } else {
      training.set_attention_kernel(v1::ATTENTION_KERNEL_UNFUSED);
    }
  }
  return job;
}

struct Figures {
  double stage = 0;  // the largest stage's total
  // The largest of a stage's total, its attention score buffer and its
  // transient: what must fit in the GPU. (Not the expert load margin,
  // which grows with EP: with every expert on a rank no imbalance is
  // possible.)
  double with_transient = 0;
};

std::optional<Figures> FiguresOf(const v1::Job& job) {
  absl::StatusOr<v1::Estimate> e = EstimateJob(job);
  if (!e.ok()) return std::nullopt;
  Figures f;
  for (const v1::StageMemory& s : e->stages()) {
    f.stage = std::max(f.stage, s.total_bytes());
    f.with_transient = std::max(
        f.with_transient,
        s.total_bytes() + s.attention_score_buffer_bytes() + TransientBytes(s));
  }
  return f;
}

// The job as memgate resolves it (catalog dimensions filled in).
std::optional<v1::Job> Resolved(const v1::Job& job) {
  absl::StatusOr<v1::Estimate> e = EstimateJob(job);
  if (!e.ok()) return std::nullopt;
  return e->job();
}

// A whole number from the environment, or `fallback`.
int EnvOr(const char* name, int fallback) {
  const char* value = std::getenv(name);
  return value != nullptr ? std::atoi(value) : fallback;
}

enum class Direction { kNeverLower, kNeverHigher };

struct Claim {
  std::string name;
  Direction direction;
  // Changes the job; false where the claim does not apply to it (the
  // changed job may still be refused, and is then not compared).
  std::function<bool(v1::Job&)> change;
};

bool Interleaved(const v1::Job& j) {
  return j.parallel().virtual_pipeline_stages() > 1;
}

bool FullBlock(const v1::Job& j) {
  return j.training().recompute().granularity() ==
             v1::Recompute::GRANULARITY_FULL &&
         j.training().recompute().method() == v1::Recompute::METHOD_BLOCK;
}

// Doubles one parallel size (`double_size`: false where it does not
// apply) and the GPUs with it: the same work shared.
std::function<bool(v1::Job&)> Doubling(
    std::function<bool(v1::ParallelConfig&)> double_size) {
  return [double_size](v1::Job& j) {
    const std::optional<v1::Job> r = Resolved(j);
    if (!r) return false;
    v1::ParallelConfig par = r->parallel();
    if (!double_size(par)) return false;
    *j.mutable_parallel() = par;
    j.set_num_gpus(2 * j.num_gpus());
    return true;
  };
}

std::vector<Claim> Claims() {
  using R = v1::Recompute;
  std::vector<Claim> claims = {
      {"sequence x2", Direction::kNeverLower,
       [](v1::Job& j) {
         j.mutable_training()->set_seq_length(2 * j.training().seq_length());
         return true;
       }},
      {"micro-batch x2, as many micro-batches", Direction::kNeverLower,
       [](v1::Job& j) {
         v1::TrainingConfig& t = *j.mutable_training();
         t.set_micro_batch_size(2 * t.micro_batch_size());
         t.set_global_batch_size(2 * t.global_batch_size());
         return true;
       }},
      {"one more layer a stage", Direction::kNeverLower,
       [](v1::Job& j) {
         const std::optional<v1::Job> r = Resolved(j);
         if (!r) return false;
         const uint32_t chunks =
             r->parallel().pipeline_parallel() *
             std::max(1u, r->parallel().virtual_pipeline_stages());
         j.mutable_model()->set_num_layers(r->model().num_layers() + chunks);
         return true;
       }},
      {"vocabulary + 4096", Direction::kNeverLower,
       [](v1::Job& j) {
         const std::optional<v1::Job> r = Resolved(j);
         if (!r) return false;
         j.mutable_model()->set_vocab_size(r->model().vocab_size() + 4096);
         return true;
       }},
      {"FFN + 512", Direction::kNeverLower,
       [](v1::Job& j) {
         const std::optional<v1::Job> r = Resolved(j);
         if (!r) return false;
         j.mutable_model()->set_ffn_hidden_size(r->model().ffn_hidden_size() +
                                                512);
         return true;
       }},
      {"query groups x2", Direction::kNeverLower,
       [](v1::Job& j) {
         const std::optional<v1::Job> r = Resolved(j);
         if (!r || r->model().num_query_groups() == 0 ||
             2 * r->model().num_query_groups() >
                 r->model().num_attention_heads()) {
           return false;
         }
         j.mutable_model()->set_num_query_groups(2 *
                                                 r->model().num_query_groups());
         return true;
       }},
      {"router top-k + 1", Direction::kNeverLower,
       [](v1::Job& j) {
         const std::optional<v1::Job> r = Resolved(j);
         if (!r || r->model().moe().num_experts() == 0 ||
             r->model().moe().router_topk() >= r->model().moe().num_experts()) {
           return false;
         }
         j.mutable_model()->mutable_moe()->set_router_topk(
             r->model().moe().router_topk() + 1);
         return true;
       }},
      {"expert load margin 1.5", Direction::kNeverLower,
       [](v1::Job& j) {
         const std::optional<v1::Job> r = Resolved(j);
         if (!r || r->model().moe().num_experts() == 0) return false;
         j.mutable_model()->mutable_moe()->set_load_imbalance(1.5);
         return true;
       }},
      {"experts x2", Direction::kNeverLower,
       [](v1::Job& j) {
         const std::optional<v1::Job> r = Resolved(j);
         if (!r || r->model().moe().num_experts() == 0) return false;
         *j.mutable_model() = r->model();
         j.mutable_model()->mutable_moe()->set_num_experts(
             2 * r->model().moe().num_experts());
         return true;
       }},
      {"expert FFN + 512", Direction::kNeverLower,
       [](v1::Job& j) {
         const std::optional<v1::Job> r = Resolved(j);
         if (!r || r->model().moe().num_experts() == 0) return false;
         *j.mutable_model() = r->model();
         j.mutable_model()->mutable_moe()->set_expert_ffn_hidden_size(
             r->model().moe().expert_ffn_hidden_size() + 512);
         return true;
       }},
      {"shared expert FFN + 512", Direction::kNeverLower,
       [](v1::Job& j) {
         const std::optional<v1::Job> r = Resolved(j);
         if (!r || r->model().moe().num_experts() == 0) return false;
         *j.mutable_model() = r->model();
         j.mutable_model()->mutable_moe()->set_shared_expert_ffn_hidden_size(
             r->model().moe().shared_expert_ffn_hidden_size() + 512);
         return true;
       }},
      {"one more MTP layer", Direction::kNeverLower,
       [](v1::Job& j) {
         const std::optional<v1::Job> r = Resolved(j);
         if (!r) return false;
         *j.mutable_model() = r->model();
         j.mutable_model()->set_mtp_num_layers(r->model().mtp_num_layers() + 1);
         return true;
       }},
      {"Adam's moments in bf16", Direction::kNeverHigher,
       [](v1::Job& j) {
         v1::PrecisionAwareOptimizer& o =
             *j.mutable_training()->mutable_precision_aware_optimizer();
         if (o.exp_avg_dtype() != v1::DTYPE_UNSPECIFIED) return false;
         o.set_exp_avg_dtype(v1::DTYPE_BF16);
         o.set_exp_avg_sq_dtype(v1::DTYPE_BF16);
         return true;
       }},
      {"half the optimizer offloaded", Direction::kNeverHigher,
       [](v1::Job& j) {
         v1::TrainingConfig& t = *j.mutable_training();
         if (t.optimizer_offload_fraction() > 0) return false;
         t.mutable_precision_aware_optimizer()->set_main_grads_dtype(
             v1::DTYPE_FP32);
         t.set_optimizer_offload_fraction(0.5);
         return true;
       }},
      {"dropout 0.1", Direction::kNeverLower,
       [](v1::Job& j) {
         j.mutable_training()->set_hidden_dropout(0.1);
         j.mutable_training()->set_attention_dropout(0.1);
         return true;
       }},
      // Only where attention runs fused: unfused attention (fp32 here, or
      // the kernel a gpt-oss job names for its sinks) builds and keeps an
      // s x s causal mask a layer when the dataloader sends none, and the
      // dataloader's one mask, which every layer shares, is then less
      // (memory_model.cc [UA]).
      {"the dataloader's mask, attention fused", Direction::kNeverLower,
       [](v1::Job& j) {
         if (j.training().dataloader_attention_mask() ||
             j.training().precision() == v1::PRECISION_FP32 ||
             j.training().attention_kernel() ==
                 v1::ATTENTION_KERNEL_UNFUSED) {
           return false;
         }
         j.mutable_training()->set_dataloader_attention_mask(true);
         return true;
       }},
      // Only without block recomputation, which Megatron applies to each
      // model chunk's first N layers (transformer_block.py): interleaving
      // then recomputes more layers a rank.
      {"interleaving x2", Direction::kNeverLower,
       [](v1::Job& j) {
         if (Interleaved(j) || FullBlock(j) ||
             j.parallel().pipeline_parallel() < 2) {
           return false;
         }
         j.mutable_parallel()->set_virtual_pipeline_stages(2);
         return true;
       }},
      {"distributed optimizer instances x2", Direction::kNeverLower,
       [](v1::Job& j) {
         if (!j.parallel().has_distributed_optimizer() ||
             !j.parallel().distributed_optimizer()) {
           return false;
         }
         j.mutable_parallel()->set_distributed_optimizer_instances(2);
         return true;
       }},
      {"selective recomputation", Direction::kNeverHigher,
       [](v1::Job& j) {
         if (j.training().recompute().granularity() !=
             R::GRANULARITY_UNSPECIFIED) {
           return false;
         }
         j.mutable_training()->mutable_recompute()->set_granularity(
             R::GRANULARITY_SELECTIVE);
         return true;
       }},
      {"full recomputation, one layer a group", Direction::kNeverHigher,
       [](v1::Job& j) {
         if (j.training().recompute().granularity() == R::GRANULARITY_FULL) {
           return false;
         }
         R& r = *j.mutable_training()->mutable_recompute();
         r.Clear();
         r.set_granularity(R::GRANULARITY_FULL);
         r.set_method(R::METHOD_UNIFORM);
         r.set_num_layers(1);
         return true;
       }},
      {"block recomputation of one layer more", Direction::kNeverHigher,
       [](v1::Job& j) {
         if (!FullBlock(j)) return false;
         R& r = *j.mutable_training()->mutable_recompute();
         r.set_num_layers(r.num_layers() + 1);
         return true;
       }},
      // Megatron's exception: over one data-parallel rank (d x c = 1) the
      // distributed optimizer shards nothing and only pads its buffers
      // (memory_model.cc [BP]).
      {"the distributed optimizer", Direction::kNeverHigher,
       [](v1::Job& j) {
         if (j.parallel().has_distributed_optimizer() &&
             j.parallel().distributed_optimizer()) {
           return false;
         }
         const v1::ParallelConfig& p = j.parallel();
         if (j.num_gpus() <= static_cast<uint64_t>(p.tensor_parallel()) *
                                 p.pipeline_parallel()) {
           return false;  // d x c = 1
         }
         j.mutable_parallel()->set_distributed_optimizer(true);
         return true;
       }},
      {"sequence parallelism", Direction::kNeverHigher,
       [](v1::Job& j) {
         if (!j.parallel().has_sequence_parallel() ||
             j.parallel().sequence_parallel()) {
           return false;
         }
         j.mutable_parallel()->set_sequence_parallel(true);
         return true;
       }},
      {"data parallel x2, the batch with it", Direction::kNeverHigher,
       [](v1::Job& j) {
         j.set_num_gpus(2 * j.num_gpus());
         j.mutable_training()->set_global_batch_size(
             2 * j.training().global_batch_size());
         return true;
       }},
      {"tensor parallel x2", Direction::kNeverHigher,
       Doubling([](v1::ParallelConfig& p) {
         if (p.expert_tensor_parallel() == p.tensor_parallel()) {
           p.set_expert_tensor_parallel(2 * p.expert_tensor_parallel());
         }
         p.set_tensor_parallel(2 * p.tensor_parallel());
         return true;
       })},
      {"context parallel x2", Direction::kNeverHigher,
       Doubling([](v1::ParallelConfig& p) {
         p.set_context_parallel(2 * p.context_parallel());
         return true;
       })},
  };
  // Not among them: more pipeline stages, the same work shared. Stage 0
  // holds p micro-batches in flight (1F1B) whose layers' activations, p x
  // L/p, stay the same, but what each keeps beside its layers (the
  // embedding's output and dropout mask [P 3.2]) grows with p, and can
  // outweigh the parameters a deeper pipeline takes off (a 13B model at TP
  // 4 from PP 4 to 8 in fp32: 1.8 GB more); interleaving's chunks in
  // flight grow with p too [MT, K].
  // Expert parallelism doubled with the batch: the experts' data-parallel
  // ranks stay as many.
  claims.push_back({"expert parallel x2, the batch with it",
                    Direction::kNeverHigher, [](v1::Job& j) {
                      if (j.parallel().expert_parallel() == 0) return false;
                      j.mutable_parallel()->set_expert_parallel(
                          2 * j.parallel().expert_parallel());
                      j.set_num_gpus(2 * j.num_gpus());
                      j.mutable_training()->set_global_batch_size(
                          2 * j.training().global_batch_size());
                      return true;
                    }});
  // Switches of the training config that only keep more (each documented
  // in the proto and memory_model.cc), and those that only keep less.
  struct Switch {
    const char* field;
    Direction direction;
  };
  for (const Switch& s : {
           Switch{"defer_embedding_wgrad", Direction::kNeverLower},
           Switch{"fp32_local_grad_accumulation", Direction::kNeverLower},
           Switch{"reduce_scatter_fp32_accumulation", Direction::kNeverLower},
           Switch{"attention_softmax_in_fp32", Direction::kNeverLower},
           Switch{"flash_attention_disabled", Direction::kNeverLower},
           Switch{"te_deterministic_attention", Direction::kNeverLower},
           Switch{"te_masked_softmax_fusion_disabled", Direction::kNeverLower},
           Switch{"jit_fuser_disabled", Direction::kNeverLower},
           Switch{"rope_fusion_disabled", Direction::kNeverLower},
           Switch{"cross_entropy_new_gradient", Direction::kNeverLower},
           Switch{"gradient_accumulation_unfused", Direction::kNeverLower},
           Switch{"glu_linear_copy", Direction::kNeverLower},
           Switch{"fused_swiglu", Direction::kNeverHigher},
       }) {
    const std::string field = s.field;
    claims.push_back({field, s.direction, [field](v1::Job& j) {
                        v1::TrainingConfig& t = *j.mutable_training();
                        const google::protobuf::FieldDescriptor* f =
                            t.GetDescriptor()->FindFieldByName(field);
                        if (f == nullptr) {
                          ADD_FAILURE() << "no field " << field;
                          return false;
                        }
                        if (t.GetReflection()->GetBool(t, f)) return false;
                        t.GetReflection()->SetBool(&t, f, true);
                        return true;
                      }});
  }
  return claims;
}

bool Breaks(Direction direction, const Figures& before, const Figures& after) {
  // A byte's slack for the sums' rounding, no more.
  const double slack = 1 + 1e-12 * before.with_transient;
  if (direction == Direction::kNeverLower) {
    return after.stage < before.stage - slack ||
           after.with_transient < before.with_transient - slack;
  }
  return after.stage > before.stage + slack ||
         after.with_transient > before.with_transient + slack;
}

// Each stage's total and its total beside its attention score buffer and
// transient (Figures, stage by stage).
std::optional<std::vector<Figures>> StageFiguresOf(const v1::Job& job) {
  absl::StatusOr<v1::Estimate> e = EstimateJob(job);
  if (!e.ok()) return std::nullopt;
  std::vector<Figures> stages;
  for (const v1::StageMemory& s : e->stages()) {
    stages.push_back({s.total_bytes(), s.total_bytes() +
                                           s.attention_score_buffer_bytes() +
                                           TransientBytes(s)});
  }
  return stages;
}

// The planner's micro-batch sizes at one global batch: k times the
// micro-batch, a k-th of the micro-batches; false where the global batch
// does not split so.
bool MultiplyMicroBatchAtOneGlobalBatch(v1::Job& j, uint32_t k) {
  const std::optional<v1::Job> r = Resolved(j);
  if (!r) return false;
  v1::TrainingConfig& t = *j.mutable_training();
  const uint64_t d = r->num_gpus() /
                     (uint64_t{r->parallel().tensor_parallel()} *
                      r->parallel().context_parallel() *
                      r->parallel().pipeline_parallel());
  if (t.global_batch_size() % (k * t.micro_batch_size() * d) != 0) {
    return false;
  }
  t.set_micro_batch_size(k * t.micro_batch_size());
  return true;
}

// Not quite one way: at one global batch a larger micro-batch can lower a
// stage's figures a little. Where fewer micro-batches are in flight than
// the pipeline is deep, a stage holds the same tokens either way, and
// what follows a micro-batch's freed activations (the embedding's
// backward [EG], the loss's transient) sits beside fewer of them. Under
// Megatron's own (unfused) attention a larger micro-batch can also bring
// the fused softmax kernel in (b x a/t a multiple of 4), which keeps no
// fp32 scores: a third less, so the planner carries nothing across
// micro-batch sizes there. Elsewhere it carries what a smaller micro-batch
// of a schedule did not fit by, where that missed by more than this fall
// (memory_model.h kMicroBatchFall): stage by stage, at 2 to 16 times the
// micro-batch (the planner tries up to 16), every fall is under it.
TEST(MonotonicEstimatesTest, ALargerMicroBatchAtOneGlobalBatchFallsLittle) {
  std::mt19937 rng(EnvOr("SEED", 17));
  const int jobs = EnvOr("N", 4000);
  int compared = 0, fell = 0;
  for (int i = 0; i < jobs; ++i) {
    const v1::Job job = SampleJob(rng);
    const std::optional<v1::Job> r = Resolved(job);
    if (!r) continue;
    const v1::AttentionKernel kernel = r->training().attention_kernel();
    if (kernel == v1::ATTENTION_KERNEL_UNFUSED ||
        kernel == v1::ATTENTION_KERNEL_LOCAL) {
      continue;
    }
    // Half the draws at 2 to 4 times their micro-batch; half at 8 or 16
    // times, their global batch made one or two such steps' worth (few
    // micro-batches then: where the peak falls most).
    v1::Job base = job;
    uint32_t times = 2 + rng() % 3;
    if (rng() % 2) {
      times = rng() % 2 ? 8 : 16;
      const uint64_t d = r->num_gpus() /
                         (uint64_t{r->parallel().tensor_parallel()} *
                          r->parallel().context_parallel() *
                          r->parallel().pipeline_parallel());
      base.mutable_training()->set_global_batch_size(
          static_cast<uint32_t>(times * job.training().micro_batch_size() *
                                d * (1 + rng() % 2)));
    }
    v1::Job changed = base;
    if (!MultiplyMicroBatchAtOneGlobalBatch(changed, times)) continue;
    const std::optional<std::vector<Figures>> before = StageFiguresOf(base);
    const std::optional<std::vector<Figures>> after = StageFiguresOf(changed);
    if (!before || !after) continue;
    ASSERT_EQ(before->size(), after->size());
    ++compared;
    for (size_t k = 0; k < before->size(); ++k) {
      const Figures& was = (*before)[k];
      const Figures& is = (*after)[k];
      const double fall = std::max(1 - is.stage / was.stage,
                                   1 - is.with_transient / was.with_transient);
      fell += fall > 1e-9;
      EXPECT_LT(fall, kMicroBatchFall)
          << "stage " << k << " of " << base.ShortDebugString() << " x"
          << times;
    }
  }
  EXPECT_GE(compared, 300);
  EXPECT_GT(fell, 0);  // the planner's margin is needed
}

TEST(MonotonicEstimatesTest, EachChangeMovesTheEstimateOneWayOnly) {
  const std::vector<Claim> claims = Claims();
  std::map<std::string, int> compared;
  // Another draw, larger, for exploring: bazel test --test_env=SEED=99
  // --test_env=N=30000 (seeds 5, 7, 99 and 123 at 30,000 jobs pass).
  std::mt19937 rng(EnvOr("SEED", 11));
  const int jobs = EnvOr("N", 4000);
  int soft_capped = 0;  // estimated jobs with Gemma 2's soft-capped scores
  for (int i = 0; i < jobs; ++i) {
    const v1::Job job = SampleJob(rng);
    const std::optional<Figures> before = FiguresOf(job);
    if (!before) continue;
    soft_capped += job.model().attention_logit_softcapping() > 0;
    for (const Claim& claim : claims) {
      v1::Job changed = job;
      if (!claim.change(changed)) continue;
      const std::optional<Figures> after = FiguresOf(changed);
      if (!after) continue;  // the change made a job memgate refuses
      ++compared[claim.name];
      EXPECT_FALSE(Breaks(claim.direction, *before, *after))
          << claim.name << ": " << before->stage << " -> " << after->stage
          << " B (with the transient " << before->with_transient << " -> "
          << after->with_transient << ") for " << job.ShortDebugString();
    }
  }
  // Every claim is exercised by the draw (a seed's counts: 80 at least,
  // most over 1,000), so none passes by never applying.
  for (const Claim& claim : claims) {
    EXPECT_GE(compared[claim.name], 80) << claim.name;
  }
  EXPECT_GE(soft_capped, 50) << soft_capped;
}

// The zone's own directions: more memory on the GPU, or a higher
// threshold, never makes a job's zone worse (GREEN, YELLOW, RED in that
// order), and never changes the estimate.
TEST(MonotonicEstimatesTest, MoreMemoryOrAHigherThresholdNeverWorsensTheZone) {
  std::mt19937 rng(13);
  int compared = 0, improved = 0;
  for (int i = 0; i < 2000; ++i) {
    const v1::Job job = SampleJob(rng);
    absl::StatusOr<v1::Estimate> base = EstimateJob(job);
    if (!base.ok()) continue;
    ++compared;
    absl::StatusOr<v1::Estimate> lenient = EstimateJob(job, 0.9);
    ASSERT_TRUE(lenient.ok()) << lenient.status();
    EXPECT_LE(lenient->zone(), base->zone()) << job.ShortDebugString();
    EXPECT_EQ(lenient->peak().total_bytes(), base->peak().total_bytes());
    v1::Job larger = job;
    larger.mutable_accelerator()->set_memory_bytes(
        static_cast<uint64_t>(base->capacity_bytes()) + (8ull << 30));
    absl::StatusOr<v1::Estimate> more = EstimateJob(larger);
    ASSERT_TRUE(more.ok()) << more.status();
    EXPECT_LE(more->zone(), base->zone()) << job.ShortDebugString();
    EXPECT_EQ(more->peak().total_bytes(), base->peak().total_bytes())
        << job.ShortDebugString();
    improved += more->zone() < base->zone();
  }
  EXPECT_GT(compared, 500);
  EXPECT_GT(improved, 20);
}

}  // namespace
}  // namespace memgate
