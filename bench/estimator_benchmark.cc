// The estimator's hot paths: one estimate (what every Admit costs) and a
// plan of Llama-3.1-405B over 16,384 H100s (the planner's largest case).
//
//   bazel run -c opt //bench:estimator_benchmark

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "admission/admission.h"
#include "benchmark/benchmark.h"
#include "estimator/estimate.h"
#include "planner/planner.h"
#include "readers/megatron_args.h"
#include "tests/test_util.h"

namespace memgate {
namespace {

v1::Job PaperJob() {
  return testing::PaperJob("llama-3.1-8b", "a100-40gb", 4, 1, 2, 1, 16, 8192);
}

void BM_EstimateJob(benchmark::State& state) {
  const v1::Job job = PaperJob();
  for (auto _ : state) {
    absl::StatusOr<v1::Estimate> e = EstimateJob(job);
    benchmark::DoNotOptimize(e);
  }
}
BENCHMARK(BM_EstimateJob);

// An MoE estimate: Qwen3-235B-A22B, TP 4, PP 2, EP 8 on 64 GPUs (the load
// margin evaluates each stage's activations twice).
void BM_EstimateMoeJob(benchmark::State& state) {
  v1::Job job = testing::PaperJob("qwen3-235b-a22b", "h100-80gb", 4, 1, 2, 1,
                                  64, 4096);
  job.mutable_parallel()->set_expert_parallel(8);
  job.mutable_parallel()->set_expert_tensor_parallel(1);
  for (auto _ : state) {
    absl::StatusOr<v1::Estimate> e = EstimateJob(job);
    benchmark::DoNotOptimize(e);
  }
}
BENCHMARK(BM_EstimateMoeJob);

// The largest MoE job validation allows (65,536 layers over 4,096 stages
// of 16 chunks): the bound EstimateTest.LargestInterleavedMoeJobIsBoundedWork
// checks the shape of, timed here.
void BM_EstimateLargestInterleavedMoeJob(benchmark::State& state) {
  const v1::Job job = testing::LargestInterleavedMoeJob();
  for (auto _ : state) {
    absl::StatusOr<v1::Estimate> e = EstimateJob(job);
    benchmark::DoNotOptimize(e);
  }
}
BENCHMARK(BM_EstimateLargestInterleavedMoeJob)->Unit(benchmark::kMillisecond);

// [LW] Muon under the layer-wise distributed optimizer: each stage's
// matrices packed over the data-parallel ranks they use. Llama-3.1-405B at
// TP 8, PP 16 on 8,192 H100s (DP 64, 32 matrices a stage); Llama-3.1-8B on
// one stage over 16,384 ranks (128 of them used); Qwen3-30B-A3B without
// expert parallelism on 32 GPUs, near the most packing validation allows
// (2 packings x 2 bucketings x 12,288 expert matrices x 32 ranks = 1.6e6
// of 2^21 steps).
v1::Job MuonLayerWiseJob(const char* model, uint32_t t, uint32_t p,
                         uint32_t gpus, uint32_t gbs) {
  v1::Job job = testing::PaperJob(model, "h100-80gb", t, 1, p, 1, gpus, 4096);
  job.mutable_training()->set_optimizer(v1::OPTIMIZER_MUON);
  job.mutable_training()->set_global_batch_size(gbs);
  return job;
}

void EstimateRepeatedly(benchmark::State& state, const v1::Job& job) {
  for (auto _ : state) {
    absl::StatusOr<v1::Estimate> e = EstimateJob(job);
    if (!e.ok()) state.SkipWithError(std::string(e.status().message()).c_str());
    benchmark::DoNotOptimize(e);
  }
}

void BM_EstimateMuonLayerWise405B(benchmark::State& state) {
  v1::Job job = MuonLayerWiseJob("llama-3.1-405b", 8, 16, 8192, 2048);
  job.mutable_parallel()->add_layers_per_stage(7);
  for (int i = 0; i < 14; ++i) job.mutable_parallel()->add_layers_per_stage(8);
  job.mutable_parallel()->add_layers_per_stage(7);
  EstimateRepeatedly(state, job);
}
BENCHMARK(BM_EstimateMuonLayerWise405B)->Unit(benchmark::kMillisecond);

void BM_EstimateMuonLayerWise8BOn16384(benchmark::State& state) {
  EstimateRepeatedly(state,
                     MuonLayerWiseJob("llama-3.1-8b", 1, 1, 16384, 16384));
}
BENCHMARK(BM_EstimateMuonLayerWise8BOn16384)->Unit(benchmark::kMillisecond);

void BM_EstimateMuonLayerWiseNearItsBound(benchmark::State& state) {
  EstimateRepeatedly(state,
                     MuonLayerWiseJob("qwen3-30b-a3b", 1, 1, 32, 32));
}
BENCHMARK(BM_EstimateMuonLayerWiseNearItsBound)
    ->Unit(benchmark::kMillisecond);

// A plan over 16,384 H100s at 16,384 sequences a step.
v1::PlanRequest PlanOn16384H100(const char* model, uint32_t seq,
                                uint32_t top_k) {
  v1::PlanRequest request;
  request.mutable_model()->set_name(model);
  request.mutable_accelerator()->set_name("h100-80gb");
  request.set_num_gpus(16384);
  request.set_seq_length(seq);
  request.set_global_batch_size(16384);
  request.set_top_k(top_k);
  return request;
}

// Plans `request` each iteration; reports the layouts it considered.
void RunPlans(benchmark::State& state, const v1::PlanRequest& request) {
  uint64_t considered = 0;
  for (auto _ : state) {
    absl::StatusOr<v1::PlanResponse> plan = PlanLayouts(request);
    considered = plan.ok() ? plan->considered() : 0;
    benchmark::DoNotOptimize(plan);
  }
  state.counters["candidates"] = static_cast<double>(considered);
  // Candidates estimated and ranked per second; 1e6 / (this / 1000) is the
  // cost in microseconds of a thousand candidates.
  state.counters["candidates_per_s"] = benchmark::Counter(
      static_cast<double>(considered),
      benchmark::Counter::kIsIterationInvariantRate);
}

// A plan of an MoE model over 16,384 H100s: EP and ETP multiply the
// search. Arg: top_k.
void BM_PlanQwen3_235BOn16384H100(benchmark::State& state) {
  RunPlans(state, PlanOn16384H100("qwen3-235b-a22b", 4096,
                                  static_cast<uint32_t>(state.range(0))));
}
BENCHMARK(BM_PlanQwen3_235BOn16384H100)
    ->Arg(10)
    ->Unit(benchmark::kMillisecond);

// DeepSeek-V3 over 16,384 H100s: MLA, three dense layers before the MoE
// ones (which ranks can peak depends on where they fall) and an MTP layer
// on the last stage; 256 experts make EP up to 256.
void BM_PlanDeepSeekV3On16384H100(benchmark::State& state) {
  RunPlans(state, PlanOn16384H100("deepseek-v3", 4096, 10));
}
BENCHMARK(BM_PlanDeepSeekV3On16384H100)->Unit(benchmark::kMillisecond);

// A 60-layer model whose odd layers are MoE (16 experts, top 1), over
// 16,384 H100s: which ranks can peak is found by placing each rank's
// chunks (planner.cc [XR]).
void BM_PlanAlternatingMoeOn16384H100(benchmark::State& state) {
  v1::PlanRequest request = testing::AlternatingMoePlanRequest(16384, 60);
  request.set_global_batch_size(16384);
  request.set_top_k(10);
  RunPlans(state, request);
}
BENCHMARK(BM_PlanAlternatingMoeOn16384H100)->Unit(benchmark::kMillisecond);

void BM_AdmitJobAdmitted(benchmark::State& state) {
  const v1::Job job = PaperJob();
  for (auto _ : state) {
    absl::StatusOr<v1::Decision> d = AdmitJob(job, AdmissionPolicy());
    benchmark::DoNotOptimize(d);
  }
}
BENCHMARK(BM_AdmitJobAdmitted);

// A refusal also plans the suggestions.
void BM_AdmitJobRefusedWithSuggestions(benchmark::State& state) {
  v1::Job job = PaperJob();
  job.mutable_training()->set_micro_batch_size(4);
  for (auto _ : state) {
    absl::StatusOr<v1::Decision> d = AdmitJob(job, AdmissionPolicy());
    benchmark::DoNotOptimize(d);
  }
}
BENCHMARK(BM_AdmitJobRefusedWithSuggestions);

// An MoE refusal that also prices its hints: DeepSeek-V3's first plan
// candidate on 1,024 H100s that fits by recomputing its MoE layers, run
// without; the refusal names them after pricing them against whole layers
// (refusal_hints.cc, the exchange's factor included).
void BM_AdmitMoeJobRefusedWithHints(benchmark::State& state) {
  v1::PlanRequest r;
  r.mutable_model()->set_name("deepseek-v3");
  r.mutable_accelerator()->set_name("h100-80gb");
  r.set_num_gpus(1024);
  r.set_seq_length(4096);
  r.set_global_batch_size(8192);
  const absl::StatusOr<v1::PlanResponse> plan = PlanLayouts(r);
  if (!plan.ok()) {
    state.SkipWithError(std::string(plan.status().message()).c_str());
    return;
  }
  v1::Job job;
  for (const v1::Candidate& c : plan->candidates()) {
    if (std::find(c.recompute_modules().begin(), c.recompute_modules().end(),
                  v1::Recompute::MODULE_MOE) != c.recompute_modules().end()) {
      job = JobForCandidate(r, c);
      break;
    }
  }
  if (job.num_gpus() == 0) {
    state.SkipWithError("no candidate recomputes its MoE layers");
    return;
  }
  job.mutable_training()->clear_recompute();
  for (auto _ : state) {
    absl::StatusOr<v1::Decision> d = AdmitJob(job, AdmissionPolicy());
    benchmark::DoNotOptimize(d);
  }
}
BENCHMARK(BM_AdmitMoeJobRefusedWithHints)->Unit(benchmark::kMillisecond);

// Args: sequence length, top_k (0: every candidate becomes a message).
void BM_Plan405BOn16384H100(benchmark::State& state) {
  v1::PlanRequest request =
      PlanOn16384H100("llama-3.1-405b", static_cast<uint32_t>(state.range(0)),
                      static_cast<uint32_t>(state.range(1)));
  request.set_allow_cross_node_tp(true);
  RunPlans(state, request);
}
BENCHMARK(BM_Plan405BOn16384H100)
    ->Args({8192, 10})
    ->Args({131072, 10})
    ->Args({8192, 0})
    ->Args({131072, 0})
    ->Unit(benchmark::kMicrosecond);

// [LW] Muon plans: every layout packs Megatron's layer-wise buffers, once
// a schedule and rank (planner.h kMaxPlanLayerWiseWork). Llama-3.1-405B
// over 16,384 H100s (7.5e7 counted steps). Arg: top_k.
v1::PlanRequest MuonPlan(const char* model, uint32_t gpus, uint32_t seq,
                         uint32_t gbs, uint32_t top_k) {
  v1::PlanRequest request = PlanOn16384H100(model, seq, top_k);
  request.set_num_gpus(gpus);
  request.set_global_batch_size(gbs);
  request.mutable_training()->set_optimizer(v1::OPTIMIZER_MUON);
  request.mutable_training()->set_megatron_core_version("0.19.0");
  return request;
}
void BM_PlanMuon405BOn16384H100(benchmark::State& state) {
  const v1::PlanRequest request =
      MuonPlan("llama-3.1-405b", 16384, 8192, 2048,
               static_cast<uint32_t>(state.range(0)));
  if (!PlanLayouts(request).ok()) state.SkipWithError("refused");
  RunPlans(state, request);
}
BENCHMARK(BM_PlanMuon405BOn16384H100)
    ->Arg(10)
    ->Arg(0)
    ->Unit(benchmark::kMillisecond);
// A plan at about half the plan's bound (Mixtral-8x22B on 256 H100s:
// 5.3e8 counted steps of 2^30), every candidate.
void BM_PlanMuonNearItsBound(benchmark::State& state) {
  const v1::PlanRequest request =
      MuonPlan("mixtral-8x22b", 256, 4096, 1024, 0);
  if (!PlanLayouts(request).ok()) state.SkipWithError("refused");
  RunPlans(state, request);
}
BENCHMARK(BM_PlanMuonNearItsBound)->Unit(benchmark::kMillisecond);
// Lion and Muon plans with the plan's bound lifted (PlanOptions), each
// candidate, against the steps the plan's count charges them
// (CheckLayerWiseWork, read from its refusal under a bound of 0):
// `ns_per_step` calibrates layer_wise_terms.h's constants and the bound
// (kMaxPlanLayerWiseWork), bench/RESULTS.md.
struct LayerWisePlanCase {
  const char* model;
  uint32_t gpus, seq, gbs;
};
constexpr LayerWisePlanCase kLayerWisePlans[] = {
    {"qwen3-30b-a3b", 8, 4096, 512},     {"qwen3-30b-a3b", 16, 4096, 512},
    {"qwen3-30b-a3b", 64, 4096, 512},    {"mixtral-8x7b", 64, 4096, 1024},
    {"mixtral-8x22b", 256, 4096, 1024},  {"llama-3.1-70b", 16384, 8192, 2048},
    {"llama-3.1-405b", 1024, 8192, 2048},
    {"llama-3.1-405b", 16384, 8192, 2048},
    {"deepseek-v3", 1024, 4096, 8192},   {"deepseek-v3", 64, 4096, 256},
    {"qwen3-235b-a22b", 64, 4096, 256},
    // The largest counts of the catalog's MoE models, 64 to 16,384 GPUs.
    {"deepseek-v3", 512, 4096, 8192},    {"qwen3-235b-a22b", 512, 4096, 8192}};

double CountedLayerWiseSteps(const v1::PlanRequest& request) {
  PlanOptions none;
  none.max_layer_wise_work = 0;
  const absl::Status refused = PlanLayouts(request, nullptr, none).status();
  const std::string message(refused.message());
  const size_t at = message.find("up to ");
  return at == std::string::npos
             ? 0
             : std::strtod(message.c_str() + at + 6, nullptr);
}

// Second argument: the release, 0 for core 0.19.0 (packing by elements),
// 1 for 0.20.0 (by Newton-Schulz cost, as main after 0.19).
void BM_PlanLayerWisePastTheBound(benchmark::State& state) {
  const LayerWisePlanCase& c = kLayerWisePlans[state.range(0)];
  const bool by_cost = state.range(1) == 1;
  v1::PlanRequest request = MuonPlan(c.model, c.gpus, c.seq, c.gbs, 0);
  if (by_cost) {
    request.mutable_training()->set_megatron_core_version("0.20.0");
  }
  PlanOptions lifted;
  lifted.max_layer_wise_work = uint64_t{1} << 50;
  if (!PlanLayouts(request, nullptr, lifted).ok()) {
    state.SkipWithError("refused");
  }
  for (auto _ : state) {
    absl::StatusOr<v1::PlanResponse> plan =
        PlanLayouts(request, nullptr, lifted);
    benchmark::DoNotOptimize(plan);
  }
  const double steps = CountedLayerWiseSteps(request);
  state.SetLabel(absl::StrCat(c.model, " on ", c.gpus,
                              by_cost ? " by cost" : " by elements"));
  state.counters["counted_steps"] = steps;
  // Seconds a step (the iteration-average rate's inverse), in ns.
  state.counters["ns_per_step"] = benchmark::Counter(
      steps * 1e-9, benchmark::Counter::kIsIterationInvariantRate |
                        benchmark::Counter::kInvert);
}
BENCHMARK(BM_PlanLayerWisePastTheBound)
    ->ArgsProduct({benchmark::CreateDenseRange(
                       0, std::size(kLayerWisePlans) - 1, 1),
                   {0, 1}})
    ->Unit(benchmark::kMillisecond);

// A launch's reading, per word: a Llama-3.1-8B launch followed by
// `state.range(0)` arguments, half of them Megatron-LM's own that change
// no memory (--log-interval 5), half a fork's (--x<i>, noted), as a long
// batch script holds them. The Slurm hook reads such scripts inside
// slurmctld.
void BM_ParseLongLaunch(benchmark::State& state) {
  std::vector<std::string> launch = {
      "torchrun", "--nproc-per-node", "8", "pretrain_gpt.py",
      "--num-layers", "32", "--hidden-size", "4096", "--ffn-hidden-size",
      "14336", "--num-attention-heads", "32", "--group-query-attention",
      "--num-query-groups", "8", "--swiglu", "--normalization", "RMSNorm",
      "--disable-bias-linear", "--position-embedding-type", "rope",
      "--untie-embeddings-and-output-weights", "--vocab-size", "128256",
      "--bf16", "--seq-length", "8192", "--micro-batch-size", "1",
      "--global-batch-size", "64", "--use-distributed-optimizer"};
  for (int64_t i = 0; i < state.range(0); i += 2) {
    launch.push_back("--log-interval");
    launch.push_back("5");
    launch.push_back(absl::StrCat("--x", i));
  }
  for (auto _ : state) {
    absl::StatusOr<MegatronLaunch> parsed =
        ParseMegatronLaunch(launch, nullptr);
    benchmark::DoNotOptimize(parsed);
  }
  state.SetItemsProcessed(state.iterations() * int64_t(launch.size()));
}
BENCHMARK(BM_ParseLongLaunch)->Arg(0)->Arg(1000)->Arg(100000)
    ->Unit(benchmark::kMillisecond);

// A batch script's launch line as --launch-lines reads it (the Slurm
// hook's), against the blank split it replaced: the Llama-3.1-8B launch
// and `state.range(0)` more arguments, a third of them quoted with shell
// syntax inside ("--wandb-exp-name 'a | b'"), 2>&1 | tee $LOG after.
std::string LongLaunchLine(int64_t arguments) {
  std::string line =
      "cd $DIR && torchrun --nproc-per-node 8 pretrain_gpt.py --num-layers "
      "32 --hidden-size 4096 --num-attention-heads 32 --vocab-size 128256 "
      "--bf16 --seq-length 8192 --micro-batch-size 1";
  for (int64_t i = 0; i < arguments; i += 3) {
    absl::StrAppend(&line, " --log-interval 5 --x", i,
                    " --wandb-exp-name 'a | b'");
  }
  return line + " 2>&1 | tee $LOG";
}
void BM_LaunchLineAsShell(benchmark::State& state) {
  const std::string line = LongLaunchLine(state.range(0));
  for (auto _ : state) {
    absl::StatusOr<std::vector<std::vector<std::string>>> words =
        LaunchCommandsOfShellLine(line);
    benchmark::DoNotOptimize(words);
  }
  state.SetBytesProcessed(state.iterations() * int64_t(line.size()));
}
BENCHMARK(BM_LaunchLineAsShell)->Arg(1000)->Arg(100000)
    ->Unit(benchmark::kMillisecond);
void BM_LaunchLineOnBlanks(benchmark::State& state) {
  const std::string line = LongLaunchLine(state.range(0));
  for (auto _ : state) {
    std::vector<std::string> words =
        absl::StrSplit(line, absl::ByAnyChar(" \t\r"), absl::SkipEmpty());
    benchmark::DoNotOptimize(words);
  }
  state.SetBytesProcessed(state.iterations() * int64_t(line.size()));
}
BENCHMARK(BM_LaunchLineOnBlanks)->Arg(1000)->Arg(100000)
    ->Unit(benchmark::kMillisecond);

// The hardening bounds (planner/planner.h), on tests/test_util.h's
// worst-case request.
v1::PlanRequest WorstCasePlan(uint32_t max_micro_batch) {
  return testing::WorstCasePlanRequest(max_micro_batch);
}

// What refusing the 60-byte attack (MBS up to 1024) costs: the count.
void BM_RefuseOversizedPlan(benchmark::State& state) {
  const v1::PlanRequest request = WorstCasePlan(1024);
  for (auto _ : state) {
    absl::StatusOr<v1::PlanResponse> plan = PlanLayouts(request);
    benchmark::DoNotOptimize(plan);
  }
}
BENCHMARK(BM_RefuseOversizedPlan)->Unit(benchmark::kMillisecond);

// The most work a plan may do (MBS 1: ~2^17 layouts), top 10 and all.
void BM_LargestAllowedPlan(benchmark::State& state) {
  v1::PlanRequest request = WorstCasePlan(1);
  request.set_top_k(static_cast<uint32_t>(state.range(0)));
  for (auto _ : state) {
    absl::StatusOr<v1::PlanResponse> plan = PlanLayouts(request);
    benchmark::DoNotOptimize(plan);
  }
}
BENCHMARK(BM_LargestAllowedPlan)->Arg(10)->Arg(0)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace memgate

BENCHMARK_MAIN();
