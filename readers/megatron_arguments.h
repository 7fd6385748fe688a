#ifndef MEMGATE_READERS_MEGATRON_ARGUMENTS_H_
#define MEMGATE_READERS_MEGATRON_ARGUMENTS_H_

// The source of truth for reading Megatron-LM launches: every argument of
// Megatron-LM (core_r0.12 and later, megatron/training/arguments.py) that
// changes per-GPU memory, and what memgate does with it. An argument is
//   - modelled: it changes the named term of the estimate;
//   - refused: its presence is an error naming it and why (memgate does
//     not model it, and answering without it could admit an OOM);
//   - partly modelled: some values are modelled, the others refused.
// Megatron's other arguments (megatron_argument_names.h) do not change
// per-GPU memory and are ignored; others are not read and a note names
// them.
// docs/megatron-arguments.md is generated from this table
// (`bazel run //readers:megatron_arguments_doc`) and a test keeps the
// two equal.

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace memgate {

enum class Handling { kModelled, kPartly, kRefused };

struct MegatronArgument {
  const char* name;              // without the leading "--"
  bool takes_value;              // false: a switch
  Handling handling;
  const char* megatron_default;  // as arguments.py has it ("" for switches)
  const char* effect;            // the term it changes, or why refused
};

// In the order of the generated document: model, precision, parallelism,
// activations, optimizer, and what is refused.
const std::vector<MegatronArgument>& MegatronMemoryArguments();

// The entry for `name` (without "--", dashes or underscores), or null.
const MegatronArgument* FindMegatronArgument(absl::string_view name);

// docs/megatron-arguments.md.
std::string MegatronArgumentsMarkdown();

}  // namespace memgate

#endif  // MEMGATE_READERS_MEGATRON_ARGUMENTS_H_
