#!/usr/bin/env bash
# test_fuzz_smoke.sh — a short run of every libFuzzer target (tests/fuzz/, ASan + UBSan): builds
# them with clang in BUILD/fuzz-smoke (BUILD = the folder of BOSCH_BIN) and runs each for
# FUZZ_SMOKE_SECONDS (default 60) from its seeds, all at once. Fails on a crash, a sanitizer report,
# a leak or a target that does not start; prints each target's executions. The long runs and their
# figures: docs/fuzzing.md. Skips (77) when clang or its libFuzzer runtime is missing.
# Env: BOSCH_BIN, BOSCH_SOURCE_DIR, FUZZ_SMOKE_SECONDS.
set -u
BIN=${BOSCH_BIN:-build/bosch}
SRC=$(cd "${BOSCH_SOURCE_DIR:-.}" && pwd)
BUILD=$(cd "$(dirname "$BIN")" && pwd)
SECS=${FUZZ_SMOKE_SECONDS:-60}
command -v clang >/dev/null || { echo "SKIP: no clang"; exit 77; }
echo 'int LLVMFuzzerTestOneInput(const char *d, long n) { return 0; }' >"$BUILD/fuzz_probe.c"
if ! clang -fsanitize=fuzzer "$BUILD/fuzz_probe.c" -o "$BUILD/fuzz_probe" 2>/dev/null; then
  echo "SKIP: clang has no libFuzzer runtime (apt-get install libclang-rt-dev)"
  exit 77
fi
FB="$BUILD/fuzz-smoke"
if ! CC=clang CXX=clang++ cmake -S "$SRC" -B "$FB" -DBOSCH_FUZZ=ON -DBOSCH_CUDA=OFF -DBUILD_TESTING=OFF \
  -DCMAKE_BUILD_TYPE=Release >"$FB.configure.log" 2>&1; then
  cat "$FB.configure.log"
  echo "FAIL: configure of the fuzz build"
  exit 1
fi
targets=$(cmake --build "$FB" --target help | sed -n 's/^\.\.\. \(fuzz_[a-z_]*\).*/\1/p' | sort -u)
[[ -n "$targets" ]] || { echo "FAIL: no fuzz_* targets in $FB"; exit 1; }
# shellcheck disable=SC2086
if ! cmake --build "$FB" -j"$(nproc)" --target $targets >"$FB.build.log" 2>&1; then
  tail -40 "$FB.build.log"
  echo "FAIL: building $targets"
  exit 1
fi
OUT=$(mktemp -d /tmp/test_fuzz_smoke.XXXXXX)
trap 'rm -rf "$OUT"' EXIT
declare -A pid
for t in $targets; do
  s=${t#fuzz_}
  mkdir -p "$OUT/corpus_$s"
  (cd "$OUT" && exec "$FB/tests/fuzz/$t" "$OUT/corpus_$s" "$FB/tests/fuzz/seeds_$s" -max_total_time="$SECS" \
    -max_len=65536 -rss_limit_mb=2048 -timeout=25 -print_final_stats=1 >"$OUT/$t.log" 2>&1) &
  pid[$t]=$!
done
fails=0
for t in $targets; do
  wait "${pid[$t]}"
  rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$OUT/$t.log")
  if [[ $rc -eq 0 ]] && ! grep -qE "ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:" "$OUT/$t.log"; then
    echo "ok: $t ${SECS} s, ${execs:-?} executions, 0 crashes"
  else
    echo "FAIL: $t exit $rc; the end of its log:"
    tail -30 "$OUT/$t.log"
    ls "$OUT"/crash-* "$OUT"/leak-* "$OUT"/timeout-* 2>/dev/null
    fails=$((fails + 1))
  fi
done
[[ $fails -eq 0 ]] || exit 1
