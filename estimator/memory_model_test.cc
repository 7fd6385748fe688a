#include "estimator/memory_model.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "estimator/catalog.h"
#include "estimator/moe_terms.h"
#include "gtest/gtest.h"

namespace memgate {
namespace {

ModelShape Shape(const char* name) { return ShapeOf(*FindModel(name)); }

// TP 4, PP 2, d 1 on 8 GPUs, MBS 1, 8k sequence: the paper's first A100 row.
Layout PaperLayout() {
  Layout l;
  l.tensor = 4;
  l.pipeline = 2;
  l.context = 1;
  l.data = 1;
  l.micro_batch = 1;
  l.seq_length = 8192;
  return l;
}

// Published parameter counts: the equation counts every parameter.
TEST(MemoryModelTest, TotalParametersMatchPublishedCounts) {
  EXPECT_DOUBLE_EQ(TotalParameters(Shape("llama-3.1-8b")), 8030261248.0);
  EXPECT_DOUBLE_EQ(TotalParameters(Shape("llama-3.1-70b")), 70553706496.0);
  EXPECT_DOUBLE_EQ(TotalParameters(Shape("llama-3.1-405b")), 405853388800.0);
  EXPECT_DOUBLE_EQ(TotalParameters(Shape("llama-2-7b")), 6738415616.0);
}

TEST(MemoryModelTest, StagesOfOneReplicaAddUpToTheModel) {
  const ModelShape m = Shape("llama-3.1-8b");
  Layout l = PaperLayout();
  l.tensor = 1;
  l.pipeline = 4;
  double sum = 0;
  for (uint32_t i = 0; i < 4; ++i) sum += StageMemoryOf(m, l, i, 8).parameters;
  EXPECT_DOUBLE_EQ(sum, TotalParameters(m));
}

TEST(MemoryModelTest, BytesPerParameterFollowThePaper) {
  const ModelShape m = Shape("llama-3.1-8b");
  Layout l = PaperLayout();
  l.data = 4;
  l.context = 2;
  const StageFigures f = StageMemoryOf(m, l, 0, 16);
  // The buffers hold the distributed optimizer's padding too
  // (memory_model.cc [BP]).
  const double buffer = f.parameters + f.padding_elements;
  EXPECT_DOUBLE_EQ(f.weight_bytes, 2 * buffer);
  EXPECT_DOUBLE_EQ(f.gradient_bytes, 4 * buffer);
  EXPECT_DOUBLE_EQ(f.optimizer_bytes, 12 * f.parameters / 8);  // d*c shards

  l.distributed_optimizer = false;
  EXPECT_DOUBLE_EQ(StageMemoryOf(m, l, 0, 16).optimizer_bytes,
                   12 * f.parameters);
  l.precision = v1::PRECISION_BF16_BF16_GRADS;
  EXPECT_DOUBLE_EQ(StageMemoryOf(m, l, 0, 16).gradient_bytes,
                   2 * f.parameters);  // no padding without it
}

TEST(MemoryModelTest, FirstStageActivationsMatchTheClosedForm) {
  const ModelShape m = Shape("llama-3.1-8b");
  const Layout l = PaperLayout();
  const double sbh_t = 8192.0 * 1 * 4096 / 4;
  // (12 + 4k/a + 8 h_ffn/h) L + 8p, with k/a = 1/4 and h_ffn/h = 3.5.
  const double expected = sbh_t * ((12 + 1 + 28) * 32 + 8 * 2);
  EXPECT_DOUBLE_EQ(StageMemoryOf(m, l, 0, 16).activation_bytes, expected);
}

TEST(MemoryModelTest, OneFOneBKeepsFewerMicroBatchesOnLaterStages) {
  const ModelShape m = Shape("llama-3.1-8b");
  Layout l = PaperLayout();
  l.pipeline = 4;
  double previous = INFINITY;
  for (uint32_t i = 0; i < 3; ++i) {  // the last stage adds the LM head
    const double a = StageMemoryOf(m, l, i, 8).activation_bytes;
    EXPECT_LT(a, previous) << "stage " << i;
    previous = a;
  }
  EXPECT_DOUBLE_EQ(PeakBytesEvenStages(m, l),
                   StageMemoryOf(m, l, 0, 8).total_bytes());
}

TEST(MemoryModelTest, SingleStageHoldsEmbeddingHeadAndLossActivations) {
  const ModelShape m = Shape("llama-3.1-8b");
  Layout l = PaperLayout();
  l.pipeline = 1;
  const double sbh_t = 8192.0 * 4096 / 4;
  const double v_over_h = 128256.0 / 4096;
  EXPECT_DOUBLE_EQ(StageMemoryOf(m, l, 0, 32).activation_bytes,
                   sbh_t * (41 * 32 + 8 + 4 * (1 + v_over_h)));
}

TEST(MemoryModelTest, ContextParallelSplitsActivationsNotWeights) {
  const ModelShape m = Shape("llama-3.1-8b");
  Layout one = PaperLayout(), two = PaperLayout();
  two.context = 2;
  const StageFigures a = StageMemoryOf(m, one, 0, 16);
  const StageFigures b = StageMemoryOf(m, two, 0, 16);
  EXPECT_DOUBLE_EQ(b.activation_bytes, a.activation_bytes / 2);
  EXPECT_DOUBLE_EQ(b.weight_bytes, a.weight_bytes);
  EXPECT_DOUBLE_EQ(b.optimizer_bytes, a.optimizer_bytes / 2);
}

TEST(MemoryModelTest, WithoutSequenceParallelNormsAndInputsAreReplicated) {
  const ModelShape m = Shape("llama-3.1-8b");
  Layout sp = PaperLayout(), no_sp = PaperLayout();
  no_sp.sequence_parallel = false;
  const double with = StageMemoryOf(m, sp, 0, 16).activation_bytes;
  const double without = StageMemoryOf(m, no_sp, 0, 16).activation_bytes;
  EXPECT_GT(without, with);
  // 8sbh per layer (and the embedding output) stop being split over t = 4.
  const double sbh = 8192.0 * 4096;
  EXPECT_DOUBLE_EQ(without - with,
                   (8 * sbh * 0.75) * 32 + 8 * sbh * 2 * 0.75);
}

TEST(MemoryModelTest, TiedEmbeddingsAreHeldOnceOnASingleStage) {
  ModelShape m = Shape("llama-3.1-8b");
  Layout l = PaperLayout();
  l.pipeline = 1;
  const double untied = StageMemoryOf(m, l, 0, 32).parameters;
  m.tied_embeddings = true;
  EXPECT_DOUBLE_EQ(untied - StageMemoryOf(m, l, 0, 32).parameters,
                   4096.0 * 128256 / 4);
}

TEST(MemoryModelTest, AbsurdSizesStayFinite) {
  ModelShape m;
  m.layers = m.hidden = m.ffn_hidden = m.heads = m.kv_heads = m.vocab =
      4294967295.0;
  Layout l;
  l.seq_length = l.micro_batch = 4294967295.0;
  const double peak = PeakBytesEvenStages(m, l);
  EXPECT_TRUE(std::isfinite(peak));
  EXPECT_GT(peak, 0);
}

// MLA rotates its d_rope part whatever the model's positions, and
// Megatron's RoPE fusion is off for every position type but rope
// (arguments.py): with learned or no positions its tables are kept, one
// set for all samples (MLA makes its own frequencies, also under mRoPE).
TEST(MemoryModelTest, MlaRotatesBesideAnyPositions) {
  v1::ModelConfig model = *FindModel("deepseek-v3");
  ASSERT_TRUE(model.has_mla());
  Layout l;
  l.seq_length = 4096;
  l.micro_batch = 2;
  const double tables = 4 * 2 * 4096.0 * 64;  // a layer, bf16, d_rope 64
  model.set_position_embedding(v1::POSITION_EMBEDDING_ROPE);
  EXPECT_DOUBLE_EQ(UnfusedRopeTables(ShapeOf(model), l), 0);  // fused
  for (v1::PositionEmbedding unfused :
       {v1::POSITION_EMBEDDING_LEARNED_ABSOLUTE, v1::POSITION_EMBEDDING_NONE,
        v1::POSITION_EMBEDDING_YARN, v1::POSITION_EMBEDDING_MROPE}) {
    model.set_position_embedding(unfused);
    EXPECT_DOUBLE_EQ(UnfusedRopeTables(ShapeOf(model), l), tables) << unfused;
  }
}

void ExpectSameFigures(const StageFigures& a, const StageFigures& b,
                       const std::string& where) {
  EXPECT_EQ(a.parameters, b.parameters) << where;
  EXPECT_EQ(a.weight_bytes, b.weight_bytes) << where;
  EXPECT_EQ(a.gradient_bytes, b.gradient_bytes) << where;
  EXPECT_EQ(a.optimizer_bytes, b.optimizer_bytes) << where;
  EXPECT_EQ(a.activation_bytes, b.activation_bytes) << where;
  EXPECT_EQ(a.imbalance_bytes, b.imbalance_bytes) << where;
  EXPECT_EQ(a.buffer_bytes, b.buffer_bytes) << where;
  EXPECT_EQ(a.transient_peak_bytes(), b.transient_peak_bytes()) << where;
}

// The same peak, term by term.
void ExpectSamePeak(const StagePeak& a, const StagePeak& b,
                    const std::string& where) {
  EXPECT_EQ(a.admission, b.admission) << where;
  EXPECT_EQ(a.transient, b.transient) << where;
  EXPECT_EQ(a.model_states, b.model_states) << where;
}

// LayoutStages keeps one layer's figures of each kind for all the stages
// of a layout, worked out at the first stage that needs them: whatever
// order stages ask in, and whatever kinds the earlier ones had (DeepSeek-
// V3's dense first layers, MoE after; fp8 with bf16 first and last layers
// on some stages only; selective recomputation; the most loaded expert's
// margin), each stage's figures are those it has alone, to the bit.
TEST(MemoryModelTest, StagesOfOneLayoutShareItsLayerFigures) {
  const ModelShape m = Shape("deepseek-v3");
  Layout l = PaperLayout();
  l.tensor = 2;
  l.pipeline = 8;
  l.data = 64;
  l.expert_parallel = 64;
  l.microbatches = 32;
  l.seq_length = 4096;
  for (const bool fp8 : {false, true}) {
    for (const RecomputeKind recompute :
         {RecomputeKind::kNone, RecomputeKind::kSelective,
          RecomputeKind::kFullUniform}) {
      l.fp8 = fp8;
      l.bf16_first_layers = fp8 ? 2 : 0;
      l.bf16_last_layers = fp8 ? 1 : 0;
      l.recompute = recompute;
      l.recompute_layers = recompute == RecomputeKind::kFullUniform ? 1 : 0;
      l.recompute_mlp = recompute == RecomputeKind::kSelective;
      const std::string where = "fp8 " + std::to_string(fp8) +
                                ", recompute " +
                                std::to_string(static_cast<int>(recompute));
      // Uneven stages: 4 layers on the first (3 dense, 1 MoE), 9 a stage
      // after, 0-based rank 7 last; asked last to first.
      LayoutStages stages(m, l);
      for (int rank = 7; rank >= 0; --rank) {
        const double layers = rank == 0 ? 4 : 9;
        const double first = rank == 0 ? 0 : 4 + 9.0 * (rank - 1);
        const uint32_t stage = static_cast<uint32_t>(rank);
        ExpectSameFigures(stages.Stage(stage, layers, first),
                          StageMemoryOf(m, l, stage, layers, first),
                          where + ", rank " + std::to_string(rank));
      }
      // Chunk by chunk too, on the same LayoutStages after the stages.
      const std::vector<double> chunk_layers = {2, 5};
      const std::vector<double> chunk_first = {1, 40};
      ExpectSameFigures(stages.Chunks(1, chunk_layers, chunk_first),
                        StageMemoryOfChunks(m, l, 1, chunk_layers, chunk_first),
                        where + ", chunks");
      EXPECT_GT(stages.Stage(3, 9, 22).imbalance_bytes, 0) << where;
    }
  }
}

// A stage's most loaded expert lane is estimated beside the routed one
// (memory_model.cc StageActivationsOfLanes: what no layer figure reads,
// once for both): its margin is, to the bit, the activations of the same
// layout estimated alone at that expert load, less the routed ones. On
// every kind of stage: first (embedding, dense layers), middle, last (LM
// head, the MoE MTP layer, the loss), interleaved chunk by chunk, with
// fp8's bf16 layers, the dataloader's mask, CP all_gather and every
// recomputation.
TEST(MemoryModelTest, MostLoadedLaneIsTheLoadedLayoutAlone) {
  const ModelShape m = Shape("deepseek-v3");
  Layout l = PaperLayout();
  l.tensor = 2;
  l.context = 2;
  l.cp_comm = v1::CONTEXT_PARALLEL_COMM_ALL_GATHER;
  l.pipeline = 8;
  l.data = 32;
  l.expert_parallel = 64;
  l.microbatches = 32;
  l.seq_length = 4096;
  l.dataloader_mask = true;
  for (const bool fp8 : {false, true}) {
    for (const RecomputeKind recompute :
         {RecomputeKind::kNone, RecomputeKind::kSelective,
          RecomputeKind::kFullUniform, RecomputeKind::kFullBlock}) {
      l.fp8 = fp8;
      l.bf16_first_layers = fp8 ? 2 : 0;
      l.bf16_last_layers = fp8 ? 1 : 0;
      l.recompute = recompute;
      l.recompute_layers = recompute == RecomputeKind::kFullUniform ||
                                   recompute == RecomputeKind::kFullBlock
                               ? 2
                               : 0;
      l.recompute_moe_act = recompute == RecomputeKind::kSelective;
      Layout loaded = l;
      loaded.expert_load = std::min(l.load_imbalance, MaxExpertLoad(m, l));
      ASSERT_GT(loaded.expert_load, 1);
      const std::string where = "fp8 " + std::to_string(fp8) +
                                ", recompute " +
                                std::to_string(static_cast<int>(recompute));
      for (const uint32_t rank : {0u, 3u, 7u}) {
        const double layers = rank == 0 ? 4 : 9;
        const double first = rank == 0 ? 0 : 4 + 9.0 * (rank - 1);
        const StageFigures both = StageMemoryOf(m, l, rank, layers, first);
        const StageFigures alone =
            StageMemoryOf(m, loaded, rank, layers, first);
        EXPECT_GT(both.imbalance_bytes, 0) << where << ", rank " << rank;
        EXPECT_EQ(both.imbalance_bytes,
                  alone.activation_bytes - both.activation_bytes)
            << where << ", rank " << rank;
      }
      l.virtual_stages = 2;
      loaded.virtual_stages = 2;
      const std::vector<double> chunk_layers = {2, 5};
      const std::vector<double> chunk_first = {1, 40};
      const StageFigures both =
          StageMemoryOfChunks(m, l, 0, chunk_layers, chunk_first);
      const StageFigures alone =
          StageMemoryOfChunks(m, loaded, 0, chunk_layers, chunk_first);
      EXPECT_EQ(both.imbalance_bytes,
                alone.activation_bytes - both.activation_bytes)
          << where << ", chunks";
      l.virtual_stages = 1;
    }
  }
}

// The planner keeps one LayoutLayerFigures across layouts that differ
// only in pipeline depth, data parallelism, micro-batches a step,
// interleaving, its micro-batch group and, under full recomputation, the
// count recomputed (planner.cc KeptLayerFigures): figures worked out under
// one such layout must be, to the bit, those of each other alone.
// DeepSeek-V3 (dense and MoE layers, MLA, an MTP layer, the most loaded
// expert's margin), fp8 with bf16 layers or not, under each recomputation.
TEST(MemoryModelTest, LayoutsAlikeButForTheirPipelineShareLayerFigures) {
  const ModelShape m = Shape("deepseek-v3");
  struct Pipeline {
    double p, d, v, group;
    double recompute_layers;
  };
  // 1,024 GPUs at TP 2, a global batch of 1,024: m = 1024 / d.
  const Pipeline pipelines[] = {
      {16, 32, 1, 0, 1}, {4, 128, 1, 0, 3}, {8, 64, 2, 0, 2},
      {8, 64, 4, 12, 1}, {2, 256, 1, 0, 4}, {16, 32, 2, 16, 2}};
  for (const bool fp8 : {false, true}) {
    for (const RecomputeKind recompute :
         {RecomputeKind::kNone, RecomputeKind::kSelective,
          RecomputeKind::kFullBlock}) {
      Layout l = PaperLayout();
      l.tensor = 2;
      l.expert_parallel = 16;
      l.seq_length = 4096;
      l.fp8 = fp8;
      l.bf16_first_layers = fp8 ? 2 : 0;
      l.bf16_last_layers = fp8 ? 1 : 0;
      l.recompute = recompute;
      l.recompute_mlp = recompute == RecomputeKind::kSelective;
      l.recompute_layernorm = recompute == RecomputeKind::kSelective;
      LayoutLayerFigures kept;
      for (const Pipeline& shape : pipelines) {
        l.pipeline = shape.p;
        l.data = shape.d;
        l.microbatches = 1024 / shape.d;
        l.virtual_stages = shape.v;
        l.microbatch_group = shape.group;
        l.recompute_layers =
            recompute == RecomputeKind::kFullBlock ? shape.recompute_layers
                                                   : 0;
        const std::string where =
            "fp8 " + std::to_string(fp8) + ", recompute " +
            std::to_string(static_cast<int>(recompute)) + ", p " +
            std::to_string(shape.p) + ", v " + std::to_string(shape.v);
        LayoutStages stages(m, l, kept);
        const double per_rank = std::floor(61 / shape.p);
        const uint32_t last = static_cast<uint32_t>(shape.p) - 1;
        // Last rank first: its MTP layer and head, then the first rank's
        // dense layers, then a middle rank's MoE ones.
        for (const uint32_t rank : {last, 0u, last / 2}) {
          const double first = rank * per_rank;
          const double layers = rank == last ? 61 - first : per_rank;
          ExpectSameFigures(stages.Stage(rank, layers, first),
                            StageMemoryOf(m, l, rank, layers, first),
                            where + ", rank " + std::to_string(rank));
        }
        ExpectSamePeak(PeakOfEvenStages(
                           m, l, kept, [](const StagePeak&) { return false; }),
                       PeakOfEvenStages(m, l), where);
      }
    }
  }
}

// The planner's recomputation probes stop at the first stage that does
// not fit (planner.cc PeakOf): PeakOfEvenStages asks `enough` after each
// stage it adds, and returns the peak so far once it holds.
TEST(MemoryModelTest, EvenStagesStopOnceThePeakIsEnough) {
  const ModelShape m = Shape("qwen3-235b-a22b");
  Layout l = PaperLayout();
  l.pipeline = 4;
  l.expert_parallel = 8;
  l.data = 8;
  l.microbatches = 16;
  LayoutLayerFigures kept;
  int asked = 0;
  const StagePeak first = PeakOfEvenStages(m, l, kept, [&](const StagePeak&) {
    ++asked;
    return true;
  });
  EXPECT_EQ(asked, 1);
  EXPECT_EQ(first.admission,
            StageMemoryOf(m, l, 0, 94 / 4.0).admission_bytes());
  asked = 0;
  const StagePeak whole = PeakOfEvenStages(m, l, kept, [&](const StagePeak&) {
    ++asked;
    return false;
  });
  EXPECT_GT(asked, 1);  // first, last and the middle ranks that can peak
  EXPECT_EQ(whole.admission, PeakOfEvenStages(m, l).admission);
  EXPECT_GE(whole.admission, first.admission);
}

// PeakOfEvenStages evaluates only the ranks that can peak: the first, the
// last, the middle ones an MoE model's dense layers decide, and every rank
// that holds fp8's bf16 layers, which spill over as many ranks as their
// chunks take (up to v at either end). Held to the largest of every stage,
// over dense and MoE models, depths, interleavings and bf16 ends up to
// L / p. (In these even splits the first rank, with the embedding and the
// most micro-batches in flight, outweighs a middle rank's bf16 chunk; the
// uneven split where one did not is LaunchPlansTest's
// Bf16LayersSpillingOverSeveralRanksReadBackAsPlanned.)
TEST(MemoryModelTest, EvenStagesPeakAtTheRanksTheyEvaluate) {
  for (const char* name : {"llama-3.1-70b", "mixtral-8x7b"}) {
    const ModelShape m = Shape(name);
    for (const double p : {4.0, 8.0}) {
      for (const double v : {1.0, 2.0, 5.0, 10.0}) {
        const double per_rank = m.layers / p;
        if (std::fmod(per_rank, v) != 0) continue;
        for (const double first : {0.0, 1.0, per_rank}) {
          for (const double last : {0.0, 3.0, per_rank}) {
            Layout l = PaperLayout();
            l.tensor = 8;
            l.pipeline = p;
            l.data = 4;
            l.virtual_stages = v;
            l.microbatches = 64;
            l.expert_parallel = m.experts > 0 ? 4 : 1;
            l.fp8 = true;
            l.bf16_first_layers = first;
            l.bf16_last_layers = last;
            StagePeak every;
            for (uint32_t stage = 0; stage < p; ++stage) {
              every.Add(StageMemoryOf(m, l, stage, per_rank));
            }
            ExpectSamePeak(PeakOfEvenStages(m, l), every,
                           std::string(name) + " p " + std::to_string(p) +
                               " v " + std::to_string(v) + " bf16 " +
                               std::to_string(first) + "/" +
                               std::to_string(last));
          }
        }
      }
    }
  }
}

// StagePeak::model_states is what the planner takes as the floor no
// recomputation lowers (planner.cc FitByRecomputing): the same with every
// layer recomputed as with none, and below the admission figure.
TEST(MemoryModelTest, RecomputationLeavesTheModelStatesFloor) {
  const ModelShape m = Shape("qwen3-235b-a22b");
  Layout l = PaperLayout();
  l.pipeline = 2;
  l.expert_parallel = 8;
  l.data = 8;
  l.microbatches = 16;
  StagePeak plain;
  plain.Add(StageMemoryOf(m, l, 0, 47));
  l.recompute = RecomputeKind::kFullBlock;
  l.recompute_layers = 47;
  StagePeak recomputed;
  recomputed.Add(StageMemoryOf(m, l, 0, 47));
  EXPECT_LT(recomputed.admission, plain.admission);
  EXPECT_EQ(recomputed.model_states, plain.model_states);
  EXPECT_GT(plain.model_states, 0);
  EXPECT_LT(recomputed.model_states, recomputed.admission);
}

}  // namespace
}  // namespace memgate
