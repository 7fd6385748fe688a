#ifndef MEMGATE_READERS_SHELL_LINE_H_
#define MEMGATE_READERS_SHELL_LINE_H_

// One line of shell text (a batch script's launch, as the Slurm hook hands
// it to `memgate check --launch-lines`), split into its simple commands
// and their words as bash splits them, so that what the shell does with a
// word (ends the command, redirects, comments out) is told apart from what
// the program receives.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace memgate {

// The simple commands of `line`, each its words as the program receives
// them:
//   - words end at unquoted blanks; quotes are removed ('...' literal,
//     "..." with \ quoting " \ $ and `), a backslash outside quotes quotes
//     the next byte;
//   - $( ... ), ${ ... } and ` ... ` stay whole in their word as written
//     (their quotes, blanks and operators too): what they produce is
//     decided when the command runs, and memgate refuses a word holding
//     one where it may supply arguments;
//   - unquoted ; & && | || |& ;; ( ) and newlines end a command;
//   - redirections (< > >> >| <> << <<< <& >& &> &>>, after an optional
//     file descriptor) are dropped with their target word;
//   - an unquoted # that starts a word begins a comment, to the line's end.
// Empty commands are left out. One pass over the line: its work and what
// it returns are linear in its length. INVALID_ARGUMENT for a quote or a
// substitution left open, or one nested more than kMaxShellNesting deep.
inline constexpr size_t kMaxShellNesting = 64;
absl::StatusOr<std::vector<std::vector<std::string>>> ShellLineCommands(
    absl::string_view line);

}  // namespace memgate

#endif  // MEMGATE_READERS_SHELL_LINE_H_
