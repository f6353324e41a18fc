#!/usr/bin/env python3
"""Fits Kite's device cost model (docs/cost_model.md) to testdata/cost_model/calibration.json.

Plain Python (no numpy): the model has a handful of parameters and the file a few dozen rows.
This is a second implementation of the cost formulas, written from docs/cost_model.md, not from
the C++ (src/profile/cost_model.cpp); tests compare the two on every calibration row.

  python3 tools/fit_cost_model.py            # fit, write the "cost" block of every chips/*.json
  python3 tools/fit_cost_model.py --check    # fit, fail if the committed chip files differ
  python3 tools/fit_cost_model.py --report   # also leave-one-out and the naive roofline (markdown)
  python3 tools/fit_cost_model.py --loo-check prefill=8.7,92,27.6 decode=8.7,88,26.3
                                             # fail if leave-one-out is worse than README states

Reads only testdata/cost_model/calibration.json and the published facts in chips/*.json.
"""
import argparse
import json
import math
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CALIBRATION = os.path.join(ROOT, "testdata", "cost_model", "calibration.json")
CHIPS = os.path.join(ROOT, "chips")
PREDICTIONS = os.path.join(ROOT, "testdata", "cost_model", "fit_predictions.json")

TILE = 32  # rows, columns and depth of a matrix-unit tile (docs/cost_model.md §2)
CHUNK = 128  # compiled prefill chunk
ROW_SIGMA = 0.15  # the rows are +-15% figures (calibration.json "about")

# weight bits, activation bytes, KV bytes, matrix-unit cost class
RECIPES = {
    "w4a16": (4, 2, 2, "a16"),
    "w8a16": (8, 2, 2, "a16"),
    "w8a8": (8, 1, 1, "a8"),
    "w4f16": (4, 2, 2, "f16"),
}
PRECISIONS = {"w4a16": "w4a16", "w4a16 (2024 components)": "w4a16", "w4 (fp16 activations)": "w4f16"}
# Fixed, not fitted (no calibration row runs 8-bit activations): 8-bit activations take half the
# matrix-unit time of 16-bit ones.
A8_COST = 0.5
# CPU side (the embedding lookup; fallbacks): assumed, not fitted.
CPU_BW_FRACTION = 0.25
CPU_OP_OVERHEAD_S = 20e-6
CPU_MACS_PER_S = 50e9
# Vector unit: assumed, not fitted (the rows cannot separate it from the per-op overhead): one
# element per lane of a 1024-bit HVX register (64 x 16-bit) per cycle at ~1 GHz, per context.
VEC_ELEMS_PER_S_PER_CONTEXT = 64e9


def pad(x):
    return -(-x // TILE) * TILE


def graph_ops(m, recipe, T, C):
    """The ops of one graph (T tokens over a static context of C), as dicts of work amounts.

    Mirrors the Llama-family graph (src/models/llama.cpp) with views left out. act_in: the matrix
    unit's activation input in bytes (does it fit in VTCM?); weights: weight elements (the fp16
    path widens each one)."""
    wbits, ab, kvb, _ = RECIPES[recipe]
    H, Hq, Hkv, D, F, V = m["hidden"], m["heads"], m["kv_heads"], m["head_dim"], m["ffn"], m["vocab"]
    G = Hq // Hkv
    ops = []

    def matmul(name, rows, K, N):
        ops.append(dict(name=name, kind="matmul", macs=rows * K * N,
                        hmx=pad(rows) * pad(K) * pad(N), vec=0, act_in=rows * K * ab, weights=K * N,
                        bytes=K * N * wbits // 8 + N * 4 + rows * (K + N) * ab,
                        wbytes=K * N * wbits // 8 + N * 4))

    def vector(name, kind, elements, inputs, weight_bytes=0):
        ops.append(dict(name=name, kind=kind, macs=0, hmx=0, vec=elements,
                        bytes=(inputs + 1) * elements * ab + weight_bytes, wbytes=weight_bytes))

    ops.append(dict(name="token_embd", kind="embedding", macs=0, hmx=0, vec=0,
                    bytes=T * H * (ab + wbits / 8), wbytes=0, cpu=True))
    for layer in range(m["layers"]):
        p = "blk.%d." % layer
        vector(p + "attn_norm", "rms_norm", T * H, 1, H * 2)
        matmul(p + "attn_q", T, H, Hq * D)
        matmul(p + "attn_k", T, H, Hkv * D)
        matmul(p + "attn_v", T, H, Hkv * D)
        vector(p + "rope_q", "rope", T * Hq * D, 1)
        vector(p + "rope_k", "rope", T * Hkv * D, 1)
        ops.append(dict(name=p + "attn", kind="attention", macs=2 * T * Hq * C * D,
                        hmx=2 * Hkv * pad(T * G) * pad(C) * pad(D), vec=T * Hq * C,
                        act_in=T * Hq * D * ab,
                        bytes=2 * C * Hkv * D * kvb + 2 * T * Hq * D * ab + 2 * T * Hkv * D * ab,
                        wbytes=0))
        matmul(p + "attn_output", T, Hq * D, H)
        vector(p + "attn_residual", "add", T * H, 2)
        vector(p + "ffn_norm", "rms_norm", T * H, 1, H * 2)
        matmul(p + "ffn_gate", T, H, F)
        matmul(p + "ffn_up", T, H, F)
        vector(p + "ffn_swiglu", "swiglu", T * F, 2)
        matmul(p + "ffn_down", T, F, H)
        vector(p + "ffn_residual", "add", T * H, 2)
    vector("output_norm", "rms_norm", H, 1, H * 2)
    matmul("output", 1, H, V)
    return ops


def graph_time(ops, chip, recipe, P):
    """Seconds for one execution of the graph on `chip` with cost parameters P (docs §2-3)."""
    klass = RECIPES[recipe][3]
    cost = {"a8": A8_COST, "a16": 1.0, "f16": P["fp16_cost"]}[klass]
    bw = P["dram_efficiency"] * chip["dram_peak_gbs"] * 1e9
    vec_rate = VEC_ELEMS_PER_S_PER_CONTEXT * chip["hvx_contexts"]
    vtcm = chip["vtcm_mb"] * 2**20
    total = P["graph_overhead_s"]
    for op in ops:
        n = op.get("count", 1)
        if op.get("cpu"):
            total += n * (op["bytes"] / (CPU_BW_FRACTION * chip["dram_peak_gbs"] * 1e9) +
                          CPU_OP_OVERHEAD_S)
            continue
        spill = P["vtcm_spill_cost"] if op.get("act_in", 0) >= vtcm else 1.0
        compute = op["hmx"] * cost * spill / P["hmx_macs_per_s"] + op["vec"] / vec_rate
        if klass == "f16":
            compute += op.get("weights", 0) / P["dequant_weights_per_s"]
        total += n * max(compute + P["op_overhead_s"], op["bytes"] / bw)
    return total


def grouped(ops):
    """The same ops with identical ones (every layer's) counted once: the fit's speed."""
    groups = {}
    for op in ops:
        key = (op["kind"], op["hmx"], op["vec"], op["bytes"], op.get("act_in"), op.get("weights"),
               op.get("cpu", False))
        if key in groups:
            groups[key]["count"] += 1
        else:
            groups[key] = dict(op, count=1)
    return list(groups.values())


# --- the calibration file -------------------------------------------------------------------

def observations(cal):
    """(row index, metric, model, recipe, chip, T, C, observed seconds) per figure."""
    out = []
    for i, r in enumerate(cal["rows"]):
        recipe = PRECISIONS[r["precision"]]
        c = r["ctx"]
        if "ttft_ms_ar128" in r:
            out.append((i, "prefill", r["model"], recipe, r["chip"], CHUNK, c, r["ttft_ms_ar128"] / 1e3))
        if "decode_tps" in r:
            out.append((i, "decode", r["model"], recipe, r["chip"], 1, c, 1.0 / r["decode_tps"]))
        if "prefill_1024_ms" in r:
            out.append((i, "prefill", r["model"], recipe, r["chip"], 1024, c, r["prefill_1024_ms"] / 1e3))
        if "decode_ms_per_token" in r:
            out.append((i, "decode", r["model"], recipe, r["chip"], 1, c, r["decode_ms_per_token"] / 1e3))
    return out


def load_chips():
    chips = {}
    for f in sorted(os.listdir(CHIPS)):
        if f.endswith(".json"):
            with open(os.path.join(CHIPS, f)) as h:
                chips[f[:-5]] = json.load(h)
    return chips


# --- the fit: Levenberg-Marquardt on log parameters, log residuals ----------------------------

GLOBALS = ["hmx_macs_per_s", "dram_efficiency", "op_overhead_s", "graph_overhead_s", "fp16_cost",
           "dequant_weights_per_s", "vtcm_spill_cost"]
START = dict(hmx_macs_per_s=7e12, dram_efficiency=0.5, op_overhead_s=20e-6, graph_overhead_s=2e-3,
             fp16_cost=2.0, dequant_weights_per_s=100e9, vtcm_spill_cost=1.2)
# Per chip: its compute and bandwidth relative to the global ones, each pulled towards its prior
# centre (compute: the chip's published compute-bound ratio; bandwidth: 1) with these widths.
COMPUTE_PRIOR_SIGMA = 0.3
BW_PRIOR_SIGMA = 0.3


def compute_prior(cal, chip):
    """log compute ratio to 8elite from the same compute-bound SD-1.5 UNet graph (calibration
    file's non_llm_chip_ratios); chips without one take 8gen2's (the slowest listed)."""
    unet = cal["non_llm_chip_ratios"]["sd-1.5-unet-w8a16"]
    return math.log(unet["8elite"] / unet.get(chip, unet["8gen2"]))


def solve(A, b):
    n = len(b)
    M = [row[:] + [b[i]] for i, row in enumerate(A)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(M[r][c]))
        M[c], M[p] = M[p], M[c]
        for r in range(n):
            if r != c and M[c][c] != 0:
                f = M[r][c] / M[c][c]
                M[r] = [x - f * y for x, y in zip(M[r], M[c])]
    return [M[i][n] / M[i][i] for i in range(n)]


def levenberg_marquardt(residuals, theta, iterations=200):
    lam = 1e-3
    r = residuals(theta)
    cost = sum(x * x for x in r)
    for _ in range(iterations):
        J = []
        for j in range(len(theta)):
            t = theta[:]
            t[j] += 1e-6
            J.append([(a - b) / 1e-6 for a, b in zip(residuals(t), r)])
        n = len(theta)
        A = [[sum(J[i][k] * J[j][k] for k in range(len(r))) for j in range(n)] for i in range(n)]
        g = [sum(J[i][k] * r[k] for k in range(len(r))) for i in range(n)]
        improved = False
        while lam < 1e10:
            Ad = [[A[i][j] + (lam * (A[i][i] + 1e-9) if i == j else 0) for j in range(n)] for i in range(n)]
            step = solve(Ad, [-x for x in g])
            t = [a + max(-1.0, min(1.0, s)) for a, s in zip(theta, step)]  # at most a factor e
            try:
                rt = residuals(t)
                ct = sum(x * x for x in rt)
            except (OverflowError, ValueError, ZeroDivisionError):
                ct = math.inf
            if ct < cost:
                improved = cost - ct > 1e-12 * (1 + cost)
                theta, r, cost, lam = t, rt, ct, max(lam / 10, 1e-12)
                break
            lam *= 10
        if not improved:
            break
    return theta


class Model:
    def __init__(self, cal, chips, obs):
        self.cal, self.chips, self.obs = cal, chips, obs
        self.fit_chips = sorted({o[4] for o in obs})
        self.ops = {}
        for o in obs:
            key = (o[2], o[3], o[5], o[6])
            if key not in self.ops:
                self.ops[key] = grouped(graph_ops(cal["models"][o[2]], o[3], o[5], o[6]))

    def unpack(self, theta, chip):
        P = {k: math.exp(theta[i]) for i, k in enumerate(GLOBALS)}
        if chip in self.fit_chips:
            j = len(GLOBALS) + 2 * self.fit_chips.index(chip)
            s, b = theta[j], theta[j + 1]
        else:
            s, b = 0.0, 0.0
        prior = compute_prior(self.cal, chip)
        P["hmx_macs_per_s"] *= math.exp(prior + s)
        P["dram_efficiency"] *= math.exp(b)
        # The per-op overhead is control work on the NPU's own cores (scheduling, DMA set-up,
        # synchronisation): it takes as long as the NPU is slow, by the same published ratio
        # that centres the compute prior; the fitted op_overhead_s is 8 Elite's.
        P["op_overhead_s"] *= math.exp(-prior)
        return P

    def predict(self, theta, o, P=None):
        """Seconds for observation `o`; P: its chip's unpacked parameters, when at hand."""
        return graph_time(self.ops[(o[2], o[3], o[5], o[6])], self.chips[o[4]], o[3],
                          P or self.unpack(theta, o[4]))

    def residuals(self, theta, obs):
        P = {chip: self.unpack(theta, chip) for chip in {o[4] for o in obs}}
        r = [math.log(self.predict(theta, o, P[o[4]]) / o[7]) / ROW_SIGMA for o in obs]
        for k in range(len(self.fit_chips)):
            j = len(GLOBALS) + 2 * k
            r.append(theta[j] / COMPUTE_PRIOR_SIGMA)
            r.append(theta[j + 1] / BW_PRIOR_SIGMA)
        return r

    def fit(self, obs):
        theta = [math.log(START[k]) for k in GLOBALS] + [0.0] * (2 * len(self.fit_chips))
        return levenberg_marquardt(lambda t: self.residuals(t, obs), theta)


# --- the naive roofline: per chip and precision, time = max(MACs / P, weight bytes / B) --------

def naive_fit(model, obs):
    params = {}
    for key in {(o[4], o[3]) for o in obs}:
        mine = [o for o in obs if (o[4], o[3]) == key]

        def res(t, mine=mine):
            return [math.log(naive_predict(model, t, o) / o[7]) for o in mine]
        params[key] = levenberg_marquardt(res, [math.log(5e12), math.log(40e9)])
    return params


def naive_predict(model, t, o):
    ops = model.ops[(o[2], o[3], o[5], o[6])]
    macs = sum(op["macs"] * op["count"] for op in ops)
    wbytes = sum(op["wbytes"] * op["count"] for op in ops)
    return max(macs / math.exp(t[0]), wbytes / math.exp(t[1]))


def summary(errors):
    """(median |error|, fraction within +-20%, the error of largest magnitude)."""
    a = sorted(abs(e) for e in errors)
    med = a[len(a) // 2] if len(a) % 2 else (a[len(a) // 2 - 1] + a[len(a) // 2]) / 2
    return med, sum(1 for e in a if e <= 0.20) / len(a), max(errors, key=abs)


def stats(errors):
    if not errors:
        return "n/a"
    med, within, worst = summary(errors)
    return "median |err| %.1f%%, within ±20%%: %d%%, worst %+.1f%% (n=%d)" % (
        100 * med, round(100 * within), 100 * worst, len(errors))


def leave_one_out(model, obs):
    """Each figure predicted by a fit to all the others (from the same start as the full fit)."""
    return [model.predict(model.fit(obs[:i] + obs[i + 1:]), o) / o[7] - 1
            for i, o in enumerate(obs)]


def leave_one_row_out(model, obs):
    """Harder: a calibration row's prefill and decode figures left out together."""
    err = [0.0] * len(obs)
    for row in sorted({o[0] for o in obs}):
        theta = model.fit([o for o in obs if o[0] != row])
        for i, o in enumerate(obs):
            if o[0] == row:
                err[i] = model.predict(theta, o) / o[7] - 1
    return err


# Rows where the shapes, not only the size, decide the time (docs/cost_model.md §5).
SHAPE_GROUPS = [
    ("MHA (a kv head per query head: KV 4x GQA's)", lambda m, o: m["kv_heads"] == m["heads"]),
    ("head_dim 64 or 96 (tile padding, KV row width)", lambda m, o: m["head_dim"] != 128),
    ("1024-token prompt graph (activations exceed VTCM)", lambda m, o: o[5] > CHUNK),
    ("fp16 activations (w4 dequantized on HVX)", lambda m, o: o[3] == "w4f16"),
]


def chip_cost_block(model, theta, chip):
    P = model.unpack(theta, chip)
    fitted = chip in model.fit_chips
    block = {
        "fitted_from": ("calibration rows of this chip" if fitted else
                        "no calibration rows: global fit, prior compute ratio (8gen2's), bandwidth = global efficiency"),
        "hmx_macs_per_s": float("%.6g" % P["hmx_macs_per_s"]),
        "dram_efficiency": float("%.6g" % P["dram_efficiency"]),
        "op_overhead_us": float("%.6g" % (P["op_overhead_s"] * 1e6)),
        "graph_overhead_us": float("%.6g" % (P["graph_overhead_s"] * 1e6)),
        "fp16_cost": float("%.6g" % P["fp16_cost"]),
        "dequant_weights_per_s": float("%.6g" % P["dequant_weights_per_s"]),
        "vtcm_spill_cost": float("%.6g" % P["vtcm_spill_cost"]),
        "a8_cost": A8_COST,
        "vec_elems_per_s_per_context": VEC_ELEMS_PER_S_PER_CONTEXT,
        "tile": TILE,
        "cpu_bw_fraction": CPU_BW_FRACTION,
        "cpu_op_overhead_us": CPU_OP_OVERHEAD_S * 1e6,
        "cpu_macs_per_s": CPU_MACS_PER_S,
    }
    return block


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true",
                    help="fail if chips/*.json or fit_predictions.json differ from the fit")
    ap.add_argument("--report", action="store_true", help="leave-one-out and naive roofline tables")
    ap.add_argument("--loo-check", nargs="+", metavar="KIND=MEDIAN,WITHIN,WORST",
                    help="fail if a leave-one-out statistic (percent) is worse than stated, "
                         "e.g. prefill=8.7,92,27.6")
    args = ap.parse_args()
    with open(CALIBRATION) as f:
        cal = json.load(f)
    chips = load_chips()
    obs = observations(cal)
    model = Model(cal, chips, obs)
    if args.loo_check:  # checks the statistics only; writes nothing
        stated = {}
        for item in args.loo_check:
            kind, _, values = item.partition("=")
            numbers = values.split(",")
            try:
                if kind not in ("prefill", "decode") or len(numbers) != 3:
                    raise ValueError
                stated[kind] = tuple(float(x) for x in numbers)
            except ValueError:
                ap.error("--loo-check %r: expected prefill|decode=MEDIAN,WITHIN,WORST" % item)
        return loo_check(model, obs, stated)

    theta = model.fit(obs)
    mismatched = []
    for name, chip in chips.items():
        block = chip_cost_block(model, theta, name)
        if args.check:
            old = chip.get("cost", {})
            for k, v in block.items():
                ov = old.get(k)
                same = (ov == v) if isinstance(v, str) else (isinstance(ov, (int, float)) and
                                                             abs(ov - v) <= 1e-4 * abs(v))
                if not same:
                    mismatched.append("%s: cost.%s committed %r, fit %r" % (name, k, ov, v))
        else:
            chip["cost"] = block
            with open(os.path.join(CHIPS, name + ".json"), "w") as f:
                json.dump(chip, f, indent=2)
                f.write("\n")
    preds = []
    for o in obs:
        preds.append(dict(row=o[0], metric=o[1], model=o[2], recipe=o[3], chip=o[4], tokens=o[5],
                          ctx=o[6], observed_s=o[7], predicted_s=float("%.6g" % model.predict(theta, o))))
    if args.check:
        with open(PREDICTIONS) as f:
            committed = json.load(f)["rows"]
        if [r["predicted_s"] for r in committed] != [r["predicted_s"] for r in preds]:
            mismatched.append(os.path.relpath(PREDICTIONS, ROOT) + " differs from the fit's predictions")
        if mismatched:
            print("\n".join(mismatched))
            return 1
        print("chips/*.json match the fit")
    else:
        with open(PREDICTIONS, "w") as f:
            json.dump({"about": "tools/fit_cost_model.py's predictions for the calibration rows, "
                                "with the fitted chip parameters", "rows": preds}, f, indent=1)
            f.write("\n")

    if args.report:
        report(model, obs, theta)
    return 0


def loo_check(model, obs, stated):
    """Fails when a leave-one-out statistic is worse than the one README.md states."""
    loo = leave_one_out(model, obs)
    failed = []
    for kind, (med_pct, within_pct, worst_pct) in stated.items():
        med, within, worst = summary([e for e, o in zip(loo, obs) if o[1] == kind])
        print("%s: leave-one-out %s" % (kind, stats([e for e, o in zip(loo, obs) if o[1] == kind])))
        if round(100 * med, 1) > med_pct or round(100 * within) < within_pct or \
                round(100 * abs(worst), 1) > worst_pct:
            failed.append("%s: leave-one-out median %.1f%%, within ±20%% %d%%, worst %+.1f%%; "
                          "README.md states %.1f%%, %d%%, ±%.1f%%" % (
                              kind, 100 * med, round(100 * within), 100 * worst,
                              med_pct, within_pct, worst_pct))
    print("\n".join(failed) if failed else "leave-one-out statistics as stated")
    return 1 if failed else 0


def report(model, obs, theta):
    fit_err = [model.predict(theta, o) / o[7] - 1 for o in obs]
    loo_err = leave_one_out(model, obs)
    naive = naive_fit(model, obs)
    naive_err = [naive_predict(model, naive[(o[4], o[3])], o) / o[7] - 1 for o in obs]
    naive_loo = []
    for i, o in enumerate(obs):
        mine = [q for j, q in enumerate(obs) if j != i and (q[4], q[3]) == (o[4], o[3])]
        if not [q for q in mine if q[1] == o[1]]:
            naive_loo.append(None)  # no other figure of this kind for the chip: unidentifiable
            continue
        t = naive_fit(model, mine)[(o[4], o[3])]
        naive_loo.append(naive_predict(model, t, o) / o[7] - 1)
    print("| row | model | recipe | chip | T/ctx | kind | observed | Kite fit | Kite LOO | naive fit | naive LOO |")
    print("| --- | --- | --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for o, a, b, c, d in zip(obs, fit_err, loo_err, naive_err, naive_loo):
        obs_text = "%.1f ms" % (o[7] * 1e3) if o[1] == "prefill" else "%.2f tok/s" % (1 / o[7])
        print("| %d | %s | %s | %s | %d/%d | %s | %s | %+.1f%% | %+.1f%% | %+.1f%% | %s |" % (
            o[0], o[2], o[3], o[4], o[5], o[6], o[1], obs_text, 100 * a, 100 * b, 100 * c,
            "n/a" if d is None else "%+.1f%%" % (100 * d)))
    print()
    for kind in ("prefill", "decode"):
        pick = [i for i, o in enumerate(obs) if o[1] == kind]
        print("- %s: Kite fit %s; Kite leave-one-out %s; naive fit %s; naive leave-one-out %s" % (
            kind, stats([fit_err[i] for i in pick]), stats([loo_err[i] for i in pick]),
            stats([naive_err[i] for i in pick]),
            stats([naive_loo[i] for i in pick if naive_loo[i] is not None])))
    row_err = leave_one_row_out(model, obs)
    for kind in ("prefill", "decode"):
        print("- %s, leaving out a whole row (its prefill and decode figures together): %s" % (
            kind, stats([e for e, o in zip(row_err, obs) if o[1] == kind])))
    print()
    print("| rows where shapes matter | n | Kite LOO median / worst | naive LOO median / worst |")
    print("| --- | ---: | ---: | ---: |")
    for name, test in SHAPE_GROUPS:
        pick = [i for i, o in enumerate(obs)
                if test(model.cal["models"][o[2]], o) and naive_loo[i] is not None]
        kite, naive = summary([loo_err[i] for i in pick]), summary([naive_loo[i] for i in pick])
        print("| %s | %d | %.1f%% / %+.1f%% | %.1f%% / %+.1f%% |" % (
            name, len(pick), 100 * kite[0], 100 * kite[2], 100 * naive[0], 100 * naive[2]))


if __name__ == "__main__":
    sys.exit(main())
