#!/usr/bin/env python3
"""A few deltaserve KDA prefill calls on one sequence, for a profiler (ncu, compute-sanitizer):
the inputs of bench_kda.py's prefill table (same seeds), no timing, no fla.

  ncu -k regex:kda_prep --launch-skip 1 --launch-count 1 \
      python3 bench/kda_gpu/prof_prefill.py --lib build-cuda/bench/libds_kda_capi.so --gates safe,softplus --heads 64
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_kda import Ours, load_lib, one_sequence_args  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--lib', required=True)
    ap.add_argument('--gates', default='softplus', help='safe and/or softplus, comma-separated, run in this order')
    ap.add_argument('--heads', type=int, default=64)
    ap.add_argument('--tokens', type=int, default=8192)
    ap.add_argument('--calls', type=int, default=2)
    a = ap.parse_args()
    ours = Ours(load_lib(a.lib))
    for gate in a.gates.split(','):
        args = one_sequence_args(gate, a.heads, a.tokens, 1234 + a.heads)
        with torch.inference_mode():
            for _ in range(a.calls):
                ours.prefill(*args)
        torch.cuda.synchronize()
        print(f'prof_prefill: {a.calls} calls, {gate} H={a.heads} T={a.tokens}')
        del args


if __name__ == '__main__':
    main()
