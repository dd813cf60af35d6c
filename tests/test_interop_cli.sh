#!/usr/bin/env bash
# test_interop_cli.sh — `bosch export` and `bosch import` on the real model (SmolLM2-135M, llama
# architecture, 30 layers x 3 KV heads, context 8192) and on the qwen3 fixture
# (tests/fixtures/tiny_qwen3.gguf, 2 layers x 2 KV heads), each file read back by an independent
# reader from .venv (scripts/setup: pinned transformers and numpy):
#  1. import of a DuoAttention TSV of distinct gates cut at --ratio 0.5 equals numpy's
#     sparsify_attention_heads rule (DuoAttention duo_attn/utils.py, without its tie noise) run on
#     the same file; --threshold 0.6 equals gate >= 0.6;
#  2. duo export -> import gives the same mask (every row's attention);
#  3. hf: transformers' AutoConfig reads the patch (LlamaConfig for SmolLM2, Qwen3Config for the
#     fixture) and reports layer_types = the servable projection computed here in Python from the
#     mask file, passes layer_type_validation, and Qwen3Config keeps sliding_window = W;
#  4. trtllm: the JSON matches TensorRT-LLM's documented KvCacheConfig schema (max_attention_window
#     List[int], >= 1 entry; sink_token_length int) with W on SWA layers and 8192 on full ones (the
#     tensorrt_llm package is a multi-GB GPU wheel, so the schema is checked, not the library);
#  5. gguf is refused for llama naming the architectures llama.cpp would honour, writing nothing;
#  6. scores on the qwen3 fixture: CSV and the four JSON files agree, ranks are the scores' order,
#     each ranking cut at 0.5 in Python equals `bosch search --method M`'s mask;
#  7. bad files: wrong shape, non-numeric cell, gate > 1, a missing config key, fractional gates
#     without a cut, each refused naming file, line/column or field, and value.
# Env: BOSCH_BIN, BOSCH_MODEL, BOSCH_SOURCE_DIR (exit 77 without the model or .venv).
set -u
SRC=${BOSCH_SOURCE_DIR:-.}
BIN=${BOSCH_BIN:-build/bosch}
MODEL=${BOSCH_MODEL:-models/SmolLM2-135M-Instruct.Q4_1.gguf}
PY=$SRC/.venv/bin/python
QWEN=$SRC/tests/fixtures/tiny_qwen3.gguf
if [[ ! -x "$BIN" ]]; then echo "FAIL: $BIN is not an executable"; exit 1; fi
if [[ ! -f "$MODEL" ]]; then echo "skip: model $MODEL not found"; exit 77; fi
if [[ ! -x "$PY" ]]; then echo "skip: $PY not found (run scripts/setup)"; exit 77; fi
WORK=$(mktemp -d /tmp/test_interop_cli.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
fails=0
pass() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
check() { # NAME CMD...: the command succeeds
  local name=$1
  shift
  if "$@" >"$WORK/log" 2>&1; then pass "$name"; else fail "$name: $(tail -3 "$WORK/log")"; fi
}
expect_refusal() { # NAME SUBSTRING ARGS...: bosch ARGS fails and says SUBSTRING
  local name=$1 text=$2
  shift 2
  if "$BIN" "$@" >"$WORK/out" 2>&1; then fail "$name: accepted"; return; fi
  if grep -qF -- "$text" "$WORK/out"; then pass "$name"; else fail "$name: said '$(cat "$WORK/out")', not '$text'"; fi
}

# 1. a DuoAttention pattern of distinct gates (seeded), cut by ratio and by threshold
mkdir -p "$WORK/gates"
"$PY" - "$WORK/gates" <<'PY'
import json, sys, numpy as np
d = sys.argv[1]
g = np.random.default_rng(7).permutation(90).reshape(30, 3) / 89.0  # distinct gates in [0, 1]
np.savetxt(f"{d}/full_attention_heads.tsv", g, delimiter="\t")      # DuoAttention's writer
json.dump({"sink_size": 4, "recent_size": 64, "other": "ignored"}, open(f"{d}/config.json", "w"))
PY
cat >"$WORK/ref.py" <<'PY'
import csv, sys, numpy as np
# DuoAttention's sparsify_attention_heads (duo_attn/utils.py) without the tie-breaking noise
g = np.loadtxt(sys.argv[1], dtype=float, delimiter="\t")
mode, v = sys.argv[3], float(sys.argv[4])
thr = np.quantile(g, v) if mode == "ratio" else v
want = (g >= thr).astype(int)
rows = list(csv.DictReader(open(sys.argv[2])))
got = np.zeros_like(want)
for r in rows:
    got[int(r["layer"]), int(r["kv_head"])] = r["attention"] == "full"
assert len(rows) == want.size, len(rows)
assert (got == want).all(), (got, want)
assert all(r["window"] == "64" and r["sinks"] == "4" for r in rows)
print("swa heads", int((1 - got).sum()))
PY
check "import --ratio 0.5 runs" "$BIN" import "$WORK/gates" --format duo --ratio 0.5 --out "$WORK/cut.csv" --model "$MODEL"
check "ratio cut = numpy's sparsify_attention_heads" "$PY" "$WORK/ref.py" "$WORK/gates/full_attention_heads.tsv" "$WORK/cut.csv" ratio 0.5
check "import --threshold 0.6 of the .tsv path" "$BIN" import "$WORK/gates/full_attention_heads.tsv" --format duo --threshold 0.6 --out "$WORK/thr.csv" --model "$MODEL"
check "threshold cut = gate >= 0.6" "$PY" "$WORK/ref.py" "$WORK/gates/full_attention_heads.tsv" "$WORK/thr.csv" threshold 0.6

# 2. duo export -> import round trip
check "export duo" "$BIN" export "$WORK/cut.csv" --format duo --out "$WORK/duo" --model "$MODEL"
check "import duo (0/1 gates, no cut needed)" "$BIN" import "$WORK/duo" --format duo --out "$WORK/back.csv" --model "$MODEL"
if diff <(cut -d, -f2- "$WORK/cut.csv") <(cut -d, -f2- "$WORK/back.csv") >/dev/null; then
  pass "duo round trip gives the same mask"
else
  fail "duo round trip differs"
fi

# 3. hf through transformers; a mask with whole SWA layers: layers 0-9 all SWA, 10-29 mixed/full
{
  echo "model,n_layer,n_head_kv,window,sinks,ratio,layer,kv_head,q_heads,attention"
  for l in $(seq 0 29); do
    for h in 0 1 2; do
      a=full
      if [[ $l -lt 10 || ($l -lt 20 && $h -eq 0) ]]; then a=swa; fi
      echo "m,30,3,128,4,0.444444,$l,$h,$((3 * h));$((3 * h + 1));$((3 * h + 2)),$a"
    done
  done
} >"$WORK/layers.csv"
cat >"$WORK/hf.py" <<'PY'
import csv, json, os, shutil, sys
from transformers import AutoConfig
from transformers.configuration_utils import layer_type_validation
patch, mask, kind = sys.argv[1], sys.argv[2], sys.argv[3]
rows = list(csv.DictReader(open(mask)))
L = int(rows[0]["n_layer"]); W = int(rows[0]["window"])
swa = [all(r["attention"] == "swa" for r in rows if int(r["layer"]) == l) for l in range(L)]
want = ["sliding_attention" if s else "full_attention" for s in swa]
d = os.path.join(os.path.dirname(patch), "hf_" + kind)
os.makedirs(d, exist_ok=True)
shutil.copy(patch, os.path.join(d, "config.json"))
cfg = AutoConfig.from_pretrained(d)
assert type(cfg).__name__ == kind, type(cfg).__name__
assert cfg.num_hidden_layers == L
assert cfg.layer_types == want, (cfg.layer_types, want)
layer_type_validation(cfg.layer_types, cfg.num_hidden_layers)
assert cfg.sliding_window == (W if any(swa) else None), cfg.sliding_window
print(kind, sum(swa), "sliding layers")
PY
check "export hf (llama)" "$BIN" export "$WORK/layers.csv" --format hf --out "$WORK/hf.json" --model "$MODEL"
check "transformers LlamaConfig reads layer_types" "$PY" "$WORK/hf.py" "$WORK/hf.json" "$WORK/layers.csv" LlamaConfig
{
  echo "model,n_layer,n_head_kv,window,sinks,ratio,layer,kv_head,q_heads,attention"
  echo "q,2,2,16,0,0.750000,0,0,0;1,swa"
  echo "q,2,2,16,0,0.750000,0,1,2;3,swa"
  echo "q,2,2,16,0,0.750000,1,0,0;1,full"
  echo "q,2,2,16,0,0.750000,1,1,2;3,swa"
} >"$WORK/qwen.csv"
check "export hf (qwen3)" "$BIN" export "$WORK/qwen.csv" --format hf --out "$WORK/hfq.json" --model "$QWEN"
check "transformers Qwen3Config reads layer_types and sliding_window" "$PY" "$WORK/hf.py" "$WORK/hfq.json" "$WORK/qwen.csv" Qwen3Config

# 4. trtllm against KvCacheConfig's documented schema
check "export trtllm" "$BIN" export "$WORK/layers.csv" --format trtllm --out "$WORK/trt.json" --model "$MODEL"
check "trtllm kv_cache_config schema and values" "$PY" - "$WORK/trt.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert set(d) == {"kv_cache_config"}, d.keys()
kv = d["kv_cache_config"]
assert set(kv) == {"max_attention_window", "sink_token_length"}, kv.keys()
w = kv["max_attention_window"]
assert isinstance(w, list) and len(w) >= 1 and all(type(x) is int and x > 0 for x in w)
assert w == [128] * 10 + [8192] * 20, w
assert type(kv["sink_token_length"]) is int and kv["sink_token_length"] == 4
PY

# 5. gguf refused for llama
expect_refusal "gguf refused for llama, naming the honoured architectures" "honours per-layer SWA only for gemma2, gemma3" \
  export "$WORK/layers.csv" --format gguf --out "$WORK/m.gguf" --model "$MODEL"
if [[ -e "$WORK/m.gguf" ]]; then fail "gguf refusal left a file"; else pass "gguf refusal writes nothing"; fi

# 6. scores on the qwen3 fixture, with the calibration split of `bosch search --preset tiny` (4 x 512
#    tokens, window 64, sinks 0): CSV = JSON, ranks = the scores' order, and each ranking cut at
#    rho = 0.5 here in Python (the round(0.5 * 4) = 2 lowest go SWA, ties by lower index) equals the
#    mask `bosch search --method M --preset tiny --ratio 0.5` finds: the columns hold the right
#    rankings, measured on the same split as the search's baselines
{
  echo "model,n_layer,n_head_kv,window,sinks,ratio,layer,kv_head,q_heads,attention"
  echo "q,2,2,64,0,0.000000,0,0,0;1,full"
  echo "q,2,2,64,0,0.000000,0,1,2;3,full"
  echo "q,2,2,64,0,0.000000,1,0,0;1,full"
  echo "q,2,2,64,0,0.000000,1,1,2;3,full"
} >"$WORK/qwen64.csv"
check "export scores (qwen3 fixture)" "$BIN" export "$WORK/qwen64.csv" --format scores --out "$WORK/scores" --model "$QWEN" --samples 4 --length 512
for me in ablation fisher locality echo; do
  check "search --method $me (qwen3 fixture)" "$BIN" search "$QWEN" --ratio 0.5 --method $me --preset tiny --out "$WORK/s_$me"
done
check "scores CSV = JSON, ranks = order, cuts = the searches' masks" "$PY" - "$WORK" <<'PY'
import csv, json, math, sys
w = sys.argv[1]
rows = list(csv.DictReader(open(f"{w}/scores/scores.csv")))
assert [(r["layer"], r["kv_head"]) for r in rows] == [("0", "0"), ("0", "1"), ("1", "0"), ("1", "1")]
for k in ["ablation", "fisher", "locality", "echo"]:
    j = json.load(open(f"{w}/scores/{k}.json"))
    assert set(j) == {"0-0", "0-1", "1-0", "1-1"}, j.keys()
    v = [float(r[k]) for r in rows]
    assert all(math.isfinite(x) for x in v)
    assert all(abs(j[f"{r['layer']}-{r['kv_head']}"] - x) <= 1e-9 * max(1, abs(x)) for r, x in zip(rows, v))
    order = sorted(range(4), key=lambda i: (-v[i], i))
    assert [int(rows[i]["rank_" + k]) for i in order] == [1, 2, 3, 4], k
    if k == "locality":
        assert all(0 <= x <= 1 for x in v), v  # a share of attention mass
    swa = set(sorted(range(4), key=lambda i: (v[i], i))[:2])
    got = {int(r["layer"]) * 2 + int(r["kv_head"]) for r in csv.DictReader(open(f"{w}/s_{k}/mask.csv"))
           if r["attention"] == "swa"}
    assert got == swa, (k, got, swa, v)
PY

# 7. bad files
bad() { # NAME SUBSTRING TSV CONFIG [IMPORT OPTIONS...]
  local name=$1 text=$2 tsv=$3 cfg=$4
  shift 4
  rm -rf "$WORK/bad" && mkdir -p "$WORK/bad"
  printf '%b' "$tsv" >"$WORK/bad/full_attention_heads.tsv"
  printf '%s' "$cfg" >"$WORK/bad/config.json"
  expect_refusal "$name" "$text" import "$WORK/bad" --format duo --out "$WORK/bad.csv" --model "$MODEL" "$@"
}
rows30() { for i in $(seq 1 "$1"); do printf '%s\\n' "$2"; done; }
ok='{"sink_size": 4, "recent_size": 64}'
bad "29 layers" "bad/full_attention_heads.tsv: 29 lines (layers), the model has 30" "$(rows30 29 '1\t0\t1')" "$ok"
bad "4 KV heads" "line 1: 4 columns (KV heads), the model has 3" "$(rows30 30 '1\t0\t1\t1')" "$ok"
bad "non-numeric" "line 3, column 2: bad value 'full'" "1\t0\t1\n1\t0\t1\n1\tfull\t1\n$(rows30 27 '1\t0\t1')" "$ok"
bad "gate > 1" "line 1, column 3: bad value '1.2' (need a number in [0, 1])" "$(rows30 30 '1\t0\t1.2')" "$ok"
bad "missing recent_size" "bad/config.json: field 'recent_size': missing" "$(rows30 30 '1\t0\t1')" '{"sink_size": 4}'
bad "gates without a cut" "the gates are not all 0 or 1: give a ratio" "$(rows30 30 '1\t0.5\t1')" "$ok"
expect_refusal "unknown export format" "unknown format 'onnx' (valid: duo, hf, trtllm, gguf, scores)" \
  export "$WORK/layers.csv" --format onnx --out "$WORK/x"
expect_refusal "mask of another shape" "n_layer is 2, model has 30" \
  export "$WORK/qwen.csv" --format hf --out "$WORK/x.json" --model "$MODEL"

if [[ $fails -gt 0 ]]; then echo "$fails failed"; exit 1; fi
echo "all interop checks passed"
