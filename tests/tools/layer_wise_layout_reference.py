#!/usr/bin/env python3
"""Runs Megatron-LM's own layer-wise layout code on stand-in parameters.

memgate's estimator/layer_wise_layout.cc mirrors
LayerWiseDistributedOptimizer._compute_per_buffer_param_layout; this prints
what Megatron's function itself computes for the shapes given, so the C++
test's expectations come from the source, not from memgate.

usage: layer_wise_layout_reference.py MEGATRON_FILE DP BUCKET_SIZE|none \
           ROWSxCOLS[*COUNT] ...
(estimator/layer_wise_layout_test.cc names the calls its figures came from)
  MEGATRON_FILE: megatron/core/optimizer/layer_wise_optimizer.py of the
  release (e.g. `git show core_v0.19.0:megatron/core/optimizer/
  layer_wise_optimizer.py > lw.py`); shapes in forward order.
Prints: the buffer's padded elements, then each shard's owned elements.
No torch needed: the functions read only .data.nelement(), .data.shape,
.dim() and getattr.
"""
import ast
import logging
import math
import sys
import types
from typing import Dict, List, Optional, Tuple


def pad_to_divisor(value, divisor):
    return int(math.ceil(value / divisor) * divisor)


def pad_param_start(i):
    return pad_to_divisor(i, 64)


def bucket_end_divisor(dp, busbw):
    return math.lcm(dp, 128, 2**16) if busbw else math.lcm(dp, 128)


class PerBufferParamLayout:
    def __init__(self, **kw):
        self.__dict__.update(kw)


class Data:
    def __init__(self, shape):
        self.shape = shape

    def nelement(self):
        return self.shape[0] * self.shape[1]


class Param:
    def __init__(self, rows, cols):
        self.data = Data((rows, cols))

    def dim(self):
        return 2


def load(path):
    tree = ast.parse(open(path).read())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef)
               and n.name == 'LayerWiseDistributedOptimizer')
    keep = [f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name in
            ('_shard_divisor', '_compute_per_buffer_param_layout')]
    cls.body = keep
    cls.bases = []
    module = ast.Module(body=[cls], type_ignores=[])
    ns = dict(math=math, logging=logging, logger=logging.getLogger('x'),
              log_single_rank=lambda *a, **k: None,
              PerBufferParamLayout=PerBufferParamLayout,
              pad_to_divisor=pad_to_divisor, pad_param_start=pad_param_start,
              bucket_end_divisor=bucket_end_divisor, torch=types.SimpleNamespace(
                  nn=types.SimpleNamespace(Parameter=object)),
              List=List, Dict=Dict, Tuple=Tuple, Optional=Optional)
    exec(compile(module, path, 'exec'), ns)
    return ns['LayerWiseDistributedOptimizer']


def main():
    path, dp, bucket = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    bucket = None if bucket == 'none' else int(bucket)
    params = []
    for spec in sys.argv[4:]:
        shape, _, count = spec.partition('*')
        rows, cols = (int(x) for x in shape.split('x'))
        params += [Param(rows, cols) for _ in range(int(count or 1))]
    lw = load(path)
    ddp = types.SimpleNamespace(pad_buckets_for_high_nccl_busbw=False)
    layout = lw._compute_per_buffer_param_layout(params, bucket, dp, ddp)
    total = layout.bucket_indices[-1][1] if layout.bucket_indices else 0
    owned = [0] * dp
    for p, (start, end, b) in layout.param_index_map.items():
        b0, b1 = layout.bucket_indices[b]
        shard = (start - b0) // ((b1 - b0) // dp)
        owned[shard] += end - start
    print(total, len(layout.bucket_indices))
    print(' '.join(str(x) for x in owned))


main()
