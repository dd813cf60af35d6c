#!/usr/bin/env bash
# test_gpu_check.sh — scripts/gpu-check, the one script a session with a GPU runs (with minutes of
# device time and no chance to debug), dry-run here over the CPU emulator of the kernels
# (GPU_CHECK_EMU=1: tests/bosch_emu and the *_emu tests of this build, tiny shapes). Asserts that
# every step ran and passed (the PyTorch peer may skip when torch is not installed), that the
# summary carries the lines a GPU session reads (kernel errors, logit differences, the targets),
# and that the CSV files have their rows. Checks the script, not a GPU. No assertion depends on how
# fast this machine is: the dry run's step limits are scaled by 10 and its budget is large (they only
# guard against a hang), and the short-budget run's budget (24 s) is below what any step needs to
# start (20 s plus 5 s of margin), so every step is skipped however fast the machine is.
# Env: BOSCH_BIN (the built program; its folder is the build), BOSCH_SOURCE_DIR.
set -u
BIN=${BOSCH_BIN:-build/bosch}
SRC=${BOSCH_SOURCE_DIR:-.}
BUILD=$(cd "$(dirname "$BIN")" && pwd)
if [[ ! -x "$BUILD/tests/bosch_emu" ]]; then echo "FAIL: $BUILD/tests/bosch_emu not built"; exit 1; fi
OUT=$(mktemp -d /tmp/test_gpu_check.XXXXXX)
trap 'rm -rf "$OUT"' EXIT

OUT=$OUT GPU_CHECK_EMU=1 GPU_CHECK_BUILD=$BUILD GPU_CHECK_BUDGET=36000 GPU_CHECK_LIMIT_SCALE=10 bash "$SRC/scripts/gpu-check" >"$OUT/stdout" 2>&1
rc=$?
S="$OUT/summary.txt"
fails=0
check() { # check DESCRIPTION PATTERN: the summary has a line matching PATTERN
  if grep -qE "$2" "$S"; then echo "ok: $1"; else echo "FAIL: $1 (no line matching '$2')"; fails=$((fails + 1)); fi
}
[[ $rc -eq 0 ]] && echo "ok: gpu-check exit 0" || { echo "FAIL: gpu-check exit $rc"; fails=$((fails + 1)); }
for s in mkmodel test_cuda test_backend_cuda test_backend test_device test_eval_cuda bench_8k bench_8k_wmma bench_8k_fp32 \
  bench_batch bench_eval bench_sweep_64 bench_sweep_128; do
  check "step $s passed" "^gpu-check: $s +ok "
done
check "peer ran or skipped cleanly" "^gpu-check: torch_peer +(ok|SKIPPED)"
check "tensor-core kernel errors quoted" "test_cuda: prefill \(tensor cores mma\) .*max \|err\|"
check "GPU-vs-CPU logit differences quoted" "test_backend_cuda: prefill: max \|logit diff\|"
check "evaluator on the GPU quoted" "bench_eval: evaluations/s .*cuda"
check "targets section" "^targets:"
check "prefill target line" "^  prefill 128, all full: ours [0-9]+ tok/s \(attention wmma [0-9]+, fp32 [0-9]+\)"
check "batch target line" "^  target T=256 batch=2 .*rho 0.875 / rho 0 = .*KV bytes"
for f in bench_8k bench_8k_wmma bench_8k_fp32 bench_batch bench_sweep_64 bench_sweep_128; do
  n=$(($(wc -l <"$OUT/$f.csv") - 1))
  [[ $n -ge 1 ]] && echo "ok: $f.csv has $n rows" || { echo "FAIL: $f.csv has no rows"; fails=$((fails + 1)); }
done
n=$(($(wc -l <"$OUT/bench_sweep_128.csv") - 1))
[[ $n -eq 5 ]] && echo "ok: a sweep length has 5 ratios" || { echo "FAIL: bench_sweep_128.csv has $n rows, want 5"; fails=$((fails + 1)); }
[[ -s "$OUT/targets.txt" ]] && echo "ok: targets.txt written" || { echo "FAIL: no targets.txt"; fails=$((fails + 1)); }
# a budget too small for any step: every step is skipped (none overruns) and the targets file survives
OUT2="$OUT/short"
OUT=$OUT2 GPU_CHECK_EMU=1 GPU_CHECK_BUILD=$BUILD GPU_CHECK_BUDGET=24 bash "$SRC/scripts/gpu-check" >"$OUT/stdout2" 2>&1
# 12: mkmodel, the five tests, bench_8k and its two kernels, bench_batch, bench_eval and the first
# sweep length (the sweep stops at its first skip)
nskip=$(grep -cE "SKIPPED \(budget" "$OUT2/summary.txt")
nran=$(grep -cE "^gpu-check: [a-z_0-9]+ +(ok|FAILED)" "$OUT2/summary.txt")
if [[ $nskip -ge 12 && $nran -eq 0 && -e "$OUT2/targets.txt" && ! -e "$OUT2/bench_8k.csv" ]]; then
  echo "ok: a 24 s budget skips all $nskip steps and still writes targets.txt"
else
  echo "FAIL: GPU_CHECK_BUDGET=24: $nskip steps skipped, $nran ran (want >= 12 and 0), targets.txt $( [[ -e $OUT2/targets.txt ]] && echo present || echo missing)"
  fails=$((fails + 1)); cat "$OUT2/summary.txt"
fi
if [[ $fails -gt 0 ]]; then
  echo "--- summary ---"; cat "$S"; echo "--- stdout ---"; tail -30 "$OUT/stdout"
fi
exit $((fails > 0))
