#include "client/plan_table.h"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "estimator/job_resolver.h"
#include "estimator/report.h"
#include "readers/megatron_model_writer.h"

namespace memgate::cli {
namespace {

using RowKey = std::tuple<uint32_t, uint32_t, uint32_t, uint32_t>;

// Smallest model-parallel group first (the paper's finding), then as the
// paper lists them: larger TP first, then CP, PP, MBS.
bool RowBefore(const RowKey& x, const RowKey& y) {
  const auto [xt, xc, xp, xb] = x;
  const auto [yt, yc, yp, yb] = y;
  const uint64_t xg = uint64_t{xt} * xc * xp, yg = uint64_t{yt} * yc * yp;
  if (xg != yg) return xg < yg;
  return std::make_tuple(-int64_t{xt}, xc, xp, xb) <
         std::make_tuple(-int64_t{yt}, yc, yp, yb);
}

std::string ZoneLetter(v1::Zone z) {
  return z == v1::ZONE_GREEN ? "G" : z == v1::ZONE_YELLOW ? "Y" : "R";
}

std::string Cell(const v1::Candidate* c, TableFormat format) {
  if (c == nullptr) return "-";
  switch (format) {
    case TableFormat::kCsv:
      return absl::StrFormat("%.2f", c->peak_gib());
    case TableFormat::kAnsi: {
      const char* colour = c->zone() == v1::ZONE_GREEN    ? "\033[32m"
                           : c->zone() == v1::ZONE_YELLOW ? "\033[33m"
                                                          : "\033[31m";
      return absl::StrFormat("%s%.2f\033[0m", colour, c->peak_gib());
    }
    default:
      return absl::StrFormat("%.2f %s", c->peak_gib(), ZoneLetter(c->zone()));
  }
}

// The rows RenderPlanTable leaves out, as a line under the table ("" when
// none): `listed` of `plain` plain 1F1B layouts are shown, the others RED
// at every GPU count.
std::string LeftOutNote(size_t plain, size_t listed) {
  constexpr const char* kListView =
      "; without --table the plan also searches uneven stages, interleaving "
      "and recomputation.\n";
  if (plain == 0) {
    return absl::StrCat(
        "No plain 1F1B layout (even stages, no interleaving or "
        "recomputation) is valid at the GPU counts given", kListView);
  }
  if (listed == 0) {
    return absl::StrCat("Every plain 1F1B layout (even stages, no "
                        "interleaving or recomputation) is RED at every GPU "
                        "count given (", plain, " of them)", kListView);
  }
  if (listed == plain) return "";
  return absl::StrCat(plain - listed, " more plain layout",
                      plain - listed == 1 ? "" : "s",
                      ", RED at every GPU count, not shown.\n");
}

}  // namespace

std::string RenderPlanTable(const std::vector<uint32_t>& gpu_counts,
                            const std::vector<v1::PlanResponse>& plans,
                            TableFormat format) {
  std::map<RowKey, std::vector<const v1::Candidate*>> rows;
  for (size_t col = 0; col < plans.size(); ++col) {
    for (const v1::Candidate& c : plans[col].candidates()) {
      // The paper's table is of plain 1F1B layouts: interleaved, uneven
      // and recomputing variants are in the list view.
      if (c.virtual_pipeline_stages() > 1 || c.first_stage_layers() > 0 ||
          c.recompute_num_layers() > 0 || c.recompute_modules_size() > 0) {
        continue;
      }
      auto& row = rows[{c.tensor_parallel(), c.context_parallel(),
                        c.pipeline_parallel(), c.micro_batch_size()}];
      row.resize(plans.size(), nullptr);
      row[col] = &c;
    }
  }
  std::vector<RowKey> keys;
  for (const auto& [key, cells] : rows) {
    const bool any_fits = std::any_of(cells.begin(), cells.end(), [](auto* c) {
      return c != nullptr && c->zone() != v1::ZONE_RED;
    });
    if (any_fits) keys.push_back(key);
  }
  // What the rows leave out, said under the table: an empty table must not
  // read as "nothing to say" when every plain layout is RED (Llama-3.1-
  // 405B's 126 layers split evenly only over 1 or 2 stages on a power of
  // two of GPUs).
  const std::string left_out = LeftOutNote(rows.size(), keys.size());
  std::sort(keys.begin(), keys.end(), RowBefore);

  std::vector<std::string> header = {"(TP, CP, PP, MBS)"};
  for (uint32_t g : gpu_counts) header.push_back(absl::StrCat(g, " GPUs"));
  std::vector<std::vector<std::string>> body;
  for (const RowKey& key : keys) {
    const auto [t, c, p, b] = key;
    std::vector<std::string> line = {
        absl::StrFormat("(%u, %u, %u, %u)", t, c, p, b)};
    for (const v1::Candidate* cell : rows[key]) line.push_back(Cell(cell, format));
    body.push_back(std::move(line));
  }

  std::string out;
  if (format == TableFormat::kCsv) {
    std::vector<std::string> csv_header = {"tp", "cp", "pp", "mbs"};
    for (uint32_t g : gpu_counts) {
      csv_header.push_back(absl::StrCat(g, "_gpus_gib"));
      csv_header.push_back(absl::StrCat(g, "_gpus_zone"));
    }
    absl::StrAppend(&out, absl::StrJoin(csv_header, ","), "\n");
    for (const RowKey& key : keys) {
      const auto [t, c, p, b] = key;
      std::vector<std::string> line = {absl::StrCat(t), absl::StrCat(c),
                                       absl::StrCat(p), absl::StrCat(b)};
      for (const v1::Candidate* cell : rows[key]) {
        line.push_back(cell ? Cell(cell, format) : "");
        line.push_back(cell ? ZoneName(cell->zone()) : "");
      }
      absl::StrAppend(&out, absl::StrJoin(line, ","), "\n");
    }
    return out;
  }
  if (format == TableFormat::kMarkdown) {
    absl::StrAppend(&out, "| ", absl::StrJoin(header, " | "), " |\n|");
    for (size_t i = 0; i < header.size(); ++i) absl::StrAppend(&out, " --- |");
    absl::StrAppend(&out, "\n");
    for (const auto& line : body) {
      absl::StrAppend(&out, "| ", absl::StrJoin(line, " | "), " |\n");
    }
    absl::StrAppend(&out, "\nG: GREEN (fits), Y: YELLOW (may OOM), R: RED "
                          "(will OOM); GiB per GPU, peak stage.\n",
                    left_out);
    return out;
  }
  // Text: fixed-width columns; ANSI escapes take no width on a terminal.
  absl::StrAppendFormat(&out, "%-18s", header[0]);
  for (size_t i = 1; i < header.size(); ++i) {
    absl::StrAppendFormat(&out, " %11s", header[i]);
  }
  absl::StrAppend(&out, "\n");
  for (const auto& line : body) {
    absl::StrAppendFormat(&out, "%-18s", line[0]);
    for (size_t i = 1; i < line.size(); ++i) {
      const size_t invisible = format == TableFormat::kAnsi && line[i] != "-"
                                   ? 9  // colour on + reset
                                   : 0;
      absl::StrAppendFormat(&out, " %*s", static_cast<int>(11 + invisible),
                            line[i]);
    }
    absl::StrAppend(&out, "\n");
  }
  if (format == TableFormat::kText) {
    absl::StrAppend(&out, "\nG: GREEN (fits), Y: YELLOW (may OOM), R: RED "
                          "(will OOM); GiB per GPU, peak stage.\n");
  }
  absl::StrAppend(&out, left_out);
  return out;
}

namespace {

// The Megatron flags that give the plan's precision ("" for fp32,
// Megatron's default).
const char* PrecisionFlags(v1::Precision p) {
  switch (p) {
    case v1::PRECISION_BF16_BF16_GRADS:
      return "--bf16 --grad-reduce-in-bf16";
    case v1::PRECISION_FP16:
      return "--fp16";
    case v1::PRECISION_FP32:
      return "";
    default:
      return "--bf16";
  }
}

// A plan by name: the arguments that build its model, its precision, the
// paper's dropout 0 and the flags' TP overlap, for lines that are a whole
// launch's arguments (MegatronModelArguments); nullopt for a model whose
// features Megatron's command line does not say.
std::optional<std::string> ByNameLaunchArguments(
    const v1::PlanRequest& request, v1::Precision precision) {
  v1::Job job;
  *job.mutable_model() = request.model();
  *job.mutable_accelerator() = request.accelerator();
  job.set_num_gpus(request.num_gpus());
  absl::StatusOr<v1::Job> resolved = ResolveJob(job);
  if (!resolved.ok()) return std::nullopt;
  // A release named by --megatron-core has no Megatron argument of its
  // own; MoE lines without one would be read at the larger of its terms.
  if (resolved->model().has_moe() &&
      !request.training().megatron_core_version().empty()) {
    return std::nullopt;
  }
  std::optional<std::string> model =
      MegatronModelArguments(resolved->model());
  if (!model) return std::nullopt;
  const std::string bits = *PrecisionFlags(precision) == '\0'
                               ? std::string()
                               : absl::StrCat(" ", PrecisionFlags(precision));
  // The by-name settings a plan's flags give (plan_command.cc); the others
  // are in each candidate's own arguments.
  const bool overlap = request.training().tp_comm_overlap() !=
                       v1::TrainingConfig::TP_COMM_OVERLAP_OFF;
  return absl::StrCat(*model, bits,
                      " --hidden-dropout 0 --attention-dropout 0 ",
                      overlap ? "--tp-comm-overlap " : "");
}

}  // namespace

std::string RenderMegatronArguments(const v1::PlanRequest& request,
                                    const v1::PlanResponse& plan,
                                    bool by_name) {
  const v1::Precision precision =
      request.precision() != v1::PRECISION_UNSPECIFIED
          ? request.precision()
          : request.training().precision();
  const std::optional<std::string> whole =
      by_name ? ByNameLaunchArguments(request, precision) : std::nullopt;
  std::string out =
      whole && request.training().fused_swiglu()
          ? std::string(
                "# every line is a launch's arguments for the model by "
                "name, after the script (the plan counts Megatron's fused "
                "SwiGLU as the launch runs it: a line checks at its "
                "candidate's peak, or below where the launch's arguments "
                "settle what the plan by name counts at the larger, such "
                "as an MoE model's Megatron-Core release)\n")
      : whole ? std::string(
                  "# every line is a launch's arguments for the model by "
                  "name, after the script (with --swiglu Megatron runs its "
                  "fused kernel, 6 B a unit of FFN width where the plan by "
                  "name counts the paper's 8: a line checks at or below its "
                  "candidate's peak; --fused-swiglu plans as it runs)\n")
            : absl::StrFormat(
                  "# every line assumes a launch with %s and the model's "
                  "flags%s\n",
                  *PrecisionFlags(precision) == '\0'
                      ? "neither --bf16 nor --fp16 (fp32)"
                      : PrecisionFlags(precision),
                  !by_name
                      ? ", and the planned launch's other settings: a line "
                        "replaces its layout arguments (parallel sizes, "
                        "micro-batch, pipeline split, virtual stages) and, "
                        "where it recomputes, its recomputation"
                      : " (--swiglu, --normalization, ... as the model's "
                        "launch gives them: without them Megatron's defaults "
                        "apply); each candidate as the job planned, for "
                        "`memgate check --job`: --format=jobs");
  for (const v1::Candidate& c : plan.candidates()) {
    absl::StrAppendFormat(&out, "# rank %u: %s %.2f GiB on %u GPUs (DP %u)\n",
                          c.rank(), ZoneName(c.zone()), c.peak_gib(),
                          c.num_gpus(), c.data_parallel());
    if (whole) out += *whole;
    out += c.megatron_arguments().empty()
               ? CandidateMegatronArguments(c, request.global_batch_size(),
                                            request.seq_length())
               : c.megatron_arguments();
    out += "\n";
  }
  return out;
}

std::string RenderPlanList(const v1::PlanResponse& plan) {
  std::string out = absl::StrFormat(
      "%-5s %-17s %5s %10s %-7s %7s %6s  %s\n", "rank", "(TP, CP, PP, MBS)",
      "DP", "peak GiB", "zone", "bubble", "speed", "why");
  for (const v1::Candidate& c : plan.candidates()) {
    absl::StrAppendFormat(
        &out, "%-5u %-17s %5u %10.2f %-7s %6.1f%% %6.2f  %s\n", c.rank(),
        absl::StrFormat("(%u, %u, %u, %u)", c.tensor_parallel(),
                        c.context_parallel(), c.pipeline_parallel(),
                        c.micro_batch_size()),
        c.data_parallel(), c.peak_gib(), ZoneName(c.zone()),
        100 * c.bubble_fraction(), c.relative_speed(),
        CandidateVariant(c) + c.why());
  }
  absl::StrAppendFormat(&out, "\n%u of %u valid layouts shown.\n",
                        plan.candidates_size(), plan.considered());
  return out;
}

}  // namespace memgate::cli
