#!/usr/bin/env bash
# The load generator runs, stops by itself, sees no errors and prints its
# closing line. Performance itself is judged by bench/RESULTS.md runs, not
# here.
set -u
load="$1"; server="$2"
output=$(timeout 60 "$load" --seconds=1 --concurrency=8 --server_binary="$server" 2>/dev/null)
code=$?
echo "$output"
[ "$code" -eq 0 ] || { echo "load exited $code"; exit 1; }
tail -n 1 <<< "$output" | grep -qE '^admit_qps=[0-9]+ empty_qps=[0-9]+ ratio=[0-9.]+ admit_p99_us=[0-9]+$' ||
  { echo "missing the closing line"; exit 1; }
grep -q '^admit: [0-9]* calls, 0 errors' <<< "$output" || exit 1
grep -q '^empty: [0-9]* calls, 0 errors' <<< "$output" || exit 1
