#include "estimator/megatron_release.h"

#include <tuple>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace memgate {
namespace {

absl::Status Malformed(absl::string_view text, absl::string_view rule) {
  return absl::InvalidArgumentError(absl::StrCat(
      "'", text, "' is not a Megatron-Core release: ", rule,
      " (forms: 0.13.0, v0.12.1, core_v0.14.0rc2, 0.13)"));
}

// One decimal component of at most 6 digits (no release comes near).
bool ParseComponent(absl::string_view digits, int64_t& out) {
  if (digits.empty() || digits.size() > 6) return false;
  for (char c : digits) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  return absl::SimpleAtoi(digits, &out);
}

}  // namespace

absl::StatusOr<MegatronCoreRelease> ParseMegatronCoreRelease(
    absl::string_view text) {
  if (text.size() > kMaxReleaseTextBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("must be at most ", kMaxReleaseTextBytes,
                     " characters (got ", text.size(), ")"));
  }
  absl::string_view rest = text;
  absl::ConsumePrefix(&rest, "core_");
  absl::ConsumePrefix(&rest, "v");
  MegatronCoreRelease release;
  const size_t rc_at = rest.find("rc");
  if (rc_at != absl::string_view::npos) {
    if (!ParseComponent(rest.substr(rc_at + 2), release.rc)) {
      return Malformed(text, "rc must be followed by a number");
    }
    rest = rest.substr(0, rc_at);
  }
  int64_t parts[3] = {-1, -1, -1};
  size_t n = 0;
  while (true) {
    const size_t dot = rest.find('.');
    if (n == 3 || !ParseComponent(rest.substr(0, dot), parts[n])) {
      return Malformed(text, "MAJOR.MINOR or MAJOR.MINOR.PATCH, in digits");
    }
    ++n;
    if (dot == absl::string_view::npos) break;
    rest = rest.substr(dot + 1);
  }
  if (n < 2) {
    return Malformed(text, "MAJOR.MINOR or MAJOR.MINOR.PATCH, in digits");
  }
  if (release.rc >= 0 && n < 3) {
    return Malformed(text, "a release candidate names its patch (0.13.0rc1)");
  }
  release.major = static_cast<uint32_t>(parts[0]);
  release.minor = static_cast<uint32_t>(parts[1]);
  release.patch = parts[2];
  return release;
}

absl::StatusOr<v1::MoeConfig::ProbsApplied> RoutingProbsAppliedBy(
    const MegatronCoreRelease& r) {
  const auto minor = std::make_tuple(r.major, r.minor);
  const auto core_0_12 = std::make_tuple(0u, 12u);
  if (minor < core_0_12) return v1::MoeConfig::PROBS_APPLIED_AT_UNPERMUTE;
  if (minor > core_0_12) return v1::MoeConfig::PROBS_APPLIED_IN_EXPERTS;
  if (r.patch < 0) {
    return absl::InvalidArgumentError(
        "0.12 names two behaviours: core 0.12.0 applies the routing "
        "probabilities at unpermute, 0.12.1 and later in the experts; give "
        "the patch (0.12.0 or 0.12.1)");
  }
  if (r.patch == 0) return v1::MoeConfig::PROBS_APPLIED_AT_UNPERMUTE;
  if (r.patch == 1 && r.rc >= 0) {
    return absl::InvalidArgumentError(
        "no core_v0.12.1 release candidate is tagged: whether it applies the "
        "routing probabilities at unpermute (0.12.0) or in the experts "
        "(0.12.1) is unknown; give 0.12.0 or 0.12.1");
  }
  return v1::MoeConfig::PROBS_APPLIED_IN_EXPERTS;
}

bool RecomputesMtpLayers(const MegatronCoreRelease& r) {
  const auto minor = std::make_tuple(r.major, r.minor);
  const auto core_0_14 = std::make_tuple(0u, 14u);
  if (minor != core_0_14) return minor > core_0_14;
  // 0.14.0's release candidates before rc6 predate the change.
  return !(r.patch == 0 && r.rc >= 0 && r.rc < 6);
}

absl::StatusOr<LionScalarOptimizer> LionScalarOptimizerOf(
    const MegatronCoreRelease& r) {
  const auto minor = std::make_tuple(r.major, r.minor);
  const auto core_0_17 = std::make_tuple(0u, 17u);
  const auto core_0_18 = std::make_tuple(0u, 18u);
  if (minor < core_0_17) {
    return absl::InvalidArgumentError(
        "Megatron core has no Lion before 0.17.0 (--optimizer lion came in "
        "with core_v0.17.0rc0)");
  }
  if (minor < core_0_18) return LionScalarOptimizer::kLion;
  if (minor == core_0_18 && r.patch <= 0 && r.rc >= 0) {
    return LionScalarOptimizer::kEither;
  }
  return LionScalarOptimizer::kAdam;
}

absl::StatusOr<MuonRelease> MuonReleaseOf(const MegatronCoreRelease& r) {
  const auto minor = std::make_tuple(r.major, r.minor);
  if (minor < std::make_tuple(0u, 16u)) {
    return absl::InvalidArgumentError(
        "Megatron core has no Muon before 0.16.0 (--optimizer muon came in "
        "with core_v0.16.0)");
  }
  MuonRelease muon;
  if (minor > std::make_tuple(0u, 19u)) {
    muon.default_tp_mode = v1::Muon::TP_MODE_DUPLICATED;
  }
  muon.scalar_lion =
      minor == std::make_tuple(0u, 17u) ||
      (minor == std::make_tuple(0u, 18u) && r.patch >= 2 && r.rc < 0) ||
      minor >= std::make_tuple(0u, 19u);
  return muon;
}

absl::StatusOr<EmergingDistributedRun> EmergingDistributedRunOf(
    v1::Optimizer optimizer, const MegatronCoreRelease& r) {
  const auto minor = std::make_tuple(r.major, r.minor);
  if (minor < std::make_tuple(0u, 18u)) {
    return absl::InvalidArgumentError(
        optimizer == v1::OPTIMIZER_MUON
            ? "Megatron core before 0.18.0 asserts against muon with "
              "--use-distributed-optimizer (its dist_muon, a ping-pong "
              "layer-wise optimizer, is not modelled)"
            : "Megatron core before 0.18.0 asserts against lion with "
              "--use-distributed-optimizer (its distributed optimizer takes "
              "Adam only)");
  }
  EmergingDistributedRun run;
  run.by_elements = minor <= std::make_tuple(0u, 19u);
  run.by_cost = !run.by_elements;
  return run;
}

}  // namespace memgate
