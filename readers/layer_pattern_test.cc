#include "readers/layer_pattern.h"

#include <string>

#include "gtest/gtest.h"

namespace memgate {
namespace {

std::string Error(absl::string_view text, uint32_t layers) {
  absl::StatusOr<std::vector<uint32_t>> p = ParseMoeLayerPattern(text, layers);
  return p.ok() ? "ok" : std::string(p.status().message());
}

// arguments.py's own examples and DeepSeek-V3's pattern.
TEST(LayerPatternTest, ReadsMegatronsExamples) {
  EXPECT_EQ(*ParseMoeLayerPattern("([1]*3+[0]*1)*3", 12),
            (std::vector<uint32_t>{1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 0}));
  EXPECT_EQ(*ParseMoeLayerPattern("([1]*3+[0]*2)*2", 10),
            (std::vector<uint32_t>{1, 1, 1, 0, 0, 1, 1, 1, 0, 0}));
  absl::StatusOr<std::vector<uint32_t>> v3 =
      ParseMoeLayerPattern("([0]*3+[1]*58)", 61);
  ASSERT_TRUE(v3.ok()) << v3.status();
  EXPECT_EQ((*v3)[2], 0u);
  EXPECT_EQ((*v3)[3], 1u);
  EXPECT_EQ(*ParseMoeLayerPattern(" [0, 1] + 2*[1] ", 4),
            (std::vector<uint32_t>{0, 1, 1, 1}));
}

TEST(LayerPatternTest, BadPatternsAreNamed) {
  EXPECT_NE(Error("[0]*3+[1]*58", 60).find("lists 61 layers"),
            std::string::npos);
  EXPECT_NE(Error("[2]*4", 4).find("must be 0 or 1"), std::string::npos);
  EXPECT_NE(Error("([1]*4", 4).find("not closed"), std::string::npos);
  EXPECT_NE(Error("[1]*4; import os", 4).find("unexpected"),
            std::string::npos);
  EXPECT_NE(Error("__import__('os')", 4).find("expected a list"),
            std::string::npos);
  EXPECT_EQ(Error("[1]*4", 4).rfind("--moe-layer-freq: ", 0),
            std::string::npos);  // a valid pattern: "ok"
  EXPECT_EQ(Error("[1]*3", 4).rfind("--moe-layer-freq: ", 0), 0u);
}

// --window-attn-skip-freq's list: read by layer number, so a longer list
// is its first `num_layers` entries and a shorter one is refused (Megatron
// raises past its end); its errors name that flag.
TEST(LayerPatternTest, AWindowPatternMayRunPastTheLayers) {
  absl::StatusOr<std::vector<uint32_t>> longer =
      ParseLayerPattern("[1,0]*4", 6, "window-attn-skip-freq",
                        /*longer_ok=*/true);
  ASSERT_TRUE(longer.ok()) << longer.status();
  EXPECT_EQ(*longer, (std::vector<uint32_t>{1, 0, 1, 0, 1, 0}));
  const absl::StatusOr<std::vector<uint32_t>> shorter =
      ParseLayerPattern("[1,0]*2", 6, "window-attn-skip-freq", true);
  ASSERT_FALSE(shorter.ok());
  EXPECT_EQ(shorter.status().message().rfind(
                "--window-attn-skip-freq: the pattern lists 4 layers", 0),
            0u)
      << shorter.status();
  EXPECT_FALSE(ParseMoeLayerPattern("[1,0]*4", 6).ok());  // exact there
  EXPECT_EQ(ParseLayerPattern("[2]", 1, "window-attn-skip-freq", true)
                .status()
                .message(),
            "--window-attn-skip-freq: list entries must be 0 or 1");
}

// The size is bounded before anything is built, and nesting is bounded:
// each bomb is refused by the check that runs before the list grows (its
// message says which). No clock: a bomb that was built (2^48 entries) or
// recursed into would exhaust memory, the stack or the test's timeout.
TEST(LayerPatternTest, BombsAreRefusedCheaply) {
  EXPECT_NE(Error("(([1]*65536)*65536)*65536", 4).find("grows past"),
            std::string::npos);
  EXPECT_NE(Error("[1]*99999999999999999999", 4).find("grows past"),
            std::string::npos);
  EXPECT_NE(Error(std::string(100, '(') + "[1]" + std::string(100, ')'), 1)
                .find("nested deeper"),
            std::string::npos);
  EXPECT_NE(Error(std::string(300000, '['), 1).find("too long"),
            std::string::npos);
}

}  // namespace
}  // namespace memgate
