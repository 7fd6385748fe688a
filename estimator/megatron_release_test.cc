#include "estimator/megatron_release.h"

#include <string>

#include "estimator/job_resolver.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace memgate {
namespace {

using ::testing::HasSubstr;
using Applied = v1::MoeConfig::ProbsApplied;

TEST(MegatronReleaseTest, ReadsTheFormsOfMegatronsTags) {
  absl::StatusOr<MegatronCoreRelease> r = ParseMegatronCoreRelease("0.13.0");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->major, 0u);
  EXPECT_EQ(r->minor, 13u);
  EXPECT_EQ(r->patch, 0);
  EXPECT_EQ(r->rc, -1);
  r = ParseMegatronCoreRelease("core_v0.14.0rc2");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->minor, 14u);
  EXPECT_EQ(r->patch, 0);
  EXPECT_EQ(r->rc, 2);
  r = ParseMegatronCoreRelease("v0.12.1");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->patch, 1);
  r = ParseMegatronCoreRelease("0.13");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->patch, -1);
}

TEST(MegatronReleaseTest, RefusesWhatIsNotARelease) {
  for (const char* bad : {"", "0", "13", "0.x", "0..13", "0.13.", ".13",
                          "0.13.0.1", "0.13rc1", "0.13.0rc", "0.13.0rcx",
                          "-0.13.0", "0.13.0 ", "latest", "25.04-alpha",
                          "0.1234567.0", "vv0.13.0"}) {
    const absl::StatusOr<MegatronCoreRelease> r =
        ParseMegatronCoreRelease(bad);
    EXPECT_FALSE(r.ok()) << "'" << bad << "'";
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  // The length bound comes first: a long text is not echoed.
  const std::string long_text(kMaxReleaseTextBytes + 1, '1');
  const absl::StatusOr<MegatronCoreRelease> r =
      ParseMegatronCoreRelease(long_text);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(std::string(r.status().message()).find(long_text),
            std::string::npos);
  EXPECT_NE(r.status().message().find("at most 32"), absl::string_view::npos);
}

// Every core_v* tag of Megatron-LM (d98e8a6's clone) on the side of
// ADLR/megatron-lm!2668 its history puts it: `git tag --contains
// 2659630721` and `--contains d5d00fdc87` (the cherry-pick) list the
// later ones, and no earlier tag contains either.
TEST(MegatronReleaseTest, EveryTaggedReleaseIsOnItsSideOfTheChange) {
  for (const char* tag :
       {"core_v0.4.0", "core_v0.5.0", "core_v0.6.0", "core_v0.7.0",
        "core_v0.8.0", "core_v0.9.0", "core_v0.10.0", "core_v0.11.0rc0",
        "core_v0.11.0", "core_v0.12.0rc2", "core_v0.12.0rc3",
        "core_v0.12.0"}) {
    absl::StatusOr<MegatronCoreRelease> r = ParseMegatronCoreRelease(tag);
    ASSERT_TRUE(r.ok()) << tag << ": " << r.status();
    absl::StatusOr<Applied> applied = RoutingProbsAppliedBy(*r);
    ASSERT_TRUE(applied.ok()) << tag << ": " << applied.status();
    EXPECT_EQ(*applied, v1::MoeConfig::PROBS_APPLIED_AT_UNPERMUTE) << tag;
  }
  for (const char* tag :
       {"core_v0.12.1", "core_v0.12.2", "core_v0.12.3", "core_v0.13.0rc0",
        "core_v0.13.0rc4", "core_v0.13.0", "core_v0.13.1", "core_v0.14.0rc0",
        "core_v0.14.0", "core_v0.15.0rc0", "core_v0.15.3", "core_v0.16.1",
        "core_v0.17.0rc0", "core_v0.18.2", "core_v0.19.0"}) {
    absl::StatusOr<MegatronCoreRelease> r = ParseMegatronCoreRelease(tag);
    ASSERT_TRUE(r.ok()) << tag << ": " << r.status();
    absl::StatusOr<Applied> applied = RoutingProbsAppliedBy(*r);
    ASSERT_TRUE(applied.ok()) << tag << ": " << applied.status();
    EXPECT_EQ(*applied, v1::MoeConfig::PROBS_APPLIED_IN_EXPERTS) << tag;
  }
}

// MTP layers recomputed under uniform recomputation: from core_v0.14.0rc6
// (the first tag with ADLR/megatron-lm!3330), not in 0.14.0's earlier
// candidates; "0.14" is 0.14.0.
TEST(MegatronReleaseTest, MtpRecomputationFromCore0_14_0rc6) {
  for (const char* tag :
       {"core_v0.11.0", "core_v0.12.1", "core_v0.13.1", "core_v0.14.0rc0",
        "core_v0.14.0rc5", "0.13"}) {
    absl::StatusOr<MegatronCoreRelease> r = ParseMegatronCoreRelease(tag);
    ASSERT_TRUE(r.ok()) << tag << ": " << r.status();
    EXPECT_FALSE(RecomputesMtpLayers(*r)) << tag;
  }
  for (const char* tag :
       {"core_v0.14.0rc6", "core_v0.14.0rc7", "core_v0.14.0", "0.14",
        "core_v0.14.1", "core_v0.15.0rc0", "core_v0.16.1", "1.0.0"}) {
    absl::StatusOr<MegatronCoreRelease> r = ParseMegatronCoreRelease(tag);
    ASSERT_TRUE(r.ok()) << tag << ": " << r.status();
    EXPECT_TRUE(RecomputesMtpLayers(*r)) << tag;
  }
}

TEST(MegatronReleaseTest, LionLeavesScalarsToAdamFromCore0_18_0) {
  auto scalars = [](const char* tag) {
    absl::StatusOr<MegatronCoreRelease> r = ParseMegatronCoreRelease(tag);
    EXPECT_TRUE(r.ok()) << tag << ": " << r.status();
    return LionScalarOptimizerOf(*r);
  };
  for (const char* tag :
       {"core_v0.17.0rc0", "core_v0.17.0", "core_v0.17.1", "0.17"}) {
    EXPECT_EQ(scalars(tag).value(), LionScalarOptimizer::kLion) << tag;
  }
  for (const char* tag :
       {"core_v0.18.0", "core_v0.18.2", "0.18", "core_v0.19.0", "1.0.0"}) {
    EXPECT_EQ(scalars(tag).value(), LionScalarOptimizer::kAdam) << tag;
  }
  EXPECT_EQ(scalars("core_v0.18.0rc1").value(), LionScalarOptimizer::kEither);
  for (const char* tag : {"core_v0.16.1", "core_v0.15.0rc7", "0.12"}) {
    const absl::StatusOr<LionScalarOptimizer> none = scalars(tag);
    EXPECT_EQ(none.status().code(), absl::StatusCode::kInvalidArgument)
        << tag;
    EXPECT_THAT(std::string(none.status().message()),
                HasSubstr("no Lion before 0.17.0"))
        << tag;
  }
}

TEST(MegatronReleaseTest, MuonsDefaultsAndScalarOptimizerByRelease) {
  auto muon = [](const char* tag) {
    absl::StatusOr<MegatronCoreRelease> r = ParseMegatronCoreRelease(tag);
    EXPECT_TRUE(r.ok()) << tag << ": " << r.status();
    return MuonReleaseOf(*r);
  };
  for (const char* tag : {"core_v0.16.0", "0.17", "core_v0.18.0",
                          "core_v0.18.2", "core_v0.19.0"}) {
    EXPECT_EQ(muon(tag)->default_tp_mode, v1::Muon::TP_MODE_BLOCKWISE)
        << tag;
  }
  EXPECT_EQ(muon("0.20.0")->default_tp_mode, v1::Muon::TP_MODE_DUPLICATED);
  for (const char* tag : {"core_v0.17.0rc0", "core_v0.17.1", "core_v0.18.2",
                          "core_v0.19.0", "1.0"}) {
    EXPECT_TRUE(muon(tag)->scalar_lion) << tag;
  }
  for (const char* tag :
       {"core_v0.16.1", "core_v0.18.0", "0.18", "core_v0.18.2rc1"}) {
    EXPECT_FALSE(muon(tag)->scalar_lion) << tag;
  }
  const absl::StatusOr<MuonRelease> none = muon("core_v0.15.3");
  EXPECT_EQ(none.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(none.status().message()),
              HasSubstr("no Muon before 0.16.0"));
}

// --use-distributed-optimizer under Lion and Muon [LW]: core 0.16 and 0.17
// assert, the layer-wise optimizer from 0.18.0 on (its release candidates
// too), packed by elements through 0.19 and by Newton-Schulz cost after.
TEST(MegatronReleaseTest, LionAndMuonWithTheDistributedOptimizerByRelease) {
  auto run = [](v1::Optimizer o, const char* tag) {
    absl::StatusOr<MegatronCoreRelease> r = ParseMegatronCoreRelease(tag);
    EXPECT_TRUE(r.ok()) << tag << ": " << r.status();
    return EmergingDistributedRunOf(o, *r);
  };
  const auto lion = v1::OPTIMIZER_LION;
  const auto muon = v1::OPTIMIZER_MUON;
  for (const char* tag : {"core_v0.16.1", "core_v0.17.0rc0", "0.17.1"}) {
    const absl::StatusOr<EmergingDistributedRun> m = run(muon, tag);
    EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument) << tag;
    EXPECT_THAT(std::string(m.status().message()),
                HasSubstr("asserts against muon"));
    const absl::StatusOr<EmergingDistributedRun> l = run(lion, tag);
    EXPECT_EQ(l.status().code(), absl::StatusCode::kInvalidArgument) << tag;
    EXPECT_THAT(std::string(l.status().message()), HasSubstr("Adam only"));
  }
  for (const auto o : {lion, muon}) {
    for (const char* tag :
         {"core_v0.18.0rc2", "core_v0.18.0", "0.18.2", "core_v0.19.0"}) {
      const EmergingDistributedRun r = *run(o, tag);
      EXPECT_TRUE(r.by_elements && !r.by_cost) << tag;
    }
    for (const char* tag : {"0.20.0", "1.0"}) {
      const EmergingDistributedRun r = *run(o, tag);
      EXPECT_TRUE(!r.by_elements && r.by_cost) << tag;
    }
  }
}

TEST(MegatronReleaseTest, AReleaseOnBothSidesIsRefused) {
  for (const char* ambiguous : {"0.12", "0.12.1rc1"}) {
    absl::StatusOr<MegatronCoreRelease> r =
        ParseMegatronCoreRelease(ambiguous);
    ASSERT_TRUE(r.ok()) << r.status();
    const absl::StatusOr<Applied> applied = RoutingProbsAppliedBy(*r);
    ASSERT_FALSE(applied.ok()) << ambiguous;
    EXPECT_NE(applied.status().message().find("0.12.0"),
              absl::string_view::npos)
        << applied.status();
  }
  // Minor releases whose patches all agree need no patch.
  for (const char* minor : {"0.11", "0.13", "1.0"}) {
    absl::StatusOr<MegatronCoreRelease> r = ParseMegatronCoreRelease(minor);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(RoutingProbsAppliedBy(*r).ok()) << minor;
  }
}

v1::Job MoeJob(const std::string& version) {
  v1::Job job;
  job.mutable_model()->set_name("deepseek-v3");
  job.mutable_accelerator()->set_name("h100-80gb");
  job.mutable_training()->set_megatron_core_version(version);
  return job;
}

TEST(MegatronReleaseTest, TheResolverAppliesTheRelease) {
  absl::StatusOr<v1::Job> later = ResolveJob(MoeJob("0.13.0"));
  ASSERT_TRUE(later.ok()) << later.status();
  EXPECT_EQ(later->model().moe().routing_probs_applied(),
            v1::MoeConfig::PROBS_APPLIED_IN_EXPERTS);
  // The catalog's experts are still there: the release filled one field.
  EXPECT_EQ(later->model().moe().num_experts(), 256u);
  absl::StatusOr<v1::Job> older = ResolveJob(MoeJob("core_v0.12.0"));
  ASSERT_TRUE(older.ok()) << older.status();
  EXPECT_EQ(older->model().moe().routing_probs_applied(),
            v1::MoeConfig::PROBS_APPLIED_AT_UNPERMUTE);
  absl::StatusOr<v1::Job> unknown = ResolveJob(MoeJob(""));
  ASSERT_TRUE(unknown.ok()) << unknown.status();
  EXPECT_EQ(unknown->model().moe().routing_probs_applied(),
            v1::MoeConfig::PROBS_APPLIED_UNSPECIFIED);
  // A dense model has nothing the release decides.
  v1::Job dense = MoeJob("0.13.0");
  dense.mutable_model()->set_name("llama-3.1-8b");
  absl::StatusOr<v1::Job> resolved = ResolveJob(dense);
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_FALSE(resolved->model().has_moe());
}

TEST(MegatronReleaseTest, AReleaseThatContradictsTheJobIsRefusedByField) {
  v1::Job job = MoeJob("0.11.0");
  job.mutable_model()->mutable_moe()->set_routing_probs_applied(
      v1::MoeConfig::PROBS_APPLIED_IN_EXPERTS);
  absl::StatusOr<v1::Job> r = ResolveJob(job);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string message(r.status().message());
  EXPECT_EQ(message.rfind("training.megatron_core_version:", 0), 0u)
      << message;
  EXPECT_NE(message.find("model.moe.routing_probs_applied"),
            std::string::npos);
  // Agreeing, or the probabilities on the input (a setting of its own).
  job.mutable_model()->mutable_moe()->set_routing_probs_applied(
      v1::MoeConfig::PROBS_APPLIED_AT_UNPERMUTE);
  EXPECT_TRUE(ResolveJob(job).ok());
  job.mutable_model()->mutable_moe()->set_routing_probs_applied(
      v1::MoeConfig::PROBS_APPLIED_ON_INPUT);
  r = ResolveJob(job);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->model().moe().routing_probs_applied(),
            v1::MoeConfig::PROBS_APPLIED_ON_INPUT);
  // A malformed release names the field.
  r = ResolveJob(MoeJob("latest"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(std::string(r.status().message())
                .rfind("training.megatron_core_version: 'latest'", 0),
            0u)
      << r.status();
}

}  // namespace
}  // namespace memgate
