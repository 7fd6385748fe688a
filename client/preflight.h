#ifndef MEMGATE_CLIENT_PREFLIGHT_H_
#define MEMGATE_CLIENT_PREFLIGHT_H_

// memgate's preflight API for launchers: before allocating GPUs, ask whether
// a training job fits. Embedded (the estimator runs in-process) or against a
// memgate_server. This header and memgate.pb.h are all a launcher needs.
//
//   memgate::PreflightOptions options;
//   options.accelerator = "h100-94gb";
//   absl::StatusOr<memgate::v1::Decision> d =
//       memgate::PreflightCheckLaunch(argv, options);
//   if (!d.ok()) ...                       // bad launch, or no service
//   if (d->verdict() != memgate::v1::VERDICT_ADMIT) refuse(d->reason());

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "proto/memgate.pb.h"

namespace memgate {

struct PreflightOptions {
  // HOST:PORT of a memgate_server; empty runs the estimator in-process.
  std::string server;
  absl::Duration timeout = absl::Seconds(2);
  // PEM files for TLS to the server (CA; cert + key for mutual TLS).
  std::string tls_ca_file, tls_cert_file, tls_key_file;
  // GREEN limit; 0 means 0.8 embedded, the server's default remotely.
  double threshold = 0;
  // Embedded only (a server applies its own policy): admit YELLOW jobs.
  bool admit_yellow = false;
  std::string request_id;

  // For launches: what a launch line does not say. The GPU type is
  // required; the model name fills missing dimensions (e.g. the vocabulary
  // of a tokenizer); a non-zero GPU count overrides torchrun's.
  std::string accelerator;
  std::string model;
  uint32_t num_gpus = 0;
  // The environment the job will run with, NAME=VALUE (environ's form):
  // TransformerEngine's variables in it (NVTE_FLASH_ATTN=0 and the like:
  // readers/launch_arguments.h kTeVariables) decide which attention kernel
  // runs, and so whether the s x s scores are kept, and what fp8 GEMMs
  // keep; read with a launch's words, and applied to a job given whole
  // (PreflightCheck). Empty: the job or launch alone.
  std::vector<std::string> environment;
  // A launch argument memgate has not reviewed (a newer Megatron's, a
  // fork's) is INVALID_ARGUMENT naming it, instead of a note: for sites
  // that refuse what memgate cannot judge.
  bool refuse_unreviewed = false;
};

// The admission decision for `job`. INVALID_ARGUMENT: the job is invalid
// (the message names the field), whether or not a server answers; any
// other error (UNAVAILABLE, DEADLINE_EXCEEDED, ...): the server could not
// answer a valid job.
absl::StatusOr<v1::Decision> PreflightCheck(const v1::Job& job,
                                            const PreflightOptions& options);

// The job a torchrun + Megatron-LM launch describes, completed from
// `options` (accelerator, model, num_gpus). `argv` is the command's argv,
// as the launcher will exec it: every word is the program's ("|" or "#1"
// an argument like any other; a line of shell text is split first, as
// `memgate check --launch-lines` does). Notes on what was inferred go to
// `notes` when given.
absl::StatusOr<v1::Job> JobFromLaunch(const std::vector<std::string>& argv,
                                      const PreflightOptions& options,
                                      std::vector<std::string>* notes = nullptr);

// JobFromLaunch, then PreflightCheck.
absl::StatusOr<v1::Decision> PreflightCheckLaunch(
    const std::vector<std::string>& argv, const PreflightOptions& options);

}  // namespace memgate

#endif  // MEMGATE_CLIENT_PREFLIGHT_H_
