#include "estimator/megatron_argument_names.h"

#include <algorithm>
#include <iterator>
#include <set>
#include <string>

#include "estimator/megatron_arguments.h"
#include "gtest/gtest.h"

namespace memgate {
namespace {

constexpr absl::string_view kGenerated[] = {
#include "estimator/megatron_argument_names.inc"
};

// The lookup is a binary search: the generated list must be sorted and
// free of repeats, and every name in it found.
TEST(MegatronArgumentNamesTest, TheGeneratedListIsSortedAndFound) {
  EXPECT_GT(std::size(kGenerated), 900u);
  EXPECT_TRUE(std::is_sorted(std::begin(kGenerated), std::end(kGenerated)));
  EXPECT_EQ(std::adjacent_find(std::begin(kGenerated), std::end(kGenerated)),
            std::end(kGenerated));
  for (absl::string_view name : kGenerated) {
    EXPECT_TRUE(IsMegatronArgumentName(name)) << name;
  }
}

// Both of Megatron's sources of arguments are in it: literal add_argument
// calls and the groups generated from config dataclasses (a field true by
// default as --no-/--disable-).
TEST(MegatronArgumentNamesTest, LiteralAndGeneratedArgumentsAreListed) {
  for (const char* name :
       {"data-path", "save", "lr", "recompute-granularity",
        "num-virtual-stages-per-pipeline-rank", "padded-vocab-size",
        "attention-output-gate", "no-fp8-wgrad", "disable-fp8-wgrad",
        "eval-micro-batch-size", "seed"}) {
    EXPECT_TRUE(IsMegatronArgumentName(name)) << name;
  }
  for (const char* name : {"", "some-new-flag", "fp8-wgrad-", "--save"}) {
    EXPECT_FALSE(IsMegatronArgumentName(name)) << name;
  }
}

// Every memory-relevant argument memgate's table knows is Megatron's at
// the reviewed revision, but for older spellings the table keeps to refuse
// or read them.
TEST(MegatronArgumentNamesTest, TheTableIsMegatronsButForOlderSpellings) {
  const std::set<std::string> older = {
      "fp4", "fp8", "use-custom-fsdp", "checkpoint-activations",
      "model-parallel-size", "moe-enable-deepep", "moe-deepep-num-sms"};
  for (const MegatronArgument& a : MegatronMemoryArguments()) {
    if (older.count(a.name)) continue;
    EXPECT_TRUE(IsMegatronArgumentName(a.name)) << a.name;
  }
}

}  // namespace
}  // namespace memgate
