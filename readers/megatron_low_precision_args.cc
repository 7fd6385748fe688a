#include "readers/megatron_low_precision_args.h"

#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "estimator/clipped_text.h"
#include "readers/launch_arguments.h"
#include "readers/megatron_args.h"

namespace memgate {
namespace {

// --first-last-layers-bf16 under fp8: the first and last layers it keeps
// in bf16 (TrainingConfig.fp8's bf16_first_layers / bf16_last_layers),
// Megatron's default 1 each; the counts alone do nothing. Megatron's
// rules on them (the recipe, at most L / p) are ValidateJob's.
absl::Status FillBf16Layers(const Arguments& args, MegatronLaunch& launch) {
  if (!args.Has("first-last-layers-bf16")) return absl::OkStatus();
  MEMGATE_ASSIGN_OR_RETURN(start,
                           args.Number("num-layers-at-start-in-bf16", 1));
  MEMGATE_ASSIGN_OR_RETURN(end, args.Number("num-layers-at-end-in-bf16", 1));
  v1::Fp8& fp8 = *launch.job.mutable_training()->mutable_fp8();
  fp8.set_bf16_first_layers(start);
  fp8.set_bf16_last_layers(end);
  launch.notes.push_back(absl::StrCat(
      "--first-last-layers-bf16: the first ", start, " and last ", end,
      " layers run outside fp8 (their activations counted in bf16; their "
      "fp8 weight copies, which TransformerEngine does not make there, "
      "still counted: an upper bound)"));
  return absl::OkStatus();
}

// --fp4-format e2m1 (TransformerConfig's spelling: --fp4): NVFP4
// (memory_model.cc [F4]), with Megatron's rules (arguments.py,
// transformer_config.py): not beside fp8, the nvfp4 recipe (custom
// quantizers are not read), the fp4 weights of --fp4-param-gather not
// modelled.
absl::Status FillFp4(const Arguments& args, const char* format_flag,
                     MegatronLaunch& launch) {
  if (args.Has("fp8-format") || args.Has("fp8")) {
    return Bad(format_flag, "cannot be used with --fp8-format (Megatron "
                            "raises)");
  }
  if (args.Text(format_flag) != "e2m1") {
    return Bad(format_flag, absl::StrCat("must be e2m1 (got '",
                                         args.Text(format_flag), "')"));
  }
  if (!args.Has("bf16") && !args.Has("fp16")) {
    return Bad(format_flag, "needs --bf16 or --fp16");
  }
  const std::string recipe =
      args.Has("fp4-recipe") ? args.Text("fp4-recipe") : "nvfp4";
  if (recipe != "nvfp4") {
    return Bad("fp4-recipe", absl::StrCat(Quoted(recipe),
                                          " is not modelled "
                                          "(nvfp4)"));
  }
  if (args.Has("fp4-param-gather")) {
    return Bad("fp4-param-gather",
               "NVFP4 weights kept in fp4 (the distributed optimizer's NVFP4 "
               "shards) are not modelled");
  }
  launch.job.mutable_training()->mutable_fp8()->set_recipe(
      v1::Fp8::RECIPE_NVFP4);
  launch.notes.push_back(
      "fp4: TransformerEngine's NVFP4 recipe, counted at MXFP8's bytes (its "
      "4-bit elements and 16-element scales take about half: an upper "
      "bound)");
  return FillBf16Layers(args, launch);
}

// [DS] The delayed recipe's amax history: --fp8-amax-history-len rows
// (Megatron's fp8_amax_history_len, default 1, handed to TE's
// DelayedScaling by fp8_utils.py); TE allocates it as given and reads its
// first row, so 0 raises. The other recipes keep none.
absl::Status FillAmaxHistory(const Arguments& args, const std::string& recipe,
                             MegatronLaunch& launch) {
  const char* flag = "fp8-amax-history-len";
  if (recipe != "delayed") {
    if (args.Has(flag)) {
      launch.notes.push_back(absl::StrCat(
          "--", flag, ": no effect with the ", recipe,
          " recipe (only delayed scaling keeps an amax history)"));
    }
    return absl::OkStatus();
  }
  MEMGATE_ASSIGN_OR_RETURN(rows, args.Number(flag, 1));
  if (rows == 0) {
    return Bad(flag, "must be at least 1 (TransformerEngine reads the "
                     "history's first row)");
  }
  if (!args.Has(flag)) {
    launch.notes.push_back("no --fp8-amax-history-len: Megatron's default "
                           "1 row of amax history");
  }
  launch.job.mutable_training()->mutable_fp8()->set_amax_history_len(rows);
  return absl::OkStatus();
}

}  // namespace

// TransformerEngine fp8 (--fp8-format, or --fp8 as TransformerConfig
// spells it) with its recipe and --fp8-param-gather.
absl::Status FillFp8(const Arguments& args, MegatronLaunch& launch) {
  const char* format_flag = args.Has("fp8-format") ? "fp8-format" : "fp8";
  const char* fp4_flag = args.Has("fp4-format") ? "fp4-format" : "fp4";
  if (args.Has(fp4_flag)) return FillFp4(args, fp4_flag, launch);
  for (const char* needs_fp4 : {"fp4-recipe", "fp4-param-gather"}) {
    if (args.Has(needs_fp4)) return Bad(needs_fp4, "needs --fp4-format");
  }
  if (!args.Has(format_flag)) {
    for (const char* needs_fp8 :
         {"fp8-recipe", "fp8-param-gather", "fp8-output-proj"}) {
      if (args.Has(needs_fp8)) return Bad(needs_fp8, "needs --fp8-format");
    }
    if (args.Has("first-last-layers-bf16")) {
      launch.notes.push_back(
          "--first-last-layers-bf16: no effect without fp8 (every layer "
          "runs in the training precision)");
    }
    if (args.Has("fp8-amax-history-len")) {
      launch.notes.push_back(
          "--fp8-amax-history-len: no effect without fp8");
    }
    return absl::OkStatus();
  }
  const std::string format = args.Text(format_flag);
  if (format != "e4m3" && format != "hybrid") {
    return Bad(format_flag,
               absl::StrCat("must be e4m3 or hybrid (got '", format, "')"));
  }
  if (!args.Has("bf16") && !args.Has("fp16")) {
    return Bad(format_flag, "needs --bf16 or --fp16");
  }
  v1::Fp8& fp8 = *launch.job.mutable_training()->mutable_fp8();
  const std::string recipe =
      args.Has("fp8-recipe") ? args.Text("fp8-recipe") : "delayed";
  static const auto* recipes = new std::map<std::string, v1::Fp8::Recipe>{
      {"delayed", v1::Fp8::RECIPE_DELAYED},
      {"tensorwise", v1::Fp8::RECIPE_TENSORWISE},
      {"blockwise", v1::Fp8::RECIPE_BLOCKWISE},
      {"mxfp8", v1::Fp8::RECIPE_MXFP8}};
  auto it = recipes->find(recipe);
  if (it == recipes->end()) {
    return Bad("fp8-recipe", absl::StrCat(Quoted(recipe),
                                          " is not modelled "
                                          "(delayed, tensorwise, blockwise, "
                                          "mxfp8)"));
  }
  if (!args.Has("fp8-recipe")) {
    launch.notes.push_back("no --fp8-recipe: Megatron's default delayed");
  }
  fp8.set_recipe(it->second);
  if (absl::Status s = FillAmaxHistory(args, recipe, launch); !s.ok()) {
    return s;
  }
  fp8.set_param_gather(args.Has("fp8-param-gather"));
  if (args.Has("fp8-output-proj")) {
    // transformer_config.py and TELMHeadColumnParallelLinear raise.
    if (it->second != v1::Fp8::RECIPE_MXFP8) {
      return Bad("fp8-output-proj", "needs --fp8-recipe mxfp8 (Megatron "
                                    "raises)");
    }
    for (const char* raises :
         {"output-logit-dtype", "defer-embedding-wgrad-compute"}) {
      if (args.Has(raises)) {
        return Bad("fp8-output-proj",
                   absl::StrCat("cannot run with --", raises,
                                " (Megatron raises)"));
      }
    }
    fp8.set_output_projection(true);
  }
  return FillBf16Layers(args, launch);
}

}  // namespace memgate
