#ifndef MEMGATE_ESTIMATOR_UNITS_H_
#define MEMGATE_ESTIMATOR_UNITS_H_

namespace memgate {

// The paper's "GB" is GiB: every table cell is bytes / 2^30.
inline constexpr double kBytesPerGiB = 1024.0 * 1024.0 * 1024.0;

inline double ToGiB(double bytes) { return bytes / kBytesPerGiB; }

// The paper's 80% rule: GREEN at or below this fraction of GPU memory.
inline constexpr double kDefaultThreshold = 0.8;

}  // namespace memgate

#endif  // MEMGATE_ESTIMATOR_UNITS_H_
