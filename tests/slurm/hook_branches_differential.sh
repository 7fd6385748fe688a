#!/usr/bin/env bash
# The hook's `if` blocks and arrays against bash (see
# hook_branches_differential.lua): every launch bash runs, under every
# value of the conditions the hook cannot know, is one the hook checks.
#
#   tests/slurm/hook_branches_differential.sh HOOK_DIR [SEED] [SCRIPTS]
set -uo pipefail
hooks=$(readlink -f "${1:?usage: $0 HOOK_DIR [SEED] [SCRIPTS]}")
here=$(dirname "$0")
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/memgate-branches.XXXXXX")
trap 'rm -rf "$work"' EXIT
lua5.1 "$here/hook_branches_differential.lua" "$hooks" "$work" \
  "${2:-1}" "${3:-300}" > /dev/null || exit 1
scripts=0 runs=0 refused=0 missed=0
for script in "$work"/s*.sh; do
  scripts=$((scripts + 1))
  hook=${script%.sh}.hook
  # A word left as written ($...): memgate refuses the script.
  if grep -qF '$' "$hook"; then refused=$((refused + 1)); continue; fi
  checked=$(while IFS= read -r line; do bash -c "set -f; $line"; done < "$hook")
  for c1 in 0 1; do
    for c2 in 0 1; do
      runs=$((runs + 1))
      while IFS= read -r ran; do
        [ -z "$ran" ] && continue
        if ! grep -qxF -- "$ran" <<< "$checked"; then
          missed=$((missed + 1))
          if [ "$missed" -le 3 ]; then
            echo "not checked: '$ran' (C1=$c1 C2=$c2) of:"
            cat "$script"
          fi
        fi
      done <<< "$(E=e0 C1=$c1 C2=$c2 bash "$script" a1 2>/dev/null)"
    done
  done
done
echo "branches: $scripts scripts ($refused refused), $runs runs under" \
     "bash, $missed launches the hook did not check"
[ "$missed" -eq 0 ] && [ "$runs" -gt 0 ]
