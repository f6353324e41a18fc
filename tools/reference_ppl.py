#!/usr/bin/python3
"""Reference perplexity of a Hugging Face Llama-family folder on a text file, the number
`kite eval ppl` is compared against.

Protocol "kite" (the default): read the file as UTF-8; tokenize the whole text once with the
folder's tokenizer.model (SentencePiece), without BOS or EOS; cut the ids into consecutive
windows of N tokens (the last may be shorter); score each window independently with input
[BOS] + window[:-1] against targets window, positions starting at 0; ppl = exp(total NLL /
total tokens).

Protocol "llama" (llama.cpp's llama-perplexity): tokenize the whole text once with BOS first
(when tokenizer_config.json's add_bos_token, default true, says so); chunk i is ids[i*N:(i+1)*N]
with its first token replaced by BOS, at positions 0..N-1; logits rows N//2 .. N-2 are scored
against the chunk's tokens N//2+1 .. N-1; whole chunks only (at least two), the first --chunks
of them (0: all).

Weights are converted exactly to the compute dtype (float32 by default; float32 matmuls go
through oneDNN when available).

  python3 tools/reference_ppl.py models/demo models/demo/heldout.txt [--window 256] [--json]
  python3 tools/reference_ppl.py models/demo models/demo/heldout.txt --protocol llama \
      --window 256 --chunks 8 --json
"""

import argparse
import json
import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llama_reference as ref  # noqa: E402


def use_onednn_linears(model: torch.nn.Module) -> torch.nn.Module:
  """Swaps every float32 nn.Linear for oneDNN's (inference only). Debian's PyTorch routes
  float32 matmuls to the netlib reference BLAS, ~10x slower; oneDNN computes the same float32
  products in another order (logits move by ~1e-6)."""
  from torch.utils.mkldnn import MkldnnLinear
  for module in list(model.modules()):
    for name, child in list(module.named_children()):
      if isinstance(child, torch.nn.Linear) and child.weight.dtype == torch.float32:
        setattr(module, name, MkldnnLinear(child, torch.float))
  return model


def llama_chunks(folder: str, ids: list, bos: int, window: int, chunks: int) -> list:
  """(input, first scored row, targets) per chunk of llama.cpp's protocol."""
  config_path = os.path.join(folder, "tokenizer_config.json")
  add_bos = True
  if os.path.exists(config_path):
    with open(config_path, encoding="utf-8") as f:
      add_bos = json.load(f).get("add_bos_token", True)
  if add_bos:
    ids = [bos] + ids
  if len(ids) < 2 * window:
    raise SystemExit(f"the llama protocol needs at least {2 * window} tokens, the text has {len(ids)}")
  n_chunk = len(ids) // window
  if chunks > 0:
    n_chunk = min(n_chunk, chunks)
  first = window // 2
  out = []
  for i in range(n_chunk):
    inp = list(ids[i * window:(i + 1) * window])
    if add_bos:
      inp[0] = bos
    out.append((inp, first, ids[i * window + first + 1:(i + 1) * window]))
  return out


def perplexity(folder: str, text_path: str, window: int = 256,
               compute_dtype: torch.dtype = torch.float32, protocol: str = "kite",
               chunks: int = 0) -> dict:
  import sentencepiece as spm
  model = ref.load_hf_folder(folder, compute_dtype)
  if compute_dtype == torch.float32 and torch.backends.mkldnn.is_available():
    use_onednn_linears(model)
  sp = spm.SentencePieceProcessor(model_file=os.path.join(folder, "tokenizer.model"))
  with open(text_path, encoding="utf-8") as f:
    text = f.read()
  ids = sp.encode(text)  # no BOS/EOS: SentencePieceProcessor adds none unless asked
  bos = model.cfg.bos_token_id
  if protocol == "llama":
    plan = llama_chunks(folder, ids, bos, window, chunks)
  else:
    plan = [([bos] + ids[start:start + window][:-1], 0, ids[start:start + window])
            for start in range(0, len(ids), window)]
  nlls = []
  with torch.no_grad():
    for inp, first, targets in plan:
      logits = model(torch.tensor([inp]))[0].to(torch.float64)  # [n, vocab]
      rows = logits[first:first + len(targets)]
      nlls.append(F.cross_entropy(rows, torch.tensor(targets), reduction="none"))
  nll = torch.cat(nlls)
  mean = nll.mean().item()
  # llama.cpp's "PPL = x +/- e": the standard error of the mean NLL carried through exp().
  ppl_error = math.exp(mean) * math.sqrt(nll.var(unbiased=False).item() / (len(nll) - 1))
  return {"ppl": math.exp(mean), "ppl_error": ppl_error, "nll": mean, "tokens": len(nll),
          "windows": len(plan), "window": window, "protocol": protocol, "chars": len(text),
          "compute_dtype": str(compute_dtype).replace("torch.", "")}


def main() -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("folder", help="HF folder with config.json, model.safetensors, "
                      "tokenizer.model")
  parser.add_argument("text", help="UTF-8 text file")
  parser.add_argument("--window", type=int, default=256)
  parser.add_argument("--protocol", choices=("kite", "llama"), default="kite")
  parser.add_argument("--chunks", type=int, default=0,
                      help="llama protocol: score the first N chunks (0: all)")
  parser.add_argument("--float64", action="store_true",
                      help="compute in float64 (netlib BLAS: minutes for 20k tokens)")
  parser.add_argument("--json", action="store_true", help="print the result as JSON")
  args = parser.parse_args()
  if args.window < 1:
    parser.error("--window must be at least 1")
  torch.set_num_threads(1)
  r = perplexity(args.folder, args.text, args.window,
                 torch.float64 if args.float64 else torch.float32, args.protocol, args.chunks)
  if args.json:
    print(json.dumps(r))
  else:
    print(f"ppl {r['ppl']:.4f} +/- {r['ppl_error']:.5f}  nll {r['nll']:.6f}  tokens {r['tokens']}  windows "
          f"{r['windows']} of {r['window']}  ({r['compute_dtype']})")
  return 0


if __name__ == "__main__":
  sys.exit(main())
