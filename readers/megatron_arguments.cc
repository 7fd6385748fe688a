#include "readers/megatron_arguments.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace memgate {
namespace {

constexpr Handling M = Handling::kModelled;
constexpr Handling P = Handling::kPartly;
constexpr Handling R = Handling::kRefused;

}  // namespace

const std::vector<MegatronArgument>& MegatronMemoryArguments() {
  static const auto* table = new std::vector<MegatronArgument>{
      // ---- Model shape: parameters and activations ----
      {"num-layers", true, M, "", "L: parameters and activations per stage"},
      {"hidden-size", true, M, "", "h"},
      {"ffn-hidden-size", true, M, "4h (8h/3 rounded to 64 with --swiglu)",
       "h_ffn"},
      {"num-attention-heads", true, M, "", "a"},
      {"group-query-attention", false, M, "", "enables --num-query-groups"},
      {"num-query-groups", true, M, "a", "k: K and V widths"},
      {"kv-channels", true, M, "h / a",
       "head_dim d: Q, K, V, output widths (parameters and activations)"},
      {"vocab-size", true, M, "from the tokenizer",
       "v, padded to --make-vocab-size-divisible-by x TP, with the "
       "tokenizers Megatron sizes by it (NullTokenizer, "
       "NullMultimodalTokenizer, TikTokenizer); the others read their own "
       "size and ignore it: Llama 2's and 3's counted by name, any other's "
       "taken to be --vocab-size (said in a note)"},
      {"make-vocab-size-divisible-by", true, M, "128",
       "vocabulary padding (1 to 65536), at each layout's TP"},
      {"padded-vocab-size", true, M, "padded --vocab-size",
       "v as given: no padding on top; a multiple of TP"},
      {"untie-embeddings-and-output-weights", false, M, "tied",
       "a separate LM head matrix on the last stage"},
      {"swiglu", false, M, "GeLU MLP",
       "SwiGLU (3 matrices) instead of GeLU (2, 4h_ffn/h activations); "
       "Megatron's fused SwiGLU and TransformerEngine's SwiGLU op keep "
       "6h_ffn/h (the activation's input and FC2's; the paper counts 8)"},
      {"quick-geglu", false, M, "GeLU MLP",
       "a gated MLP (3 matrices) run unfused: 10h_ffn/h activations (the "
       "FC1 output, the compiled quick-GeLU's output, the linear half plus "
       "offset, the FC2 input; measured); experts with biases run "
       "Megatron's fused bias-activation (6 B a unit, 10 with a clamp); "
       "with biases on and a dense MLP "
       "(dense layers, shared experts) refused without "
       "--no-bias-gelu-fusion (Megatron's MLP raises)"},
      {"squared-relu", false, M, "GeLU MLP",
       "relu(x)^2 (2 matrices, 4h_ffn/h activations as GeLU); refused with "
       "--swiglu, and with biases unless --no-bias-gelu-fusion (Megatron "
       "raises)"},
      {"use-fused-weighted-squared-relu", false, M, "off",
       "squared-ReLU experts weight their output by the probabilities in one "
       "fused op (keeps its input and the probabilities): counted as the "
       "unfused activation and multiply, an upper bound"},
      {"no-bias-gelu-fusion", false, M, "fused (off without biases)",
       "GeLU and squared ReLU keep 4h_ffn/h fused or not; quick-GeGLU "
       "experts with biases run unfused (glu() and the probabilities' "
       "multiply: 12 B a unit of expert width, 14 with a clamp, against the "
       "fused 6 and 10); lets --squared-relu and dense quick-GeGLU MLPs run "
       "with biases"},
      {"no-bias-dropout-fusion", false, M, "fused",
       "no change: the bias-dropout-add keeps its dropout mask fused or "
       "not; lets grouped-GEMM experts run with biases (TEGroupedMLP "
       "asserts the fusion off)"},
      {"no-bias-swiglu-fusion", false, P, "fused",
       "with --swiglu Megatron's unfused glu(): FC1's output, silu's, "
       "x_linear + glu_linear_offset (core 0.15 on; an upper bound before) "
       "and FC2's input, 10h_ffn/h (12 with --activation-func-clamp-value) "
       "in dense MLPs and shared experts, and the routed experts' glu() "
       "likewise; no change under --use-te-activation-func or the op fuser's "
       "SwiGLU, refused with the op fuser beside shared experts (two counts "
       "memgate does not keep apart); otherwise no effect"},
      {"normalization", true, P, "LayerNorm",
       "LayerNorm (weight + bias) or RMSNorm (weight); others refused"},
      {"disable-bias-linear", false, M, "biases on",
       "without it every linear layer has a bias; on MoE layers the "
       "router's and each expert's FC1 and FC2 biases, and on the "
       "GroupedTensor experts FC2's repeated in fp32 to every routed copy "
       "(4h B a copy); with --moe-grouped-gemm refused without "
       "--no-bias-dropout-fusion and with --moe-use-legacy-grouped-gemm, "
       "beside shared experts, and with SwiGLU experts without "
       "--moe-grouped-gemm unless --no-bias-swiglu-fusion (Megatron "
       "asserts or raises)"},
      {"add-qkv-bias", false, M, "off", "a bias on the QKV projection"},
      {"position-embedding-type", true, P, "learned_absolute",
       "learned_absolute (max_position_embeddings x h on the first stage) "
       "or rope, yarn, mrope / none (no parameters); yarn and mrope run "
       "Megatron's unfused RoPE (arguments.py turns the fusion off): each "
       "layer keeps cos and sin for Q and for K, 4 x s/c x d_rot (mrope: "
       "x b); relative refused"},
      {"no-rope-fusion", false, M, "fused (TransformerEngine's RoPE)",
       "rope positions through Megatron's unfused RoPE: cos and sin kept "
       "for Q and for K in every layer, 4 x s/c x d_rot in the activations' "
       "dtype (measured)"},
      {"use-rotary-position-embeddings", false, M, "",
       "legacy spelling of --position-embedding-type rope"},
      {"no-position-embedding", false, M, "",
       "with rope no effect; otherwise Megatron refuses it, and so does "
       "memgate"},
      {"max-position-embeddings", true, M, "seq-length",
       "rows of the learned position embedding; below --seq-length "
       "refused, as Megatron asserts"},
      {"seq-length", true, M, "", "s"},
      {"encoder-seq-length", true, M, "seq-length",
       "s when --seq-length is absent (Megatron's other spelling); refused "
       "beside it, as Megatron asserts"},
      {"tokenizer-type", true, M, "",
       "whether --vocab-size sizes the tokenizer; the vocabulary when "
       "--vocab-size is absent"},
      {"tokenizer-model", true, M, "",
       "the vocabulary of a Llama 2 or 3 tokenizer, whatever --vocab-size "
       "says; without --vocab-size, one naming another family than the "
       "catalog model of these dimensions leaves the vocabulary unknown "
       "(refused)"},
      {"legacy-tokenizer", false, M, "off",
       "the legacy NullTokenizer adds an end-of-document token: v = "
       "--vocab-size + 1"},
      // ---- Precision ----
      {"bf16", false, M, "fp32",
       "bf16 weights (2 B), fp32 gradients (4 B), fp32 master + Adam (12 B); "
       "2-byte activations"},
      {"fp16", false, M, "fp32",
       "fp16 weights and gradients (2 + 2 B), fp32 master and Adam "
       "(12 B); the step's fp32 gradient copy (4 B) once the activations "
       "are freed; 2-byte activations"},
      {"grad-reduce-in-bf16", false, M, "off",
       "bf16 gradients (2 B); the optimizer step copies its share of them "
       "to fp32 (4 B), beside the states once the activations are freed "
       "and through an evaluation's forward"},
      {"accumulate-allreduce-grads-in-fp32", false, P, "off (on with bf16)",
       "implied by --bf16; with --fp16 refused (not modelled)"},
      {"use-precision-aware-optimizer", false, P, "off",
       "TransformerEngine FusedAdam with the dtypes below; with --bf16 "
       "only (refused otherwise); the master weight of a bf16 weight is a "
       "2-byte remainder (store_param_remainders)"},
      {"main-grads-dtype", true, M, "fp32",
       "gradient buffer: fp32 4 B, bf16 2 B (precision-aware optimizer); "
       "bf16 with fp32 main params and an fp8 recipe other than delayed "
       "(no CPU offload) makes the step copy the share to fp32 (4 B) once "
       "the activations are freed"},
      {"main-params-dtype", true, M, "fp32",
       "master weights: fp32 (4 B, or a 2 B remainder), fp16 2 B"},
      {"exp-avg-dtype", true, M, "fp32", "Adam m: fp32 4, bf16/fp16 2, fp8 1 B"},
      {"exp-avg-sq-dtype", true, M, "fp32",
       "Adam v: fp32 4, bf16/fp16 2, fp8 1 B"},
      {"fp8-format", true, M, "off",
       "TransformerEngine fp8: +2 B per GEMM weight (rowwise and columnwise "
       "fp8 copies; experts', MLA's and MTP's too); GEMM inputs saved in "
       "1 B (the norms' outputs, MLA's latents, the experts' inputs, the "
       "second MLP GEMMs' inputs), an fp8 copy of the attention output "
       "added; each local expert's rows padded to 16 (MXFP8 32)"},
      {"fp8", true, M, "off", "TransformerConfig's spelling of --fp8-format"},
      {"fp8-recipe", true, P, "delayed",
       "delayed, tensorwise, blockwise, mxfp8 (scales: 1/32 B an element "
       "with mxfp8, an activation element with blockwise); "
       "custom refused; refused on a catalog GPU TransformerEngine does "
       "not run it on (fp8 from Ada, blockwise from Hopper, mxfp8 on "
       "Blackwell)"},
      {"fp8-amax-history-len", true, M, "1",
       "delayed recipe: each fp8 module's amax history, 4 B a row and a "
       "scale for each of 5 quantizers a GEMM (experts': one GEMM a local "
       "expert), and under recomputation a copy of the forward's 3 for each "
       "micro-batch in flight; no effect with the other recipes; 0 refused "
       "(TransformerEngine raises)"},
      {"fp8-param-gather", false, M, "off",
       "GEMM weights kept in fp8 only: no bf16 copy beside the fp8 pair"},
      {"fp8-output-proj", false, M, "off",
       "the LM head in MXFP8 (needs --fp8-recipe mxfp8): the rowwise and "
       "columnwise fp8 copies of its h x v/t weight on the last stage, "
       "beside the bf16 weight even with --fp8-param-gather, and its input "
       "counted in bf16 (upper bounds); refused with tied embeddings on one "
       "stage, --output-logit-dtype and --defer-embedding-wgrad-compute "
       "(Megatron raises)"},
      {"first-last-layers-bf16", false, M, "off",
       "under fp8 the model's first and last layers (counts below) run in "
       "bf16: their activations counted in bf16 where that is more, a "
       "second unquantized set of TE userbuffers with --tp-comm-overlap; "
       "their fp8 weight copies still counted (an over-count); refused "
       "with the delayed recipe and beyond L / p layers (Megatron raises); "
       "no effect without fp8"},
      {"num-layers-at-start-in-bf16", true, M, "1",
       "with --first-last-layers-bf16: the first layers kept in bf16"},
      {"num-layers-at-end-in-bf16", true, M, "1",
       "with --first-last-layers-bf16: the last layers kept in bf16"},
      {"fp4-format", true, M, "off",
       "e2m1: TransformerEngine's NVFP4 on the layers fp8 would run, "
       "counted at MXFP8's bytes (4-bit elements and a scale per 16 take "
       "about half: an upper bound), experts' rows padded to 128; "
       "Blackwell only; not beside --fp8-format (Megatron raises)"},
      {"fp4-recipe", true, P, "nvfp4", "nvfp4; custom refused"},
      {"fp4-param-gather", false, R, "off",
       "NVFP4 weights kept in fp4 (the distributed optimizer's NVFP4 "
       "shards): not modelled"},
      {"te-precision-config-file", true, R, "",
       "per-module precision overrides from a file: not modelled"},
      {"fp32-residual-connection", false, R, "off",
       "an fp32 residual stream: not modelled"},
      {"keep-fp8-transpose-cache", false, M, "off",
       "the columnwise (transpose) fp8 weight copies, counted under fp8 "
       "either way"},
      {"keep-fp8-transpose-cache-when-using-custom-fsdp", false, M, "off",
       "older name of --keep-fp8-transpose-cache (core 0.12 to 0.14)"},
      {"output-logit-dtype", true, M, "input dtype",
       "no change: the fp32 softmax of the cross-entropy is counted either "
       "way"},
      {"fp16-lm-cross-entropy", false, P, "off",
       "the cross-entropy's softmax counted in fp32 (an upper bound)"},
      {"disable-jit-fuser", false, M, "compiled",
       "Megatron's @jit_fuser functions run eagerly: quick-GeGLU's "
       "quick_gelu keeps its sigmoid too (12h_ffn/h, not 10); squared ReLU "
       "and the L2 norm keep the same bytes either way"},
      {"cross-entropy-loss-fusion", false, M, "off",
       "no change to what is stored (the loss's fp32 softmax, counted either "
       "way); Megatron's native fused loss makes a new fp32 gradient of the "
       "logits in backward, s x b x v / t x 4 B, counted on the last stage "
       "(measured on an H100: the step's peak 1.96 GiB above the unfused "
       "loss's at 4k x 128k; 1.06x the estimate with it counted)"},
      {"cross-entropy-fusion-impl", true, M, "native",
       "native: as --cross-entropy-loss-fusion says; te (which Megatron "
       "d98e8a6 refuses with the fusion on): TransformerEngine's loss keeps "
       "its gradient in the 16-bit logits' place, under the fp32 softmax "
       "counted (an upper bound)"},
      {"fp4", true, M, "off",
       "TransformerConfig's spelling of --fp4-format"},
      // ---- Parallelism and sharding ----
      {"tensor-model-parallel-size", true, M, "1", "t"},
      {"pipeline-model-parallel-size", true, M, "1", "p"},
      {"context-parallel-size", true, M, "1", "c"},
      {"tensor-parallel-num-weight-shards", true, P, "TP",
       "equal to --tensor-model-parallel-size only; more shards turn on "
       "generalized TP, a parallel axis of its own (world = TP x GTP x CP x "
       "PP x DP) whose weights are re-gathered per use: refused"},
      {"hybrid-context-parallel", false, R, "off",
       "packed variable-length samples balanced over DP x CP, up to "
       "--max-seqlen-per-dp-cp-rank tokens a rank: not modelled"},
      {"sequence-parallel", false, M, "off",
       "splits the hidden-sized activations over t"},
      {"tp-comm-overlap", false, M, "off",
       "TransformerEngine's userbuffers on every GPU: 12 buffers of (s x b "
       "/ c) x h (the 8 all-gathers' in fp8 under fp8) and their "
       "communicators' flags; needs --sequence-parallel (Megatron asserts)"},
      {"tp-comm-overlap-cfg", true, M, "TE's defaults",
       "with --tp-comm-overlap, a YAML memgate does not read: every buffer "
       "counted at its largest (a bf16 reduce-scatter ring, (2t - 1) / t of "
       "the buffer), an upper bound"},
      {"use-distributed-optimizer", false, M, "off",
       "shards optimizer states over d x c"},
      {"decoder-first-pipeline-num-layers", true, M, "even split",
       "layers of the first stage"},
      {"decoder-last-pipeline-num-layers", true, M, "even split",
       "layers of the last stage; with interleaving every rank's layers "
       "split evenly over its v chunks (a multiple of v, as Megatron "
       "requires)"},
      {"num-layers-per-virtual-pipeline-stage", true, M, "off",
       "interleaved 1F1B: v = L / (p x n) model chunks per rank (n its "
       "layers), each rank holding 2(p - r - 1) + (v - 1)N + 1 chunks in "
       "flight (N the micro-batch group below)"},
      {"num-virtual-stages-per-pipeline-rank", true, M, "off",
       "interleaved 1F1B with v model chunks per rank"},
      {"microbatch-group-size-per-virtual-pipeline-stage", true, M, "p",
       "interleaved 1F1B: N micro-batches a chunk in a row, (v - 1)N of "
       "the warm-up forwards (N > p holds more); p <= N <= m and m % N 0 "
       "or at least p, as Megatron's schedules.py raises otherwise; no "
       "effect without interleaving"},
      {"pipeline-model-parallel-layout", true, M, "off",
       "the layers of every (virtual) stage, e.g. Et|(tt|)*30mL: uneven "
       "interleaved chunks; 'm' (MTP layers, --mtp-num-layers of them) "
       "beside 'L' on the last stage, or standalone in the last chunk of "
       "a rank before it (Et*3|(tt|)*29,m|L): that rank holds the MTP "
       "layers and an embedding of their own, the loss stage their "
       "logits"},
      {"account-for-embedding-in-pipeline-split", false, M, "off",
       "the embedding counts as a layer: (L + 1 [+ 1]) / (p x v) a "
       "(virtual) stage, rank 0's first one transformer layer fewer"},
      {"account-for-loss-in-pipeline-split", false, M, "off",
       "the loss counts as a layer: the last rank's last (virtual) stage "
       "one transformer layer fewer"},
      {"cp-comm-type", true, M, "p2p",
       "with CP: p2p as the paper; all_gather holds the whole sequence's "
       "keys, values and their gradients while a layer's attention runs "
       "backward (about 3.5 copies, above the stored activations); a2a "
       "and a2a+p2p keep the attention output before and after its "
       "all-to-all (2sbh_q/(tc) more a layer, not with core attention "
       "recomputed), and need the TP rank's heads divisible by their "
       "all-to-all; one type or one a layer, all alike (with CP, types that "
       "differ by layer are refused, and 'allgather': TransformerEngine "
       "raises on it; without CP no layer uses the type: read past with a "
       "note)"},
      {"hierarchical-context-parallel-sizes", true, M, "off",
       "must multiply to the CP size (Megatron asserts); with a2a+p2p two "
       "sizes, the first the all-to-all's"},
      {"use-torch-fsdp2", false, R, "off",
       "torch FSDP2 keeps fp32 sharded parameters and gathers bf16 copies: "
       "not modelled (Megatron-FSDP is)"},
      {"use-megatron-fsdp", false, M, "off",
       "Megatron-FSDP: states sharded over d x c by "
       "--data-parallel-sharding-strategy, plus the un-sharded weights / "
       "gradients its queues hold (at least 10^9 parameters' gradients "
       "under ZeRO-2/3 unless double-buffered); PP 1 only"},
      {"fsdp-double-buffer", false, M, "off",
       "Megatron-FSDP holds two FSDP units un-sharded at most"},
      {"megatron-fsdp-max-pool-double-buffer", false, M, "off",
       "the double buffer sized by the largest unit: two units at most"},
      {"use-nccl-ub", false, M, "off",
       "with Megatron-FSDP turns the double buffer on: two units at most"},
      {"megatron-fsdp-version", true, P, "1",
       "1 only; version 2 (its own buffers) refused"},
      {"ddp-bucket-size", true, P, "max(4e7, 1e6 x DP x CP)",
       "with the distributed optimizer: the first pipeline rank's first "
       "chunk in buckets of this many elements (as --overlap-grad-reduce "
       "cuts it; counted so without it too, an upper bound), each padded at "
       "its end to a multiple of lcm(DP, 128); with Megatron-FSDP "
       "optim_grads and no communication unit: at most 10^9 (the unit's "
       "floor), larger refused"},
      {"ddp-num-buckets", true, P, "off",
       "with the distributed optimizer: buckets of the rank's parameters "
       "over N (as --overlap-grad-reduce cuts them; counted so without it "
       "too), each padded at its end; not beside "
       "--ddp-bucket-size (Megatron asserts); with Megatron-FSDP optim_grads "
       "and no communication unit: refused (the queue follows the model's "
       "size)"},
      {"ddp-pad-buckets-for-high-nccl-busbw", false, M, "off",
       "with the distributed optimizer each bucket's end padded to a "
       "multiple of lcm(DP, 128, 2^16) in the gradient and parameter "
       "buffers"},
      {"suggested-communication-unit-size", true, M, "auto (>= 10^9)",
       "Megatron-FSDP's reduce-scatter queue (un-sharded gradients) and "
       "half of it prefetched weights, in parameters"},
      {"use-custom-fsdp", false, M, "off", "older name of --use-megatron-fsdp"},
      {"data-parallel-sharding-strategy", true, M,
       "no_shard (core_r0.12), optim_grads_params (later)",
       "no_shard, optim (ZeRO-1), optim_grads (ZeRO-2), optim_grads_params "
       "(ZeRO-3); must be given with FSDP (its default changed)"},
      {"megatron-fsdp-main-params-dtype", true, P, "fp32",
       "fp32 (4 B master weights) only; others refused"},
      {"megatron-fsdp-main-grads-dtype", true, P, "auto",
       "auto counted as the training precision's gradients; fp32 counted "
       "in fp32 (4 B) whatever the precision (refused with --fp16); bf16 / "
       "fp16 refused"},
      {"ddp-param-name-patterns-for-fp32-local-accumulation", true, M,
       "none",
       "an fp32 gradient of every matched parameter beside the 16-bit buffer "
       "(4 B, un-sharded); every parameter counted unless the pattern is "
       "'all' (an upper bound); refused with fp32 gradient reduction "
       "(Megatron asserts)"},
      {"ddp-reduce-scatter-with-fp32-accumulation", false, M, "off",
       "the all-to-all's scratch copies of the gradient buckets: a copy of "
       "the stage's whole gradient buffer (all buckets live, as before core "
       "0.18) from the last micro-batch's backward to the step's end, above "
       "that micro-batch's activations (all of them when interleaved); no "
       "effect with fp32 gradient reduction (Megatron turns it off), "
       "without the distributed optimizer or with Megatron-FSDP; refused "
       "with --num-distributed-optimizer-instances above 1 (Megatron "
       "asserts)"},
      {"megatron-fsdp-grad-comm-dtype", true, P, "auto",
       "the un-sharded buckets gradients are reduced in: with optim_grads / "
       "optim_grads_params fp32 counts the gradients in fp32 (4 B), bf16 / "
       "fp16 change nothing; with no_shard / optim the gradient buffer's "
       "own dtype (any under bf16 with fp32 reduction), others refused (a "
       "copy of each bucket)"},
      {"outer-dp-sharding-strategy", true, P, "no_shard",
       "no_shard only; optim (hybrid FSDP) refused"},
      {"num-distributed-optimizer-instances", true, M, "1",
       "N copies of the distributed optimizer, each sharding the optimizer "
       "states over d x c / N ranks (experts: expert-DP / N); needs "
       "--use-distributed-optimizer, refused with Megatron-FSDP (hybrid "
       "FSDP)"},
      {"optimizer-cpu-offload", false, M, "off",
       "the offloaded share of the optimizer (fp32 copies, Adam states) "
       "leaves the GPU; needs --use-precision-aware-optimizer"},
      {"optimizer-cuda-graph", false, R, "off",
       "the optimizer step captured in a CUDA graph keeps its temporaries "
       "in the graph's memory pool through forward and backward: not "
       "modelled"},
      {"optimizer-offload-fraction", true, M, "1.0",
       "share of the optimizer in host memory"},
      {"distribute-saved-activations", false, M, "off",
       "full recomputation's stored layer inputs split over TP (2sbh/t "
       "each); needs --recompute-granularity full and TP > 1 without "
       "--sequence-parallel (Megatron refuses it otherwise)"},
      {"cpu-offloading-num-layers", true, R, "0",
       "activation offloading to host memory: not modelled"},
      {"fine-grained-activation-offloading", false, R, "off",
       "activation offloading to host memory: not modelled"},
      {"offload-modules", true, R, "", "activation offloading: not modelled"},
      {"cuda-graph-impl", true, P, "none",
       "none only; CUDA graphs hold static input/output buffers (refused)"},
      {"enable-cuda-graph", false, R, "off",
       "CUDA graphs hold static buffers: not modelled"},
      {"external-cuda-graph", false, R, "off",
       "CUDA graphs hold static buffers: not modelled"},
      // ---- Activations ----
      {"micro-batch-size", true, M, "1", "b"},
      {"eval-micro-batch-size", true, M, "--micro-batch-size",
       "an evaluation's micro-batch: its no-grad forward, bounded by every "
       "layer's input, one layer's activations and the LM head's at that "
       "micro-batch, checked beside the model states and the step's fp32 "
       "gradient copies (which outlive the step) in what a process can "
       "allocate"},
      {"eval-iters", true, M, "100",
       "0 without --full-validation: Megatron never evaluates (the "
       "evaluation's check dropped)"},
      {"full-validation", false, M, "off",
       "Megatron evaluates whatever --eval-iters says (the evaluation's "
       "check kept)"},
      {"global-batch-size", true, M, "b x d",
       "m = gbs / (b x d) caps the micro-batches a stage holds; absent, "
       "Megatron's b x d (one micro-batch a step) at the job's d"},
      {"decrease-batch-size-if-needed", false, M, "off",
       "--global-batch-size rounded down to a multiple of b x d, as Megatron "
       "does (refused where that leaves none)"},
      {"step-batch-size-schedule", true, M, "off",
       "the global batch changes over training: estimated at the most "
       "micro-batches a stage can hold; refused with --global-batch-size or "
       "--decrease-batch-size-if-needed (Megatron raises)"},
      {"hidden-dropout", true, M, "0.1",
       "above 0: 1-byte masks after attention, MLP and embedding"},
      {"attention-dropout", true, M, "0.1",
       "above 0 without FlashAttention: the a*s^2*b mask and output"},
      {"no-create-attention-mask-in-dataloader", false, M, "",
       "without it the dataloader's b x s x s bool mask is counted on the "
       "first and last stages (s/c rows a context-parallel rank, kept per "
       "micro-batch in flight under recomputation)"},
      {"dataloader-inter-document-masking", false, M, "off",
       "no dataloader attention mask (Megatron turns it off)"},
      {"attention-backend", true, M, "auto",
       "flash / fused / auto: no s^2 term; unfused (TE's) / local "
       "(Megatron's own, as --transformer-impl local): the softmax output "
       "is stored; auto runs TE's unfused attention where no "
       "FlashAttention 2 or cuDNN kernel trains the precision, head "
       "dimensions and GPU (fp32; over 256, over 192 on an L40S; not "
       "multiples of 8, where flash says FlashAttention 3 runs them), and "
       "flash / fused are refused where TE has no such kernel"},
      {"flash-attention-version", true, M, "",
       "3 or 4 pins FlashAttention 3 / 4 and turns FlashAttention 2 off "
       "(Megatron sets NVTE_FLASH_ATTN_V2=0): under --attention-backend "
       "auto cuDNN's fused attention where cuDNN trains the heads on the "
       "GPU, the unfused attention (counted) elsewhere, as with "
       "NVTE_FLASH_ATTN=0 (FlashAttention 3 / 4 not assumed installed); 2: "
       "no change; others refused"},
      {"softmax-type", true, P, "vanilla",
       "off-by-one / learnable (attention sinks; learnable: a logit a head, "
       "a/t a layer): with --attention-backend fused no s^2 term (CP > 1 only over --cp-comm-type a2a), with "
       "unfused / local / fp32 the unfused attention's; refused with flash "
       "(no backend) and with auto (cuDNN's version picks fused or unfused)"},
      {"window-size", true, M, "none",
       "sliding-window attention (model.sliding_window) on the layers "
       "--window-attn-skip-freq leaves windowed: nothing stored of its own, "
       "but TransformerEngine's cuDNN attention runs no window with "
       "attention dropout, so with FlashAttention off or attention sinks "
       "those layers run unfused (the s x s scores, counted on every layer)"},
      {"window-attn-skip-freq", true, M, "every layer windowed",
       "which layers --window-size windows: an integer N all but every Nth, "
       "a list where it says 1 (at least --num-layers long)"},
      {"qk-clip", false, P, "off",
       "TE returns the largest attention logit, which FlashAttention "
       "cannot: with --attention-backend fused no s^2 term, with unfused "
       "/ local / fp32 the unfused attention's; refused with flash (no "
       "backend) and with auto (cuDNN's version picks fused or unfused)"},
      {"log-max-attention-logit", false, P, "off",
       "as --qk-clip: TE returns the largest attention logit"},
      {"transformer-impl", true, M, "transformer_engine",
       "local: Megatron's own unfused core attention (its softmax kernel up "
       "to s = 4096, then bf16 unless --attention-softmax-in-fp32) and "
       "torch's norms apart from the linear layers: recomputing layernorm "
       "drops both norms' outputs, and a QK-norm's K input keeps the whole "
       "QKV output (measured)"},
      {"deterministic-mode", false, M, "off",
       "TransformerEngine's deterministic attention (Megatron requires "
       "NVTE_ALLOW_NONDETERMINISTIC_ALGO=0 with it): cuDNN's fused attention "
       "does not train below sm90 then, so with FlashAttention off "
       "(NVTE_FLASH_ATTN=0, --attention-backend fused) an A100 or L40S runs "
       "the unfused attention (its scores counted) or, with fused, none "
       "(refused)"},
      {"use-flash-attn", false, M, "",
       "no change: the legacy models' switch, which Megatron-Core ignores "
       "(--attention-backend and TransformerEngine decide)"},
      {"no-masked-softmax-fusion", false, P, "fused",
       "no change (TransformerEngine's attention ignores it; Megatron's "
       "local softmax without its kernel runs in bf16), except with local "
       "attention and --attention-softmax-in-fp32, where every softmax "
       "would run in fp32: refused"},
      {"attention-softmax-in-fp32", false, M, "off",
       "with Megatron's local attention (--transformer-impl local, "
       "--attention-backend local) its softmax's fp32 output kept where its "
       "kernel cannot run (s > 4096, s not a multiple of 4, b x a/t not of "
       "4); no change with TransformerEngine's attention (its unfused "
       "softmax runs in fp32 there anyway, counted; the flag is not passed "
       "to it) or in fp32 training"},
      {"apply-query-key-layer-scaling", false, M, "off",
       "as --attention-softmax-in-fp32, which it turns on (TransformerEngine "
       "applies the scaling in fp16 only, by NVTE_APPLY_QK_LAYER_SCALING, "
       "which Megatron requires to match)"},
      {"recompute-activations", false, M, "off",
       "selective recomputation of core attention"},
      {"recompute-granularity", true, M, "off",
       "selective: drops the recomputed modules' activations (core "
       "attention's s^2 terms by default) and holds one layer's again at "
       "its backward, once a stage (on the model's last stage, in the room "
       "the LM head's released activations leave); full: stores only "
       "layer inputs, plus the recomputed layers' working set"},
      {"recompute-method", true, M, "",
       "uniform: one input per group of N layers; block: the first N "
       "layers"},
      {"recompute-num-layers", true, M, "",
       "N; with MTP layers under method uniform it must be 1 (Megatron-Core "
       "0.14 on asserts it; earlier releases do not recompute MTP layers, "
       "and memgate counts them whole)"},
      {"recompute-modules", true, P, "core_attn",
       "core_attn, mlp, moe, moe_act, shared_experts, layernorm (MoE "
       "layers' pre-MLP norm output), mla_up_proj (MLA's expanded Q, K, V "
       "not stored)"},
      {"rampup-batch-size", true, P, "off",
       "estimated at the final --global-batch-size (the largest m)"},
      // ---- Optimizer ----
      {"optimizer", true, P, "adam",
       "adam (m, v: 8 B), sgd (momentum: 4 B), lion (momentum: 4 B; from "
       "core 0.18.0 on the word embeddings, LM head, norms and biases take "
       "Adam's 8 B, counted so unless --megatron-core names 0.17; its "
       "step's update, two fp32 copies of the largest parameter, beside the "
       "states once the activations are freed) or muon (momentum: 4 B a "
       "matrix, --muon-scalar-optimizer's states for the rest; at the step "
       "its largest matrix's Newton-Schulz copies, --muon-tp-mode); lion "
       "and muon with --use-distributed-optimizer run Megatron's layer-wise "
       "distributed optimizer from core 0.18.0 (its matrices whole in DP "
       "shards, the buffers padded to DP x a bucket's fullest shard, packed "
       "as the release packs them; earlier releases assert); dist_muon "
       "(0.16, 0.17's ping-pong path), --fp16 (Megatron raises) and others "
       "refused"},
      {"no-use-layer-wise-param-layout", false, P, "the layout",
       "under lion or muon with --use-distributed-optimizer: the legacy "
       "ping-pong layer-wise path, refused (not modelled); nothing under "
       "adam or sgd"},
      {"sgd-momentum", true, M, "0.9", "0: SGD keeps no state"},
      {"muon-tp-mode", true, M,
       "blockwise through core 0.19, duplicated after",
       "under --optimizer muon: duplicated gathers each tensor-parallel "
       "matrix whole at the step (its shards, their concatenation and the "
       "Newton-Schulz working set of the whole matrix); blockwise and "
       "distributed work on the shard; unset, the release's default "
       "(duplicated without --megatron-core)"},
      {"muon-fp32-matmul-prec", true, M, "medium",
       "under --optimizer muon: high (or low, which torch does not know) "
       "keeps the Newton-Schulz iteration in fp32, medium runs it in bf16"},
      {"muon-nesterov", false, M, "off",
       "under --optimizer muon: one more fp32 shard at the step"},
      {"muon-no-split-qkv", false, M, "split",
       "under --optimizer muon: QKV orthogonalized whole, not as Q, K, V"},
      {"muon-scalar-optimizer", true, M, "adam",
       "under --optimizer muon: the embeddings', LM head's, norms' and "
       "biases' optimizer: adam (m, v: 8 B) or lion (4 B; its update at the "
       "step), lion counted where --megatron-core names 0.17, 0.18.2 or "
       "0.19 on (core 0.18.0 reads it and keeps Adam)"},
      // ---- Refused: architectures memgate does not model yet ----
      {"num-experts", true, M, "dense",
       "E routed experts a MoE layer: E / EP experts a rank, each split "
       "over ETP; their optimizer states over world / (ETP x EP x PP); "
       "GeLU experts with biases refused without --no-bias-gelu-fusion "
       "(Megatron's experts fuse SwiGLU and quick-GeGLU only)"},
      {"moe-ffn-hidden-size", true, M, "--ffn-hidden-size",
       "each routed expert's FFN width"},
      {"moe-router-topk", true, M, "2",
       "k: routed token copies, their expert activations"},
      {"moe-layer-freq", true, M, "1",
       "which layers are MoE: every N-th, or a list such as "
       "([0]*3+[1]*58)"},
      {"moe-shared-expert-intermediate-size", true, M, "none",
       "shared experts: a dense MLP of that width over TP; refused with "
       "biases on (SharedExpertMLP asserts)"},
      {"moe-input-jitter-eps", true, M, "off",
       "the router's input times uniform noise: the noise and the "
       "jittered input kept, 2 x tokens x h x 2 B a MoE layer"},
      {"moe-router-score-function", true, M, "softmax",
       "what the router keeps a token: softmax after the top-k 12k B; a "
       "sigmoid (or --moe-router-pre-softmax) every expert's fp32 score, "
       "4E B; sqrtsoftplus 8E B (moe_terms.cc [RS])"},
      {"moe-router-pre-softmax", false, M, "off",
       "a softmax over every expert before the top-k: 4E B a token kept"},
      {"moe-router-fusion", false, M, "off",
       "TransformerEngine's fused router: the routing map and fp32 scores, "
       "5E B a token, whatever the score function"},
      {"moe-router-num-groups", true, M, "none",
       "with --moe-router-group-topk, group-limited routing: the mask of "
       "every expert and the group top-k indices kept (unfused); groups "
       "divide the experts (Megatron asserts)"},
      {"moe-router-group-topk", true, M, "none",
       "the groups a token may route to: needs --moe-router-num-groups, "
       "at most it (Megatron raises)"},
      {"moe-router-load-balancing-type", true, M, "aux_loss",
       "with --moe-aux-loss-coeff above 0, aux_loss / seq_aux_loss / "
       "global_aux_loss score every expert once more, kept (4E B a token; "
       "8E for sqrtsoftplus unfused); sinkhorn keeps a softmax over every "
       "expert; quantile_balancing and none nothing more"},
      {"moe-aux-loss-coeff", true, M, "0",
       "0: no load-balancing loss; above 0 its scores kept (see "
       "--moe-router-load-balancing-type)"},
      {"moe-z-loss-coeff", true, M, "none",
       "given (any value): the z-loss's logsumexp keeps the router's logits, "
       "E fp32 a token"},
      {"moe-router-enable-expert-bias", false, M, "off",
       "E fp32 buffers a layer; needs a sigmoid or sqrtsoftplus score "
       "function (Megatron raises)"},
      {"moe-permute-fusion", false, M, "off",
       "no change: TransformerEngine's row map (2E + 1 int32 a token) and "
       "the unfused permutation's argsort (8E B) are counted as one bound"},
      {"moe-shared-expert-overlap", false, M, "off",
       "the shared experts beside the dispatcher, their TP communication "
       "done by hand: with sequence parallelism FC1 saves the all-gathered "
       "input (s x b / c tokens x h) beside the shard; needs the alltoall "
       "or flex dispatcher, not with the shared_experts recomputation "
       "(Megatron raises)"},
      {"moe-shared-expert-gate", false, M, "off",
       "h parameters a layer, and the shared output kept for the gate's "
       "multiply (tokens x h x 2 B a layer)"},
      {"expert-model-parallel-size", true, M, "1", "EP"},
      {"expert-tensor-parallel-size", true, M, "TP", "ETP"},
      {"expert-tensor-parallel-num-weight-shards", true, P, "ETP",
       "equal to the expert TP size only; more shards turn on the experts' "
       "generalized TP (an axis of its own, weights re-gathered per use): "
       "refused"},
      {"moe-token-dispatcher-type", true, M, "allgather",
       "the dispatch working set: all-to-all buffers, or the hidden states "
       "gathered over EP x ETP; flex: as alltoall, plus DeepEP's buffers"},
      {"moe-flex-dispatcher-backend", true, P, "deepep",
       "deepep: its NVLink and RDMA buffers and workspace on every GPU of "
       "an MoE stage (sized by EP x ETP, h and the SMs); hybridep, ncclep "
       "refused"},
      {"moe-enable-deepep", false, M, "off",
       "older spelling of the deepep backend (needs flex)"},
      {"moe-flex-dispatcher-num-sms", true, M, "20",
       "SMs DeepEP uses: its buffers grow with them"},
      {"moe-deepep-num-sms", true, M, "20",
       "older name of --moe-flex-dispatcher-num-sms"},
      {"moe-expert-capacity-factor", true, M, "dropless",
       "caps (with padding: fixes) each expert's tokens at that multiple "
       "of its share"},
      {"moe-pad-expert-input-to-capacity", false, M, "off",
       "every expert computes its full capacity"},
      {"moe-router-padding-for-fp8", false, M, "off",
       "each local expert's rows padded to the fp8 alignment by the router "
       "rather than by the grouped MLP: counted under fp8 either way (at "
       "most 15, MXFP8 31, more token copies an expert)"},
      {"moe-router-padding-for-quantization", false, M, "off",
       "the same as --moe-router-padding-for-fp8"},
      {"moe-router-dtype", true, P, "model dtype",
       "router scores counted in fp32 (an upper bound); fp64 refused"},
      {"moe-layer-recompute", false, M, "off",
       "MoE blocks keep only their input (as --recompute-modules moe)"},
      {"moe-apply-probs-on-input", false, M, "off",
       "the routing probabilities weight the expert input (top-1 only): "
       "the multiply keeps the unweighted input, 2h B a routed copy"},
      {"moe-mlp-glu-interleave-size", true, M, "off",
       "the experts' gate and linear halves interleaved: the unfused "
       "glu() keeps its output once more for the probabilities' multiply "
       "and x_linear + offset as a tensor of its own (2 + 2 B a unit of "
       "expert FFN)"},
      {"use-te-activation-func", false, M, "off",
       "TransformerEngine's activation op, which keeps only its input: a "
       "dense SwiGLU MLP keeps 6 B a unit of FFN as the fused kernel; in "
       "the experts, with the probabilities applied after it, its output "
       "is kept once more for their multiply (8 B a unit of expert FFN). "
       "Refused where Megatron raises: with the bias-activation fusion on "
       "(--swiglu needs --no-bias-swiglu-fusion), with --squared-relu or "
       "--quick-geglu; and with --swiglu under --transformer-impl local, "
       "whose spec has no TE module (the MLP fails on the shape)"},
      {"moe-grouped-gemm", false, M, "off",
       "grouped GEMMs for the local experts (their activations as "
       "sequential experts'); under Lion or Muon with "
       "--use-distributed-optimizer each layer's expert FC1s register "
       "before their FC2s, which moves the first rank's DDP buckets and "
       "the layer-wise buffers' padding; --recompute-modules moe_act "
       "needs it (Megatron refuses it without)"},
      {"moe-use-grouped-tensor", false, M, "off",
       "TransformerEngine's GroupedTensor experts: each local expert's "
       "tokens padded to a multiple of 256 rows in any precision (up to 255 "
       "more copies an expert); needs --moe-grouped-gemm (Megatron raises)"},
      {"use-transformer-engine-op-fuser", false, M, "off",
       "TransformerEngine's fused ops: the dense MLP keeps what the fused "
       "SwiGLU keeps; with --moe-grouped-gemm the experts take the "
       "GroupedTensor path (256-row padding, as --moe-use-grouped-tensor), "
       "which Megatron asserts runs without expert TP and without "
       "--moe-apply-probs-on-input"},
      {"activation-func-clamp-value", true, M, "off",
       "an unfused glu() (quick-GeGLU, the experts' interleaved halves) "
       "clamps both halves into tensors of their own and keeps the "
       "gate's: 2 B more a unit of FFN width; the fused kernels clamp "
       "inside (no change)"},
      {"moe-use-legacy-grouped-gemm", false, M, "off",
       "the legacy GroupedMLP (removed in later Megatron): its unfused "
       "activation keeps its output once more for the probabilities' "
       "multiply (2 B a unit of expert FFN)"},
      {"moe-single-grouped-weight", false, P, "off",
       "the experts' weights as one TransformerEngine GroupedTensor a "
       "layer: the same elements; refused under lion or muon with "
       "--use-distributed-optimizer (packed whole, not modelled)"},
      {"moe-latent-size", true, R, "off", "latent MoE: not modelled"},
      {"moe-use-upcycling", false, R, "off",
       "upcycling holds the dense and the MoE model: not modelled"},
      {"moe-paged-stash", false, R, "off",
       "expert activations stashed in paged device / host buffers: not "
       "modelled"},
      {"overlap-moe-expert-parallel-comm", false, M, "off",
       "the EP all-to-all overlapped by running a micro-batch's forward "
       "beside another's backward (combined_1f1b.py): one more (chunk of "
       "a) micro-batch in flight; Megatron's rules checked (EP > 1, "
       "interleaving when PP > 1, no full recomputation, ...)"},
      {"defer-embedding-wgrad-compute", false, M, "off",
       "the last stage keeps the output layer's input and the logits' "
       "gradient of every micro-batch (m (1 + MTP) entries, or "
       "--wgrad-deferral-limit) until the pipeline flush; refused with "
       "--output-logit-dtype fp32"},
      {"wgrad-deferral-limit", true, M, "0 (all)",
       "at most this many deferred entries; no effect without "
       "--defer-embedding-wgrad-compute"},
      {"no-gradient-accumulation-fusion", false, M, "fused",
       "weight gradients are new tensors before the main gradient takes "
       "them: the output layer's (v/t x h, the activations' dtype) is the "
       "last stage's transient beside the loss's, checked to fit; refused "
       "with --defer-embedding-wgrad-compute, as Megatron raises, and with "
       "--output-logit-dtype fp32 (not modelled)"},
      {"delay-wgrad-compute", false, M, "off",
       "weight gradients run later in the same layer's backward: their "
       "inputs are kept anyway; the output gradients they wait on are a "
       "layer's backward working set (headroom)"},
      {"overlap-dispatch-backward-with-experts-wgrad", false, M, "off",
       "the experts' weight gradients run after the dispatch's backward, "
       "on a stream of their own, within the same layer's backward: their "
       "inputs are kept anyway, the output gradients they wait on are the "
       "layer's backward working set (headroom), as --delay-wgrad-compute; "
       "refused with --overlap-moe-expert-parallel-comm or "
       "--delay-wgrad-compute (Megatron asserts)"},
      {"multi-latent-attention", false, M, "off",
       "MLA: LoRA-compressed Q and KV (down projections replicated over "
       "TP), their latents stored"},
      {"no-clone-scatter-output-in-embedding", false, P, "off (cloned)",
       "nothing with RoPE or no positions (the vocabulary-parallel "
       "embedding reduce-scatters its own shard); with learned absolute "
       "positions the sequence-parallel scatter's view keeps the whole "
       "s x b x h embedding output for the first layer's backward: "
       "refused"},
      {"disable-clone-scatter-output-in-embedding", false, P, "off (cloned)",
       "the same as --no-clone-scatter-output-in-embedding"},
      {"mla-down-proj-fusion", false, M, "off",
       "MLA's Q and KV down projections as one column-parallel "
       "LayerNormLinear: their weights split over TP; needs --q-lora-rank "
       "and TP dividing q-lora-rank and kv-lora-rank + "
       "qk-pos-emb-head-dim (Megatron asserts)"},
      {"q-lora-rank", true, M, "none", "MLA's Q latent width"},
      {"kv-lora-rank", true, M, "32", "MLA's KV latent width"},
      {"qk-head-dim", true, M, "128", "MLA's non-rotary Q/K head dim"},
      {"qk-pos-emb-head-dim", true, M, "64", "MLA's rotary Q/K head dim"},
      {"v-head-dim", true, M, "128", "MLA's V head dim"},
      {"rope-type", true, M, "yarn with MLA",
       "MLA's RoPE, rotating d_rope whatever the positions (unfused, its "
       "tables kept, beside any position type but rope); rope needs "
       "--no-rope-fusion with MLA (Megatron raises)"},
      {"mtp-num-layers", true, M, "off",
       "multi-token prediction layers on the last stage: a layer, an h x 2h "
       "projection, norms and their own logits each"},
      {"mtp-use-repeated-layer", false, M, "off",
       "one MTP layer applied --mtp-num-layers times: one layer's "
       "parameters, every application's activations"},
      {"mtp-hsm", false, M, "off",
       "hidden-state mixing: each MTP depth after the first keeps its "
       "mix's int64 indices and bool mask, 9 bytes a token of the rank's "
       "share; off below two MTP layers (Megatron turns it off)"},
      {"qk-layernorm", false, M, "off",
       "norms on Q and K: 2d parameters a layer, their inputs stored; with "
       "--multi-latent-attention the latent norms (fused into the up "
       "projections)"},
      {"qk-l2-norm", false, M, "off",
       "L2 norms on Q and K (torch_norm.py L2Norm; taken over "
       "--qk-layernorm where both are given, as Megatron's spec does): no "
       "weights; the Q copy and, through K's input (a view of the QKV "
       "output), the whole QKV output stored (measured)"},
      {"encoder-num-layers", true, R, "", "encoder-decoder: not modelled"},
      // Arguments of the releases memgate reads (core 0.12 on) that the
      // reviewed revision no longer has (megatron_arguments_removed.inc).
      {"use-legacy-models", false, R, "off",
       "Megatron's legacy (non-Core) models, whose attention is unfused "
       "without --use-flash-attn: not modelled"},
      {"moe-extended-tp", false, R, "off",
       "experts split over TP x EP (extended tensor parallelism): not "
       "modelled"},
      {"encoder-tensor-model-parallel-size", true, R, "",
       "encoder-decoder: not modelled"},
      {"encoder-pipeline-model-parallel-size", true, R, "",
       "encoder-decoder: not modelled"},
      {"pipeline-model-parallel-split-rank", true, R, "",
       "encoder-decoder: not modelled"},
      {"hybrid-attention-ratio", true, R, "",
       "hybrid Mamba models: not modelled"},
      {"hybrid-mlp-ratio", true, R, "", "hybrid Mamba models: not modelled"},
      {"retro-add-retriever", false, R, "off",
       "Retro's retriever and encoder: not modelled"},
      {"heterogeneous-layers-config-path", true, R, "",
       "per-layer shapes: not modelled"},
      {"spec", true, R, "", "a custom layer spec: not modelled"},
      {"checkpoint-activations", false, R, "",
       "no longer valid in Megatron: use --recompute-activations or "
       "--recompute-granularity"},
      {"model-parallel-size", true, R, "",
       "no longer valid in Megatron: use --tensor-model-parallel-size"},
      {"decoder-num-layers", true, R, "", "give --num-layers"},
      {"linear-attention-freq", true, R, "",
       "hybrid linear attention: not modelled"},
      {"heterogeneous-layers-config-encoded-json", true, R, "",
       "per-layer shapes: not modelled"},
      {"hybrid-layer-pattern", true, R, "",
       "hybrid Mamba models: not modelled"},
      {"hybrid-override-pattern", true, R, "",
       "hybrid Mamba models: not modelled"},
      // Generated from TransformerConfig fields (argument_utils.py
      // ArgumentGroupFactory: --no-/--disable- for fields true by default).
      {"no-fp8-wgrad", false, R, "",
       "fp8 GEMMs whose weight gradients run in bf16 keep their bf16 "
       "inputs too: not modelled"},
      {"disable-fp8-wgrad", false, R, "", "the same as --no-fp8-wgrad"},
      {"attention-output-gate", false, R, "off",
       "a sigmoid gate on the attention output (its projection widens "
       "linear_qkv, its activations are kept): not modelled"},
      {"experimental-attention-variant", true, R, "off",
       "gated delta net / DeepSeek sparse attention layers: not modelled"},
      {"perform-rl-step", false, R, "off",
       "RL steps run an inference engine (KV cache, CUDA graphs, "
       "rollouts) beside training on the same GPUs: not modelled"},
      {"logits-load-dir", true, R, "off",
       "distillation from cached teacher log-probabilities "
       "(training/distillation/cached_logits_loss.py): a second loss over "
       "the student's full-vocabulary logits, normalised across TP, beside "
       "the LM loss: not modelled"},
      {"kitchen-config-file", true, R, "off",
       "kitchen quantization of the linear layers: not modelled"},
      {"kitchen-recipe-number", true, R, "off",
       "kitchen quantization of the linear layers: not modelled"},
      {"use-kitchen-attention", false, R, "off",
       "kitchen's attention kernels keep other tensors: not modelled"},
      {"enable-mhc-connections", false, R, "off",
       "hyper-connections: --mhc-num-residual-streams copies of the "
       "residual stream: not modelled"},
      {"is-hybrid-model", false, R, "off",
       "hybrid Mamba models: not modelled"},
      {"mtp-hybrid-override-pattern", true, R, "",
       "hybrid multi-token prediction layers: not modelled"},
      {"symmetric-ar-type", true, R, "off",
       "TransformerEngine's all-reduces through symmetric-memory buffers: "
       "not modelled"},
      {"yaml-cfg", true, R, "",
       "the arguments are in a file memgate cannot read: pass them on the "
       "command line"},
      // checkpointing.py load_args_from_checkpoint: the model's arguments
      // the launch leaves out, and many it gives (force=True: --swiglu,
      // the norm, biases, dropout, query groups, experts, MTP), are the
      // checkpoint's; with --use-mp-args-from-checkpoint-args so are TP,
      // PP and EP.
      {"use-checkpoint-args", false, R, "off",
       "the model's arguments (even some the launch gives: the MLP, norm, "
       "biases, dropout, experts) and with --use-mp-args-from-checkpoint-"
       "args the parallel sizes come from the checkpoint, which memgate "
       "cannot read: pass them on the command line"},
  };
  return *table;
}

const MegatronArgument* FindMegatronArgument(absl::string_view name) {
  // The table by name, sorted once: a launch's every word is looked up
  // (several times), and a batch script may hold a hundred thousand.
  static const auto* by_name = [] {
    auto* sorted = new std::vector<const MegatronArgument*>();
    for (const MegatronArgument& a : MegatronMemoryArguments()) {
      sorted->push_back(&a);
    }
    std::sort(sorted->begin(), sorted->end(),
              [](const MegatronArgument* x, const MegatronArgument* y) {
                return absl::string_view(x->name) < absl::string_view(y->name);
              });
    return sorted;
  }();
  const std::string dashed = absl::StrReplaceAll(name, {{"_", "-"}});
  auto at = std::lower_bound(
      by_name->begin(), by_name->end(), dashed,
      [](const MegatronArgument* a, const std::string& key) {
        return absl::string_view(a->name) < key;
      });
  return at != by_name->end() && dashed == (*at)->name ? *at : nullptr;
}

std::string MegatronArgumentsMarkdown() {
  std::string out =
      "# Megatron-LM arguments that change per-GPU memory\n\n"
      "Generated from `readers/megatron_arguments.cc` by `bazel run "
      "//readers:megatron_arguments_doc`; a test keeps the two equal.\n\n"
      "memgate reads launches of Megatron-LM (core_r0.12 and later). Every "
      "argument below changes per-GPU memory: it is **modelled** (the term "
      "it changes), **partly** modelled (the values named; others are "
      "refused), or **refused** with an error naming it, so that no "
      "memory-relevant setting is read past. Megatron-LM's other arguments "
      "(as of d98e8a6: `readers/megatron_argument_names.inc`, and those of "
      "the releases from core 0.12.0 on that it no longer has: "
      "`readers/megatron_arguments_removed.inc`, both generated "
      "by `scripts/megatron_argument_names.py`) do not change per-GPU memory "
      "and are ignored; an argument in neither list (a newer Megatron's, a "
      "fork's) is not read either, and a note names it. Where a launch "
      "leaves an "
      "argument out, Megatron's default applies (fp32 without `--bf16` / "
      "`--fp16`, dropout 0.1, LayerNorm, biases, learned absolute "
      "positions, a GeLU MLP without `--swiglu`) and memgate says so in a "
      "note.\n\n"
      "| argument | Megatron's default | memgate | effect |\n"
      "| --- | --- | --- | --- |\n";
  for (const MegatronArgument& a : MegatronMemoryArguments()) {
    const char* handling = a.handling == Handling::kModelled ? "modelled"
                           : a.handling == Handling::kPartly ? "partly"
                                                             : "**refused**";
    absl::StrAppend(&out, "| `--", a.name, a.takes_value ? " X" : "", "` | ",
                    a.megatron_default, " | ", handling, " | ", a.effect,
                    " |\n");
  }
  return out;
}

}  // namespace memgate
