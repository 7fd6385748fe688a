#include "estimator/estimate.h"

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

// The layers of each model chunk of pipeline rank `stage` when the job
// lists chunks (an interleaved layout: entry k is chunk k / p of rank
// k % p); empty otherwise.
std::vector<double> ChunkLayers(const v1::Job& job, uint32_t stage) {
  const v1::ParallelConfig& par = job.parallel();
  std::vector<double> chunks;
  if (par.virtual_pipeline_stages() <= 1 || par.layers_per_stage_size() == 0) {
    return chunks;
  }
  for (uint32_t j = 0; j < par.virtual_pipeline_stages(); ++j) {
    chunks.push_back(
        par.layers_per_stage(j * par.pipeline_parallel() + stage));
  }
  return chunks;
}

double StageLayers(const v1::Job& job, uint32_t stage) {
  const v1::ParallelConfig& par = job.parallel();
  if (par.layers_per_stage_size() > 0) {
    double layers = 0;
    for (double n : ChunkLayers(job, stage)) layers += n;
    return par.virtual_pipeline_stages() > 1 ? layers
                                             : par.layers_per_stage(stage);
  }
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
}

}  // namespace

v1::Zone ZoneOf(double bytes, double capacity_bytes, double threshold) {
  if (bytes <= threshold * capacity_bytes) return v1::ZONE_GREEN;
  if (bytes <= capacity_bytes) return v1::ZONE_YELLOW;
  return v1::ZONE_RED;
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
  estimate.set_total_parameters(TotalParameters(shape));
  estimate.mutable_stages()->Reserve(static_cast<int>(stages));
  int peak_index = 0;
  for (uint32_t i = 0; i < stages; ++i) {
    const double layers = StageLayers(resolved, i);
    const std::vector<double> chunks = ChunkLayers(resolved, i);
    const StageFigures figures =
        chunks.empty() ? StageMemoryOf(shape, layout, i, layers)
                       : StageMemoryOfChunks(shape, layout, i, chunks);
    Fill(figures, i, layers,
         static_cast<uint32_t>(MicrobatchesInFlight(layout, i)),
         *estimate.add_stages());
    if (figures.total_bytes() > estimate.stages(peak_index).total_bytes()) {
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
  estimate.set_zone(ZoneOf(peak.total_bytes(), capacity, threshold));
  for (std::string& line : AssumptionsOf(resolved)) {
    estimate.add_assumptions(std::move(line));
  }
  return absl::OkStatus();
}

}  // namespace memgate
