#!/usr/bin/python3
"""Reference perplexity of a Hugging Face Llama-family folder on a text file, the number
`kite eval ppl` is compared against.

Protocol: read the file as UTF-8; tokenize the whole text once with the folder's
tokenizer.model (SentencePiece), without BOS or EOS; cut the ids into consecutive windows of
N tokens (the last may be shorter); score each window independently with input
[BOS] + window[:-1] against targets window, positions starting at 0; ppl = exp(total NLL /
total tokens). Weights are converted exactly to the compute dtype (float32 by default;
float32 matmuls go through oneDNN when available).

  python3 tools/reference_ppl.py models/demo models/demo/heldout.txt [--window 256] [--json]
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


def perplexity(folder: str, text_path: str, window: int = 256,
               compute_dtype: torch.dtype = torch.float32) -> dict:
  import sentencepiece as spm
  model = ref.load_hf_folder(folder, compute_dtype)
  if compute_dtype == torch.float32 and torch.backends.mkldnn.is_available():
    use_onednn_linears(model)
  sp = spm.SentencePieceProcessor(model_file=os.path.join(folder, "tokenizer.model"))
  with open(text_path, encoding="utf-8") as f:
    text = f.read()
  ids = sp.encode(text)  # no BOS/EOS: SentencePieceProcessor adds none unless asked
  bos = model.cfg.bos_token_id
  total_nll, windows = 0.0, 0
  with torch.no_grad():
    for start in range(0, len(ids), window):
      win = torch.tensor([ids[start:start + window]])  # [1, n]
      inp = torch.cat([torch.tensor([[bos]]), win[:, :-1]], dim=1)  # [1, n]
      logits = model(inp).to(torch.float64)  # [1, n, vocab]
      total_nll += F.cross_entropy(logits[0], win[0], reduction="sum").item()
      windows += 1
  return {"ppl": math.exp(total_nll / len(ids)), "nll": total_nll / len(ids),
          "tokens": len(ids), "windows": windows, "window": window, "chars": len(text),
          "compute_dtype": str(compute_dtype).replace("torch.", "")}


def main() -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("folder", help="HF folder with config.json, model.safetensors, "
                      "tokenizer.model")
  parser.add_argument("text", help="UTF-8 text file")
  parser.add_argument("--window", type=int, default=256)
  parser.add_argument("--float64", action="store_true",
                      help="compute in float64 (netlib BLAS: minutes for 20k tokens)")
  parser.add_argument("--json", action="store_true", help="print the result as JSON")
  args = parser.parse_args()
  if args.window < 1:
    parser.error("--window must be at least 1")
  torch.set_num_threads(1)
  r = perplexity(args.folder, args.text, args.window,
                 torch.float64 if args.float64 else torch.float32)
  if args.json:
    print(json.dumps(r))
  else:
    print(f"ppl {r['ppl']:.4f}  nll {r['nll']:.6f}  tokens {r['tokens']}  windows "
          f"{r['windows']} of {r['window']}  ({r['compute_dtype']})")
  return 0


if __name__ == "__main__":
  sys.exit(main())
