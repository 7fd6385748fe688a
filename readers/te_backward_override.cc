#include "readers/te_backward_override.h"

#include "absl/strings/str_cat.h"
#include "readers/launch_arguments.h"

namespace memgate {

absl::Status ReadTeBackwardOverride(
    const std::map<std::string, std::string>& environment,
    const v1::TrainingConfig& training, std::vector<std::string>& notes,
    absl::string_view source) {
  const auto it = environment.find(kTeBackwardOverride);
  if (it == environment.end()) return absl::OkStatus();
  // The words' reader keeps at most 65 bytes of a value; a line's worth
  // is echoed.
  const std::string said = absl::StrCat(
      kTeBackwardOverride, "=", it->second.substr(0, 32), " (", source, ")");
  if (!training.has_fp8()) {
    notes.push_back(absl::StrCat(
        said, ": no change: TransformerEngine reads it into fp8 recipes, and "
              "this job trains without fp8"));
    return absl::OkStatus();
  }
  const std::string& value = it->second;
  if (value != "high_precision" && value != "dequantized") {
    return absl::InvalidArgumentError(absl::StrCat(
        said, ": TransformerEngine asserts it is unset, high_precision or "
              "dequantized when it builds the fp8 recipe"));
  }
  const v1::Fp8::Recipe recipe = training.fp8().recipe();
  if (recipe == v1::Fp8::RECIPE_UNSPECIFIED ||
      recipe == v1::Fp8::RECIPE_DELAYED) {
    return absl::InvalidArgumentError(absl::StrCat(
        said, ": TransformerEngine's delayed scaling (this job's fp8 recipe) "
              "asserts it unset: the job stops at start"));
  }
  if (value == "high_precision") {
    return absl::InvalidArgumentError(absl::StrCat(
        said, ": the fp8 GEMMs keep their 16-bit inputs for a backward in "
              "high precision (TransformerEngine module/linear.py "
              "save_original_input), as --no-fp8-wgrad does: not modelled"));
  }
  notes.push_back(absl::StrCat(
      said, ": the fp8 GEMMs' backward dequantizes their saved fp8 inputs "
            "(the same bytes, counted); the fp8 weights' columnwise copies, "
            "counted, are not made: an upper bound"));
  return absl::OkStatus();
}

}  // namespace memgate
