#include "estimator/megatron_names.h"

#include "gtest/gtest.h"

namespace memgate {
namespace {

// Every value the proto defines beside UNSPECIFIED has a Megatron name that
// reads back as itself: a value added to the proto without one fails here,
// not as a candidate whose arguments say "unknown".
TEST(MegatronNamesTest, EveryRecomputeModuleRoundTrips) {
  const auto* values = v1::Recompute::Module_descriptor();
  for (int i = 0; i < values->value_count(); ++i) {
    const auto module =
        static_cast<v1::Recompute::Module>(values->value(i)->number());
    if (module == v1::Recompute::MODULE_UNSPECIFIED) continue;
    const std::string name = RecomputeModuleName(module);
    EXPECT_NE(name, "unknown") << values->value(i)->name();
    EXPECT_EQ(RecomputeModuleNamed(name), module) << name;
  }
  EXPECT_EQ(RecomputeModuleName(v1::Recompute::MODULE_MOE_ACT), "moe_act");
  EXPECT_EQ(RecomputeModuleName(static_cast<v1::Recompute::Module>(99)),
            "unknown");
  EXPECT_FALSE(RecomputeModuleNamed("MOE_ACT").has_value());
}

TEST(MegatronNamesTest, EveryShardingStrategyRoundTrips) {
  const auto* values = v1::DataParallelSharding_descriptor();
  for (int i = 0; i < values->value_count(); ++i) {
    const auto sharding =
        static_cast<v1::DataParallelSharding>(values->value(i)->number());
    if (sharding == v1::DATA_PARALLEL_SHARDING_UNSPECIFIED) continue;
    const std::string name = ShardingStrategyName(sharding);
    EXPECT_NE(name, "unknown") << values->value(i)->name();
    EXPECT_EQ(ShardingStrategyNamed(name), sharding) << name;
  }
  EXPECT_EQ(ShardingStrategyName(v1::DATA_PARALLEL_SHARDING_OPTIM_GRADS),
            "optim_grads");
  EXPECT_FALSE(ShardingStrategyNamed("zero3").has_value());
  EXPECT_FALSE(ShardingStrategyNamed("").has_value());
}

}  // namespace
}  // namespace memgate
