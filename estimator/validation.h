#ifndef MEMGATE_ESTIMATOR_VALIDATION_H_
#define MEMGATE_ESTIMATOR_VALIDATION_H_

#include <cstdint>

#include "absl/status/status.h"
#include "proto/memgate.pb.h"

namespace memgate {

// Whether Megatron's interleaved 1F1B runs m micro-batches a step over p
// stages in groups of n a chunk: p <= n <= m, and the m % n left over for
// the last group is 0 or at least p (schedules.py raises otherwise).
// ValidateJob refuses jobs by it, naming the field; refusal hints skip
// GPU counts it rules out.
inline bool InterleavedGroupsRun(uint64_t p, uint64_t n, uint64_t m) {
  return p <= n && n <= m && (m % n == 0 || m % n >= p);
}

// Whether the model's MLP is SwiGLU, what training.fused_swiglu applies
// to (an unset activation reads as the paper's SwiGLU).
inline bool IsSwigluMlp(const v1::ModelConfig& m) {
  return m.mlp_activation() == v1::MLP_ACTIVATION_UNSPECIFIED ||
         m.mlp_activation() == v1::MLP_ACTIVATION_SWIGLU;
}

// model.vocab_size_divisible_by's ceiling: Megatron's default is 128, and
// a multiple this large is a padding no tokenizer needs.
inline constexpr uint32_t kMaxVocabSizeDivisibleBy = 1u << 16;

// Checks a resolved job (see ResolveJob) against every rule a Megatron-style
// trainer enforces for a Llama model under 4D parallelism. The first broken
// rule comes back as INVALID_ARGUMENT "<field>: <rule> (got <value>)", the
// field spelled as in memgate.proto. Integer checks never overflow, whatever
// the sizes.
absl::Status ValidateJob(const v1::Job& job);

// The flex dispatcher's rules for an ETP x EP group of `group` ranks (part
// of ValidateJob; the planner checks the layout-free ones with group 2).
absl::Status ValidateFlexDispatcher(const v1::MoeConfig& moe, uint64_t group);

// The EP all-to-all overlap's rules (model.moe.overlap_expert_parallel_comm)
// with `expert_parallel` ranks (part of ValidateJob; the planner checks the
// layout-free ones with 2).
absl::Status ValidateExpertOverlap(const v1::Job& job,
                                   uint64_t expert_parallel);

// ParallelConfig.fsdp_communication_unit_size's ceiling: 2^40 parameters.
inline constexpr uint64_t kMaxFsdpCommunicationUnit = uint64_t{1} << 40;

// The GREEN limit as a fraction of capacity: (0, 1].
absl::Status ValidateThreshold(double threshold);

}  // namespace memgate

#endif  // MEMGATE_ESTIMATOR_VALIDATION_H_
