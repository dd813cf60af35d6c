#!/usr/bin/env bash
# test_cli.sh — input handling of the headless commands, through the built program:
#  1. `bosch eval` takes MODEL anywhere among its options (first, middle, last), like the others;
#  2. every numeric option of eval is refused just outside the range its message quotes and
#     accepted at both ends of it (the message is the rule: no other hidden limit); --split takes
#     heldout, calibration or validation, and validation scores other samples than held-out;
#  3. every comma-separated list option (eval, bench, compare) refuses an empty item ("X,", ",X",
#     "X,,Y") and an empty list, naming the option and the text, and accepts a good list; and
#     search / compare / eval refuse --ratio nan, inf or out of [0, 1], an empty --out / --resume /
#     --mask, --window / --sinks past 2^24 or the calibration length, naming option and value, and
#     --batch / --worker-timeout outside their ranges;
#  4. a mask CSV naming another model of the same shape loads with a warning naming the file, the
#     mask's model and the loaded model; one of another shape is refused;
#  5. SIGINT / SIGTERM during `bosch eval --out F` exits 130 / 143 and leaves neither F.tmp.* nor a
#     changed F; an uninterrupted run writes F and no temporary file.
# Option errors are checked against a missing model file: parsing happens before the model loads, so
# "accepted" shows as exit 1 with the model's error, "refused" as exit 2 with the option's message.
#
# Env: BOSCH_BIN (the built program), BOSCH_MODEL (the GGUF; parts 1, 4 and 5 skip without it and the
# whole test exits 77 when it is absent).
set -u
BIN=${BOSCH_BIN:-build/bosch}
MODEL=${BOSCH_MODEL:-models/SmolLM2-135M-Instruct.Q4_1.gguf}
if [[ ! -x "$BIN" ]]; then echo "FAIL: $BIN is not an executable"; exit 1; fi
if [[ ! -f "$MODEL" ]]; then echo "skip: model $MODEL not found"; exit 77; fi
WORK=$(mktemp -d /tmp/test_cli.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
NOMODEL=$WORK/no_such_model.gguf

fails=0
pass() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
# run ARGS...: bosch ARGS with stdout+stderr in $WORK/out; sets $rc.
run() {
    "$BIN" "$@" >"$WORK/out" 2>&1
    rc=$?
}
# expect RC SUBSTRING ARGS...: exit status RC and output containing SUBSTRING (fixed string).
expect() {
    local want=$1 text=$2
    shift 2
    run "$@"
    if [[ $rc -eq $want ]] && grep -qF -- "$text" "$WORK/out"; then
        pass "bosch $* -> $rc, '$text'"
    else
        fail "bosch $* -> $rc (want $want and '$text'); output:"
        head -3 "$WORK/out"
    fi
}

# ---- 1. MODEL anywhere among eval's options --------------------------------------------------
expect 1 "$NOMODEL" eval --samples 2 "$NOMODEL"
expect 1 "$NOMODEL" eval --samples 2 "$NOMODEL" --keys 3
expect 1 "$NOMODEL" eval "$NOMODEL" --samples 2
expect 2 "unexpected argument 'extra'" eval --samples 2 "$NOMODEL" extra
run eval --samples 1 --lengths 256 --device cpu --quiet --out - "$MODEL"
if [[ $rc -eq 0 ]] && grep -q '^niah_single  *256 ' "$WORK/out"; then
    pass "bosch eval OPTIONS MODEL scores the model"
else
    fail "bosch eval OPTIONS MODEL -> $rc"
    cat "$WORK/out"
fi
MODEL_NAME=$(sed -n 's/^# model \(.*\)  method .*/\1/p' "$WORK/out")

# ---- 2. eval's numeric options: the quoted range is the enforced one -------------------------
# option min max
while read -r opt min max; do
    range="[$min, $max]"
    expect 2 "$opt: bad value '$((min - 1))' (need an integer in $range)" eval "$NOMODEL" --out - "$opt" $((min - 1))
    expect 1 "$NOMODEL" eval "$NOMODEL" --out - "$opt" "$min"
    expect 1 "$NOMODEL" eval "$NOMODEL" --out - "$opt" "$max"
    expect 2 "$opt: bad value '$((max + 1))' (need an integer in $range)" eval "$NOMODEL" --out - "$opt" $((max + 1))
    expect 2 "$opt: bad value '1x'" eval "$NOMODEL" --out - "$opt" 1x
done <<'EOF'
--samples 1 1048576
--window 1 16777216
--sinks 0 16777216
--keys 2 8
EOF
# --seed: any 64-bit unsigned value (above 2^24 too)
expect 1 "$NOMODEL" eval "$NOMODEL" --out - --seed 16777217
expect 1 "$NOMODEL" eval "$NOMODEL" --out - --seed 18446744073709551615
expect 2 "--seed: bad value '18446744073709551616' (need an integer in [0, 18446744073709551615])" \
    eval "$NOMODEL" --out - --seed 18446744073709551616
expect 2 "--seed: bad value '-1' (need an integer in [0, 18446744073709551615])" eval "$NOMODEL" --out - --seed -1
run eval --seed 16777217 --samples 1 --lengths 256 --device cpu --quiet --out - "$MODEL"
[[ $rc -eq 0 ]] && grep -q 'seed 16777217 ' "$WORK/out" && pass "eval runs with seed 2^24+1" ||
    fail "eval --seed 16777217 -> $rc"
# --split: heldout, calibration or validation (the split options and presets are chosen on, seed 9012
# as `bosch compare`'s validation cells); the held-out split's samples are others
expect 2 "--split: bad value 'valid' (need heldout, calibration or validation)" eval "$NOMODEL" --split valid
expect 1 "$NOMODEL" eval "$NOMODEL" --out - --split validation
run eval --split validation --samples 2 --lengths 256 --device cpu --quiet --out - "$MODEL"
cp "$WORK/out" "$WORK/valid.out"
run eval --split heldout --samples 2 --lengths 256 --device cpu --quiet --out - "$MODEL"
if grep -q 'split validation  seed 9012 ' "$WORK/valid.out" && grep -q 'split heldout  seed 5678 ' "$WORK/out" &&
    [[ "$(awk '$1 == "niah_single" { print $4 }' "$WORK/valid.out")" != \
        "$(awk '$1 == "niah_single" { print $4 }' "$WORK/out")" ]]; then # the score column
    pass "eval --split validation scores the validation split (seed 9012), not the held-out one"
else
    fail "eval --split validation: $(head -2 "$WORK/valid.out")"
fi
# --lengths: token counts in [128, 2^24]
expect 2 "--lengths: bad list '127' (item '127' is not a token count in [128, 16777216]" eval "$NOMODEL" --lengths 127
expect 1 "$NOMODEL" eval "$NOMODEL" --out - --lengths 128,16384k
expect 2 "--lengths: bad list '16385k' (item '16385k' is not a token count in [128, 16777216]" \
    eval "$NOMODEL" --lengths 16385k
expect 2 "--window needs a value" eval "$NOMODEL" --window

# ---- 3. list options refuse empty items ------------------------------------------------------
# command option good-list [extra args]
while read -r cmd opt good extra; do
    extra=${extra//WORKDIR/$WORK}
    for bad in "$good," ",$good" "${good/,/,,}" ","; do
        # shellcheck disable=SC2086
        expect 2 "bosch $cmd: $opt: bad list '$bad' (item " $cmd "$NOMODEL" $extra $opt "$bad"
    done
    # shellcheck disable=SC2086
    expect 2 "bosch $cmd: $opt: bad list '' (empty" $cmd "$NOMODEL" $extra $opt ""
    # shellcheck disable=SC2086
    expect 1 "$NOMODEL" $cmd "$NOMODEL" $extra $opt "$good"
done <<'EOF'
eval --lengths 256,1k --out -
eval --tasks passkey,niah_single --out -
bench --lengths 256,512
bench --ratios 0,0.5
bench --batch 1,1
compare --ratios 0.5,0.75 --out WORKDIR/cmp
compare --methods bosch,rand --out WORKDIR/cmp
compare --tasks passkey,niah_single --out WORKDIR/cmp
compare --lengths 256,1k --out WORKDIR/cmp
EOF
expect 2 "--lengths: bad list '1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17' (more than 16 items)" \
    eval "$NOMODEL" --lengths 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17
expect 2 "--tasks: bad list 'passkey,nope' (item 'nope' is not a task" eval "$NOMODEL" --tasks passkey,nope
expect 2 "bosch eval: --kv: bad value 'fp16' (need fp32 or bf16)" eval "$NOMODEL" --kv fp16
expect 2 "bosch bench: option --kv needs a value" bench "$NOMODEL" --kv
expect 2 "--ratios: bad list '0.5,2' (item '2' is not a number in [0, 1])" bench "$NOMODEL" --ratios 0.5,2
expect 2 "--methods: bad list 'bosch,nope' (unknown method 'nope'" compare "$NOMODEL" --out "$WORK/c" \
    --methods bosch,nope
expect 2 "bosch compare: --calib: bad value 'both' (need single or mix)" compare "$NOMODEL" --out "$WORK/c" \
    --calib both
expect 2 "bosch search: --calib: bad value 'Mix' (need single or mix)" search "$NOMODEL" --calib Mix
# --ratio: a number in [0, 1], named with its value (not "--ratio and --out are required"); an
# empty --out / --resume / --mask names the option; each missing option is named alone
for r in nan inf -inf -0.5 1.5 0.5x '' ' 0.5'; do
    expect 2 "bosch search: --ratio: bad value '$r' (need a number in [0, 1])" search "$NOMODEL" --ratio "$r" \
        --out "$WORK/o"
done
expect 2 "bosch search: --out: empty value (need a folder)" search "$NOMODEL" --ratio 0.5 --out ''
expect 2 "bosch search: --resume: empty value (need the folder of a saved search)" search "$NOMODEL" --resume ''
expect 2 "bosch search: --ratio R is required (or --resume DIR)" search "$NOMODEL" --out "$WORK/o"
expect 2 "bosch search: --out DIR is required (or --resume DIR)" search "$NOMODEL" --ratio 0.5
expect 2 "bosch search: --force cannot be combined with --resume" search "$NOMODEL" --resume "$WORK/o" --force
expect 2 "bosch compare: --out: empty value (need a folder)" compare "$NOMODEL" --out ''
# pinned heads (docs/search.md "Pinned heads"): a bad head or a head pinned both ways is named; a
# resumed search cannot change its pins (its state has them): refused before the model loads
expect 2 "bosch search: --force-full: bad value '3' in '3' (need LAYER.KV_HEAD, e.g. 3.1)" search "$NOMODEL" \
    --ratio 0.5 --out "$WORK/o" --force-full 3
expect 2 "bosch search: --force-swa: bad value '2.1': that head is already pinned full" search "$NOMODEL" \
    --ratio 0.5 --out "$WORK/o" --force-full 2.1 --force-swa 2.1
expect 2 "bosch search: --pins: $WORK/no-pins.txt: No such file or directory" search "$NOMODEL" --ratio 0.5 \
    --out "$WORK/o" --pins "$WORK/no-pins.txt"
mkdir -p "$WORK/pinned"
sed '/^log$/i pin_full 0.1' "${BOSCH_SOURCE_DIR:-.}/tests/fixtures/state_v2.txt" >"$WORK/pinned/state"
expect 1 "the search was made with pinned heads full [0.1] swa []; the pins given, full [0.2] swa [], differ" \
    search "$NOMODEL" --resume "$WORK/pinned" --force-full 0.2
expect 1 "the pins given, full [] swa [0.1], differ" search "$NOMODEL" --resume "$WORK/pinned" --force-swa 0.1
# --start: a mask file read before the model loads; the start is in the state, so --resume refuses it
expect 2 "bosch search: --start: $WORK/no-start.csv: cannot open: No such file or directory" search "$NOMODEL" \
    --ratio 0.5 --out "$WORK/o" --start "$WORK/no-start.csv"
printf 'model,n_layer,n_head_kv,window,sinks,ratio,layer,kv_head,q_heads,attention\nm,1,1,64,0,1.000000,0,0,0,swa\n' \
    >"$WORK/start1.csv"
expect 2 "bosch search: --start cannot be combined with --resume" search "$NOMODEL" --resume "$WORK/pinned" \
    --start "$WORK/start1.csv"
expect 2 "bosch eval: --out: empty value (need a file name, or '-' for none)" eval "$NOMODEL" --out ''
expect 2 "bosch eval: --mask: empty value (need a mask file)" eval "$NOMODEL" --mask ''
# --window / --sinks: at most 2^24 tokens, and fewer than the calibration length
expect 2 "bosch search: --sinks: bad value '16777217' (need an integer in [0, 16777216])" search "$NOMODEL" \
    --ratio 0.5 --out "$WORK/o" --sinks 16777217
expect 2 "bosch compare: --window: bad value '16777217' (need an integer in [1, 16777216])" compare "$NOMODEL" \
    --out "$WORK/c" --window 16777217
expect 2 "bosch compare: --sinks 300: bad value (need fewer tokens than the calibration length, 256 (--length)" \
    compare "$NOMODEL" --out "$WORK/c" --length 256 --sinks 300
expect 2 "bosch search: --window 512: bad value (need fewer tokens than the calibration length, 512 (--length)" \
    search "$MODEL" --preset tiny --ratio 0.5 --window 512 --out "$WORK/o" --device cpu
[[ ! -e "$WORK/o/state" ]] && pass "a refused --window starts no search" || fail "a refused --window wrote a state"
# the MPI mode's run options (app/cli_dist.c; accepted without mpirun too): --batch in 1..4096 (search,
# compare), --worker-timeout in (0, 1e6] seconds (search, compare, eval); eval has no --batch
expect 2 "bosch search: --batch: '0' is not a whole number in 1..4096" search "$NOMODEL" --ratio 0.5 \
    --out "$WORK/o" --batch 0
expect 2 "bosch compare: --batch: '4097' is not a whole number in 1..4096" compare "$NOMODEL" --out "$WORK/c" \
    --batch 4097
expect 2 "bosch compare: --worker-timeout: '0' is not a number of seconds in (0, 1e6]" compare "$NOMODEL" \
    --out "$WORK/c" --worker-timeout 0
expect 2 "bosch eval: --worker-timeout: '1e7' is not a number of seconds in (0, 1e6]" eval "$NOMODEL" \
    --worker-timeout 1e7
expect 2 "bosch eval: unknown option '--batch'" eval "$NOMODEL" --batch 2
expect 2 "bosch search: option --worker-timeout needs a value" search "$NOMODEL" --ratio 0.5 --out "$WORK/o" \
    --worker-timeout
expect 1 "$NOMODEL" compare "$NOMODEL" --out "$WORK/c" --batch 4096 --worker-timeout 1e6
expect 1 "$NOMODEL" eval "$NOMODEL" --out - --worker-timeout 0.5

# ---- 4. a mask CSV of another model --------------------------------------------------------
# write_mask FILE MODEL_FIELD N_LAYER: all-full mask of N_LAYER x 3 KV heads (GQA groups of 3).
write_mask() {
    {
        echo "model,n_layer,n_head_kv,window,sinks,ratio,layer,kv_head,q_heads,attention"
        for ((l = 0; l < $3; l++)); do
            for h in 0 1 2; do
                echo "\"$2\",$3,3,128,4,0.000000,$l,$h,$((3 * h));$((3 * h + 1));$((3 * h + 2)),full"
            done
        done
    } >"$1"
}
write_mask "$WORK/other.csv" "SmolLM2 135M Instruct Q8_0" 30
run eval "$MODEL" --mask "$WORK/other.csv" --samples 1 --lengths 256 --device cpu --quiet --out -
want="bosch eval: warning: $WORK/other.csv: field 'model': the mask is for 'SmolLM2 135M Instruct Q8_0', the loaded model is '$MODEL_NAME'"
if [[ $rc -eq 0 ]] && grep -qF -- "$want" "$WORK/out" && grep -q '^niah_single  *256 ' "$WORK/out"; then
    pass "another model's mask of the same shape loads with a warning"
else
    fail "other-model mask -> $rc (want 0 and '$want'); output:"
    cat "$WORK/out"
fi
write_mask "$WORK/same.csv" "$MODEL_NAME" 30
run eval "$MODEL" --mask "$WORK/same.csv" --samples 1 --lengths 256 --device cpu --quiet --out -
[[ $rc -eq 0 && -n "$MODEL_NAME" ]] && ! grep -q warning "$WORK/out" && pass "the model's own mask loads silently" ||
    fail "own mask -> $rc, name '$MODEL_NAME': $(cat "$WORK/out")"
write_mask "$WORK/shape.csv" "SmolLM2 135M Instruct Q8_0" 29
expect 1 "$WORK/shape.csv: mask does not fit the model: n_layer is 29, model has 30" \
    eval "$MODEL" --mask "$WORK/shape.csv" --device cpu --out -

# ---- 5. an interrupted eval leaves no temporary file -----------------------------------------
# Job control: background jobs of a non-interactive shell would otherwise start with SIGINT ignored.
set -m
for sig in INT TERM; do
    want=$((128 + $(kill -l "$sig")))
    out="$WORK/res_$sig.csv"
    echo "previous results" >"$out"
    "$BIN" eval "$MODEL" --samples 16 --lengths 1k --device cpu --out "$out" >"$WORK/sig.out" 2>&1 &
    pid=$!
    for ((k = 0; k < 600; k++)); do
        grep -q '0/16' "$WORK/sig.out" && break
        sleep 0.1
    done
    sleep 0.5
    kill -"$sig" "$pid"
    wait "$pid"
    st=$?
    left=$(ls "$out".tmp.* 2>/dev/null | wc -l)
    if [[ $st -eq $want && $left -eq 0 && "$(cat "$out")" == "previous results" ]]; then
        pass "SIG$sig during eval: exit $st, no temporary file, $out unchanged"
    else
        fail "SIG$sig during eval: exit $st (want $want), $left temporary files, $out: $(head -1 "$out")"
        cat "$WORK/sig.out"
    fi
done
# A signal while the results file itself is written (fsync slowed to 2 s by an LD_PRELOAD shim, so
# the temporary file surely exists when the signal comes; any thread, OpenMP's too, may receive it):
# the file is completed (or removed), then the process dies of the signal.
cat >"$WORK/slow.c" <<'EOF'
#define _GNU_SOURCE
#include <sys/syscall.h>
#include <unistd.h>
int fsync(int fd) { sleep(2); return (int)syscall(SYS_fsync, fd); }
EOF
if cc -shared -fPIC -o "$WORK/slow.so" "$WORK/slow.c" 2>/dev/null; then
    for sig in INT TERM; do
        want=$((128 + $(kill -l "$sig")))
        out="$WORK/late_$sig.csv"
        LD_PRELOAD="$WORK/slow.so" "$BIN" eval "$MODEL" --samples 1 --lengths 256 --device cpu --quiet \
            --out "$out" >"$WORK/sig.out" 2>&1 &
        pid=$!
        for ((k = 0; k < 600; k++)); do
            ls "$out".tmp.* >/dev/null 2>&1 && grep -q '^niah_single' "$WORK/sig.out" && break
            sleep 0.05
        done
        sleep 0.3
        kill -"$sig" "$pid"
        wait "$pid"
        st=$?
        left=$(ls "$out".tmp.* 2>/dev/null | wc -l)
        rows=$(grep -c '^full,0.000000,niah_single,256,' "$out" 2>/dev/null)
        if [[ $st -eq $want && $left -eq 0 && $rows -eq 1 ]]; then
            pass "SIG$sig while the results file is written: exit $st, file complete, no temporary file"
        else
            fail "SIG$sig while writing: exit $st (want $want), $left temporary files, ${rows:-0} rows (want 1)"
            cat "$WORK/sig.out"
        fi
    done
else
    echo "skip: no C compiler for the slow-fsync shim (signal during the write not tested)"
fi
set +m
run eval "$MODEL" --samples 1 --lengths 256,512 --device cpu --quiet --out "$WORK/done.csv"
rows=$(grep -c '^full,0.000000,niah_single,' "$WORK/done.csv" 2>/dev/null)
left=$(ls "$WORK"/done.csv.tmp.* 2>/dev/null | wc -l)
[[ $rc -eq 0 && $rows -eq 2 && $left -eq 0 ]] && pass "a finished eval writes its 2 rows, no temporary file" ||
    fail "finished eval -> $rc, $rows rows, $left temporary files"

echo "$fails failure(s)"
[[ $fails -eq 0 ]]
