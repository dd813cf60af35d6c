#!/usr/bin/env python3
"""bench_peer.py — our CPU engine against llama.cpp on the same GGUF and machine, interleaved.

Each round times every contestant once, in a fixed order (llama.cpp, then each bosch binary), so
a machine that gets busier or quieter affects all of them alike; the report gives, per contestant,
the median and the range (min-max) over the rounds of: prefill tokens/s at each length, decode
tokens/s after the first length; then the ratios of medians against llama.cpp and (when two bosch
binaries are given) against the first one. `uptime` is printed before and after.

  llama.cpp: llama-cpp-python in this process, n_threads = n_threads_batch = --threads, n_batch 512.
             Prefill = one eval of N prompt tokens into an empty cache; decode = --n-decode single-token
             evals right after the first length's prefill.
  bosch:     `bosch bench MODEL --lengths ... --ratios 0 --decode N --eval-samples 0 --csv F` (its own
             timers, one repetition per round; decode at context length L is timed right after the
             prefill of L). Its CSV also gives the GEMM ceiling at each length (measure gemm_ceiling,
             the tokens/s of a prefill that did nothing but its GEMMs), so the report shows the
             prefill as a share of it.
Token ids are pseudo-random on both sides (the cost does not depend on the text).

llama-cpp-python on this VM must be built without its AMX path (it faults here) and without
-march=native, for example:
  CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
    -DGGML_AVX512=ON -DGGML_AVX512_VNNI=ON -DGGML_AVX512_BF16=ON -DGGML_AMX_TILE=OFF
    -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF" pip install llama-cpp-python==0.3.36

Usage: python3 scripts/bench_peer.py [--model PATH] [--bosch [NAME=]PATH ...] [--lengths 1024 4096]
         [--n-decode 64] [--rounds 3] [--threads 2] [--bosch-args "--precision bf16"]
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

    def __init__(self, model, lengths, n_decode, threads):
        from llama_cpp import Llama
        self.lengths, self.n_decode = lengths, n_decode
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
            if n == self.lengths[0] and self.n_decode > 0:
                t0 = time.perf_counter()
                for i in range(self.n_decode):
                    self.llm.eval([self.toks[n + i]])
                out["decode_%d" % n] = self.n_decode / (time.perf_counter() - t0)
        return out


class Bosch:
    def __init__(self, name, path, model, lengths, n_decode, extra):
        self.name, self.path, self.model = name, path, model
        self.lengths, self.n_decode, self.extra = lengths, n_decode, extra

    def run(self):
        with tempfile.TemporaryDirectory() as d:
            f = os.path.join(d, "bench.csv")
            cmd = [self.path, "bench", self.model, "--lengths", ",".join(map(str, self.lengths)), "--ratios",
                   "0", "--decode", str(self.n_decode), "--eval-samples", "0", "--csv", f] + self.extra
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            out = {}
            with open(f) as fh:
                for row in csv.DictReader(fh):
                    n = int(row["length"])
                    if row["measure"] == "speed":
                        out["prefill_%d" % n] = float(row["prefill_tok_s"])
                        if n == self.lengths[0] and self.n_decode > 0:
                            out["decode_%d" % n] = float(row["decode_tok_s"])
                    elif row["measure"] == "gemm_ceiling":
                        out["ceiling_%d" % n] = float(row["prefill_tok_s"])
            return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--bosch", action="append", default=[], metavar="[NAME=]PATH")
    ap.add_argument("--bosch-args", default="", help="extra arguments of every bosch bench run")
    ap.add_argument("--lengths", type=int, nargs="+", default=[1024, 4096])
    ap.add_argument("--n-decode", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--no-llama", action="store_true", help="bosch binaries only")
    args = ap.parse_args()
    if not args.bosch:
        args.bosch = [os.path.join(ROOT, "build", "bosch")]
    extra = shlex.split(args.bosch_args)
    players = [] if args.no_llama else [LlamaCpp(args.model, args.lengths, args.n_decode, args.threads)]
    for spec in args.bosch:
        name, _, path = spec.rpartition("=")
        players.append(Bosch(name or "bosch", path, args.model, args.lengths, args.n_decode, extra))
    print("before:", uptime())
    results = {p.name: [] for p in players}
    for r in range(args.rounds):
        for p in players:
            res = p.run()
            results[p.name].append(res)
            print("round %d %-12s %s" % (r + 1, p.name, " ".join("%s=%.1f" % kv for kv in sorted(res.items()))),
                  flush=True)
    print("after:", uptime())
    keys = ["prefill_%d" % n for n in args.lengths] + ["decode_%d" % args.lengths[0]]
    med = {}
    print("\n%-12s" % "", " ".join("%26s" % k for k in keys))
    for p in players:
        cells = []
        for k in keys:
            v = [x[k] for x in results[p.name] if k in x]
            med[(p.name, k)] = statistics.median(v) if v else float("nan")
            cells.append("%10.1f (%6.1f-%6.1f)" % (med[(p.name, k)], min(v), max(v)) if v else "%26s" % "-")
        print("%-12s" % p.name, " ".join("%26s" % c for c in cells))
    base = [p.name for p in players]
    refs = (["llama.cpp"] if not args.no_llama else []) + ([players[-len(args.bosch)].name] if len(args.bosch) > 1 else [])
    for ref in refs:
        for p in players:
            if p.name == ref or p.name not in base:
                continue
            print("%s / %s: %s" % (p.name, ref, ", ".join("%s %.2fx" % (k, med[(p.name, k)] / med[(ref, k)])
                                                           for k in keys)))
    for p in players:
        if isinstance(p, Bosch):
            for n in args.lengths:
                c = [x.get("ceiling_%d" % n) for x in results[p.name] if x.get("ceiling_%d" % n)]
                if c:
                    print("%s: prefill %d = %.0f%% of its GEMM ceiling (median ceiling %.1f tok/s)" %
                          (p.name, n, 100.0 * med[(p.name, "prefill_%d" % n)] / statistics.median(c),
                           statistics.median(c)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
