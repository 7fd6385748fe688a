#!/usr/bin/env bash
# Runs `memgate check` on every training job given, and fails naming each
# job memgate would refuse, and why. Used by memgate_job_test (defs.bzl).
#
#   job_test_runner.sh MEMGATE GPU [check flags...] -- JOB...
#
# A job is a memgate.v1.Job file (.json, .textproto, .txtpb, .pbtxt), which
# names its own GPU, or a launch script (anything else): its Megatron launch
# line (the first line, after joining backslash continuations, that mentions
# pretrain_gpt.py or Megatron's parallelism arguments) is checked on GPU
# (a catalog name; "" when there are no launch scripts).
set -u
memgate="$1"
gpu="$2"
shift 2
flags=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do flags+=("$1"); shift; done
[ $# -gt 0 ] && shift
[ $# -gt 0 ] || { echo "job_test_runner: no jobs given" >&2; exit 2; }

launch_line() {
  # Joins continuation lines, drops comments, keeps the first launch.
  sed -e ':a' -e '/\\$/N; s/\\\n/ /; ta' "$1" |
    grep -v '^[[:space:]]*#' |
    grep -m1 -E 'pretrain_gpt\.py|--tensor-model-parallel-size|--num-layers'
}

failed=()
for job in "$@"; do
  case "$job" in
    *.json|*.textproto|*.txtpb|*.pbtxt)
      output=$("$memgate" check "${flags[@]}" --job="$job" 2>&1)
      code=$?
      ;;
    *)
      line=$(launch_line "$job")
      if [ -z "$line" ]; then
        output="no Megatron launch found in $job"
        code=2
      else
        read -r -a words <<< "$line"
        output=$("$memgate" check ${gpu:+--gpu="$gpu"} "${flags[@]}" -- "${words[@]}" 2>&1)
        code=$?
      fi
      ;;
  esac
  first=$(printf '%s\n' "$output" | head -n 1)
  if [ "$code" -eq 0 ]; then
    echo "PASS $job: $first"
  else
    echo "FAIL $job (exit $code): $first"
    printf '%s\n' "$output" | sed -n '2,6p' | sed 's/^/    /'
    failed+=("$job")
  fi
done

if [ ${#failed[@]} -gt 0 ]; then
  echo
  echo "memgate would refuse ${#failed[@]} job(s): ${failed[*]}"
  exit 1
fi
echo
echo "memgate admits all $# job(s)"
