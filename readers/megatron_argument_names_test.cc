#include "readers/megatron_argument_names.h"

#include <algorithm>
#include <iterator>
#include <set>
#include <string>

#include "gtest/gtest.h"
#include "readers/megatron_arguments.h"

namespace memgate {
namespace {

constexpr absl::string_view kGenerated[] = {
#include "readers/megatron_argument_names.inc"
};

constexpr absl::string_view kAfterCore0120[] = {
#include "readers/megatron_arguments_after_core_0_12_0.inc"
};

constexpr absl::string_view kRemoved[] = {
#include "readers/megatron_arguments_removed.inc"
};

constexpr absl::string_view kSwitches[] = {
#include "readers/megatron_argument_switches.inc"
};

// The switches (arguments that take no value) are a sorted subset of the
// names, agree with the table's own (MegatronArgument.takes_value), and
// hold both of Megatron's kinds: literal store_true / store_false calls
// and config bool fields; arguments that take values are not among them.
TEST(MegatronArgumentNamesTest, SwitchesTakeNoValue) {
  EXPECT_GT(std::size(kSwitches), 300u);
  EXPECT_TRUE(std::is_sorted(std::begin(kSwitches), std::end(kSwitches)));
  for (absl::string_view name : kSwitches) {
    EXPECT_TRUE(IsMegatronArgumentName(name)) << name;
    EXPECT_TRUE(IsMegatronSwitch(name)) << name;
  }
  for (const MegatronArgument& a : MegatronMemoryArguments()) {
    if (!std::binary_search(std::begin(kGenerated), std::end(kGenerated),
                            absl::string_view(a.name))) {
      continue;  // an older release's spelling
    }
    EXPECT_EQ(IsMegatronSwitch(a.name), !a.takes_value) << a.name;
  }
  for (const char* name :
       {"log-throughput", "use-mcore-models", "no-load-optim", "mock-data",
        "overlap-grad-reduce", "no-persist-layer-norm", "eod-mask-loss"}) {
    EXPECT_TRUE(IsMegatronSwitch(name)) << name;
  }
  for (const char* name : {"data-path", "save", "lr", "split", "seed",
                           "tokenizer-model", "cuda-graph-scope",
                           "some-new-flag"}) {
    EXPECT_FALSE(IsMegatronSwitch(name)) << name;
  }
}

// The lookup is a binary search: the generated list must be sorted and
// free of repeats, and every name in it found.
TEST(MegatronArgumentNamesTest, TheGeneratedListIsSortedAndFound) {
  EXPECT_GT(std::size(kGenerated), 850u);
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

// Config fields a factory call excludes have no command-line argument
// (arguments.py _add_network_size_args: "no CLI argument exists for
// these", callables, fields spelt otherwise): a launch that gives one is
// told memgate did not read it. Their literal spellings stay.
TEST(MegatronArgumentNamesTest, FieldsWithoutACommandLineArgumentAreNot) {
  for (const char* name :
       {"activation-func-fp8-input-store", "virtual-pipeline-model-parallel-size",
        "num-layers-in-first-pipeline-stage", "params-dtype", "cpu-offloading",
        "gated-linear-unit", "num-moe-experts", "gradient-accumulation-fusion",
        "log-throughput-to-tensorboard"}) {
    EXPECT_FALSE(IsMegatronArgumentName(name)) << name;
  }
  for (const char* name :
       {"no-gradient-accumulation-fusion", "num-experts", "fp8-param-gather",
        "decoder-first-pipeline-num-layers", "num-layers-per-virtual-pipeline-stage",
        "no-save-optim", "cpu-offloading-num-layers"}) {
    EXPECT_TRUE(IsMegatronArgumentName(name)) << name;
  }
}

// Every memory-relevant argument memgate's table knows is Megatron's at
// the reviewed revision, but for older spellings the table keeps to refuse
// or read them.
TEST(MegatronArgumentNamesTest, TheTableIsMegatronsButForOlderSpellings) {
  const std::set<std::string> older = {
      "fp4", "fp8", "use-custom-fsdp", "checkpoint-activations",
      "model-parallel-size", "moe-enable-deepep", "moe-deepep-num-sms",
      "moe-use-legacy-grouped-gemm"};
  for (const MegatronArgument& a : MegatronMemoryArguments()) {
    if (older.count(a.name)) continue;
    EXPECT_TRUE(IsMegatronArgumentName(a.name)) << a.name;
  }
}

// The arguments that date a launch after core 0.12.0 are Megatron's,
// sorted and found; those the DeepSeek-V3 recipe and later MoE launches
// use are among them, and arguments core 0.12.0 already had are not.
TEST(MegatronArgumentNamesTest, ArgumentsAfterCore0120DateALaunch) {
  EXPECT_GT(std::size(kAfterCore0120), 400u);
  EXPECT_TRUE(
      std::is_sorted(std::begin(kAfterCore0120), std::end(kAfterCore0120)));
  for (absl::string_view name : kAfterCore0120) {
    EXPECT_TRUE(IsArgumentAfterCore0120(name)) << name;
    EXPECT_TRUE(IsMegatronArgumentName(name)) << name;
  }
  for (const char* name :
       {"overlap-moe-expert-parallel-comm", "pipeline-model-parallel-layout",
        "moe-router-padding-for-fp8", "delay-wgrad-compute"}) {
    EXPECT_TRUE(IsArgumentAfterCore0120(name)) << name;
  }
  for (const char* name :
       {"num-experts", "moe-router-topk", "moe-token-dispatcher-type",
        "moe-permute-fusion", "recompute-modules", "mtp-num-layers",
        "moe-apply-probs-on-input", "bf16", "some-new-flag"}) {
    EXPECT_FALSE(IsArgumentAfterCore0120(name)) << name;
  }
}

// memgate reads launches of the releases from core 0.12.0 on: their
// arguments that the reviewed revision no longer has are known too
// (sorted, found, none of the revision's own), and the memory-relevant
// ones among them are in the table (refused: Megatron's legacy models,
// extended expert TP, encoder-decoder and hybrid Mamba sizes, Retro; or
// an older spelling), so a 0.12 launch that gives one is not read past
// with a note alone.
TEST(MegatronArgumentNamesTest, ArgumentsOfReleasesSinceCore0120AreReviewed) {
  EXPECT_GT(std::size(kRemoved), 40u);
  EXPECT_TRUE(std::is_sorted(std::begin(kRemoved), std::end(kRemoved)));
  for (absl::string_view name : kRemoved) {
    EXPECT_TRUE(IsMegatronArgumentName(name)) << name;
    EXPECT_FALSE(std::binary_search(std::begin(kGenerated),
                                    std::end(kGenerated), name))
        << name;
  }
  std::set<std::string> in_table;
  for (const MegatronArgument& a : MegatronMemoryArguments()) {
    in_table.insert(a.name);
  }
  for (const char* name :
       {"use-legacy-models", "moe-extended-tp",
        "encoder-tensor-model-parallel-size",
        "encoder-pipeline-model-parallel-size",
        "pipeline-model-parallel-split-rank", "hybrid-attention-ratio",
        "hybrid-mlp-ratio", "retro-add-retriever", "use-custom-fsdp",
        "moe-use-legacy-grouped-gemm",
        "keep-fp8-transpose-cache-when-using-custom-fsdp"}) {
    EXPECT_TRUE(IsMegatronArgumentName(name)) << name;
    EXPECT_TRUE(in_table.count(name)) << name;
  }
}

}  // namespace
}  // namespace memgate
