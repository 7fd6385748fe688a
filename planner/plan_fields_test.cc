// The planner prices layouts on its own fast path (planner.cc PeakOf), not
// through EstimateJob. For every model and training field of a job, and
// the parallel settings a plan request carries
// (tests/job_field_cases.cc), a plan of that changed model and training
// template must print, for each candidate, exactly the peak and zone that
// `memgate check` of the candidate's job gives: a field the fast path
// read past would print a layout as GREEN that the check refuses, or a
// smaller peak than the job's.

#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "estimator/estimate.h"
#include "gtest/gtest.h"
#include "planner/planner.h"
#include "proto/memgate.pb.h"
#include "tests/field_paths.h"
#include "tests/job_field_cases.h"

namespace memgate {
namespace {

using testing::Effect;
using testing::FieldCase;
using testing::JobFieldCases;

bool StartsWith(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0;
}

// The job's fields a plan request carries: its model, its training
// settings and the parallel settings the planner does not search.
bool PlanCarries(const std::string& field) {
  static const auto* parallel =
      new std::set<std::string>{"parallel.data_parallel_sharding",
                                "parallel.fsdp_double_buffer",
                                "parallel.fsdp_communication_unit_size",
                                "parallel.distributed_optimizer_instances",
                                "parallel.context_parallel_comm",
                                "parallel.context_parallel_a2a_size"};
  return StartsWith(field, "model.") || StartsWith(field, "training.") ||
         parallel->count(field) > 0;
}

// A plan of `job`'s model, GPUs, sequence, batch and training settings on
// its GPU count: what the planner searches (TP, CP, PP, EP, VP, MBS, full
// recomputation) is left to it; the job's other parallel settings are the
// request's own fields.
v1::PlanRequest PlanOf(const v1::Job& job) {
  v1::PlanRequest r;
  *r.mutable_model() = job.model();
  *r.mutable_accelerator() = job.accelerator();
  r.set_num_gpus(job.num_gpus());
  r.set_seq_length(job.training().seq_length());
  r.set_global_batch_size(job.training().global_batch_size());
  r.set_precision(job.training().precision());
  r.set_max_micro_batch_size(2);
  r.set_top_k(0);
  v1::TrainingConfig& t = *r.mutable_training();
  t = job.training();
  t.clear_micro_batch_size();
  t.clear_seq_length();
  t.clear_global_batch_size();
  t.clear_precision();
  const v1::ParallelConfig& par = job.parallel();
  r.set_data_parallel_sharding(par.data_parallel_sharding());
  r.set_fsdp_double_buffer(par.fsdp_double_buffer());
  r.set_fsdp_communication_unit_size(par.fsdp_communication_unit_size());
  r.set_distributed_optimizer_instances(par.distributed_optimizer_instances());
  r.set_context_parallel_comm(par.context_parallel_comm());
  r.set_context_parallel_a2a_size(par.context_parallel_a2a_size());
  return r;
}

// Every candidate of `request`'s plan, estimated as its job: the peak
// (with an MoE job's expert load margin) and zone the plan printed.
void ExpectEveryCandidateIsItsJob(const std::string& field,
                                  const v1::PlanRequest& request,
                                  const v1::PlanResponse& plan) {
  for (const v1::Candidate& candidate : plan.candidates()) {
    const absl::StatusOr<v1::Estimate> e =
        EstimateJob(JobForCandidate(request, candidate));
    ASSERT_TRUE(e.ok()) << field << ": " << candidate.ShortDebugString()
                        << ": " << e.status();
    EXPECT_DOUBLE_EQ(
        e->peak().total_bytes() + e->peak().expert_imbalance_bytes(),
        candidate.peak_bytes())
        << field << ": " << candidate.ShortDebugString();
    EXPECT_EQ(e->zone(), candidate.zone())
        << field << ": " << candidate.ShortDebugString();
  }
}

// The case's job, as a plan of it would price it; false (and why) where
// no plan applies.
bool PlannedJobOf(const FieldCase& c, v1::Job& job, std::string& why) {
  if (!PlanCarries(c.field)) {
    why = "the planner searches or the request sets " + c.field;
    return false;
  }
  if (c.effect == Effect::kRefused) {
    why = "refused as a job";
    return false;
  }
  job = c.base();
  c.setup(job);
  c.change(job);
  if (job.training().recompute().granularity() ==
      v1::Recompute::GRANULARITY_FULL) {
    why = "full recomputation is the planner's own choice";
    return false;
  }
  return true;
}

class PlanFieldTest : public ::testing::TestWithParam<FieldCase> {};

TEST_P(PlanFieldTest, EveryCandidateIsItsJobsEstimate) {
  const FieldCase& c = GetParam();
  v1::Job job;
  std::string why;
  if (!PlannedJobOf(c, job, why)) GTEST_SKIP() << why;
  const v1::PlanRequest request = PlanOf(job);
  const absl::StatusOr<v1::PlanResponse> plan = PlanLayouts(request);
  ASSERT_TRUE(plan.ok()) << c.field << ": " << plan.status();
  ASSERT_GT(plan->candidates_size(), 0) << c.field;
  ExpectEveryCandidateIsItsJob(c.field, request, *plan);
}

// The same under Muon with the distributed optimizer (Megatron's layer-
// wise one, core 0.19.0: its buffers packed a layout's schedule and rank
// at a time, through the layout's memo, on the planner's fast path): every
// field still reaches the candidates as it reaches their jobs. A field
// whose job Muon or the layer-wise optimizer refuses (Megatron asserts:
// other optimizers' settings, Megatron-FSDP, ...) has no such plan.
TEST_P(PlanFieldTest, UnderTheLayerWiseOptimizerToo) {
  const FieldCase& c = GetParam();
  v1::Job job;
  std::string why;
  if (!PlannedJobOf(c, job, why)) GTEST_SKIP() << why;
  if (StartsWith(c.field, "training.optimizer")) {
    GTEST_SKIP() << "the optimizer is the variant's own";
  }
  v1::TrainingConfig& t = *job.mutable_training();
  t.set_optimizer(v1::OPTIMIZER_MUON);
  t.set_megatron_core_version("0.19.0");
  job.mutable_parallel()->set_distributed_optimizer(true);
  if (!EstimateJob(job).ok()) {
    GTEST_SKIP() << "refused under the layer-wise optimizer";
  }
  const v1::PlanRequest request = PlanOf(job);
  const absl::StatusOr<v1::PlanResponse> plan = PlanLayouts(request);
  ASSERT_TRUE(plan.ok()) << c.field << ": " << plan.status();
  ASSERT_GT(plan->candidates_size(), 0) << c.field;
  ExpectEveryCandidateIsItsJob(c.field, request, *plan);
}

INSTANTIATE_TEST_SUITE_P(EveryField, PlanFieldTest,
                         ::testing::ValuesIn(JobFieldCases()),
                         [](const auto& info) {
                           return testing::TestNameOfPath(info.param.field);
                         });

}  // namespace
}  // namespace memgate
