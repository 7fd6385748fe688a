#ifndef MEMGATE_ESTIMATOR_ASSUMPTIONS_H_
#define MEMGATE_ESTIMATOR_ASSUMPTIONS_H_

// What an estimate assumed beyond the paper's setting (bf16 with fp32
// gradients, Adam, FlashAttention, no dropout, no recomputation, Llama's
// SwiGLU / RMSNorm / RoPE without biases), one line per modelled setting
// that differs, so that a refused user sees which knob drove the peak.

#include <string>
#include <vector>

#include "proto/memgate.pb.h"

namespace memgate {

// `job` is resolved and valid. Empty for the paper's own setting.
std::vector<std::string> AssumptionsOf(const v1::Job& job);

}  // namespace memgate

#endif  // MEMGATE_ESTIMATOR_ASSUMPTIONS_H_
