// Bad tokenizer files become errors that name the file, the field and what was expected.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "format/gguf.h"
#include "tokenizer/loaders.h"

namespace kite::tok {
namespace {

Error HfError(const std::string& json) {
  auto loaded = LoadHfTokenizerJson(json, nullptr, "toy.json");
  EXPECT_FALSE(loaded.has_value()) << json;
  return loaded ? Error{ErrorCode::kInternal, "loaded"} : loaded.error();
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(HfJsonErrors, MalformedJsonNamesTheLine) {
  const Error error = HfError("{\"model\": {\n  \"vocab\": {,}}}");
  EXPECT_EQ(error.code, ErrorCode::kInvalidInput);
  EXPECT_TRUE(Contains(error.message, "toy.json: malformed JSON")) << error.message;
  EXPECT_TRUE(Contains(error.message, "line 2")) << error.message;
}

TEST(HfJsonErrors, MissingAndMistypedFieldsAreNamed) {
  EXPECT_EQ(HfError(R"({"model": {"type": "BPE", "merges": []}})").message,
            "toy.json: field 'model.vocab': missing (expected an object)");
  EXPECT_EQ(HfError(R"({"model": {"type": "BPE", "vocab": {"a": "zero"}, "merges": []}})").message,
            "toy.json: field 'model.vocab[\"a\"]': expected a token id, got string");
  EXPECT_EQ(HfError(R"({"added_tokens": [{"id": "x", "content": "<s>"}],
                        "model": {"vocab": {}, "merges": []}})")
                .message,
            "toy.json: field 'added_tokens[0].id': expected an integer, got string");
  EXPECT_EQ(HfError(R"({"model": {"vocab": {"a": 0}, "merges": [7]}})").message,
            "toy.json: field 'model.merges[0]': expected \"left right\" or [\"left\", \"right\"], "
            "got integer");
  EXPECT_EQ(HfError(R"({"model": {"vocab": {"a": 0, "b": 0}, "merges": []}})").message,
            "toy.json: field 'model.vocab': token id 0 is given to both \"a\" and \"b\"");
}

TEST(HfJsonErrors, MergeWithAnUnknownTokenIsNamed) {
  EXPECT_EQ(HfError(R"({"model": {"vocab": {"a": 0, "b": 1, "ab": 2},
                                  "merges": ["a b", "a c"]}})")
                .message,
            "toy.json: model.merges[1] 'a c': token 'c' is not in the vocabulary");
}

TEST(HfJsonErrors, UnsupportedStagesSayWhatIsSupported) {
  const Error model = HfError(R"({"model": {"type": "Char", "vocab": []}})");
  EXPECT_EQ(model.code, ErrorCode::kUnsupported);
  EXPECT_EQ(model.message,
            "toy.json: field 'model.type': model \"Char\" is not supported (supported: BPE, "
            "Unigram, WordPiece, WordLevel)");
  const Error nmt = HfError(R"({"normalizer": {"type": "Sequence", "normalizers": [
                                  {"type": "NFKC"}, {"type": "Nmt"}]},
                                "model": {"vocab": {"a": 0}, "merges": []}})");
  EXPECT_EQ(nmt.code, ErrorCode::kUnsupported);
  EXPECT_TRUE(Contains(nmt.message,
                       "field 'normalizer.normalizers[1].type': normalizer \"Nmt\" "
                       "is not supported (supported: Sequence, Prepend, Replace, "
                       "NFC, NFD, NFKC, NFKD, Lowercase, Strip, StripAccents, "
                       "Precompiled, BertNormalizer)"))
      << nmt.message;
  const Error scripts = HfError(R"({"pre_tokenizer": {"type": "UnicodeScripts"},
                                    "model": {"vocab": {"a": 0}, "merges": []}})");
  EXPECT_TRUE(Contains(scripts.message,
                       "field 'pre_tokenizer.type': pre-tokenizer "
                       "\"UnicodeScripts\" is not supported (supported: "
                       "Sequence, ByteLevel, Split, Metaspace, Digits"))
      << scripts.message;
  const Error behavior = HfError(R"({"pre_tokenizer": {"type": "Split", "behavior": "Sideways",
                                       "pattern": {"String": " "}},
                                     "model": {"vocab": {"a": 0}, "merges": []}})");
  EXPECT_TRUE(Contains(behavior.message,
                       "field 'pre_tokenizer.behavior': Split behavior "
                       "\"Sideways\" is not supported (supported: Removed, "
                       "Isolated, MergedWithPrevious, MergedWithNext, "
                       "Contiguous)"))
      << behavior.message;
  const Error nested = HfError(R"({"decoder": {"type": "Sequence", "decoders": [
                                     {"type": "Fuse"}, {"type": "CTC"}]},
                                   "model": {"vocab": {"a": 0}, "merges": []}})");
  EXPECT_TRUE(Contains(nested.message, "field 'decoder.decoders[1].type': decoder \"CTC\""))
      << nested.message;
  const Error charsmap = HfError(R"({"normalizer": {"type": "Precompiled",
                                                    "precompiled_charsmap": "not base64!"},
                                     "model": {"vocab": {"a": 0}, "merges": []}})");
  EXPECT_EQ(charsmap.message, "toy.json: field 'normalizer.precompiled_charsmap': not base64");
  const Error pieces = HfError(R"({"model": {"type": "Unigram", "vocab": [["a", "x"]]}})");
  EXPECT_EQ(pieces.message, "toy.json: field 'model.vocab[0]': expected [text, score], got array");
}

TEST(HfJsonErrors, ByteLevelVocabularyNeedsEveryByte) {
  const Error error = HfError(R"({"pre_tokenizer": {"type": "ByteLevel"},
                                  "model": {"vocab": {"a": 0}, "merges": []}})");
  EXPECT_EQ(error.message,
            "toy.json: byte-level vocabulary has no token for byte 0x00 ('\xc4\x80')");
}

TEST(HfJsonErrors, MinimalFileLoads) {
  auto loaded = LoadHfTokenizerJson(R"({"model": {"vocab": {"a": 0, "b": 1, "ab": 2},
                                                  "merges": [["a", "b"]]}})",
                                    nullptr, "toy.json");
  ASSERT_TRUE(loaded.has_value()) << loaded.error().message;
  std::vector<int32_t> ids;
  ASSERT_TRUE((*loaded)->Encode("abba", false, &ids).has_value());
  EXPECT_EQ(ids, (std::vector<int32_t>{2, 1, 0}));
}

// Protobuf wire format by hand: key = field << 3 | wire type.
std::string Varint(uint64_t value) {
  std::string out;
  do {
    out.push_back(static_cast<char>((value & 0x7f) | (value > 0x7f ? 0x80 : 0)));
    value >>= 7;
  } while (value != 0);
  return out;
}
std::string Bytes(int field, const std::string& payload) {
  return Varint(field << 3 | 2) + Varint(payload.size()) + payload;
}
std::string Int(int field, uint64_t value) { return Varint(field << 3) + Varint(value); }

Error SpmError(const std::string& bytes) {
  auto loaded = LoadSpmModel({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()},
                             nullptr, "toy.model");
  EXPECT_FALSE(loaded.has_value());
  return loaded ? Error{ErrorCode::kInternal, "loaded"} : loaded.error();
}

TEST(SpmModelErrors, WireFormatProblemsNameTheOffset) {
  EXPECT_EQ(SpmError("\x0a\x05"
                     "ab")
                .message,
            "toy.model: field 1 at byte 0 needs 5 bytes but only 2 remain");
  EXPECT_EQ(SpmError("\x08\xff").message, "toy.model: truncated varint at byte 2");
  EXPECT_EQ(SpmError("\x0b").message,
            "toy.model: field 1 at byte 0 has wire type 3, which is not supported (groups are "
            "obsolete)");
}

TEST(SpmModelErrors, OnlyBpeAndUnigramModelsAreSupported) {
  const std::string unk = Bytes(1, Bytes(1, "<unk>") + Int(3, 2));
  const std::string a = Bytes(1, Bytes(1, "a"));
  const Error word = SpmError(unk + a + Bytes(2, Int(3, 3)));
  EXPECT_EQ(word.code, ErrorCode::kUnsupported);
  EXPECT_TRUE(Contains(word.message, "supported: unigram (1) and BPE (2)")) << word.message;
  const Error no_unk = SpmError(a + Bytes(2, Int(3, 2)));
  EXPECT_EQ(no_unk.message, "toy.model: no piece of type UNKNOWN");
  const Error twice = SpmError(unk + a + a + Bytes(2, Int(3, 2)));
  EXPECT_EQ(twice.message, "toy.model: pieces[2]: 'a' is defined twice");
  const Error bytes = SpmError(unk + a + Bytes(2, Int(3, 2) + Int(35, 1)));
  EXPECT_TRUE(Contains(bytes.message, "byte_fallback is set but not all 256"));
  // A minimal valid model: <unk>, "a", BPE.
  const std::string valid = unk + a + Bytes(2, Int(3, 2));
  auto loaded = LoadSpmModel({reinterpret_cast<const uint8_t*>(valid.data()), valid.size()},
                             nullptr, "toy.model");
  ASSERT_TRUE(loaded.has_value()) << loaded.error().message;
  std::vector<int32_t> ids;
  ASSERT_TRUE((*loaded)->Encode("a b", false, &ids).has_value());
  // "▁a▁b": "▁" is unknown, "a" known, then "▁" and "b" unknown: one <unk> for the run.
  EXPECT_EQ(ids, (std::vector<int32_t>{0, 1, 0}));
}

Result<std::unique_ptr<Pipeline>> GgufVocab(const std::string& model, const std::string& pre,
                                            std::vector<uint8_t>* storage) {
  GgufWriter writer;
  writer.SetString("tokenizer.ggml.model", model);
  if (!pre.empty()) writer.SetString("tokenizer.ggml.pre", pre);
  writer.SetStringArray("tokenizer.ggml.tokens", {"a", "b", "ab"});
  writer.SetStringArray("tokenizer.ggml.merges", {"a b"});
  *storage = writer.Serialize().value();
  auto gguf = GgufFile::Parse(*storage, "toy.gguf");
  if (!gguf) return std::unexpected(gguf.error());
  return LoadGgufVocab(*gguf);
}

TEST(GgufVocabErrors, UnknownPreTokenizerListsTheKnownOnes) {
  std::vector<uint8_t> storage;
  const auto falcon = GgufVocab("gpt2", "falcon", &storage);
  ASSERT_FALSE(falcon.has_value());
  EXPECT_EQ(falcon.error().code, ErrorCode::kUnsupported);
  EXPECT_EQ(falcon.error().message,
            "toy.gguf: tokenizer.ggml.pre 'falcon' is not a known pre-tokenizer (known: gpt-2, "
            "llama-bpe, llama3, llama-v3, qwen2)");
  const auto missing = GgufVocab("gpt2", "", &storage);
  ASSERT_FALSE(missing.has_value());
  EXPECT_TRUE(Contains(missing.error().message, "tokenizer.ggml.pre is missing"));
  const auto bert = GgufVocab("bert", "", &storage);
  ASSERT_FALSE(bert.has_value());
  EXPECT_EQ(bert.error().message,
            "toy.gguf: tokenizer.ggml.model 'bert' is not supported (supported: llama, gpt2, t5)");
}

TEST(GgufVocabErrors, SentencePieceVocabularyFromMetadata) {
  std::vector<uint8_t> storage;
  // No scores, no types: every token normal, all score 0, so merges go leftmost first.
  const auto llama = GgufVocab("llama", "", &storage);
  ASSERT_TRUE(llama.has_value()) << llama.error().message;
  std::vector<int32_t> ids;
  ASSERT_TRUE((*llama)->Encode("ab", false, &ids).has_value());
  // " ab" -> "▁ab": "▁" is not a token and there are no byte tokens, so <unk> (id 0 by
  // llama.cpp's default) then "ab".
  EXPECT_EQ(ids, (std::vector<int32_t>{0, 2}));
}

}  // namespace
}  // namespace kite::tok
