#!/usr/bin/env bash
# test_gpu_generate_emu.sh — the real default model through the whole GPU code path (kernels,
# backend, KV cache, decode) over the CPU emulator (tests/bosch_emu --device cuda) gives the same
# greedy text as the CPU engine: all heads full, and all heads SWA with a window of 8 and 4 sinks
# (the rings wrap many times). The GPU path rounds weights and GEMM inputs to bf16, so the CPU side
# runs with --precision bf16 and decodes through the same GEMM weights (--decode-weights gemm, not
# the file's 8-bit blocks); equality then holds while no greedy step is a near-tie between two
# tokens: it does on these prompts and lengths. Takes
# about a minute (the emulator runs the 135M model at ~3 tokens/s). Skips (77) without the model
# or without bf16 GEMMs on this CPU.
# Env: BOSCH_BIN (the CPU program; tests/bosch_emu is beside it), BOSCH_MODEL.
set -u
BIN=${BOSCH_BIN:-build/bosch}
EMU=$(dirname "$BIN")/tests/bosch_emu
MODEL=${BOSCH_MODEL:-models/SmolLM2-135M-Instruct.Q4_1.gguf}
[[ -f "$MODEL" ]] || { echo "skip: model $MODEL not found"; exit 77; }
[[ -x "$EMU" ]] || { echo "FAIL: $EMU not built"; exit 1; }
# the CPU side needs bf16 GEMMs: a CPU whose oneDNN has no bf16 matmul (AVX2 only) refuses them
probe=$("$BIN" generate "$MODEL" --prompt x -n 1 --device cpu --precision bf16 2>&1 >/dev/null)
if grep -q "no bf16 matmul" <<<"$probe"; then echo "skip: ${probe##*: }"; exit 77; fi
fails=0
same() { # same NAME ARGS...: CPU and emulated-GPU greedy texts must be equal
  local name=$1
  shift
  local cpu gpu
  cpu=$("$BIN" generate "$MODEL" "$@" --device cpu --precision bf16 --decode-weights gemm 2>/dev/null)
  gpu=$("$EMU" generate "$MODEL" "$@" --device cuda 2>/tmp/gpu_generate_emu.$$)
  if ! grep -q "on cuda" /tmp/gpu_generate_emu.$$; then
    echo "FAIL: $name: the emulated run did not say it ran on cuda"; fails=$((fails + 1))
  elif [[ -n "$cpu" && "$cpu" == "$gpu" ]]; then
    echo "ok: $name: '$cpu'"
  else
    echo "FAIL: $name: cpu '$cpu' vs gpu '$gpu'"; fails=$((fails + 1))
  fi
  rm -f /tmp/gpu_generate_emu.$$
}
same "all full" --prompt "What is the capital of France?" --chat -n 12
same "all SWA, window 8, sinks 4" --prompt "Write one sentence about the sea." --chat -n 16 --all-swa --window 8 --sinks 4
exit $((fails > 0))
