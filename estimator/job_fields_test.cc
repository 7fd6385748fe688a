// No silent admits, field by field: every field of memgate.v1.Job either
// changes the estimate (a stage's bytes, the parameters, the capacity or
// the zone), or is refused with an error naming it, or is listed as
// changing no memory with the reason (tests/job_field_cases.cc), and that
// claim is checked too. A field added to the proto without a row fails
// EveryFieldOfTheJobIsClassified: whoever adds it must say what it does to
// memory, and prove it.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "estimator/estimate.h"
#include "gtest/gtest.h"
#include "proto/memgate.pb.h"
#include "tests/field_paths.h"
#include "tests/job_field_cases.h"

namespace memgate {
namespace {

using testing::Effect;
using testing::FieldCase;
using testing::JobFieldCases;

// What decides admission: every stage's bytes, the parameters, the
// capacity and the zone (not the echoed job or the assumptions' text).
std::string MemoryOf(const v1::Estimate& e) {
  v1::Estimate memory;
  *memory.mutable_stages() = e.stages();
  memory.set_total_parameters(e.total_parameters());
  memory.set_capacity_bytes(e.capacity_bytes());
  memory.set_zone(e.zone());
  return memory.SerializeAsString();
}

TEST(JobFieldsTest, EveryFieldOfTheJobIsClassified) {
  // model, parallel, training and accelerator only hold others.
  std::vector<std::string> rows;
  for (const FieldCase& c : JobFieldCases()) rows.push_back(c.field);
  testing::ExpectEveryPathClassified(
      testing::FieldPaths(v1::Job::descriptor(),
                          {"model", "parallel", "training", "accelerator"}),
      rows, "tests/job_field_cases.cc");
}

class JobFieldTest : public ::testing::TestWithParam<FieldCase> {};

TEST_P(JobFieldTest, ChangesTheEstimateOrIsRefusedOrSaysWhyNot) {
  const FieldCase& c = GetParam();
  v1::Job base = c.base();
  c.setup(base);
  const absl::StatusOr<v1::Estimate> before = EstimateJob(base);
  ASSERT_TRUE(before.ok()) << c.field << " setup: " << before.status();
  v1::Job changed = base;
  c.change(changed);
  const absl::StatusOr<v1::Estimate> after = EstimateJob(changed);
  switch (c.effect) {
    case Effect::kChangesMemory:
      ASSERT_TRUE(after.ok()) << after.status();
      EXPECT_TRUE(MemoryOf(*before) != MemoryOf(*after))
          << c.field << " changed nothing: model it, refuse it, or say why "
          << "it holds no memory";
      break;
    case Effect::kRefused:
      ASSERT_FALSE(after.ok());
      EXPECT_EQ(after.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_EQ(after.status().message().rfind(c.field, 0), 0u)
          << after.status();
      break;
    case Effect::kNoMemoryChange:
      ASSERT_TRUE(after.ok()) << after.status();
      ASSERT_FALSE(c.why.empty());
      EXPECT_TRUE(MemoryOf(*before) == MemoryOf(*after))
          << c.field << " was said to change no memory (" << c.why << ")";
      break;
  }
}

INSTANTIATE_TEST_SUITE_P(EveryField, JobFieldTest,
                         ::testing::ValuesIn(JobFieldCases()),
                         [](const auto& info) {
                           return testing::TestNameOfPath(info.param.field);
                         });

}  // namespace
}  // namespace memgate
