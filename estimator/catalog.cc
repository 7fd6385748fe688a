#include "estimator/catalog.h"

#include <cstdint>
#include <iterator>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "estimator/clipped_text.h"
#include "estimator/units.h"

namespace memgate {
namespace {

struct ModelEntry {
  const char* name;
  uint32_t layers, hidden, ffn_hidden, heads, kv_heads, vocab;
  // The Llama architecture's (SwiGLU, RMSNorm) unless said otherwise.
  v1::MlpActivation activation = v1::MLP_ACTIVATION_UNSPECIFIED;
  v1::Normalization normalization = v1::NORMALIZATION_UNSPECIFIED;
};

// Dimensions from each model's published config.json (Meta's releases;
// NVIDIA's Nemotron-4 340B: its technical report, table 1, and NeMo's
// Nemotron4Config340B: squared ReLU, LayerNorm (1p: zero-centred, weight
// and bias), untied, no biases, RoPE on half of each head).
constexpr ModelEntry kModels[] = {
    {"llama-2-7b", 32, 4096, 11008, 32, 32, 32000},
    {"llama-2-13b", 40, 5120, 13824, 40, 40, 32000},
    {"llama-2-70b", 80, 8192, 28672, 64, 8, 32000},
    {"llama-3-8b", 32, 4096, 14336, 32, 8, 128256},
    {"llama-3-70b", 80, 8192, 28672, 64, 8, 128256},
    {"llama-3.1-8b", 32, 4096, 14336, 32, 8, 128256},
    {"llama-3.1-70b", 80, 8192, 28672, 64, 8, 128256},
    {"llama-3.1-405b", 126, 16384, 53248, 128, 8, 128256},
    {"nemotron-4-340b", 96, 18432, 73728, 96, 8, 256000,
     v1::MLP_ACTIVATION_SQUARED_RELU, v1::NORMALIZATION_LAYERNORM},
};

// Mixture-of-experts models, from their published config.json (Mistral AI,
// Qwen, DeepSeek; the same files are in tests/testdata/hf/).
struct MoeEntry {
  ModelEntry dense;           // attention and the dense layers' MLP
  uint32_t head_dim;          // 0: hidden / heads
  bool qk_norm;
  uint32_t experts, topk, expert_ffn, shared_ffn;
  uint32_t leading_dense;     // first layers with a dense MLP
  uint32_t q_lora, kv_lora;   // MLA (kv_lora 0: none)
  uint32_t mtp_layers;
  // gpt-oss: biases on every linear layer (experts and router too), the
  // experts' gate clamped, a learned sink logit a head.
  bool linear_bias = false;
  bool activation_clamp = false;
  v1::SoftmaxType softmax = v1::SOFTMAX_TYPE_VANILLA;
  // gpt-oss: YaRN-scaled RoPE (rope_scaling rope_type "yarn"), which
  // Megatron runs unfused (memory_model.cc [RU]).
  v1::PositionEmbedding position = v1::POSITION_EMBEDDING_UNSPECIFIED;
  // gpt-oss: every other layer attends within a 128-token window
  // (config.json layer_types, sliding_window; ModelConfig.sliding_window).
  bool sliding_window = false;
  // The router as the config names it (readers/hf_config.cc SetRouter):
  // a softmax (over every expert: the larger count), DeepSeek-V3's
  // sigmoid within 4 of 8 expert groups.
  v1::MoeConfig::RouterScore router_score =
      v1::MoeConfig::ROUTER_SCORE_SOFTMAX;
  uint32_t router_groups = 0, router_group_topk = 0;
};

constexpr MoeEntry kMoeModels[] = {
    {{"mixtral-8x7b", 32, 4096, 14336, 32, 8, 32000}, 0, false,
     8, 2, 14336, 0, 0, 0, 0, 0},
    {{"mixtral-8x22b", 56, 6144, 16384, 48, 8, 32768}, 0, false,
     8, 2, 16384, 0, 0, 0, 0, 0},
    {{"qwen3-30b-a3b", 48, 2048, 6144, 32, 4, 151936}, 128, true,
     128, 8, 768, 0, 0, 0, 0, 0},
    {{"qwen3-235b-a22b", 94, 4096, 12288, 64, 4, 151936}, 128, true,
     128, 8, 1536, 0, 0, 0, 0, 0},
    // MLA: 128 heads of 128 + 64 (rotary) dims for Q and K, 128 for V.
    // qk_norm: its latent norms (q_a/kv_a_layernorm; Megatron's
    // --qk-layernorm with MLA).
    {{"deepseek-v3", 61, 7168, 18432, 128, 128, 129280}, 0, true,
     256, 8, 2048, 2048, 3, 1536, 512, 1,
     false, false, v1::SOFTMAX_TYPE_VANILLA, v1::POSITION_EMBEDDING_UNSPECIFIED,
     false, v1::MoeConfig::ROUTER_SCORE_SIGMOID, 8, 4},
    // OpenAI's gpt-oss (transformers' GptOssConfig, the published
    // config.json files): every layer routed experts, whose gate is a
    // clamped quick-GeLU with (up + 1), biases everywhere, attention sinks
    // (readers/hf_config.cc reads their configs the same way).
    {{"gpt-oss-20b", 24, 2880, 2880, 64, 8, 201088,
      v1::MLP_ACTIVATION_QUICK_GEGLU, v1::NORMALIZATION_RMSNORM},
     64, false, 32, 4, 2880, 0, 0, 0, 0, 0,
     true, true, v1::SOFTMAX_TYPE_LEARNABLE, v1::POSITION_EMBEDDING_YARN,
     true},
    {{"gpt-oss-120b", 36, 2880, 2880, 64, 8, 201088,
      v1::MLP_ACTIVATION_QUICK_GEGLU, v1::NORMALIZATION_RMSNORM},
     64, false, 128, 4, 2880, 0, 0, 0, 0, 0,
     true, true, v1::SOFTMAX_TYPE_LEARNABLE, v1::POSITION_EMBEDDING_YARN,
     true},
};

struct AcceleratorEntry {
  const char* name;
  const char* alias;  // "" when the short name would be ambiguous
  uint32_t memory_gib;
  uint32_t gpus_per_node;
  GpuFamily family;
};

// Nominal capacities in GiB, the paper's convention. The paper's H100 is the
// 94 GB part in 4-GPU nodes. The H800 and A800 are the H100 SXM and A100
// SXM with NVLink cut to 400 GB/s (same memory and kernels); the H20 is a
// Hopper with 96 GB of HBM3 and a fraction of the H100's compute; the
// MI325X is the MI300X's CDNA3 with 256 GB of HBM3E. The GB200 is the
// B200's Blackwell (sm100, the same kernels) at 186 GB of HBM3e a GPU
// (NVIDIA's GB200 NVL72 datasheet: 13.4 TB over 72 GPUs, 372 GB a
// superchip); its "node" here is the rack's NVLink domain, 72 GPUs, not the
// 4-GPU compute tray: what the planner keeps TP and TP x CP inside is the
// fast interconnect (cost_model.h), which spans the rack. The B300 and
// GB300 are Blackwell Ultra (sm103) with 288 GB of HBM3e (NVIDIA's HGX
// B300 and GB300 NVL72 datasheets), the GB300's node its NVL72 rack too;
// TransformerEngine's kernels differ from sm100's in one place memgate
// reads (FlashAttention 2 above 192: attention_backend.cc).
constexpr AcceleratorEntry kAccelerators[] = {
    {"a100-40gb", "", 40, 8, GpuFamily::kAmpere},
    {"a100-80gb", "", 80, 8, GpuFamily::kAmpere},
    {"a800-80gb", "a800", 80, 8, GpuFamily::kAmpere},
    {"h100-80gb", "", 80, 8, GpuFamily::kHopper},
    {"h100-94gb", "", 94, 4, GpuFamily::kHopper},
    {"h800-80gb", "h800", 80, 8, GpuFamily::kHopper},
    {"h20-96gb", "h20", 96, 8, GpuFamily::kHopper},
    {"h200-141gb", "h200", 141, 8, GpuFamily::kHopper},
    {"b200-180gb", "b200", 180, 8, GpuFamily::kBlackwell},
    {"gb200-186gb", "gb200", 186, 72, GpuFamily::kBlackwell},
    {"b300-288gb", "b300", 288, 8, GpuFamily::kBlackwellUltra},
    {"gb300-288gb", "gb300", 288, 72, GpuFamily::kBlackwellUltra},
    {"mi300x-192gb", "mi300x", 192, 8, GpuFamily::kCdna3},
    {"mi325x-256gb", "mi325x", 256, 8, GpuFamily::kCdna3},
    {"l40s-48gb", "l40s", 48, 8, GpuFamily::kAda},
};

}  // namespace

namespace {

void SetDimensions(const ModelEntry& m, v1::ModelConfig& model) {
  model.set_name(m.name);
  model.set_num_layers(m.layers);
  model.set_hidden_size(m.hidden);
  model.set_ffn_hidden_size(m.ffn_hidden);
  model.set_num_attention_heads(m.heads);
  model.set_num_query_groups(m.kv_heads);
  model.set_vocab_size(m.vocab);
  model.set_mlp_activation(m.activation);
  model.set_normalization(m.normalization);
}

// The tables as protos, built once.
const std::vector<v1::ModelConfig>& ModelTable() {
  static const auto* table = [] {
    auto* models = new std::vector<v1::ModelConfig>();
    for (const ModelEntry& m : kModels) {
      SetDimensions(m, models->emplace_back());
    }
    for (const MoeEntry& e : kMoeModels) {
      v1::ModelConfig& model = models->emplace_back();
      const ModelEntry& m = e.dense;
      SetDimensions(m, model);
      model.set_head_dim(e.head_dim);
      model.set_qk_norm(e.qk_norm);
      v1::MoeConfig& moe = *model.mutable_moe();
      moe.set_num_experts(e.experts);
      moe.set_router_topk(e.topk);
      moe.set_expert_ffn_hidden_size(e.expert_ffn);
      moe.set_shared_expert_ffn_hidden_size(e.shared_ffn);
      moe.set_router_score_function(e.router_score);
      moe.set_router_num_groups(e.router_groups);
      moe.set_router_group_topk(e.router_group_topk);
      for (uint32_t i = 0; e.leading_dense > 0 && i < m.layers; ++i) {
        moe.add_layer_pattern(i < e.leading_dense ? 0 : 1);
      }
      if (e.kv_lora > 0) {
        v1::MlaConfig& mla = *model.mutable_mla();
        mla.set_q_lora_rank(e.q_lora);
        mla.set_kv_lora_rank(e.kv_lora);
        mla.set_qk_head_dim(128);
        mla.set_qk_pos_emb_head_dim(64);
        mla.set_v_head_dim(128);
      }
      model.set_mtp_num_layers(e.mtp_layers);
      model.set_linear_bias(e.linear_bias);
      model.set_activation_clamp(e.activation_clamp);
      model.set_softmax_type(e.softmax);
      model.set_position_embedding(e.position);
      model.set_sliding_window(e.sliding_window);
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

namespace {

// The index in kAccelerators (and AcceleratorTable()) of `name` or its
// alias; -1 when unknown.
int AcceleratorIndex(absl::string_view name) {
  for (size_t i = 0; i < std::size(kAccelerators); ++i) {
    const char* alias = kAccelerators[i].alias;
    if (absl::EqualsIgnoreCase(name, kAccelerators[i].name) ||
        (*alias != '\0' && absl::EqualsIgnoreCase(name, alias))) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

}  // namespace

const v1::Accelerator* LookupAccelerator(absl::string_view name) {
  const int i = AcceleratorIndex(name);
  return i < 0 ? nullptr : &AcceleratorTable()[static_cast<size_t>(i)];
}

GpuFamily FamilyOfAccelerator(absl::string_view name) {
  const int i = AcceleratorIndex(name);
  return i < 0 ? GpuFamily::kUnknown
               : kAccelerators[static_cast<size_t>(i)].family;
}

absl::StatusOr<v1::ModelConfig> FindModel(absl::string_view name) {
  if (const v1::ModelConfig* m = LookupModel(name)) return *m;
  return absl::NotFoundError(
      absl::StrCat("model.name: unknown model '",
                   Clipped(name, kQuotedNameBytes),
                   "' (known: ", absl::StrJoin(ModelNames(), ", "), ")"));
}

absl::StatusOr<v1::Accelerator> FindAccelerator(absl::string_view name) {
  if (const v1::Accelerator* a = LookupAccelerator(name)) return *a;
  // A short name that several sizes share ("h100", "a100"): say which.
  std::vector<std::string> sizes;
  for (const AcceleratorEntry& a : kAccelerators) {
    if (!name.empty() &&
        absl::StartsWithIgnoreCase(a.name, absl::StrCat(name, "-"))) {
      sizes.emplace_back(a.name);
    }
  }
  if (sizes.size() > 1) {
    return absl::NotFoundError(
        absl::StrCat("accelerator.name: GPU ", Quoted(name), " is ambiguous: ",
                     absl::StrJoin(sizes, " or "), " (their memory differs)"));
  }
  return absl::NotFoundError(
      absl::StrCat("accelerator.name: unknown GPU ", Quoted(name),
                   " (known: ", absl::StrJoin(AcceleratorNames(), ", "), ")"));
}

std::vector<std::string> ModelNames() {
  std::vector<std::string> names;
  for (const ModelEntry& m : kModels) names.emplace_back(m.name);
  for (const MoeEntry& m : kMoeModels) names.emplace_back(m.dense.name);
  return names;
}

std::vector<std::string> AcceleratorNames() {
  std::vector<std::string> names;
  for (const AcceleratorEntry& a : kAccelerators) names.emplace_back(a.name);
  return names;
}

}  // namespace memgate
