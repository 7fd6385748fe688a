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

}  // namespace memgate

#endif  // MEMGATE_ESTIMATOR_CATALOG_H_
