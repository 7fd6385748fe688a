#ifndef MEMGATE_ESTIMATOR_CLIPPED_TEXT_H_
#define MEMGATE_ESTIMATOR_CLIPPED_TEXT_H_

// Bounds on what a message quotes of its input: a name, a path or an
// argument is the user's, and so is its length. Messages travel in gRPC
// trailers (a few KiB at most) and in the Slurm hook's answer, inside
// slurmctld's locks.

#include <cstddef>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace memgate {

// At most `bytes` of `text`, "..." after a cut: a user's word quoted in a
// message or note.
inline std::string Clipped(absl::string_view text, size_t bytes) {
  if (text.size() <= bytes) return std::string(text);
  return absl::StrCat(text.substr(0, bytes), "...");
}

// `text` with each of its lines Clipped to `bytes`: a message or note
// whose parts quote the user's words, bounded line by line.
inline std::string ClippedLines(absl::string_view text, size_t bytes) {
  std::string out;
  out.reserve(text.size() < 4 * bytes ? text.size() : 4 * bytes);
  while (true) {
    const size_t end = text.find('\n');
    absl::StrAppend(&out, Clipped(text.substr(0, end), bytes));
    if (end == absl::string_view::npos) return out;
    out.push_back('\n');
    text.remove_prefix(end + 1);
  }
}

// How much of a name memgate quotes back (model and GPU names, values of
// launch arguments).
inline constexpr size_t kQuotedNameBytes = 64;

// A name or value in single quotes, by its first kQuotedNameBytes: how a
// message names what the user gave ("'x' is not modelled").
inline std::string Quoted(absl::string_view text) {
  return absl::StrCat("'", Clipped(text, kQuotedNameBytes), "'");
}

}  // namespace memgate

#endif  // MEMGATE_ESTIMATOR_CLIPPED_TEXT_H_
