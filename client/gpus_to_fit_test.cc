#include "client/gpus_to_fit.h"

#include <vector>

#include "gtest/gtest.h"
#include "planner/planner.h"

namespace memgate::cli {
namespace {

// A plan of one candidate in `zone` on each count, recording the counts
// asked (and the top_k each asked for).
struct FakePlanner {
  uint32_t green_from = 0;  // 0: never GREEN
  uint32_t fail_at = 0;     // 0: never fails
  std::vector<uint32_t> asked;
  std::vector<uint32_t> top_k;

  PlanFunction Function() {
    return [this](const v1::PlanRequest& r)
               -> absl::StatusOr<v1::PlanResponse> {
      asked.push_back(r.num_gpus());
      top_k.push_back(r.top_k());
      if (fail_at != 0 && r.num_gpus() == fail_at) {
        return absl::ResourceExhaustedError("plan: past its bound");
      }
      v1::PlanResponse response;
      v1::Candidate* c = response.add_candidates();
      c->set_tensor_parallel(8);
      c->set_context_parallel(1);
      c->set_pipeline_parallel(r.num_gpus() / 8);
      c->set_micro_batch_size(1);
      c->set_peak_gib(50.5);
      const bool green = green_from != 0 && r.num_gpus() >= green_from;
      c->set_zone(green ? v1::ZONE_GREEN : v1::ZONE_RED);
      return response;
    };
  }
};

v1::PlanRequest OnGpus(uint32_t gpus) {
  v1::PlanRequest r;
  r.set_num_gpus(gpus);
  r.set_global_batch_size(64);
  r.set_top_k(10);
  return r;
}

TEST(GpusToFitTest, DoublesUntilTheFirstGreenPlan) {
  FakePlanner planner;
  planner.green_from = 100;
  absl::StatusOr<std::optional<GreenAt>> found =
      FirstDoublingWithGreen(OnGpus(8), planner.Function());
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ((*found)->gpus, 128u);
  EXPECT_EQ((*found)->candidate.pipeline_parallel(), 16u);
  EXPECT_EQ(planner.asked, (std::vector<uint32_t>{16, 32, 64, 128}));
  // Only the first candidate is read.
  EXPECT_EQ(planner.top_k, (std::vector<uint32_t>{1, 1, 1, 1}));
  EXPECT_EQ(GpusToFitNote(OnGpus(8), planner.Function()),
            "nothing is GREEN on 8 GPUs; at global batch 64 the first "
            "doubling where a layout is GREEN is 128 GPUs: (8, 1, 16, 1) at "
            "50.50 GiB (memgate plan --gpus=128 ranks them)");
}

// The search is bounded by the planner's own GPU bound: from 8 GPUs, 17
// plans (16 to 2^20), whatever the planner answers.
TEST(GpusToFitTest, StopsAtThePlannersLargestCount) {
  FakePlanner planner;
  absl::StatusOr<std::optional<GreenAt>> found =
      FirstDoublingWithGreen(OnGpus(8), planner.Function());
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_FALSE(found->has_value());
  ASSERT_EQ(planner.asked.size(), 17u);
  EXPECT_EQ(planner.asked.back(), kMaxPlanGpus);
  // A count past half the bound asks nothing.
  planner.asked.clear();
  found = FirstDoublingWithGreen(OnGpus(kMaxPlanGpus / 2 + 1),
                                 planner.Function());
  ASSERT_TRUE(found.ok());
  EXPECT_TRUE(planner.asked.empty());
  EXPECT_EQ(GpusToFitNote(OnGpus(8), planner.Function()),
            "nothing is GREEN on 8 GPUs, nor on any doubling of them up to "
            "1048576 at global batch 64");
}

TEST(GpusToFitTest, AFailedPlanEndsTheSearchAndSaysWhere) {
  FakePlanner planner;
  planner.green_from = 1024;
  planner.fail_at = 64;
  absl::StatusOr<std::optional<GreenAt>> found =
      FirstDoublingWithGreen(OnGpus(8), planner.Function());
  ASSERT_FALSE(found.ok());
  EXPECT_EQ(found.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(found.status().message(), "64 GPUs: plan: past its bound");
  EXPECT_EQ(planner.asked, (std::vector<uint32_t>{16, 32, 64}));
  EXPECT_EQ(GpusToFitNote(OnGpus(8), planner.Function()),
            "nothing is GREEN on 8 GPUs; planning doublings of them stopped "
            "at 64 GPUs: plan: past its bound");
}

}  // namespace
}  // namespace memgate::cli
