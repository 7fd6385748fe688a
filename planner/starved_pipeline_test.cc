#include "planner/starved_pipeline.h"

#include <optional>
#include <string>

#include "gtest/gtest.h"
#include "planner/planner.h"

namespace memgate {
namespace {

v1::Candidate Pipeline(uint32_t p, uint32_t v, uint32_t dp, uint32_t b) {
  v1::Candidate c;
  c.set_tensor_parallel(8);
  c.set_context_parallel(1);
  c.set_pipeline_parallel(p);
  c.set_virtual_pipeline_stages(v);
  c.set_data_parallel(dp);
  c.set_micro_batch_size(b);
  c.set_zone(v1::ZONE_GREEN);
  return c;
}

// The global batch it names is the least at which (p - 1) / (m v) is at
// most 3/32: one micro-batch a pipeline fewer is over it.
TEST(StarvedPipelineTest, TheGlobalBatchNamedIsTheLeastThatReachesThePapers) {
  for (uint32_t p : {2u, 3u, 4u, 8u, 9u, 16u, 126u, 1u << 20}) {
    for (uint32_t v : {1u, 2u, 4u, 7u, 32u}) {
      for (uint32_t b : {1u, 3u}) {
        const uint32_t dp = 64;
        const uint64_t gbs = GlobalBatchForMeasuredBubble(Pipeline(p, v, dp, b));
        ASSERT_EQ(gbs % (dp * b), 0u);
        const double m = double(gbs) / (dp * b);
        EXPECT_LE((p - 1) / (m * v), kLargestMeasuredBubble) << p << " " << v;
        EXPECT_GT((p - 1) / ((m - 1) * v), kLargestMeasuredBubble)
            << p << " " << v;
      }
    }
  }
  EXPECT_EQ(GlobalBatchForMeasuredBubble(Pipeline(4, 1, 128, 1)), 4096u);
  EXPECT_EQ(GlobalBatchForMeasuredBubble(Pipeline(16, 4, 8, 1)), 320u);
  // No pipeline, or a candidate without sizes: nothing to name.
  EXPECT_EQ(GlobalBatchForMeasuredBubble(Pipeline(1, 1, 64, 1)), 0u);
  EXPECT_EQ(GlobalBatchForMeasuredBubble(Pipeline(4, 1, 0, 1)), 0u);
  // The largest sizes a plan allows stay in 64 bits.
  EXPECT_GT(GlobalBatchForMeasuredBubble(Pipeline(1u << 20, 1, 1u << 20, 1024)),
            0u);
}

v1::PlanRequest Request(uint32_t gpus, uint32_t seq, uint32_t gbs) {
  v1::PlanRequest r;
  r.mutable_model()->set_name("llama-3.1-405b");
  r.mutable_accelerator()->set_name("h100-80gb");
  r.set_num_gpus(gpus);
  r.set_seq_length(seq);
  r.set_global_batch_size(gbs);
  r.set_top_k(1);
  return r;
}

// Llama-3.1-405B on 16,384 H100s with 256 sequences of 4,096 tokens a step:
// every layout that fits has few micro-batches, and the first, (8, 4, 8,
// 1) with DP 64, has 4 through 8 stages (175%). The note says so and names
// the global batch that feeds it; planned with that batch, the same layout
// has a bubble of at most 3/32.
TEST(StarvedPipelineTest, AStarvedFirstLayoutGetsTheBatchThatFeedsIt) {
  const v1::PlanRequest r = Request(16384, 4096, 256);
  absl::StatusOr<v1::PlanResponse> plan = PlanLayouts(r);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const v1::Candidate& first = plan->candidates(0);
  ASSERT_GT(first.bubble_fraction(), kBubbleThatDoubles);
  const std::optional<std::string> note = StarvedPipelineNote(r, *plan);
  ASSERT_TRUE(note.has_value());
  // The plan carries it, for the CLI and a gRPC caller alike.
  ASSERT_EQ(plan->notes_size(), 1);
  EXPECT_EQ(plan->notes(0), *note);
  const uint64_t enough = GlobalBatchForMeasuredBubble(first);
  const uint32_t m = 256 / (first.data_parallel() * first.micro_batch_size());
  EXPECT_NE(note->find(std::to_string(m) + " micro-batches"),
            std::string::npos) << *note;
  EXPECT_NE(note->find("global batch of " + std::to_string(enough)),
            std::string::npos) << *note;

  v1::PlanRequest fed = r;
  fed.set_global_batch_size(static_cast<uint32_t>(enough));
  fed.set_top_k(0);
  absl::StatusOr<v1::PlanResponse> again = PlanLayouts(fed);
  ASSERT_TRUE(again.ok()) << again.status();
  bool found = false;
  for (const v1::Candidate& c : again->candidates()) {
    if (c.tensor_parallel() == first.tensor_parallel() &&
        c.context_parallel() == first.context_parallel() &&
        c.pipeline_parallel() == first.pipeline_parallel() &&
        c.micro_batch_size() == first.micro_batch_size() &&
        c.virtual_pipeline_stages() == first.virtual_pipeline_stages()) {
      EXPECT_LE(c.bubble_fraction(), kLargestMeasuredBubble) << c.why();
      found = true;
    }
  }
  EXPECT_TRUE(found);
}

// A plan whose first layout keeps its GPUs busy, or that has nothing GREEN
// first, says nothing.
TEST(StarvedPipelineTest, ABusyOrRedFirstLayoutGetsNoNote) {
  const v1::PlanRequest r = Request(16384, 8192, 2048);
  absl::StatusOr<v1::PlanResponse> plan = PlanLayouts(r);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_LE(plan->candidates(0).bubble_fraction(), kBubbleThatDoubles);
  EXPECT_FALSE(StarvedPipelineNote(r, *plan).has_value());
  EXPECT_EQ(plan->notes_size(), 0);

  v1::PlanResponse red;
  *red.add_candidates() = Pipeline(16, 1, 1, 1);
  red.mutable_candidates(0)->set_bubble_fraction(15);
  red.mutable_candidates(0)->set_zone(v1::ZONE_RED);
  EXPECT_FALSE(StarvedPipelineNote(r, red).has_value());
  EXPECT_FALSE(StarvedPipelineNote(r, v1::PlanResponse()).has_value());
}

}  // namespace
}  // namespace memgate
