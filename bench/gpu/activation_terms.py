"""Measures, on a real GPU, the activation terms memgate adds beyond the
paper, as differences between two runs of the same Llama layer (so that
what plain PyTorch stores differently from Megatron's fused kernels cancels
out):

  dropout   hidden dropout 0.1 on both residual branches vs none:
            memgate adds 2*s*b*h bytes a layer (1-byte masks) [Korthikanti 4].
  unfused   attention as softmax(QK^T)V (PyTorch's math kernel) vs
            FlashAttention: memgate adds 2*a*s^2*b (the softmax output).
  unfused+  the same with attention dropout 0.1: 5*a*s^2*b
            (softmax output, dropout mask, dropout output) [Korthikanti eq. 1].

Bytes held for backward = memory allocated after the forward pass minus
before it (the layer's input and weights exist before), minus the output,
after a warm-up pass (the first matmul allocates cuBLAS's 32 MiB workspace,
which would otherwise count against the first setting measured).

    python3 bench/gpu/activation_terms.py > results.json
"""

import json
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

DEV = "cuda"
DT = torch.bfloat16


def rms_norm(x, w):
    if hasattr(F, "rms_norm"):
        return F.rms_norm(x, (x.shape[-1],), w)
    return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-5).to(x.dtype) * w


def make_weights(h, h_ffn, a, k):
    d = h // a
    g = lambda *shape: (torch.randn(*shape, device=DEV, dtype=DT) * 0.02).requires_grad_()
    return {
        "ln1": torch.ones(h, device=DEV, dtype=DT, requires_grad=True),
        "ln2": torch.ones(h, device=DEV, dtype=DT, requires_grad=True),
        "qkv": g(h, (a + 2 * k) * d),
        "o": g(a * d, h),
        "gate_up": g(h, 2 * h_ffn),
        "down": g(h_ffn, h),
    }


def layer(x, w, a, k, hidden_dropout, attention, attention_dropout):
    b, s, h = x.shape
    d = h // a
    h1 = rms_norm(x, w["ln1"])
    qkv = h1 @ w["qkv"]
    q, kk, v = qkv.split([a * d, k * d, k * d], dim=-1)
    q = q.view(b, s, a, d).transpose(1, 2)
    kk = kk.view(b, s, k, d).transpose(1, 2).repeat_interleave(a // k, dim=1)
    v = v.view(b, s, k, d).transpose(1, 2).repeat_interleave(a // k, dim=1)
    backend = SDPBackend.FLASH_ATTENTION if attention == "flash" else SDPBackend.MATH
    with sdpa_kernel(backend):
        o = F.scaled_dot_product_attention(q, kk, v, is_causal=True,
                                           dropout_p=attention_dropout)
    o = o.transpose(1, 2).reshape(b, s, a * d) @ w["o"]
    x2 = x + F.dropout(o, hidden_dropout, training=True)
    h2 = rms_norm(x2, w["ln2"])
    gate, up = (h2 @ w["gate_up"]).chunk(2, dim=-1)
    down = (F.silu(gate) * up) @ w["down"]
    return x2 + F.dropout(down, hidden_dropout, training=True)


def held_bytes(shape, w, a, k, **setting):
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    x = torch.randn(*shape, device=DEV, dtype=DT, requires_grad=True)
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    out = layer(x, w, a, k, **setting)
    torch.cuda.synchronize()
    held = torch.cuda.memory_allocated() - before - out.numel() * out.element_size()
    out.sum().backward()  # the step completes; nothing is left behind
    del out, x
    for p in w.values():
        p.grad = None
    return held


def dropout_alone(n, p):
    """Bytes a lone dropout on n bf16 elements keeps for backward."""
    torch.cuda.synchronize()
    t = torch.randn(n, device=DEV, dtype=DT, requires_grad=True)
    y = t * 1.0  # a non-leaf input, as in the layer
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    out = F.dropout(y, p, training=True)
    torch.cuda.synchronize()
    held = torch.cuda.memory_allocated() - before - out.numel() * out.element_size()
    del out, y, t
    return held


def main():
    # Megatron's unfused softmax keeps bf16 (unless
    # --attention-softmax-in-fp32); PyTorch's math kernel upcasts unless
    # told not to.
    if "--fp32-math" not in sys.argv:
        torch.backends.cuda.allow_fp16_bf16_reduction_math_sdp(True)
    # Llama-3.1-8B's layer at a size one H100 takes in plain PyTorch.
    h, h_ffn, a, k = 4096, 14336, 32, 8
    b, s = 1, 4096
    w = make_weights(h, h_ffn, a, k)
    shape = (b, s, h)
    base = dict(hidden_dropout=0.0, attention="flash", attention_dropout=0.0)
    # The first matmul allocates cuBLAS's workspace (32 MiB on Hopper,
    # counted by the allocator): warm up before measuring.
    held_bytes(shape, w, a, k, **base)
    flash = held_bytes(shape, w, a, k, **base)
    dropout = held_bytes(shape, w, a, k, **{**base, "hidden_dropout": 0.1})
    unfused = held_bytes(shape, w, a, k, **{**base, "attention": "math"})
    unfused_dropout = held_bytes(shape, w, a, k, **{**base, "attention": "math",
                                                    "attention_dropout": 0.1})
    sbh = s * b * h
    as2b = a * s * s * b
    rows = [
        {"term": "hidden dropout masks", "measured": dropout - flash,
         "memgate": 2 * sbh},
        {"term": "unfused attention (softmax output)", "measured": unfused - flash,
         "memgate": 2 * as2b},
        {"term": "unfused attention with dropout", "measured": unfused_dropout - flash,
         "memgate": 5 * as2b},
    ]
    for r in rows:
        r["ratio"] = r["measured"] / r["memgate"]
    json.dump({
        "dropout_alone_1M_elements": {str(p): dropout_alone(1 << 20, p)
                                      for p in (0.0, 0.1)},
        "math_sdp_low_precision": "--fp32-math" not in sys.argv,
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "shape": {"b": b, "s": s, "h": h, "h_ffn": h_ffn, "a": a, "k": k},
        "flash_layer_bytes": flash,
        "paper_layer_bytes_minus_input": sbh * (12 + 4 * k / a + 8 * h_ffn / h) - 2 * sbh,
        "terms": rows,
    }, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
