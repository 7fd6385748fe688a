#include "estimator/deepep_buffers.h"

#include <cmath>

#include "gtest/gtest.h"

namespace memgate {
namespace {

constexpr double kMiB = 1024.0 * 1024;

// Qwen3-235B's h = 4096 in bf16 (8,192 hidden bytes), 20 SMs (10
// channels), worked by hand from DeepEP's size hints:
// - 8 ranks (one node): NVLink only. 10 x 8 x (2 x 1 + 3) x 4 = 1,600 B of
//   counters, 10 x 8 x 256 tokens x (8,192 + 8 + 1,024 + 512 + 512) =
//   209,879,040 B; 209,880,640 aligned to 128 -> 209,880,704; + 32 MiB.
// - 32 ranks (4 nodes): NVLink 10 x 8 x (2 x 4 + 3) x 4 = 3,520 +
//   10 x 8 x 288 x 10,248 = 236,113,920 -> 236,117,504 aligned; RDMA
//   10 x 4 x 18 x 2 x 4 = 5,760 + 10 x 4 x 128 x 2 x 10,264 =
//   105,103,360: one 512 MiB NVSHMEM granule; + 32 MiB.
TEST(DeepEpBuffersTest, SizesFollowDeepEpsHintsWorkedByHand) {
  EXPECT_DOUBLE_EQ(DeepEpBufferBytes(4096, 2, 8, 20),
                   209880704.0 + 32 * kMiB);
  EXPECT_DOUBLE_EQ(DeepEpBufferBytes(4096, 2, 32, 20),
                   236117504.0 + 512 * kMiB + 32 * kMiB);
}

// Across nodes the RDMA buffer comes in whole 2^29-byte granules: DeepSeek-
// V3's h = 7168 over 64 ranks (8 nodes) needs 10 x 8 x 128 x 2 x 16,408 =
// 335,994,880 B of RDMA buffer, still one granule; its NVLink buffer grows
// with the hidden size: 10 x 8 x 288 x (14,336 + 2,056) + 10 x 8 x 19 x 4.
TEST(DeepEpBuffersTest, RdmaBufferTakesWholeNvshmemGranules) {
  const double nvl = 10.0 * 8 * 288 * (14336 + 2056) + 10.0 * 8 * 19 * 4;
  const double aligned = std::ceil(nvl / 128) * 128;
  EXPECT_DOUBLE_EQ(DeepEpBufferBytes(7168, 2, 64, 20),
                   aligned + 512 * kMiB + 32 * kMiB);
  // More SMs, more channels: a larger NVLink buffer (the same granule).
  EXPECT_GT(DeepEpBufferBytes(7168, 2, 64, 48),
            DeepEpBufferBytes(7168, 2, 64, 20));
  // fp32 training sends 4-byte hidden states; fp8 still 2 (max(size, 2)).
  EXPECT_GT(DeepEpBufferBytes(4096, 4, 8, 20),
            DeepEpBufferBytes(4096, 2, 8, 20));
  EXPECT_DOUBLE_EQ(DeepEpBufferBytes(4096, 1, 8, 20),
                   DeepEpBufferBytes(4096, 2, 8, 20));
}

TEST(DeepEpBuffersTest, OnlyDeepEpsConfiguredGroupSizes) {
  for (uint32_t ranks : {2u, 4u, 8u, 16u, 24u, 32u, 48u, 64u, 96u, 128u,
                         144u, 160u}) {
    EXPECT_TRUE(DeepEpSupportsGroup(ranks)) << ranks;
    EXPECT_GT(DeepEpBufferBytes(4096, 2, ranks, 20), 32 * kMiB) << ranks;
  }
  for (uint32_t ranks : {0u, 1u, 3u, 6u, 12u, 40u, 256u, 1024u}) {
    EXPECT_FALSE(DeepEpSupportsGroup(ranks)) << ranks;
    EXPECT_EQ(DeepEpBufferBytes(4096, 2, ranks, 20), 0) << ranks;
  }
}

}  // namespace
}  // namespace memgate
