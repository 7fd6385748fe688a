#include "estimator/admission.h"

#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace memgate {
namespace {

using testing::PaperJob;

// The paper's A100 table: 27.20 GiB (GREEN), 37.58 (YELLOW), 58.33 (RED).
const v1::Job kGreen = PaperJob("llama-3.1-8b", "a100-40gb", 4, 1, 2, 1, 8,
                                8192);
const v1::Job kYellow = PaperJob("llama-3.1-8b", "a100-40gb", 4, 1, 2, 2, 8,
                                 8192);
const v1::Job kRed = PaperJob("llama-3.1-8b", "a100-40gb", 4, 1, 2, 4, 8,
                              8192);

TEST(AdmissionTest, AdmitsGreen) {
  absl::StatusOr<v1::Decision> d = AdmitJob(kGreen, AdmissionPolicy());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->verdict(), v1::VERDICT_ADMIT);
  EXPECT_EQ(d->reason().rfind("ADMIT [GREEN] peak 27.20 GiB (stage 0) vs "
                              "limit 32.00 GiB (80% of 40.00 GiB a100-40gb)",
                              0),
            0u)
      << d->reason();
  EXPECT_TRUE(d->warnings().empty());
}

TEST(AdmissionTest, RefusesYellowByDefault) {
  absl::StatusOr<v1::Decision> d = AdmitJob(kYellow, AdmissionPolicy());
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->verdict(), v1::VERDICT_REFUSE);
  EXPECT_NE(d->reason().find("REFUSE [YELLOW] peak 37.58 GiB"),
            std::string::npos)
      << d->reason();
}

TEST(AdmissionTest, PolicyMayAdmitYellowWithAWarning) {
  AdmissionPolicy policy;
  policy.admit_yellow = true;
  absl::StatusOr<v1::Decision> d = AdmitJob(kYellow, policy);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->verdict(), v1::VERDICT_ADMIT);
  ASSERT_EQ(d->warnings_size(), 1);
  EXPECT_NE(d->warnings(0).find("YELLOW"), std::string::npos);
}

TEST(AdmissionTest, RefusesRedWhateverThePolicy) {
  AdmissionPolicy policy;
  policy.admit_yellow = true;
  absl::StatusOr<v1::Decision> d = AdmitJob(kRed, policy);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->verdict(), v1::VERDICT_REFUSE);
  EXPECT_NE(d->reason().find("will OOM"), std::string::npos) << d->reason();
}

TEST(AdmissionTest, ThresholdMovesTheLimit) {
  AdmissionPolicy policy;
  policy.threshold = 0.95;  // 38 GiB on an A100 40 GB
  absl::StatusOr<v1::Decision> d = AdmitJob(kYellow, policy);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->verdict(), v1::VERDICT_ADMIT);
  EXPECT_NE(d->reason().find("limit 38.00 GiB (95%"), std::string::npos)
      << d->reason();
}

TEST(AdmissionTest, InvalidJobIsAnError) {
  v1::Job job = kGreen;
  job.set_num_gpus(7);
  absl::StatusOr<v1::Decision> d = AdmitJob(job, AdmissionPolicy());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace memgate
