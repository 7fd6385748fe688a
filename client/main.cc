// memgate: will this LLM training job fit in GPU memory?
//
//   memgate estimate ...   per-stage memory of one job (embedded)
//   memgate check ...      admission decision (embedded or --server)
//   memgate plan ...       the ranked 4D configuration space
//   memgate exec ... -- cmd   check a launch, then exec it
//
// Each command parses its own flags; see `memgate <command> --help`.

#include <unistd.h>

#include <iostream>
#include <string>
#include <vector>

#include "client/check_command.h"
#include "client/estimate_command.h"
#include "client/exec_command.h"
#include "client/exit_codes.h"
#include "client/plan_command.h"

namespace {

constexpr char kUsage[] =
    "usage: memgate <command> [flags]\n\n"
    "Pre-flight GPU memory estimates and admission checks for Llama training\n"
    "with 4D parallelism (TP, CP, PP, DP).\n\n"
    "Commands:\n"
    "  estimate   per-stage memory of one job and its zone (embedded)\n"
    "  check      admit or refuse one job (embedded, or --server); exit 0/1/2/3\n"
    "  plan       every valid (TP, CP, PP, MBS) for a cluster, ranked\n"
    "  exec       check a launch command, then run it in memgate's place\n\n"
    "Run `memgate <command> --help` for a command's flags.\n";

}  // namespace

int main(int argc, char** argv) {
  using namespace memgate::cli;
  if (argc < 2) {
    std::cerr << kUsage;
    return kExitInvalid;
  }
  const std::string command = argv[1];
  const std::vector<std::string> args(argv + 2, argv + argc);
  if (command == "--help" || command == "-h" || command == "help") {
    std::cout << kUsage;
    return kExitAdmit;
  }
  int code = kExitInvalid;
  if (command == "estimate") {
    code = RunEstimate(args, std::cout, std::cerr);
  } else if (command == "check") {
    code = RunCheck(args, std::cout, std::cerr);
  } else if (command == "exec") {
    code = RunExec(args, std::cout, std::cerr);
  } else if (command == "plan") {
    code = RunPlan(args, std::cout, std::cerr, isatty(STDOUT_FILENO) == 1);
  } else {
    std::cerr << "memgate: unknown command '" << command << "'\n\n"
              << kUsage;
  }
  // The answer is written: leave without static destructors, so that
  // nothing after the decision (gRPC's teardown after a --server call
  // among them) can keep a scheduler's hook waiting. Seen once in CI: a
  // check whose server had been killed did not exit within 60 s
  // (DyingServerTest); the cause was not pinned down.
  std::cout.flush();
  std::cerr.flush();
  _exit(code);
}
