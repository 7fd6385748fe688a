#!/bin/bash
# Each measured Megatron step (tests/testdata/h100_megatron_steps.tsv) next
# to memgate's estimate of its launch: stored activations over memgate's
# activation term, and the step's peak over the admitted figure. The
# script that measured them calls the model with no attention mask, as
# pretrain_gpt.py does under --no-create-attention-mask-in-dataloader.
# Usage (from the repository root): bazel build //:memgate && bash bench/measured_ratios.sh
set -euo pipefail
memgate=${MEMGATE:-bazel-bin/client/memgate}
grep -v '^#' tests/testdata/h100_megatron_steps.tsv |
  while IFS=$'\t' read -r job static stored peak device launch; do
    # shellcheck disable=SC2086  # the launch is words
    figures=$("$memgate" check --gpu=h100-80gb --format=json -- torchrun \
      --nproc-per-node 1 pretrain_gpt.py $launch \
      --no-create-attention-mask-in-dataloader 2>/dev/null |
      python3 -c 'import json, sys
p = json.load(sys.stdin)["estimate"]["peak"]
print(p["activation_bytes"], p["total_bytes"] + p.get("expert_imbalance_bytes", 0))')
    echo "$job $stored $peak $figures"
  done |
  awk '{printf "%-22s stored/activations %.3f  peak/admitted %.3f  admitted %.2f GiB\n",
        $1, $2 / $4, $3 / $5, $5 / 2^30}'
