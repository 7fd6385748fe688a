#ifndef MEMGATE_ESTIMATOR_TE_USERBUFFERS_H_
#define MEMGATE_ESTIMATOR_TE_USERBUFFERS_H_

// The communication buffers TransformerEngine's userbuffers hold on every
// GPU when Megatron overlaps tensor-parallel communication with the GEMMs
// (--tp-comm-overlap): fixed allocations outside PyTorch's caching
// allocator, made once at start-up on every rank, sized by the sequence,
// not by the model's depth. Internal to the estimator.
//
// Sources:
// [MI] Megatron-LM megatron/training/initialize.py
//      _initialize_tp_communicators: initialize_ub(shape = [(seq_length x
//      micro_batch_size) / context_parallel_size, hidden_size], tp_size,
//      quantization mode fp8 when --fp8, ub_cfgs from
//      --tp-comm-overlap-cfg's YAML, else TransformerEngine's defaults);
//      arguments.py asserts sequence parallelism.
// [TB] TransformerEngine transformer_engine/pytorch/module/base.py
//      initialize_ub: one communicator a GEMM name, 12 from TE 2.8
//      (qkv/proj/fc1/fc2 fprop, dgrad and wgrad; 10 before, without
//      proj_wgrad and fc2_wgrad); a buffer of `shape` in bf16, or uint8
//      under fp8 for the 8 all-gather names (fp8_buf); the method decides
//      the bytes below.
// [TC] TransformerEngine common/comm_gemm_overlap/comm_gemm_overlap.cpp:
//      CommOverlapBase (pipeline, bulk, external) registers the buffer's
//      bytes; CommOverlapP2PBase (ring_exchange) the same for an
//      all-gather and (2 tp - 1) / tp of them for a reduce-scatter.
//      userbuffers/userbuffers-host.cpp: every communicator also registers
//      its flags (LOCALSIZE, 3.2 MB, in multicast granules) and allocates
//      send/recv ids of 4 and 128 bytes a rank of the world; each
//      registration is rounded up to the multicast granularity (2 MiB).

#include <cstdint>

namespace memgate {

// TransformerEngine's default communicators: 12 (TE 2.8 on), 8 of them
// all-gathers whose buffers are fp8 under fp8 [TB].
inline constexpr int kTeUserbufferCommunicators = 12;
inline constexpr int kTeUserbufferAllGathers = 8;

struct TeUserbufferShape {
  double tokens = 0;  // (s x b) / c: rows of every buffer [MI]
  double hidden = 0;  // h: columns
  uint32_t tensor_parallel = 1;
  uint64_t world_size = 1;  // every rank of the job: the ids [TC]
  bool fp8 = false;
  // --tp-comm-overlap-cfg: a YAML memgate does not read. Any configuration
  // of the 12 names is bounded by each a reduce-scatter ring in bf16,
  // (2 tp - 1) / tp of a 16-bit buffer [TC].
  bool custom_config = false;
};

// Bytes the userbuffers hold on each GPU: the 12 buffers and their
// communicators' flags and ids, each registration in whole 2 MiB granules.
// TE before 2.8 makes 10: counted as 12, an upper bound.
double TeUserbufferBytes(const TeUserbufferShape& shape);

}  // namespace memgate

#endif  // MEMGATE_ESTIMATOR_TE_USERBUFFERS_H_
