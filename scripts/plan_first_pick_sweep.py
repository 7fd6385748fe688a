#!/usr/bin/env python3
"""Compares the first candidates of two memgate builds over a grid of
plans: 8 catalog models x 4 cluster sizes x 3 sequence lengths x 3 global
batches (1M, 4M and 16M tokens a step) on H100s, 288 plans
(bench/RESULTS.md, session 28: the pipeline bubble in the rule group).

  python3 scripts/plan_first_pick_sweep.py OLD_MEMGATE NEW_MEMGATE

Prints how many plans changed their first candidate and the first
candidates' pipeline bubbles and cost-model speeds (relative to the
plan's fastest layout, 1 = best) under each build, and each change.
Only the printed tables are read: any two builds with `memgate plan`.
"""
import statistics
import subprocess
import sys

MODELS = ["llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b",
          "nemotron-4-340b", "mixtral-8x22b", "qwen3-30b-a3b",
          "qwen3-235b-a22b", "deepseek-v3"]
GPUS = [64, 512, 4096, 16384]
SEQS = [4096, 32768, 131072]
TOKENS = [1 << 20, 4 << 20, 16 << 20]


def first_candidate(memgate, model, gpus, seq, gbs):
    """(layout, zone, bubble, speed) of the plan's first row, or None."""
    out = subprocess.run(
        [memgate, "plan", f"--model={model}", "--gpu=h100-80gb",
         f"--gpus={gpus}", f"--seq={seq}", f"--gbs={gbs}", "--top=1"],
        capture_output=True, text=True).stdout
    for line in out.splitlines():
        f = line.split()
        if len(f) > 9 and f[0] == "1" and f[1].startswith("("):
            return ("".join(f[1:5]), f[7], float(f[8].rstrip("%")),
                    float(f[9]))
    return None


def main():
    old_bin, new_bin = sys.argv[1], sys.argv[2]
    rows = []
    for model in MODELS:
        for gpus in GPUS:
            for seq in SEQS:
                for tokens in TOKENS:
                    gbs = max(1, tokens // seq)
                    rows.append(((model, gpus, seq, gbs),
                                 first_candidate(old_bin, model, gpus, seq,
                                                 gbs),
                                 first_candidate(new_bin, model, gpus, seq,
                                                 gbs)))
    changed = [r for r in rows if r[1] and r[2] and r[1][0] != r[2][0]]
    print(f"{len(rows)} plans, first candidate changed in {len(changed)}")
    for name, index in (("old", 1), ("new", 2)):
        green = [r[index] for r in rows if r[index] and r[index][1] == "GREEN"]
        bubbles = sorted(c[2] for c in green)
        speeds = [c[3] for c in green]
        print(f"{name}: {len(green)} GREEN first candidates; bubble median "
              f"{bubbles[len(bubbles) // 2]:.1f}% max {bubbles[-1]:.1f}%; "
              f"over 34%: {sum(b > 34.2 for b in bubbles)}; speed mean "
              f"{statistics.mean(speeds):.3f} min {min(speeds):.2f}")
    for request, old, new in changed:
        print("  %-16s %5d GPUs seq %6d gbs %4d: %s bubble %.1f%% speed "
              "%.2f -> %s bubble %.1f%% speed %.2f"
              % (request + (old[0], old[2], old[3], new[0], new[2], new[3])))


if __name__ == "__main__":
    main()
