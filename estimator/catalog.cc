#include "estimator/catalog.h"

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "estimator/units.h"

namespace memgate {
namespace {

struct ModelEntry {
  const char* name;
  uint32_t layers, hidden, ffn_hidden, heads, kv_heads, vocab;
};

// Dimensions from each model's published config.json (Meta's releases).
constexpr ModelEntry kModels[] = {
    {"llama-2-7b", 32, 4096, 11008, 32, 32, 32000},
    {"llama-2-13b", 40, 5120, 13824, 40, 40, 32000},
    {"llama-2-70b", 80, 8192, 28672, 64, 8, 32000},
    {"llama-3-8b", 32, 4096, 14336, 32, 8, 128256},
    {"llama-3-70b", 80, 8192, 28672, 64, 8, 128256},
    {"llama-3.1-8b", 32, 4096, 14336, 32, 8, 128256},
    {"llama-3.1-70b", 80, 8192, 28672, 64, 8, 128256},
    {"llama-3.1-405b", 126, 16384, 53248, 128, 8, 128256},
};

struct AcceleratorEntry {
  const char* name;
  const char* alias;  // "" when the short name would be ambiguous
  uint32_t memory_gib;
  uint32_t gpus_per_node;
};

// Nominal capacities in GiB, the paper's convention. The paper's H100 is the
// 94 GB part in 4-GPU nodes.
constexpr AcceleratorEntry kAccelerators[] = {
    {"a100-40gb", "", 40, 8},      {"a100-80gb", "", 80, 8},
    {"h100-80gb", "", 80, 8},      {"h100-94gb", "", 94, 4},
    {"h200-141gb", "h200", 141, 8}, {"b200-180gb", "b200", 180, 8},
    {"mi300x-192gb", "mi300x", 192, 8}, {"l40s-48gb", "l40s", 48, 8},
};

}  // namespace

namespace {

// The tables as protos, built once.
const std::vector<v1::ModelConfig>& ModelTable() {
  static const auto* table = [] {
    auto* models = new std::vector<v1::ModelConfig>();
    for (const ModelEntry& m : kModels) {
      v1::ModelConfig& model = models->emplace_back();
      model.set_name(m.name);
      model.set_num_layers(m.layers);
      model.set_hidden_size(m.hidden);
      model.set_ffn_hidden_size(m.ffn_hidden);
      model.set_num_attention_heads(m.heads);
      model.set_num_query_groups(m.kv_heads);
      model.set_vocab_size(m.vocab);
    }
    return models;
  }();
  return *table;
}

const std::vector<v1::Accelerator>& AcceleratorTable() {
  static const auto* table = [] {
    auto* gpus = new std::vector<v1::Accelerator>();
    for (const AcceleratorEntry& a : kAccelerators) {
      v1::Accelerator& gpu = gpus->emplace_back();
      gpu.set_name(a.name);
      gpu.set_memory_bytes(static_cast<uint64_t>(a.memory_gib) *
                           static_cast<uint64_t>(kBytesPerGiB));
      gpu.set_gpus_per_node(a.gpus_per_node);
    }
    return gpus;
  }();
  return *table;
}

}  // namespace

const v1::ModelConfig* LookupModel(absl::string_view name) {
  for (const v1::ModelConfig& m : ModelTable()) {
    if (absl::EqualsIgnoreCase(name, m.name())) return &m;
  }
  return nullptr;
}

const v1::Accelerator* LookupAccelerator(absl::string_view name) {
  const auto& table = AcceleratorTable();
  for (size_t i = 0; i < table.size(); ++i) {
    const char* alias = kAccelerators[i].alias;
    if (absl::EqualsIgnoreCase(name, table[i].name()) ||
        (*alias != '\0' && absl::EqualsIgnoreCase(name, alias))) {
      return &table[i];
    }
  }
  return nullptr;
}

absl::StatusOr<v1::ModelConfig> FindModel(absl::string_view name) {
  if (const v1::ModelConfig* m = LookupModel(name)) return *m;
  return absl::NotFoundError(
      absl::StrCat("model.name: unknown model '", name,
                   "' (known: ", absl::StrJoin(ModelNames(), ", "), ")"));
}

absl::StatusOr<v1::Accelerator> FindAccelerator(absl::string_view name) {
  if (const v1::Accelerator* a = LookupAccelerator(name)) return *a;
  return absl::NotFoundError(absl::StrCat(
      "accelerator.name: unknown GPU '", name,
      "' (known: ", absl::StrJoin(AcceleratorNames(), ", "), ")"));
}

std::vector<std::string> ModelNames() {
  std::vector<std::string> names;
  for (const ModelEntry& m : kModels) names.emplace_back(m.name);
  return names;
}

std::vector<std::string> AcceleratorNames() {
  std::vector<std::string> names;
  for (const AcceleratorEntry& a : kAccelerators) names.emplace_back(a.name);
  return names;
}

}  // namespace memgate
