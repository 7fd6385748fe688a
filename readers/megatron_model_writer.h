#ifndef MEMGATE_READERS_MEGATRON_MODEL_WRITER_H_
#define MEMGATE_READERS_MEGATRON_MODEL_WRITER_H_

// The inverse of the launch reader for a model: the Megatron-LM arguments
// that build it, so that a plan made by name prints candidates a user (or
// `memgate check --`) can take as a whole launch. The reader of those
// arguments (megatron_args.h) gives back the same model.

#include <optional>
#include <string>

#include "proto/memgate.pb.h"

namespace memgate {

// `model` resolved (every dimension set): SwiGLU / GeLU / squared ReLU,
// RMSNorm or LayerNorm, biases, grouped-query attention, --kv-channels,
// QK-norm, rotary or learned positions, tied embeddings, the vocabulary,
// experts (their count, top-k, widths, shared experts and gate, which
// layers, the all-to-all or allgather dispatcher), MLA and MTP. nullopt
// for what it does not write (sandwich norms, logit soft-capping,
// quick-GeGLU, GeGLU, clamps, sliding windows (which layers and how wide
// the model does not record), expert capacity, DeepEP, release-dated or
// unfused expert activations): such a plan's lines stay a suffix.
std::optional<std::string> MegatronModelArguments(const v1::ModelConfig& model);

}  // namespace memgate

#endif  // MEMGATE_READERS_MEGATRON_MODEL_WRITER_H_
