// Speculative decoding end to end through Session::Generate: greedy output is token for token
// plain greedy decoding's on the reference models (PyTorch-checked, testdata/reference) and the
// demo model, with n-gram drafts, with a model as its own draft (everything kept) and with
// another model as draft (little kept); the session afterwards continues as a plain one would;
// a drafter that is always wrong costs a bounded number of passes.
#include "runtime/speculator.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "runtime/draft_model_drafter.h"
#include "runtime/ngram_drafter.h"
#include "runtime/session.h"
#include "runtime/speculative_setup.h"

namespace kite {
namespace {

const std::string kReference = KITE_SOURCE_DIR "/testdata/reference/";
const std::string kDemo = KITE_SOURCE_DIR "/models/demo";
const char* const kReferenceModels[] = {"llama-gqa", "qwen2-bias", "llama3-rope", "mistral",
                                        "llama-bias-linear"};
// The prompt of testdata/reference/*/golden.json, twice: the second copy gives n-gram drafts
// something to find.
const std::vector<int32_t> kPrompt = {1,   538, 592, 656, 562, 923, 889, 960, 951, 279, 441,
                                      896, 935, 538, 592, 656, 562, 923, 889, 960};

std::unique_ptr<Engine> Load(const std::string& path) {
  EngineOptions options;
  options.kv_dtype = DType::kF32;
  auto engine = Engine::Load(path, options);
  EXPECT_TRUE(engine.has_value()) << path << ": " << engine.error().message;
  return engine ? std::move(*engine) : nullptr;
}

Session::GenerateOptions Greedy(int32_t max_tokens, Drafter* drafter = nullptr) {
  Session::GenerateOptions options;
  options.max_tokens = max_tokens;
  options.ignore_eos = true;
  options.sampler.temperature = 0.0f;
  options.drafter = drafter;
  options.draft_limits = {.draft_max = 6, .draft_min = 1};
  return options;
}

std::vector<int32_t> Plain(const Engine& engine, std::span<const int32_t> prompt, int32_t n) {
  Session session(engine);
  auto result = session.Generate(prompt, Greedy(n));
  EXPECT_TRUE(result.has_value()) << result.error().message;
  return result ? result->ids : std::vector<int32_t>{};
}

TEST(Speculative, NgramGreedyEqualsPlainGreedyOnEveryReferenceModel) {
  for (const char* name : kReferenceModels) {
    SCOPED_TRACE(name);
    auto engine = Load(kReference + name);
    ASSERT_TRUE(engine);
    const std::vector<int32_t> plain = Plain(*engine, kPrompt, 60);
    NgramDrafter drafter(1, 3);
    Session session(*engine);
    auto result = session.Generate(kPrompt, Greedy(60, &drafter));
    ASSERT_TRUE(result.has_value()) << result.error().message;
    EXPECT_EQ(result->ids, plain);
    EXPECT_GT(result->speculative.passes, 0);
    EXPECT_EQ(result->decode_tokens, 59);  // every token after the first was fed and kept
  }
}

TEST(Speculative, AModelAsItsOwnDraftIsAlwaysRight) {
  for (const std::string& path : {kReference + "llama-gqa", kDemo}) {
    SCOPED_TRACE(path);
    auto engine = Load(path);
    auto draft = Load(path);
    ASSERT_TRUE(engine && draft);
    const std::vector<int32_t> plain = Plain(*engine, kPrompt, 50);
    DraftModelDrafter drafter(*draft);
    Session session(*engine);
    auto result = session.Generate(kPrompt, Greedy(50, &drafter));
    ASSERT_TRUE(result.has_value()) << result.error().message;
    EXPECT_EQ(result->ids, plain);
    EXPECT_GT(result->speculative.drafted, 0);
    EXPECT_EQ(result->speculative.accepted, result->speculative.drafted);
    EXPECT_GT(result->speculative.TokensPerRun(), 1.0);
  }
}

TEST(Speculative, AnotherModelAsDraftIsMostlyWrongAndChangesNothing) {
  auto engine = Load(kReference + "llama-gqa");
  auto draft = Load(kReference + "mistral");
  ASSERT_TRUE(engine && draft);
  const std::vector<int32_t> plain = Plain(*engine, kPrompt, 60);
  DraftModelDrafter drafter(*draft);
  Session session(*engine);
  auto result = session.Generate(kPrompt, Greedy(60, &drafter));
  ASSERT_TRUE(result.has_value()) << result.error().message;
  EXPECT_EQ(result->ids, plain);
  EXPECT_GT(result->speculative.drafted, result->speculative.accepted);
  EXPECT_LT(result->speculative.AcceptanceRate(), 0.5);
}

// After passes that rolled rejected drafts back, the session holds exactly what a plain one
// holds, row for row: feeding both the same tokens gives the same logits.
TEST(Speculative, AfterRollbacksTheSessionContinuesAsAPlainOne) {
  auto engine = Load(kReference + "llama-gqa");
  auto draft = Load(kReference + "mistral");
  ASSERT_TRUE(engine && draft);
  DraftModelDrafter drafter(*draft);
  Session speculative(*engine);
  Session plain(*engine);
  for (int32_t n : {17, 23}) {  // two turns, the second reusing the first's history
    std::vector<int32_t> prompt = kPrompt;
    if (n == 23) prompt = speculative.history(), prompt.push_back(700);
    auto a = speculative.Generate(prompt, Greedy(n, &drafter));
    auto b = plain.Generate(prompt, Greedy(n));
    ASSERT_TRUE(a.has_value() && b.has_value());
    ASSERT_EQ(a->ids, b->ids);
    EXPECT_GT(a->speculative.drafted, a->speculative.accepted);
  }
  // Plain decoding leaves the last token unfed; a pass may have fed it.
  ASSERT_GE(speculative.n_past(), plain.n_past());
  speculative.Truncate(plain.n_past());
  ASSERT_EQ(speculative.history(), plain.history());
  const std::vector<int32_t> next = {5, 77, 300};
  auto x = speculative.Feed(next, /*all_logits=*/true);
  ASSERT_TRUE(x.has_value());
  const std::vector<float> from_speculative(x->begin(), x->end());
  auto y = plain.Feed(next, /*all_logits=*/true);
  ASSERT_TRUE(y.has_value());
  const std::vector<float> from_plain(y->begin(), y->end());
  EXPECT_EQ(from_speculative, from_plain);
}

// Proposes, after any context, a token the target never picks next: the plain continuation's
// token plus one.
class AlwaysWrongDrafter final : public Drafter {
 public:
  AlwaysWrongDrafter(std::vector<int32_t> prompt, std::vector<int32_t> plain)
      : prompt_size_(prompt.size()), plain_(std::move(plain)) {}
  void Begin(const SamplerConfig&) override {}
  Result<const Draft*> Propose(std::span<const int32_t> context, int32_t max_tokens) override {
    draft_.Clear();
    // context = prompt + plain[0..i]; the target's next token is plain[i + 1].
    const size_t next = context.size() - prompt_size_;
    for (int32_t i = 0; i < max_tokens && next + i < plain_.size(); ++i) {
      draft_.tokens.push_back((plain_[next + i] + 1) % 1000);
    }
    ++proposals_;
    return &draft_;
  }
  std::string_view kind() const override { return "test"; }
  int proposals_ = 0;

 private:
  size_t prompt_size_;
  std::vector<int32_t> plain_;
  Draft draft_;
};

TEST(Speculative, AnAlwaysWrongDrafterCostsABoundedNumberOfPasses) {
  auto engine = Load(kReference + "llama-gqa");
  ASSERT_TRUE(engine);
  constexpr int32_t kTokens = 100;
  const std::vector<int32_t> plain = Plain(*engine, kPrompt, kTokens);
  AlwaysWrongDrafter drafter(kPrompt, plain);
  Session session(*engine);
  auto result = session.Generate(kPrompt, Greedy(kTokens, &drafter));
  ASSERT_TRUE(result.has_value()) << result.error().message;
  EXPECT_EQ(result->ids, plain);
  EXPECT_EQ(result->speculative.accepted, 0);
  EXPECT_GE(result->speculative.passes, 1);  // more unless the passes' price says stop
  EXPECT_LE(result->speculative.passes, DraftLength::MaxWastedPasses(kTokens));
  EXPECT_EQ(result->speculative.passes + result->speculative.plain_steps, kTokens - 1);
}

// A seed gives the same text on every run: sampled decoding's draft lengths do not depend on
// how long the passes took.
TEST(Speculative, SampledGenerationIsReproducibleFromItsSeed) {
  auto engine = Load(kReference + "llama-gqa");
  ASSERT_TRUE(engine);
  Session::GenerateOptions options = Greedy(40);
  options.sampler.temperature = 0.7f;
  options.sampler.seed = 7;
  for (const char* draft_name : {"llama-gqa", "mistral"}) {
    SCOPED_TRACE(draft_name);
    std::vector<int32_t> first;
    for (int run = 0; run < 3; ++run) {
      auto draft = Load(kReference + draft_name);
      DraftModelDrafter drafter(*draft);
      options.drafter = &drafter;
      Session session(*engine);
      auto result = session.Generate(kPrompt, options);
      ASSERT_TRUE(result.has_value()) << result.error().message;
      EXPECT_EQ(result->ids.size(), 40u);
      EXPECT_GT(result->speculative.drafted, 0);
      // Its own draft with the same settings: p == q, every draft is kept.
      if (std::string(draft_name) == "llama-gqa") {
        EXPECT_EQ(result->speculative.accepted, result->speculative.drafted);
      }
      if (run == 0) first = result->ids;
      else EXPECT_EQ(result->ids, first);
    }
  }
}

TEST(Speculative, EosInsideAPassEndsGenerationWithThePlainHistory) {
  auto engine = Load(kDemo);
  ASSERT_TRUE(engine);
  auto ids = engine->tokenizer().Encode("The quick brown fox jumps over the lazy dog.\n%\nThe quick", true);
  ASSERT_TRUE(ids.has_value());
  Session::GenerateOptions options = Greedy(120);
  options.ignore_eos = false;
  Session plain(*engine);
  auto a = plain.Generate(*ids, options);
  plain.Reset();  // the pool holds one context
  NgramDrafter drafter(1, 4);
  options.drafter = &drafter;
  Session speculative(*engine);
  auto b = speculative.Generate(*ids, options);
  ASSERT_TRUE(a.has_value()) << a.error().message;
  ASSERT_TRUE(b.has_value()) << b.error().message;
  EXPECT_EQ(b->ids, a->ids);
  EXPECT_EQ(b->text, a->text);
  EXPECT_EQ(b->stop_reason, a->stop_reason);
  EXPECT_GT(b->speculative.accepted, 0);
  EXPECT_LE(speculative.n_past(), std::ssize(*ids) + std::ssize(b->ids));
}

TEST(Speculative, ADraftModelOfAnotherVocabularyIsRefusedNamingBothAndTheToken) {
  auto engine = Load(kDemo);
  ASSERT_TRUE(engine);
  RunSettings settings;
  settings.model = kDemo;
  settings.speculative.draft_model = kReference + "llama-gqa";
  auto setup = SpeculativeSetup::Create(settings, *engine);
  ASSERT_FALSE(setup.has_value());
  const std::string& message = setup.error().message;
  EXPECT_NE(message.find("llama-gqa"), std::string::npos) << message;
  EXPECT_NE(message.find("models/demo"), std::string::npos) << message;
  EXPECT_NE(message.find("1000 and 4096"), std::string::npos) << message;

  settings.speculative.draft_model.clear();
  settings.speculative.mode = "draft";
  setup = SpeculativeSetup::Create(settings, *engine);
  ASSERT_FALSE(setup.has_value());
  EXPECT_NE(setup.error().message.find("--draft MODEL"), std::string::npos);
}

// The verification pass computes every row as a decode step would: the same bits, so greedy
// speculative output cannot differ from plain greedy output even at a near-tie. (A prefill chunk
// attends through another kernel, whose sums round differently in the last bits.) 40 rows: from
// 32 on, a prefill of float weights takes other matmul kernels too (cpu::kStreamTokens), which
// rows fed as decode steps must not (--draft-max up to 64).
TEST(Speculative, FeedAsDecodeStepsGivesTheBitsOfOneTokenFeeds) {
  std::vector<std::string> paths = {kDemo};
  for (const char* name : kReferenceModels) paths.push_back(kReference + name);
  for (const int rows : {5, 40}) {
    std::vector<int32_t> tokens = {1, 538};
    for (int i = 0; i < rows; ++i) tokens.push_back(2 + (i * 37) % 900);
    for (const std::string& path : paths) {
      SCOPED_TRACE(path + ", " + std::to_string(rows) + " rows");
      auto engine = Load(path);
      ASSERT_TRUE(engine);
      Session batched(*engine);
      ASSERT_TRUE(batched.Feed(std::span(tokens).first(2)).has_value());
      auto fed = batched.FeedAsDecodeSteps(std::span(tokens).subspan(2));
      ASSERT_TRUE(fed.has_value()) << fed.error().message;
      const std::vector<float> together(fed->begin(), fed->end());  // [rows, vocab]
      batched.Reset();
      Session single(*engine);
      ASSERT_TRUE(single.Feed(std::span(tokens).first(2)).has_value());
      const size_t vocab = engine->config().vocab;
      for (size_t i = 2; i < tokens.size(); ++i) {
        auto row = single.Feed(std::span(tokens).subspan(i, 1));
        ASSERT_TRUE(row.has_value());
        const std::vector<float> alone(row->begin(), row->end());
        const std::vector<float> same(together.begin() + (i - 2) * vocab,
                                      together.begin() + (i - 1) * vocab);
        ASSERT_EQ(same, alone) << "token " << i;
      }
    }
  }
}

}  // namespace
}  // namespace kite
