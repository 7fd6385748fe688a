#include "readers/te_attention_environment.h"

#include <map>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "readers/megatron_args.h"
#include "readers/te_backward_override.h"

namespace memgate {
namespace {

// Values are echoed at most this long: a launch is the user's input.
constexpr size_t kEchoedValueBytes = 32;

constexpr char kDeterminism[] = "NVTE_ALLOW_NONDETERMINISTIC_ALGO";
constexpr char kSoftmaxFusion[] = "NVTE_MASKED_SOFTMAX_FUSION";

std::string Assignment(const std::string& name, const std::string& value) {
  return absl::StrCat(name, "=", value.substr(0, kEchoedValueBytes));
}

// Python's int() of the text: surrounding whitespace, a sign, and digits
// (with single '_' between them).
std::optional<bool> NonZero(const std::string& text) {
  // The words' reader keeps 65 bytes of a longer value: none is a number
  // a launch means.
  if (text.size() > 64) return std::nullopt;
  absl::string_view v = absl::StripAsciiWhitespace(text);
  if (!v.empty() && (v[0] == '+' || v[0] == '-')) v.remove_prefix(1);
  if (v.empty() || v.front() == '_' || v.back() == '_') return std::nullopt;
  bool nonzero = false;
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] == '_') {
      if (v[i - 1] == '_') return std::nullopt;
      continue;
    }
    if (!absl::ascii_isdigit(static_cast<unsigned char>(v[i]))) {
      return std::nullopt;
    }
    nonzero = nonzero || v[i] != '0';
  }
  return nonzero;
}

// What Megatron's _set_attention_backend sets each variable to (and
// asserts an already set one equals), by --attention-backend.
int MegatronSets(const std::string& backend, const std::string& name) {
  const bool flash = name == "NVTE_FLASH_ATTN";
  const bool fused = name == "NVTE_FUSED_ATTN";
  const bool unfused = name == "NVTE_UNFUSED_ATTN";
  if (backend == "local") return 0;
  if (backend == "flash") return flash ? 1 : 0;
  if (backend == "fused") return fused ? 1 : 0;
  if (backend == "unfused") return unfused ? 1 : 0;
  return 1;  // auto
}

absl::Status CheckMegatronAgrees(const Arguments& args,
                                 const std::string& backend) {
  const std::string dated_by = args.Has("attention-backend")
                                   ? std::string("attention-backend")
                                   : args.after_core_0_12_0();
  for (const char* name :
       {"NVTE_FLASH_ATTN", "NVTE_FUSED_ATTN", "NVTE_UNFUSED_ATTN"}) {
    const auto it = args.environment().find(name);
    if (it == args.environment().end()) continue;
    const int expected = MegatronSets(backend, name);
    if (it->second == absl::StrCat(expected)) continue;
    return absl::InvalidArgumentError(absl::StrCat(
        Assignment(name, it->second),
        " (the launch's environment): Megatron-LM from core 0.11 on (--",
        dated_by, " dates this launch) sets it to ", expected,
        " for --attention-backend ", backend,
        " and stops at start where it is already set otherwise "
        "(language_module.py _set_attention_backend): unset it and choose "
        "the kernel with --attention-backend"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<TeEnvironment> ReadTeAttentionEnvironment(
    const Arguments& args, const std::string& backend, bool local_attention,
    std::vector<std::string>& notes, absl::string_view source) {
  TeEnvironment out;
  if (args.Has("flash-attention-version")) {
    const std::string v = args.Text("flash-attention-version");
    if (v != "2" && v != "3" && v != "4") {
      return Bad("flash-attention-version",
                 absl::StrCat("must be 2, 3 or 4 (got '", v.substr(0, 32),
                              "')"));
    }
  }
  const std::map<std::string, std::string>& env = args.environment();
  std::map<std::string, bool> on;
  std::vector<std::string> given;  // the kernel switches, for notes
  for (const char* name : kTeVariables) {
    const auto it = env.find(name);
    // NVTE_BACKWARD_OVERRIDE, a word, is te_backward_override.h's.
    if (it == env.end() || it->first == kTeBackwardOverride) continue;
    const std::optional<bool> value = NonZero(it->second);
    if (!value) {
      // '?': a Slurm hook's word for a value a batch script sets in a way
      // it cannot read as one (memgate_launch.lua find_launches).
      const bool unknown = it->second == "?";
      return absl::InvalidArgumentError(absl::StrCat(
          Assignment(name, it->second),
          " (", source, "): not a whole number "
          "(TransformerEngine reads it with int(); 0 turns it off)",
          unknown ? "; the batch script sets it in a way its hook cannot "
                    "read as one value (under a condition, computed, or "
                    "to another value than the job's environment or an "
                    "earlier line): give it one value, or check the launch "
                    "where it runs (memgate exec)"
                  : ""));
    }
    on[name] = *value;
    if (std::string(name) != kDeterminism &&
        std::string(name) != kSoftmaxFusion) {
      given.push_back(Assignment(name, it->second));
    }
  }
  // Deterministic kernels: the variable at 0, which Megatron's
  // --deterministic-mode sets where it is unset and requires where it is
  // set (training/determinism.py apply_determinism_env; earlier releases
  // raise with TE's attention: extensions/transformer_engine.py).
  const auto determinism = on.find(kDeterminism);
  if (args.Has("deterministic-mode") && !local_attention &&
      determinism != on.end() && determinism->second) {
    return absl::InvalidArgumentError(absl::StrCat(
        Assignment(kDeterminism, env.at(kDeterminism)),
        " (the launch's environment) with --deterministic-mode: Megatron "
        "raises at start (TransformerEngine's attention needs it at 0)"));
  }
  out.deterministic = !local_attention &&
                      (args.Has("deterministic-mode") ||
                       (determinism != on.end() && !determinism->second));
  // The fused softmax of TE's unfused attention (softmax.py
  // FusedScaleMaskSoftmax reads bool(int(NAME)) when the attention is
  // built); Megatron's local attention runs a softmax of its own.
  const auto softmax = on.find(kSoftmaxFusion);
  if (softmax != on.end() && !softmax->second) {
    const std::string assignment =
        Assignment(kSoftmaxFusion, env.at(kSoftmaxFusion));
    if (local_attention) {
      notes.push_back(absl::StrCat(
          assignment, ": no change: Megatron's local attention runs its own "
                      "softmax, not TransformerEngine's"));
    } else {
      out.masked_softmax_fusion_off = true;
      notes.push_back(absl::StrCat(
          assignment, ": TransformerEngine's fused softmax off: where its "
                      "unfused attention runs, every softmax keeps torch's "
                      "fp32 output beside the 16-bit probabilities "
                      "(counted)"));
    }
  }
  if (given.empty() && !args.Has("flash-attention-version")) return out;
  auto allowed = [&](const char* name) {
    const auto it = on.find(name);
    return it == on.end() || it->second;
  };
  const std::string set = absl::StrJoin(given, " ");
  const bool flash = allowed("NVTE_FLASH_ATTN") && allowed("NVTE_FLASH_ATTN_V2");
  const bool fused = allowed("NVTE_FUSED_ATTN");
  out.unfused_off = !allowed("NVTE_UNFUSED_ATTN");

  if (args.Has("attention-backend") || !args.after_core_0_12_0().empty()) {
    if (absl::Status s = CheckMegatronAgrees(args, backend); !s.ok()) return s;
    // The three agree with --attention-backend, which decides; FlashAttention
    // 2 alone off (NVTE_FLASH_ATTN_V2=0, or --flash-attention-version 3 / 4,
    // which sets it) takes it from auto.
    out.unfused_off = false;  // Megatron's own setting, already read
    const std::string version = args.Text("flash-attention-version");
    const bool pinned = version == "3" || version == "4";
    const auto v2 = env.find("NVTE_FLASH_ATTN_V2");
    if (pinned && v2 != env.end() && v2->second != "0") {
      return absl::InvalidArgumentError(absl::StrCat(
          Assignment("NVTE_FLASH_ATTN_V2", v2->second),
          " (the launch's environment): --flash-attention-version ", version,
          " sets it to 0, and Megatron stops at start where it is already "
          "set otherwise (language_module.py _set_attention_backend)"));
    }
    if (backend == "auto" && (!flash || pinned)) {
      notes.push_back(absl::StrCat(
          pinned ? absl::StrCat("--flash-attention-version ", version) : set,
          ": FlashAttention 2 off: TransformerEngine runs cuDNN's fused "
          "attention where cuDNN trains the head dimensions on the GPU, its "
          "unfused attention (the s x s scores, counted) elsewhere",
          pinned ? absl::StrCat(" (FlashAttention ", version,
                                " not assumed installed)")
                 : std::string()));
      out.kernel = TeEnvironmentKernel::kFlashDisabled;
    }
    return out;
  }
  if (local_attention) {
    notes.push_back(absl::StrCat(
        set, ": no change: Megatron's local attention runs, not "
             "TransformerEngine's"));
    out.unfused_off = false;
    return out;
  }
  // What a later Megatron's auto would say of them (each unset or "1").
  bool auto_agrees = true;
  for (const char* name :
       {"NVTE_FLASH_ATTN", "NVTE_FUSED_ATTN", "NVTE_UNFUSED_ATTN"}) {
    const auto it = env.find(name);
    if (it != env.end() && it->second != "1") auto_agrees = false;
  }
  const char* dated =
      auto_agrees ? ""
                  : "; Megatron-LM from core 0.11 on stops at start with them "
                    "set unless --attention-backend says the same";
  if (!flash && !fused) {
    if (out.unfused_off) {
      return absl::InvalidArgumentError(absl::StrCat(
          set, " (", source, "): TransformerEngine has no "
               "attention left (FlashAttention, cuDNN's fused and its "
               "unfused attention all off)"));
    }
    notes.push_back(absl::StrCat(
        set, ": TransformerEngine runs its unfused attention, which keeps "
             "the s x s scores (counted)", dated));
    out.kernel = TeEnvironmentKernel::kUnfused;
  } else if (!flash) {
    notes.push_back(absl::StrCat(
        set, ": FlashAttention off: TransformerEngine runs cuDNN's fused "
             "attention where cuDNN trains the head dimensions on the GPU, "
             "its unfused attention (the s x s scores, counted) elsewhere",
        dated));
    out.kernel = TeEnvironmentKernel::kFlashDisabled;
  } else if (!auto_agrees) {
    notes.push_back(absl::StrCat(
        set, ": no change: FlashAttention stays on (no s x s scores)", dated));
  }
  return out;
}

absl::Status ApplyTeEnvironment(
    const std::vector<std::string>& environment, v1::Job& job,
    std::vector<std::string>& notes) {
  v1::TrainingConfig& t = *job.mutable_training();
  const v1::AttentionKernel kernel = t.attention_kernel();
  Arguments args;  // the variables alone: no script, no arguments
  if (absl::Status s = args.Parse(WithTeEnvironment({}, environment));
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ReadTeBackwardOverride(args.environment(), t, notes,
                                              "the command's environment");
      !s.ok()) {
    return s;
  }
  if (kernel == v1::ATTENTION_KERNEL_LOCAL ||
      job.model().attention_logit_softcapping() > 0) {
    return absl::OkStatus();
  }
  std::vector<std::string> said;
  MEMGATE_ASSIGN_OR_RETURN(
      env, ReadTeAttentionEnvironment(args, "auto", false, said,
                                      "the command's environment"));
  if (env.kernel == TeEnvironmentKernel::kUnfused) {
    if (kernel == v1::ATTENTION_KERNEL_FLASH) {
      return absl::InvalidArgumentError(absl::StrCat(
          "training.attention_kernel: ATTENTION_KERNEL_FLASH, but the "
          "command's environment switches FlashAttention and cuDNN's fused "
          "attention off (", said.empty() ? "" : said.front(), ")"));
    }
    t.set_attention_kernel(v1::ATTENTION_KERNEL_UNFUSED);
  }
  if (env.unfused_off && kernel == v1::ATTENTION_KERNEL_UNFUSED) {
    return absl::InvalidArgumentError(
        "training.attention_kernel: ATTENTION_KERNEL_UNFUSED, but the "
        "command's environment switches TransformerEngine's unfused "
        "attention off (NVTE_UNFUSED_ATTN=0)");
  }
  if (env.kernel == TeEnvironmentKernel::kFlashDisabled) {
    t.set_flash_attention_disabled(true);
  }
  if (env.deterministic) t.set_te_deterministic_attention(true);
  if (env.masked_softmax_fusion_off) {
    t.set_te_masked_softmax_fusion_disabled(true);
  }
  for (std::string& n : said) {
    notes.push_back(absl::StrCat("the command's environment: ", n));
  }
  return absl::OkStatus();
}

std::vector<std::string> WithTeEnvironment(
    const std::vector<std::string>& launch,
    const std::vector<std::string>& environment) {
  std::vector<std::string> out;
  for (const std::string& assignment : environment) {
    const absl::string_view name =
        absl::string_view(assignment).substr(0, assignment.find('='));
    if (name.size() == assignment.size()) continue;  // no '='
    for (const char* variable : kTeVariables) {
      if (name == variable) out.push_back(assignment);
    }
  }
  out.insert(out.end(), launch.begin(), launch.end());
  return out;
}

}  // namespace memgate
