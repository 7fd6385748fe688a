// [LW] LayerWiseDistributedOptimizer._compute_per_buffer_param_layout
// (Megatron-LM core/optimizer/layer_wise_optimizer.py: core_v0.19.0 for
// kByElements, which core_v0.18.0 shares; d98e8a6 for
// kByNewtonSchulzCost), step for step, in integers where Megatron's are
// Python ints (exact), in doubles where it divides or scales by a float.

#include "estimator/layer_wise_layout.h"

#include <algorithm>
#include <functional>
#include <numeric>
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

// The first index of the smallest value (Python's min(range(n), key=...)).
template <typename T>
size_t FirstSmallest(const std::vector<T>& values) {
  return static_cast<size_t>(
      std::min_element(values.begin(), values.end()) - values.begin());
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
        owned_(owned),
        cost_loads_(width, 0) {
    if (owned_.size() < width_) owned_.resize(width_, 0);
  }

  // _emit_bucket: `chunk` in backprop order.
  void Emit(const std::vector<LayerWiseMatrix>& chunk) {
    if (chunk.empty()) return;
    std::vector<uint64_t> cursors(width_, 0);
    std::vector<size_t> order(chunk.size());
    std::iota(order.begin(), order.end(), 0);
    if (o_.packing == LayerWisePacking::kByElements) {
      // sorted(chunk, key=-numel), stable; to the emptiest shard.
      std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
        return Elements(chunk[x]) > Elements(chunk[y]);
      });
      // The emptiest shard is FirstSmallest's (the lowest index among
      // equals) kept in a heap of (cursor, shard): log(shards) a matrix
      // where a scan took shards (cursors only grow, so each placement
      // pops its shard and pushes it back further on).
      using Emptiest = std::pair<uint64_t, size_t>;
      std::vector<Emptiest> heap(width_);
      for (size_t s = 0; s < width_; ++s) heap[s] = {0, s};
      const std::greater<Emptiest> later;
      std::make_heap(heap.begin(), heap.end(), later);
      for (size_t i : order) {
        std::pop_heap(heap.begin(), heap.end(), later);
        const size_t shard = heap.back().second;
        Place(cursors, shard, Elements(chunk[i]));
        heap.back().first = cursors[shard];
        std::push_heap(heap.begin(), heap.end(), later);
      }
    } else {
      // sorted(chunk, key=-cost), stable; to the least-cost shard it fits
      // in below max_shard_numel, else to the emptiest.
      std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
        return NewtonSchulzCost(chunk[x]) > NewtonSchulzCost(chunk[y]);
      });
      uint64_t total = 0;
      for (const LayerWiseMatrix& w : chunk) total += Elements(w);
      // total_chunk_numel / dp_size * (1 + _NUMEL_EPSILON), a float.
      const double cap = static_cast<double>(total) /
                         static_cast<double>(o_.shards) * (1 + 0.3);
      for (size_t i : order) {
        const uint64_t numel = Elements(chunk[i]);
        size_t shard = width_;  // none yet
        for (size_t s = 0; s < width_; ++s) {
          if (static_cast<double>(PadStart(cursors[s]) + numel) <= cap &&
              (shard == width_ || cost_loads_[s] < cost_loads_[shard])) {
            shard = s;
          }
        }
        if (shard == width_) shard = FirstSmallest(cursors);
        Place(cursors, shard, numel);
        cost_loads_[shard] += NewtonSchulzCost(chunk[i]);
      }
    }
    const uint64_t padded_shard =
        PadTo(*std::max_element(cursors.begin(), cursors.end()), divisor_);
    buffer_.padded_elements += o_.shards * padded_shard;
    ++buffer_.buckets;
  }

  uint64_t divisor() const { return divisor_; }
  const LayerWiseBuffer& buffer() const { return buffer_; }

 private:
  void Place(std::vector<uint64_t>& cursors, size_t shard, uint64_t numel) {
    cursors[shard] = PadStart(cursors[shard]) + numel;
    owned_[shard] += numel;
  }

  const LayerWisePackingOptions& o_;
  const uint64_t divisor_;
  const size_t width_;
  std::vector<uint64_t>& owned_;
  std::vector<Cost> cost_loads_;  // shard_compute_loads, across buckets
  LayerWiseBuffer buffer_;
};

}  // namespace

absl::StatusOr<LayerWiseBuffer> PackLayerWiseBuffer(
    absl::Span<const LayerWiseMatrix> forward,
    const LayerWisePackingOptions& options, std::vector<uint64_t>& owned) {
  if (options.shards == 0) {
    return absl::InvalidArgumentError(
        "layer-wise layout: the shard count must be positive");
  }
  // A few passes over the shards used a matrix (placing it; the main
  // walk's estimate of the bucket), bounded before any is made.
  if (LayerWisePackingSteps(double(forward.size()), double(options.shards)) >
      double(kMaxLayerWisePackingWork)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "layer-wise layout: ", forward.size(), " matrices over ",
        options.shards, " data-parallel ranks is more packing than memgate "
        "bounds (", kMaxLayerWisePackingWork, " matrix-rank steps)"));
  }
  for (const LayerWiseMatrix& w : forward) {
    // Dimensions below 2^32 keep the Newton-Schulz costs in 128 bits.
    if (w.rows == 0 || w.cols == 0 || w.rows >> 32 || w.cols >> 32) {
      return absl::InvalidArgumentError(absl::StrCat(
          "layer-wise layout: a matrix of ", w.rows, " x ", w.cols,
          " elements (each dimension must be 1 to 2^32 - 1)"));
    }
  }
  const uint64_t dp = options.shards;
  const size_t width =
      static_cast<size_t>(std::min<uint64_t>(forward.size(), dp));
  Packer packer(options, width, owned);
  std::vector<LayerWiseMatrix> chunk;
  uint64_t chunk_numel = 0;
  uint64_t chunk_max = 0;
  // int(dp_size * chunk_max_param * PADDING_FLOOR), a float truncated.
  auto threshold = [&] {
    const double floor =
        static_cast<double>(dp * chunk_max) * 0.9;
    return std::max(options.bucket_size, static_cast<uint64_t>(floor));
  };
  auto close = [&] {
    packer.Emit(chunk);
    chunk.clear();
    chunk_numel = 0;
    chunk_max = 0;
  };
  // The main walk's estimate of the bucket's shards (_place, _absorbs),
  // numel only and in backprop order.
  std::vector<uint64_t> loads(width, 0);
  const bool absorbing =
      options.packing == LayerWisePacking::kByNewtonSchulzCost;
  for (size_t i = forward.size(); i-- > 0;) {
    const uint64_t numel = Elements(forward[i]);
    if (absorbing) {
      if (options.bucket_size > 0 && !chunk.empty() &&
          chunk_numel >= threshold()) {
        const uint64_t target = PadTo(
            *std::max_element(loads.begin(), loads.end()), packer.divisor());
        // The shards past the used ones are empty.
        const uint64_t least =
            width < dp ? 0 : *std::min_element(loads.begin(), loads.end());
        const bool absorbs = PadStart(least) + numel <= target;
        if (!absorbs) {
          close();
          std::fill(loads.begin(), loads.end(), 0);
        }
      }
      const size_t shard = FirstSmallest(loads);
      loads[shard] = PadStart(loads[shard]) + numel;
    }
    chunk.push_back(forward[i]);
    chunk_numel += numel;
    chunk_max = std::max(chunk_max, numel);
    if (!absorbing && options.bucket_size > 0 && chunk_numel >= threshold()) {
      close();
    }
  }
  close();
  return packer.buffer();
}

}  // namespace memgate
