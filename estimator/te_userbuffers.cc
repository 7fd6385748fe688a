#include "estimator/te_userbuffers.h"

#include <cmath>

namespace memgate {
namespace {

// CU_MULTICAST_GRANULARITY_MINIMUM on Hopper and Blackwell: registrations
// are whole granules [TC].
constexpr double kGranuleBytes = 2.0 * 1024 * 1024;

double InGranules(double bytes) {
  return std::ceil(bytes / kGranuleBytes) * kGranuleBytes;
}

// userbuffers.h LOCALSIZE / 4: NVTE_REG0_OFFSET ((2 x 32 regions) x 32
// NVLink peers + (2 x 32 x 32 SMs + 32 ops) x 2 + 8192 peers) plus
// NVTE_REG0_FLAGS (1024 x 5 op types + 8192 peers x 32 regions x 3).
constexpr double kFlagInts = (2 * 32) * 32 + (2 * 32 * 32 + 32) * 2 + 8192 +
                             1024 * 5 + 8192 * 32 * 3;

}  // namespace

double TeUserbufferBytes(const TeUserbufferShape& shape) {
  const double elements = shape.tokens * shape.hidden;
  const double t = shape.tensor_parallel;
  double buffers = 0;
  if (shape.custom_config) {
    buffers = kTeUserbufferCommunicators *
              InGranules(2 * elements * (2 * t - 1) / t);
  } else {
    // TE's defaults [TB]: the all-gathers (ring exchange, bulk, external)
    // hold the buffer as it is, fp8 under fp8; the reduce-scatters
    // (pipeline, bulk) in bf16 through CommOverlapBase, whole.
    const double gather_bytes = shape.fp8 ? 1 : 2;
    buffers = kTeUserbufferAllGathers * InGranules(gather_bytes * elements) +
              (kTeUserbufferCommunicators - kTeUserbufferAllGathers) *
                  InGranules(2 * elements);
  }
  // Each communicator: its flags region, its ids and a 2-page flag area
  // (cudaMalloc 2 x 64 KiB) [TC].
  const double world = static_cast<double>(shape.world_size);
  const double per_communicator = InGranules(4 * kFlagInts) +
                                  4 * world + 4 * 32 * world + 128 * 1024;
  return buffers + kTeUserbufferCommunicators * per_communicator;
}

}  // namespace memgate
