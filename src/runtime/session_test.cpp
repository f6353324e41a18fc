#include "runtime/session.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "format/gguf.h"
#include "models/test_model.h"

namespace kite {
namespace {

const std::string kReference = KITE_SOURCE_DIR "/testdata/reference/";
// testdata/reference/*/golden.json: the prompt's ids and its 16-token greedy continuation (the
// same prompt in every folder; the continuation is llama-gqa's).
const std::vector<int32_t> kPrompt = {1,   538, 592, 656, 562, 923, 889,
                                      960, 951, 279, 441, 896, 935};
const std::vector<int32_t> kGreedy = {284, 556, 58,  116, 744, 135, 281, 579,
                                      345, 318, 491, 182, 50,  527, 764, 651};

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::unique_ptr<Engine> LoadGqa(int32_t context = 0, int32_t parallel = 1) {
  EngineOptions options;
  options.context_length = context;
  options.parallel = parallel;
  options.kv_dtype = DType::kF32;
  auto engine = Engine::Load(kReference + "llama-gqa", options);
  EXPECT_TRUE(engine.has_value()) << engine.error().message;
  return engine ? std::move(*engine) : nullptr;
}

Session::GenerateOptions Greedy(int32_t max_tokens) {
  Session::GenerateOptions options;
  options.max_tokens = max_tokens;
  options.sampler.temperature = 0.0f;
  return options;
}

TEST(SessionTest, PromptLongerThanTheContextGivesBothNumbers) {
  auto engine = LoadGqa(/*context=*/8);
  ASSERT_TRUE(engine);
  Session session(*engine);
  auto result = session.Generate(kPrompt, Greedy(4));
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().code, ErrorCode::kInvalidInput);
  EXPECT_TRUE(Contains(result.error().message, "13 tokens; the context holds 8"))
      << result.error().message;

  ASSERT_TRUE(session.Feed(std::span(kPrompt).first(6)).has_value());
  auto fed = session.Feed(std::span(kPrompt).subspan(6, 3));
  ASSERT_FALSE(fed.has_value());
  EXPECT_TRUE(Contains(fed.error().message, "need 9 positions; the context holds 8"))
      << fed.error().message;
  EXPECT_EQ(session.n_past(), 6);  // nothing fed
}

TEST(SessionTest, RefusesEmptyInputAndIdsOutsideTheVocabulary) {
  auto engine = LoadGqa();
  ASSERT_TRUE(engine);
  Session session(*engine);
  EXPECT_FALSE(session.Feed({}).has_value());
  EXPECT_FALSE(session.FeedPrompt({}).has_value());
  const std::vector<int32_t> bad = {1, 5, 1000};
  auto fed = session.Feed(bad);
  ASSERT_FALSE(fed.has_value());
  EXPECT_TRUE(Contains(fed.error().message, "token 2 is id 1000")) << fed.error().message;
  EXPECT_EQ(session.n_past(), 0);
}

TEST(SessionTest, GenerationStopsWhenTheContextIsFull) {
  auto engine = LoadGqa(/*context=*/16);
  ASSERT_TRUE(engine);
  Session session(*engine);
  auto result = session.Generate(kPrompt, Greedy(10));
  ASSERT_TRUE(result.has_value()) << result.error().message;
  // The prompt takes positions 0..12; three tokens fill 13..15, the fourth has no place.
  EXPECT_EQ(result->stop_reason, "context_full");
  EXPECT_EQ(result->ids, std::vector<int32_t>(kGreedy.begin(), kGreedy.begin() + 4));
  EXPECT_EQ(result->decode_tokens, 3);
  EXPECT_EQ(session.n_past(), 16);
}

// max_tokens -1 (`-n -1`): until EOS or, here, the context is full.
TEST(SessionTest, NegativeMaxTokensGeneratesUntilTheContextIsFull) {
  auto engine = LoadGqa(/*context=*/16);
  ASSERT_TRUE(engine);
  Session session(*engine);
  auto result = session.Generate(kPrompt, Greedy(-1));
  ASSERT_TRUE(result.has_value()) << result.error().message;
  EXPECT_EQ(result->stop_reason, "context_full");
  EXPECT_EQ(result->ids, std::vector<int32_t>(kGreedy.begin(), kGreedy.begin() + 4));
}

TEST(SessionTest, StopStringEndsGenerationAndIsNotEmitted) {
  auto engine = LoadGqa();
  ASSERT_TRUE(engine);
  // The continuation's text: that of prompt + continuation, less that of the prompt.
  std::vector<int32_t> all = kPrompt;
  all.insert(all.end(), kGreedy.begin(), kGreedy.end());
  auto whole = engine->tokenizer().Decode(all);
  auto prompt_text = engine->tokenizer().Decode(kPrompt);
  ASSERT_TRUE(whole.has_value() && prompt_text.has_value());
  ASSERT_TRUE(whole->starts_with(*prompt_text));
  const auto full_text = std::optional<std::string>(whole->substr(prompt_text->size()));
  // A stop string from the middle of the known continuation.
  const std::string stop = full_text->substr(full_text->size() / 2, 3);
  const std::string before = full_text->substr(0, full_text->find(stop));

  Session session(*engine);
  Session::GenerateOptions options = Greedy(16);
  options.stop_strings = {stop};
  std::string streamed;
  options.on_token = [&](int32_t, std::string_view text) {
    streamed += text;
    return true;
  };
  auto result = session.Generate(kPrompt, options);
  ASSERT_TRUE(result.has_value()) << result.error().message;
  EXPECT_EQ(result->stop_reason, "stop_string");
  EXPECT_EQ(result->text, before);
  EXPECT_EQ(streamed, before);
  EXPECT_LT(result->ids.size(), kGreedy.size());
}

TEST(SessionTest, CallbackCanStopGeneration) {
  auto engine = LoadGqa();
  ASSERT_TRUE(engine);
  Session session(*engine);
  Session::GenerateOptions options = Greedy(16);
  int calls = 0;
  options.on_token = [&](int32_t, std::string_view) { return ++calls < 3; };
  auto result = session.Generate(kPrompt, options);
  ASSERT_TRUE(result.has_value()) << result.error().message;
  EXPECT_EQ(result->stop_reason, "callback");
  EXPECT_EQ(result->ids.size(), 3u);
}

// Generates greedily with a test model whose lm_head makes `winner` win after any input.
Result<Session::GenerateResult> GenerateWithWinner(int32_t winner, int32_t max_tokens,
                                                   bool ignore_eos = false) {
  const std::string path =
      ::testing::TempDir() + "kite_session_winner_" + std::to_string(winner) + ".gguf";
  testing::TestModelOptions model;
  model.winner = winner;
  KITE_RETURN_IF_ERROR(testing::WriteTestModel(path, model));
  auto engine = KITE_TRY(Engine::Load(path, EngineOptions{}));
  Session session(*engine);
  const std::vector<int32_t> prompt = {1, 270, 271};
  Session::GenerateOptions options = Greedy(max_tokens);
  options.ignore_eos = ignore_eos;
  return session.Generate(prompt, options);
}

TEST(SessionTest, EosEndsGenerationWithoutEmittingIt) {
  auto result = GenerateWithWinner(/*</s>*/ 2, 8);
  ASSERT_TRUE(result.has_value()) << result.error().message;
  EXPECT_EQ(result->stop_reason, "eos");
  EXPECT_TRUE(result->ids.empty());
  EXPECT_EQ(result->text, "");

  // With another winner: max_tokens, and the text of the repeated token.
  result = GenerateWithWinner(299, 3);
  ASSERT_TRUE(result.has_value()) << result.error().message;
  EXPECT_EQ(result->stop_reason, "max_tokens");
  EXPECT_EQ(result->ids, (std::vector<int32_t>{299, 299, 299}));
  EXPECT_EQ(result->text, " w299 w299 w299");  // "▁w299" pieces after the prompt
}

TEST(SessionTest, IgnoreEosGeneratesPastIt) {
  auto result = GenerateWithWinner(/*</s>*/ 2, 3, /*ignore_eos=*/true);
  ASSERT_TRUE(result.has_value()) << result.error().message;
  EXPECT_EQ(result->stop_reason, "max_tokens");
  EXPECT_EQ(result->ids, (std::vector<int32_t>{2, 2, 2}));
}

TEST(SessionTest, SampledGenerationIsReproducibleFromItsSeed) {
  auto engine = LoadGqa();
  ASSERT_TRUE(engine);
  Session::GenerateOptions options;
  options.max_tokens = 8;
  options.sampler.temperature = 1.0f;
  options.sampler.top_k = 0;
  options.sampler.min_p = 0.0f;
  options.sampler.seed = 42;
  Session a(*engine);
  auto first = a.Generate(kPrompt, options);
  a.Reset();
  auto second = a.Generate(kPrompt, options);
  ASSERT_TRUE(first.has_value() && second.has_value());
  EXPECT_EQ(first->ids, second->ids);
  EXPECT_EQ(second->reused_tokens, 0);
}

TEST(SessionTest, MultiTurnReusesTheConversationSoFar) {
  auto engine = LoadGqa();
  ASSERT_TRUE(engine);
  Session session(*engine);
  auto turn1 = session.Generate(kPrompt, Greedy(4));
  ASSERT_TRUE(turn1.has_value()) << turn1.error().message;
  // The next prompt repeats the conversation (prompt + reply) and adds a user turn.
  std::vector<int32_t> next = kPrompt;
  next.insert(next.end(), turn1->ids.begin(), turn1->ids.end());
  next.insert(next.end(), {600, 601});
  auto turn2 = session.Generate(next, Greedy(2));
  ASSERT_TRUE(turn2.has_value()) << turn2.error().message;
  // The reply's last token was never fed, so the cache held prompt + 3 of the 4.
  EXPECT_EQ(turn2->reused_tokens, static_cast<int32_t>(kPrompt.size()) + 3);
  EXPECT_EQ(turn2->prefill_tokens, 3);
}

TEST(SessionTest, LoadRefusesAnotherModelsSessionAndBadFiles) {
  auto engine = LoadGqa();
  ASSERT_TRUE(engine);
  const std::string path = ::testing::TempDir() + "kite_session_other_model";
  {
    auto qwen = Engine::Load(kReference + "qwen2-bias", EngineOptions{});
    ASSERT_TRUE(qwen.has_value());
    Session session(**qwen);
    ASSERT_TRUE(session.Feed(std::span(kPrompt).first(4)).has_value());
    ASSERT_TRUE(session.Save(path).has_value());
  }
  Session session(*engine);
  auto loaded = session.Load(path);
  ASSERT_FALSE(loaded.has_value());
  EXPECT_TRUE(Contains(loaded.error().message, "saved with another model"))
      << loaded.error().message;

  std::ofstream(path, std::ios::binary) << "not a session";
  EXPECT_FALSE(session.Load(path).has_value());
  EXPECT_FALSE(session.Load(path + ".missing").has_value());
  std::filesystem::remove(path);
}

// One byte of KV data changed: the checksum refuses the file instead of restoring wrong rows.
TEST(SessionTest, LoadRefusesADamagedFile) {
  auto engine = LoadGqa();
  ASSERT_TRUE(engine);
  const std::string path = ::testing::TempDir() + "kite_session_damaged";
  Session session(*engine);
  ASSERT_TRUE(session.Feed(std::span(kPrompt).first(6)).has_value());
  ASSERT_TRUE(session.Save(path).has_value());
  ASSERT_TRUE(session.Load(path).has_value());
  uint64_t offset = 0;
  {
    auto file = GgufFile::Open(path);
    ASSERT_TRUE(file.has_value()) << file.error().message;
    const GgufTensorInfo* k = file->FindTensor("blk.0.k");
    ASSERT_NE(k, nullptr);
    offset = file->data_offset() + k->offset + 5;
  }
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  file.seekg(static_cast<std::streamoff>(offset));
  const char byte = static_cast<char>(file.get() ^ 1);
  file.seekp(static_cast<std::streamoff>(offset));
  file.put(byte);
  file.close();
  auto loaded = session.Load(path);
  ASSERT_FALSE(loaded.has_value());
  EXPECT_TRUE(Contains(loaded.error().message, path + ": damaged")) << loaded.error().message;
  std::filesystem::remove(path);
}

// Each session has its own KV rows, whoever ran since: a session saved beside another keeps its
// rows, and its copy loads them back without computing the history again.
TEST(SessionTest, SaveBesideAnotherSessionKeepsItsRowsAndLoadsWithoutRefeeding) {
  auto engine = LoadGqa(0, /*parallel=*/3);
  ASSERT_TRUE(engine);
  const std::string path = ::testing::TempDir() + "kite_session_beside";
  Session a(*engine);
  Session b(*engine);
  ASSERT_TRUE(a.Feed(std::span(kPrompt).first(10)).has_value());
  ASSERT_TRUE(b.Feed(std::span(kPrompt).first(2)).has_value());  // ran after a
  ASSERT_TRUE(a.Save(path).has_value());
  {
    auto file = GgufFile::Open(path);
    ASSERT_TRUE(file.has_value()) << file.error().message;
    EXPECT_NE(file->FindTensor("blk.0.k"), nullptr);
  }

  Session c(*engine);
  const uint64_t computed = engine->tokens_computed();
  const Status loaded = c.Load(path);
  ASSERT_TRUE(loaded.has_value()) << loaded.error().message;
  EXPECT_EQ(engine->tokens_computed(), computed);  // the rows came from the file
  EXPECT_EQ(c.history(), std::vector<int32_t>(kPrompt.begin(), kPrompt.begin() + 10));
  auto restored = c.Feed(std::span(kPrompt).subspan(10));
  ASSERT_TRUE(restored.has_value());
  std::vector<float> restored_logits(restored->begin(), restored->end());
  auto direct = a.Feed(std::span(kPrompt).subspan(10));
  ASSERT_TRUE(direct.has_value());
  ASSERT_EQ(restored_logits.size(), direct->size());
  for (size_t i = 0; i < restored_logits.size(); ++i) {
    ASSERT_FLOAT_EQ(restored_logits[i], (*direct)[i]) << i;
  }
  std::filesystem::remove(path);
}

// A GGUF test model written to the temporary folder.
std::unique_ptr<Engine> LoadTestModel(const testing::TestModelOptions& model,
                                      const std::string& name) {
  const std::string path = ::testing::TempDir() + "kite_session_" + name + ".gguf";
  EXPECT_TRUE(testing::WriteTestModel(path, model).has_value());
  auto engine = Engine::Load(path, EngineOptions{});
  EXPECT_TRUE(engine.has_value()) << engine.error().message;
  return engine ? std::move(*engine) : nullptr;
}

TEST(SessionTest, IdsPastTheTokenizerAreNeverSampled) {
  // 320 embedding rows, 300 tokens; lm_head's padding row 310 wins after any input, so without
  // the mask every sampled id was 310, which has no text (detokenize refuses it).
  testing::TestModelOptions model;
  model.vocab = 320;
  model.tokenizer_vocab = 300;
  model.winner = 310;
  auto engine = LoadTestModel(model, "padded_winner");
  ASSERT_TRUE(engine);
  ASSERT_EQ(engine->warnings().size(), 1u);  // the loader's, said once
  for (float temperature : {0.0f, 1.0f}) {
    for (uint64_t seed = 0; seed < 8; ++seed) {
      Session session(*engine);
      Session::GenerateOptions options = Greedy(8);
      options.sampler.temperature = temperature;
      options.sampler.seed = seed;
      options.ignore_eos = true;  // the remaining logits are all equal: EOS may be drawn early
      auto result = session.Generate(std::vector<int32_t>{1, 100, 200}, options);
      ASSERT_TRUE(result.has_value()) << result.error().message;
      ASSERT_EQ(result->ids.size(), 8u) << result->stop_reason;
      for (int32_t id : result->ids) {
        ASSERT_LT(id, 300) << "temperature " << temperature << " seed " << seed;
      }
    }
  }
}

TEST(SessionTest, NonFiniteLogitsStopGenerationNamingThePosition) {
  const std::string path = ::testing::TempDir() + "kite_session_nan.gguf";
  ASSERT_TRUE(testing::WriteTestModel(path, testing::TestModelOptions{}).has_value());
  ASSERT_TRUE(testing::SetTestModelValue(path, "blk.0.ffn_up.weight", 3,
                                         std::numeric_limits<float>::quiet_NaN())
                  .has_value());
  auto engine = Engine::Load(path, EngineOptions{});
  ASSERT_TRUE(engine.has_value()) << engine.error().message;
  Session session(**engine);
  auto result = session.Generate(std::vector<int32_t>{1, 100, 200}, Greedy(4));
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().code, ErrorCode::kInvalidInput);
  EXPECT_TRUE(Contains(result.error().message, "the logits for position 3 are not finite"))
      << result.error().message;
  EXPECT_TRUE(Contains(result.error().message, "--check-tensors")) << result.error().message;
}

// A q8_0 cache is saved as the rows stand (blocks along head_dim) and loaded back byte for byte;
// the restored session continues exactly as the uninterrupted one. Loaded into an f16 engine,
// the same file's history is fed again.
TEST(SessionTest, Q8_0CacheSavesAndLoadsItsBlocks) {
  const std::string model_path = ::testing::TempDir() + "kite_session_head32.gguf";
  testing::TestModelOptions model;
  model.head_dim = 32;
  model.n_heads = 2;
  model.n_kv_heads = 1;
  model.hidden = 64;
  ASSERT_TRUE(testing::WriteTestModel(model_path, model).has_value());
  EngineOptions options;
  options.kv_dtype = DType::kQ8_0;
  options.kv_page_size = 4;  // rows cross pages
  auto engine = Engine::Load(model_path, options);
  ASSERT_TRUE(engine.has_value()) << engine.error().message;
  const std::vector<int32_t> prompt = {1, 17, 250, 3, 99, 42, 7, 180, 66, 12, 5, 140};

  const std::string path = ::testing::TempDir() + "kite_session_q8_0";
  Session a(**engine);
  ASSERT_TRUE(a.Feed(std::span(prompt).first(10)).has_value());
  const KvLayerView& layer = a.kv_sequence().view().layers[1];
  std::vector<std::byte> keys(10 * layer.row_bytes());
  for (int64_t pos = 0; pos < 10; ++pos) {
    std::memcpy(keys.data() + pos * layer.row_bytes(), layer.key(pos), layer.row_bytes());
  }
  ASSERT_TRUE(a.Save(path).has_value());
  {
    auto file = GgufFile::Open(path);
    ASSERT_TRUE(file.has_value()) << file.error().message;
    const GgufTensorInfo* k = file->FindTensor("blk.1.k");
    ASSERT_NE(k, nullptr);
    EXPECT_EQ(k->dtype, DType::kQ8_0);
    EXPECT_EQ(k->shape, (std::vector<int64_t>{10, 1, 32}));
    ASSERT_EQ(k->bytes, 10u * 34);
    EXPECT_EQ(std::memcmp(file->View(*k).data, keys.data(), keys.size()), 0);
  }
  auto direct = a.Feed(std::span(prompt).subspan(10));
  ASSERT_TRUE(direct.has_value());
  const std::vector<float> direct_logits(direct->begin(), direct->end());

  Session other(**engine);
  ASSERT_TRUE(other.Feed(std::span(prompt).last(6)).has_value());  // a session beside it
  Session restored(**engine);
  ASSERT_TRUE(restored.Load(path).has_value());
  const KvLayerView& after = restored.kv_sequence().view().layers[1];
  for (int64_t pos = 0; pos < 10; ++pos) {
    EXPECT_EQ(std::memcmp(after.key(pos), keys.data() + pos * after.row_bytes(), after.row_bytes()),
              0)
        << pos;
  }
  auto continued = restored.Feed(std::span(prompt).subspan(10));
  ASSERT_TRUE(continued.has_value());
  EXPECT_EQ(std::vector<float>(continued->begin(), continued->end()), direct_logits);

  options.kv_dtype = DType::kF16;
  auto f16 = Engine::Load(model_path, options);
  ASSERT_TRUE(f16.has_value());
  Session refed(**f16);
  ASSERT_TRUE(refed.Load(path).has_value());
  EXPECT_EQ(refed.history(), std::vector<int32_t>(prompt.begin(), prompt.begin() + 10));
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace kite
