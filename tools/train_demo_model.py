#!/usr/bin/python3
"""Trains models/demo: a small Llama on Debian's `fortunes` quotations, with a SentencePiece
BPE tokenizer trained by this script, and writes it as a Hugging Face folder.

Stages (each resumable; work files live in --work, the model folder in --out):
  prepare  read /usr/share/games/fortunes, split train / validation / held-out, train the
           tokenizer, tokenize the training text once
  bench    time a few training steps (tokens/s) to size the run
  train    train with AdamW, warmup + cosine schedule, checkpointing every --ckpt-minutes;
           the schedule follows --steps or --max-minutes of training time, whichever runs
           out first, so a slow shared machine still anneals (resume with the same command)
  export   write config.json, model.safetensors (F16), tokenizer files, heldout.txt, README.md
           (with held-out perplexity from tools/reference_ppl.py and a sample continuation)

The machine is shared: run under `nice -n 19`; torch uses one thread. Matmuls run in bfloat16
under CPU autocast (oneDNN uses AMX/AVX-512 where present), master weights stay float32.

Example:
  nohup nice -n 19 /usr/bin/python3 tools/train_demo_model.py all > build-pytorch/demo/log 2>&1 &
"""

import argparse
import io
import json
import math
import os
import random
import re
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llama_reference as ref  # noqa: E402
import reference_ppl  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FORTUNE_DIR = "/usr/share/games/fortunes"
# Drawings are not text; ethnic jokes are not what a demo should say back.
EXCLUDED_FILES = {"art", "ascii-art", "ethnic"}
SEED = 20240601
HELDOUT_FRACTION = 0.02
HELDOUT_MAX_BYTES = 48_000
VALID_FRACTION = 0.01
SEQ_LEN = 256
SEPARATOR = "\n%\n"  # the fortune file format: one "%" line between quotations

MODEL_CONFIG = ref.LlamaConfig(
    vocab_size=4096, hidden_size=256, intermediate_size=688, num_hidden_layers=6,
    num_attention_heads=8, num_key_value_heads=4, head_dim=32, rms_norm_eps=1e-5,
    rope_theta=10000.0, max_position_embeddings=SEQ_LEN, tie_word_embeddings=False,
    bos_token_id=1, eos_token_id=2)


def log(msg: str) -> None:
  print(time.strftime("%H:%M:%S"), msg, flush=True)


# ----------------------------------------------------------------------------------------------
# prepare


def read_fortunes():
  """All quotations in file order, overstrike (x BACKSPACE y) resolved, trailing spaces
  trimmed, duplicates dropped. Returns (list of texts, list of source file names)."""
  names = sorted(n for n in os.listdir(FORTUNE_DIR)
                 if "." not in n and not os.path.islink(os.path.join(FORTUNE_DIR, n))
                 and n not in EXCLUDED_FILES)
  seen, out = set(), []
  for name in names:
    with open(os.path.join(FORTUNE_DIR, name), encoding="utf-8") as f:
      text = re.sub(".\x08", "", f.read())
    for item in re.split(r"(?m)^%\n", text):
      item = "\n".join(line.rstrip() for line in item.strip("\n").split("\n"))
      if item.strip() and item not in seen:
        seen.add(item)
        out.append(item)
  return out, names


def split_fortunes(fortunes):
  order = list(range(len(fortunes)))
  random.Random(SEED).shuffle(order)
  heldout, size = [], 0
  budget = min(HELDOUT_MAX_BYTES, HELDOUT_FRACTION * sum(len(f) for f in fortunes))
  i = 0
  while size < budget:
    heldout.append(order[i])
    size += len(fortunes[order[i]]) + len(SEPARATOR)
    i += 1
  n_valid = int(VALID_FRACTION * len(fortunes))
  valid = order[i:i + n_valid]
  train = order[i + n_valid:]
  pick = lambda idx: [fortunes[j] for j in sorted(idx)]  # keep file order inside each split
  return pick(train), pick(valid), pick(heldout)


def join_fortunes(items):
  return SEPARATOR.join(items) + "\n"


def train_tokenizer(train_text: str, path: str) -> None:
  import sentencepiece as spm
  lines = [line for line in train_text.split("\n") if line.strip() and line != "%"]
  model = io.BytesIO()  # not a model_prefix: that path would be recorded in the file
  # Llama-style: BPE, byte fallback, digits split, <unk>=0 <s>=1 </s>=2, a dummy prefix
  # space, and no normalization beyond that so that text round-trips exactly.
  spm.SentencePieceTrainer.train(
      sentence_iterator=iter(lines), model_writer=model, model_type="bpe", vocab_size=4096,
      byte_fallback=True, split_digits=True, character_coverage=1.0,
      normalization_rule_name="identity", add_dummy_prefix=True, remove_extra_whitespaces=False,
      allow_whitespace_only_pieces=True, unk_id=0, bos_id=1, eos_id=2, pad_id=-1,
      num_threads=1, shuffle_input_sentence=False, input_sentence_size=0,
      max_sentence_length=16384, minloglevel=2)
  with open(path, "wb") as f:
    f.write(model.getvalue())


def stage_prepare(args) -> None:
  os.makedirs(args.work, exist_ok=True)
  fortunes, names = read_fortunes()
  train, valid, heldout = split_fortunes(fortunes)
  texts = {"train.txt": join_fortunes(train), "valid.txt": join_fortunes(valid),
           "heldout.txt": join_fortunes(heldout)}
  for name, text in texts.items():
    with open(os.path.join(args.work, name), "w", encoding="utf-8") as f:
      f.write(text)
  log(f"{len(fortunes)} fortunes from {len(names)} files: train {len(train)} "
      f"({len(texts['train.txt'])} chars), valid {len(valid)}, heldout {len(heldout)} "
      f"({len(texts['heldout.txt'])} chars)")
  tokenizer = os.path.join(args.work, "tokenizer.model")
  train_tokenizer(texts["train.txt"], tokenizer)
  import sentencepiece as spm
  sp = spm.SentencePieceProcessor(model_file=tokenizer)
  n_tokens = {}
  for name in ("train", "valid"):
    ids = sp.encode(texts[name + ".txt"])
    n_tokens[name] = len(ids)
    torch.save(torch.tensor(ids, dtype=torch.int16), os.path.join(args.work, name + ".pt"))
    log(f"{name}: {len(ids)} tokens ({len(texts[name + '.txt']) / len(ids):.2f} chars/token)")
  with open(os.path.join(args.work, "sources.json"), "w") as f:
    json.dump({"files": names, "excluded": sorted(EXCLUDED_FILES), "fortunes": len(fortunes),
               "train": len(train), "valid": len(valid), "heldout": len(heldout),
               "train_tokens": n_tokens["train"]}, f, indent=1)


# ----------------------------------------------------------------------------------------------
# train


def batch_at(tokens: torch.Tensor, step: int, batch: int, bos: int):
  """Deterministic per step (so a resumed run sees the same batches): random windows of
  SEQ_LEN tokens, input [BOS] + window[:-1], target window — the perplexity protocol."""
  g = torch.Generator().manual_seed(SEED * 1000 + step)
  starts = torch.randint(0, len(tokens) - SEQ_LEN, (batch,), generator=g)
  win = torch.stack([tokens[s:s + SEQ_LEN] for s in starts.tolist()]).long()  # [B, T]
  inp = torch.cat([torch.full((batch, 1), bos), win[:, :-1]], dim=1)  # [B, T]
  return inp, win


def lr_at(progress: float, peak: float, warmup: float) -> float:
  """Linear warmup over the first `warmup` fraction, then cosine down to 10 % of peak."""
  if progress < warmup:
    return peak * max(progress, 1e-3) / warmup
  t = min(1.0, (progress - warmup) / (1.0 - warmup))
  return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t)))


def init_model(seed: int) -> ref.LlamaForCausalLM:
  torch.manual_seed(seed)
  model = ref.LlamaForCausalLM(MODEL_CONFIG)
  with torch.no_grad():
    for name, p in model.named_parameters():
      if name.endswith("norm.weight"):
        p.fill_(1.0)
      elif name.endswith("o_proj.weight") or name.endswith("down_proj.weight"):
        # Residual-branch outputs scaled down with depth (GPT-2 style).
        p.normal_(0, 0.02 / math.sqrt(2 * MODEL_CONFIG.num_hidden_layers))
      else:
        p.normal_(0, 0.02)
  return model


def loss_of(model, inp, target) -> torch.Tensor:
  with torch.autocast("cpu", dtype=torch.bfloat16):
    logits = model(inp)
  return F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), target.reshape(-1))


def valid_loss(model, tokens: torch.Tensor, bos: int, windows: int = 16) -> float:
  """Mean loss over the first `windows` consecutive windows of the validation text."""
  model.eval()
  total, count = 0.0, 0
  with torch.no_grad():
    for w in range(min(windows, len(tokens) // SEQ_LEN)):
      win = tokens[w * SEQ_LEN:(w + 1) * SEQ_LEN].long()[None]
      inp = torch.cat([torch.tensor([[bos]]), win[:, :-1]], dim=1)
      total += loss_of(model, inp, win).item() * SEQ_LEN
      count += SEQ_LEN
  model.train()
  return total / count


def stage_train(args, bench_steps: int = 0) -> None:
  tokens = torch.load(os.path.join(args.work, "train.pt"))
  valid = torch.load(os.path.join(args.work, "valid.pt"))
  bos = MODEL_CONFIG.bos_token_id
  model = init_model(SEED)
  decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
  no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
  opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                           {"params": no_decay, "weight_decay": 0.0}],
                          lr=args.lr, betas=(0.9, 0.95), eps=1e-8)
  ckpt_path = os.path.join(args.work, "checkpoint.pt")
  step, history, elapsed_before = 0, [], 0.0
  if os.path.exists(ckpt_path) and not bench_steps:
    ckpt = torch.load(ckpt_path)
    model.load_state_dict(ckpt["model"])
    opt.load_state_dict(ckpt["opt"])
    step, history, elapsed_before = ckpt["step"], ckpt["history"], ckpt["elapsed"]
    log(f"resumed at step {step} ({elapsed_before / 60:.1f} min trained)")
  total = bench_steps or args.steps
  n_params = sum(p.numel() for p in model.parameters())
  log(f"params {n_params}, train tokens {len(tokens)}, steps {total}, batch {args.batch}x"
      f"{SEQ_LEN}")

  def save():
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step,
                "history": history, "elapsed": elapsed_before + time.time() - start},
               ckpt_path + ".tmp")
    os.replace(ckpt_path + ".tmp", ckpt_path)

  model.train()
  start = last_ckpt = time.time()
  window_loss, window_n = 0.0, 0

  def progress() -> float:
    # The schedule follows steps, or wall time when the shared machine is too slow to finish
    # the steps in --max-minutes; either way the learning rate anneals before the end.
    minutes = (elapsed_before + time.time() - start) / 60
    return max(step / total, 0.0 if bench_steps else minutes / args.max_minutes)

  while progress() < 1.0:
    lr = lr_at(progress(), args.lr, args.warmup)
    for group in opt.param_groups:
      group["lr"] = lr
    inp, target = batch_at(tokens, step, args.batch, bos)
    loss = loss_of(model, inp, target)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    step += 1
    window_loss += loss.item()
    window_n += 1
    now = time.time()
    if bench_steps:
      log(f"bench step {step}: loss {loss.item():.3f}, "
          f"{step * args.batch * SEQ_LEN / (now - start):.0f} tokens/s")
      continue
    done = progress() >= 1.0
    if step % args.log_every == 0 or done:
      vl = valid_loss(model, valid, bos)
      minutes = (elapsed_before + now - start) / 60
      history.append({"step": step, "minutes": round(minutes, 2), "lr": round(lr, 6),
                      "train_loss": round(window_loss / window_n, 4),
                      "valid_loss": round(vl, 4)})
      log(f"step {step}/{total} lr {lr:.2e} train {window_loss / window_n:.4f} valid "
          f"{vl:.4f} ({minutes:.1f} min, progress {progress():.3f})")
      window_loss, window_n = 0.0, 0
    if now - last_ckpt > 60 * args.ckpt_minutes or done:
      save()
      last_ckpt = now
  if not bench_steps:
    save()
    log(f"training done at step {step}")


# ----------------------------------------------------------------------------------------------
# export

CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}{{ message['role'] }}: "
    "{{ message['content'] }}\n{% endfor %}{% if add_generation_prompt %}assistant:"
    "{% endif %}")


def stage_export(args) -> None:
  import shutil
  out = args.out
  os.makedirs(out, exist_ok=True)
  ckpt = torch.load(os.path.join(args.work, "checkpoint.pt"))
  model = ref.LlamaForCausalLM(MODEL_CONFIG)
  model.load_state_dict(ckpt["model"])
  ref.write_hf_folder(out, model, torch.float16)
  shutil.copy(os.path.join(args.work, "tokenizer.model"), os.path.join(out, "tokenizer.model"))
  shutil.copy(os.path.join(args.work, "heldout.txt"), os.path.join(out, "heldout.txt"))
  tok_cfg = {"tokenizer_class": "LlamaTokenizer", "bos_token": "<s>", "eos_token": "</s>",
             "unk_token": "<unk>", "pad_token": None, "add_bos_token": True,
             "add_eos_token": False, "legacy": True, "model_max_length": SEQ_LEN,
             "clean_up_tokenization_spaces": False, "chat_template": CHAT_TEMPLATE}
  with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
    json.dump(tok_cfg, f, indent=2)
    f.write("\n")
  with open(os.path.join(out, "generation_config.json"), "w") as f:
    json.dump({"bos_token_id": 1, "eos_token_id": 2, "do_sample": False}, f, indent=2)
    f.write("\n")

  # Everything below is measured on the exported F16 weights, computed in float32.
  exported = reference_ppl.use_onednn_linears(ref.load_hf_folder(out, torch.float32))
  heldout = os.path.join(out, "heldout.txt")
  ppl = reference_ppl.perplexity(out, heldout, window=SEQ_LEN)
  import sentencepiece as spm
  sp = spm.SentencePieceProcessor(model_file=os.path.join(out, "tokenizer.model"))
  samples = []
  for prompt in args.prompts:
    ids = [MODEL_CONFIG.bos_token_id] + sp.encode(prompt)
    new, margins = ref.greedy_generate(exported, ids, args.sample_tokens)
    samples.append({"prompt": prompt, "prompt_ids": ids, "tokens": new,
                    "min_margin": round(min(margins), 4), "text": sp.decode(ids[1:] + new)})
  with open(os.path.join(args.work, "sources.json")) as f:
    sources = json.load(f)
  stats = {"parameters": sum(p.numel() for p in model.parameters()), "ppl": ppl,
           "max_steps": args.steps, "max_minutes": args.max_minutes,
           "warmup": args.warmup,
           "history": ckpt["history"], "steps": ckpt["step"],
           "train_minutes": round(ckpt["elapsed"] / 60, 1), "samples": samples,
           "sources": sources, "batch": args.batch, "lr": args.lr}
  with open(os.path.join(args.work, "export_stats.json"), "w") as f:
    json.dump(stats, f, indent=1)
  with open(os.path.join(out, "README.md"), "w") as f:
    f.write(readme_text(stats))
  with open(os.path.join(out, "LICENSE"), "w") as f:
    f.write(LICENSE_TEXT)
  log(f"exported to {out}: held-out ppl {ppl['ppl']:.3f} over {ppl['tokens']} tokens")
  for s in samples:
    log(f"sample: {s['text']!r}")


LICENSE_TEXT = """\
The weights and tokenizer in this folder were trained from scratch by
tools/train_demo_model.py on the quotation files of Debian's `fortunes` and `fortunes-min`
packages (source package fortune-mod, version 1:1.99.1-7.3, Debian 12 `main`);
heldout.txt is an excerpt of those files.

Debian's copyright file for these packages (/usr/share/doc/fortunes/copyright, the same for
fortunes-min and fortune-mod) gives the BSD license below for fortune-mod, whose source
tarball holds these data files; its only other note concerns an atheism cookie file that
is not among the files used here. The quotations are attributed to their many authors
inside the data; Debian distributes the collection in `main`, its archive of free software.
The weights and tokenizer are offered under the same BSD terms.

----------------------------------------------------------------------------------------------
Copyright (c) 1991 The Regents of the University of California.
All rights reserved.

Redistribution and use in source and binary forms, with or without
modification, are permitted provided that the following conditions
are met:

1. Redistributions of source code must retain the above copyright
   notice, this list of conditions and the following disclaimer.
2. Redistributions in binary form must reproduce the above copyright
   notice, this list of conditions and the following disclaimer in the
   documentation and/or other materials provided with the distribution.
3. [ Deleted.  see :-
   ftp://ftp.cs.berkeley.edu/pub/4bsd/README.Impt.License.Change
   ]
4. Neither the name of the University nor the names of its contributors
   may be used to endorse or promote products derived from this software
   without specific prior written permission.

THIS SOFTWARE IS PROVIDED BY THE REGENTS AND CONTRIBUTORS ``AS IS'' AND
ANY EXPRESS OR IMPLIED WARRANTIES, INCLUDING, BUT NOT LIMITED TO, THE
IMPLIED WARRANTIES OF MERCHANTABILITY AND FITNESS FOR A PARTICULAR PURPOSE
ARE DISCLAIMED.  IN NO EVENT SHALL THE REGENTS OR CONTRIBUTORS BE LIABLE
FOR ANY DIRECT, INDIRECT, INCIDENTAL, SPECIAL, EXEMPLARY, OR CONSEQUENTIAL
DAMAGES (INCLUDING, BUT NOT LIMITED TO, PROCUREMENT OF SUBSTITUTE GOODS
OR SERVICES; LOSS OF USE, DATA, OR PROFITS; OR BUSINESS INTERRUPTION)
HOWEVER CAUSED AND ON ANY THEORY OF LIABILITY, WHETHER IN CONTRACT, STRICT
LIABILITY, OR TORT (INCLUDING NEGLIGENCE OR OTHERWISE) ARISING IN ANY WAY
OUT OF THE USE OF THIS SOFTWARE, EVEN IF ADVISED OF THE POSSIBILITY OF
SUCH DAMAGE.
"""


def readme_text(s: dict) -> str:
  c = MODEL_CONFIG
  hist = s["history"]
  pick = sorted({0, len(hist) // 8, len(hist) // 4, len(hist) // 2, 3 * len(hist) // 4,
                 len(hist) - 1})
  curve = "\n".join(f"| {hist[i]['step']} | {hist[i]['minutes']} | {hist[i]['train_loss']:.3f} "
                    f"| {hist[i]['valid_loss']:.3f} |" for i in pick if 0 <= i < len(hist))
  sample_md = "\n\n".join(
      f"Prompt `{x['prompt']}` (ids with BOS: {x['prompt_ids']}), {len(x['tokens'])} new "
      f"tokens (smallest top-1/top-2 margin {x['min_margin']}):\n\n```\n{x['text']}\n```\n\n"
      f"New ids: {x['tokens']}" for x in s["samples"])
  p = s["ppl"]
  src = s["sources"]
  tokens = s["steps"] * s["batch"] * SEQ_LEN
  return f"""# demo: a {s['parameters'] / 1e6:.2f} M-parameter Llama trained on fortunes

A small model for exercising Kite end to end (`kite run`, `kite chat`, `kite eval ppl`,
quantization) with real, non-random weights. It writes fortune-cookie-like English; it is not
an assistant and knows nothing else.

## Files
- `config.json`: `LlamaForCausalLM`: hidden {c.hidden_size}, {c.num_hidden_layers} layers, \
{c.num_attention_heads} heads of {c.head_dim}, {c.num_key_value_heads} KV heads (GQA), SwiGLU \
{c.intermediate_size}, RMSNorm eps {c.rms_norm_eps:g}, RoPE theta {c.rope_theta:g} (rotate-half, as HF), \
untied `lm_head`, context {c.max_position_embeddings} (the training length).
- `model.safetensors`: F16 weights, {s['parameters']:,} parameters.
- `tokenizer.model`: SentencePiece BPE, 4096 pieces, byte fallback (`<0x00>`..`<0xFF>` = ids
  3..258), digits split, identity normalizer, dummy prefix on, whitespace kept; `<unk>`=0,
  `<s>`=1, `</s>`=2. Newlines and tabs are byte tokens, as in Llama 2.
- `tokenizer_config.json`, `generation_config.json`: bos/eos, and a plain chat template
  (`role: content` lines; the model was not trained on chats).
- `heldout.txt`: {src['heldout']} fortunes ({p['chars']:,} characters) never seen in training, \
separated by `%` lines as in the fortune files.

## How it was made
```
apt-get install -y fortunes fortunes-min
nice -n 19 /usr/bin/python3 tools/train_demo_model.py all   # prepare, train, export
```
1. Corpus: every file of Debian's `fortunes` and `fortunes-min` packages in
   `/usr/share/games/fortunes` except {', '.join(src['excluded'])}: {src['fortunes']:,} distinct \
quotations after resolving overstrike. A fixed shuffle puts {src['heldout']} in `heldout.txt`, \
{src['valid']} in a validation set (loss curve only) and {src['train']:,} in training. The text \
is the fortunes joined by `\\n%\\n`: {src['train_tokens']:,} training tokens.
2. Tokenizer: trained by the script on the training lines (settings above).
3. Training: each step takes {s['batch']} random windows of {SEQ_LEN} tokens from the training \
text (tokenized once), input `[BOS] + window[:-1]`, target `window`: the layout of the \
perplexity below. AdamW (betas 0.9/0.95, weight decay 0.1 on matrices), peak lr {s['lr']:g}, \
linear warmup over the first {s['warmup']:.0%} of the run, then cosine to 10 %, gradient clip \
1.0. The run is {s['max_steps']} steps or {s['max_minutes']:g} minutes of training, whichever \
comes first, and the schedule follows the same measure. Matmuls in bfloat16 (CPU autocast, \
oneDNN), master weights float32, one thread at `nice 19` on a shared 2-core machine. This run: \
{s['steps']} steps, {tokens / 1e6:.2f} M tokens ({tokens / src['train_tokens']:.1f} epochs), \
{s['train_minutes']} minutes. Batches are a function of the step number, so a resumed run sees \
the same data; bit-identical weights need the same CPU and PyTorch build.
4. Export: weights rounded to F16; everything below is computed from the F16 file.

## Loss curve
Mean training loss over the 50 steps before each row; validation loss on 16 windows of the
validation set.

| step | minutes | train loss | valid loss |
|---|---|---|---|
{curve}

## Held-out perplexity
`/usr/bin/python3 tools/reference_ppl.py models/demo models/demo/heldout.txt` (float32):
**ppl {p['ppl']:.4f}**, NLL {p['nll']:.6f} nats/token over {p['tokens']:,} tokens in \
{p['windows']} windows. The same command with `--float64` (slow) agreed to all printed digits
when this was written, so a float32 implementation should match to about 1e-5 relative.

The protocol `kite eval ppl` must follow: tokenize the whole file once (SentencePiece encode
of the raw text: dummy-prefix space at the start, newlines and tabs as byte tokens), without
BOS; cut the ids into consecutive windows of {p['window']} (the last may be shorter); score each
window on its own with input `[BOS] + window[:-1]` against targets `window`, positions from 0;
ppl = exp(total NLL / total tokens).

## Sample
Greedy, float32 compute on the F16 weights, recomputing the prefix each step.

{sample_md}

## License
See `LICENSE`: Debian's `fortunes` data is distributed under the BSD license in
`/usr/share/doc/fortunes/copyright`; the weights are offered under the same terms.
"""


def main() -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("stage", choices=["prepare", "bench", "train", "export", "all"])
  parser.add_argument("--work", default=os.path.join(ROOT, "build-pytorch", "demo"))
  parser.add_argument("--out", default=os.path.join(ROOT, "models", "demo"))
  parser.add_argument("--steps", type=int, default=1000)
  parser.add_argument("--batch", type=int, default=8)
  parser.add_argument("--lr", type=float, default=2e-3)
  parser.add_argument("--warmup", type=float, default=0.05,
                      help="fraction of the run")
  parser.add_argument("--weight-decay", type=float, default=0.1)
  parser.add_argument("--log-every", type=int, default=50)
  parser.add_argument("--ckpt-minutes", type=float, default=4.0)
  parser.add_argument("--max-minutes", type=float, default=60.0)
  parser.add_argument("--sample-tokens", type=int, default=48)
  parser.add_argument("--prompts", nargs="*", default=["The secret of life is",
                                                       "A computer is"])
  args = parser.parse_args()
  torch.set_num_threads(1)
  if args.stage in ("prepare", "all"):
    stage_prepare(args)
  if args.stage == "bench":
    stage_train(args, bench_steps=5)
  if args.stage in ("train", "all"):
    stage_train(args)
  if args.stage in ("export", "all"):
    stage_export(args)
  return 0


if __name__ == "__main__":
  sys.exit(main())
