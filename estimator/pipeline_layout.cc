#include "estimator/pipeline_layout.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace memgate {
namespace {

absl::Status Bad(absl::string_view rule) {
  return absl::InvalidArgumentError(
      absl::StrCat("--pipeline-model-parallel-layout: ", rule));
}

// Reads "*n" at text[i] (i at the '*'); the count and where it ends, or
// false when text[i..] is not '*' and digits. Counts above the expansion
// limit saturate there (they are refused by the caller).
bool ReadRepeat(absl::string_view text, size_t i, uint64_t& count,
                size_t& end) {
  if (i >= text.size() || text[i] != '*') return false;
  size_t j = i + 1;
  count = 0;
  while (j < text.size() && absl::ascii_isdigit(text[j])) {
    count = count * 10 + static_cast<uint64_t>(text[j] - '0');
    if (count > kMaxExpandedLayout) count = kMaxExpandedLayout + 1;
    ++j;
  }
  if (j == i + 1) return false;
  end = j;
  return true;
}

// Appends `piece` `count` times, refusing past the expansion limit before
// building anything.
absl::Status Repeat(absl::string_view piece, uint64_t count,
                    std::string& out) {
  if (count > kMaxExpandedLayout ||
      out.size() + piece.size() * count > kMaxExpandedLayout) {
    return Bad(absl::StrCat("expands past ", kMaxExpandedLayout,
                            " characters"));
  }
  for (uint64_t k = 0; k < count; ++k) out.append(piece.data(), piece.size());
  return absl::OkStatus();
}

// Python's re.sub(r'\(([^)]+)\)\*(\d+)', group1 * n): leftmost matches,
// the group running to the first ')'.
absl::StatusOr<std::string> UnrollGroups(absl::string_view text) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] == '(') {
      const size_t close = text.find(')', i + 1);
      uint64_t count = 0;
      size_t end = 0;
      if (close != absl::string_view::npos && close > i + 1 &&
          ReadRepeat(text, close + 1, count, end)) {
        if (absl::Status s = Repeat(text.substr(i + 1, close - i - 1), count,
                                    out);
            !s.ok()) {
          return s;
        }
        i = end;
        continue;
      }
    }
    if (absl::Status s = Repeat(text.substr(i, 1), 1, out); !s.ok()) return s;
    ++i;
  }
  return out;
}

// Python's re.sub(r'(.)\*(\d+)', x * n).
absl::StatusOr<std::string> UnrollCharacters(absl::string_view text) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    uint64_t count = 1;
    size_t end = i + 1;
    if (text[i] != '\n') ReadRepeat(text, i + 1, count, end);
    if (absl::Status s = Repeat(text.substr(i, 1), count, out); !s.ok()) {
      return s;
    }
    i = end;
  }
  return out;
}

}  // namespace

absl::StatusOr<PipelineLayout> ParsePipelineLayout(absl::string_view text,
                                                   uint32_t pipeline,
                                                   uint32_t num_layers,
                                                   uint32_t mtp_layers) {
  if (text.size() > kMaxExpandedLayout) {
    return Bad(absl::StrCat("longer than ", kMaxExpandedLayout,
                            " characters"));
  }
  std::string compact;
  for (char c : text) {
    if (c != ',') compact.push_back(c);
  }
  absl::StatusOr<std::string> grouped = UnrollGroups(compact);
  if (!grouped.ok()) return grouped.status();
  absl::StatusOr<std::string> flat = UnrollCharacters(*grouped);
  if (!flat.ok()) return flat.status();

  PipelineLayout layout;
  layout.layers.push_back(0);
  uint64_t decoders = 0, mtps = 0;
  size_t mtp_stage = 0;  // the stage of the last 'm'
  int embeddings = 0, losses = 0;
  for (size_t i = 0; i < flat->size(); ++i) {
    const char c = (*flat)[i];
    switch (c) {
      case '|':
        layout.layers.push_back(0);
        break;
      case 't':
        if (mtps > 0) {
          return Bad("transformer layers ('t') must come before the MTP "
                     "layers ('m')");
        }
        ++layout.layers.back();
        ++decoders;
        break;
      case 'E':
        if (i != 0) return Bad("'E' (the embedding) must come first");
        ++embeddings;
        break;
      case 'L':
        if (i + 1 != flat->size()) {
          return Bad("'L' (the loss) must come last");
        }
        ++losses;
        break;
      case 'm':
        if (mtps > 0 && mtp_stage + 1 != layout.layers.size()) {
          return Bad("the MTP layers ('m') must all be in one stage");
        }
        ++mtps;
        mtp_stage = layout.layers.size() - 1;
        break;
      default:
        return Bad(absl::StrCat("'", std::string(1, c),
                                "' is not a layer (E, t, m, L, |)"));
    }
  }
  if (embeddings != 1 || losses != 1) {
    return Bad("must hold 'E' and 'L' exactly once");
  }
  if (decoders != num_layers) {
    return Bad(absl::StrCat("has ", decoders, " transformer layers ('t'); "
                            "--num-layers is ", num_layers));
  }
  if (mtps != mtp_layers) {
    return Bad(absl::StrCat("has ", mtps, " MTP layers ('m'); "
                            "--mtp-num-layers is ", mtp_layers));
  }
  if (pipeline == 0 || layout.layers.size() % pipeline != 0) {
    return Bad(absl::StrCat(layout.layers.size(), " stages do not divide "
                            "over --pipeline-model-parallel-size ",
                            pipeline));
  }
  layout.virtual_stages =
      static_cast<uint32_t>(layout.layers.size() / pipeline);
  // Megatron puts the MTP layers in the last chunk of a rank
  // (pipeline_parallel_layer_layout.py validate_layer_layout); off the
  // last rank they are "standalone", their logits the loss stage's.
  if (mtps > 0 && mtp_stage + 1 != layout.layers.size()) {
    if (mtp_stage / pipeline + 1 != layout.virtual_stages) {
      return Bad(absl::StrCat(
          "the MTP layers ('m') are in stage ", mtp_stage,
          ", chunk ", mtp_stage / pipeline, " of rank ", mtp_stage % pipeline,
          ": Megatron needs them in a rank's last chunk (",
          layout.virtual_stages - 1, ")"));
    }
    layout.mtp_pipeline_rank = static_cast<uint32_t>(mtp_stage % pipeline);
  }
  return layout;
}

void ApplyPipelineLayout(const PipelineLayout& layout,
                         v1::ParallelConfig& parallel) {
  parallel.clear_layers_per_stage();
  for (uint32_t n : layout.layers) parallel.add_layers_per_stage(n);
  if (layout.virtual_stages > 1) {
    parallel.set_virtual_pipeline_stages(layout.virtual_stages);
  } else {
    parallel.clear_virtual_pipeline_stages();
  }
  if (layout.mtp_pipeline_rank.has_value()) {
    parallel.set_mtp_pipeline_rank(*layout.mtp_pipeline_rank);
  } else {
    parallel.clear_mtp_pipeline_rank();
  }
}

}  // namespace memgate
