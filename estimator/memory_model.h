#ifndef MEMGATE_ESTIMATOR_MEMORY_MODEL_H_
#define MEMGATE_ESTIMATOR_MEMORY_MODEL_H_

// The paper's equations (section 3) on plain numbers: no protos, no
// allocation, so the planner can evaluate millions of layouts. Callers
// validate first (see ValidateJob); here every input is assumed valid.

#include <cstdint>

#include "proto/memgate.pb.h"

namespace memgate {

// Model dimensions as doubles: every product below is taken in floating
// point, so absurd sizes give large finite numbers, never an overflow.
struct ModelShape {
  double layers = 0;      // L
  double hidden = 0;      // h
  double ffn_hidden = 0;  // h_ffn
  double heads = 0;       // a
  double kv_heads = 0;    // k
  double vocab = 0;       // v
  bool tied_embeddings = false;
};

struct Layout {
  double tensor = 1;    // t
  double pipeline = 1;  // p
  double context = 1;   // c
  double data = 1;      // d
  double micro_batch = 1;  // b
  double seq_length = 1;   // s
  bool sequence_parallel = true;
  bool distributed_optimizer = true;
  v1::Precision precision = v1::PRECISION_BF16_FP32_GRADS;
};

struct StageFigures {
  double parameters = 0;
  double weight_bytes = 0;
  double gradient_bytes = 0;
  double optimizer_bytes = 0;
  double activation_bytes = 0;
  double total_bytes() const {
    return weight_bytes + gradient_bytes + optimizer_bytes + activation_bytes;
  }
};

ModelShape ShapeOf(const v1::ModelConfig& model);
Layout LayoutOf(const v1::Job& resolved_job);

// Parameters of the whole, unsharded model (the paper's equation 3).
double TotalParameters(const ModelShape& m);

// Memory of one GPU of pipeline stage `stage` (0-based) holding
// `stage_layers` transformer layers, under the 1F1B schedule.
StageFigures StageMemoryOf(const ModelShape& m, const Layout& l,
                           uint32_t stage, double stage_layers);

// The largest stage total for an even split (L/p layers a stage). Under
// 1F1B it is always a stage that holds the embedding or the LM head, so only
// those are evaluated.
double PeakBytesEvenStages(const ModelShape& m, const Layout& l);

}  // namespace memgate

#endif  // MEMGATE_ESTIMATOR_MEMORY_MODEL_H_
