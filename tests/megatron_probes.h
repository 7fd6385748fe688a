#ifndef MEMGATE_TESTS_MEGATRON_PROBES_H_
#define MEMGATE_TESTS_MEGATRON_PROBES_H_

// For every Megatron argument the table (readers/megatron_arguments.cc)
// models: a launch Megatron runs without it and one with it (with what it
// needs in both), and, for those that change nothing there, the reason.
// readers/megatron_argument_effects_test.cc checks each changes the job
// read; tests/launch_plans_test.cc plans each launch and checks every
// candidate pasted back into it.

#include <map>
#include <string>
#include <vector>

#include "readers/megatron_arguments.h"

namespace memgate::testing {

// An argument's test: the launch without it and the launch with it (and
// with whatever it needs in both).
struct Probe {
  std::vector<std::string> before, after;
};

// Llama (TP 4, PP 2, sequence parallel, distributed optimizer, bf16, no
// dropout, 8 GPUs), its MoE variant (8 experts over EP 2) and its MLA one.
std::vector<std::string> LlamaLaunch();
std::vector<std::string> MoeLaunch();
std::vector<std::string> MlaLaunch();

// `argv` followed by `more`.
std::vector<std::string> With(std::vector<std::string> argv,
                              const std::vector<std::string>& more);

// The arguments probed in a launch of their own (ProbeFor's others: added
// to LlamaLaunch, or MoeLaunch for MoE and expert arguments, a switch
// alone or a value argument with "2").
const std::map<std::string, Probe>& ArgumentProbes();
Probe ProbeFor(const MegatronArgument& a);

// Arguments that change nothing in the launch they are probed in, and why.
const std::map<std::string, std::string>& UnchangedArguments();

}  // namespace memgate::testing

#endif  // MEMGATE_TESTS_MEGATRON_PROBES_H_
