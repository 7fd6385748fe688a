#include "planner/gpu_datasheets.h"

namespace memgate {
namespace {

// Per GPU: peak dense bf16 TFLOP/s; the network a GPU sends over (one NIC
// a GPU in the vendors' reference nodes), GB/s; the GPU-to-GPU links, GB/s
// a direction, to all peers at once and to one peer (equal through an
// NVSwitch); HBM, TB/s.
struct Datasheet {
  std::string_view name;
  double tflops, network_gbs, link_gbs, peer_gbs, hbm_tbs;
};

constexpr Datasheet kDatasheets[] = {
    // A100 SXM: 312 TFLOP/s, HDR 200 Gb/s, NVLink 3 (600 GB/s, 300 a
    // direction), HBM2e 1.555 TB/s (40 GB) / 2.039 TB/s (80 GB).
    {"a100-40gb", 312, 25, 300, 300, 1.555},
    {"a100-80gb", 312, 25, 300, 300, 2.039},
    // A800 SXM: the A100 80 GB with NVLink at 400 GB/s (200 a direction).
    {"a800-80gb", 312, 25, 200, 200, 2.039},
    // H100 SXM: 989 TFLOP/s, NDR 400 Gb/s, NVLink 4 (900 GB/s, 450 a
    // direction), HBM3 3.35 TB/s: CostModel's defaults.
    {"h100-80gb", 989, 50, 450, 450, 3.35},
    // H100 NVL (94 GB, the paper's GPU, 4 a node): 835 TFLOP/s (1,671
    // with sparsity), NVLink bridge 600 GB/s (300 a direction; between
    // bridged pairs, an upper bound for the others' PCIe), HBM3 3.9 TB/s;
    // NDR 400 Gb/s.
    {"h100-94gb", 835, 50, 300, 300, 3.9},
    // H800 SXM: the H100 SXM with NVLink at 400 GB/s (200 a direction);
    // DeepSeek-V3's nodes (its report, section 3.1) add a 400 Gb/s
    // InfiniBand NIC a GPU.
    {"h800-80gb", 989, 50, 200, 200, 3.35},
    // H20: 148 TFLOP/s, NVLink 4 (900 GB/s), HBM3 4.0 TB/s, 400 Gb/s.
    {"h20-96gb", 148, 50, 450, 450, 4.0},
    // H200 SXM: the H100's compute and links, HBM3e 4.8 TB/s.
    {"h200-141gb", 989, 50, 450, 450, 4.8},
    // B200 (DGX B200): 2,250 TFLOP/s, ConnectX-7 400 Gb/s, NVLink 5
    // (1.8 TB/s, 900 GB/s a direction), HBM3e 8 TB/s.
    {"b200-180gb", 2250, 50, 900, 900, 8.0},
    // GB200 (NVL72): 2,500 TFLOP/s a GPU (360 PFLOP/s of bf16 with
    // sparsity over 72 GPUs, halved), NVLink 5 across the rack (1.8 TB/s,
    // 900 GB/s a direction, through NVLink switches: all of it to one
    // peer), one ConnectX-7 400 Gb/s a GPU, HBM3e 8 TB/s (576 TB/s over 72).
    {"gb200-186gb", 2500, 50, 900, 900, 8.0},
    // B300 (HGX B300): 2,250 TFLOP/s (36 PFLOP/s of bf16 with sparsity
    // over 8, halved), NVLink 5, one ConnectX-8 800 Gb/s a GPU, HBM3e
    // 8 TB/s. GB300 (NVL72): the GB200's 2,500 TFLOP/s (360 PFLOP/s with
    // sparsity over 72) and rack-wide NVLink 5, with ConnectX-8.
    {"b300-288gb", 2250, 100, 900, 900, 8.0},
    {"gb300-288gb", 2500, 100, 900, 900, 8.0},
    // MI300X: 1,307 TFLOP/s, 400 Gb/s, Infinity Fabric: a link of 64 GB/s
    // a direction to each of its 7 peers (448 in all), HBM3 5.3 TB/s.
    {"mi300x-192gb", 1307, 50, 448, 64, 5.3},
    // MI325X: the MI300X's compute and Infinity Fabric, HBM3E 6 TB/s.
    {"mi325x-256gb", 1307, 50, 448, 64, 6.0},
    // L40S: 362 TFLOP/s, no NVLink (PCIe 4.0 x16, 32 GB/s a direction),
    // 200 Gb/s, GDDR6 0.864 TB/s.
    {"l40s-48gb", 362, 25, 32, 32, 0.864},
};

}  // namespace

CostModel WithDatasheetRatios(CostModel base,
                              std::string_view accelerator_name) {
  for (const Datasheet& d : kDatasheets) {
    if (d.name != accelerator_name) continue;
    const double flops = d.tflops * 1e12;
    base.peak_flops_per_network_byte = flops / (d.network_gbs * 1e9);
    base.peak_flops_per_nvlink_byte = flops / (d.link_gbs * 1e9);
    base.peak_flops_per_peer_link_byte = flops / (d.peer_gbs * 1e9);
    base.peak_flops_per_hbm_byte = flops / (d.hbm_tbs * 1e12);
    break;
  }
  return base;
}

}  // namespace memgate
