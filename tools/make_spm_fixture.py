#!/usr/bin/python3
"""Builds testdata/spm-oracle: a small SentencePiece BPE model and what SentencePiece itself
(Debian's python3-sentencepiece, the oracle) makes of a set of awkward strings.

Run with Debian's Python:  /usr/bin/python3 tools/make_spm_fixture.py

The model is trained on the license texts every Debian system ships (/usr/share/common-licenses)
plus a few lines of CJK, emoji and other scripts, with byte fallback, so characters it has never
seen become <0xXX> byte pieces. It uses the settings Kite's loader supports (BPE, identity
normalization) and the ones Llama's model does not exercise: remove_extra_whitespaces, a
user-defined symbol (matched whole in text) and a control symbol (never matched in text).

Writes:
  testdata/spm-oracle/tokenizer.model
  testdata/spm-oracle/cases.jsonl   one JSON object per line:
    {"text": ..., "ids": [...], "pieces": [...], "decoded": ...}   encode (no BOS/EOS), decode
    {"decode_ids": [...], "decoded": ...}                          decode only
"""
import glob
import json
import os
import sys
import tempfile

import sentencepiece as spm

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "testdata", "spm-oracle")

EXTRA_LINES = [
    "高通NPU大模型推理在手机上运行。",
    "我想在apple工作1314151天，今天天气很好。",
    "東京は日本の首都です。ひらがなとカタカナ。",
    "한국어 문장도 조금 넣습니다.",
    "Привет, мир! Это тест.",
    "Γειά σου Κόσμε.",
    "مرحبا بالعالم",
    "नमस्ते दुनिया",
    "emoji 😀😃😄 👍🏽 👨‍👩‍👧‍👦 🇯🇵 1️⃣",
    "café naïve résumé Zürich",
    "    indented code(); // comment\n\tTabbed line",
]

AWKWARD = [
    "",
    " ",
    "   ",
    "Hello world",
    " Hello world",
    "Hello  world",
    "  leading and trailing  ",
    "tab\tseparated\tvalues",
    "line one\nline two\r\nline three",
    "\n\n\n",
    "The GNU General Public License is a free, copyleft license.",
    "Copyright (C) 2007 Free Software Foundation, Inc. <https://fsf.org/>",
    "高通NPU大模型推理",
    "東京タワー",
    "😀",
    "👨‍👩‍👧‍👦",
    "🇯🇵🇺🇸",
    "ǅ Ǆ ǆ",  # digraphs the model has not seen: byte fallback
    "\u0000nul\u0001ctrl\u007f",
    "\u00a0nbsp\u3000ideographic space",
    "▁literal marker",
    "<0x41> looks like a byte piece",
    "<sep>",
    "a<sep>b",
    " <sep> ",
    "<sep><sep>",
    "<ctrl> is a control symbol",
    "<s>not bos</s>",
    "e\u0301 vs \u00e9",
    "ｆｕｌｌｗｉｄｔｈ",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
    "\U0010ffff\ue000",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "1234567890 3.14159 1,000,000",
    "don't won't it's we're",
    "x" * 5 + " " * 7 + "y",
]


def license_texts():
    """The license texts every Debian system ships: the fixtures' training text."""
    texts = []
    for path in sorted(glob.glob("/usr/share/common-licenses/*")):
        if os.path.isfile(path):
            with open(path, encoding="utf-8", errors="replace") as f:
                texts.append(f.read())
    if not texts:
        sys.exit("no license texts in /usr/share/common-licenses")
    return texts


def main():
    texts = license_texts()
    os.makedirs(OUT, exist_ok=True)
    # A fixed folder: the model records its training input's path.
    tmp = os.path.join(tempfile.gettempdir(), "kite-spm-oracle")
    os.makedirs(tmp, exist_ok=True)
    corpus = os.path.join(tmp, "corpus.txt")
    with open(corpus, "w", encoding="utf-8") as f:
        for text in texts:
            f.write(text)
            f.write("\n")
        for _ in range(3):
            f.write("\n".join(EXTRA_LINES) + "\n")
    prefix = os.path.join(tmp, "oracle")
    spm.SentencePieceTrainer.train(
        input=corpus,
        model_prefix=prefix,
        model_type="bpe",
        vocab_size=1000,
        byte_fallback=True,
        character_coverage=0.9995,
        normalization_rule_name="identity",
        add_dummy_prefix=True,
        remove_extra_whitespaces=True,
        user_defined_symbols=["<sep>"],
        control_symbols=["<ctrl>"],
        num_threads=1,
        shuffle_input_sentence=False,
        max_sentence_length=100000,
        minloglevel=2,
    )
    with open(prefix + ".model", "rb") as f:
        model = f.read()
    model_path = os.path.join(OUT, "tokenizer.model")
    with open(model_path, "wb") as f:
        f.write(model)

    sp = spm.SentencePieceProcessor(model_file=model_path)
    ids_of = sp.piece_to_id
    cases = []
    for text in AWKWARD:
        ids = sp.encode(text)
        cases.append({
            "text": text,
            "ids": ids,
            "pieces": [sp.id_to_piece(i) for i in ids],
            "decoded": sp.decode(ids),
        })
    # Decoding sequences encoding never makes: control and unknown pieces, byte pieces that do
    # not form a character, a leading space piece.
    byte = lambda b: ids_of("<0x%02X>" % b)
    hello = sp.encode("Hello")  # starts with a piece that starts with U+2581
    decode_only = [
        [sp.bos_id()] + hello + [sp.eos_id()],
        [sp.unk_id()] + hello,
        [byte(0xF0), byte(0x9F), byte(0x98), byte(0x80)],
        [byte(0xF0), byte(0x9F)] + hello,
        [byte(0xE4)] + hello + [byte(0xBD), byte(0xA0)],
        [byte(0x80), byte(0xC0), byte(0xAF), byte(0xFF)],
        [ids_of("▁")] + hello,
        [ids_of("▁"), ids_of("▁")] + hello,
        [ids_of("<ctrl>")] + hello + [ids_of("<sep>")],
        [byte(0x20)] + hello,
        hello + hello,
    ]
    for ids in decode_only:
        cases.append({"decode_ids": ids, "decoded": sp.decode(ids)})
    with open(os.path.join(OUT, "cases.jsonl"), "w", encoding="utf-8") as f:
        for case in cases:
            f.write(json.dumps(case, ensure_ascii=False) + "\n")
    print(f"wrote {model_path} ({len(model)} bytes) and {len(cases)} cases "
          f"(sentencepiece {spm.__version__})")


if __name__ == "__main__":
    main()
