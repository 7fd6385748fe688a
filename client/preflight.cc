#include "client/preflight.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "admission/admission.h"
#include "client/remote_client.h"
#include "estimator/catalog.h"
#include "estimator/estimate.h"
#include "readers/megatron_args.h"

namespace memgate {

namespace {

// The decision for a job whose environment is already read.
absl::StatusOr<v1::Decision> Decide(const v1::Job& job,
                                    const PreflightOptions& options) {
  if (options.server.empty()) {
    AdmissionPolicy policy;
    if (options.threshold != 0) policy.threshold = options.threshold;
    policy.admit_yellow = options.admit_yellow;
    absl::StatusOr<v1::Decision> decision = AdmitJob(job, policy);
    if (decision.ok()) decision->set_request_id(options.request_id);
    return decision;
  }
  v1::AdmitRequest request;
  *request.mutable_job() = job;
  request.set_threshold(options.threshold);
  request.set_request_id(options.request_id);
  request.set_detail(v1::DETAIL_FULL);  // callers print the breakdown
  cli::RemoteOptions remote;
  remote.server = options.server;
  remote.timeout = options.timeout;
  remote.tls_ca_file = options.tls_ca_file;
  remote.tls_cert_file = options.tls_cert_file;
  remote.tls_key_file = options.tls_key_file;
  absl::StatusOr<v1::Decision> answer = cli::AdmitRemotely(request, remote);
  if (answer.ok() ||
      answer.status().code() == absl::StatusCode::kInvalidArgument) {
    return answer;
  }
  // The service did not answer (unreachable, past its deadline, a request
  // past its size limit): bad input is still bad input, classified here,
  // as `memgate check` does, so that a launcher tells a broken job from a
  // broken service (its policy for the second may admit).
  if (absl::Status local = EstimateJob(job).status(); !local.ok()) {
    return absl::InvalidArgumentError(local.message());
  }
  return answer;
}

}  // namespace

absl::StatusOr<v1::Decision> PreflightCheck(const v1::Job& job,
                                            const PreflightOptions& options) {
  if (options.environment.empty()) return Decide(job, options);
  v1::Job run = job;  // as it will run: TE's switches from its environment
  std::vector<std::string> notes;
  if (absl::Status s =
          ApplyTeEnvironment(options.environment, run, notes);
      !s.ok()) {
    return s;
  }
  return Decide(run, options);
}

absl::StatusOr<v1::Job> JobFromLaunch(const std::vector<std::string>& argv,
                                      const PreflightOptions& options,
                                      std::vector<std::string>* notes) {
  std::optional<v1::ModelConfig> fill;
  if (!options.model.empty()) {
    absl::StatusOr<v1::ModelConfig> model = FindModel(options.model);
    if (!model.ok()) return model.status();
    fill = *model;
  }
  absl::StatusOr<MegatronLaunch> launch = ParseMegatronLaunch(
      WithTeEnvironment(argv, options.environment),
      fill ? &*fill : nullptr);
  if (!launch.ok()) return launch.status();
  if (options.refuse_unreviewed) {
    if (absl::Status s = RefuseUnreviewedArguments(*launch); !s.ok()) return s;
  }
  if (notes != nullptr) *notes = launch->notes;
  v1::Job job = launch->job;
  if (options.num_gpus != 0) job.set_num_gpus(options.num_gpus);
  if (job.num_gpus() == 0) {
    return absl::InvalidArgumentError(
        "num_gpus: the launch does not say (no torchrun --nproc-per-node); "
        "give the GPU count");
  }
  std::vector<std::string> batch_notes;
  if (absl::Status s = ApplyMegatronGlobalBatch(launch->global_batch_rule,
                                                job, batch_notes);
      !s.ok()) {
    return s;
  }
  if (notes != nullptr) {
    notes->insert(notes->end(), batch_notes.begin(), batch_notes.end());
  }
  if (options.accelerator.empty()) {
    return absl::InvalidArgumentError(
        "accelerator.name: a launch line does not say which GPU; give it");
  }
  job.mutable_accelerator()->set_name(options.accelerator);
  return job;
}

absl::StatusOr<v1::Decision> PreflightCheckLaunch(
    const std::vector<std::string>& argv, const PreflightOptions& options) {
  absl::StatusOr<v1::Job> job = JobFromLaunch(argv, options);
  if (!job.ok()) return job.status();
  return Decide(*job, options);  // the environment read with the words
}

}  // namespace memgate
