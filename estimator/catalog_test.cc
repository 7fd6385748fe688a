#include "estimator/catalog.h"

#include <tuple>

#include "estimator/units.h"
#include "gtest/gtest.h"

namespace memgate {
namespace {

TEST(CatalogTest, FindsModelsCaseInsensitively) {
  absl::StatusOr<v1::ModelConfig> m = FindModel("Llama-3.1-70B");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->name(), "llama-3.1-70b");
  EXPECT_EQ(m->num_layers(), 80u);
  EXPECT_EQ(m->hidden_size(), 8192u);
  EXPECT_EQ(m->ffn_hidden_size(), 28672u);
  EXPECT_EQ(m->num_attention_heads(), 64u);
  EXPECT_EQ(m->num_query_groups(), 8u);
  EXPECT_EQ(m->vocab_size(), 128256u);
}

TEST(CatalogTest, EveryListedModelIsFoundAndComplete) {
  EXPECT_EQ(ModelNames().size(), 16u);
  for (const std::string& name : ModelNames()) {
    absl::StatusOr<v1::ModelConfig> m = FindModel(name);
    ASSERT_TRUE(m.ok()) << name;
    EXPECT_EQ(m->hidden_size() % m->num_attention_heads(), 0u) << name;
    EXPECT_EQ(m->num_attention_heads() % m->num_query_groups(), 0u) << name;
  }
}

TEST(CatalogTest, UnknownModelNamesTheKnownOnes) {
  absl::StatusOr<v1::ModelConfig> m = FindModel("gpt-5");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(m.status().message().find("model.name"), std::string::npos);
  EXPECT_NE(m.status().message().find("llama-3.1-405b"), std::string::npos);
}

TEST(CatalogTest, PaperGpusHaveNominalCapacities) {
  absl::StatusOr<v1::Accelerator> a100 = FindAccelerator("a100-40gb");
  ASSERT_TRUE(a100.ok());
  EXPECT_EQ(a100->memory_bytes(), 40ull << 30);
  EXPECT_EQ(a100->gpus_per_node(), 8u);
  absl::StatusOr<v1::Accelerator> h100 = FindAccelerator("H100-94GB");
  ASSERT_TRUE(h100.ok());
  EXPECT_EQ(h100->memory_bytes(), 94ull << 30);
  EXPECT_EQ(h100->gpus_per_node(), 4u);
}

TEST(CatalogTest, AliasesResolveToTheCanonicalName) {
  absl::StatusOr<v1::Accelerator> h200 = FindAccelerator("h200");
  ASSERT_TRUE(h200.ok());
  EXPECT_EQ(h200->name(), "h200-141gb");
  // Ambiguous: 80 or 94 GB; the error names both sizes.
  const absl::StatusOr<v1::Accelerator> h100 = FindAccelerator("h100");
  ASSERT_FALSE(h100.ok());
  EXPECT_NE(h100.status().message().find(
                "'h100' is ambiguous: h100-80gb or h100-94gb"),
            std::string::npos)
      << h100.status();
  EXPECT_NE(FindAccelerator("A100").status().message().find(
                "a100-40gb or a100-80gb"),
            std::string::npos);
  // A name no size extends lists the catalog.
  EXPECT_NE(FindAccelerator("h900").status().message().find("known: "),
            std::string::npos);
  for (const std::string& name : AcceleratorNames()) {
    EXPECT_TRUE(FindAccelerator(name).ok()) << name;
  }
  EXPECT_EQ(AcceleratorNames().size(), 15u);
  // The GB200's node is its rack's NVLink domain (catalog.cc): 72 GPUs,
  // so TP 8 spans two 4-GPU trays over NVLink, as it runs.
  absl::StatusOr<v1::Accelerator> gb200 = FindAccelerator("GB200");
  ASSERT_TRUE(gb200.ok()) << gb200.status();
  EXPECT_EQ(gb200->name(), "gb200-186gb");
  EXPECT_EQ(gb200->memory_bytes(), 186ull << 30);
  EXPECT_EQ(gb200->gpus_per_node(), 72u);
  // Blackwell Ultra: 288 GB, 8 a node (HGX B300) or 72 (GB300 NVL72).
  for (const auto& [alias, per_node] :
       {std::pair{"b300", 8u}, std::pair{"gb300", 72u}}) {
    absl::StatusOr<v1::Accelerator> gpu = FindAccelerator(alias);
    ASSERT_TRUE(gpu.ok()) << alias << ": " << gpu.status();
    EXPECT_EQ(gpu->memory_bytes(), 288ull << 30) << alias;
    EXPECT_EQ(gpu->gpus_per_node(), per_node) << alias;
    EXPECT_EQ(FamilyOfAccelerator(alias), GpuFamily::kBlackwellUltra);
  }
  // DeepSeek-V3's H800s (and the A800, H20, MI325X) by name or alias.
  for (const auto& [alias, name, gib] :
       {std::tuple{"h800", "h800-80gb", 80ull},
        std::tuple{"A800", "a800-80gb", 80ull},
        std::tuple{"h20", "h20-96gb", 96ull},
        std::tuple{"mi325x", "mi325x-256gb", 256ull}}) {
    absl::StatusOr<v1::Accelerator> gpu = FindAccelerator(alias);
    ASSERT_TRUE(gpu.ok()) << alias;
    EXPECT_EQ(gpu->name(), name);
    EXPECT_EQ(gpu->memory_bytes(), gib << 30) << name;
    EXPECT_EQ(gpu->gpus_per_node(), 8u) << name;
  }
}

// Every catalog GPU has its generation (what the attention kernels depend
// on); a name outside the catalog has none, and is taken for an H100 where
// it matters (attention_backend.cc).
TEST(CatalogTest, EveryGpuHasItsFamily) {
  for (const std::string& name : AcceleratorNames()) {
    EXPECT_NE(FamilyOfAccelerator(name), GpuFamily::kUnknown) << name;
  }
  EXPECT_EQ(FamilyOfAccelerator("h800"), GpuFamily::kHopper);
  EXPECT_EQ(FamilyOfAccelerator("H20-96GB"), GpuFamily::kHopper);
  EXPECT_EQ(FamilyOfAccelerator("a800-80gb"), GpuFamily::kAmpere);
  EXPECT_EQ(FamilyOfAccelerator("l40s"), GpuFamily::kAda);
  EXPECT_EQ(FamilyOfAccelerator("b200-180gb"), GpuFamily::kBlackwell);
  EXPECT_EQ(FamilyOfAccelerator("gb200"), GpuFamily::kBlackwell);
  EXPECT_EQ(FamilyOfAccelerator("mi325x-256gb"), GpuFamily::kCdna3);
  EXPECT_EQ(FamilyOfAccelerator("h900-80gb"), GpuFamily::kUnknown);
  EXPECT_EQ(FamilyOfAccelerator(""), GpuFamily::kUnknown);
}

}  // namespace
}  // namespace memgate
