#ifndef MEMGATE_CLIENT_PLAN_COMMAND_H_
#define MEMGATE_CLIENT_PLAN_COMMAND_H_

#include <ostream>
#include <string>
#include <vector>

namespace memgate::cli {

// `memgate plan`: every valid (TP, CP, PP, MBS) for a model on a cluster,
// ranked; or with --table, the paper-style table over several GPU counts.
// Embedded or --server. Exit 0, 2 for bad input, 3 service unavailable.
int RunPlan(const std::vector<std::string>& args, std::ostream& out,
            std::ostream& err, bool out_is_terminal);

}  // namespace memgate::cli

#endif  // MEMGATE_CLIENT_PLAN_COMMAND_H_
