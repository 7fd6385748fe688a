#ifndef MEMGATE_CLIENT_PLAN_TABLE_H_
#define MEMGATE_CLIENT_PLAN_TABLE_H_

// The paper's table layout for plans: rows (TP, CP, PP, MBS), columns GPU
// counts, cells the estimate in GiB coloured by zone.

#include <string>
#include <vector>

#include "proto/memgate.pb.h"

namespace memgate::cli {

enum class TableFormat { kText, kAnsi, kCsv, kMarkdown };

// One plan per GPU count (the column heading is its first candidate's
// num_gpus, or `gpu_counts`). Rows are every layout that is not RED in at
// least one column, smallest TP x CP x PP first; under them (not in CSV) a
// line says how many were left out, and why an empty table is empty. Text
// and markdown mark the zone after the number (G / Y / R); ANSI colours the
// cell instead.
std::string RenderPlanTable(const std::vector<uint32_t>& gpu_counts,
                            const std::vector<v1::PlanResponse>& plans,
                            TableFormat format);

// The ranked list of one plan: rank, layout, peak, zone, bubble, relative
// speed and why.
std::string RenderPlanList(const v1::PlanResponse& plan);

// One line a candidate, "# rank N: GREEN 53.2 GiB" then the Megatron-LM
// arguments that run it (parallel sizes, sequence parallelism, the
// distributed optimizer, uneven stages, interleaving, recomputation), to
// paste into a launch; `by_name` (no launch was planned), with the model's
// own arguments before them where Megatron's command line says the model:
// a whole launch's arguments.
std::string RenderMegatronArguments(const v1::PlanRequest& request,
                                    const v1::PlanResponse& plan,
                                    bool by_name);

}  // namespace memgate::cli

#endif  // MEMGATE_CLIENT_PLAN_TABLE_H_
