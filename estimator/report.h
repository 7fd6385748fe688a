#ifndef MEMGATE_ESTIMATOR_REPORT_H_
#define MEMGATE_ESTIMATOR_REPORT_H_

// Human-readable renderings of estimates, shared by the CLI and the
// service's decision reasons so both say the same thing the same way.

#include <string>

#include "proto/memgate.pb.h"

namespace memgate {

// "GREEN" / "YELLOW" / "RED".
std::string ZoneName(v1::Zone zone);

// What sets a plan candidate apart beyond (TP, CP, PP, MBS), each part
// followed by "; ": "EP 8, ETP 1; first/last stage 7/7 layers (embedding/
// loss in the split); interleaved x4; recompute 1 layer a chunk; " (and
// "FSDP optim_grads; " for a Megatron-FSDP plan's). Empty
// for a plain layout.
std::string CandidateVariant(const v1::Candidate& c);

// Recompute modules (Candidate.recompute_modules,
// Decision.fits_with_recompute_modules) as Megatron's --recompute-modules
// value: "moe_act layernorm mla_up_proj".
std::string RecomputeModulesText(
    const google::protobuf::RepeatedField<int>& modules);

// Megatron's arguments for selective recomputation of `modules`
// (Candidate.recompute_modules, Decision.fits_with_recompute_modules):
// "--recompute-granularity selective --recompute-modules moe_act layernorm
// --moe-grouped-gemm" (moe_act runs with grouped GEMMs only).
std::string SelectiveRecomputeArguments(
    const google::protobuf::RepeatedField<int>& modules);

// The Megatron-LM arguments that run a plan candidate (its
// megatron_arguments field): "--tensor-model-parallel-size 8 ... ", without
// the model's or the precision's flags, with the dataloader's attention
// mask turned off (plans do not count it).
std::string CandidateMegatronArguments(const v1::Candidate& c,
                                       uint32_t global_batch_size,
                                       uint32_t seq_length);

// "weights 3.47 + gradients 6.94 + optimizer 1.20 + activations 26.00 GiB"
std::string BreakdownLine(const v1::StageMemory& stage);

// What a stage whose transient overflows (StageWhoseTransientOverflows)
// holds and makes, in words: "<transient>, X GiB beside stage N's Y GiB",
// naming the attention score buffer where Y includes it.
std::string TransientOverflowText(const v1::StageMemory& stage);

// The job's key settings on one line: model, GPUs, TP/CP/PP/DP, MBS, seq.
std::string JobSummaryLine(const v1::Job& job, uint32_t data_parallel);

// A per-stage table (GiB) followed by the peak, its share of capacity and
// the zone.
std::string FormatEstimateTable(const v1::Estimate& estimate);

}  // namespace memgate

#endif  // MEMGATE_ESTIMATOR_REPORT_H_
