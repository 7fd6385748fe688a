#include "estimator/memory_model.h"

#include <algorithm>

namespace memgate {
namespace {

// Bytes per parameter held (weights, gradients); the optimizer's fp32
// master weight and Adam m, v take 12 more, sharded by the distributed
// optimizer over d*c ranks (section 3.1.1 and 3.1.4).
constexpr double kWeightBytes = 2;  // bf16
constexpr double kOptimizerBytes = 12;

double GradientBytesPerParameter(v1::Precision precision) {
  return precision == v1::PRECISION_BF16_BF16_GRADS ? 2 : 4;
}

// Parameters of one transformer layer on one tensor-parallel rank:
// attention 2h^2(1 + k/a) and SwiGLU 3*h*h_ffn are split over t; the two
// RMSNorm weights (2h) are replicated.
double LayerParameters(const ModelShape& m, const Layout& l) {
  const double h = m.hidden;
  return 2 * h * h * (1 + m.kv_heads / m.heads + 1.5 * m.ffn_hidden / h) /
             l.tensor +
         2 * h;
}

// Activation bytes of one transformer layer for one micro-batch, with
// FlashAttention 2 (no s^2 term) and no dropout: sbh(12 + 4k/a + 8h_ffn/h).
// With sequence parallelism everything is split over t; without it the
// layer input of attention, the FFN input and both RMSNorm inputs (8sbh)
// are replicated on every tensor-parallel rank. CP splits the sequence.
double LayerActivations(const ModelShape& m, const Layout& l) {
  const double sbh = l.seq_length * l.micro_batch * m.hidden / l.context;
  const double per_layer =
      12 + 4 * m.kv_heads / m.heads + 8 * m.ffn_hidden / m.hidden;
  if (l.sequence_parallel) return sbh * per_layer / l.tensor;
  return sbh * (8 + (per_layer - 8) / l.tensor);
}

// Embedding: the first stage keeps the embedding output of every micro-batch
// in flight, 8sbh each (section 3.2).
double EmbeddingActivations(const ModelShape& m, const Layout& l,
                            double in_flight) {
  const double sbh = l.seq_length * l.micro_batch * m.hidden / l.context;
  const double split = l.sequence_parallel ? l.tensor : 1;
  return 8 * sbh * in_flight / split;
}

// LM head: output RMSNorm and linear inputs (2sbh each) and the fp32
// cross-entropy over the vocabulary-parallel logits (4sbv):
// 4sbh(1 + v/h), split over t (section 3.2, Korthikanti et al. 4.3).
double HeadActivations(const ModelShape& m, const Layout& l) {
  const double sb = l.seq_length * l.micro_batch / l.context;
  const double split = l.sequence_parallel ? l.tensor : 1;
  return 4 * sb * m.hidden / split + 4 * sb * m.vocab / l.tensor;
}

}  // namespace

ModelShape ShapeOf(const v1::ModelConfig& model) {
  ModelShape m;
  m.layers = model.num_layers();
  m.hidden = model.hidden_size();
  m.ffn_hidden = model.ffn_hidden_size();
  m.heads = model.num_attention_heads();
  m.kv_heads = model.num_query_groups();
  m.vocab = model.vocab_size();
  m.tied_embeddings = model.tie_word_embeddings();
  return m;
}

Layout LayoutOf(const v1::Job& job) {
  const v1::ParallelConfig& par = job.parallel();
  Layout l;
  l.tensor = par.tensor_parallel();
  l.pipeline = par.pipeline_parallel();
  l.context = par.context_parallel();
  l.data = job.num_gpus() / (static_cast<double>(par.tensor_parallel()) *
                             par.pipeline_parallel() * par.context_parallel());
  l.micro_batch = job.training().micro_batch_size();
  l.seq_length = job.training().seq_length();
  l.sequence_parallel = par.sequence_parallel();
  l.distributed_optimizer = par.distributed_optimizer();
  l.precision = job.training().precision();
  return l;
}

double TotalParameters(const ModelShape& m) {
  const double h = m.hidden;
  const double embeddings = (m.tied_embeddings ? 1 : 2) * h * m.vocab;
  return embeddings + h +
         m.layers * (2 * h * h * (1 + m.kv_heads / m.heads) +
                     3 * h * m.ffn_hidden + 2 * h);
}

StageFigures StageMemoryOf(const ModelShape& m, const Layout& l,
                           uint32_t stage, double stage_layers) {
  const bool first = stage == 0;
  const bool last = stage + 1 >= l.pipeline;
  const double vocab_shard = m.hidden * m.vocab / l.tensor;

  // Parameters held: the embedding on the first stage, the LM head and final
  // RMSNorm on the last; one stage holds both (tied: one shared matrix).
  double params = stage_layers * LayerParameters(m, l);
  if (first) params += vocab_shard;
  if (last) params += m.hidden;
  if (last && !(first && m.tied_embeddings)) params += vocab_shard;

  StageFigures f;
  f.parameters = params;
  f.weight_bytes = kWeightBytes * params;
  f.gradient_bytes = GradientBytesPerParameter(l.precision) * params;
  const double optimizer_shards =
      l.distributed_optimizer ? l.data * l.context : 1;
  f.optimizer_bytes = kOptimizerBytes * params / optimizer_shards;

  // 1F1B: stage i holds the activations of p - i micro-batches.
  const double in_flight = l.pipeline - stage;
  double activations = stage_layers * in_flight * LayerActivations(m, l);
  if (first) activations += EmbeddingActivations(m, l, in_flight);
  if (last) activations += HeadActivations(m, l);
  f.activation_bytes = activations;
  return f;
}

double PeakBytesEvenStages(const ModelShape& m, const Layout& l) {
  const double stage_layers = m.layers / l.pipeline;
  const double first = StageMemoryOf(m, l, 0, stage_layers).total_bytes();
  if (l.pipeline <= 1) return first;
  const uint32_t last_stage = static_cast<uint32_t>(l.pipeline) - 1;
  return std::max(
      first, StageMemoryOf(m, l, last_stage, stage_layers).total_bytes());
}

}  // namespace memgate
