#!/usr/bin/env bash
# Builds memgate's libFuzzer targets with clang (-fsanitize=fuzzer,address,
# undefined) against Debian's protobuf and Abseil, and runs each for a
# bounded time from its checked-in seed corpus. Fails on any crash, leak,
# sanitizer report or timeout; a crashing input is kept under
# $FUZZ_ARTIFACTS (default /tmp/memgate-fuzz-artifacts) to add to the corpus.
#
#   tests/fuzz/run_fuzzers.sh [SECONDS_EACH]   (default 30)
set -uo pipefail
seconds=${1:-30}
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"

if ! command -v clang++ >/dev/null || ! ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo=sudo
  $sudo apt-get update -q && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q clang libclang-rt-dev
fi

build=$(mktemp -d /tmp/memgate-fuzz.XXXXXX)
artifacts=${FUZZ_ARTIFACTS:-/tmp/memgate-fuzz-artifacts}
mkdir -p "$artifacts"
trap 'rm -rf "$build"' EXIT

protoc -I. --cpp_out="$build" proto/memgate.proto proto/hf_config.proto || exit 1
flags=(-std=c++17 -O1 -g -fno-omit-frame-pointer -I. -I"$build"
       -fsanitize=address,undefined -fno-sanitize-recover=all)
libs=$(pkg-config --libs protobuf absl_status absl_statusor absl_strings \
  absl_str_format absl_time absl_synchronization)

# The libraries once, instrumented for coverage: every source of estimator/,
# readers/, planner/ and admission/ but their tests and tools (listed, not
# named, so a new file cannot be left out).
objects=()
for src in $(ls estimator/*.cc readers/*.cc planner/*.cc admission/*.cc |
             grep -vE '_(test|doc)\.cc$') \
           "$build"/proto/memgate.pb.cc "$build"/proto/hf_config.pb.cc; do
  obj="$build/$(basename "$src" .cc).o"
  clang++ "${flags[@]}" -fsanitize=fuzzer-no-link -c "$src" -o "$obj" || exit 1
  objects+=("$obj")
done

passed=0; failed=0
for target in megatron_args hf_config job_reader estimator plan_request \
              shell_line; do
  binary="$build/${target}_fuzzer"
  if ! clang++ "${flags[@]}" -fsanitize=fuzzer "tests/fuzz/${target}_fuzzer.cc" \
       "${objects[@]}" $libs -o "$binary"; then
    echo "fuzz ${target}: FAILED to build"; failed=$((failed + 1)); continue
  fi
  corpus="$build/corpus-$target"
  mkdir -p "$corpus"
  cp "tests/fuzz/corpus/$target"/* "$corpus"/
  log="$build/$target.log"
  if "$binary" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
       -artifact_prefix="$artifacts/${target}-" -print_final_stats=1 \
       "$corpus" > "$log" 2>&1; then
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    echo "fuzz ${target}: ok (${runs:-?} inputs in ${seconds}s)"
    passed=$((passed + 1))
  else
    echo "fuzz ${target}: FAILED"; tail -n 40 "$log"
    failed=$((failed + 1))
  fi
done
echo "fuzz: ${passed} passed, ${failed} failed"
[ "$failed" -eq 0 ]
