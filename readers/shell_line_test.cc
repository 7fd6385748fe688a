#include "readers/shell_line.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace memgate {
namespace {

using Commands = std::vector<std::vector<std::string>>;

Commands Split(const std::string& line) {
  absl::StatusOr<Commands> c = ShellLineCommands(line);
  EXPECT_TRUE(c.ok()) << line << ": " << c.status();
  return c.ok() ? *c : Commands{};
}

TEST(ShellLineTest, ControlOperatorsEndCommandsGluedOrNot) {
  EXPECT_EQ(Split("torchrun x.py --bf16; echo done"),
            (Commands{{"torchrun", "x.py", "--bf16"}, {"echo", "done"}}));
  EXPECT_EQ(Split("for i in 1 2; do torchrun --tp-comm-overlap; done"),
            (Commands{{"for", "i", "in", "1", "2"},
                      {"do", "torchrun", "--tp-comm-overlap"},
                      {"done"}}));
  EXPECT_EQ(Split("cd $D&&a --x||b|c|&d&e;;f;&g(h)i\nj"),
            (Commands{{"cd", "$D"}, {"a", "--x"}, {"b"}, {"c"}, {"d"},
                      {"e"}, {"f"}, {"g"}, {"h"}, {"i"}, {"j"}}));
}

TEST(ShellLineTest, RedirectionsAndTheirTargetsAreDropped) {
  EXPECT_EQ(Split("a --x 2>&1 | tee $LOG"),
            (Commands{{"a", "--x"}, {"tee", "$LOG"}}));
  EXPECT_EQ(Split("a > out.log --y >>$L --z &> l <in 3<&0 <<<s --w"),
            (Commands{{"a", "--y", "--z", "--w"}}));
  EXPECT_EQ(Split("a --x>log --y 10>f"), (Commands{{"a", "--x", "--y"}}));
  // Quoted digits are a word, not a file descriptor.
  EXPECT_EQ(Split("a \"2\">f"), (Commands{{"a", "2"}}));
}

TEST(ShellLineTest, QuotesKeepWhatTheShellWouldSplitOn) {
  EXPECT_EQ(Split("a --wandb-exp-name '#1' --micro-batch-size 8"),
            (Commands{{"a", "--wandb-exp-name", "#1", "--micro-batch-size",
                       "8"}}));
  EXPECT_EQ(Split("a --name \"x | y; z\" --n 'p && q' \\; \\#b"),
            (Commands{{"a", "--name", "x | y; z", "--n", "p && q", ";",
                       "#b"}}));
  EXPECT_EQ(Split("a \"q\\\"uote \\$x \\n\" '' b\"c\"d"),
            (Commands{{"a", "q\"uote $x \\n", "", "bcd"}}));
  // A # inside a word is the word's.
  EXPECT_EQ(Split("a b#c # --micro-batch-size 8"),
            (Commands{{"a", "b#c"}}));
}

TEST(ShellLineTest, SubstitutionsStayWholeAsWritten) {
  EXPECT_EQ(Split("a --n \"$(date \"+%F;%T\")\" --m 8"),
            (Commands{{"a", "--n", "$(date \"+%F;%T\")", "--m", "8"}}));
  EXPECT_EQ(Split("a $(cat args | head -1) ${X:-a b} `echo ;` $((1 + (2)))"),
            (Commands{{"a", "$(cat args | head -1)", "${X:-a b}",
                       "`echo ;`", "$((1 + (2)))"}}));
  EXPECT_EQ(Split("a \"${ARGS[@]}\" $'x'"),
            (Commands{{"a", "${ARGS[@]}", "$x"}}));
}

TEST(ShellLineTest, WhatIsLeftOpenIsRefused) {
  for (const char* line : {"a 'b", "a \"b", "a $(b", "a ${b", "a `b",
                           "a $(b \"c)\"", "a \"$(b)"}) {
    const absl::StatusOr<Commands> c = ShellLineCommands(line);
    ASSERT_FALSE(c.ok()) << line;
    EXPECT_NE(c.status().message().find("is not closed on its line"),
              std::string::npos)
        << c.status();
  }
  std::string deep = "a ";
  for (size_t i = 0; i <= kMaxShellNesting; ++i) deep += "$(";
  const absl::StatusOr<Commands> nested = ShellLineCommands(deep);
  ASSERT_FALSE(nested.ok());
  EXPECT_NE(nested.status().message().find("nested more than 64 deep"),
            std::string::npos)
      << nested.status();
}

// Bounds: one pass, whatever the line holds (a megabyte of operators,
// quotes or substitutions each): what comes back is no larger than the
// line.
TEST(ShellLineTest, AHostileLineIsOnePass) {
  for (const char* piece : {";", "a ", "'x'", "$(x)", "2>f ", "\\;"}) {
    std::string line;
    while (line.size() < (1u << 20)) line += piece;
    const absl::StatusOr<Commands> c = ShellLineCommands(line);
    ASSERT_TRUE(c.ok()) << piece << ": " << c.status();
    size_t bytes = 0;
    for (const auto& command : *c) {
      for (const auto& word : command) bytes += word.size() + 1;
    }
    EXPECT_LE(bytes, line.size() + 1) << piece;
  }
}

}  // namespace
}  // namespace memgate
