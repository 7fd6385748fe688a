"""Measures the per-GPU memory of real Megatron-Core training steps on one
GPU, for memgate to be compared against end to end (not term by term, as
activation_terms.py and moe_terms.py do).

Each job below is a Megatron-LM launch (its arguments are printed, so that
`memgate check` can read the very same line) and is built here with
Megatron-Core's own modules: GPTModel with the local layer spec (the
image has no TransformerEngine or Apex; `--transformer-impl local`, so
core attention is unfused and stores the s x s softmax), Megatron's
DistributedDataParallel (fp32 main-grad buffer) and get_megatron_optimizer
(the distributed optimizer's fp32 master shards; Adam from torch, since
TE/Apex FusedAdam are absent). One micro-batch a step, as
forward_backward_no_pipelining runs it with PP = 1.

Each job runs in its own process (a fresh caching allocator) and reports,
after two warm steps, the bytes allocated at each phase of a third:
  static        weights + gradient buffer + optimizer states, between steps
  stored        after the forward pass minus before it: what is kept for
                backward (plus the loss, b*s fp32)
  peak_fwd_bwd  the highest allocation during forward and backward
  peak_step     the highest allocation during the optimizer step
and the process's highest allocation and reservation overall.

    PYTHONPATH=<megatron-lm checkout> python3 bench/gpu/megatron_step.py \
        [--only NAME,PREFIX*] [--census] > results.jsonl
"""

import argparse
import gc
import json
import os
import subprocess
import sys
import traceback

# name -> Megatron-LM launch arguments (one GPU: TP = PP = CP = EP = 1).
BASE = (
    "--num-layers 8 --hidden-size 2048 --ffn-hidden-size 5632 "
    "--num-attention-heads 16 --group-query-attention --num-query-groups 4 "
    "--seq-length 4096 --max-position-embeddings 4096 --micro-batch-size 1 "
    "--global-batch-size 1 --swiglu --normalization RMSNorm "
    "--position-embedding-type rope --untie-embeddings-and-output-weights "
    "--disable-bias-linear --transformer-impl local --vocab-size 128256 "
    "--make-vocab-size-divisible-by 128 --no-rope-fusion "
    "--no-gradient-accumulation-fusion"
)
NO_DROPOUT = "--attention-dropout 0 --hidden-dropout 0"
BF16 = "--bf16 --use-distributed-optimizer"
MOE = ("--num-experts 16 --moe-router-topk 4 --moe-ffn-hidden-size 1024 "
       "--moe-aux-loss-coeff 0")

JOBS = {
    "dense": f"{BASE} {BF16} {NO_DROPOUT}",
    "dense_mbs2": f"{BASE} {BF16} {NO_DROPOUT}".replace(
        "--micro-batch-size 1 --global-batch-size 1",
        "--micro-batch-size 2 --global-batch-size 2"),
    # Megatron's own dropout defaults (0.1 on attention and hidden states).
    "dense_dropout": f"{BASE} {BF16}",
    "dense_selective": f"{BASE} {BF16} --recompute-granularity selective",
    "dense_full_uniform": (f"{BASE} {BF16} {NO_DROPOUT} "
                           "--recompute-granularity full "
                           "--recompute-method uniform --recompute-num-layers 1"),
    "dense_plain_optimizer": f"{BASE} --bf16 {NO_DROPOUT}",
    # Megatron's default precision: fp32 without --bf16.
    "dense_fp32": f"{BASE} --use-distributed-optimizer {NO_DROPOUT}".replace(
        "--seq-length 4096", "--seq-length 2048").replace(
        "--max-position-embeddings 4096", "--max-position-embeddings 2048"),
    "moe_allgather": f"{BASE} {BF16} {NO_DROPOUT} {MOE}",
    "moe_alltoall": (f"{BASE} {BF16} {NO_DROPOUT} {MOE} "
                     "--moe-token-dispatcher-type alltoall"),
}

# Jobs memgate admits at the edge of the 80% rule on an 80 GiB GPU
# (63.1-63.7 GiB estimated): do they run?
def _layers(line, n):
    return line.replace("--num-layers 8 ", f"--num-layers {n} ")


JOBS.update({
    "edge_dropout_L23": _layers(JOBS["dense_dropout"], 23),
    "edge_mbs2_L22": _layers(JOBS["dense_mbs2"], 22),
    "edge_selective_L50": _layers(JOBS["dense_selective"], 50),
    "edge_moe_L19": _layers(JOBS["moe_alltoall"], 19),
})

# Session 32: the other selective recomputations (transformer_config.py
# recompute_modules) and multi-token prediction, each modelled from
# Megatron's source and not measured before.
_SELECTIVE = "--recompute-granularity selective --recompute-modules"
JOBS.update({
    "dense_recompute_mlp": f"{BASE} {BF16} {NO_DROPOUT} {_SELECTIVE} mlp",
    "dense_recompute_layernorm": (f"{BASE} {BF16} {NO_DROPOUT} "
                                  f"{_SELECTIVE} layernorm"),
    "dense_recompute_all": (f"{BASE} {BF16} {NO_DROPOUT} "
                            f"{_SELECTIVE} core_attn mlp layernorm"),
    "moe_recompute_moe": (f"{BASE} {BF16} {NO_DROPOUT} {MOE} "
                          f"--moe-token-dispatcher-type alltoall {_SELECTIVE} moe"),
    "mtp1": f"{BASE} {BF16} {NO_DROPOUT} --mtp-num-layers 1",
    "mtp2": f"{BASE} {BF16} {NO_DROPOUT} --mtp-num-layers 2",
})


# Session 33: the MLP activations, norms, biases and positions a launch
# gets from Megatron's defaults or names (arguments.py; argument_utils.py
# core_transformer_config_from_args), Megatron's unfused SwiGLU, QK-norm,
# and two MoE terms (input jitter, shared experts), each modelled from
# Megatron's source and not measured before. `dense_defaults` leaves out
# every shape argument Megatron has a default for (GeLU, LayerNorm,
# biases, learned absolute positions, dropout 0.1).
def _without(line, *words):
    for w in words:
        assert f" {w} " in f" {line} ", w
        line = f" {line} ".replace(f" {w} ", " ").strip()
    return line


_DENSE = f"{BASE} {BF16} {NO_DROPOUT}"
JOBS.update({
    "moe_jitter": (f"{_DENSE} {MOE} --moe-token-dispatcher-type alltoall "
                   "--moe-input-jitter-eps 0.01"),
    "dense_gelu": _without(_DENSE, "--swiglu"),
    "dense_quick_geglu": _without(_DENSE, "--swiglu") + " --quick-geglu",
    "dense_swiglu_unfused": f"{_DENSE} --no-bias-swiglu-fusion",
    "dense_layernorm_biases": _without(_DENSE, "--normalization RMSNorm",
                                       "--disable-bias-linear"),
    "dense_learned_positions": _without(_DENSE,
                                        "--position-embedding-type rope"),
    "dense_qk_layernorm": f"{_DENSE} --qk-layernorm",
    "moe_shared": (f"{_DENSE} {MOE} --moe-token-dispatcher-type alltoall "
                   "--moe-shared-expert-intermediate-size 2048"),
    # Megatron's own L2Norm on Q and K (the same module under either
    # implementation), and jitter beside shared experts, which keep the
    # router's input themselves.
    "dense_qk_l2_norm": f"{_DENSE} --qk-l2-norm",
    "moe_shared_jitter": (f"{_DENSE} {MOE} --moe-token-dispatcher-type "
                          "alltoall --moe-shared-expert-intermediate-size "
                          "2048 --moe-input-jitter-eps 0.01"),
    # Tied embeddings, fp16, Megatron's own fused cross entropy, full
    # recomputation by blocks; and the MoE router's settings real runs use
    # (an auxiliary loss, z-loss, an fp32 router, capacity padding).
    "dense_tied": _without(_DENSE, "--untie-embeddings-and-output-weights"),
    "dense_fp16": _DENSE.replace("--bf16", "--fp16"),
    "dense_ce_fusion": (f"{_DENSE} --cross-entropy-loss-fusion "
                        "--cross-entropy-fusion-impl native"),
    "dense_full_block": (f"{_DENSE} --recompute-granularity full "
                         "--recompute-method block --recompute-num-layers 4"),
    "moe_aux_z_loss": (f"{_DENSE} {MOE} --moe-token-dispatcher-type "
                       "alltoall --moe-z-loss-coeff 0.001").replace(
                           "--moe-aux-loss-coeff 0", "--moe-aux-loss-coeff 0.01"),
    "moe_router_fp32": (f"{_DENSE} {MOE} --moe-token-dispatcher-type "
                        "alltoall --moe-router-dtype fp32"),
    "moe_capacity": (f"{_DENSE} {MOE} --moe-token-dispatcher-type alltoall "
                     "--moe-expert-capacity-factor 1.0 "
                     "--moe-pad-expert-input-to-capacity"),
    "dense_defaults": _without(f"{BASE} {BF16}", "--swiglu",
                               "--normalization RMSNorm",
                               "--position-embedding-type rope",
                               "--disable-bias-linear"),
})

# Session 35: what session 34 modelled from Megatron's source alone: biases
# on MoE layers (router bias, each expert's FC1/FC2 biases; the local
# spec's experts are SequentialMLP's MLPs, which add FC2's bias weighted by
# the probabilities in place), quick-GeGLU experts with biases through the
# fused weighted_bias_quick_geglu_impl (with gpt-oss's clamp and offset,
# and without the fusion), and attention sinks (--softmax-type) in
# Megatron's unfused core attention (SoftmaxOne).
_MOE_A2A = f"{_DENSE} {MOE} --moe-token-dispatcher-type alltoall"
_MOE_BIASES = _without(_MOE_A2A, "--disable-bias-linear")
_QUICK_BIASES = _without(_MOE_BIASES, "--swiglu") + " --quick-geglu"
_GPT_OSS_GLU = "--activation-func-clamp-value 7.0 --glu-linear-offset 1.0"
JOBS.update({
    # Megatron's weighted SwiGLU fusion raises with a bias
    # (fused_bias_swiglu.py: "Bias is not supported for weighted swiglu
    # fusion"), which SequentialMLP's experts pass it: unfused here.
    "moe_biases": f"{_MOE_BIASES} --no-bias-swiglu-fusion",
    "moe_quick_geglu_biases": _QUICK_BIASES,
    "moe_quick_geglu_biases_clamp": f"{_QUICK_BIASES} {_GPT_OSS_GLU}",
    "moe_quick_geglu_biases_unfused": (f"{_QUICK_BIASES} {_GPT_OSS_GLU} "
                                       "--no-bias-gelu-fusion"),
    "dense_sinks_learnable": f"{_DENSE} --softmax-type learnable",
    # gpt-oss's layer at this harness's widths: all of the above at once.
    "moe_gpt_oss_like": (f"{_QUICK_BIASES} {_GPT_OSS_GLU} "
                         "--softmax-type learnable"),
    # YaRN positions (gpt-oss's): Megatron's unfused RoPE with YaRN's
    # frequencies, which memgate counts as --no-rope-fusion's tables.
    # One MTP layer applied twice (--mtp-use-repeated-layer): mtp1's
    # parameters, mtp2's activations, as memgate counts it.
    "mtp2_repeated": (f"{_DENSE} --mtp-num-layers 2 "
                      "--mtp-use-repeated-layer"),
    "dense_yarn": _DENSE.replace("--position-embedding-type rope",
                                 "--position-embedding-type yarn "
                                 "--rotary-scaling-factor 32"),
})

# Session 36: multi-latent attention (DeepSeek's; memgate's MlaActivations
# and MlaParameters were from source only) and mRoPE's per-sample tables.
# Megatron cannot build MLA under the local spec (its DotProductAttention
# takes no k_channels / v_channels: a TypeError at build, which memgate
# refuses); these steps run it with _mla_core_attention, the same class
# taking them, so what the unfused attention keeps is the local one's.
_MLA = _without(_DENSE, "--group-query-attention", "--num-query-groups 4") + (
    " --multi-latent-attention --kv-lora-rank 256 --qk-head-dim 128 "
    "--qk-pos-emb-head-dim 64 --v-head-dim 128")
JOBS.update({
    "mla": f"{_MLA} --q-lora-rank 512",
    "mla_no_q_lora": _MLA,
    "mla_qk_layernorm": f"{_MLA} --q-lora-rank 512 --qk-layernorm",
    "mla_recompute_up_proj": (f"{_MLA} --q-lora-rank 512 --qk-layernorm "
                              "--recompute-granularity selective "
                              "--recompute-modules mla_up_proj"),
    # Shared experts recomputed (the recipes' "shared_experts"), and
    # DeepSeek's layer at these widths: MLA with its latent norms, routed
    # and shared experts, an MTP layer, the recipe's recomputations.
    "moe_shared_recompute": (f"{_MOE_A2A} "
                             "--moe-shared-expert-intermediate-size 2048 "
                             "--recompute-granularity selective "
                             "--recompute-modules shared_experts"),
    "moe_mla_deepseek_like": (
        f"{_MLA} --q-lora-rank 512 --qk-layernorm {MOE} "
        "--moe-token-dispatcher-type alltoall "
        "--moe-shared-expert-intermediate-size 2048 --mtp-num-layers 1 "
        "--recompute-granularity selective "
        "--recompute-modules mla_up_proj shared_experts"),
    # MLA rotates d_rope itself beside the positions Megatron defaults
    # to (learned_absolute: the RoPE fusion is off), and under mRoPE with
    # one set of tables for all samples.
    "mla_learned_positions": _without(f"{_MLA} --q-lora-rank 512",
                                      "--position-embedding-type rope"),
    "mla_mrope_mbs2": f"{_MLA} --q-lora-rank 512".replace(
        "--position-embedding-type rope",
        "--position-embedding-type mrope --mrope-section 16 8 8").replace(
            "--micro-batch-size 1 --global-batch-size 1",
            "--micro-batch-size 2 --global-batch-size 2"),
    # mRoPE at two samples a micro-batch, beside dense_mbs2 (RoPE).
    "mrope_mbs2": JOBS["dense_mbs2"].replace(
        "--position-embedding-type rope",
        "--position-embedding-type mrope --mrope-section 16 24 24"),
})


# Session 38: the loss's transient (memgate's zone rule since session 37,
# memory_model.cc [CE]): a small model with a large vocabulary, every layer
# recomputed, micro-batches of 10, 11 and 12 sequences. memgate admits the
# first (54.3 GiB, the transient fits beside it), refuses the other two RED
# because the logits' 16-bit gradient does not fit beside the stage (58.7 +
# 21.5 and 63.1 + 23.4 GiB); before session 37 it admitted both (GREEN:
# 73% and 79% of 80 GiB). And fp32 at h != s: is its peak above the stored
# bytes the output layer's weight gradient (4 v h, no gradient-accumulation
# fusion) or a copy of the logits (4 s b v)? dense_fp32 (s = h) cannot tell.
_LOSS_BASE = (_DENSE.replace("--hidden-size 2048 --ffn-hidden-size 5632",
                             "--hidden-size 1024 --ffn-hidden-size 2816")
              .replace("--num-attention-heads 16", "--num-attention-heads 8")
              .replace("--vocab-size 128256", "--vocab-size 256000")
              + " --recompute-granularity full --recompute-method uniform "
              "--recompute-num-layers 1")


def _micro_batch(line, b):
    return line.replace("--micro-batch-size 1 --global-batch-size 1",
                        f"--micro-batch-size {b} --global-batch-size {b}")


JOBS.update({
    "loss_vocab_mbs10": _micro_batch(_LOSS_BASE, 10),
    "loss_vocab_mbs11": _micro_batch(_LOSS_BASE, 11),
    "loss_vocab_mbs12": _micro_batch(_LOSS_BASE, 12),
    "loss_vocab_fp32": _without(_LOSS_BASE, "--bf16"),
})

# The device's edge: loss_vocab_mbs10 with larger vocabularies, whose
# stage and loss transient memgate puts at 76.5, 78.2 and 79.2 GiB, all
# under the 80 GiB it counts an H100 as. CUDA reports 79.18 GiB, and the
# process's CUDA context, kernels and NCCL took 2.4 GiB beside PyTorch's
# allocations in every row before: which of them run?
JOBS.update({
    f"loss_vocab_mbs10_v{v}": _micro_batch(_LOSS_BASE, 10).replace(
        "--vocab-size 256000", f"--vocab-size {v}")
    for v in (266240, 272384, 276480)
})

# What routing keeps (estimator/moe_terms.cc [RS], session 50, read from
# Megatron's source and not yet measured): 256 narrow experts, top-8, so
# the router's and the permutation's tensors of every expert a token
# (8E B for the alltoall argsort, 4E for a sigmoid, 4E more for a loss's
# scores, the logits for the z-loss) are a visible share of a layer.
_ROUTER = (_DENSE.replace("--num-layers 8", "--num-layers 2") +
           " --num-experts 256 --moe-router-topk 8 "
           "--moe-ffn-hidden-size 256 --moe-token-dispatcher-type alltoall")
JOBS.update({
    "moe_router_e256": f"{_ROUTER} --moe-aux-loss-coeff 0",
    "moe_router_e256_sigmoid_loss_groups": (
        f"{_ROUTER} --moe-router-score-function sigmoid "
        "--moe-router-enable-expert-bias --moe-router-load-balancing-type "
        "seq_aux_loss --moe-aux-loss-coeff 1e-4 --moe-router-num-groups 8 "
        "--moe-router-group-topk 4"),
    "moe_router_e256_z_loss": (f"{_ROUTER} --moe-aux-loss-coeff 0 "
                               "--moe-z-loss-coeff 0.001"),
    # TransformerEngine's fused router and permutation (needs TE).
    "moe_router_e256_fused": (f"{_ROUTER} --moe-aux-loss-coeff 0 "
                              "--moe-router-fusion --moe-permute-fusion"),
})

# bf16 with s x b < h: is the output layer's weight gradient (2 v h, no
# gradient-accumulation fusion) the transient, above the loss's cast
# (2 s b v)? With its input's gradient, beside the logits' 16-bit gradient,
# the loss's fp32 softmax freed by then: 2 v h + 2 s b h - 2 s b v above
# the stored bytes, if the reading of layers.py is right.
JOBS["loss_wgrad_bf16"] = (
    _DENSE.replace("--num-layers 8", "--num-layers 2")
    .replace("--hidden-size 2048 --ffn-hidden-size 5632",
             "--hidden-size 4096 --ffn-hidden-size 11008")
    .replace("--num-attention-heads 16", "--num-attention-heads 32")
    .replace("--seq-length 4096 --max-position-embeddings 4096",
             "--seq-length 1024 --max-position-embeddings 1024"))

def parse(line):
    """The few launch arguments this script needs, as a dict (the values of
    an argument that takes several, --recompute-modules, joined by blanks)."""
    words = line.split()
    args = {}
    i = 0
    while i < len(words):
        key = words[i][2:].replace("-", "_")
        j = i + 1
        while j < len(words) and not words[j].startswith("--"):
            j += 1
        args[key] = " ".join(words[i + 1:j]) if j > i + 1 else True
        i = j
    return args


def _record(census, t):
    """Saved-tensor hook: notes what autograd keeps, returns it unchanged."""
    if t.is_cuda:
        storage = t.untyped_storage()
        census.append((storage.data_ptr(), storage.nbytes(), tuple(t.shape),
                       str(t.dtype)))
    return t


# The census's shapes, largest first: enough to see the router's small
# [tokens, experts] tensors beside the MoE layers' (session 35).
CENSUS_ROWS = 300


def _summarize(census, parameter_storages):
    """Distinct storages autograd keeps (weights excluded), by shape."""
    seen = set()
    groups = {}
    for ptr, nbytes, shape, dtype in census:
        if ptr in seen or ptr in parameter_storages:
            continue
        seen.add(ptr)
        key = f"{list(shape)} {dtype}"
        count, total = groups.get(key, (0, 0))
        groups[key] = (count + 1, total + nbytes)
    rows = sorted(groups.items(), key=lambda kv: -kv[1][1])
    return {"distinct_bytes": sum(v[1] for _, v in rows),
            "by_shape": [{"shape": k, "count": c, "bytes": b}
                         for k, (c, b) in rows[:CENSUS_ROWS]]}


def _shim_missing_transformer_engine():
    """Two of Megatron's TE-less paths reach for TE names (d98e8a6): the
    output-discarding checkpoint (`--recompute-modules layernorm`) asks TE's
    FP8GlobalStateManager whether fp8 is on and enters TE's recompute
    contexts, and the MTP layer asks whether its projection is an inference
    linear, a class that is None without TE. Here they answer "no" and the
    contexts do nothing, which is what TE's do without fp8; neither changes
    what is stored."""
    import contextlib

    import megatron.core.tensor_parallel.random as checkpointing
    import megatron.core.transformer.multi_token_prediction as mtp

    class NoFp8:
        @staticmethod
        def is_fp8_enabled():
            return False

        @staticmethod
        def get_fp8_recipe():
            return None

    if not getattr(checkpointing, "HAVE_TE", True):
        checkpointing.FP8GlobalStateManager = NoFp8
        checkpointing.activation_recompute_forward = (
            lambda **kwargs: contextlib.nullcontext())
        checkpointing.fp8_autocast = lambda **kwargs: contextlib.nullcontext()
        mtp.is_inference_column_parallel_linear = lambda module: False


def _shim_expert_output_reduce():
    """SequentialMLP's experts add FC2's bias to its output in place
    (mlp.py: output += output_bias * per_token_scale). Under the local spec
    with EP = ETP = 1 that output comes from _ReduceFromModelParallelRegion,
    which returns its input as-is on a group of one, and autograd forbids
    the in-place add (d98e8a6 raises at the first step). With EP or ETP > 1
    the row-parallel linear skips the Function (explicit_expert_comm). Here
    a group of one skips it too: the Function keeps nothing, so no stored
    byte changes."""
    import megatron.core.tensor_parallel.layers as layers

    reduce = layers.reduce_from_tensor_model_parallel_region

    def reduce_unless_alone(input_, group=None, **kwargs):
        if group is not None and group.size() == 1:
            return input_
        return reduce(input_, group=group, **kwargs)

    layers.reduce_from_tensor_model_parallel_region = reduce_unless_alone


def _mla_core_attention():
    """Megatron's MLA builds its core attention with k_channels (the Q/K
    head width, d_nope + d_rope) and v_channels (d_v); the local
    DotProductAttention takes neither. Its forward already takes Q and K
    of one width and V of another (baddbmm, then bmm); only the output's
    reshape uses kv_channels, which must equal d_v here."""
    from megatron.core.transformer.dot_product_attention import (
        DotProductAttention)

    class MlaDotProductAttention(DotProductAttention):
        def __init__(self, *args, k_channels=None, v_channels=None,
                     **kwargs):
            super().__init__(*args, **kwargs)
            # (Attention.__init__ first builds one without them, d98e8a6.)
            assert v_channels in (None, self.hidden_size_per_attention_head), (
                v_channels, self.hidden_size_per_attention_head)

    return MlaDotProductAttention


def run_job(name, fused, census_mode=False):
    import torch
    import torch.nn.functional as F

    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29511")
    torch.cuda.set_device(0)
    torch.distributed.init_process_group("nccl", rank=0, world_size=1)

    from megatron.core import parallel_state
    from megatron.core.distributed import (DistributedDataParallel,
                                           DistributedDataParallelConfig)
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
    from megatron.core.models.gpt.gpt_model import GPTModel
    from megatron.core.optimizer import OptimizerConfig, get_megatron_optimizer
    from megatron.core.tensor_parallel.random import model_parallel_cuda_manual_seed
    from megatron.core.transformer.transformer_config import TransformerConfig

    _shim_missing_transformer_engine()
    parallel_state.initialize_model_parallel(1, 1)
    model_parallel_cuda_manual_seed(1234)

    a = parse(JOBS[name])
    if "num_experts" in a and "disable_bias_linear" not in a:
        _shim_expert_output_reduce()
    bf16 = "bf16" in a
    fp16 = "fp16" in a
    dtype = (torch.bfloat16 if bf16 else
             torch.float16 if fp16 else torch.float32)
    seq = int(a["seq_length"])
    mbs = int(a["micro_batch_size"])
    experts = int(a.get("num_experts", 0)) or None
    recompute = a.get("recompute_granularity")
    kw = {}
    if experts:
        kw.update(num_moe_experts=experts,
                  moe_router_topk=int(a["moe_router_topk"]),
                  moe_ffn_hidden_size=int(a["moe_ffn_hidden_size"]),
                  moe_aux_loss_coeff=float(a["moe_aux_loss_coeff"]),
                  moe_token_dispatcher_type=a.get(
                      "moe_token_dispatcher_type", "allgather"),
                  moe_grouped_gemm=False)
    if recompute == "full":
        kw.update(recompute_granularity="full",
                  recompute_method=a["recompute_method"],
                  recompute_num_layers=int(a["recompute_num_layers"]))
    elif recompute == "selective":
        kw.update(recompute_granularity="selective")
        if "recompute_modules" in a:
            kw.update(recompute_modules=a["recompute_modules"].split())
    if "mtp_num_layers" in a:
        kw.update(mtp_num_layers=int(a["mtp_num_layers"]),
                  mtp_use_repeated_layer="mtp_use_repeated_layer" in a)
    for key, cast in (("moe_z_loss_coeff", float), ("moe_router_dtype", str),
                      ("moe_expert_capacity_factor", float),
                      ("cross_entropy_fusion_impl", str)):
        if key in a:
            kw[key] = cast(a[key])
    for switch in ("moe_pad_expert_input_to_capacity",
                   "cross_entropy_loss_fusion"):
        if switch in a:
            kw[switch] = True
    for key in ("glu_linear_offset", "activation_func_clamp_value"):
        if key in a:
            kw[key] = float(a[key])
    if "softmax_type" in a:
        kw.update(softmax_type=a["softmax_type"])
    if "moe_input_jitter_eps" in a:
        kw.update(moe_input_jitter_eps=float(a["moe_input_jitter_eps"]))
    if "moe_shared_expert_intermediate_size" in a:
        kw.update(moe_shared_expert_intermediate_size=int(
            a["moe_shared_expert_intermediate_size"]))
    # The MLP as core_transformer_config_from_args builds it: SwiGLU with
    # --swiglu (fused unless --no-bias-swiglu-fusion), quick-GeGLU with
    # --quick-geglu, else GeLU; the GeLU fusion is off without biases
    # (arguments.py), and quick_gelu has no fused kernel.
    # argument_utils.py sets fused_bias_geglu's quick_gelu, the function
    # transformer_config.py and mlp.py compare against for the fusion.
    from megatron.core.fusions.fused_bias_geglu import quick_gelu
    biases = "disable_bias_linear" not in a
    if "swiglu" in a:
        activation, gated = F.silu, True
        fusion = "no_bias_swiglu_fusion" not in a
    elif "quick_geglu" in a:
        # Megatron keeps --bias-gelu-fusion with biases (arguments.py turns
        # it off only without them): the experts' fused quick-GeGLU.
        activation, gated = quick_gelu, True
        fusion = biases and "no_bias_gelu_fusion" not in a
    else:
        activation, gated = F.gelu, False
        fusion = biases and "no_bias_gelu_fusion" not in a
    normalization = a.get("normalization", "LayerNorm")
    qk_layernorm = "qk_layernorm" in a
    qk_l2_norm = "qk_l2_norm" in a
    mla = "multi_latent_attention" in a
    if mla:
        from megatron.core.transformer.transformer_config import (
            MLATransformerConfig)
        # arguments.py's defaults; rope_type unset: the config's yarn
        # (argument_utils.py pops it).
        kw.update(multi_latent_attention=True,
                  q_lora_rank=(int(a["q_lora_rank"]) if "q_lora_rank" in a
                               else None),
                  kv_lora_rank=int(a["kv_lora_rank"]),
                  qk_head_dim=int(a["qk_head_dim"]),
                  qk_pos_emb_head_dim=int(a["qk_pos_emb_head_dim"]),
                  v_head_dim=int(a["v_head_dim"]))
    if a.get("position_embedding_type") == "mrope":
        kw.update(mrope_section=[int(x) for x in a["mrope_section"].split()])
    config_class = MLATransformerConfig if mla else TransformerConfig
    config = config_class(
        num_layers=int(a["num_layers"]),
        hidden_size=int(a["hidden_size"]),
        ffn_hidden_size=int(a["ffn_hidden_size"]),
        num_attention_heads=int(a["num_attention_heads"]),
        num_query_groups=int(a.get("num_query_groups",
                                   a["num_attention_heads"])),
        gated_linear_unit=gated,
        activation_func=activation,
        normalization=normalization,
        add_bias_linear=biases,
        add_qkv_bias=biases or "add_qkv_bias" in a,
        qk_layernorm=qk_layernorm,
        qk_l2_norm=qk_l2_norm,
        # Megatron-LM's argument defaults (arguments.py): dropout 0.1 unless
        # given; fp32 softmax only with --attention-softmax-in-fp32.
        hidden_dropout=float(a.get("hidden_dropout", 0.1)),
        attention_dropout=float(a.get("attention_dropout", 0.1)),
        attention_softmax_in_fp32=False,
        # The fused softmax needs Megatron's CUDA extension (absent); the
        # PyTorch fallback stores the same bf16 softmax output.
        masked_softmax_fusion=False,
        # On by default in Megatron-LM (--no-bias-swiglu-fusion,
        # --no-bias-dropout-fusion turn them off); torch.compile'd here.
        bias_activation_fusion=fused and fusion,
        bias_dropout_fusion=fused,
        gradient_accumulation_fusion=False,  # needs Apex
        bf16=bf16,
        fp16=fp16,
        # TransformerEngine's fused RoPE is absent: Megatron's unfused one,
        # as the launches say (--no-rope-fusion; session 35 added the word
        # to every launch, the steps before it ran the same).
        apply_rope_fusion=False,
        params_dtype=dtype,
        pipeline_dtype=dtype,
        **kw,
    )
    if a.get("position_embedding_type") == "yarn":
        # argument_utils.py _apply_yarn_config_from_args: GPTModel's yarn
        # branch reads these off the config, YarnRotaryEmbedding's defaults.
        for attr, value in (
                ("yarn_rotary_scaling_factor",
                 float(a.get("rotary_scaling_factor", 1.0))),
                ("yarn_original_max_position_embeddings", 4096),
                ("yarn_beta_fast", 32.0), ("yarn_beta_slow", 1.0),
                ("yarn_mscale", 1.0), ("yarn_mscale_all_dim", 0.0),
                ("yarn_correction_range_round_to_int", True)):
            setattr(config, attr, value)
    vocab = int(a["vocab_size"])
    spec = get_gpt_layer_local_spec(num_experts=experts, moe_grouped_gemm=False,
                                    qk_layernorm=qk_layernorm,
                                    qk_l2_norm=qk_l2_norm,
                                    normalization=normalization,
                                    multi_latent_attention=mla)
    if mla:
        spec.submodules.self_attention.submodules.core_attention = (
            _mla_core_attention())
    mtp_spec = None
    if config.mtp_num_layers:
        from megatron.core.models.gpt.gpt_layer_specs import (
            get_gpt_mtp_block_spec)
        mtp_spec = get_gpt_mtp_block_spec(config, spec,
                                          use_transformer_engine=False)
    model = GPTModel(config, spec, vocab_size=vocab, max_sequence_length=seq,
                     position_embedding_type=a.get(
                         "position_embedding_type", "learned_absolute"),
                     share_embeddings_and_output_weights=(
                         "untie_embeddings_and_output_weights" not in a),
                     mtp_block_spec=mtp_spec)
    parameters = sum(p.numel() for p in model.parameters())
    model.cuda()
    if bf16 or fp16:
        # As megatron/training/training.py get_model does: without it the
        # torch norms keep fp32 weights and store fp32 activations.
        from megatron.core.transformer.module import Float16Module
        model = Float16Module(config, model)
    weights = torch.cuda.memory_allocated()
    dist_opt = "use_distributed_optimizer" in a
    model = DistributedDataParallel(
        config,
        DistributedDataParallelConfig(grad_reduce_in_fp32=not fp16,
                                      overlap_grad_reduce=False,
                                      use_distributed_optimizer=dist_opt),
        model)
    with_grad_buffer = torch.cuda.memory_allocated()
    optimizer = get_megatron_optimizer(
        OptimizerConfig(optimizer="adam", lr=1e-4, weight_decay=0.01,
                        bf16=bf16, fp16=fp16, params_dtype=dtype,
                        use_distributed_optimizer=dist_opt),
        [model])
    with_master = torch.cuda.memory_allocated()

    tokens = torch.randint(0, vocab, (mbs, seq), device="cuda")
    labels = torch.randint(0, vocab, (mbs, seq), device="cuda")
    positions = torch.arange(seq, device="cuda").unsqueeze(0).expand(mbs, -1)
    if a.get("position_embedding_type") == "mrope":
        # [3, b, s]: temporal, height and width positions (text: all equal).
        positions = positions.unsqueeze(0).expand(3, -1, -1)

    census = []
    phases = {}
    for step in range(3):
        model.zero_grad_buffer()
        optimizer.zero_grad()
        gc.collect()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        if census_mode and step == 2:
            with torch.autograd.graph.saved_tensors_hooks(
                    lambda t: _record(census, t), lambda t: t):
                losses = model(tokens, positions, None, labels=labels)
        else:
            losses = model(tokens, positions, None, labels=labels)
        after_forward = torch.cuda.memory_allocated()
        loss = losses.float().mean()
        loss.backward()
        del losses, loss
        model.finish_grad_sync()
        peak_fwd_bwd = torch.cuda.max_memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        optimizer.step()
        peak_step = torch.cuda.max_memory_allocated()
        phases = {
            "static": before,
            "stored": after_forward - before,
            "peak_fwd_bwd": peak_fwd_bwd,
            "peak_step": peak_step,
            "after_step": torch.cuda.memory_allocated(),
        }
    free, total = torch.cuda.mem_get_info()
    extra = {}
    if census_mode:
        parameter_storages = {p.untyped_storage().data_ptr()
                              for p in model.parameters()}
        extra["saved"] = _summarize(census, parameter_storages)
    return {
        **extra,
        "job": name,
        "fused": fused,
        "launch": JOBS[name],
        "parameters": parameters,
        "weights": weights,
        "with_grad_buffer": with_grad_buffer,
        "with_master": with_master,
        **phases,
        "max_reserved": torch.cuda.max_memory_reserved(),
        "device_used": total - free,
        "device_total": total,
        "device": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
    }


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--only")
    p.add_argument("--child")
    p.add_argument("--unfused", action="store_true")
    p.add_argument("--census", action="store_true",
                   help="also list the tensors autograd saves (step 3)")
    p.add_argument("--list", action="store_true")
    p.add_argument("--budget-s", type=float, default=480)
    flags = p.parse_args()
    if flags.list:
        for name, line in JOBS.items():
            print(json.dumps({"job": name, "launch": line}))
        return
    if flags.child:
        try:
            print(json.dumps(run_job(flags.child, not flags.unfused,
                                     flags.census)))
        except Exception as e:  # reported as data; the parent goes on
            import torch
            oom = isinstance(e, torch.OutOfMemoryError)
            print(json.dumps({
                "job": flags.child, "fused": not flags.unfused,
                "launch": JOBS[flags.child], "oom": oom,
                "max_allocated": torch.cuda.max_memory_allocated(),
                "max_reserved": torch.cuda.max_memory_reserved(),
                "error": traceback.format_exc()[-(600 if oom else 3000):]}))
        return
    import time
    start = time.monotonic()
    # --only a,b,edge*: exact names, or prefixes ending in '*', in that order.
    names = list(JOBS)
    if flags.only:
        names = [name for n in flags.only.split(",") for name in JOBS
                 if name == n or (n.endswith("*") and name.startswith(n[:-1]))]
    for name in names:
        if time.monotonic() - start > flags.budget_s:
            print(json.dumps({"job": name, "error": "skipped: time budget"}))
            continue
        for extra in ([], ["--unfused"]):
            out = subprocess.run(
                [sys.executable, __file__, "--child", name] + extra +
                (["--census"] if flags.census else []),
                capture_output=True, text=True, timeout=240)
            lines = [l for l in out.stdout.splitlines() if l.startswith("{")]
            result = json.loads(lines[-1]) if lines else {
                "job": name, "error": out.stderr[-3000:]}
            print(json.dumps(result), flush=True)
            if "error" not in result or result.get("oom"):
                break


if __name__ == "__main__":
    main()
