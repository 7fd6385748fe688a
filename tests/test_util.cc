#include "tests/test_util.h"

#include <cstdlib>
#include <iostream>

#include "google/protobuf/text_format.h"

namespace memgate::testing {

v1::Job PaperJob(const std::string& model, const std::string& gpu,
                 uint32_t tp, uint32_t cp, uint32_t pp, uint32_t mbs,
                 uint32_t gpus, uint32_t seq) {
  v1::Job job;
  job.mutable_model()->set_name(model);
  job.mutable_accelerator()->set_name(gpu);
  job.mutable_parallel()->set_tensor_parallel(tp);
  job.mutable_parallel()->set_context_parallel(cp);
  job.mutable_parallel()->set_pipeline_parallel(pp);
  job.mutable_training()->set_micro_batch_size(mbs);
  job.mutable_training()->set_seq_length(seq);
  job.mutable_training()->set_global_batch_size(1024);
  job.set_num_gpus(gpus);
  return job;
}

v1::Job PaperA100Job(uint32_t mbs) {
  return PaperJob("llama-3.1-8b", "a100-40gb", 4, 1, 2, mbs, 8, 8192);
}

v1::Job ExplicitLlama31_8BJob() {
  return JobFromText(R"pb(
    model {
      num_layers: 32
      hidden_size: 4096
      ffn_hidden_size: 14336
      num_attention_heads: 32
      num_query_groups: 8
      vocab_size: 128256
    }
    parallel { tensor_parallel: 4 context_parallel: 1 pipeline_parallel: 2 }
    training { micro_batch_size: 1 seq_length: 8192 global_batch_size: 1024 }
    accelerator { memory_bytes: 42949672960 }
    num_gpus: 8
  )pb");
}

v1::PlanRequest AlternatingMoePlanRequest(uint32_t gpus, uint32_t layers) {
  v1::PlanRequest r;
  v1::ModelConfig& m = *r.mutable_model();
  m.set_num_layers(layers);
  m.set_hidden_size(4096);
  m.set_ffn_hidden_size(14336);
  m.set_num_attention_heads(32);
  m.set_num_query_groups(8);
  m.set_vocab_size(128256);
  v1::MoeConfig& moe = *m.mutable_moe();
  moe.set_num_experts(16);
  moe.set_router_topk(1);
  moe.set_expert_ffn_hidden_size(8192);
  for (uint32_t i = 0; i < layers; ++i) moe.add_layer_pattern(i % 2);
  r.mutable_accelerator()->set_name("h100-80gb");
  r.set_num_gpus(gpus);
  r.set_seq_length(8192);
  r.set_global_batch_size(gpus);
  return r;
}

v1::Job JobFromText(const std::string& text) {
  v1::Job job;
  if (!google::protobuf::TextFormat::ParseFromString(text, &job)) {
    std::cerr << "test bug: not a Job in text format:\n" << text << "\n";
    std::abort();
  }
  return job;
}

v1::Job LargestInterleavedMoeJob() {
  v1::Job job = PaperJob("llama-3.1-8b", "h100-80gb", 1, 1, 4096, 1, 4096,
                         1024);
  job.mutable_training()->set_global_batch_size(0);
  v1::ModelConfig& m = *job.mutable_model();
  m.set_num_layers(65536);
  m.mutable_moe()->set_num_experts(8);
  m.mutable_moe()->set_router_topk(2);
  job.mutable_parallel()->set_virtual_pipeline_stages(16);
  return job;
}

v1::PlanRequest WorstCasePlanRequest(uint32_t max_micro_batch_size) {
  constexpr uint32_t kMostDivisible = 720720;  // 240 divisors
  v1::PlanRequest r;
  v1::ModelConfig* m = r.mutable_model();
  m->set_num_layers(kMostDivisible);
  m->set_hidden_size(kMostDivisible);
  m->set_ffn_hidden_size(kMostDivisible);
  m->set_num_attention_heads(kMostDivisible);
  m->set_num_query_groups(kMostDivisible);
  m->set_vocab_size(kMostDivisible);
  r.mutable_accelerator()->set_name("h100-80gb");
  r.mutable_accelerator()->set_gpus_per_node(kMostDivisible);
  r.set_num_gpus(kMostDivisible);
  r.set_seq_length(kMostDivisible * 2);
  r.set_global_batch_size(kMostDivisible);
  r.set_max_micro_batch_size(max_micro_batch_size);
  r.set_allow_cross_node_tp(true);
  return r;
}

v1::Job SmallModelLargeVocabularyJob(uint32_t tp, v1::Precision precision) {
  v1::Job job = JobFromText(R"pb(
    model {
      num_layers: 16
      hidden_size: 2048
      ffn_hidden_size: 8192
      num_attention_heads: 16
      num_query_groups: 8
      vocab_size: 256000
    }
    parallel { context_parallel: 1 pipeline_parallel: 1 }
    training {
      micro_batch_size: 1
      seq_length: 43008
      global_batch_size: 64
      fused_swiglu: true
      recompute {
        granularity: GRANULARITY_FULL
        method: METHOD_UNIFORM
        num_layers: 1
      }
    }
    accelerator { name: "h100-80gb" }
    num_gpus: 8
  )pb");
  job.mutable_parallel()->set_tensor_parallel(tp);
  job.mutable_training()->set_precision(precision);
  return job;
}

}  // namespace memgate::testing
