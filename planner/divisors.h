#ifndef MEMGATE_PLANNER_DIVISORS_H_
#define MEMGATE_PLANNER_DIVISORS_H_

#include <algorithm>
#include <cstdint>
#include <vector>

namespace memgate {

// The divisors of n in increasing order, in O(sqrt n): the sizes a
// parallel dimension of n GPUs (or a batch of n samples) can take.
inline std::vector<uint32_t> Divisors(uint32_t n) {
  std::vector<uint32_t> out;
  for (uint64_t i = 1; i * i <= n; ++i) {
    if (n % i) continue;
    out.push_back(static_cast<uint32_t>(i));
    if (i * i != n) out.push_back(static_cast<uint32_t>(n / i));
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace memgate

#endif  // MEMGATE_PLANNER_DIVISORS_H_
