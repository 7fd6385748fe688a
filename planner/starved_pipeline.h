#ifndef MEMGATE_PLANNER_STARVED_PIPELINE_H_
#define MEMGATE_PLANNER_STARVED_PIPELINE_H_

// What a plan tells its user when its first layout idles its pipeline:
// too few micro-batches for its stages, a global batch too small for the
// cluster (the paper, sections 1 and 4.2.1). The ranking already puts such
// layouts after busier ones (plan_ranking.h RuleGroupOf); when the first
// is starved anyway, every layout that fits is, or the rest are slower.

#include <cstdint>
#include <optional>
#include <string>

#include "proto/memgate.pb.h"

namespace memgate {

// The smallest global batch at which `c`'s pipeline bubble, (p - 1) /
// (m v), is at most kLargestMeasuredBubble (the largest the paper
// measured), its other sizes unchanged; 0 when PP is 1 or any size is 0.
uint64_t GlobalBatchForMeasuredBubble(const v1::Candidate& c);

// A note for `plan` of `request` when its first candidate is GREEN with a
// bubble over kBubbleThatDoubles: the bubble, the micro-batches a step,
// and the global batch that would bring it to the paper's largest.
// PlanLayouts adds it to PlanResponse.notes.
std::optional<std::string> StarvedPipelineNote(const v1::PlanRequest& request,
                                               const v1::PlanResponse& plan);

}  // namespace memgate

#endif  // MEMGATE_PLANNER_STARVED_PIPELINE_H_
