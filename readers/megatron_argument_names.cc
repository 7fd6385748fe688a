#include "readers/megatron_argument_names.h"

#include <algorithm>
#include <iterator>

namespace memgate {
namespace {

// Sorted (the generator sorts them), so a lookup is a binary search.
constexpr absl::string_view kNames[] = {
#include "readers/megatron_argument_names.inc"
};

constexpr absl::string_view kAfterCore0120[] = {
#include "readers/megatron_arguments_after_core_0_12_0.inc"
};

}  // namespace

absl::string_view MegatronArgumentNamesRevision() {
  return "Megatron-LM d98e8a6";
}

bool IsMegatronArgumentName(absl::string_view dashed) {
  return std::binary_search(std::begin(kNames), std::end(kNames), dashed);
}

bool IsArgumentAfterCore0120(absl::string_view dashed) {
  return std::binary_search(std::begin(kAfterCore0120),
                            std::end(kAfterCore0120), dashed);
}

}  // namespace memgate
