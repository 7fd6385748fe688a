#ifndef MEMGATE_PLANNER_GPU_DATASHEETS_H_
#define MEMGATE_PLANNER_GPU_DATASHEETS_H_

// The cost model's three datasheet ratios (cost_model.h (5) to (7)) for
// each GPU of memgate's catalog (estimator/catalog.cc), from the vendors'
// datasheets: peak dense bf16 compute over the network, the GPU-to-GPU
// link and HBM, in FLOPs per byte. They are not fitted: no table of the
// paper interleaves or routes experts, where they apply.

#include <string_view>

#include "planner/cost_model.h"

namespace memgate {

// `base` with the ratios of the catalog GPU `accelerator_name` (the
// resolved name, e.g. "a100-80gb"); `base` unchanged for a GPU the catalog
// does not name (a capacity given in GiB): the H100's, its defaults.
CostModel WithDatasheetRatios(CostModel base,
                              std::string_view accelerator_name);

}  // namespace memgate

#endif  // MEMGATE_PLANNER_GPU_DATASHEETS_H_
