#!/usr/bin/env python3
"""bench_peer.py — our CPU engine against llama.cpp on the same GGUF and machine, interleaved.

Each round times every contestant once, in a fixed order (llama.cpp, then each bosch binary), so
a machine that gets busier or quieter affects all of them alike; the report gives, per contestant,
the median and the range (min-max) over the rounds of: prefill tokens/s at each length, decode
tokens/s after each --decode-after length; then the ratios of medians against llama.cpp and (when
two bosch binaries are given) against the first one, with the range of the per-round ratios.
`uptime` is printed before and after.

  llama.cpp: llama-cpp-python in this process, n_threads = n_threads_batch = --threads, n_batch 512,
             its default KV cache (F16 keys and values). Prefill = one eval of N prompt tokens into an
             empty cache; decode = --n-decode single-token evals right after the prefill of N, for
             each N of --decode-after.
  bosch:     `bosch bench MODEL --lengths ... --ratios R --rounds 1 --decode N --eval-samples 0 --csv F`
             (its own timers; decode at context length L is timed right after the prefill of L), at
             its defaults otherwise (bf16 KV cache, --precision auto). Its CSV also gives the GEMM
             ceiling at each length (the tokens/s of a prefill that did nothing but its GEMMs), so the
             report shows the prefill as a share of it, and, with a ratio besides 0 in --ratios (default
             0.875), the hybrid's prefill and decode speed-up over full attention in the same round.
Token ids are pseudo-random on both sides (the cost does not depend on the text). --markdown prints
the table of docs/engine.md (llama.cpp, bosch, ratio, GEMM ceiling, share, hybrid speed-up).

llama-cpp-python is a reference tool (also of tests/fixtures' logits): `scripts/setup --peer` builds
the pinned version (scripts/requirements-peer.txt) into .venv-peer, without its AMX path (it faults
on some VMs) and without -march=native, AVX-512 (and its VNNI, BF16) on where /proc/cpuinfo has it:
  CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
    -DGGML_AVX512=ON -DGGML_AVX512_VNNI=ON -DGGML_AVX512_BF16=ON -DGGML_AMX_TILE=OFF
    -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF" pip install llama-cpp-python==0.3.36
Run it with that interpreter: .venv-peer/bin/python scripts/bench_peer.py ...

Usage: python3 scripts/bench_peer.py [--model PATH] [--bosch [NAME=]PATH ...] [--lengths 1024 4096 8192]
         [--decode-after 1024 8192] [--n-decode 64] [--rounds 3] [--threads 2] [--ratios 0 0.875]
         [--bosch-args "--kv fp32"] [--no-llama] [--markdown]
"""
import argparse
import csv
import os
import random
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def uptime():
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return "(uptime unavailable)"


class LlamaCpp:
    name = "llama.cpp"

    def __init__(self, model, lengths, decode_after, n_decode, threads):
        from llama_cpp import Llama
        self.lengths, self.decode_after, self.n_decode = lengths, decode_after, n_decode
        self.llm = Llama(model_path=model, n_ctx=max(lengths) + n_decode + 16, n_threads=threads,
                         n_threads_batch=threads, n_batch=512, n_ubatch=512, verbose=False)
        rng = random.Random(7)
        n_vocab = self.llm.n_vocab()
        self.toks = [rng.randrange(500, n_vocab - 500) for _ in range(max(lengths) + n_decode)]
        self.llm.eval(self.toks[:16])  # warm-up
        self.llm.reset()

    def run(self):
        out = {}
        for n in self.lengths:
            self.llm.reset()
            t0 = time.perf_counter()
            self.llm.eval(self.toks[:n])
            out["prefill_%d" % n] = n / (time.perf_counter() - t0)
            if n in self.decode_after and self.n_decode > 0:
                t0 = time.perf_counter()
                for i in range(self.n_decode):
                    self.llm.eval([self.toks[n + i]])
                out["decode_%d" % n] = self.n_decode / (time.perf_counter() - t0)
        return out


class Bosch:
    def __init__(self, name, path, model, lengths, decode_after, n_decode, ratios, extra):
        self.name, self.path, self.model = name, path, model
        self.lengths, self.decode_after, self.n_decode = lengths, decode_after, n_decode
        self.ratios, self.extra = ratios, extra

    def run(self):
        with tempfile.TemporaryDirectory() as d:
            f = os.path.join(d, "bench.csv")
            cmd = [self.path, "bench", self.model, "--lengths", ",".join(map(str, self.lengths)), "--ratios",
                   ",".join("%g" % r for r in self.ratios), "--rounds", "1", "--decode", str(self.n_decode),
                   "--eval-samples", "0", "--csv", f] + self.extra
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            out = {}
            with open(f) as fh:
                for row in csv.DictReader(fh):
                    n = int(row["length"])
                    if row["measure"] == "speed":
                        hybrid = float(row["ratio"]) > 0.0
                        tag = "h" if hybrid else ""
                        out["%sprefill_%d" % (tag, n)] = float(row["prefill_tok_s"])
                        if n in self.decode_after and self.n_decode > 0:
                            out["%sdecode_%d" % (tag, n)] = float(row["decode_tok_s"])
                        if hybrid:
                            out["hybrid_ratio"] = float(row["ratio"])
                    elif row["measure"] == "gemm_ceiling":
                        out["ceiling_%d" % n] = float(row["prefill_tok_s"])
            return out


def med_range(values):
    return statistics.median(values), min(values), max(values)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--bosch", action="append", default=[], metavar="[NAME=]PATH")
    ap.add_argument("--bosch-args", default="", help="extra arguments of every bosch bench run")
    ap.add_argument("--lengths", type=int, nargs="+", default=[1024, 4096, 8192])
    ap.add_argument("--decode-after", type=int, nargs="+", default=[1024, 8192],
                    help="lengths after whose prefill decode is timed (each must be in --lengths)")
    ap.add_argument("--n-decode", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--ratios", type=float, nargs="+", default=[0.0, 0.875],
                    help="bosch ratios: 0 (full attention, against llama.cpp) and at most one hybrid")
    ap.add_argument("--no-llama", action="store_true", help="bosch binaries only")
    ap.add_argument("--markdown", action="store_true", help="also print docs/engine.md's table")
    args = ap.parse_args()
    if not args.bosch:
        args.bosch = [os.path.join(ROOT, "build", "bosch")]
    if 0.0 not in args.ratios or len([r for r in args.ratios if r > 0]) > 1:
        ap.error("--ratios needs 0 and at most one hybrid ratio")
    decode_after = [n for n in args.decode_after if n in args.lengths]
    extra = shlex.split(args.bosch_args)
    players = [] if args.no_llama else [LlamaCpp(args.model, args.lengths, decode_after, args.n_decode,
                                                 args.threads)]
    for spec in args.bosch:
        name, _, path = spec.rpartition("=")
        players.append(Bosch(name or "bosch", path, args.model, args.lengths, decode_after, args.n_decode,
                             args.ratios, extra))
    before = uptime()
    print("before:", before)
    results = {p.name: [] for p in players}
    for r in range(args.rounds):
        for p in players:
            res = p.run()
            results[p.name].append(res)
            print("round %d %-12s %s" % (r + 1, p.name, " ".join("%s=%.1f" % kv for kv in sorted(res.items()))),
                  flush=True)
    after = uptime()
    print("after:", after)
    keys = ["prefill_%d" % n for n in args.lengths] + ["decode_%d" % n for n in decode_after]
    med = {}
    print("\n%-12s" % "", " ".join("%26s" % k for k in keys))
    for p in players:
        cells = []
        for k in keys:
            v = [x[k] for x in results[p.name] if k in x]
            if v:
                m, lo, hi = med_range(v)
                med[(p.name, k)] = m
                cells.append("%10.1f (%6.1f-%6.1f)" % (m, lo, hi))
            else:
                cells.append("%26s" % "-")
        print("%-12s" % p.name, " ".join("%26s" % c for c in cells))

    def per_round(a, b, k):  # a's value over b's in each round
        return [x[k] / y[k] for x, y in zip(results[a], results[b]) if k in x and k in y]

    refs = (["llama.cpp"] if not args.no_llama else []) + ([players[-len(args.bosch)].name]
                                                          if len(args.bosch) > 1 else [])
    for ref in refs:
        for p in players:
            if p.name == ref:
                continue
            parts = []
            for k in keys:
                q = per_round(p.name, ref, k)
                if q:
                    m, lo, hi = med_range(q)
                    parts.append("%s %.2fx (%.2f-%.2f)" % (k, m, lo, hi))
            print("%s / %s, per-round ratios: %s" % (p.name, ref, ", ".join(parts)))
    share, speedup = {}, {}
    for p in players:
        if not isinstance(p, Bosch):
            continue
        for n in args.lengths:
            s = [x["prefill_%d" % n] / x["ceiling_%d" % n] for x in results[p.name] if x.get("ceiling_%d" % n)]
            c = [x["ceiling_%d" % n] for x in results[p.name] if x.get("ceiling_%d" % n)]
            if s:
                share[(p.name, n)] = med_range(s) + (statistics.median(c),)
                print("%s: prefill %d = %.0f%% (%.0f-%.0f%%) of its GEMM ceiling (median ceiling %.1f tok/s)" %
                      (p.name, n, 100 * share[(p.name, n)][0], 100 * share[(p.name, n)][1],
                       100 * share[(p.name, n)][2], share[(p.name, n)][3]))
            for kind in ["prefill", "decode"]:
                q = [x["h%s_%d" % (kind, n)] / x["%s_%d" % (kind, n)] for x in results[p.name]
                     if "h%s_%d" % (kind, n) in x]
                if q:
                    speedup[(p.name, kind, n)] = med_range(q)
                    rho = results[p.name][0].get("hybrid_ratio", 0.0)
                    print("%s: hybrid rho %.3f %s %d = %.2fx (%.2f-%.2f) full attention's" %
                          ((p.name, rho, kind, n) + speedup[(p.name, kind, n)]))
    if args.markdown and not args.no_llama:
        print_markdown(args, players, results, med, share, speedup, decode_after, before, after)
    return 0


def print_markdown(args, players, results, med, share, speedup, decode_after, before, after):
    b = [p for p in players if isinstance(p, Bosch)][0].name
    rho = results[b][0].get("hybrid_ratio", 0.0)
    print("\n<!-- scripts/bench_peer.py %s -->" % " ".join(sys.argv[1:]))
    print("`uptime` before: `%s`; after: `%s`\n" % (before, after))
    cols = ["prefill %d" % n for n in args.lengths] + ["decode after %d" % n for n in decode_after]
    print("| | " + " | ".join(cols) + " |")
    print("|---" * (len(cols) + 1) + "|")

    def row(label, f):
        print("| %s | %s |" % (label, " | ".join(f(c) for c in cols)))

    def key(c):
        kind, n = c.split(" ")[0], int(c.split(" ")[-1])
        return "%s_%d" % ("prefill" if kind == "prefill" else "decode", n)

    def cell(name, c):
        v = [x[key(c)] for x in results[name] if key(c) in x]
        return "%.1f (%.1f–%.1f)" % med_range(v) if v else "–"

    def ratio(c):
        q = [x[key(c)] / y[key(c)] for x, y in zip(results[b], results["llama.cpp"]) if key(c) in x and key(c) in y]
        return "**%.2f×** (%.2f–%.2f)" % med_range(q) if q else "–"

    row("llama.cpp, tokens/s", lambda c: cell("llama.cpp", c))
    row("bosch (full attention), tokens/s", lambda c: cell(b, c))
    row("bosch / llama.cpp (per round)", ratio)
    row("GEMM ceiling, tokens/s", lambda c: "%.0f" % share[(b, int(c.split(" ")[-1]))][3]
        if c.startswith("prefill") and (b, int(c.split(" ")[-1])) in share else "–")
    row("share of the ceiling", lambda c: "%.0f %% (%.0f–%.0f)" % tuple(100 * x for x in share[(b, int(c.split(" ")[-1]))][:3])
        if c.startswith("prefill") and (b, int(c.split(" ")[-1])) in share else "–")
    row("hybrid ρ %.3f / full (per round)" % rho,
        lambda c: "%.2f× (%.2f–%.2f)" % speedup[(b, c.split(" ")[0], int(c.split(" ")[-1]))]
        if (b, c.split(" ")[0], int(c.split(" ")[-1])) in speedup else "–")


if __name__ == "__main__":
    sys.exit(main())
