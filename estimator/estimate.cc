#include "estimator/estimate.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "estimator/assumptions.h"
#include "estimator/job_resolver.h"
#include "estimator/memory_model.h"
#include "estimator/validation.h"

namespace memgate {
namespace {

// The layers, and the index of the first layer, of each model chunk of
// pipeline rank `stage` under interleaving (entry k of layers_per_stage, or
// L/(p v) each, is chunk k / p of rank k % p); empty without interleaving,
// and for dense models split evenly (where one formula covers the rank).
struct Chunks {
  std::vector<double> layers;
  std::vector<double> first;
};

// Layers and first layer of every virtual stage k (p * v of them, in
// layout order), computed once per estimate: O(p v), not per stage.
struct VirtualStages {
  std::vector<double> layers;
  std::vector<double> first;
};

VirtualStages VirtualStagesOf(const v1::Job& job) {
  const v1::ParallelConfig& par = job.parallel();
  VirtualStages all;
  const uint32_t v = par.virtual_pipeline_stages();
  const bool listed = par.layers_per_stage_size() > 0;
  if (v <= 1 || (!listed && !job.model().has_moe())) return all;
  const uint64_t count = uint64_t{par.pipeline_parallel()} * v;
  const double even =
      static_cast<double>(job.model().num_layers()) / static_cast<double>(count);
  all.layers.reserve(count);
  all.first.reserve(count);
  double first = 0;
  for (uint64_t k = 0; k < count; ++k) {
    const double n = listed ? par.layers_per_stage(static_cast<int>(k)) : even;
    all.layers.push_back(n);
    all.first.push_back(first);
    first += n;
  }
  return all;
}

// Rank `stage`'s chunks: virtual stages stage, stage + p, stage + 2p, ...
Chunks ChunksOf(const VirtualStages& all, uint32_t pipeline, uint32_t stage) {
  Chunks chunks;
  for (size_t k = stage; k < all.layers.size(); k += pipeline) {
    chunks.layers.push_back(all.layers[k]);
    chunks.first.push_back(all.first[k]);
  }
  return chunks;
}

double StageLayers(const v1::Job& job, const Chunks& chunks,
                   uint32_t stage) {
  const v1::ParallelConfig& par = job.parallel();
  if (!chunks.layers.empty()) {
    double layers = 0;
    for (double n : chunks.layers) layers += n;
    return layers;
  }
  if (par.layers_per_stage_size() > 0) return par.layers_per_stage(stage);
  return static_cast<double>(job.model().num_layers()) /
         par.pipeline_parallel();
}

void Fill(const StageFigures& f, uint32_t stage, double layers,
          uint32_t in_flight, v1::StageMemory& out) {
  out.set_stage(stage);
  out.set_num_layers(static_cast<uint32_t>(layers));
  out.set_microbatches_in_flight(in_flight);
  out.set_parameters(f.parameters);
  out.set_weight_bytes(f.weight_bytes);
  out.set_gradient_bytes(f.gradient_bytes);
  out.set_optimizer_bytes(f.optimizer_bytes);
  out.set_activation_bytes(f.activation_bytes);
  out.set_total_bytes(f.total_bytes());
  out.set_expert_imbalance_bytes(f.imbalance_bytes);
  out.set_communication_buffer_bytes(f.buffer_bytes);
  out.set_te_userbuffer_bytes(f.te_userbuffer_bytes);
  out.set_gradient_scratch_bytes(f.gradient_scratch_bytes);
  out.set_loss_gradient_cast_bytes(f.loss_gradient_cast_bytes);
  out.set_output_weight_gradient_bytes(f.output_weight_gradient_bytes);
  out.set_embedding_gradient_bytes(f.embedding_gradient_bytes);
  out.set_attention_score_buffer_bytes(f.score_buffer_bytes);
  out.set_optimizer_step_bytes(f.optimizer_step_bytes);
  out.set_evaluation_bytes(f.evaluation_bytes);
}

}  // namespace

v1::Zone ZoneOf(double bytes, double capacity_bytes, double threshold) {
  if (bytes <= threshold * capacity_bytes) return v1::ZONE_GREEN;
  if (bytes <= capacity_bytes) return v1::ZONE_YELLOW;
  return v1::ZONE_RED;
}

double UnallocatableBytes(double capacity_bytes) {
  return kProcessRuntimeBytes + kDriverShare * capacity_bytes;
}

double AllocatableBytes(double capacity_bytes) {
  return std::max(0.0, capacity_bytes - UnallocatableBytes(capacity_bytes));
}

namespace {

// The one rule for a transient (AdmissionZone, StageWhoseTransientOverflows):
// a stage's admission figure and transient together make the zone RED
// where they exceed what a process can allocate and the job's largest
// admission figure (at or below that figure, its own zone says the rest).
bool TransientOverflows(double transient_peak, double admission_peak,
                        double allocatable) {
  return transient_peak > admission_peak && transient_peak > allocatable;
}

}  // namespace

v1::Zone AdmissionZone(const StagePeak& peak, double capacity_bytes,
                       double threshold) {
  const v1::Zone zone = ZoneOf(peak.admission, capacity_bytes, threshold);
  const double allocatable = AllocatableBytes(capacity_bytes);
  if (TransientOverflows(peak.transient, peak.admission, allocatable)) {
    return v1::ZONE_RED;
  }
  // The admission figure's zones are the paper's, against the whole GPU;
  // but a GREEN figure the process cannot allocate (a threshold near 1, a
  // GPU under about 17 GiB, where 20% is less than the runtime's share)
  // will OOM.
  if (zone == v1::ZONE_GREEN && peak.admission > allocatable) {
    return v1::ZONE_RED;
  }
  return zone;
}

double TransientBytes(const v1::StageMemory& stage) {
  return std::max({stage.loss_gradient_cast_bytes(),
                   stage.output_weight_gradient_bytes(),
                   stage.embedding_gradient_bytes(),
                   stage.optimizer_step_bytes(), stage.evaluation_bytes()});
}

const char* TransientName(const v1::StageMemory& stage) {
  const double largest = TransientBytes(stage);
  if (stage.loss_gradient_cast_bytes() == largest) {
    return "the loss's backward casts the logits' gradient to 16 bits";
  }
  if (stage.output_weight_gradient_bytes() == largest) {
    return "the output layer's backward makes its weight gradient anew (no "
           "gradient-accumulation fusion)";
  }
  if (stage.embedding_gradient_bytes() == largest) {
    return "the embedding's backward makes its dense weight gradient";
  }
  if (stage.optimizer_step_bytes() == largest) {
    return "the optimizer step's fp32 copies of the 16-bit gradients, "
           "Lion's update or Muon's Newton-Schulz copies, above the "
           "activations it frees";
  }
  return "an evaluation's forward (its micro-batch, beside any fp32 "
         "gradient copies of the step), above the training's activations";
}

bool RedThoughItsPeakFits(const v1::Estimate& e) {
  return e.zone() == v1::ZONE_RED &&
         e.peak().total_bytes() + e.peak().expert_imbalance_bytes() <=
             e.capacity_bytes();
}

double HeldBesideTransients(const v1::StageMemory& stage) {
  return stage.total_bytes() + stage.expert_imbalance_bytes() +
         stage.attention_score_buffer_bytes();
}

const v1::StageMemory* StageWhoseTransientOverflows(const v1::Estimate& e) {
  const double admission =
      e.peak().total_bytes() + e.peak().expert_imbalance_bytes();
  const double allocatable = AllocatableBytes(e.capacity_bytes());
  for (const v1::StageMemory& stage : e.stages()) {
    const double transient = TransientBytes(stage);
    if (transient + stage.attention_score_buffer_bytes() > 0 &&
        TransientOverflows(HeldBesideTransients(stage) + transient, admission,
                           allocatable)) {
      return &stage;
    }
  }
  return nullptr;
}

absl::StatusOr<v1::Estimate> EstimateJob(const v1::Job& job,
                                         double threshold) {
  v1::Estimate estimate;
  if (absl::Status s = EstimateJobInto(job, threshold, estimate); !s.ok()) {
    return s;
  }
  return estimate;
}

absl::Status EstimateJobInto(const v1::Job& job, double threshold,
                             v1::Estimate& estimate) {
  estimate.Clear();
  if (absl::Status s = ValidateThreshold(threshold); !s.ok()) return s;
  v1::Job& resolved = *estimate.mutable_job();
  resolved = job;
  if (absl::Status s = ResolveJobInPlace(resolved); !s.ok()) return s;
  if (absl::Status s = ValidateJob(resolved); !s.ok()) return s;

  const ModelShape shape = ShapeOf(resolved.model());
  const Layout layout = LayoutOf(resolved);
  const uint32_t stages = resolved.parallel().pipeline_parallel();

  estimate.set_data_parallel(static_cast<uint32_t>(layout.data));
  estimate.set_total_parameters(TotalParameters(shape, layout.tensor));
  estimate.mutable_stages()->Reserve(static_cast<int>(stages));
  int peak_index = 0;
  StagePeak stage_peak;
  const VirtualStages virtual_stages = VirtualStagesOf(resolved);
  double first_layer = 0;  // of stage i, without interleaving
  LayoutStages layout_stages(shape, layout);
  for (uint32_t i = 0; i < stages; ++i) {
    const Chunks chunks = ChunksOf(virtual_stages, stages, i);
    const double layers = StageLayers(resolved, chunks, i);
    const StageFigures figures =
        chunks.layers.empty()
            ? layout_stages.Stage(i, layers, first_layer)
            : layout_stages.Chunks(i, chunks.layers, chunks.first);
    first_layer += layers;
    stage_peak.Add(figures);
    Fill(figures, i, layers,
         static_cast<uint32_t>(MicrobatchesInFlight(layout, i)),
         *estimate.add_stages());
    const v1::StageMemory& best = estimate.stages(peak_index);
    if (figures.admission_bytes() >
        best.total_bytes() + best.expert_imbalance_bytes()) {
      peak_index = static_cast<int>(i);
    }
  }
  const v1::StageMemory& peak = estimate.stages(peak_index);
  if (!std::isfinite(peak.total_bytes())) {  // guards absurd inputs
    return absl::InvalidArgumentError(
        "model: dimensions too large to estimate (memory is not finite)");
  }
  const double capacity =
      static_cast<double>(resolved.accelerator().memory_bytes());
  *estimate.mutable_peak() = peak;
  estimate.set_peak_gib(ToGiB(peak.total_bytes()));
  estimate.set_capacity_bytes(capacity);
  estimate.set_capacity_fraction(peak.total_bytes() / capacity);
  estimate.set_threshold(threshold);
  // The zone counts the MoE load margin (0 for dense models) and checks
  // the stages' transients fit beside them (AdmissionZone).
  estimate.set_zone(AdmissionZone(stage_peak, capacity, threshold));
  for (std::string& line : AssumptionsOf(resolved)) {
    estimate.add_assumptions(std::move(line));
  }
  return absl::OkStatus();
}

}  // namespace memgate
