#ifndef MEMGATE_TESTS_TEST_UTIL_H_
#define MEMGATE_TESTS_TEST_UTIL_H_

// Helpers shared by memgate's tests.

#include <cstdint>
#include <string>

#include "proto/memgate.pb.h"

namespace memgate::testing {

// A job the way the paper's tables describe one: catalog model and GPU by
// name, (TP, CP, PP, MBS), GPU count and sequence length; global batch 1024.
v1::Job PaperJob(const std::string& model, const std::string& gpu,
                 uint32_t tp, uint32_t cp, uint32_t pp, uint32_t mbs,
                 uint32_t gpus, uint32_t seq);

// The paper's A100-40GB table: Llama-3.1-8B at 8k on 8 GPUs, TP 4, PP 2,
// at micro-batch `mbs`: 27.20 GiB at 1 (GREEN), 37.58 at 2 (YELLOW),
// 58.33 at 4 (RED).
v1::Job PaperA100Job(uint32_t mbs);

// The same job with every model dimension explicit (no catalog name).
v1::Job ExplicitLlama31_8BJob();

// The worst plan request the hardening issue found (planner/planner.h):
// 720,720 GPUs (the most divisors under the plan bound) and dimensions that
// every divisor divides, micro-batch sizes up to `max_micro_batch_size`.
// With 1024 it must be refused before any work; with 1 it is the largest
// plan allowed.
v1::PlanRequest WorstCasePlanRequest(uint32_t max_micro_batch_size);

// The largest MoE job validation allows: 65,536 layers (8 experts, top 2)
// over 4,096 stages of 16 chunks each, no global batch.
v1::Job LargestInterleavedMoeJob();

// A plan of a `layers`-layer model whose odd layers are MoE (16 experts,
// top 1: Llama 4's alternating layers) on `gpus` H100s, 8k tokens, a
// global batch of `gpus`.
v1::PlanRequest AlternatingMoePlanRequest(uint32_t gpus, uint32_t layers);

// Parses a Job from text format; the test fails loudly on a typo.
v1::Job JobFromText(const std::string& text);

// A 16-layer, 2048-wide model with a 256k vocabulary at 43,008 tokens a
// micro-batch on 8 H100s, every layer recomputed: its peak is under the
// 80% rule at TP 1, but not beside the loss's 16-bit gradient of the
// logits (memory_model.cc [CE]).
v1::Job SmallModelLargeVocabularyJob(uint32_t tp, v1::Precision precision);

}  // namespace memgate::testing

#endif  // MEMGATE_TESTS_TEST_UTIL_H_
