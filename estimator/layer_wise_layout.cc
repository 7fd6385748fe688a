// [LW] LayerWiseDistributedOptimizer._compute_per_buffer_param_layout
// (Megatron-LM core/optimizer/layer_wise_optimizer.py: core_v0.19.0 for
// kByElements, which core_v0.18.0 shares; d98e8a6 for
// kByNewtonSchulzCost), step for step, in integers where Megatron's are
// Python ints (exact), in doubles where it divides or scales by a float.

#include "estimator/layer_wise_layout.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace memgate {
namespace {

using Cost = unsigned __int128;

// param_layout.py pad_to_divisor, pad_param_start (64-element starts).
uint64_t PadTo(uint64_t value, uint64_t divisor) {
  return (value + divisor - 1) / divisor * divisor;
}
uint64_t PadStart(uint64_t start) { return PadTo(start, 64); }

// LayerWiseDistributedOptimizer._shard_divisor: every shard start 64-
// aligned and DP shards a multiple of bucket_end_divisor (param_layout.py:
// lcm(DP, 128), with 2^16 for high NCCL bus bandwidth).
uint64_t ShardDivisor(const LayerWisePackingOptions& o) {
  uint64_t bucket_divisor = std::lcm(o.shards, uint64_t{128});
  if (o.pad_for_high_nccl_busbw) {
    bucket_divisor = std::lcm(bucket_divisor, uint64_t{1} << 16);
  }
  return std::lcm(uint64_t{64}, bucket_divisor / o.shards);
}

uint64_t Elements(const LayerWiseMatrix& w) { return w.rows * w.cols; }

// _ns_compute_cost: max(M, N) x min(M, N)^2.
Cost NewtonSchulzCost(const LayerWiseMatrix& w) {
  const Cost big = std::max(w.rows, w.cols);
  const Cost small = std::min(w.rows, w.cols);
  return big * small * small;
}

// Identical matrices in a row of the sorted order, as the packing sees
// them: each placement reads a matrix's elements and, by cost, its
// Newton-Schulz cost, nothing else.
struct Run {
  uint64_t numel = 0;
  Cost cost = 0;
  uint64_t count = 0;
};

// A run before the sort, with its sort key and its place in the
// listing (ties keep it: Python's stable sort).
struct Keyed {
  Cost key = 0;
  size_t order = 0;
  Run run;
};

Keyed KeyedOf(const LayerWiseMatrix& w, LayerWisePacking packing,
              size_t order) {
  const uint64_t numel = Elements(w);
  const Cost cost = NewtonSchulzCost(w);
  return {packing == LayerWisePacking::kByElements ? Cost{numel} : cost,
          order,
          {numel, cost, 1}};
}

bool SortsBefore(const Keyed& x, const Keyed& y) {
  return x.key != y.key ? x.key > y.key : x.order < y.order;
}

// Appends one block's matrices, in backprop order when `backwards`, to
// `out`: each matrix once if the block is not repeated; otherwise the
// block's matrices of each key (in order) as one run where they are of one
// size, else each repetition's: the same order after the sort by key as
// the block's every matrix. `once`: scratch.
void AppendBlock(const LayerWiseBlock& block, bool backwards,
                 LayerWisePacking packing, std::vector<Keyed>& out,
                 std::vector<Keyed>& once) {
  const size_t start = out.size();
  const size_t n = block.pattern.size();
  for (size_t i = 0; i < n; ++i) {
    out.push_back(KeyedOf(block.pattern[backwards ? n - 1 - i : i], packing,
                          out.size()));
  }
  if (block.repeat == 1) return;
  std::sort(out.begin() + start, out.end(), SortsBefore);
  once.assign(out.begin() + start, out.end());
  out.resize(start);
  for (size_t i = 0, j = 0; i < once.size(); i = j) {
    bool one_size = true;
    for (j = i; j < once.size() && once[j].key == once[i].key; ++j) {
      one_size &= once[j].run.numel == once[i].run.numel;
    }
    if (one_size) {
      out.push_back(once[i]);
      out.back().order = out.size() - 1;
      out.back().run.count = (j - i) * block.repeat;
      continue;
    }
    for (uint64_t r = 0; r < block.repeat; ++r) {
      for (size_t k = i; k < j; ++k) {
        out.push_back(once[k]);
        out.back().order = out.size() - 1;
      }
    }
  }
}

// sorted(chunk, key=...) in runs, of the blocks' matrices in backprop
// order (`blocks` in forward order when `backwards`, else already in
// backprop order): Python's sort is stable, so each key's matrices keep
// their order, keys from the largest; identical neighbours then merge
// (by elements the key is all a placement reads; by cost, matrices of one
// cost may differ in elements). Its work is the blocks' patterns, not
// their repetitions (but for blocks whose matrices of one key differ in
// size, at most their matrices).
// `runs` gets them; `keyed` and `once` are scratch (a caller's, kept
// across its buckets).
void SortedRuns(absl::Span<const LayerWiseBlock> blocks, bool backwards,
                LayerWisePacking packing, std::vector<Keyed>& keyed,
                std::vector<Keyed>& once, std::vector<Run>& runs) {
  keyed.clear();
  runs.clear();
  for (size_t b = 0; b < blocks.size(); ++b) {
    const LayerWiseBlock& block =
        blocks[backwards ? blocks.size() - 1 - b : b];
    if (block.repeat > 0) {
      AppendBlock(block, backwards, packing, keyed, once);
    }
  }
  std::sort(keyed.begin(), keyed.end(), SortsBefore);
  for (const Keyed& k : keyed) {
    if (!runs.empty() && runs.back().numel == k.run.numel &&
        runs.back().cost == k.run.cost) {
      runs.back().count += k.run.count;
    } else {
      runs.push_back(k.run);
    }
  }
}

// Bits of the largest value a bulk selection searches.
int BitWidth(Cost x) {
  const uint64_t high = static_cast<uint64_t>(x >> 64);
  const uint64_t low = static_cast<uint64_t>(x);
  if (high != 0) return 128 - __builtin_clzll(high);
  return low == 0 ? 0 : 64 - __builtin_clzll(low);
}

// The least value in [lo, hi] at or below which the shards hold at least
// k values, `at_most(s, v)` counting shard s's: below `lo` they sum to
// less than k, at `hi` to at least k. A bisection: at most BitWidth(hi -
// lo) + 1 passes over the shards.
template <typename Value, typename AtMost>
Value LeastReaching(size_t width, uint64_t k, Value lo, Value hi,
                    AtMost at_most) {
  auto reaches_k = [&](Value v) {
    Cost n = 0;
    for (size_t s = 0; s < width && n < k; ++s) n += at_most(s, v);
    return n >= k;
  };
  // The least value whose count reaches k is in [lo, hi].
  while (lo < hi) {
    const Value mid = lo + (hi - lo) / 2;
    if (reaches_k(mid)) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

// Where `k` placements go when each takes the first shard (lowest index
// among equals) whose next value is smallest, the shards' values strictly
// increasing with each placement: the k smallest (value, shard) pairs of
// the shards' sequences, as merging them would take them (LeastReaching's
// `at_most`, `lo` and `hi`).
template <typename Value, typename AtMost>
std::vector<uint64_t> TakeSmallest(size_t width, uint64_t k, Value lo,
                                   Value hi, AtMost at_most) {
  lo = LeastReaching(width, k, lo, hi, at_most);
  // Every value below lo, then those equal to it (one a shard at most) in
  // shard order until k.
  std::vector<uint64_t> taken(width, 0);
  uint64_t n = 0;
  for (size_t s = 0; s < width; ++s) {
    taken[s] = lo == 0 ? 0 : at_most(s, lo - 1);
    n += taken[s];
  }
  for (size_t s = 0; s < width && n < k; ++s) {
    if (at_most(s, lo) > taken[s]) {
      ++taken[s];
      ++n;
    }
  }
  return taken;
}

// TakeSmallest of the costs of the shards that still fit, shard s's
// rising by `cost` a matrix from loads[s] for fits[s] matrices, found by
// level: with loads[s] = q x cost + r (r < cost), a shard's j-th cost is
// (q + j) x cost + r, so the costs order by their level q + j, then by r,
// then by shard. One division a shard, then a bisection over the levels
// in 64 bits (against one a shard a step over the costs' 128); nullopt
// where a level would reach 2^62.
// `scratch`: the caller's, kept across calls.
struct CheapestScratch {
  std::vector<uint64_t> level;
  std::vector<Cost> rest;
  std::vector<size_t> at_lo;
};
std::optional<std::vector<uint64_t>> TakeCheapest(
    const std::vector<Cost>& loads, const std::vector<uint64_t>& fits,
    uint64_t k, Cost cost, CheapestScratch& scratch) {
  const size_t width = loads.size();
  constexpr uint64_t kLevels = uint64_t{1} << 62;
  std::vector<uint64_t>& level = scratch.level;
  std::vector<Cost>& rest = scratch.rest;
  level.assign(width, 0);
  rest.assign(width, 0);
  uint64_t lo = kLevels, hi = 0;
  for (size_t s = 0; s < width; ++s) {
    if (fits[s] == 0) continue;
    // In 64 bits where both are (a 128-bit division is several times
    // slower).
    const Cost q = (loads[s] >> 64) == 0 && (cost >> 64) == 0
                       ? Cost{static_cast<uint64_t>(loads[s]) /
                              static_cast<uint64_t>(cost)}
                       : loads[s] / cost;
    if (q >= kLevels || fits[s] >= kLevels) return std::nullopt;
    level[s] = static_cast<uint64_t>(q);
    rest[s] = loads[s] - q * cost;
    lo = std::min(lo, level[s]);
    hi = std::max(hi, level[s] + fits[s] - 1);
  }
  // A shard's costs at levels up to `at`.
  auto at_most = [&](size_t s, uint64_t at) -> uint64_t {
    if (fits[s] == 0 || at < level[s]) return 0;
    return std::min(at - level[s] + 1, fits[s]);
  };
  // The least level whose count reaches k is in [lo, hi] (k is at most
  // the shards' fits together).
  lo = LeastReaching(width, k, lo, hi, at_most);
  // Every cost below level lo, then those at it by r, then by shard.
  std::vector<uint64_t> taken(width, 0);
  uint64_t n = 0;
  std::vector<size_t>& at_lo = scratch.at_lo;
  at_lo.clear();
  for (size_t s = 0; s < width; ++s) {
    taken[s] = lo == 0 ? 0 : at_most(s, lo - 1);
    n += taken[s];
    if (at_most(s, lo) > taken[s]) at_lo.push_back(s);
  }
  std::sort(at_lo.begin(), at_lo.end(), [&](size_t x, size_t y) {
    return rest[x] != rest[y] ? rest[x] < rest[y] : x < y;
  });
  for (size_t i = 0; i < at_lo.size() && n < k; ++i) {
    ++taken[at_lo[i]];
    ++n;
  }
  return taken;
}

// Bulk placement searching [lo, hi] pays BitWidth(hi - lo) passes over
// the shards, and one to find the range; it is taken where placing one at
// a time would cost more, and where every value stays below 2^62 (one at a
// time is then exact in uint64 as Megatron's ints).
bool BulkPays(uint64_t count, double steps_each, size_t width, Cost lo,
              Cost hi) {
  return hi < (Cost{1} << 62) &&
         double(count) * steps_each >
             double(BitWidth(hi - lo) + 2) * double(width);
}

// A min-heap of (value, shard): its top is the first shard (the lowest
// index) among those of the smallest value, as Python's
// min(range(n), key=...) finds it.
template <typename Value>
using ShardHeap = std::vector<std::pair<Value, size_t>>;
using Emptiest = std::pair<uint64_t, size_t>;  // (cursor, shard)

// The heap's top grew: down to where it belongs (a pop and a push in one
// pass).
template <typename Value>
void SiftDownTop(ShardHeap<Value>& heap) {
  const size_t n = heap.size();
  size_t at = 0;
  const std::pair<Value, size_t> moved = heap[0];
  for (;;) {
    size_t child = 2 * at + 1;
    if (child >= n) break;
    if (child + 1 < n && heap[child + 1] < heap[child]) ++child;
    if (!(heap[child] < moved)) break;
    heap[at] = heap[child];
    at = child;
  }
  heap[at] = moved;
}

// Shards [0, width) are the ones used (layer_wise_layout.h): the others
// hold nothing and cost nothing, so each first-smallest choice over all of
// them is the same over these.
class Packer {
 public:
  Packer(const LayerWisePackingOptions& o, size_t width,
         std::vector<uint64_t>& owned)
      : o_(o),
        divisor_(ShardDivisor(o)),
        width_(width),
        log_width_(std::log2(double(width) + 1)),
        owned_(owned),
        cost_loads_(width, 0) {
    if (owned_.size() < width_) owned_.resize(width_, 0);
  }

  // _emit_bucket: the blocks' matrices (SortedRuns' order), placed a run
  // of identical matrices at a time (one by one, or in bulk where that is
  // cheaper: the same choices, LayerWiseLayoutTest.BlocksPackAsOneMatrix
  // AtATime).
  void Emit(absl::Span<const LayerWiseBlock> blocks, bool backwards) {
    SortedRuns(blocks, backwards, o_.packing, keyed_, once_, runs_);
    if (runs_.empty()) return;
    cursors_.assign(width_, 0);
    heap_valid_ = false;
    uint64_t total = 0;
    for (const Run& run : runs_) total += run.numel * run.count;
    // max_shard_numel: total_chunk_numel / dp_size * (1 + _NUMEL_EPSILON),
    // a float.
    cap_ = static_cast<double>(total) / static_cast<double>(o_.shards) *
           (1 + 0.3);
    for (const Run& run : runs_) {
      if (o_.packing == LayerWisePacking::kByElements) {
        // sorted(chunk, key=-numel), stable; to the emptiest shard.
        PlaceInEmptiest(run.numel, 0, run.count);
      } else {
        // sorted(chunk, key=-cost), stable; to the least-cost shard it
        // fits in below max_shard_numel, else to the emptiest.
        PlaceByCost(run);
      }
    }
    const uint64_t padded_shard =
        PadTo(*std::max_element(cursors_.begin(), cursors_.end()), divisor_);
    buffer_.padded_elements += o_.shards * padded_shard;
    ++buffer_.buckets;
  }

  uint64_t divisor() const { return divisor_; }
  const LayerWiseBuffer& buffer() const { return buffer_; }

 private:
  void Place(size_t shard, uint64_t numel) {
    cursors_[shard] = PadStart(cursors_[shard]) + numel;
    owned_[shard] += numel;
  }

  // `taken[s]` placements of `numel` on each shard s at once.
  void PlaceTaken(const std::vector<uint64_t>& taken, uint64_t numel) {
    const uint64_t step = PadStart(numel);  // a placement after the first
    for (size_t s = 0; s < width_; ++s) {
      if (taken[s] == 0) continue;
      cursors_[s] = PadStart(cursors_[s]) + numel + (taken[s] - 1) * step;
      owned_[s] += taken[s] * numel;
    }
    heap_valid_ = false;
  }

  // `count` matrices of `numel` (and Newton-Schulz `cost`), each to the
  // emptiest shard (the first among equals): one at a time through a heap
  // of (cursor, shard) (log(shards) a matrix; cursors only grow, so each
  // placement moves its shard down from the top), or in bulk.
  void PlaceInEmptiest(uint64_t numel, Cost cost, uint64_t count) {
    // A shard's cursors as it takes matrices: its own, then PadStart(it)
    // + numel, then PadStart(numel) further each time; its j-th:
    const uint64_t step = PadStart(numel);
    auto nth = [&](size_t s, uint64_t j) {
      return j == 0 ? Cost{cursors_[s]}
                    : Cost{PadStart(cursors_[s])} + numel + Cost{j - 1} * step;
    };
    // Below the least of each shard's (count / shards - 1)-th cursor every
    // shard has fewer than count / shards; at the largest of their
    // (ceil(count / shards) - 1)-th, each has ceil(count / shards).
    const uint64_t fewest = count / width_;
    const uint64_t most = (count + width_ - 1) / width_;
    Cost lo = nth(0, fewest > 0 ? fewest - 1 : 0), hi = nth(0, most - 1);
    // Bulk never pays below two passes (BulkPays): the range, a pass over
    // the shards, is found only where it might.
    const bool might = double(count) * 2 * log_width_ > 2.0 * double(width_);
    for (size_t s = 1; might && s < width_; ++s) {
      lo = std::min(lo, nth(s, fewest > 0 ? fewest - 1 : 0));
      hi = std::max(hi, nth(s, most - 1));
    }
    // The cursors searched below 2^62 (BulkPays) and a matrix below 2^61:
    // each shard's second cursor too, in 64 bits.
    if (might && numel < (uint64_t{1} << 61) &&
        BulkPays(count, 2 * log_width_, width_, lo, hi)) {
      const std::vector<uint64_t> taken = TakeSmallest(
          width_, count, static_cast<uint64_t>(lo),
          static_cast<uint64_t>(hi),
          [&](size_t s, uint64_t v) -> uint64_t {
            if (v < cursors_[s]) return 0;
            const uint64_t second = PadStart(cursors_[s]) + numel;
            if (v < second) return 1;
            return 2 + (v - second) / step;
          });
      PlaceTaken(taken, numel);
      AddCosts(taken, cost);
      return;
    }
    if (!heap_valid_) {
      heap_.resize(width_);
      for (size_t s = 0; s < width_; ++s) heap_[s] = {cursors_[s], s};
      std::make_heap(heap_.begin(), heap_.end(), std::greater<Emptiest>());
      heap_valid_ = true;
    }
    for (uint64_t i = 0; i < count; ++i) {
      const size_t shard = heap_[0].second;
      Place(shard, numel);
      cost_loads_[shard] += cost;
      heap_[0].first = cursors_[shard];
      SiftDownTop(heap_);
    }
  }

  // A run by Newton-Schulz cost: while a shard fits another below the cap,
  // to the least-cost one of those (the first among equals), then to the
  // emptiest. Once none fits, none will (cursors only grow), so the run's
  // first matrices are the k smallest of the fitting shards' costs (each
  // rising by the run's cost, for as many as the shard fits) and the rest
  // PlaceInEmptiest's.
  void PlaceByCost(const Run& run) {
    const uint64_t numel = run.numel;
    const uint64_t step = PadStart(numel);
    // Below 2^53 a whole number is below the cap as a double exactly when
    // it is at most floor(cap). Bulk never pays below three passes
    // (BulkPays: a bisection's and two over the shards), so a shorter run
    // goes one at a time at once.
    if (cap_ < 9007199254740992.0 &&
        double(run.count) * 2 * log_width_ > 3.0 * double(width_)) {
      const uint64_t most = static_cast<uint64_t>(std::floor(cap_));
      // How many more each shard fits: its j-th starts at PadStart(cursor)
      // + j x step.
      std::vector<uint64_t>& fits = fits_;
      fits.assign(width_, 0);
      Cost fitting = 0, hi = 0;
      for (size_t s = 0; s < width_; ++s) {
        const uint64_t start = PadStart(cursors_[s]);
        if (start > most || most - start < numel) continue;
        fits[s] = (most - start - numel) / step + 1;
        fitting += fits[s];
        hi = std::max(hi, cost_loads_[s] + Cost{fits[s] - 1} * run.cost);
      }
      const uint64_t first = static_cast<uint64_t>(
          std::min<Cost>(fitting, run.count));
      // The least cost among the shards that still fit: each shard's costs
      // rise by run.cost a matrix, for fits[s] matrices. Below BulkPays's
      // 2^62 every level is too, so TakeCheapest always answers there;
      // were it not to, one at a time (below) is as exact.
      std::optional<std::vector<uint64_t>> taken;
      if (first > 0 && BulkPays(first, 2 * log_width_, width_, 0, hi)) {
        taken = TakeCheapest(cost_loads_, fits, first, run.cost, cheapest_);
      }
      if (first == 0 || taken) {
        if (taken) {
          AddCosts(*taken, run.cost);
          PlaceTaken(*taken, numel);
        }
        // No shard fits another: the rest to the emptiest.
        if (run.count > first) {
          PlaceInEmptiest(numel, run.cost, run.count - first);
        }
        return;
      }
    }
    // One at a time: to the least-cost shard of those that fit, from a
    // heap of them (one that no longer fits never will again: cursors
    // only grow), then the rest to the emptiest.
    auto fits = [&](size_t s) {
      return static_cast<double>(PadStart(cursors_[s]) + numel) <= cap_;
    };
    fitting_.clear();
    for (size_t s = 0; s < width_; ++s) {
      if (fits(s)) fitting_.push_back({cost_loads_[s], s});
    }
    std::make_heap(fitting_.begin(), fitting_.end(), std::greater<>());
    heap_valid_ = false;
    uint64_t placed = 0;
    for (; placed < run.count; ++placed) {
      while (!fitting_.empty() && !fits(fitting_[0].second)) {
        std::pop_heap(fitting_.begin(), fitting_.end(), std::greater<>());
        fitting_.pop_back();
      }
      if (fitting_.empty()) break;
      const size_t shard = fitting_[0].second;
      Place(shard, numel);
      cost_loads_[shard] += run.cost;
      fitting_[0].first = cost_loads_[shard];
      SiftDownTop(fitting_);
    }
    if (run.count > placed) {
      PlaceInEmptiest(numel, run.cost, run.count - placed);
    }
  }

  void AddCosts(const std::vector<uint64_t>& taken, Cost cost) {
    for (size_t s = 0; s < width_; ++s) cost_loads_[s] += Cost{taken[s]} * cost;
  }

  const LayerWisePackingOptions& o_;
  const uint64_t divisor_;
  const size_t width_;
  const double log_width_;  // a heap placement's steps, halved
  std::vector<uint64_t>& owned_;
  std::vector<Cost> cost_loads_;  // shard_compute_loads, across buckets
  LayerWiseBuffer buffer_;
  std::vector<uint64_t> cursors_;  // this bucket's shards
  ShardHeap<uint64_t> heap_;       // cursors_ as a heap, when valid
  ShardHeap<Cost> fitting_;  // PlaceByCost's fitting shards, by cost
  std::vector<uint64_t> fits_;  // PlaceByCost's matrices each shard fits
  CheapestScratch cheapest_;    // TakeCheapest's
  bool heap_valid_ = false;
  double cap_ = 0;  // this bucket's max_shard_numel
  std::vector<Keyed> keyed_, once_;  // SortedRuns' scratch
  std::vector<Run> runs_;            // this bucket's, sorted
};

// DDP's buckets over the blocks, in backprop order (the main walk of
// _compute_per_buffer_param_layout): a bucket closes between any two
// matrices, so the walk reads each, but for repetitions of a block that no
// bucket can close within (by elements: the bucket stays below its
// threshold as it is, which a larger matrix only raises). A bucket's
// matrices go to the packer as blocks: a block's repetitions the bucket
// holds whole as one, the rest as they came.
class BucketWalk {
 public:
  BucketWalk(const LayerWisePackingOptions& o, size_t width, Packer& packer)
      : o_(o),
        width_(width),
        absorbing_(o.packing == LayerWisePacking::kByNewtonSchulzCost),
        packer_(packer) {
    ResetLoads();
  }

  LayerWiseBuffer Walk(absl::Span<const LayerWiseBlock> forward) {
    for (size_t b = forward.size(); b-- > 0;) {
      const LayerWiseBlock& block = forward[b];
      if (block.repeat == 0 || block.pattern.empty()) continue;
      backward_.assign(block.pattern.rbegin(), block.pattern.rend());
      Cost sum = 0;
      uint64_t largest = 0;
      for (const LayerWiseMatrix& w : backward_) {
        sum += Elements(w);
        largest = std::max(largest, Elements(w));
      }
      for (uint64_t r = 0; r < block.repeat;) {
        const uint64_t whole = WholeRepetitions(sum, block.repeat - r);
        if (whole > 0) {
          AppendLayerWiseBlock(chunk_, backward_, whole);
          chunk_numel_ += static_cast<uint64_t>(whole * sum);
          chunk_max_ = std::max(chunk_max_, largest);
          chunk_matrices_ += whole * backward_.size();
          r += whole;
          continue;
        }
        for (const LayerWiseMatrix& w : backward_) AddMatrix(w);
        FlushRepetition();
        ++r;
      }
    }
    Close();
    return packer_.buffer();
  }

 private:
  // int(dp_size * chunk_max_param * PADDING_FLOOR), a float truncated.
  uint64_t Threshold() const {
    const double floor = static_cast<double>(o_.shards * chunk_max_) * 0.9;
    return std::max(o_.bucket_size, static_cast<uint64_t>(floor));
  }

  // Repetitions of `sum` elements the bucket takes whole, up to `left`: by
  // elements, while it stays below its threshold (each check after a
  // matrix reads a threshold at least this one); by cost none (each matrix
  // moves the walk's estimate).
  uint64_t WholeRepetitions(Cost sum, uint64_t left) const {
    if (absorbing_) return 0;
    const uint64_t threshold = Threshold();
    if (chunk_numel_ >= threshold) return 0;
    return static_cast<uint64_t>(
        std::min<Cost>(left, (threshold - 1 - chunk_numel_) / sum));
  }

  void AddMatrix(const LayerWiseMatrix& w) {
    const uint64_t numel = Elements(w);
    if (absorbing_) {
      // _place, _absorbs: the walk's estimate of the bucket's shards.
      if (chunk_matrices_ > 0 && chunk_numel_ >= Threshold()) {
        const uint64_t target = PadTo(most_loaded_, packer_.divisor());
        // The shards past the used ones are empty.
        const uint64_t least = width_ < o_.shards ? 0 : loads_[0].first;
        if (PadStart(least) + numel > target) Close();
      }
      loads_[0].first = PadStart(loads_[0].first) + numel;
      most_loaded_ = std::max(most_loaded_, loads_[0].first);
      SiftDownTop(loads_);
    }
    repetition_.push_back(w);
    chunk_numel_ += numel;
    chunk_max_ = std::max(chunk_max_, numel);
    ++chunk_matrices_;
    if (!absorbing_ && chunk_numel_ >= Threshold()) Close();
  }

  // The matrices of a repetition since it began or a bucket closed in it.
  void FlushRepetition() {
    if (repetition_.empty()) return;
    AppendLayerWiseBlock(chunk_, repetition_, 1);
    repetition_.clear();
  }

  void Close() {
    FlushRepetition();
    packer_.Emit(chunk_, /*backwards=*/false);  // walked backwards
    chunk_.clear();
    chunk_numel_ = 0;
    chunk_max_ = 0;
    chunk_matrices_ = 0;
    if (absorbing_) ResetLoads();
  }

  // Every shard empty: in shard order, a heap.
  void ResetLoads() {
    if (!absorbing_) return;
    loads_.resize(width_);
    for (size_t s = 0; s < width_; ++s) loads_[s] = {0, s};
    most_loaded_ = 0;
  }

  const LayerWisePackingOptions& o_;
  const size_t width_;
  const bool absorbing_;  // by cost: a bucket closes on the walk's estimate
  Packer& packer_;
  std::vector<LayerWiseBlock> chunk_;  // the bucket's, in backprop order
  std::vector<LayerWiseMatrix> repetition_, backward_;
  uint64_t chunk_numel_ = 0, chunk_max_ = 0, chunk_matrices_ = 0;
  ShardHeap<uint64_t> loads_;  // the walk's estimate, by cost
  uint64_t most_loaded_ = 0;
};

}  // namespace

void AppendLayerWiseBlock(std::vector<LayerWiseBlock>& blocks,
                          const std::vector<LayerWiseMatrix>& pattern,
                          uint64_t repeat) {
  if (pattern.empty() || repeat == 0) return;
  if (!blocks.empty() && blocks.back().pattern.size() == pattern.size() &&
      std::equal(pattern.begin(), pattern.end(),
                 blocks.back().pattern.begin(),
                 [](const LayerWiseMatrix& a, const LayerWiseMatrix& b) {
                   return a.rows == b.rows && a.cols == b.cols;
                 })) {
    blocks.back().repeat += repeat;
  } else {
    blocks.push_back({pattern, repeat});
  }
}

absl::StatusOr<LayerWiseBuffer> PackLayerWiseBuffer(
    absl::Span<const LayerWiseMatrix> forward,
    const LayerWisePackingOptions& options, std::vector<uint64_t>& owned) {
  const LayerWiseBlock all = {{forward.begin(), forward.end()}, 1};
  return PackLayerWiseBlocks({&all, 1}, options, owned);
}

absl::StatusOr<LayerWiseBuffer> PackLayerWiseBlocks(
    absl::Span<const LayerWiseBlock> forward,
    const LayerWisePackingOptions& options, std::vector<uint64_t>& owned) {
  if (options.shards == 0) {
    return absl::InvalidArgumentError(
        "layer-wise layout: the shard count must be positive");
  }
  // At most a pass over the shards used a matrix (Megatron's own loops;
  // runs of identical matrices and heaps cost less), bounded before any
  // is made.
  double matrices = 0;
  for (const LayerWiseBlock& block : forward) {
    matrices += double(block.pattern.size()) * double(block.repeat);
  }
  if (LayerWisePackingSteps(matrices, double(options.shards)) >
      double(kMaxLayerWisePackingWork)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "layer-wise layout: ",
        matrices < 1e18 ? absl::StrCat(uint64_t(matrices))
                        : absl::StrCat(matrices),
        " matrices over ", options.shards,
        " data-parallel ranks is more packing than memgate bounds (",
        kMaxLayerWisePackingWork, " matrix-rank steps)"));
  }
  for (const LayerWiseBlock& block : forward) {
    for (const LayerWiseMatrix& w : block.pattern) {
      // Dimensions below 2^32 keep the Newton-Schulz costs in 128 bits.
      if (w.rows == 0 || w.cols == 0 || w.rows >> 32 || w.cols >> 32) {
        return absl::InvalidArgumentError(absl::StrCat(
            "layer-wise layout: a matrix of ", w.rows, " x ", w.cols,
            " elements (each dimension must be 1 to 2^32 - 1)"));
      }
    }
  }
  const uint64_t dp = options.shards;
  const size_t width = static_cast<size_t>(
      std::min<double>(matrices, static_cast<double>(dp)));
  Packer packer(options, width, owned);
  if (options.bucket_size == 0) {  // one bucket: every block at once
    packer.Emit(forward, /*backwards=*/true);
    return packer.buffer();
  }
  return BucketWalk(options, width, packer).Walk(forward);
}

}  // namespace memgate
