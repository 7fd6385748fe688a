// The paper's tables as the specification: memgate's equations must give
// every published estimate (within 0.01 GiB) and colour, and the 80% rule
// must never have admitted a configuration that really ran out of memory.

#include <cmath>
#include <cstdio>

#include "estimator/estimate.h"
#include "estimator/units.h"
#include "gtest/gtest.h"
#include "tests/paper_tables.h"
#include "tests/test_util.h"

namespace memgate {
namespace {

using testing::LoadPaperTables;
using testing::PaperJob;
using testing::PaperRow;

std::string Describe(const PaperRow& r) {
  return r.table + " (TP,CP,PP,MBS)=(" + std::to_string(r.tp) + "," +
         std::to_string(r.cp) + "," + std::to_string(r.pp) + "," +
         std::to_string(r.mbs) + ") x " + std::to_string(r.gpus) + " GPUs";
}

v1::Estimate EstimateRow(const PaperRow& r,
                         double threshold = kDefaultThreshold) {
  absl::StatusOr<v1::Estimate> e = EstimateJob(
      PaperJob(r.model, r.gpu, r.tp, r.cp, r.pp, r.mbs, r.gpus, r.seq_length),
      threshold);
  EXPECT_TRUE(e.ok()) << Describe(r) << ": " << e.status();
  return e.ok() ? *e : v1::Estimate();
}

std::string ZoneOfColour(const std::string& colour) {
  if (colour == "green") return "ZONE_GREEN";
  if (colour == "yellow") return "ZONE_YELLOW";
  return "ZONE_RED";
}

TEST(GoldenTest, EveryPaperCellWithinOneHundredthOfAGiB) {
  const std::vector<PaperRow> rows = LoadPaperTables();
  ASSERT_EQ(rows.size(), 232u);
  for (const PaperRow& r : rows) {
    const v1::Estimate e = EstimateRow(r);
    EXPECT_NEAR(ToGiB(e.peak().total_bytes()), r.expected_gib, 0.01)
        << Describe(r) << (r.typo ? " (paper typo row)" : "");
  }
}

TEST(GoldenTest, TypoRowsDifferFromThePaperButMatchTheNote) {
  int typos = 0;
  for (const PaperRow& r : LoadPaperTables()) {
    if (!r.typo) continue;
    ++typos;
    const double gib = EstimateRow(r).peak_gib();
    EXPECT_GT(std::fabs(gib - r.paper_estimate_gib), 0.5) << Describe(r);
  }
  EXPECT_EQ(typos, 3);
}

// The paper colours its estimate by the 80% rule: so does memgate, on
// the peak stage's figure.
TEST(GoldenTest, EveryPaperColourIsThePeaksZone) {
  for (const PaperRow& r : LoadPaperTables()) {
    const v1::Estimate e = EstimateRow(r);
    EXPECT_EQ(v1::Zone_Name(ZoneOf(e.peak().total_bytes(), e.capacity_bytes(),
                                   e.threshold())),
              ZoneOfColour(r.paper_zone))
        << Describe(r);
  }
}

// memgate's zone also checks that the loss's 16-bit gradient of the
// logits, a transient the paper leaves to the headroom, fits beside the
// last stage in what a process can allocate of the GPU (estimate.h
// AdmissionZone, AllocatableBytes; memory_model.cc [CE]). Derived from
// Megatron's and PyTorch's code and measured device facts, not from these
// tables, it turns some of the paper's YELLOW cells RED, never a GREEN one
// here: each of them ran out of memory in the paper, and no cell that ran
// is among them (measured: 13 of the 29 YELLOW cells that ran out of
// memory, none of the 20 that ran; against the whole GPU, 3).
TEST(GoldenTest, TheLossTransientTurnsRedOnlyCellsThatRanOutOfMemory) {
  int turned = 0;
  for (const PaperRow& r : LoadPaperTables()) {
    const v1::Estimate e = EstimateRow(r);
    if (v1::Zone_Name(e.zone()) == ZoneOfColour(r.paper_zone)) continue;
    ++turned;
    EXPECT_EQ(v1::Zone_Name(e.zone()), "ZONE_RED") << Describe(r);
    EXPECT_EQ(r.paper_zone, "yellow") << Describe(r);
    EXPECT_FALSE(r.measured_tflops.has_value())
        << Describe(r) << " ran in the paper, but memgate says it cannot";
  }
  EXPECT_GT(turned, 0);
  printf("the loss's transient turned %d YELLOW cells RED\n", turned);
}

TEST(GoldenTest, NoGreenConfigurationRanOutOfMemory) {
  int green = 0, green_measured = 0;
  for (const PaperRow& r : LoadPaperTables()) {
    if (EstimateRow(r).zone() != v1::ZONE_GREEN) continue;
    ++green;
    EXPECT_TRUE(r.measured_tflops.has_value())
        << Describe(r) << " is GREEN but went OOM in the paper";
    if (r.measured_tflops) ++green_measured;
  }
  EXPECT_GT(green, 100);  // the check covers most of the tables
  EXPECT_EQ(green, green_measured);
}

TEST(GoldenTest, EveryRedConfigurationRanOutOfMemory) {
  for (const PaperRow& r : LoadPaperTables()) {
    if (EstimateRow(r).zone() != v1::ZONE_RED) continue;
    EXPECT_FALSE(r.measured_tflops.has_value())
        << Describe(r) << " is RED but ran in the paper";
  }
}

// Sites raise the threshold (admitting YELLOW by policy, or a limit of
// 90-100%). The zones' checks against what a process can allocate
// (estimate.h AllocatableBytes: the stage and its loss transient, and a
// figure under the threshold) were measured on GPUs, not taken from these
// tables; at every threshold they refuse no cell that ran, and they
// refuse cells that ran out of memory which the threshold alone admits
// (admitted and OOM in the paper at 0.9 / 0.95 / 1: 11 / 18 / 29 by the
// threshold alone, 11 / 13 / 13 with the checks; printed).
TEST(GoldenTest, AtAnyThresholdTheAllocatableChecksRefuseNoCellThatRan) {
  for (double threshold : {0.9, 0.95, 1.0}) {
    int admitted_oom = 0, threshold_alone_oom = 0;
    for (const PaperRow& r : LoadPaperTables()) {
      const v1::Estimate e = EstimateRow(r, threshold);
      const bool by_threshold =
          ZoneOf(e.peak().total_bytes(), e.capacity_bytes(), threshold) ==
          v1::ZONE_GREEN;
      if (r.measured_tflops.has_value()) {
        // Every cell that ran is under 90% of its GPU.
        EXPECT_EQ(e.zone(), v1::ZONE_GREEN)
            << Describe(r) << " ran in the paper; at " << threshold;
        continue;
      }
      threshold_alone_oom += by_threshold;
      admitted_oom += e.zone() == v1::ZONE_GREEN;
    }
    EXPECT_LE(admitted_oom, threshold_alone_oom) << threshold;
    if (threshold == 1.0) {
      EXPECT_LT(admitted_oom, threshold_alone_oom);
    }
    printf("threshold %.2f: admitted and OOM in the paper %d (by the "
           "threshold alone %d)\n",
           threshold, admitted_oom, threshold_alone_oom);
  }
}

}  // namespace
}  // namespace memgate
