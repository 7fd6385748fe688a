#!/usr/bin/env bash
# memgate_job_test must fail on a job memgate refuses, naming it and why:
# runs the same runner the macro uses on a RED job (58.33 GiB of 40).
set -u
runner="$1"; memgate="$2"; job="$3"
output=$("$runner" "$memgate" "" -- "$job" 2>&1)
code=$?
echo "$output"
[ "$code" -ne 0 ] || { echo "expected failure, got exit 0"; exit 1; }
grep -q "FAIL $job (exit 1): REFUSE \[RED\] peak 58.33 GiB" <<< "$output" ||
  { echo "the failure must name the job and the reason"; exit 1; }
grep -q "memgate would refuse 1 job(s)" <<< "$output" || exit 1
echo "ok: a refused job fails the test"
