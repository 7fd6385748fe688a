#include "planner/stage_split.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

#include "estimator/moe_terms.h"
#include "planner/planner.h"

namespace memgate {
namespace {

// A model with MTP layers whose layers, the embedding, the loss and the
// MTP layers, counted as one unit each, split evenly over p stages: the
// first stage one layer short (the embedding), the last 1 + mtp short
// (the loss and the MTP layers it holds). NVIDIA's DeepSeek-V3 layout
// "Et|(tt|)*30mL" is this split over 8 x 4 chunks. Invalid otherwise.
StageSplit SplitCountingMtp(uint32_t layers, uint32_t p, uint32_t mtp) {
  StageSplit split;
  const uint64_t units = uint64_t{layers} + 2 + mtp;
  if (mtp == 0 || p < 3 || units % p != 0) return split;
  split.middle = static_cast<uint32_t>(units / p);
  if (split.middle < 2 + mtp) return split;
  split.first = split.middle - 1;
  split.last = split.middle - 1 - mtp;
  split.mtp = mtp;
  split.ok = true;
  return split;
}

// Layers of chunk j of rank i: an even split's L / (p v), an uneven one's
// ChunkLayers. Middle ranks' chunks are alike.
double ChunkSize(const StageSplit& split, ChunkForm form, uint32_t p,
                 uint32_t v, uint32_t i, uint32_t j) {
  if (split.first == 0) return static_cast<double>(split.middle) / v;
  return static_cast<double>(ChunkLayers(form, split, p, v, i, j));
}

// Layers of round j (chunk j of every rank): rank 0's, the p - 2 middle
// ranks' (alike) and the last rank's, in O(1) whatever p.
double RoundLayers(const StageSplit& split, ChunkForm form, uint32_t p,
                   uint32_t v, uint32_t j) {
  auto chunk = [&](uint32_t i) { return ChunkSize(split, form, p, v, i, j); };
  return chunk(0) + (p > 2 ? (p - 2.0) * chunk(1) : 0) +
         (p > 1 ? chunk(p - 1) : 0);
}

// Rank `stage`'s chunks at their places in the model: O(v), whatever p.
RankChunks RankChunksAt(const StageSplit& split, ChunkForm form, uint32_t p,
                        uint32_t v, uint32_t stage) {
  auto chunk = [&](uint32_t i, uint32_t j) {
    return ChunkSize(split, form, p, v, i, j);
  };
  RankChunks rank{stage, {}, {}, {}};
  rank.layers.reserve(v);
  rank.first.reserve(v);
  double before = 0;  // layers of the rounds before round j
  for (uint32_t j = 0; j < v; ++j) {
    const double round = RoundLayers(split, form, p, v, j);
    // Ranks ahead of this one in round j: rank 0 and the middle ones.
    const double ahead =
        stage == 0 ? 0 : chunk(0, j) + (stage - 1.0) * chunk(1, j);
    rank.layers.push_back(chunk(stage, j));
    rank.first.push_back(before + ahead);
    before += round;
  }
  return rank;
}

// [F8L] The ranks other than the first and last whose chunks hold fp8's
// bf16 layers: the first `bf16.first` layers fill virtual stages 0, 1, ...
// and the last `bf16.last` ones p v - 1, p v - 2, ... (virtual stage k is
// chunk k / p of rank k % p), up to v ranks at either end. Walked from
// either end: O(bf16 layers + a few empty chunks), whatever p and v.
std::set<uint32_t> MiddleRanksHoldingBf16(const StageSplit& split,
                                          ChunkForm form, uint32_t p,
                                          uint32_t v, Bf16Ends bf16) {
  std::set<uint32_t> ranks;
  const uint64_t chunks = uint64_t{p} * v;
  auto walk = [&](uint32_t layers, bool from_front) {
    double covered = 0;
    for (uint64_t n = 0; n < chunks && covered < layers; ++n) {
      const uint64_t k = from_front ? n : chunks - 1 - n;
      const uint32_t rank = static_cast<uint32_t>(k % p);
      const double size = ChunkSize(split, form, p, v, rank,
                                    static_cast<uint32_t>(k / p));
      if (size > 0 && rank > 0 && rank + 1 < p) ranks.insert(rank);
      covered += size;
    }
  };
  walk(bf16.first, true);
  walk(bf16.last, false);
  return ranks;
}

// [XR] Models whose MoE layers are not all those after a dense prefix
// (ModelShape.moe_irregular), and even interleaved splits of ones with a
// dense prefix: which rank peaks depends on which layers its chunks hold.
// The ranks evaluated are 0 and p - 1 (the embedding, the loss), those
// that hold fp8's bf16 layers (MiddleRanksHoldingBf16), and, of the other
// ranks, the first with each distinct
// sequence of MoE layers a chunk: a later rank with the same layers holds
// no more micro-batches in flight, chunk by chunk (memory_model.cc
// MicrobatchesInFlight and ChunkMicrobatchesInFlight, both non-increasing
// in the rank), and every other term of a rank that is neither first nor
// last depends on its layers alone, so it never peaks above it. (Every
// such rank has the split's middle chunk sizes, in each chunk form: its
// MoE layers a chunk say its dense ones.) The work is O(p v)
// (PlacementWork bounds it).
std::vector<RankChunks> DistinctRanksOf(const StageSplit& split, uint32_t p,
                                        uint32_t v, const ModelShape& m,
                                        Bf16Ends bf16) {
  const ChunkForm form = ChunkFormOf(split, p, v);
  const std::set<uint32_t> bf16_ranks =
      MiddleRanksHoldingBf16(split, form, p, v, bf16);
  std::vector<RankChunks> ranks;
  std::set<std::vector<double>> seen;  // middle ranks' MoE layers a chunk
  for (uint32_t stage = 0; stage < p; ++stage) {
    RankChunks rank = RankChunksAt(split, form, p, v, stage);
    const bool edge =
        stage == 0 || stage + 1 >= p || bf16_ranks.count(stage) > 0;
    if (!edge) {
      std::vector<double> moe(rank.layers.size());
      for (size_t j = 0; j < moe.size(); ++j) {
        moe[j] = MoeLayersIn(m, rank.first[j], rank.layers[j]);
      }
      if (!seen.insert(std::move(moe)).second) continue;
    }
    ranks.push_back(std::move(rank));
  }
  return ranks;
}

// Whether a model's dense and MoE layers sit unevenly: a dense prefix, or
// dense layers among MoE ones.
bool PlacementMatters(const ModelShape& m) {
  return m.experts > 0 && (m.leading_dense > 0 || m.moe_irregular);
}

// Whether the ranks a schedule evaluates are DistinctRanksOf's (a dense
// prefix alone decides only even interleaved splits: the others have exact
// paths of their own).
bool PlacementDecidesPeakRanks(const ModelShape& m, const StageSplit& split,
                               uint32_t v) {
  return PlacementMatters(m) &&
         (m.moe_irregular || (split.first == 0 && v > 1));
}

}  // namespace

ChunkForm ChunkFormOf(const StageSplit& split, uint32_t p, uint32_t v) {
  if (!split.ok) return ChunkForm::kNone;
  if (split.first == 0) {
    return v == 1 || (p >= 2 && split.middle % v == 0) ? ChunkForm::kEven
                                                       : ChunkForm::kNone;
  }
  if (v == 1) return ChunkForm::kFirstLast;
  if (split.mtp > 0) {
    // Every chunk middle / v layers, the first one fewer, the last
    // 1 + mtp fewer (none left is allowed: "mL").
    return split.middle % v == 0 && split.middle / v >= 2 &&
                   split.middle / v >= 1 + split.mtp
               ? ChunkForm::kMtpLayout
               : ChunkForm::kNone;
  }
  const bool first_short = split.first + 1 == split.middle;
  const bool last_short = split.last + 1 == split.middle;
  if ((first_short || split.first == split.middle) &&
      (last_short || split.last == split.middle) && split.middle % v == 0) {
    return ChunkForm::kAccounted;
  }
  if (split.first % v == 0 && split.middle % v == 0 && split.last % v == 0) {
    return ChunkForm::kFirstLast;
  }
  return ChunkForm::kNone;
}

StageSplit SplitLayers(uint32_t layers, uint32_t p, uint32_t mtp) {
  StageSplit split;
  if (p == 0 || p > layers) return split;
  if (layers % p != 0) {
    const StageSplit counting_mtp = SplitCountingMtp(layers, p, mtp);
    if (counting_mtp.ok) return counting_mtp;
  }
  if (layers % p == 0) {
    split.ok = true;
    split.middle = layers / p;
    return split;
  }
  if (p < 3) {
    // Two stages (odd L, no MTP): the first, which holds the embedding,
    // one layer short of the second, which stands for the middle stage
    // two stages lack (ChunkFormOf, ChunkLayers).
    if (p != 2 || mtp > 0) return split;
    split.first = layers / 2;
    split.last = layers - split.first;
    split.middle = split.last;
    split.ok = split.first >= 1;
    return split;
  }
  split.middle = (layers + p - 1) / p;
  const uint64_t middle_total = uint64_t{split.middle} * (p - 2);
  if (middle_total >= layers) return split;
  const uint32_t rest = static_cast<uint32_t>(layers - middle_total);
  split.first = rest / 2;
  split.last = rest - split.first;
  split.ok = split.first >= 1 && split.last <= split.middle;
  return split;
}

namespace {

// Layers the last stage gives up for each one a stage that takes them
// gains: the p - 2 middle stages' each, or the first of two stages' one.
uint32_t GivenUpPerStep(uint32_t p) { return p == 2 ? 1 : p - 2; }

// The head-balanced split of `layers` over p stages that moves j steps:
// the stages that take layers (the middle ones; the first of two, which
// stands for the middle as in SplitLayers' two stages) L/p + j, the last
// L/p - j GivenUpPerStep(p).
StageSplit MovedSplit(uint32_t layers, uint32_t p, uint32_t j) {
  StageSplit split;
  split.ok = true;
  split.middle = layers / p + j;
  split.first = p == 2 ? split.middle : layers / p;
  split.last = layers / p - j * GivenUpPerStep(p);
  return split;
}

}  // namespace

StageSplit HeadBalancedSplit(uint32_t layers, uint32_t p, double head) {
  if (p < 2 || layers % p != 0 || !(head > 0)) return StageSplit{};
  const double share = layers / p;
  const uint32_t step = GivenUpPerStep(p);
  // Steps the last stage can give, keeping one layer.
  const uint32_t most = (layers / p - 1) / step;
  auto slowest = [&](uint32_t j) {
    return std::max(share + j, share - double(j) * step + head);
  };
  uint32_t best = 0;
  // The two paces cross at j = head / (1 + step): the best whole j is on
  // either side of it.
  const double crossing = std::min(head / (1 + step), double(most));
  for (const double j : {std::floor(crossing), std::ceil(crossing)}) {
    const uint32_t whole = static_cast<uint32_t>(j);
    if (whole < 1 || whole > most) continue;
    if (slowest(whole) < (best == 0 ? share + head : slowest(best))) {
      best = whole;
    }
  }
  return best == 0 ? StageSplit{} : MovedSplit(layers, p, best);
}

StageSplit TowardEven(const StageSplit& split, uint32_t layers, uint32_t p) {
  if (!split.ok || p < 2 || layers % p != 0) return StageSplit{};
  // The steps moved: what a stage that took layers gained.
  const uint32_t moved =
      split.middle > layers / p ? split.middle - layers / p : 0;
  if (moved <= 1) return StageSplit{};
  return MovedSplit(layers, p, moved - 1);
}

uint32_t ChunkLayers(ChunkForm form, const StageSplit& split, uint32_t p,
                     uint32_t v, uint32_t i, uint32_t j) {
  if (form == ChunkForm::kAccounted || form == ChunkForm::kMtpLayout) {
    uint32_t n = split.middle / v;
    if (i == 0 && j == 0 && split.first < split.middle) --n;
    if (i + 1 == p && j + 1 == v && split.last < split.middle) {
      n -= 1 + split.mtp;
    }
    return n;
  }
  const uint32_t rank = i == 0       ? split.first
                        : i + 1 == p ? split.last
                                     : split.middle;
  return rank / v;
}

std::string MtpLayoutText(const StageSplit& split, uint32_t p, uint32_t v) {
  const uint32_t k = split.middle / v;
  auto run = [](char c, uint32_t n) {  // n layers of kind c
    const std::string one(1, c);
    return n == 0 ? std::string() : n == 1 ? one : absl::StrCat(one, "*", n);
  };
  return absl::StrCat("E", run('t', k - 1), "|(", run('t', k), "|)*", p * v - 2,
                      run('t', k - 1 - split.mtp), run('m', split.mtp), "L");
}

uint64_t PlacementWork(const ModelShape& m, uint32_t layers,
                       const std::vector<uint32_t>& gpu_divisors) {
  if (!PlacementMatters(m)) return 0;
  uint64_t work = 0;
  for (uint32_t p : gpu_divisors) {
    if (p > kMaxPipelineStages || p > layers) break;
    const uint64_t splits = p >= 2 && layers % p == 0 ? kSplitsPerDepth : 1;
    work += splits * uint64_t{p} * kMaxPlanVirtualStages *
            (kMaxPlanVirtualStages + 1) / 2;
  }
  return work;
}

namespace {

// PeakRankChunksOf's ranks, their chunks' layers alone.
std::vector<RankChunks> RanksToEstimate(const StageSplit& split, uint32_t p,
                                        uint32_t v, const ModelShape& m,
                                        Bf16Ends bf16) {
  if (PlacementDecidesPeakRanks(m, split, v)) {
    return DistinctRanksOf(split, p, v, m, bf16);
  }
  const double leading_dense = m.leading_dense;
  std::vector<RankChunks> ranks;
  // An even split's ranks are PeakOfEvenStages's (memory_model.cc).
  if (split.first == 0) return ranks;
  const ChunkForm form = ChunkFormOf(split, p, v);
  const std::set<uint32_t> bf16_ranks =
      MiddleRanksHoldingBf16(split, form, p, v, bf16);
  // One chunk a rank: the planner's PeakOf takes the first, middle and
  // last ranks itself, unless bf16 layers spill past the first and last.
  if (v <= 1 && bf16_ranks.empty()) return ranks;
  // O(v) whatever p (the middle ranks alike; two stages have none).
  auto chunk = [&](uint32_t i, uint32_t j) {
    return ChunkSize(split, form, p, v, i, j);
  };
  // The rank holding the first MoE layer: in the round (chunk j of every
  // rank) that reaches it.
  uint32_t boundary = p - 1;
  double passed = 0;  // layers of the rounds before round j
  for (uint32_t j = 0; j < v; ++j) {
    const double round = RoundLayers(split, form, p, v, j);
    if (leading_dense < passed + round) {
      boundary = RankHoldingLayer(leading_dense - passed, chunk(0, j),
                                  chunk(1, j), 0, p);
      break;
    }
    passed += round;
  }
  std::set<uint32_t> stages = bf16_ranks;
  stages.insert(0);
  const PeakRanks middle = MiddlePeakRanks(p, boundary);
  for (uint32_t k = 0; k < middle.count; ++k) {
    stages.insert(middle.rank[k]);
  }
  stages.insert(p - 1);
  for (uint32_t stage : stages) {
    ranks.push_back(RankChunksAt(split, form, p, v, stage));
  }
  return ranks;
}

}  // namespace

std::vector<RankChunks> PeakRankChunksOf(const StageSplit& split, uint32_t p,
                                         uint32_t v, const ModelShape& m,
                                         Bf16Ends bf16) {
  std::vector<RankChunks> ranks = RanksToEstimate(split, p, v, m, bf16);
  for (RankChunks& rank : ranks) {
    rank.mix = ChunkMixOf(m, rank.layers, rank.first);
  }
  return ranks;
}

}  // namespace memgate
