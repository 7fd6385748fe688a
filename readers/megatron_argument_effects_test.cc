// No argument read past, argument by argument: every argument the table
// (megatron_arguments.cc) calls modelled or partly modelled, given to a
// launch, changes the job memgate reads (its model, parallel or training
// settings, or how the global batch is found), or is refused naming an
// argument, or is listed with the reason it changes nothing in that
// launch (tests/megatron_probes.cc). job_fields_test then holds every job
// field to the estimate.

#include <string>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "readers/megatron_args.h"
#include "readers/megatron_arguments.h"
#include "tests/megatron_probes.h"

namespace memgate {
namespace {

using testing::ArgumentProbes;
using testing::Probe;
using testing::ProbeFor;
using testing::UnchangedArguments;

// What a launch reads: the job, and how its global batch is found.
std::string Read(const MegatronLaunch& l) {
  return l.job.SerializeAsString() + "|" +
         std::to_string(static_cast<int>(l.global_batch_rule));
}

// Each probe is a launch Megatron runs (the values it refuses are
// UnmodelledValuesAreRefusedByName's, megatron_arguments_test.cc).
TEST(MegatronArgumentEffectsTest, EveryModelledArgumentChangesTheJob) {
  int probed = 0, unchanged_probes = 0;
  for (const MegatronArgument& a : MegatronMemoryArguments()) {
    if (a.handling == Handling::kRefused) continue;
    ++probed;
    const Probe probe = ProbeFor(a);
    const absl::StatusOr<MegatronLaunch> before =
        ParseMegatronLaunch(probe.before, nullptr);
    ASSERT_TRUE(before.ok()) << a.name << " before: " << before.status();
    const absl::StatusOr<MegatronLaunch> after =
        ParseMegatronLaunch(probe.after, nullptr);
    ASSERT_TRUE(after.ok()) << "--" << a.name << ": " << after.status();
    const auto unchanged = UnchangedArguments().find(a.name);
    if (unchanged != UnchangedArguments().end()) {
      ++unchanged_probes;
      EXPECT_EQ(Read(*before), Read(*after))
          << "--" << a.name << " was said to change nothing ("
          << unchanged->second << ")";
    } else {
      EXPECT_NE(Read(*before), Read(*after))
          << "--" << a.name << " changed nothing in the job read";
    }
  }
  EXPECT_GT(probed, 150);
  // No probe or reason is kept for a name the table does not model.
  for (const auto& [name, probe] : ArgumentProbes()) {
    const MegatronArgument* a = FindMegatronArgument(name);
    EXPECT_TRUE(a != nullptr && a->handling != Handling::kRefused) << name;
  }
  // Every reason is an argument's of the table, and was used.
  EXPECT_EQ(unchanged_probes, static_cast<int>(UnchangedArguments().size()));
}

}  // namespace
}  // namespace memgate
