#include "estimator/fixed_format.h"

#include <cmath>
#include <cstdint>
#include <cstdio>

#include "absl/strings/str_cat.h"

namespace memgate {

void AppendFixed(std::string& out, double value, int digits) {
  if (digits < 0) digits = 0;
  if (digits > 9) digits = 9;
  int64_t scale = 1;
  for (int i = 0; i < digits; ++i) scale *= 10;
  if (!std::isfinite(value) || std::fabs(value) >= 1e15 / scale) {
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.*f", digits, value);
    out += buffer;
    return;
  }
  const int64_t scaled = std::llround(value * static_cast<double>(scale));
  const bool negative = scaled < 0;
  const uint64_t magnitude =
      negative ? static_cast<uint64_t>(-scaled) : static_cast<uint64_t>(scaled);
  if (negative) out.push_back('-');
  absl::StrAppend(&out, magnitude / static_cast<uint64_t>(scale));
  if (digits == 0) return;
  out.push_back('.');
  std::string fraction =
      absl::StrCat(magnitude % static_cast<uint64_t>(scale));
  out.append(static_cast<size_t>(digits) - fraction.size(), '0');
  out += fraction;
}

std::string Fixed(double value, int digits) {
  std::string out;
  AppendFixed(out, value, digits);
  return out;
}

}  // namespace memgate
