#ifndef MEMGATE_ESTIMATOR_FIXED_FORMAT_H_
#define MEMGATE_ESTIMATOR_FIXED_FORMAT_H_

// Fixed-point decimals without printf: the Admit path formats a handful of
// GiB figures per call, and glibc's printf of doubles cost more than the
// estimate itself (bench/RESULTS.md).

#include <string>

namespace memgate {

// Appends `value` rounded to `digits` (0..9) decimals, like "%.<digits>f"
// for finite values of magnitude below 1e15 (others go through printf).
void AppendFixed(std::string& out, double value, int digits);

// The same, as a new string.
std::string Fixed(double value, int digits);

}  // namespace memgate

#endif  // MEMGATE_ESTIMATOR_FIXED_FORMAT_H_
