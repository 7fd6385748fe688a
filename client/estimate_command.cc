#include "client/estimate_command.h"

#include <optional>

#include "client/exit_codes.h"
#include "client/flags.h"
#include "client/job_flags.h"
#include "client/json_output.h"
#include "estimator/estimate.h"
#include "estimator/report.h"

namespace memgate::cli {

int RunEstimate(const std::vector<std::string>& args, std::ostream& out,
                std::ostream& err) {
  FlagSet flags(
      "usage: memgate estimate --model=NAME|--model-config=FILE|<dimensions> "
      "--gpu=NAME|--gpu-memory-gib=X --gpus=N --seq=N [--tp --cp --pp --mbs "
      "--gbs] [--format=text|json]\n\n"
      "Estimates the per-GPU memory of every pipeline stage (weights, "
      "gradients,\noptimizer states, activations) with the paper's equations, "
      "and the zone of\nthe peak: GREEN <= threshold x capacity, YELLOW <= "
      "capacity, RED above\n(or where a stage and its largest transient, "
      "the loss's 16-bit gradient of the\nlogits or a weight gradient, do not "
      "fit in what a process can allocate).\nRuns embedded: no server "
      "needed. Exit 0, or 2 for bad input.");
  JobFlags job_flags;
  job_flags.Register(flags);
  std::optional<std::string> format;
  std::optional<double> threshold;
  flags.String("format", "text|json",
               "text (default): per-stage table in GiB; json: the Estimate "
               "message (proto3 JSON, proto field names)",
               &format);
  flags.Double("threshold", "F",
               "GREEN limit as a fraction of GPU memory (default 0.8)",
               &threshold);

  absl::Status parsed = flags.Parse(args);
  if (flags.help_requested()) {
    out << flags.Help();
    return kExitAdmit;
  }
  const std::string fmt = format.value_or("text");
  if (parsed.ok() && fmt != "text" && fmt != "json") {
    parsed = absl::InvalidArgumentError(
        "--format: must be text or json (got '" + fmt + "')");
  }
  std::vector<std::string> notes;
  absl::StatusOr<v1::Job> job =
      parsed.ok() ? job_flags.ToJob(&notes) : absl::StatusOr<v1::Job>(parsed);
  // On stderr: stdout stays the estimate (JSON) for a program.
  for (const std::string& n : notes) {
    err << "memgate estimate: note: " << n << "\n";
  }
  absl::StatusOr<v1::Estimate> estimate =
      job.ok() ? EstimateJob(*job, threshold.value_or(kDefaultThreshold))
               : absl::StatusOr<v1::Estimate>(job.status());
  if (!estimate.ok()) {
    err << "memgate estimate: "
        << job_flags.WithHint(std::string(estimate.status().message()))
        << "\n";
    return kExitInvalid;
  }
  out << (fmt == "json" ? ToJson(*estimate) : FormatEstimateTable(*estimate));
  return kExitAdmit;
}

}  // namespace memgate::cli
