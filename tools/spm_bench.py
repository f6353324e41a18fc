#!/usr/bin/python3
"""The reference for bench/tokenizer_bench.cpp: SentencePiece (Debian's python3-sentencepiece)
encoding the same texts with llama2's tokenizer.model, single thread, MB per second of this
thread's CPU time, median of 5 runs after one warm-up.

  /usr/bin/python3 tools/spm_bench.py [english.txt [chinese.txt]]

"document" is one encode call on the whole text; "lines" one call per line (through a Python
loop, which costs well under 1% of the time here).
"""
import os
import statistics
import sys
import time

import sentencepiece as spm

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MIN_BYTES = 1 << 20


def repeated(paths):
    base = "".join(open(p, encoding="utf-8").read() for p in paths if os.path.exists(p))
    if not base:
        return ""
    text = base
    while len(text.encode("utf-8")) < MIN_BYTES:
        text += base
    return text


def median_rate(fn, nbytes):
    fn()  # warm-up
    rates = []
    for _ in range(5):
        start = time.thread_time()
        fn()
        rates.append(nbytes / 1e6 / (time.thread_time() - start))
    return statistics.median(rates)


def main():
    args = sys.argv[1:]
    english = repeated([args[0] if args else "/usr/share/common-licenses/GPL-3"])
    chinese = repeated([args[1]] if len(args) > 1 else [
        "/usr/share/vim/vim90/tutor/tutor.zh_cn.utf-8", "/usr/share/gnupg/help.zh_CN.txt"])
    sp = spm.SentencePieceProcessor(
        model_file=os.path.join(ROOT, "testdata/tokenizers/llama2/tokenizer.model"))
    encode = sp.EncodeAsIds
    print(f"{'model':8} {'text':8} {'MB':>6} {'tokens':>10} {'document MB/s':>16} "
          f"{'lines MB/s':>13}")
    for label, text in (("english", english), ("chinese", chinese)):
        if not text:
            print(f"{'spm':8} {label:8} (text not found)")
            continue
        nbytes = len(text.encode("utf-8"))
        lines = text.splitlines(keepends=True)
        tokens = len(encode(text))
        document = median_rate(lambda: encode(text), nbytes)
        per_line = median_rate(lambda: [encode(line) for line in lines], nbytes)
        print(f"{'spm':8} {label:8} {nbytes / 1e6:6.2f} {tokens:10d} {document:16.1f} "
              f"{per_line:13.1f}")


if __name__ == "__main__":
    main()
