// Fuzzes the shell-line lexer (readers/shell_line.h) that splits a batch
// script's launch line as bash does: it must answer (commands, or
// INVALID_ARGUMENT for what a line leaves open), return no more than the
// line, and give back each command's words when they are written again
// single-quoted (what it removed was quoting, never a word's content).

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "readers/shell_line.h"

namespace {

void Require(bool condition) {
  if (!condition) std::abort();  // libFuzzer reports it as a crash
}

std::string SingleQuoted(const std::string& word) {
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string line(reinterpret_cast<const char*>(data), size);
  const absl::StatusOr<std::vector<std::vector<std::string>>> commands =
      memgate::ShellLineCommands(line);
  if (!commands.ok()) {
    Require(commands.status().code() ==
                           absl::StatusCode::kInvalidArgument);
    return 0;
  }
  size_t bytes = 0;
  for (const std::vector<std::string>& command : *commands) {
    Require(!command.empty());
    std::string again;
    for (const std::string& word : command) {
      bytes += word.size();
      again += SingleQuoted(word) + " ";
    }
    const absl::StatusOr<std::vector<std::vector<std::string>>> round =
        memgate::ShellLineCommands(again);
    Require(round.ok() && round->size() == 1 &&
                           (*round)[0] == command);
  }
  Require(bytes <= line.size());
  return 0;
}
