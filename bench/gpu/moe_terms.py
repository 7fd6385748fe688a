"""Measures, on a real GPU, what a mixture-of-experts MLP block holds for
backward against memgate's MoeMlpActivations (estimator/moe_terms.cc), for
one GPU (EP = ETP = 1, so every routed copy is processed locally):

  router   fp32 scores kept for the softmax backward: 4 * T * E bytes
  experts  each of the T*k routed copies: its first GEMM's input (2h) and
           the SwiGLU FFN's activations, 8 bytes per unit of width (8f)
  combine  the k expert outputs of each token, kept to take the gradient
           of the routing probabilities: 2h per copy

The block is written the way Megatron-Core's MoE layer works (router,
top-k, permute, per-expert SwiGLU, unpermute weighted by the probs and
scatter-added back), in plain PyTorch. (A first version unpermuted with
index_copy, whose backward keeps its source: one more 2h per copy, 21-29%
above memgate; Megatron's scatter-add keeps only indices.) Bytes held = memory allocated after the forward pass minus
before it, minus the block's output, after a warm-up pass.

    python3 bench/gpu/moe_terms.py > results.json
"""

import json
import sys

import torch
import torch.nn.functional as F

DEV = "cuda"
DT = torch.bfloat16


def moe_block(x, router, w_gate_up, w_down, k):
    tokens, h = x.shape
    experts = router.shape[1]
    scores = torch.softmax((x @ router).float(), dim=-1)  # fp32, T x E
    probs, chosen = torch.topk(scores, k, dim=-1)  # T x k
    flat = chosen.reshape(-1)
    order = torch.argsort(flat)
    token_of_copy = order // k
    permuted = x.index_select(0, token_of_copy)  # T*k x h, by expert
    counts = torch.bincount(flat, minlength=experts).tolist()
    outputs = []
    start = 0
    for e, n in enumerate(counts):
        chunk = permuted[start:start + n]
        gate, up = (chunk @ w_gate_up[e]).chunk(2, dim=-1)
        outputs.append((F.silu(gate) * up) @ w_down[e])
        start += n
    expert_out = torch.cat(outputs)  # T*k x h, by expert
    # Megatron's unpermute (moe_utils.py): weight each copy by its routing
    # probability (which keeps the expert output for the probs' gradient),
    # then scatter-add the copies back to their tokens (which keeps only
    # the indices).
    permuted_probs = probs.reshape(-1).index_select(0, order)
    weighted = expert_out * permuted_probs.unsqueeze(-1).to(DT)
    index = token_of_copy.unsqueeze(-1).expand(-1, h)
    return torch.zeros(tokens, h, device=DEV, dtype=DT).scatter_add(0, index, weighted)


def held_bytes(tokens, h, f, experts, k):
    g = lambda *shape: (torch.randn(*shape, device=DEV, dtype=DT) * 0.02).requires_grad_()
    x = g(tokens, h)
    router = g(h, experts)
    w_gate_up = g(experts, h, 2 * f)
    w_down = g(experts, f, h)
    out = moe_block(x, router, w_gate_up, w_down, k)  # warm-up
    out.sum().backward()
    del out
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    out = moe_block(x, router, w_gate_up, w_down, k)
    torch.cuda.synchronize()
    held = torch.cuda.memory_allocated() - before - out.numel() * out.element_size()
    del out
    return held


def memgate_bytes(tokens, h, f, experts, k):
    router = 4 * tokens * experts
    copies = tokens * k
    return router + copies * (2 * h + 8 * f) + copies * 2 * h


def main():
    results = []
    for tokens, h, f, experts, k in [
        (4096, 2048, 1408, 16, 2),
        (4096, 2048, 1408, 16, 4),
        (4096, 2048, 1408, 64, 8),
        (8192, 4096, 1536, 32, 8),
    ]:
        measured = held_bytes(tokens, h, f, experts, k)
        model = memgate_bytes(tokens, h, f, experts, k)
        results.append({
            "tokens": tokens, "hidden": h, "expert_ffn": f, "experts": experts,
            "topk": k, "measured_bytes": measured, "memgate_bytes": model,
            "ratio": measured / model,
        })
        print(results[-1], file=sys.stderr)
    json.dump({"device": torch.cuda.get_device_name(),
               "torch": torch.__version__, "results": results}, sys.stdout,
              indent=1)


if __name__ == "__main__":
    main()
