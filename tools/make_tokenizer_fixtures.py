#!/usr/bin/python3
"""Makes SentencePiece Unigram tokenizers and what the references make of a set of texts; the
tests run it at test time (nothing it writes is committed):

    /usr/bin/python3 tools/make_tokenizer_fixtures.py OUT_DIR

Two models are trained with Debian's SentencePiece (python3-sentencepiece, the library behind
spm_train/spm_encode) on the license texts every Debian system ships plus lines of other
scripts, both with SentencePiece's default nmt_nfkc normalization rules (a precompiled charsmap):
  t5:    T5's layout (pad 0, </s> 1, <unk> 2, no <s>), no byte fallback, control symbols [CLS]
         [SEP] [MASK] for the ALBERT-style file;
  bytes: <unk> 0, <s> 1, </s> 2, byte fallback, nmt_nfkc_cf (case folding), a user-defined <sep>.
Then each model's tokenizer.json is written the way Hugging Face's converters lay out T5,
ALBERT, XLM-RoBERTa and a byte-fallback unigram model (normalizer, pre-tokenizer, post-processor,
decoder), for the Hugging Face oracle (tools/tokenizers/make_goldens.mjs) to read; and, from the
t5 model's pieces, a WordPiece vocabulary in BERT's uncased layout and a cased one with other
pre-tokenizers, and a WordLevel one whose pre-tokenizer uses every Split behaviour.

Writes under OUT_DIR:
  corpus.jsonl                {"id", "text"}: testdata/tokenizers/corpus.jsonl plus awkward lines
  t5/tokenizer.model, bytes/tokenizer.model
  t5/, albert/, xlmr/, bytes/, bert/, bert-cased/, wordlevel/tokenizer.json
  t5/spm.jsonl, bytes/spm.jsonl   {"id", "ids", "decoded"}: SentencePiece's encode (no BOS/EOS)
                                  and decode of each corpus line
"""
import base64
import json
import os
import struct
import sys

import sentencepiece as spm

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
from make_spm_fixture import AWKWARD, EXTRA_LINES, license_texts  # noqa: E402

MORE_LINES = [
    "Ｆｕｌｌｗｉｄｔｈ ＡＢＣ ｶﾀｶﾅ ①②③ ﬁ ﬂ ㎏ ™",
    "Ångström ÅNGSTRÖM straße STRASSE İstanbul ΣΊΣΥΦΟΣ",
    "``quoted'' and ‘single’ “double”",
    "tab\there  and   spaces\u00a0\u2003wide",
    "e\u0301\u0301\u0301 a\u0308 n\u0303 Z\u030c",
    "ไทย ภาษา 한국어 日本語 中文 עברית العربية",
]


def varint(data, pos):
    value, shift = 0, 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, pos


def fields(data):
    """(number, wire type, value) of each field of a protobuf message."""
    pos = 0
    while pos < len(data):
        key, pos = varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = varint(data, pos)
        elif wire == 1:
            value, pos = data[pos:pos + 8], pos + 8
        elif wire == 2:
            length, pos = varint(data, pos)
            value, pos = data[pos:pos + length], pos + length
        elif wire == 5:
            value, pos = data[pos:pos + 4], pos + 4
        else:
            raise ValueError("unexpected wire type %d" % wire)
        yield number, wire, value


def read_model(path):
    """Pieces [(text, score, type)] and the normalizer's precompiled charsmap of a ModelProto."""
    with open(path, "rb") as f:
        data = f.read()
    pieces, charsmap = [], b""
    for number, _, value in fields(data):
        if number == 1:
            text, score, kind = "", 0.0, 1
            for n, _, v in fields(value):
                if n == 1:
                    text = v.decode("utf-8")
                elif n == 2:
                    score = struct.unpack("<f", v)[0]
                elif n == 3:
                    kind = v
            pieces.append((text, score, kind))
        elif number == 3:
            for n, _, v in fields(value):
                if n == 2:
                    charsmap = v
    return pieces, charsmap


NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
SPACE = "\u2581"


def added_tokens(pieces):
    """Control and unknown pieces as special added tokens, user-defined ones as plain ones, all
    matched in the text as written (normalized=false), as Hugging Face's converter writes them."""
    out = []
    for i, (text, _, kind) in enumerate(pieces):
        if kind in (CONTROL, UNKNOWN, USER_DEFINED):
            special = kind != USER_DEFINED
            out.append({"id": i, "content": text, "single_word": False, "lstrip": False,
                        "rstrip": False, "normalized": False, "special": special})
    return out


def template(before, after, pieces):
    ids = {text: i for i, (text, _, _) in enumerate(pieces)}
    single = [{"SpecialToken": {"id": t, "type_id": 0}} for t in before]
    single.append({"Sequence": {"id": "A", "type_id": 0}})
    single += [{"SpecialToken": {"id": t, "type_id": 0}} for t in after]
    return {"type": "TemplateProcessing", "single": single, "pair": single,
            "special_tokens": {t: {"id": t, "ids": [ids[t]], "tokens": [t]}
                               for t in before + after}}


def tokenizer_json(pieces, charsmap, style):
    precompiled = {"type": "Precompiled",
                   "precompiled_charsmap": base64.b64encode(charsmap).decode("ascii")}
    collapse = {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}
    metaspace = {"type": "Metaspace", "replacement": SPACE, "prepend_scheme": "always",
                 "split": True}
    whitespace_then_metaspace = {"type": "Sequence",
                                 "pretokenizers": [{"type": "WhitespaceSplit"}, metaspace]}
    unk_id = next(i for i, p in enumerate(pieces) if p[2] == UNKNOWN)
    model = {"type": "Unigram", "unk_id": unk_id,
             "vocab": [[text, score] for text, score, _ in pieces],
             "byte_fallback": style == "bytes"}
    if style == "t5":
        normalizer = {"type": "Sequence", "normalizers": [precompiled, collapse]}
        pre, post, decoder = whitespace_then_metaspace, template([], ["</s>"], pieces), metaspace
    elif style == "albert":
        normalizer = {"type": "Sequence", "normalizers": [
            {"type": "Replace", "pattern": {"String": "``"}, "content": "\""},
            {"type": "Replace", "pattern": {"String": "''"}, "content": "\""},
            {"type": "NFKD"}, {"type": "StripAccents"}, {"type": "Lowercase"},
            precompiled, collapse]}
        pre, decoder = whitespace_then_metaspace, metaspace
        post = template(["[CLS]"], ["[SEP]"], pieces)
    elif style == "xlmr":
        normalizer = {"type": "Sequence", "normalizers": [
            precompiled, {"type": "Strip", "strip_left": False, "strip_right": True},
            {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": SPACE}]}
        pre, decoder = metaspace, metaspace
        post = template(["[CLS]"], ["</s>"], pieces)
    else:  # bytes
        normalizer = {"type": "Sequence", "normalizers": [
            precompiled, {"type": "Prepend", "prepend": SPACE},
            {"type": "Replace", "pattern": {"String": " "}, "content": SPACE}]}
        pre = None
        post = template(["<s>"], [], pieces)
        decoder = {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": SPACE}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}
    return {"version": "1.0", "truncation": None, "padding": None,
            "added_tokens": added_tokens(pieces), "normalizer": normalizer,
            "pre_tokenizer": pre, "post_processor": post, "decoder": decoder, "model": model}


def special_tokens(names):
    return [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
             "normalized": False, "special": True} for i, t in enumerate(names)]


BERT_SPECIALS = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"]


def word_vocab(pieces, continuation):
    """Words from the unigram pieces: "▁word" -> "word"; with `continuation`, the other pieces
    as "##piece" (a WordPiece vocabulary)."""
    vocab = {t: i for i, t in enumerate(BERT_SPECIALS)}
    for text, _, kind in pieces:
        if kind != NORMAL:
            continue
        if text.startswith(SPACE):
            word = text[len(SPACE):]
        elif continuation:
            word = "##" + text
        else:
            continue
        if word and word not in vocab:
            vocab[word] = len(vocab)
    return vocab


def word_tokenizer_json(pieces, style):
    post = {"type": "BertProcessing", "sep": ["[SEP]", 2], "cls": ["[CLS]", 1]}
    if style == "bert":
        normalizer = {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                      "strip_accents": None, "lowercase": True}
        pre = {"type": "BertPreTokenizer"}
        decoder = {"type": "WordPiece", "prefix": "##", "cleanup": True}
    elif style == "bert-cased":
        normalizer = {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": False,
                      "strip_accents": False, "lowercase": False}
        pre = {"type": "Sequence", "pretokenizers": [
            {"type": "WhitespaceSplit"}, {"type": "Punctuation", "behavior": "Contiguous"},
            {"type": "Digits", "individual_digits": True}]}
        decoder = {"type": "WordPiece", "prefix": "##", "cleanup": False}
    else:  # wordlevel
        normalizer = {"type": "Sequence", "normalizers": [
            {"type": "NFKC"}, {"type": "Lowercase"},
            {"type": "Strip", "strip_left": True, "strip_right": True}]}
        pre = {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"String": "-"}, "behavior": "MergedWithPrevious",
             "invert": False},
            {"type": "Split", "pattern": {"String": "/"}, "behavior": "MergedWithNext",
             "invert": False},
            {"type": "CharDelimiterSplit", "delimiter": " "},
            {"type": "Split", "pattern": {"Regex": "[.,!?]"}, "behavior": "Contiguous",
             "invert": False},
            {"type": "Split", "pattern": {"Regex": "\\p{L}+|\\p{N}+"}, "behavior": "Removed",
             "invert": True},
            {"type": "Whitespace"}]}
        decoder = None
    model = ({"type": "WordLevel", "vocab": word_vocab(pieces, False), "unk_token": "[UNK]"}
             if style == "wordlevel" else
             {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
              "max_input_chars_per_word": 100, "vocab": word_vocab(pieces, True)})
    return {"version": "1.0", "truncation": None, "padding": None,
            "added_tokens": special_tokens(BERT_SPECIALS), "normalizer": normalizer,
            "pre_tokenizer": pre, "post_processor": post, "decoder": decoder, "model": model}


def train(corpus, prefix, **options):
    spm.SentencePieceTrainer.train(
        input=corpus, model_prefix=prefix, model_type="unigram", vocab_size=1200,
        character_coverage=0.9995, num_threads=1, shuffle_input_sentence=False,
        max_sentence_length=100000, minloglevel=2, **options)
    return prefix + ".model"


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_tokenizer_fixtures.py OUT_DIR")
    out = sys.argv[1]
    texts = license_texts()
    os.makedirs(out, exist_ok=True)
    training = os.path.join(out, "training.txt")
    with open(training, "w", encoding="utf-8") as f:
        for text in texts:
            f.write(text + "\n")
        for _ in range(3):
            f.write("\n".join(EXTRA_LINES + MORE_LINES) + "\n")

    corpus = []
    with open(os.path.join(ROOT, "testdata", "tokenizers", "corpus.jsonl"), encoding="utf-8") as f:
        corpus = [json.loads(line)["text"] for line in f if line.strip()]
    corpus += AWKWARD + MORE_LINES
    with open(os.path.join(out, "corpus.jsonl"), "w", encoding="utf-8") as f:
        for i, text in enumerate(corpus):
            f.write(json.dumps({"id": i, "text": text}, ensure_ascii=False) + "\n")

    models = {
        "t5": train(training, os.path.join(out, "t5-model"), pad_id=0, eos_id=1, unk_id=2,
                    bos_id=-1, control_symbols=["[CLS]", "[SEP]", "[MASK]"]),
        "bytes": train(training, os.path.join(out, "bytes-model"), unk_id=0, bos_id=1, eos_id=2,
                       byte_fallback=True, normalization_rule_name="nmt_nfkc_cf",
                       user_defined_symbols=["<sep>"]),
    }
    styles = {"t5": "t5", "albert": "t5", "xlmr": "t5", "bytes": "bytes", "bert": "t5",
              "bert-cased": "t5", "wordlevel": "t5"}
    for style, source in styles.items():
        pieces, charsmap = read_model(models[source])
        folder = os.path.join(out, style)
        os.makedirs(folder, exist_ok=True)
        made = (tokenizer_json(pieces, charsmap, style) if source == style or style in
                ("albert", "xlmr") else word_tokenizer_json(pieces, style))
        with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump(made, f, ensure_ascii=False)
    for name, model in models.items():
        with open(model, "rb") as f:
            data = f.read()
        with open(os.path.join(out, name, "tokenizer.model"), "wb") as f:
            f.write(data)
        sp = spm.SentencePieceProcessor(model_file=model)
        with open(os.path.join(out, name, "spm.jsonl"), "w", encoding="utf-8") as f:
            for i, text in enumerate(corpus):
                ids = sp.encode(text)
                f.write(json.dumps({"id": i, "ids": ids, "decoded": sp.decode(ids)},
                                   ensure_ascii=False) + "\n")
    print("wrote %s: %d texts, sentencepiece %s" % (out, len(corpus), spm.__version__))


if __name__ == "__main__":
    main()
