#ifndef MEMGATE_READERS_MEGATRON_LOW_PRECISION_ARGS_H_
#define MEMGATE_READERS_MEGATRON_LOW_PRECISION_ARGS_H_

// Low-precision arguments of a Megatron-LM launch: TransformerEngine's fp8
// and fp4 formats and recipes, their weight copies (--fp8-param-gather,
// --fp4-param-gather), delayed scaling's amax history and the first and
// last layers kept in bf16, with Megatron's defaults (each said in a
// note). Internal to ParseMegatronLaunch (megatron_args.cc), after the
// training precision (--bf16 / --fp16) is read.

#include "absl/status/status.h"
#include "readers/launch_arguments.h"
#include "readers/megatron_args.h"

namespace memgate {

absl::Status FillFp8(const Arguments& args, MegatronLaunch& launch);

}  // namespace memgate

#endif  // MEMGATE_READERS_MEGATRON_LOW_PRECISION_ARGS_H_
