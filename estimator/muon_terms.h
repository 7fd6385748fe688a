#ifndef MEMGATE_ESTIMATOR_MUON_TERMS_H_
#define MEMGATE_ESTIMATOR_MUON_TERMS_H_

// Muon's optimizer step (Megatron --optimizer muon), used by
// memory_model.cc [MU]. Internal to the estimator. Figures are bytes on
// one GPU.

#include "estimator/memory_model.h"

namespace memgate {

// A stage's matrices, as Muon sees them.
struct MuonStage {
  LayerMix layers;         // the stage's dense and MoE decoder layers
  bool first = false;      // holds the position embedding
  double mtp_layers = 0;   // MTP layers built on this stage
  bool mtp_is_moe = false;  // their transformer layer's kind
};

// What one matrix's Muon step allocates at its largest beside the states
// (muon_terms.cc [MU]): the Nesterov blend, the TP shards all-gathered and
// concatenated (duplicated mode), the Newton-Schulz iteration's working
// set and the scaled update; the largest of the stage's matrices, since
// the step runs them one at a time.
double MuonStepBytes(const ModelShape& m, const Layout& l,
                     const MuonStage& stage);

}  // namespace memgate

#endif  // MEMGATE_ESTIMATOR_MUON_TERMS_H_
