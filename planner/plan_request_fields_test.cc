// Every field of memgate.v1.PlanRequest (listed from its descriptor, so a
// field added without a row fails) either changes the memory of the jobs
// the candidates describe (JobForCandidate: what `memgate check` of a
// candidate estimates), or only steers the search or the printed
// arguments and leaves each candidate's estimate as it was. A field the
// planner read without carrying it into the candidates' jobs would print
// layouts that `memgate check` estimates without it; one that changed the
// jobs' memory while said to steer only would be a setting the plan
// applies and the user is not told of. plan_fields_test checks, field by
// field of a Job, that each candidate is its job's estimate;
// plan_request_fuzzer checks the same on any request.

#include <functional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "estimator/estimate.h"
#include "gtest/gtest.h"
#include "planner/planner.h"
#include "proto/memgate.pb.h"
#include "tests/field_paths.h"

namespace memgate {
namespace {

enum class Effect {
  // The candidates' jobs carry it: the same layout's estimate changes.
  kChangesJobs,
  // Each candidate carries it (its own field, not the request's).
  kCarriedByCandidates,
  // The plan changes (layouts, order, zones, arguments); the same
  // layout's estimate does not.
  kSteersOnly,
};

struct RequestFieldCase {
  std::string field;  // dotted path in PlanRequest
  Effect effect;
  // What the base and the changed request both need for the change to
  // mean something (FSDP for its buffers...); may be empty.
  std::function<void(v1::PlanRequest&)> setup;
  std::function<void(v1::PlanRequest&)> change;
};

// Llama-3.1-8B at 8k on 16 A100s of 40 GB: layouts that fit as they are,
// some only by recomputing, and pipelines that interleave.
v1::PlanRequest BaseRequest() {
  v1::PlanRequest r;
  r.mutable_model()->set_name("llama-3.1-8b");
  r.mutable_accelerator()->set_name("a100-40gb");
  r.set_num_gpus(16);
  r.set_seq_length(8192);
  r.set_global_batch_size(64);
  r.set_max_micro_batch_size(2);
  r.set_top_k(0);
  return r;
}

void UseFsdp(v1::PlanRequest& r) {
  r.set_data_parallel_sharding(v1::DATA_PARALLEL_SHARDING_OPTIM_GRADS_PARAMS);
}

// 31 layers and the embedding or the loss: 32 to split over a pipeline
// of 16 GPUs' divisors (Megatron counts the accounted one as a layer).
void AccountedSplitsExist(v1::PlanRequest& r) {
  r.mutable_model()->set_num_layers(31);
}

std::vector<RequestFieldCase> Cases() {
  using R = v1::PlanRequest;
  return {
      {"model", Effect::kChangesJobs, nullptr,
       [](R& r) { r.mutable_model()->set_name("llama-2-7b"); }},
      {"accelerator", Effect::kChangesJobs, nullptr,
       // The GPU's memory is what each job's stages are held against.
       [](R& r) { r.mutable_accelerator()->set_name("a100-80gb"); }},
      {"num_gpus", Effect::kCarriedByCandidates, nullptr,
       [](R& r) { r.set_num_gpus(32); }},
      {"seq_length", Effect::kChangesJobs, nullptr,
       [](R& r) { r.set_seq_length(4096); }},
      {"global_batch_size", Effect::kChangesJobs, nullptr,
       // Fewer micro-batches than a pipeline's stages cap what it holds.
       [](R& r) { r.set_global_batch_size(16); }},
      {"max_micro_batch_size", Effect::kSteersOnly, nullptr,
       [](R& r) { r.set_max_micro_batch_size(4); }},
      {"allow_cross_node_tp", Effect::kSteersOnly,
       [](R& r) { r.mutable_accelerator()->set_gpus_per_node(4); },
       [](R& r) { r.set_allow_cross_node_tp(true); }},
      {"top_k", Effect::kSteersOnly, nullptr, [](R& r) { r.set_top_k(3); }},
      {"threshold", Effect::kSteersOnly, nullptr,
       [](R& r) { r.set_threshold(0.6); }},
      {"precision", Effect::kChangesJobs, nullptr,
       [](R& r) { r.set_precision(v1::PRECISION_FP16); }},
      {"no_recompute", Effect::kSteersOnly, nullptr,
       [](R& r) { r.set_no_recompute(true); }},
      {"no_interleave", Effect::kSteersOnly, nullptr,
       [](R& r) { r.set_no_interleave(true); }},
      {"training", Effect::kChangesJobs, nullptr,
       [](R& r) { r.mutable_training()->set_hidden_dropout(0.1f); }},
      {"data_parallel_sharding", Effect::kChangesJobs, nullptr, UseFsdp},
      {"fsdp_double_buffer", Effect::kChangesJobs, UseFsdp,
       [](R& r) { r.set_fsdp_double_buffer(true); }},
      {"fsdp_communication_unit_size", Effect::kChangesJobs, UseFsdp,
       [](R& r) { r.set_fsdp_communication_unit_size(uint64_t{1} << 32); }},
      {"distributed_optimizer_instances", Effect::kChangesJobs, nullptr,
       [](R& r) { r.set_distributed_optimizer_instances(2); }},
      // The distributed optimizer's bucket padding (memory_model.cc [BP]).
      {"ddp_bucket_size", Effect::kChangesJobs, nullptr,
       [](R& r) { r.set_ddp_bucket_size(1000000); }},
      {"ddp_num_buckets", Effect::kChangesJobs, nullptr,
       [](R& r) { r.set_ddp_num_buckets(100); }},
      {"pad_buckets_for_high_nccl_busbw", Effect::kChangesJobs, nullptr,
       [](R& r) { r.set_pad_buckets_for_high_nccl_busbw(true); }},
      {"context_parallel_comm", Effect::kChangesJobs, nullptr,
       [](R& r) {
         r.set_context_parallel_comm(v1::CONTEXT_PARALLEL_COMM_ALL_GATHER);
       }},
      {"context_parallel_a2a_size", Effect::kChangesJobs,
       [](R& r) {
         r.set_num_gpus(32);
         r.set_context_parallel_comm(v1::CONTEXT_PARALLEL_COMM_A2A_P2P);
         r.set_context_parallel_a2a_size(1);
       },
       // An inner all-to-all level keeps the attention output twice (a
       // level of 2 or 4 alike: memory_model.cc [CPX]).
       [](R& r) { r.set_context_parallel_a2a_size(2); }},
      // The launch's split forms: the arguments each candidate prints,
      // and the splits those forms can say.
      {"launch_split.layout", Effect::kSteersOnly, nullptr,
       [](R& r) { r.mutable_launch_split()->set_layout(true); }},
      {"launch_split.first_last", Effect::kSteersOnly, nullptr,
       [](R& r) { r.mutable_launch_split()->set_first_last(true); }},
      {"launch_split.virtual_stages", Effect::kSteersOnly, nullptr,
       [](R& r) { r.mutable_launch_split()->set_virtual_stages(true); }},
      {"launch_split.layers_per_virtual_stage", Effect::kSteersOnly, nullptr,
       [](R& r) {
         r.mutable_launch_split()->set_layers_per_virtual_stage(true);
       }},
      {"launch_split.full_recompute", Effect::kSteersOnly, nullptr,
       [](R& r) { r.mutable_launch_split()->set_full_recompute(true); }},
      {"launch_split.account_for_embedding", Effect::kSteersOnly,
       AccountedSplitsExist,
       [](R& r) { r.mutable_launch_split()->set_account_for_embedding(true); }},
      {"launch_split.account_for_loss", Effect::kSteersOnly,
       AccountedSplitsExist,
       [](R& r) { r.mutable_launch_split()->set_account_for_loss(true); }},
      {"launch_split.encoder_seq_length", Effect::kSteersOnly, nullptr,
       [](R& r) { r.mutable_launch_split()->set_encoder_seq_length(true); }},
  };
}

TEST(PlanRequestFieldsTest, EveryFieldHasARow) {
  // The model, GPU and training template are classified whole here; their
  // own fields are a Job's (job_fields_test, plan_fields_test).
  std::set<std::string> paths =
      testing::FieldPaths(v1::PlanRequest::descriptor(), {"launch_split"});
  for (const std::string whole : {"model.", "accelerator.", "training."}) {
    for (auto it = paths.begin(); it != paths.end();) {
      it = it->rfind(whole, 0) == 0 ? paths.erase(it) : std::next(it);
    }
  }
  std::vector<std::string> rows;
  for (const RequestFieldCase& c : Cases()) rows.push_back(c.field);
  testing::ExpectEveryPathClassified(paths, rows,
                                     "planner/plan_request_fields_test.cc");
}

// What `memgate check` of a candidate's job under `request` holds it to:
// every stage's bytes (its loss transient too), the GPU's capacity and the
// zone at the default threshold.
std::vector<double> CheckedFigures(const v1::PlanRequest& request,
                                   const v1::Candidate& candidate) {
  const absl::StatusOr<v1::Estimate> e =
      EstimateJob(JobForCandidate(request, candidate));
  EXPECT_TRUE(e.ok()) << candidate.ShortDebugString() << ": " << e.status();
  std::vector<double> bytes;
  if (!e.ok()) return bytes;
  for (const v1::StageMemory& s : e->stages()) {
    bytes.push_back(s.total_bytes() + s.loss_gradient_cast_bytes());
  }
  bytes.push_back(e->capacity_bytes());
  bytes.push_back(e->zone());
  return bytes;
}

void PrintTo(const RequestFieldCase& c, std::ostream* os) { *os << c.field; }

class PlanRequestFieldTest : public ::testing::TestWithParam<RequestFieldCase> {
};

TEST_P(PlanRequestFieldTest, ChangesTheJobsOrOnlyTheSearch) {
  const RequestFieldCase& c = GetParam();
  v1::PlanRequest base = BaseRequest();
  if (c.setup) c.setup(base);
  v1::PlanRequest changed = base;
  c.change(changed);
  ASSERT_NE(base.ShortDebugString(), changed.ShortDebugString()) << c.field;
  const absl::StatusOr<v1::PlanResponse> before = PlanLayouts(base);
  const absl::StatusOr<v1::PlanResponse> after = PlanLayouts(changed);
  ASSERT_TRUE(before.ok()) << before.status();
  ASSERT_TRUE(after.ok()) << c.field << ": " << after.status();
  ASSERT_GT(after->candidates_size(), 0) << c.field;
  switch (c.effect) {
    case Effect::kChangesJobs: {
      // Some layout the changed plan lists estimates otherwise as the
      // base request's job.
      bool differs = false;
      for (const v1::Candidate& candidate : after->candidates()) {
        differs = differs || CheckedFigures(changed, candidate) !=
                                 CheckedFigures(base, candidate);
      }
      EXPECT_TRUE(differs) << c.field;
      break;
    }
    case Effect::kCarriedByCandidates:
      for (const v1::Candidate& candidate : after->candidates()) {
        EXPECT_EQ(candidate.num_gpus(), changed.num_gpus()) << c.field;
        EXPECT_EQ(JobForCandidate(changed, candidate).num_gpus(),
                  changed.num_gpus())
            << c.field;
      }
      break;
    case Effect::kSteersOnly:
      EXPECT_NE(before->ShortDebugString(), after->ShortDebugString())
          << c.field << " changes nothing in the plan";
      for (const v1::Candidate& candidate : after->candidates()) {
        EXPECT_EQ(CheckedFigures(changed, candidate),
                  CheckedFigures(base, candidate))
            << c.field << ": " << candidate.ShortDebugString();
      }
      break;
  }
}

INSTANTIATE_TEST_SUITE_P(EveryField, PlanRequestFieldTest,
                         ::testing::ValuesIn(Cases()), [](const auto& info) {
                           return testing::TestNameOfPath(info.param.field);
                         });

}  // namespace
}  // namespace memgate
