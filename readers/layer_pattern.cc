#include "readers/layer_pattern.h"

#include <algorithm>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace memgate {
namespace {

// The rule alone: ParseLayerPattern names the flag.
absl::Status Bad(absl::string_view rule) {
  return absl::InvalidArgumentError(rule);
}

// Recursive descent over
//   expr   := term ('+' term)*
//   term   := factor ('*' number)* | number '*' factor
//   factor := '[' (number (',' number)*)? ']' | '(' expr ')'
class PatternParser {
 public:
  explicit PatternParser(absl::string_view text) : text_(text) {}

  absl::StatusOr<std::vector<uint32_t>> Parse() {
    absl::StatusOr<std::vector<uint32_t>> out = Expr(0);
    if (!out.ok()) return out;
    Skip();
    if (pos_ != text_.size()) {
      return Bad(absl::StrCat("unexpected '", text_.substr(pos_, 1),
                              "' at character ", pos_ + 1));
    }
    return out;
  }

 private:
  void Skip() {
    while (pos_ < text_.size() && absl::ascii_isspace(text_[pos_])) ++pos_;
  }
  bool Eat(char c) {
    Skip();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool AtNumber() {
    Skip();
    return pos_ < text_.size() && absl::ascii_isdigit(text_[pos_]);
  }
  // A whole number, saturating above the layer bound (refused later).
  uint64_t Number() {
    uint64_t n = 0;
    while (pos_ < text_.size() && absl::ascii_isdigit(text_[pos_])) {
      n = std::min<uint64_t>(n * 10 + (text_[pos_] - '0'),
                             uint64_t{kMaxPatternLayers} + 1);
      ++pos_;
    }
    return n;
  }

  static absl::Status Repeat(std::vector<uint32_t>& list, uint64_t times) {
    if (list.size() * times > kMaxPatternLayers) {
      return Bad(absl::StrCat("the pattern grows past ", kMaxPatternLayers,
                              " layers"));
    }
    const std::vector<uint32_t> once = list;
    list.clear();
    for (uint64_t i = 0; i < times; ++i) {
      list.insert(list.end(), once.begin(), once.end());
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<uint32_t>> Expr(int depth) {
    absl::StatusOr<std::vector<uint32_t>> out = Term(depth);
    while (out.ok() && Eat('+')) {
      absl::StatusOr<std::vector<uint32_t>> next = Term(depth);
      if (!next.ok()) return next;
      if (out->size() + next->size() > kMaxPatternLayers) {
        return Bad(absl::StrCat("the pattern grows past ", kMaxPatternLayers,
                                " layers"));
      }
      out->insert(out->end(), next->begin(), next->end());
    }
    return out;
  }

  absl::StatusOr<std::vector<uint32_t>> Term(int depth) {
    if (AtNumber()) {  // n * factor
      const uint64_t times = Number();
      if (!Eat('*')) return Bad("a number must be followed by '*'");
      absl::StatusOr<std::vector<uint32_t>> f = Factor(depth);
      if (!f.ok()) return f;
      if (absl::Status s = Repeat(*f, times); !s.ok()) return s;
      return f;
    }
    absl::StatusOr<std::vector<uint32_t>> f = Factor(depth);
    while (f.ok() && Eat('*')) {
      if (!AtNumber()) return Bad("'*' must be followed by a number");
      if (absl::Status s = Repeat(*f, Number()); !s.ok()) return s;
    }
    return f;
  }

  absl::StatusOr<std::vector<uint32_t>> Factor(int depth) {
    if (depth >= kMaxPatternDepth) {
      return Bad(absl::StrCat("nested deeper than ", kMaxPatternDepth));
    }
    if (Eat('(')) {
      absl::StatusOr<std::vector<uint32_t>> inner = Expr(depth + 1);
      if (!inner.ok()) return inner;
      if (!Eat(')')) return Bad("a '(' is not closed");
      return inner;
    }
    if (!Eat('[')) return Bad("expected a list like [0,1] or '('");
    std::vector<uint32_t> list;
    if (Eat(']')) return list;
    do {
      if (!AtNumber()) return Bad("list entries must be 0 or 1");
      const uint64_t x = Number();
      if (x > 1) return Bad("list entries must be 0 or 1");
      if (list.size() >= kMaxPatternLayers) {
        return Bad(absl::StrCat("the pattern grows past ", kMaxPatternLayers,
                                " layers"));
      }
      list.push_back(static_cast<uint32_t>(x));
    } while (Eat(','));
    if (!Eat(']')) return Bad("a '[' is not closed");
    return list;
  }

  absl::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

absl::StatusOr<std::vector<uint32_t>> ParseLayerPattern(
    absl::string_view text, uint32_t num_layers, absl::string_view flag,
    bool longer_ok) {
  auto named = [flag](absl::string_view rule) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", rule));
  };
  if (text.size() > 4 * kMaxPatternLayers) return named("too long");
  absl::StatusOr<std::vector<uint32_t>> pattern = PatternParser(text).Parse();
  if (!pattern.ok()) return named(pattern.status().message());
  if (pattern->size() < num_layers ||
      (pattern->size() > num_layers && !longer_ok)) {
    return named(absl::StrCat("the pattern lists ", pattern->size(),
                              " layers; --num-layers is ", num_layers));
  }
  pattern->resize(num_layers);
  return pattern;
}

absl::StatusOr<std::vector<uint32_t>> ParseMoeLayerPattern(
    absl::string_view text, uint32_t num_layers) {
  return ParseLayerPattern(text, num_layers, "moe-layer-freq",
                           /*longer_ok=*/false);
}

}  // namespace memgate
