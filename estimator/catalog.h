#ifndef MEMGATE_ESTIMATOR_CATALOG_H_
#define MEMGATE_ESTIMATOR_CATALOG_H_

// Named models (from their published configs) and GPUs (nominal memory, as
// the paper counts it: an "A100 40 GB" holds 40 GiB).

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/memgate.pb.h"

namespace memgate {

// Case-insensitive; NOT_FOUND names the known models.
absl::StatusOr<v1::ModelConfig> FindModel(absl::string_view name);

// Case-insensitive, aliases such as "h200" included; NOT_FOUND names the
// known GPUs.
absl::StatusOr<v1::Accelerator> FindAccelerator(absl::string_view name);

// The catalog entries themselves (no copy, no allocation: the Admit path
// resolves names this way); nullptr when unknown.
const v1::ModelConfig* LookupModel(absl::string_view name);
const v1::Accelerator* LookupAccelerator(absl::string_view name);

std::vector<std::string> ModelNames();
std::vector<std::string> AcceleratorNames();

// The generation of a catalog GPU, as far as what memgate counts depends on
// it: which attention kernels train a head dimension there (attention_
// backend.cc: cuDNN's and FlashAttention's limits differ by compute
// capability, and AMD's GPUs run neither).
enum class GpuFamily {
  kUnknown,    // not in the catalog (a capacity given in bytes)
  kAmpere,     // sm80: A100, A800
  kAda,        // sm89: L40S
  kHopper,     // sm90: H100, H800, H20, H200
  kBlackwell,  // sm100: B200, GB200
  kBlackwellUltra,  // sm103: B300, GB300
  kCdna3,      // AMD Instinct MI300X, MI325X
};

// Case-insensitive, aliases included; kUnknown for a name not in the
// catalog.
GpuFamily FamilyOfAccelerator(absl::string_view name);

// Blackwell, sm100 or sm103: cuDNN's rules for the two are one
// (TransformerEngine's fused_attn.cpp "sm_arch_ >= 100").
inline bool IsBlackwell(GpuFamily family) {
  return family == GpuFamily::kBlackwell ||
         family == GpuFamily::kBlackwellUltra;
}

}  // namespace memgate

#endif  // MEMGATE_ESTIMATOR_CATALOG_H_
