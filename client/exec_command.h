#ifndef MEMGATE_CLIENT_EXEC_COMMAND_H_
#define MEMGATE_CLIENT_EXEC_COMMAND_H_

#include <ostream>
#include <string>
#include <vector>

namespace memgate::cli {

// `memgate exec [check flags] [--dry-run] -- <launch command>`: checks the
// launch like `memgate check`; when admitted, replaces this process with the
// launch (execvp: argv and environment untouched); otherwise prints why and
// exits with check's code. Returns only when it does not exec.
int RunExec(const std::vector<std::string>& args, std::ostream& out,
            std::ostream& err);

}  // namespace memgate::cli

#endif  // MEMGATE_CLIENT_EXEC_COMMAND_H_
