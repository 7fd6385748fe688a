#include "client/exec_command.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>

#include "absl/strings/str_join.h"
#include "client/check_command.h"
#include "client/exit_codes.h"
#include "readers/megatron_args.h"

namespace memgate::cli {
namespace {

constexpr char kUsage[] =
    "usage: memgate exec [check flags] [--dry-run] -- <launch command>\n\n"
    "Checks the job like `memgate check` and, when admitted, runs the "
    "command in\nplace of memgate (execvp: arguments and environment "
    "untouched). When refused,\nprints why and exits with check's code (1 "
    "refuse, 2 invalid, 3 unavailable).\nA command that carries Megatron-LM "
    "arguments is read (and cross-checked with\n--job or job flags); any "
    "other command (bash train.sh) is opaque: the job\nthen comes from "
    "--job or job flags alone. TransformerEngine's variables in the\n"
    "environment (NVTE_FLASH_ATTN, NVTE_FUSED_ATTN, NVTE_BACKWARD_OVERRIDE, "
    "...) are\nread with the launch.\n--dry-run prints the command instead of "
    "running it.\nSee `memgate check --help` for the check flags.\n";

// Single-quoted for a POSIX shell, so a dry run can be pasted.
std::string ShellQuote(const std::string& word) {
  if (!word.empty() && word.find_first_of(" \t\n'\"\\$`*?[]{}()<>|&;#~!") ==
                           std::string::npos) {
    return word;
  }
  std::string quoted = "'";
  for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

}  // namespace

int RunExec(const std::vector<std::string>& args, std::ostream& out,
            std::ostream& err) {
  const auto dash = std::find(args.begin(), args.end(), "--");
  std::vector<std::string> check_args(args.begin(), dash);
  const std::vector<std::string> launch(dash == args.end() ? dash : dash + 1,
                                        args.end());
  if (std::find(check_args.begin(), check_args.end(), "--help") !=
      check_args.end()) {
    out << kUsage;
    return kExitAdmit;
  }
  const auto dry = std::remove(check_args.begin(), check_args.end(),
                               std::string("--dry-run"));
  const bool dry_run = dry != check_args.end();
  check_args.erase(dry, check_args.end());
  if (launch.empty()) {
    err << "memgate exec: --: a launch command is required after --\n";
    return kExitInvalid;
  }

  // An opaque command (a wrapper script) is not read: the job is what the
  // flags or --job describe. A Megatron launch is read and cross-checked.
  const bool opaque = !HasMegatronArguments(launch);
  // The command inherits memgate's environment, TransformerEngine's
  // attention switches with it (readers/te_attention_environment.h): in
  // front of a launch's words, or applied to the job an opaque command's
  // flags describe.
  std::vector<std::string> environment;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    environment.emplace_back(*e);
  }
  if (!opaque) {
    const std::vector<std::string> read =
        WithTeEnvironment(launch, environment);
    check_args.push_back("--");
    check_args.insert(check_args.end(), read.begin(), read.end());
    environment.clear();
  }
  std::ostringstream report;
  const int code = RunCheck(check_args, environment, report, err);
  if (code != kExitAdmit) {
    // The launch's own output will not follow: the whole report goes out.
    err << report.str();
    if (code == kExitInvalid && opaque) {
      err << "memgate exec: '" << launch[0]
          << "' carries no Megatron-LM arguments, so the job must be "
             "described by --job=FILE or job flags (--model, --gpu, --gpus, "
             "--tp, ...)\n";
    }
    return code;
  }
  const std::string verdict = report.str().substr(0, report.str().find('\n'));
  if (!verdict.empty()) err << "memgate: " << verdict << "\n";
  std::vector<std::string> quoted;
  for (const std::string& w : launch) quoted.push_back(ShellQuote(w));
  if (dry_run) {
    out << "memgate exec: would run: " << absl::StrJoin(quoted, " ") << "\n";
    return kExitAdmit;
  }
  err.flush();
  out.flush();
  std::vector<char*> argv;
  for (const std::string& w : launch) argv.push_back(const_cast<char*>(w.c_str()));
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  err << "memgate exec: cannot run '" << launch[0] << "': "
      << std::strerror(errno) << "\n";
  return errno == ENOENT ? 127 : 126;  // as a shell reports it
}

}  // namespace memgate::cli
