#include "estimator/te_userbuffers.h"

#include "gtest/gtest.h"

namespace memgate {
namespace {

constexpr double kMiB = 1024.0 * 1024;

// Llama-3.1-405B as Meta and NVIDIA run it: 8k tokens, micro-batch 1,
// h = 16384, TP 8, 16,384 GPUs.
TeUserbufferShape Llama405B() {
  TeUserbufferShape s;
  s.tokens = 8192;
  s.hidden = 16384;
  s.tensor_parallel = 8;
  s.world_size = 16384;
  return s;
}

// Each communicator's flags (3.2 MB in two 2 MiB granules), its ids (4 +
// 128 bytes a rank of the world) and its 2-page flag area.
double Communicators(uint64_t world) {
  return kTeUserbufferCommunicators *
         (4 * kMiB + 132.0 * static_cast<double>(world) + 128 * 1024);
}

// TransformerEngine's defaults in bf16: 12 buffers of (s x b / c) x h, 2
// bytes an element, 256 MiB each for the 405B (3 GiB), plus the
// communicators' 100 MiB at 16,384 ranks.
TEST(TeUserbuffersTest, TwelveBuffersOfTheTokensTimesHidden) {
  const TeUserbufferShape s = Llama405B();
  const double buffers = 12 * 2.0 * 8192 * 16384;
  EXPECT_DOUBLE_EQ(buffers, 3 * 1024 * kMiB);
  EXPECT_DOUBLE_EQ(TeUserbufferBytes(s), buffers + Communicators(16384));
  // Context parallelism splits the tokens every buffer holds.
  TeUserbufferShape cp2 = s;
  cp2.tokens /= 2;
  EXPECT_DOUBLE_EQ(TeUserbufferBytes(cp2), buffers / 2 + Communicators(16384));
}

// Under fp8 the 8 all-gathers' buffers are fp8 (uint8) and the 4
// reduce-scatters' stay bf16: 16 bytes a token-column for 24.
TEST(TeUserbuffersTest, Fp8HalvesTheAllGathersOnly) {
  TeUserbufferShape s = Llama405B();
  s.fp8 = true;
  EXPECT_DOUBLE_EQ(TeUserbufferBytes(s),
                   (8 * 1.0 + 4 * 2.0) * 8192 * 16384 + Communicators(16384));
}

// A configuration memgate does not read is bounded by every buffer a bf16
// reduce-scatter ring, (2t - 1) / t of it: never below the defaults.
TEST(TeUserbuffersTest, ACustomConfigurationIsBoundedByReduceScatterRings) {
  TeUserbufferShape s = Llama405B();
  const double defaults = TeUserbufferBytes(s);
  s.custom_config = true;
  EXPECT_DOUBLE_EQ(TeUserbufferBytes(s),
                   12 * 2.0 * 8192 * 16384 * 15 / 8 + Communicators(16384));
  EXPECT_GT(TeUserbufferBytes(s), defaults);
  s.fp8 = true;  // the bound is bf16 whatever the recipe
  EXPECT_GT(TeUserbufferBytes(s), defaults);
}

// Every registration is whole 2 MiB multicast granules: a tiny shape still
// takes one a buffer.
TEST(TeUserbuffersTest, RegistrationsAreWholeGranules) {
  TeUserbufferShape s;
  s.tokens = 16;
  s.hidden = 64;
  s.tensor_parallel = 2;
  s.world_size = 2;
  EXPECT_DOUBLE_EQ(TeUserbufferBytes(s), 12 * 2 * kMiB + Communicators(2));
}

}  // namespace
}  // namespace memgate
