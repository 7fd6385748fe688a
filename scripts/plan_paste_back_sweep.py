#!/usr/bin/env python3
"""Sweeps `memgate plan` against `memgate check`: every candidate's
Megatron arguments appended to the launch it was planned from must check
to the candidate's peak and zone (bench/RESULTS.md, session 27).

  bazel build //client:memgate
  python3 scripts/plan_paste_back_sweep.py [--memgate bazel-bin/client/memgate]

Prints, for each launch form, how many of its first 20 candidates were not
the candidate as pasted. CliPlanTest.EveryCandidateAppendedToItsLaunchIs
TheCandidate asserts the same in CI; this script is the wider sweep.
"""
import argparse
import json
import shlex
import subprocess

LLAMA = (
    "pretrain_gpt.py --num-layers 32 --hidden-size 4096 --ffn-hidden-size "
    "14336 --num-attention-heads 32 --group-query-attention "
    "--num-query-groups 8 --vocab-size 128256 --swiglu --normalization "
    "RMSNorm --disable-bias-linear --position-embedding-type rope --bf16 "
    "--untie-embeddings-and-output-weights --attention-dropout 0 "
    "--hidden-dropout 0 --use-flash-attn --micro-batch-size 1 "
    "--use-distributed-optimizer --no-create-attention-mask-in-dataloader "
    "--seq-length 8192 --global-batch-size 512 "
    "--tensor-model-parallel-size 2 --sequence-parallel ")

FORMS = {
    "layers per virtual stage": "--pipeline-model-parallel-size 4 "
                                "--num-layers-per-virtual-pipeline-stage 4",
    "virtual-stage count": "--pipeline-model-parallel-size 4 "
                           "--num-virtual-stages-per-pipeline-rank 2",
    "first/last counts": "--pipeline-model-parallel-size 4 "
                         "--decoder-first-pipeline-num-layers 7 "
                         "--decoder-last-pipeline-num-layers 7",
    "accounted switches": "--pipeline-model-parallel-size 2 "
                          "--account-for-embedding-in-pipeline-split "
                          "--account-for-loss-in-pipeline-split",
    "full recomputation": "--pipeline-model-parallel-size 2 "
                          "--recompute-granularity full "
                          "--recompute-method uniform --recompute-num-layers 1",
}


def sweep(memgate, launch, gpu, gpus, top):
    plan = subprocess.run(
        [memgate, "plan", "--format=json", f"--top={top}", f"--gpu={gpu}",
         f"--gpus={gpus}", "--"] + launch.split(),
        capture_output=True, text=True, check=True)
    candidates = json.loads(plan.stdout).get("candidates", [])
    wrong = 0
    for c in candidates:
        check = subprocess.run(
            [memgate, "check", "--format=json", f"--gpu={gpu}",
             f"--gpus={gpus}", "--"] + launch.split() +
            shlex.split(c["megatron_arguments"]),
            capture_output=True, text=True)
        if check.returncode not in (0, 1):
            wrong += 1
            continue
        decision = json.loads(check.stdout)
        peak = decision["estimate"]["peak"]
        total = peak.get("total_bytes", 0) + peak.get(
            "expert_imbalance_bytes", 0)
        if abs(total - c["peak_bytes"]) > 1:
            wrong += 1
    return wrong, len(candidates)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--memgate", default="bazel-bin/client/memgate")
    parser.add_argument("--top", type=int, default=20)
    args = parser.parse_args()
    for name, form in FORMS.items():
        wrong, n = sweep(args.memgate, LLAMA + form, "a100-40gb", 64, args.top)
        print(f"{name:28s} not the candidate: {wrong}/{n}")


if __name__ == "__main__":
    main()
