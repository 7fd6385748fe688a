#ifndef MEMGATE_CLIENT_ESTIMATE_COMMAND_H_
#define MEMGATE_CLIENT_ESTIMATE_COMMAND_H_

#include <ostream>
#include <string>
#include <vector>

namespace memgate::cli {

// `memgate estimate [flags]`: the per-stage memory of one job, embedded (no
// server). Returns the process exit code: 0, or 2 for bad input.
int RunEstimate(const std::vector<std::string>& args, std::ostream& out,
                std::ostream& err);

}  // namespace memgate::cli

#endif  // MEMGATE_CLIENT_ESTIMATE_COMMAND_H_
