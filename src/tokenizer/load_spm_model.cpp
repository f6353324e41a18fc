// SentencePiece's tokenizer.model: a serialized ModelProto (sentencepiece_model.proto).
//   ModelProto { repeated SentencePiece pieces = 1; TrainerSpec trainer_spec = 2;
//                NormalizerSpec normalizer_spec = 3; NormalizerSpec denormalizer_spec = 5; }
//   SentencePiece { string piece = 1; float score = 2; Type type = 3 [default NORMAL]; }
#include <memory>
#include <set>

#include "tokenizer/loaders.h"
#include "tokenizer/proto_reader.h"

namespace kite::tok {

namespace {

struct TrainerSpec {
  int model_type = 1;  // UNIGRAM
  bool byte_fallback = false;
  bool treat_whitespace_as_suffix = false;
  int32_t bos_id = 1, eos_id = 2;
  std::string unk_surface = " \xe2\x81\x87 ";
};

struct NormalizerFields {
  std::string name;
  bool has_charsmap = false;
  std::span<const uint8_t> charsmap;
  SpmNormalizerSpec spec;
};

struct Piece {
  std::string text;
  float score = 0.0f;
  int type = 1;  // NORMAL
};

Status ExpectWire(const ProtoField& field, ProtoField::Wire wire, const char* what,
                  const std::string& name) {
  if (field.wire == wire) return Ok();
  return InvalidInput(name + ": " + what + " (field " + std::to_string(field.number) +
                      ") at byte " + std::to_string(field.offset) + " has the wrong wire type");
}

size_t OffsetIn(std::span<const uint8_t> all, std::span<const uint8_t> part) {
  return static_cast<size_t>(part.data() - all.data());
}

Result<Piece> ParsePiece(std::span<const uint8_t> all, const ProtoField& outer,
                         const std::string& name) {
  Piece piece;
  ProtoReader reader(outer.bytes, OffsetIn(all, outer.bytes), name);
  ProtoField field;
  while (KITE_TRY(reader.Next(&field))) {
    if (field.number == 1) {
      KITE_RETURN_IF_ERROR(ExpectWire(field, ProtoField::Wire::kBytes, "piece", name));
      piece.text = std::string(field.AsString());
    } else if (field.number == 2) {
      KITE_RETURN_IF_ERROR(ExpectWire(field, ProtoField::Wire::kFixed32, "score", name));
      piece.score = field.AsFloat();
    } else if (field.number == 3) {
      KITE_RETURN_IF_ERROR(ExpectWire(field, ProtoField::Wire::kVarint, "type", name));
      piece.type = static_cast<int>(field.value);
    }
  }
  return piece;
}

Result<TrainerSpec> ParseTrainerSpec(std::span<const uint8_t> all, const ProtoField& outer,
                                     const std::string& name) {
  TrainerSpec spec;
  ProtoReader reader(outer.bytes, OffsetIn(all, outer.bytes), name);
  ProtoField field;
  const auto as_int32 = [](const ProtoField& f) {
    return static_cast<int32_t>(static_cast<int64_t>(f.value));
  };
  while (KITE_TRY(reader.Next(&field))) {
    const bool varint = field.wire == ProtoField::Wire::kVarint;
    switch (field.number) {
      case 3:
        if (varint) spec.model_type = as_int32(field);
        break;
      case 24:
        if (varint) spec.treat_whitespace_as_suffix = field.value != 0;
        break;
      case 35:
        if (varint) spec.byte_fallback = field.value != 0;
        break;
      case 41:
        if (varint) spec.bos_id = as_int32(field);
        break;
      case 42:
        if (varint) spec.eos_id = as_int32(field);
        break;
      case 44:
        KITE_RETURN_IF_ERROR(
            ExpectWire(field, ProtoField::Wire::kBytes, "trainer_spec.unk_surface", name));
        spec.unk_surface = std::string(field.AsString());
        break;
      default:
        break;
    }
  }
  return spec;
}

Result<NormalizerFields> ParseNormalizerSpec(std::span<const uint8_t> all, const ProtoField& outer,
                                             const std::string& name) {
  NormalizerFields fields;
  ProtoReader reader(outer.bytes, OffsetIn(all, outer.bytes), name);
  ProtoField field;
  while (KITE_TRY(reader.Next(&field))) {
    const bool varint = field.wire == ProtoField::Wire::kVarint;
    switch (field.number) {
      case 1:
        fields.name = std::string(field.AsString());
        break;
      case 2:
        fields.has_charsmap = !field.bytes.empty();
        fields.charsmap = field.bytes;
        break;
      case 3:
        if (varint) fields.spec.add_dummy_prefix = field.value != 0;
        break;
      case 4:
        if (varint) fields.spec.remove_extra_whitespaces = field.value != 0;
        break;
      case 5:
        if (varint) fields.spec.escape_whitespaces = field.value != 0;
        break;
      default:
        break;
    }
  }
  return fields;
}

}  // namespace

Result<std::unique_ptr<Pipeline>> LoadSpmModel(std::span<const uint8_t> bytes,
                                               const HfTokenizerConfig* config,
                                               const std::string& name) {
  std::vector<Piece> pieces;
  TrainerSpec trainer;
  NormalizerFields normalizer;
  bool has_denormalizer_rules = false;
  ProtoReader reader(bytes, 0, name);
  ProtoField field;
  while (KITE_TRY(reader.Next(&field))) {
    if (field.number >= 1 && field.number <= 5 && field.number != 4) {
      KITE_RETURN_IF_ERROR(
          ExpectWire(field, ProtoField::Wire::kBytes, "a ModelProto message", name));
    }
    if (field.number == 1) {
      pieces.push_back(KITE_TRY(ParsePiece(bytes, field, name)));
    } else if (field.number == 2) {
      trainer = KITE_TRY(ParseTrainerSpec(bytes, field, name));
    } else if (field.number == 3) {
      normalizer = KITE_TRY(ParseNormalizerSpec(bytes, field, name));
    } else if (field.number == 5) {
      has_denormalizer_rules = KITE_TRY(ParseNormalizerSpec(bytes, field, name)).has_charsmap;
    }
  }

  if (pieces.empty()) return InvalidInput(name + ": no pieces (is this a SentencePiece model?)");
  if (trainer.model_type != 1 && trainer.model_type != 2) {
    return Unsupported(name + ": trainer_spec.model_type is " + std::to_string(trainer.model_type) +
                       " (3 word, 4 char); supported: unigram (1) and BPE (2)");
  }
  std::shared_ptr<const PrecompiledCharsmap> charsmap;
  if (normalizer.has_charsmap) {
    charsmap = std::make_shared<const PrecompiledCharsmap>(KITE_TRY(PrecompiledCharsmap::Parse(
        normalizer.charsmap, name + ": normalizer_spec.precompiled_charsmap")));
  }
  if (has_denormalizer_rules) {
    return Unsupported(name + ": denormalizer_spec rules are not supported");
  }
  if (trainer.treat_whitespace_as_suffix) {
    return Unsupported(name + ": trainer_spec.treat_whitespace_as_suffix is not supported");
  }

  auto pipeline = std::make_unique<Pipeline>();
  pipeline->name = name;
  pipeline->kind = trainer.model_type == 1 ? "unigram" : "sentencepiece-bpe";
  Vocab& vocab = pipeline->vocab;
  std::set<std::string_view> seen;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const Piece& piece = pieces[i];
    const std::string where = name + ": pieces[" + std::to_string(i) + "]";
    if (piece.text.empty()) return InvalidInput(where + ": empty piece");
    if (piece.type < 1 || piece.type > 6) {
      return InvalidInput(where + " '" + piece.text + "': unknown type " +
                          std::to_string(piece.type));
    }
    if (!seen.insert(piece.text).second) {
      return InvalidInput(where + ": '" + piece.text + "' is defined twice");
    }
    if (piece.type == static_cast<int>(TokenType::kUnknown)) {
      if (pipeline->unk_id >= 0) return InvalidInput(where + ": a second unknown piece");
      pipeline->unk_id = static_cast<int32_t>(i);
    }
    if (piece.type == static_cast<int>(TokenType::kByte) && ParseByteToken(piece.text) < 0) {
      return InvalidInput(where + ": byte piece '" + piece.text + "' is not of the form <0xXX>");
    }
  }
  for (const Piece& piece : pieces) {
    vocab.Add(piece.text, piece.score, static_cast<TokenType>(piece.type));
  }
  vocab.Finalize();
  if (pipeline->unk_id < 0) return InvalidInput(name + ": no piece of type UNKNOWN");
  if (trainer.byte_fallback && !vocab.HasAllByteTokens()) {
    return InvalidInput(name +
                        ": trainer_spec.byte_fallback is set but not all 256 <0xXX> "
                        "byte pieces are present");
  }

  if (trainer.model_type == 1) {
    UnigramOptions options;
    options.unk_id = pipeline->unk_id;
    options.byte_fallback = trainer.byte_fallback;
    options.sentencepiece = true;
    pipeline->model = KITE_TRY(Unigram::Create(vocab, options, name));
  } else {
    SpmBpe model(trainer.byte_fallback, pipeline->unk_id);
    for (int32_t id = 0; id < vocab.size(); ++id) {
      if (vocab.Type(id) == TokenType::kUserDefined) model.AddUserDefined(vocab.Text(id), id);
    }
    pipeline->model = std::move(model);
  }
  // Unigram's Viterbi sums must run over the whole text as SentencePiece's do (hf_models.cpp).
  pipeline->split_at_word_starts =
      trainer.model_type == 2 && CanSplitAtWordStarts(vocab, &pipeline->word_crossing_tokens);
  pipeline->normalizer = Normalizer::SentencePiece(normalizer.spec, std::move(charsmap));
  pipeline->decoder = Decoder::SentencePiece(
      normalizer.spec.add_dummy_prefix || normalizer.spec.remove_extra_whitespaces,
      normalizer.spec.remove_extra_whitespaces, trainer.unk_surface);

  if (vocab.Contains(trainer.bos_id)) pipeline->bos_id = trainer.bos_id;
  if (vocab.Contains(trainer.eos_id)) pipeline->eos_ids.push_back(trainer.eos_id);
  // Hugging Face's LlamaTokenizer: BOS, no EOS, unless tokenizer_config.json says otherwise.
  bool add_bos = true, add_eos = false;
  if (config != nullptr) {
    add_bos = config->add_bos_token.value_or(add_bos);
    add_eos = config->add_eos_token.value_or(add_eos);
    pipeline->chat_template = config->chat_template;
  }
  if (add_bos && pipeline->bos_id >= 0) pipeline->prefix_ids.push_back(pipeline->bos_id);
  if (add_eos && !pipeline->eos_ids.empty()) pipeline->suffix_ids.push_back(pipeline->eos_ids[0]);
  return pipeline;
}

}  // namespace kite::tok
