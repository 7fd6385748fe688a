#include "estimator/fixed_format.h"

#include <cmath>
#include <cstdint>
#include <cstdio>


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
  uint64_t magnitude =
      negative ? static_cast<uint64_t>(-scaled) : static_cast<uint64_t>(scaled);
  // Digits written backwards into a small buffer: no allocation, no printf.
  char buffer[32];
  char* end = buffer + sizeof buffer;
  char* p = end;
  for (int i = 0; i < digits; ++i) {
    *--p = static_cast<char>('0' + magnitude % 10);
    magnitude /= 10;
  }
  if (digits > 0) *--p = '.';
  do {
    *--p = static_cast<char>('0' + magnitude % 10);
    magnitude /= 10;
  } while (magnitude != 0);
  if (negative) *--p = '-';
  out.append(p, static_cast<size_t>(end - p));
}

std::string Fixed(double value, int digits) {
  std::string out;
  AppendFixed(out, value, digits);
  return out;
}

}  // namespace memgate
