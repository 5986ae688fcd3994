#!/usr/bin/env python3
"""KDA prefill and decode on one GPU: deltaserve's CUDA kernels next to fla's Triton kernels
(chunk_kda / fused_recurrent_kda) on identical bf16 inputs, plus a device-to-device copy measured
in the same process as the bandwidth ceiling.

  python3 bench/kda_gpu/bench_kda.py --lib build-cuda/bench/libds_kda_capi.so --fla /path/to/fla \
      [--quick] [--out results.json]

Inputs follow fla's own KDA tests: q, k, v, raw gate, beta logits ~ N(0, 1) in bf16;
A_log = log U(1, 16), dt_bias ~ N(0, 1) (f32). Both kernels compute the gate, the q/k L2 norm and
sigmoid(beta) inside, with the same gate form: K3's safe gate (lower bound -5) or Kimi Linear's
softplus gate. Times are medians of CUDA-event timings (triton.testing.do_bench, L2 flushed between
runs for prefill); decode is timed as CUDA-graph replays of 32 steps over rotating state slots.
"""
import argparse
import ctypes
import json
import math
import os
import statistics
import sys
import time

import torch

D = 128
HBM_BYTES_PER_TOKEN_HEAD = 4 * D * 2 + 2 + D * 2  # q, k, v, g read + beta + o written (bf16)
# Chunked-KDA FLOPs per chunk and head (C = 16): 12C^3 + 8C^2 D + 6C D^2
FLOPS_PER_CHUNK_HEAD = 12 * 16**3 + 8 * 16**2 * D + 6 * 16 * D**2


def load_lib(path):
    lib = ctypes.CDLL(path)
    lib.ds_kda_last_error.restype = ctypes.c_char_p
    return lib


def ptr(t):
    return ctypes.c_void_p(t.data_ptr()) if t is not None else ctypes.c_void_p(0)


def check(lib, rc):
    if rc != 0:
        raise RuntimeError(lib.ds_kda_last_error().decode())


class Ours:
    def __init__(self, lib):
        self.lib = lib

    def prefill(self, q, k, v, g, b, o, a_log, dt_bias, lower_bound, cu, pool, init, final, cks=()):
        """q..o [T, H*D] bf16 (b: [T, H]); cu: host list; pool f32 [slots, H, D, D]."""
        N = len(cu) - 1
        H = a_log.numel()
        cu_a = (ctypes.c_int64 * (N + 1))(*cu)
        init_a = (ctypes.c_int32 * N)(*init)
        fin_a = (ctypes.c_int32 * N)(*final)
        n_ck = len(cks)
        ck_seq = (ctypes.c_int32 * max(n_ck, 1))(*[c[0] for c in cks])
        ck_slot = (ctypes.c_int32 * max(n_ck, 1))(*[c[1] for c in cks])
        ck_after = (ctypes.c_int64 * max(n_ck, 1))(*[c[2] for c in cks])
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        check(self.lib, self.lib.ds_kda_prefill(
            1, N, H, cu_a, ptr(q), ptr(k), ptr(v), ptr(g), ptr(b), ptr(o), ptr(a_log), ptr(dt_bias),
            int(lower_bound is not None), ctypes.c_float(lower_bound or 0.0), ctypes.c_float(D ** -0.5),
            ptr(pool), ctypes.c_int64(H * D * D), ctypes.c_int64(pool.shape[0]), init_a, fin_a, n_ck,
            ck_seq, ck_slot, ck_after, stream))

    def decode(self, x, pool, conv, slots, overlap_prior=False):
        B, H = x['B'], x['H']
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        check(self.lib, self.lib.ds_kda_decode(
            1, B, H, 4, ptr(x['q']), ptr(x['k']), ptr(x['v']), ptr(x['f']), ptr(x['b']), ptr(x['r']),
            ptr(x['y']), ptr(x['taps']), ptr(x['o_norm']), ptr(x['a_log']), ptr(x['dt_bias']),
            int(x['lb'] is not None), ctypes.c_float(x['lb'] or 0.0), ctypes.c_float(D ** -0.5),
            ctypes.c_float(1e-5), ptr(pool), ctypes.c_int64(H * D * D), ctypes.c_int64(pool.shape[0]),
            ptr(conv), ctypes.c_int64(3 * H * D * 3), ptr(slots), stream, int(overlap_prior)))


def median_ms(fn, reps, warmup=3, flush=None):
    for _ in range(warmup):
        fn()
    times = [one_ms(fn, flush) for _ in range(reps)]
    return statistics.median(times), times


def one_ms(fn, flush=None):
    """One CUDA-event timing of fn, after the L2 flush (if given)."""
    if flush is not None:
        flush.zero_()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    fn()
    e.record()
    e.synchronize()
    return s.elapsed_time(e)


def rotated_ms(fns, rounds, reps, warmup=3, flush=None, setup=None):
    """Times the callables of fns (name -> fn) fairly against each other: every timed step runs each of
    them once, in an order rotated by one each step (step i starts with the (i mod n)-th), so every
    callable takes every position equally often; rounds x reps steps. setup(name), if given, runs
    before each call (e.g. environment settings). Returns name -> (median of all samples, per-round
    medians)."""
    names = list(fns)
    for name in names:
        for _ in range(warmup):
            if setup:
                setup(name)
            fns[name]()
    samples = {name: [[] for _ in range(rounds)] for name in names}
    for r in range(rounds):
        for i in range(reps):
            j = (r * reps + i) % len(names)
            for name in names[j:] + names[:j]:
                if setup:
                    setup(name)
                samples[name][r].append(one_ms(fns[name], flush))
    return {name: (statistics.median([x for rr in per for x in rr]), [statistics.median(rr) for rr in per])
            for name, per in samples.items()}


def copy_bandwidth(n=4 << 30):
    src = torch.empty(n, dtype=torch.uint8, device='cuda').random_(0, 255)
    dst = torch.empty_like(src)
    ms, _ = median_ms(lambda: dst.copy_(src), 20)
    del src, dst
    return 2 * n / (ms * 1e-3)


def matmul_rate():
    n = 8192
    a = torch.randn(n, n, dtype=torch.bfloat16, device='cuda')
    b = torch.randn(n, n, dtype=torch.bfloat16, device='cuda')
    ms, _ = median_ms(lambda: a @ b, 10)
    return 2 * n**3 / (ms * 1e-3)


def gate_params(H, gen):
    a_log = torch.log(torch.empty(H, device='cuda').uniform_(1, 16, generator=gen))
    dt_bias = torch.randn(H * D, device='cuda', generator=gen)
    return a_log, dt_bias


def prefill_inputs(T, H, gen):
    shape = (1, T, H, D)
    q, k, v, g = (torch.randn(shape, dtype=torch.bfloat16, device='cuda', generator=gen) for _ in range(4))
    b = torch.randn((1, T, H), dtype=torch.bfloat16, device='cuda', generator=gen)
    return q, k, v, g, b


def fla_prefill(chunk_kda, q, k, v, g, b, a_log, dt_bias, lb, cu=None):
    kw = dict(A_log=a_log, dt_bias=dt_bias, use_qk_l2norm_in_kernel=True, use_gate_in_kernel=True,
              use_beta_sigmoid_in_kernel=True, output_final_state=True)
    if lb is not None:
        kw.update(safe_gate=True, lower_bound=lb)
    if cu is not None:
        kw.update(cu_seqlens=torch.tensor(cu, dtype=torch.long, device='cuda'),
                  cu_seqlens_cpu=torch.tensor(cu, dtype=torch.long))
    return chunk_kda(q, k, v, g, b, **kw)


def rel(a, b):
    a, b = a.float(), b.float()
    return ((a - b).norm() / b.norm().clamp_min(1e-30)).item()


def dump(results):
    if results.get('_out'):
        with open(results['_out'], 'w') as f:
            json.dump({k: v for k, v in results.items() if not k.startswith('_')}, f, indent=1)


def one_sequence_args(gate, H, T, seed):
    """Ours.prefill arguments for one sequence of T tokens from the zero state into pool slot 0."""
    lb = -5.0 if gate == 'safe' else None
    gen = torch.Generator(device='cuda').manual_seed(seed)
    q, k, v, g, b = prefill_inputs(T, H, gen)
    a_log, dt_bias = gate_params(H, gen)
    o = torch.empty((T, H * D), dtype=torch.bfloat16, device='cuda')
    pool = torch.zeros((1, H, D, D), dtype=torch.float32, device='cuda')
    return (q.view(T, H * D), k.view(T, H * D), v.view(T, H * D), g.view(T, H * D), b.view(T, H), o,
            a_log, dt_bias, lb, [0, T], pool, [-1], [0])


def run_env_sweep(ours, title, env, values, label, cases, reps, results, key, flush, seed=None):
    """deltaserve only: prefill time for each value of a tuning variable (env) on a few shapes."""
    print(f'\n== sweep: {title} (deltaserve prefill, ms) ==')
    name = label.rstrip('=')  # row keys: <name><value>_ms
    print(f"{'gate':9} {'H':>3} {'T':>6} " + ' '.join(f"{label + str(x):>8}" for x in values))
    for gate, H, T in cases:
        args = one_sequence_args(gate, H, T, 1234 + H if seed is None else seed)
        row = dict(gate=gate, H=H, T=T)
        for x in values:
            os.environ[env] = str(x)
            row[f'{name}{x}_ms'], _ = median_ms(lambda: ours.prefill(*args), reps, flush=flush)
        os.environ.pop(env, None)
        results[key].append(row)
        dump(results)
        print(f"{gate:9} {H:>3} {T:>6} " + ' '.join(f"{row[f'{name}{x}_ms']:8.3f}" for x in values), flush=True)
        del args
        torch.cuda.empty_cache()


def run_settings_sweep(ours, settings, cases, reps, results, flush):
    """deltaserve only: prefill time under each environment setting (a dict) on each (gate, H, T); the
    settings are timed in an order rotated every step (rotated_ms), medians of reps samples each."""
    print('\n== sweep: environment settings (deltaserve prefill, ms) ==')
    for i, st in enumerate(settings):
        print(f'  s{i}: ' + ' '.join(f'{k}={v}' for k, v in st.items()))
    print(f"{'gate':9} {'H':>3} {'T':>6} " + ' '.join(f"{'s' + str(i):>8}" for i in range(len(settings))))
    results.setdefault('envsweep', [])
    for gate, H, T in cases:
        args = one_sequence_args(gate, H, T, 1234 + H)
        def apply(i):
            for key in {k_ for st in settings for k_ in st}:
                os.environ.pop(key, None)
            os.environ.update(settings[i])

        timed = rotated_ms({i: (lambda: ours.prefill(*args)) for i in range(len(settings))}, 1, reps,
                           flush=flush, setup=apply)
        for key in {k_ for st in settings for k_ in st}:
            os.environ.pop(key, None)
        row = dict(gate=gate, H=H, T=T, settings=settings, ms=[timed[i][0] for i in range(len(settings))])
        results['envsweep'].append(row)
        dump(results)
        print(f"{gate:9} {H:>3} {T:>6} " + ' '.join(f'{x:8.3f}' for x in row['ms']), flush=True)
        del args
        torch.cuda.empty_cache()


def run_prefill(ours, chunk_kda, cases, copy_bw, mm_rate, reps, results, flush, with_fla=True, base=None,
                fla_at=None, rounds=1):
    """fla_at: if given, the set of (H, T) at which fla runs (each new shape costs its autotuning);
    base: a second deltaserve library timed on the same inputs (its time and ours / base);
    rounds x reps timed steps, each timing fla, ours and base once in an order rotated every step
    (rotated_ms: no side always first or always after the other); the reported times are the medians
    of all samples, and each round's median is kept in the json."""
    print('\n== prefill: deltaserve kda_prefill vs fla chunk_kda (bf16, B=1 packed) ==')
    hdr = f"{'gate':9} {'H':>3} {'T':>6} {'seqs':>4} {'fla ms':>8} {'ours ms':>8} {'ratio':>6} " \
          f"{'HBM floor ms':>12} {'% HBM':>6} {'TC floor ms':>11} {'% TC':>5} {'rel o':>8} {'rel S':>8}"
    if base is not None:
        hdr += f" {'base ms':>8} {'base/ours':>9} {'rel o base':>10}"
    print(hdr)
    all_fla = with_fla
    for gate, H, lens in cases:
        with_fla = all_fla and (fla_at is None or (H, sum(lens)) in fla_at)
        lb = -5.0 if gate == 'safe' else None
        gen = torch.Generator(device='cuda').manual_seed(1234 + H)
        T = sum(lens)
        cu = [0]
        for n in lens:
            cu.append(cu[-1] + n)
        q, k, v, g, b = prefill_inputs(T, H, gen)
        a_log, dt_bias = gate_params(H, gen)
        N = len(lens)
        with torch.inference_mode():
            fcu = cu if N > 1 else None
            o_ref, s_ref = fla_prefill(chunk_kda, q, k, v, g, b, a_log, dt_bias, lb, fcu) if with_fla else (None, None)
            o = torch.empty((T, H * D), dtype=torch.bfloat16, device='cuda')
            pool = torch.zeros((N, H, D, D), dtype=torch.float32, device='cuda')
            args = (q.view(T, H * D), k.view(T, H * D), v.view(T, H * D), g.view(T, H * D), b.view(T, H), o,
                    a_log, dt_bias, lb, cu, pool, [-1] * N, list(range(N)))
            ours.prefill(*args)
            torch.cuda.synchronize()
            err_o = rel(o.view(1, T, H, D), o_ref) if with_fla else float('nan')
            err_s = rel(pool, s_ref) if with_fla else float('nan')
            err_base = float('nan')
            if base is not None:
                o_new = o.clone()
                base.prefill(*args)
                torch.cuda.synchronize()
                err_base = rel(o_new, o)
            fns = {}
            if with_fla:
                fns['fla'] = lambda: fla_prefill(chunk_kda, q, k, v, g, b, a_log, dt_bias, lb, fcu)
            fns['ours'] = lambda: ours.prefill(*args)
            if base is not None:
                fns['base'] = lambda: base.prefill(*args)
            timed = rotated_ms(fns, rounds, reps, flush=flush)
            per_round = {k_: timed[k_][1] if k_ in timed else [] for k_ in ('fla', 'ours', 'base')}
            med = {k_: timed[k_][0] if k_ in timed else float('nan') for k_ in ('fla', 'ours', 'base')}
            t_fla, t_ours, t_base = med['fla'], med['ours'], med['base']
        hbm_floor = T * H * HBM_BYTES_PER_TOKEN_HEAD / copy_bw * 1e3
        tc_floor = sum(math.ceil(n / 16) for n in lens) * H * FLOPS_PER_CHUNK_HEAD / mm_rate * 1e3
        row = dict(gate=gate, H=H, T=T, seqs=N, fla_ms=t_fla, ours_ms=t_ours, ratio=t_fla / t_ours,
                   hbm_floor_ms=hbm_floor, tc_floor_ms=tc_floor, rel_o_vs_fla=err_o, rel_state_vs_fla=err_s,
                   base_ms=t_base, rel_o_vs_base=err_base, rounds_ms=per_round)
        results['prefill'].append(row)
        dump(results)
        line = f"{gate:9} {H:>3} {T:>6} {N:>4} {t_fla:8.3f} {t_ours:8.3f} {t_fla / t_ours:6.2f} {hbm_floor:12.3f} " \
               f"{100 * hbm_floor / t_ours:6.1f} {tc_floor:11.3f} {100 * tc_floor / t_ours:5.1f} {err_o:8.1e} " \
               f"{err_s:8.1e}"
        if base is not None:
            line += f" {t_base:8.3f} {t_base / t_ours:9.2f} {err_base:10.1e}"
        if rounds > 1 and with_fla:
            line += f"  fla rounds {min(per_round['fla']):.3f}-{max(per_round['fla']):.3f}" \
                    f" ours {min(per_round['ours']):.3f}-{max(per_round['ours']):.3f}"
        print(line, flush=True)
        del q, k, v, g, b, o, pool, o_ref, s_ref
        torch.cuda.empty_cache()


def run_checkpoints(ours, cases, reps, results, flush):
    print('\n== prefill checkpoint emission overhead (deltaserve) ==')
    print(f"{'gate':9} {'H':>3} {'T':>6} {'every':>6} {'ckpts':>5} {'base ms':>8} {'with ms':>8} {'overhead':>8}")
    for gate, H, T, everys in cases:
        lb = -5.0 if gate == 'safe' else None
        gen = torch.Generator(device='cuda').manual_seed(99)
        q, k, v, g, b = prefill_inputs(T, H, gen)
        a_log, dt_bias = gate_params(H, gen)
        n_max = max(T // e for e in everys) + 1
        pool = torch.zeros((n_max + 1, H, D, D), dtype=torch.float32, device='cuda')
        o = torch.empty((T, H * D), dtype=torch.bfloat16, device='cuda')
        base_args = (q.view(T, H * D), k.view(T, H * D), v.view(T, H * D), g.view(T, H * D), b.view(T, H), o,
                     a_log, dt_bias, lb, [0, T], pool, [-1], [0])
        variants = [('none', [])] + [(e, [(0, 1 + i, p) for i, p in enumerate(range(e, T + 1, e)) if p < T])
                                     for e in everys]
        with torch.inference_mode():
            # interleave the variants so that clock drift hits all of them alike
            times = {name: [] for name, _ in variants}
            for _ in range(3):
                for name, cks in variants:
                    _, ts = median_ms(lambda: ours.prefill(*base_args, cks), max(reps // 3, 3), flush=flush)
                    times[name] += ts
        base = statistics.median(times['none'])
        for name, cks in variants[1:]:
            t = statistics.median(times[name])
            row = dict(gate=gate, H=H, T=T, every=name, checkpoints=len(cks), base_ms=base, with_ms=t,
                       overhead=t / base - 1)
            results['checkpoints'].append(row)
            dump(results)
            print(f"{gate:9} {H:>3} {T:>6} {name:>6} {len(cks):>5} {base:8.3f} {t:8.3f} {100 * (t / base - 1):7.2f}%",
                  flush=True)
        del q, k, v, g, b, o, pool
        torch.cuda.empty_cache()


def decode_form(name):
    """Select deltaserve's decode kernel form (env DS_KDA_DECODE, read at launch / graph capture).
    'X+early' is form X called with overlap_prior_kernel (returned): the graph's consecutive steps
    touch disjoint slots, so each step may load its states while the previous one finishes."""
    form, _, flag = name.partition('+')
    if form == 'default':
        os.environ.pop('DS_KDA_DECODE', None)
    else:
        os.environ['DS_KDA_DECODE'] = form
    return flag == 'early'


def run_decode(ours, fused_recurrent_kda_fwd, batches, H, gate, copy_bw, results, steps=32, forms=('default',),
               with_fla=True, rounds=1):
    """Each deltaserve form in `forms` (and fla) as a graph of `steps` decode steps; the graphs are
    timed in turn, `rounds` times (the spread between rounds is the noise); before timing, every
    form's y and states after one step are compared with the first form's on the same inputs."""
    print(f'\n== decode ({gate} gate, H={H}): deltaserve kda_decode forms {",".join(forms)}'
          f'{" vs fla fused_recurrent_kda" if with_fla else ""}, {steps}-step CUDA graph over rotating slots ==')
    hdr = f"{'B':>4} {'fla us':>8} {'fla %':>6}" if with_fla else f"{'B':>4}"
    for f in forms:
        hdr += f" {f + ' us':>15} {'%copy':>6}"
    print(hdr)
    lb = -5.0 if gate == 'safe' else None
    state_bytes = H * D * D * 4
    for B in batches:
        gen = torch.Generator(device='cuda').manual_seed(7 + B)
        # enough slots that one replay touches ~1 GB of states (no L2 reuse across steps)
        n_slots = max(2 * B, min(steps * B, (1 << 30) // state_bytes))
        n_slots = max(n_slots, steps * B)
        pool = torch.randn((n_slots, H, D, D), dtype=torch.float32, device='cuda', generator=gen) * 0.1
        conv = torch.randn((n_slots, 3, H * D, 3), dtype=torch.float32, device='cuda', generator=gen) * 0.1
        perm = torch.randperm(n_slots, device='cuda', generator=gen).to(torch.int32)
        slot_sets = [perm[(i * B) % (n_slots - B + 1):][:B].contiguous() for i in range(steps)]
        slot_sets_long = [s.long() for s in slot_sets]
        a_log, dt_bias = gate_params(H, gen)
        x = dict(B=B, H=H, lb=lb, a_log=a_log, dt_bias=dt_bias,
                 taps=torch.randn((3, H * D, 4), device='cuda', generator=gen) * 0.5,
                 o_norm=torch.ones(D, device='cuda'))
        for name in ('q', 'k', 'v', 'f', 'r'):
            x[name] = torch.randn((B, H * D), dtype=torch.bfloat16, device='cuda', generator=gen)
        x['b'] = torch.randn((B, H), dtype=torch.bfloat16, device='cuda', generator=gen)
        x['y'] = torch.empty((B, H * D), dtype=torch.bfloat16, device='cuda')
        # fla: activated conv outputs as its q, k, v (it has no conv step); same gate inputs.
        fq, fk, fv = (x[n].view(B, 1, H, D) for n in ('q', 'k', 'v'))
        fg = x['f'].view(B, 1, H, D)
        fb = x['b'].view(B, 1, H)
        fo = torch.empty((B, 1, H, D), dtype=torch.bfloat16, device='cuda')
        fpool = pool.clone() if with_fla else None

        # Same function in every form: one step on copies, compared with the first form.
        sel = slot_sets_long[0]
        ref = None
        row = dict(gate=gate, H=H, B=B, forms={})
        for f in forms:
            ovl = decode_form(f)
            p2, c2 = pool.clone(), conv.clone()
            x['y'].fill_(float('nan'))
            ours.decode(x, p2, c2, slot_sets[0], ovl)
            got = (x['y'].float().clone(), p2[sel].clone(), c2[sel].clone())
            if ref is None:
                ref = got
            else:
                ey, es, ec = rel(got[0], ref[0]), rel(got[1], ref[1]), (got[2] - ref[2]).abs().max().item()
                row['forms'][f] = dict(y_vs_first=ey, states_vs_first=es, conv_vs_first=ec)
                print(f'  [{f} vs {forms[0]}] y {ey:.2e}, states {es:.2e}, conv max |d| {ec:.1e}', flush=True)
            del p2, c2
        del ref, got
        decode_form('default')

        def ours_step(i, ovl=False):
            ours.decode(x, pool, conv, slot_sets[i], ovl)

        def fla_step(i):
            fused_recurrent_kda_fwd(q=fq, k=fk, v=fv, g=fg, beta=fb, A_log=a_log, dt_bias=dt_bias,
                                    initial_state=fpool, scale=D ** -0.5, inplace_final_state=True,
                                    ssm_state_indices=slot_sets_long[i], use_qk_l2norm_in_kernel=True,
                                    use_gate_in_kernel=True, use_beta_sigmoid_in_kernel=True, lower_bound=lb,
                                    out=fo)

        def graph_of(step):
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for i in range(3):
                    step(i)
            torch.cuda.current_stream().wait_stream(s)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                for i in range(steps):
                    step(i)
            return graph

        moved = 2 * B * state_bytes  # state read + written
        with torch.inference_mode():
            graphs = {}
            for f in forms:
                ovl = decode_form(f)
                graphs[f] = graph_of(lambda i, o=ovl: ours_step(i, o))
            decode_form('default')
            if with_fla:
                graphs['fla'] = graph_of(fla_step)
            times = {k: [] for k in graphs}
            for _ in range(rounds):
                for k, g in graphs.items():
                    times[k].append(median_ms(g.replay, 20)[0] * 1e3 / steps)
        line = f'{B:>4}'
        if with_fla:
            us = min(times['fla'])
            row.update(fla_us=us, fla_us_rounds=times['fla'], fla_frac_copy=moved / (us * 1e-6) / copy_bw)
            line += f" {us:8.1f} {100 * row['fla_frac_copy']:5.1f}%"
        for f in forms:
            us = min(times[f])
            frac = moved / (us * 1e-6) / copy_bw
            row['forms'].setdefault(f, {}).update(us=us, us_rounds=times[f], frac_copy=frac)
            spread = ','.join(f'{t:.1f}' for t in times[f])
            line += f" {spread:>15} {100 * frac:5.1f}%"
        results['decode'].append(row)
        dump(results)
        print(line, flush=True)
        del pool, conv, fpool, graphs
        torch.cuda.empty_cache()


def prefill_cases(a):
    """(gate, H, sequence lengths) of the prefill table for the parsed arguments."""
    cases = []
    for gate in a.gates.split(','):
        Hs, Ts = ((32,), (8192,)) if a.quick else ((32, 64, 96), (8192, 32768, 65536))
        if a.heads:
            Hs = tuple(int(h) for h in a.heads.split(','))
        if 'grid' in a.shapes:
            for H in Hs:
                for T in Ts:
                    cases.append((gate, H, [T]))
        if 'varlen' in a.shapes:
            g = torch.Generator().manual_seed(5)
            lens = torch.randint(256, 3840, (16,), generator=g).tolist()
            cases.append((gate, 64, lens))
    return cases


def fla_warm(chunk_kda, cases):
    """fla once per (gate, H, packed or varlen) of `cases`, untimed: Triton compiles (and autotunes)
    its kernels into TRITON_CACHE_DIR, so that several such processes can pay the compilation in
    parallel before the table runs on a quiet GPU."""
    seen = set()
    for gate, H, lens in cases:
        if (gate, H, len(lens) > 1) in seen:
            continue
        seen.add((gate, H, len(lens) > 1))
        t0 = time.time()
        gen = torch.Generator(device='cuda').manual_seed(1234 + H)
        T = sum(lens)
        q, k, v, g, b = prefill_inputs(T, H, gen)
        a_log, dt_bias = gate_params(H, gen)
        cu = [0]
        for n in lens:
            cu.append(cu[-1] + n)
        with torch.inference_mode():
            fla_prefill(chunk_kda, q, k, v, g, b, a_log, dt_bias, -5.0 if gate == 'safe' else None,
                        cu if len(lens) > 1 else None)
        torch.cuda.synchronize()
        print(f'fla warm {gate} H={H} T={T} seqs={len(lens)}: {time.time() - t0:.1f} s', flush=True)
        del q, k, v, g, b


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--lib', required=True)
    ap.add_argument('--fla', required=True)
    ap.add_argument('--quick', action='store_true', help='a few shapes only')
    ap.add_argument('--parts', default='prefill,checkpoints,decode,sweep',
                    help='any of prefill, checkpoints, decode, sweep (recurrence warps), segments, '
                         'stages (recurrence pipeline depth), envsweep (--env-sweep settings)')
    ap.add_argument('--out', default='')
    ap.add_argument('--reps', type=int, default=10)
    ap.add_argument('--prefill-rounds', type=int, default=1,
                    help='prefill: rounds of --reps steps, each timing fla, deltaserve (and --lib-base) once in rotated order')
    ap.add_argument('--gates', default='safe,softplus')
    ap.add_argument('--ours-only', action='store_true', help='prefill: time deltaserve only')
    ap.add_argument('--shapes', default='grid,varlen', help='prefill shapes: grid (H x T), varlen (16 sequences)')
    ap.add_argument('--lib-base', default='', help='prefill: also time this deltaserve library (before/after)')
    ap.add_argument('--decode-forms', default='default',
                    help='decode: deltaserve forms to time side by side (env DS_KDA_DECODE values; default = built-in)')
    ap.add_argument('--decode-batches', default='', help='decode: batch sizes, e.g. 1,8,64,256')
    ap.add_argument('--decode-rounds', type=int, default=1, help='decode: time every graph this many times in turn')
    ap.add_argument('--no-fla-decode', action='store_true', help='decode: skip fla')
    ap.add_argument('--copy-sizes', default='4096', help='device copy sizes in MiB (the first is the ceiling)')
    ap.add_argument('--env-sweep', default='',
                    help="part envsweep: settings separated by ';', each NAME=VALUE[,NAME=VALUE...]")
    ap.add_argument('--sweep-shapes', default='',
                    help='part envsweep: H:T,... (default: the whole grid) for every gate of --gates')
    ap.add_argument('--heads', default='', help='prefill / flawarm: grid heads, e.g. 32 (default 32,64,96)')
    ap.add_argument('--fla-at', default='', help='prefill: run fla only at these shapes, H:T,... (T summed for varlen)')
    a = ap.parse_args()
    sys.path.insert(0, a.fla)
    from fla.ops.kda import chunk_kda
    from fla.ops.kda.fused_recurrent import fused_recurrent_kda_fwd
    try:
        import flash_kda  # noqa: F401
        print('note: flash_kda is importable; fla may dispatch to it')
    except ImportError:
        print('fla backend: Triton (flash_kda not installed)')
    parts = a.parts.split(',')
    if parts == ['flawarm']:
        return fla_warm(chunk_kda, prefill_cases(a))
    ours = Ours(load_lib(a.lib))
    torch.backends.cuda.matmul.allow_tf32 = False
    print(f'device: {torch.cuda.get_device_name()}, torch {torch.__version__}')
    copies = {int(m): copy_bandwidth(int(m) << 20) for m in a.copy_sizes.split(',')}
    copy_bw = copies[int(a.copy_sizes.split(',')[0])]
    mm = matmul_rate()
    for m, bw in copies.items():
        print(f'device-to-device copy of {m} MiB: {bw / 1e12:.3f} TB/s (read + write)')
    print(f'bf16 8192^3 matmul: {mm / 1e12:.0f} TFLOP/s')
    results = dict(_out=a.out, copy_TBps=copy_bw / 1e12, copies_TBps={m: bw / 1e12 for m, bw in copies.items()}, matmul_TFLOPs=mm / 1e12, prefill=[], checkpoints=[],
                   decode=[], sweep=[], segments=[], stages=[],
                   env=dict(device=torch.cuda.get_device_name(), torch=torch.__version__,
                            k2_warps=os.environ.get('DS_KDA_K2_WARPS', 'auto')))
    flush = torch.empty(256 << 20, dtype=torch.uint8, device='cuda')
    if 'prefill' in parts:
        cases = prefill_cases(a)
        base = Ours(load_lib(a.lib_base)) if a.lib_base else None
        fla_at = {tuple(int(x) for x in s.split(':')) for s in a.fla_at.split(',')} if a.fla_at else None
        run_prefill(ours, chunk_kda, cases, copy_bw, mm, a.reps, results, flush, with_fla=not a.ours_only,
                    base=base, fla_at=fla_at, rounds=a.prefill_rounds)
    if 'decode' in parts:
        batches = [1, 64, 256] if a.quick else [1, 8, 32, 64, 128, 256]
        if a.decode_batches:
            batches = [int(b) for b in a.decode_batches.split(',')]
        for gate in a.gates.split(','):
            run_decode(ours, fused_recurrent_kda_fwd, batches, 32, gate, copy_bw, results,
                       forms=a.decode_forms.split(','), with_fla=not a.no_fla_decode, rounds=a.decode_rounds)
    if 'checkpoints' in parts:
        ck_cases = []
        if 'safe' in a.gates:
            ck_cases.append(('safe', 32, 32768 if a.quick else 65536, [1024, 4096, 32768]))
        if 'softplus' in a.gates and not a.quick:
            ck_cases.append(('softplus', 64, 65536, [1024, 4096, 32768]))
        run_checkpoints(ours, ck_cases, max(a.reps, 9), results, flush)
    if 'segments' in parts:
        seg_cases = [(gate, H, T) for gate in a.gates.split(',') for H, T in ((32, 8192), (32, 65536), (96, 65536))]
        run_env_sweep(ours, 'overlapped prep/recurrence segments per call', 'DS_KDA_SEGMENTS', (1, 2, 4, 8, 16, 32),
                      's=', seg_cases, a.reps, results, 'segments', flush)
    if 'stages' in parts:
        st_cases = [(gate, H, T) for gate in a.gates.split(',') for H, T in ((32, 32768), (64, 32768), (96, 32768))]
        run_env_sweep(ours, 'recurrence pipeline stages', 'DS_KDA_K2_STAGES', (3, 4, 6, 8), 'st=', st_cases,
                      a.reps, results, 'stages', flush)
    if 'envsweep' in parts:
        settings = [dict(kv.split('=', 1) for kv in st.split(',')) for st in a.env_sweep.split(';') if st]
        shapes = [tuple(int(x) for x in s.split(':')) for s in a.sweep_shapes.split(',')] if a.sweep_shapes \
            else [(H, T) for H in (32, 64, 96) for T in (8192, 32768, 65536)]
        run_settings_sweep(ours, settings, [(g, H, T) for g in a.gates.split(',') for H, T in shapes], a.reps,
                           results, flush)
    if 'sweep' in parts:
        run_env_sweep(ours, 'recurrence-kernel warps per CTA', 'DS_KDA_K2_WARPS', (2, 4, 8), 'w=',
                      [('safe', 32, 32768), ('safe', 96, 32768), ('softplus', 64, 32768)], a.reps, results, 'sweep',
                      flush, seed=3)
    dump(results)


if __name__ == '__main__':
    main()
