#include "estimator/deepep_buffers.h"

#include <algorithm>
#include <cmath>

namespace memgate {
namespace {

// [DE] constants: NUM_MAX_NVL_PEERS (GPUs an NVLink domain holds), the
// per-token metadata the size hints reserve (kNumMaxTopK = 128 int64
// indices and float weights, kNumMaxScales = 128 float scales, an 8-byte
// SourceMeta; RDMA chunks add an int4), the workspace and NVSHMEM's
// granule.
constexpr double kMaxNvlPeers = 8;
constexpr double kTopkMetaBytes = 128 * 8 + 128 * 4 + 128 * 4;
constexpr double kSourceMetaBytes = 8;
constexpr double kRdmaChunkTail = 16;
constexpr double kWorkspaceBytes = 32.0 * 1024 * 1024;
constexpr double kNvshmemGranule = 536870912.0;  // 2^29

// The receive-buffer sizes of get_dispatch_config / get_combine_config
// [DE]: NVLink chunk tokens, and the RDMA chunk tokens after Config's
// constructor aligns them up to a multiple of the send chunk (the larger
// of dispatch's and combine's, as get_buffer takes the larger hint).
struct GroupConfig {
  uint32_t ranks;
  double nvl_recv_tokens;
  double rdma_recv_tokens;
};

// Dispatch / combine send chunks, and what 128 RDMA receive tokens align
// to: 2-8 ranks: (6, 6) -> 132; 16: (20, 12) -> 140 and 132; 24-64: (8, 8)
// -> 128; 96, 128: (12, 8) -> 132; 144, 160: (12, 8) -> 132.
constexpr GroupConfig kGroupConfigs[] = {
    {2, 256, 132},  {4, 256, 132},  {8, 256, 132},   {16, 288, 140},
    {24, 288, 128}, {32, 288, 128}, {48, 288, 128},  {64, 288, 128},
    {96, 480, 132}, {128, 560, 132}, {144, 720, 132}, {160, 720, 132},
};

const GroupConfig* ConfigFor(uint32_t ranks) {
  for (const GroupConfig& c : kGroupConfigs) {
    if (c.ranks == ranks) return &c;
  }
  return nullptr;
}

double AlignUp(double bytes, double to) { return std::ceil(bytes / to) * to; }

}  // namespace

bool DeepEpSupportsGroup(uint32_t ranks) { return ConfigFor(ranks) != nullptr; }

double DeepEpBufferBytes(double hidden, double element_bytes, uint32_t ranks,
                         uint32_t num_sms) {
  const GroupConfig* config = ConfigFor(ranks);
  if (config == nullptr) return 0;
  const double hidden_bytes = hidden * std::max(element_bytes, 2.0);  // [ME]
  const double channels = num_sms / 2;  // one channel per SM pair
  const double nvl_ranks = std::min<double>(ranks, kMaxNvlPeers);
  const double rdma_ranks = std::max(1.0, std::floor(ranks / kMaxNvlPeers));
  // get_nvl_buffer_size_hint: per channel and NVLink peer, a few counters
  // and nvl_recv_tokens tokens with their metadata.
  const double nvl =
      AlignUp(channels * nvl_ranks * (2 * rdma_ranks + 3) * 4 +
                  channels * nvl_ranks * config->nvl_recv_tokens *
                      (hidden_bytes + kSourceMetaBytes + kTopkMetaBytes),
              128);
  double rdma = 0;
  if (ranks > kMaxNvlPeers) {
    // get_rdma_buffer_size_hint: send and receive halves (x 2) per channel
    // and node; then whole NVSHMEM granules.
    rdma = channels * rdma_ranks * (kMaxNvlPeers * 2 + 2) * 2 * 4 +
           channels * rdma_ranks * config->rdma_recv_tokens * 2 *
               (hidden_bytes + kSourceMetaBytes + kTopkMetaBytes +
                kRdmaChunkTail);
    rdma = AlignUp(rdma, kNvshmemGranule);
  }
  return nvl + rdma + kWorkspaceBytes;
}

}  // namespace memgate
