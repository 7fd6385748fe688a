#ifndef MEMGATE_READERS_LAYER_PATTERN_H_
#define MEMGATE_READERS_LAYER_PATTERN_H_

// Megatron-LM's layer patterns in their list form (--moe-layer-freq,
// --window-attn-skip-freq: arguments.py moe_freq_type): a Python
// expression of int lists, '+' and '*' ("([0]*3+[1]*58)",
// "([1]*3+[0]*2)*2", "[0,1,1,1]"), which arguments.py evaluates. memgate
// reads that subset without evaluating anything, and bounds the result
// before building it.

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace memgate {

// The longest pattern (layers) and the deepest nesting read.
inline constexpr uint32_t kMaxPatternLayers = 1u << 16;
inline constexpr int kMaxPatternDepth = 32;

// The pattern's first `num_layers` entries (each 0 or 1). Errors name
// --`flag` and the rule. The length must be `num_layers` (Megatron
// requires it of --moe-layer-freq), or, `longer_ok`, at least that (Megatron
// reads --window-attn-skip-freq by layer number, and raises past its end).
absl::StatusOr<std::vector<uint32_t>> ParseLayerPattern(
    absl::string_view text, uint32_t num_layers, absl::string_view flag,
    bool longer_ok);

// --moe-layer-freq's (1: an MoE layer).
absl::StatusOr<std::vector<uint32_t>> ParseMoeLayerPattern(
    absl::string_view text, uint32_t num_layers);

}  // namespace memgate

#endif  // MEMGATE_READERS_LAYER_PATTERN_H_
