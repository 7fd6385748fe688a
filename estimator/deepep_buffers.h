#ifndef MEMGATE_ESTIMATOR_DEEPEP_BUFFERS_H_
#define MEMGATE_ESTIMATOR_DEEPEP_BUFFERS_H_

// The communication buffers DeepEP holds on every GPU of an MoE layer's
// expert group when Megatron dispatches tokens with it
// (--moe-token-dispatcher-type flex, backend deepep): fixed allocations
// outside PyTorch's caching allocator, sized by DeepEP's own formulas
// from the group size, the hidden size and the SMs it is given, not by
// the batch. Internal to the estimator.
//
// Sources:
// [ME] Megatron-LM megatron/core/transformer/moe/fused_a2a.py get_buffer:
//      one Buffer per process for the ETP x EP group, hidden_bytes =
//      h x max(element size, 2), the larger of the dispatch and combine
//      configs' size hints; token_dispatcher.py _DeepepManager: 20 SMs
//      unless --moe-flex-dispatcher-num-sms (--moe-deepep-num-sms) says.
// [DE] DeepEP (deepseek-ai/DeepEP): deep_ep/buffer.py (buffers/legacy.py)
//      get_dispatch_config / get_combine_config, the per-group-size table;
//      csrc/config.hpp (legacy/config.hpp) get_nvl_buffer_size_hint and
//      get_rdma_buffer_size_hint; csrc/deep_ep.cpp (legacy/buffer.hpp)
//      Buffer: a 32 MiB workspace, the RDMA buffer from NVSHMEM's
//      symmetric heap, which DeepEP maps in 2^29-byte granules
//      (NVSHMEM_CUMEM_GRANULARITY) when the group spans nodes.

#include <cstdint>

namespace memgate {

// The SMs Megatron gives DeepEP unless told otherwise [ME].
inline constexpr uint32_t kDefaultDeepEpSms = 20;

// DeepEP has a config for groups of 2, 4, 8, 16, 24, 32, 48, 64, 96, 128,
// 144 and 160 ranks only; any other size fails its assertion at the first
// dispatch [DE].
bool DeepEpSupportsGroup(uint32_t ranks);

// Bytes DeepEP holds on each GPU of a `ranks`-wide group (one of the sizes
// above) for a hidden size `hidden` in `element_bytes`-byte elements
// (training precision), with `num_sms` SMs: the NVLink buffer, the RDMA
// buffer in whole NVSHMEM granules when the group spans nodes (more than 8
// ranks), and the workspace. 0 for an unsupported group.
double DeepEpBufferBytes(double hidden, double element_bytes, uint32_t ranks,
                         uint32_t num_sms);

}  // namespace memgate

#endif  // MEMGATE_ESTIMATOR_DEEPEP_BUFFERS_H_
