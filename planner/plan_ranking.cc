#include "planner/plan_ranking.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <tuple>
#include <utility>

namespace memgate {
namespace {


// Where a layout goes in the ranking, in this order (planner.h).
enum class Tier { kFits, kFitsByRecomputing, kFallback, kDoesNotFit };

Tier TierOf(const Layout4D& l) {
  if (l.zone != v1::ZONE_GREEN) return Tier::kDoesNotFit;
  if (!l.recomputes()) return Tier::kFits;
  return l.recompute_cost <= kMaxCompetingRecomputeCost
             ? Tier::kFitsByRecomputing
             : Tier::kFallback;
}

// Deterministic last resort of every order below.
bool TieBreak(const Layout4D& x, const Layout4D& y) {
  const uint64_t gx = RuleGroupOf(x, Ranking::kPaperRule);
  const uint64_t gy = RuleGroupOf(y, Ranking::kPaperRule);
  if (gx != gy) return gx < gy;
  if (x.b != y.b) return x.b > y.b;
  return std::tie(x.t, x.c, x.p, x.ep, x.etp, x.v, x.recompute,
                  x.modules) <
         std::tie(y.t, y.c, y.p, y.ep, y.etp, y.v, y.recompute,
                  y.modules);
}

// Tier::kFits: the paper's rule, the smallest TP x CP x PP first (unless
// kCostModel), then the cost model (kPaperRule: larger micro-batches, then
// the smaller bubble).
struct FitsBefore {
  Ranking ranking;
  bool operator()(const Layout4D& x, const Layout4D& y) const {
    if (ranking != Ranking::kCostModel) {
      const uint64_t gx = RuleGroupOf(x, ranking);
      const uint64_t gy = RuleGroupOf(y, ranking);
      if (gx != gy) return gx < gy;
    }
    if (ranking == Ranking::kPaperRule) {
      if (x.b != y.b) return x.b > y.b;  // larger micro-batches help
      if (x.bubble != y.bubble) return x.bubble < y.bubble;
    }
    if (x.speed != y.speed) return x.speed > y.speed;
    return TieBreak(x, y);
  }
};

// Tier::kFallback: fastest first.
bool FallbackBefore(const Layout4D& x, const Layout4D& y) {
  if (x.speed != y.speed) return x.speed > y.speed;
  return TieBreak(x, y);
}

// Tier::kDoesNotFit: closest to fitting first.
bool MissBefore(const Layout4D& x, const Layout4D& y) {
  if (x.peak_bytes != y.peak_bytes) return x.peak_bytes < y.peak_bytes;
  return TieBreak(x, y);
}

using LayoutKey = std::tuple<uint32_t, uint32_t, uint32_t, uint32_t,
                             uint32_t, uint32_t>;

LayoutKey KeyOf(const Layout4D& l) {
  return {l.t, l.c, l.p, l.ep, l.etp, l.b};
}


// Where each competing recomputation in [begin, end) goes among `fits`
// (in their ranked order): before the first of them with a larger TP x CP x
// PP that the cost model finds slower; fits.size() when none is. In
// product order, one pass over `fits` per distinct product builds the
// running minimum of the eligible speeds (non-increasing), which each
// layout of that product then searches: O(r log r + products x fits).
template <typename It>
std::vector<size_t> PositionsAmong(const std::vector<Layout4D>& fits,
                                   It begin, It end, Ranking ranking) {
  const size_t n = static_cast<size_t>(end - begin);
  std::vector<std::pair<uint64_t, size_t>> by_group(n);
  for (size_t r = 0; r < n; ++r) {
    by_group[r] = {RuleGroupOf(begin[r], ranking), r};
  }
  std::sort(by_group.begin(), by_group.end());
  std::vector<size_t> position(n);
  std::vector<double> running_min(fits.size());
  for (size_t k = 0; k < n; ++k) {
    const uint64_t group = by_group[k].first;
    if (k == 0 || group != by_group[k - 1].first) {
      double low = std::numeric_limits<double>::infinity();
      for (size_t i = 0; i < fits.size(); ++i) {
        if (RuleGroupOf(fits[i], ranking) > group) {
          low = std::min(low, fits[i].speed);
        }
        running_min[i] = low;
      }
    }
    const double speed = begin[by_group[k].second].speed;
    position[by_group[k].second] = static_cast<size_t>(
        std::partition_point(running_min.begin(), running_min.end(),
                             [speed](double low) { return low >= speed; }) -
        running_min.begin());
  }
  return position;
}

}  // namespace

bool Competes(const Layout4D& l) {
  return TierOf(l) <= Tier::kFitsByRecomputing;
}

bool ScheduleBefore(const Layout4D& x, const Layout4D& y) {
  if (Competes(x) != Competes(y)) return Competes(x);
  return x.speed > y.speed;
}

uint64_t RuleGroupOf(const Layout4D& l, Ranking ranking) {
  const uint64_t product = uint64_t{l.t} * l.c * l.p;
  // The prices the product does not see, as one speed factor.
  double unseen = l.exchange;
  if (ranking == Ranking::kRuleThenCost && l.bubble > kLargestMeasuredBubble) {
    unseen *= (1 + kLargestMeasuredBubble) / (1 + l.bubble);
  }
  // No whole doubling (dense, in-node, a bubble under 34.2%, or not a
  // number): no logarithm, as the comparators of RankLayouts call this for
  // every comparison.
  if (!(unseen <= kWorstMeasuredDoubling) || !(unseen > 0)) return product;
  // At most 32 doublings: a product of at most 2^32 GPUs stays in 64 bits.
  const double doublings = std::min(
      32.0, std::floor(std::log(unseen) / std::log(kWorstMeasuredDoubling)));
  return product << static_cast<int>(doublings);
}

std::vector<Layout4D> RankLayouts(std::vector<Layout4D>& layouts, size_t keep,
                                  Ranking ranking) {
  using It = std::vector<Layout4D>::iterator;
  It bounds[5] = {layouts.begin()};
  for (int k = 0; k < 3; ++k) {
    bounds[k + 1] = std::partition(bounds[k], layouts.end(),
                                   [k](const Layout4D& l) {
                                     return static_cast<int>(TierOf(l)) == k;
                                   });
  }
  bounds[4] = layouts.end();
  // Enough of each tier's best that `keep` distinct layouts survive the
  // de-duplication below.
  const size_t enough = keep * kVariantsPerTier;
  auto best_of = [&](int k, auto before) {
    const size_t n =
        std::min(enough, static_cast<size_t>(bounds[k + 1] - bounds[k]));
    std::partial_sort(bounds[k], bounds[k] + n, bounds[k + 1], before);
    return std::vector<Layout4D>(bounds[k], bounds[k] + n);
  };
  // Each layout once, with its best schedule: a slower schedule of a
  // layout already listed is not a slower layout for a recomputation to go
  // before (PositionsAmong).
  std::vector<Layout4D> fits = best_of(0, FitsBefore{ranking});
  {
    std::set<LayoutKey> seen;
    fits.erase(std::remove_if(fits.begin(), fits.end(),
                              [&](const Layout4D& l) {
                                return !seen.insert(KeyOf(l)).second;
                              }),
               fits.end());
  }
  // Every competing recomputation gets its place first: a slower one of a
  // smaller product can go before a faster one of a larger product, so the
  // fastest `enough` alone would not do.
  const std::vector<size_t> position =
      PositionsAmong(fits, bounds[1], bounds[2], ranking);
  std::vector<size_t> order(position.size());
  for (size_t r = 0; r < order.size(); ++r) order[r] = r;
  const size_t placed = std::min(enough, order.size());
  std::partial_sort(order.begin(), order.begin() + placed, order.end(),
                    [&](size_t x, size_t y) {
                      if (position[x] != position[y]) {
                        return position[x] < position[y];
                      }
                      return FallbackBefore(bounds[1][x], bounds[1][y]);
                    });
  order.resize(placed);

  std::vector<Layout4D> out;
  out.reserve(keep);
  std::set<LayoutKey> shown;
  auto emit = [&](const Layout4D& l) {
    if (out.size() == keep) return;
    const bool first = shown.insert(KeyOf(l)).second;
    if (first) out.push_back(l);
  };
  size_t next = 0;  // into order
  for (size_t i = 0; i <= fits.size() && out.size() < keep; ++i) {
    while (next < order.size() && position[order[next]] == i) {
      emit(bounds[1][order[next++]]);
    }
    if (i < fits.size()) emit(fits[i]);
  }
  if (out.size() < keep) {
    for (const Layout4D& l : best_of(2, FallbackBefore)) emit(l);
  }
  if (out.size() < keep) {
    for (const Layout4D& l : best_of(3, MissBefore)) emit(l);
  }
  return out;
}

}  // namespace memgate
