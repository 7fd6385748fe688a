#ifndef MEMGATE_CLIENT_CHECK_COMMAND_H_
#define MEMGATE_CLIENT_CHECK_COMMAND_H_

#include <ostream>
#include <string>
#include <vector>

namespace memgate::cli {

// `memgate check [flags] [-- <launch command>]`: the admission decision for
// one job, embedded or from a memgate_server. Returns the exit code:
// 0 admit, 1 refuse, 2 invalid input, 3 service unavailable (or 0 with
// --on-unavailable=admit).
int RunCheck(const std::vector<std::string>& args, std::ostream& out,
             std::ostream& err);

// The same for a job given by flags or --job whose command will run with
// `environment` (NAME=VALUE strings): its TransformerEngine attention
// switches apply to the job (memgate exec of an opaque command).
int RunCheck(const std::vector<std::string>& args,
             const std::vector<std::string>& environment, std::ostream& out,
             std::ostream& err);

}  // namespace memgate::cli

#endif  // MEMGATE_CLIENT_CHECK_COMMAND_H_
