// A Megatron-style launcher that asks memgate before it allocates GPUs.
// It uses only memgate's public preflight API (client/preflight.h).
//
//   preflight_launcher --gpu=h100-94gb [--server=HOST:PORT] --
//       torchrun --nproc-per-node 8 pretrain_gpt.py --num-layers 32 ...
//
// Admitted: prints "launching: ..." and execs the command. Refused: prints
// the reason and what would fit, exits 1. Invalid launch: 2. No answer: 3.

#include <unistd.h>

#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "client/preflight.h"

int main(int argc, char** argv) {
  memgate::PreflightOptions options;
  std::vector<std::string> launch;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") {
      launch.assign(argv + i + 1, argv + argc);
      break;
    }
    if (arg.rfind("--gpu=", 0) == 0) options.accelerator = arg.substr(6);
    if (arg.rfind("--server=", 0) == 0) options.server = arg.substr(9);
    if (arg.rfind("--model=", 0) == 0) options.model = arg.substr(8);
    if (arg == "--refuse-unreviewed") options.refuse_unreviewed = true;
  }
  // The command runs with this process's environment, and
  // TransformerEngine's attention switches in it decide its attention.
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    options.environment.emplace_back(*e);
  }
  if (launch.empty()) {
    std::cerr << "usage: preflight_launcher --gpu=NAME [--server=HOST:PORT] "
                 "[--refuse-unreviewed] -- <launch command>\n";
    return 2;
  }

  absl::StatusOr<memgate::v1::Decision> decision =
      memgate::PreflightCheckLaunch(launch, options);
  if (!decision.ok()) {
    std::cerr << "preflight: " << decision.status().message() << "\n";
    return decision.status().code() == absl::StatusCode::kInvalidArgument ? 2
                                                                          : 3;
  }
  std::cerr << "preflight: " << decision->reason() << "\n";
  if (decision->verdict() != memgate::v1::VERDICT_ADMIT) {
    for (const memgate::v1::Candidate& c : decision->suggestions()) {
      std::cerr << "preflight: would fit: TP=" << c.tensor_parallel()
                << " CP=" << c.context_parallel()
                << " PP=" << c.pipeline_parallel()
                << " MBS=" << c.micro_batch_size() << "\n";
    }
    return 1;
  }
  std::cout << "launching:";
  for (const std::string& w : launch) std::cout << " " << w;
  std::cout << std::endl;
  std::vector<char*> args;
  for (std::string& w : launch) args.push_back(w.data());
  args.push_back(nullptr);
  execvp(args[0], args.data());
  std::cerr << "preflight: cannot run " << launch[0] << ": "
            << std::strerror(errno) << "\n";
  return 127;
}
