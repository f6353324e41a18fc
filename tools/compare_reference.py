#!/usr/bin/python3
"""Reference statistics for `kite eval compare`, from logits dumped with --dump: the numbers
llama-perplexity --kl-divergence prints (tools/perplexity/perplexity.cpp, kl_divergence()),
computed here in float64 straight from the full logits of both models (no compact encoding of the
reference), written independently of Kite's C++.

  kite eval compare -m REF.gguf  --ref REF.gguf -f TEXT --dump ref.dump   # the reference's logits
  kite eval compare -m QUANT.gguf --ref REF.gguf -f TEXT --dump quant.dump
  python3 tools/compare_reference.py ref.dump quant.dump --json

Dump layout: "KITEDUMP", u32 version 1, i32 vocab, i64 rows, then per row i32 target and
f32 logits[vocab].
"""

import argparse
import json
import math
import struct
import sys

import numpy as np
import torch


def read_dump(path: str):
  with open(path, "rb") as f:
    data = f.read()
  if data[:8] != b"KITEDUMP":
    raise SystemExit(f"{path}: not a kite eval compare --dump file")
  version, vocab, rows = struct.unpack_from("<Iiq", data, 8)
  if version != 1:
    raise SystemExit(f"{path}: dump version {version}, expected 1")
  record = np.dtype([("target", "<i4"), ("logits", "<f4", (vocab,))])
  table = np.frombuffer(data, dtype=record, count=rows, offset=24)
  return torch.from_numpy(table["target"].astype(np.int64)), torch.from_numpy(table["logits"].astype(np.float64))


def mean_and_error(values: torch.Tensor):
  """llama.cpp's mean_and_uncertainty: sum-based variance, error 0 for 10 values or fewer."""
  n = values.numel()
  mean = values.sum().item() / n
  var = (values * values).sum().item() / n - mean * mean
  return mean, (math.sqrt(var / (n - 1)) if var > 0 and n > 10 else 0.0)


def percentile(sorted_values: torch.Tensor, fraction: float) -> float:
  return torch.quantile(sorted_values, fraction, interpolation="linear").item()


def statistics(ref_dump: str, quant_dump: str) -> dict:
  targets, ref_logits = read_dump(ref_dump)
  quant_targets, quant_logits = read_dump(quant_dump)
  if not torch.equal(targets, quant_targets):
    raise SystemExit("the two dumps score different tokens")
  log_p = torch.log_softmax(ref_logits, dim=-1)    # [rows, vocab]
  log_q = torch.log_softmax(quant_logits, dim=-1)
  rows = torch.arange(len(targets))
  nll = -log_q[rows, targets]
  nll_base = -log_p[rows, targets]
  kld = (log_p.exp() * (log_p - log_q)).sum(dim=-1)
  p_diff = (-nll).exp() - (-nll_base).exp()
  same_top = (ref_logits.argmax(dim=-1) == quant_logits.argmax(dim=-1)).double()
  n = len(targets)

  ln_ppl, ln_ppl_err = mean_and_error(nll)
  ln_base, ln_base_err = mean_and_error(nll_base)
  cov = ((nll * nll_base).sum().item() / n - ln_ppl * ln_base) / (n - 1)
  ppl, ppl_base = math.exp(ln_ppl), math.exp(ln_base)
  ratio_err = math.sqrt(ln_ppl_err ** 2 + ln_base_err ** 2 - 2 * cov)
  ppl_err, base_err = ppl * ln_ppl_err, ppl_base * ln_base_err
  kld_mean, kld_err = mean_and_error(kld)
  dp_mean, dp_err = mean_and_error(p_diff)
  mse, mse_err = mean_and_error(p_diff * p_diff)
  rms = math.sqrt(mse)
  top = same_top.mean().item()
  kld_sorted, dp_sorted = kld.sort().values, p_diff.sort().values
  kld_fractions = [1.0, 0.999, 0.99, 0.95, 0.90, 0.5, 0.10, 0.05, 0.01, 0.001, 0.0]
  dp_fractions = [1.0, 0.999, 0.99, 0.95, 0.90, 0.75, 0.5, 0.25, 0.10, 0.05, 0.01, 0.001, 0.0]
  est = lambda v, e: {"value": v, "error": e}
  return {
      "tokens": n,
      "ppl": est(ppl, ppl_err),
      "ppl_ref": est(ppl_base, base_err),
      "ln_ppl_correlation": cov / (ln_ppl_err * ln_base_err),
      "ln_ppl_ratio": est(ln_ppl - ln_base, ratio_err),
      "ppl_ratio": est(math.exp(ln_ppl - ln_base), math.exp(ln_ppl - ln_base) * ratio_err),
      "ppl_diff": est(ppl - ppl_base, math.sqrt(ppl_err ** 2 + base_err ** 2 - 2 * ppl * ppl_base * cov)),
      "kld": est(kld_mean, kld_err),
      "kld_quantiles": [{"fraction": f, "value": percentile(kld_sorted, f)} for f in kld_fractions],
      "p_diff": est(dp_mean, dp_err),
      "p_diff_quantiles": [{"fraction": f, "value": percentile(dp_sorted, f)} for f in dp_fractions],
      "p_diff_rms": est(rms, 0.5 / rms * mse_err if rms > 0 else 0.0),
      "same_top": est(top, math.sqrt(top * (1 - top) / (n - 1))),
  }


def main() -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("ref_dump", help="--dump of the reference model (compared with itself)")
  parser.add_argument("quant_dump", help="--dump of the quantized model")
  parser.add_argument("--json", action="store_true")
  args = parser.parse_args()
  s = statistics(args.ref_dump, args.quant_dump)
  if args.json:
    print(json.dumps(s))
  else:
    for key, value in s.items():
      print(f"{key}: {value}")
  return 0


if __name__ == "__main__":
  sys.exit(main())
