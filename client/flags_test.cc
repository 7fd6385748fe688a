#include "client/flags.h"

#include "gtest/gtest.h"

namespace memgate::cli {
namespace {

struct Parsed {
  std::optional<std::string> name;
  std::optional<uint32_t> count;
  std::optional<double> ratio;
  std::optional<bool> on;
};

FlagSet Flags(Parsed& p) {
  FlagSet f("usage: test");
  f.String("name", "S", "a name", &p.name);
  f.Uint32("count", "a count", &p.count);
  f.Double("ratio", "F", "a ratio", &p.ratio);
  f.Bool("on", "a switch", &p.on);
  return f;
}

TEST(FlagsTest, ParsesEqualsAndSpaceForms) {
  Parsed p;
  FlagSet f = Flags(p);
  ASSERT_TRUE(f.Parse({"--name=x", "--count", "7", "--ratio=0.5", "--on"}).ok());
  EXPECT_EQ(*p.name, "x");
  EXPECT_EQ(*p.count, 7u);
  EXPECT_DOUBLE_EQ(*p.ratio, 0.5);
  EXPECT_TRUE(*p.on);
}

TEST(FlagsTest, AbsentFlagsStayUnset) {
  Parsed p;
  FlagSet f = Flags(p);
  ASSERT_TRUE(f.Parse({}).ok());
  EXPECT_FALSE(p.name || p.count || p.ratio || p.on);
}

TEST(FlagsTest, NegatedBoolean) {
  Parsed p;
  FlagSet f = Flags(p);
  ASSERT_TRUE(f.Parse({"--no-on"}).ok());
  EXPECT_FALSE(*p.on);
  ASSERT_TRUE(f.Parse({"--on=true"}).ok());
  EXPECT_TRUE(*p.on);
}

TEST(FlagsTest, ErrorsNameTheFlag) {
  for (const std::vector<std::string>& bad :
       std::vector<std::vector<std::string>>{{"--count=-1"},
                                             {"--count=4294967296"},
                                             {"--count=+3"},
                                             {"--count= 3"},
                                             {"--count=3x"},
                                             {"--ratio=nan"},
                                             {"--ratio=inf"},
                                             {"--on=maybe"},
                                             {"--name="},
                                             {"--count"},
                                             {"--what=1"},
                                             {"--no-count"}}) {
    Parsed p;
    FlagSet f = Flags(p);
    const absl::Status s = f.Parse(bad);
    ASSERT_FALSE(s.ok()) << bad[0];
    const std::string name = bad[0].substr(0, bad[0].find('='));
    EXPECT_NE(s.message().find(name), std::string::npos) << s;
  }
}

// A count of 0 is refused by name: memgate's requests read 0 as unset, so
// --ep=0 or --gbs=0 was a default the user never asked for. A flag that
// documents 0 (plan's --top) allows it.
TEST(FlagsTest, AZeroCountIsRefusedUnlessTheFlagAllowsIt) {
  Parsed p;
  FlagSet f = Flags(p);
  const absl::Status zero = f.Parse({"--count=0"});
  EXPECT_EQ(zero.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(zero.message(), "--count: must be at least 1 (got '0')");
  EXPECT_FALSE(p.count);
  std::optional<uint32_t> top;
  FlagSet allowing("usage: test");
  allowing.Uint32("top", "how many", &top, FlagSet::ZeroIs::kAllowed);
  ASSERT_TRUE(allowing.Parse({"--top=0"}).ok());
  EXPECT_EQ(top, 0u);
}

TEST(FlagsTest, RestAfterDoubleDash) {
  Parsed p;
  FlagSet f = Flags(p);
  std::vector<std::string> rest;
  ASSERT_TRUE(f.Parse({"--count=1", "--", "torchrun", "--count=9"}, &rest).ok());
  EXPECT_EQ(*p.count, 1u);
  EXPECT_EQ(rest, (std::vector<std::string>{"torchrun", "--count=9"}));
  EXPECT_FALSE(f.Parse({"--", "x"}).ok());  // no rest accepted
  EXPECT_FALSE(f.Parse({"stray"}).ok());
}

TEST(FlagsTest, HelpListsFlags) {
  Parsed p;
  FlagSet f = Flags(p);
  ASSERT_TRUE(f.Parse({"--help"}).ok());
  EXPECT_TRUE(f.help_requested());
  const std::string help = f.Help();
  EXPECT_NE(help.find("usage: test"), std::string::npos);
  EXPECT_NE(help.find("--count=N"), std::string::npos);
  EXPECT_NE(help.find("--on "), std::string::npos);
}

}  // namespace
}  // namespace memgate::cli
