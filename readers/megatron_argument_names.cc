#include "readers/megatron_argument_names.h"

#include <algorithm>
#include <iterator>

namespace memgate {
namespace {

// Sorted (the generator sorts them), so a lookup is a binary search.
constexpr absl::string_view kNames[] = {
#include "readers/megatron_argument_names.inc"
};

// Accepted by a release from core 0.12.0 on, no longer by the reviewed
// revision: reviewed too (the memory-relevant ones are in the table).
constexpr absl::string_view kRemoved[] = {
#include "readers/megatron_arguments_removed.inc"
};

constexpr absl::string_view kAfterCore0120[] = {
#include "readers/megatron_arguments_after_core_0_12_0.inc"
};

constexpr absl::string_view kSwitches[] = {
#include "readers/megatron_argument_switches.inc"
};

constexpr absl::string_view kLists[] = {
#include "readers/megatron_argument_lists.inc"
};

}  // namespace

absl::string_view MegatronArgumentNamesRevision() {
  return "Megatron-LM d98e8a6";
}

bool IsMegatronArgumentName(absl::string_view dashed) {
  return std::binary_search(std::begin(kNames), std::end(kNames), dashed) ||
         std::binary_search(std::begin(kRemoved), std::end(kRemoved), dashed);
}

bool IsMegatronSwitch(absl::string_view dashed) {
  return std::binary_search(std::begin(kSwitches), std::end(kSwitches),
                            dashed);
}

bool IsMegatronListArgument(absl::string_view dashed) {
  return std::binary_search(std::begin(kLists), std::end(kLists), dashed);
}

bool IsArgumentAfterCore0120(absl::string_view dashed) {
  return std::binary_search(std::begin(kAfterCore0120),
                            std::end(kAfterCore0120), dashed);
}

}  // namespace memgate
