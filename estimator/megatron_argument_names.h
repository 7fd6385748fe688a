#ifndef MEMGATE_ESTIMATOR_MEGATRON_ARGUMENT_NAMES_H_
#define MEMGATE_ESTIMATOR_MEGATRON_ARGUMENT_NAMES_H_

// Every argument name Megatron-LM's command line accepts at the revision
// memgate was last reviewed against (megatron_argument_names.inc, generated
// by scripts/megatron_argument_names.py): the memory-relevant ones are in
// megatron_arguments.h's table, the rest were reviewed as not changing
// per-GPU memory. A launch argument in neither is one memgate has not
// reviewed (a newer Megatron's, a fork's), and is named in a note.

#include "absl/strings/string_view.h"

namespace memgate {

// The Megatron-LM revision the list was generated from.
absl::string_view MegatronArgumentNamesRevision();

// Whether `dashed` (without "--", underscores as dashes) is one of them.
bool IsMegatronArgumentName(absl::string_view dashed);

}  // namespace memgate

#endif  // MEMGATE_ESTIMATOR_MEGATRON_ARGUMENT_NAMES_H_
