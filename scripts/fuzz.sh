#!/usr/bin/env bash
# Coverage-guided fuzzing of the C API (tests/fuzz/capi_fuzz.cpp) with clang's libFuzzer, ASan and UBSan.
# Usage: bash scripts/fuzz.sh [MINUTES]      (default 10)
# (-len_control=0: inputs may be long from the start; a program of calls needs a few hundred bytes to reach compile
# and run, which the default slow growth of the length limit would take most of a run to allow.)
#
# Builds build-fuzz/ with clang-19 (-DSN_BUILD_FUZZ=ON -DSN_SANITIZE=ON), then fuzzes for MINUTES on one core,
# starting from the committed seed corpus (tests/fuzz/corpus) and the regression inputs (tests/fuzz/regressions).
# New inputs go to build-fuzz/corpus; a failing input is written to build-fuzz/artifacts/ and the script exits
# non-zero: minimise it (sn_fuzz_capi -minimize_crash=1 FILE), fix the cause, and commit the input under
# tests/fuzz/regressions so every ctest run replays it. With SN_FUZZ_MERGE=1 the corpus grown by the run is merged
# (minimised by coverage) back into tests/fuzz/corpus. Environment: SN_FUZZ_JOBS (parallel fuzzing processes,
# default 1), SN_JOBS (build jobs).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MINUTES="${1:-10}"
BUILD="$ROOT/build-fuzz"
CC="${SN_FUZZ_CC:-clang-19}" CXX="${SN_FUZZ_CXX:-clang++-19}"
if ! command -v "$CXX" >/dev/null 2>&1; then
  echo "fuzz.sh: $CXX not found (apt-get install clang-19; scripts/bootstrap.sh installs it)" >&2
  exit 1
fi
export CCACHE_BASEDIR="$ROOT" CCACHE_NOHASHDIR=1
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_C_FLAGS_DEBUG=-O1 -g" \
  "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g" -DCMAKE_C_COMPILER="$CC" -DCMAKE_CXX_COMPILER="$CXX" -DSN_BUILD_FUZZ=ON \
  -DSN_SANITIZE=ON -DSN_BUILD_BENCH=OFF -DSN_BUILD_EXAMPLES=OFF "-DSN_SHARED_DIR=${SN_SHARED_DIR:-$ROOT/../shared}" \
  >/dev/null
cmake --build "$BUILD" -j "${SN_JOBS:-$(nproc)}" --target sn_fuzz_capi
mkdir -p "$BUILD/corpus" "$BUILD/artifacts"
# Leaks are checked per input (libFuzzer's -detect_leaks); UBSan stops at the first report.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1:intercept_tls_get_addr=0:use_sigaltstack=0}"  # see test.sh
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
PARALLEL=()
if [[ "${SN_FUZZ_JOBS:-1}" != 1 ]]; then  # one log per job, fuzz-N.log in build-fuzz/
  PARALLEL=(-jobs="$SN_FUZZ_JOBS" -workers="$SN_FUZZ_JOBS")
  cd "$BUILD"
fi
set +e
"$BUILD/tests/sn_fuzz_capi" -max_total_time=$((MINUTES * 60)) -timeout=60 -rss_limit_mb=6144 -max_len=4096 -len_control=0 \
  "${PARALLEL[@]}" -print_final_stats=1 -artifact_prefix="$BUILD/artifacts/" \
  "$BUILD/corpus" "$ROOT/tests/fuzz/corpus" "$ROOT/tests/fuzz/regressions"
rc=$?
set -e
if ((rc > 128)) && [[ -z "$(ls -A "$BUILD/artifacts")" ]]; then
  # Killed by a signal before libFuzzer could save the input: with use_sigaltstack=0 a stack overflow has no
  # stack to report on. The same run replays with its seed (the "INFO: Seed:" line above) from the same
  # starting corpus (move build-fuzz/corpus aside), where ASan can report it and libFuzzer save it.
  echo "fuzz.sh: the fuzzer died from signal $((rc - 128)) without saving the input; replay the run with" \
    "ASAN_OPTIONS=${ASAN_OPTIONS/use_sigaltstack=0/use_sigaltstack=1} and -seed=<its seed> -runs=<its last #>," \
    "starting from an empty build-fuzz/corpus" >&2
fi
if [[ "${SN_FUZZ_MERGE:-0}" == 1 && $rc == 0 ]]; then
  mkdir -p "$BUILD/merged"
  "$BUILD/tests/sn_fuzz_capi" -merge=1 -max_len=4096 "$BUILD/merged" "$ROOT/tests/fuzz/corpus" "$BUILD/corpus"
  rm -f "$ROOT/tests/fuzz/corpus"/*
  cp "$BUILD/merged"/* "$ROOT/tests/fuzz/corpus/"
  echo "fuzz.sh: tests/fuzz/corpus now holds $(ls "$ROOT/tests/fuzz/corpus" | wc -l) inputs"
fi
exit $rc
