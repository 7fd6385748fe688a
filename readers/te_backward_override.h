#ifndef MEMGATE_READERS_TE_BACKWARD_OVERRIDE_H_
#define MEMGATE_READERS_TE_BACKWARD_OVERRIDE_H_

// TransformerEngine's NVTE_BACKWARD_OVERRIDE (TE d0067d0, from fdf9fb1):
// every fp8 recipe but delayed scaling reads it when built (common/
// recipe/__init__.py backward_override = os.getenv(...); DelayedScaling
// asserts it unset, and every recipe asserts it is unset, high_precision
// or dequantized). Its Linear layers then (pytorch/module/linear.py):
//   - high_precision: save_original_input, the GEMM's 16-bit input kept
//     for a backward in high precision instead of its fp8 copy, as
//     Megatron's --no-fp8-wgrad keeps it: not modelled, refused;
//   - dequantized: the fp8 input's rowwise copy kept (the columnwise one
//     dropped, the same bytes) and the weights' columnwise copies not
//     made: no more than memgate counts.
// Internal to the Megatron launch reader and the whole-job environment.

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "proto/memgate.pb.h"

namespace memgate {

// Reads the variable from `environment` for a job trained as `training`
// says (its fp8 and recipe). INVALID_ARGUMENT names the assignment and
// `source` (where it came from) for high_precision under fp8, and for
// what TE would assert on; notes say what an accepted value changes.
absl::Status ReadTeBackwardOverride(
    const std::map<std::string, std::string>& environment,
    const v1::TrainingConfig& training, std::vector<std::string>& notes,
    absl::string_view source);

}  // namespace memgate

#endif  // MEMGATE_READERS_TE_BACKWARD_OVERRIDE_H_
