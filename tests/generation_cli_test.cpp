// `kite run`, `kite chat`, `kite eval ppl`, `--config run.json` and `kite inspect --placement` end to
// end. Expected values come from the PyTorch reference (testdata/reference/*/golden.json,
// models/demo/README.md, testdata/eval/*.ppl.json from tools/reference_ppl.py), or from a second
// run of kite whose result must agree with the first (prefix reuse, /save and /load).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_runner.h"

namespace kite::testing {
namespace {

using nlohmann::json;

json ReadJson(const std::string& relative) {
  std::ifstream in(SourcePath(relative));
  return json::parse(in);
}

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("kite_gen_cli_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Greedy generation reproduces the reference continuation of each reference model (untied and
// tied embeddings, GQA, MQA, biases, llama3 and linear rope scaling).
// On the default backend (cpu, all cores), on cpu with one thread, and on ref.
TEST(CliRun, GreedyContinuationMatchesPytorchReference) {
  const std::vector<std::vector<std::string>> backends = {{}, {"-t", "1"}, {"--backend", "ref"}};
  for (const std::string model : {"llama-gqa", "qwen2-bias", "llama3-rope", "mistral"}) {
    const json golden = ReadJson("testdata/reference/" + model + "/golden.json");
    const std::vector<int> expected = golden["greedy"]["new_tokens"];
    for (const std::vector<std::string>& backend : backends) {
      std::vector<std::string> args = {"run",
                                       "-m",
                                       SourcePath("testdata/reference/" + model),
                                       "-p",
                                       golden["prompt"],
                                       "--temp",
                                       "0",
                                       "-n",
                                       std::to_string(expected.size()),
                                       "--kv-type",
                                       "f32",
                                       "--json"};
      args.insert(args.end(), backend.begin(), backend.end());
      const std::string what = model + (backend.empty() ? "" : " " + backend[0] + " " + backend[1]);
      CommandResult result = RunKite(args);
      ASSERT_EQ(result.exit_code, 0) << what << ": " << result.err;
      const json out = json::parse(result.out);
      EXPECT_EQ(out["prompt_ids"], golden["input_ids"]) << what;
      EXPECT_EQ(out["ids"].get<std::vector<int>>(), expected) << what;
      EXPECT_EQ(out["stats"]["generated_tokens"], expected.size()) << what;
      EXPECT_EQ(out["stats"]["backend"],
                backend.size() == 2 && backend[0] == "--backend" ? "ref" : "cpu")
          << what;
    }
  }
}

// The demo model's greedy sample in its README (PyTorch, float32 on the F16 weights); the raw
// text stream is the prompt's continuation.
TEST(CliRun, DemoModelGreedySampleMatchesReference) {
  CommandResult result = RunKite({"run", "-m", SourcePath("models/demo"), "-p",
                                  "The secret of life is", "--temp", "0", "-n", "12"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, " a man who is a\ncompet of the world\n");  // ids 261 .. 264, then "\n"
  EXPECT_TRUE(Contains(result.err, "generated 12 tokens")) << result.err;
  EXPECT_TRUE(Contains(result.err, "tok/s")) << result.err;
}

TEST(CliRun, SamplingIsReproducibleBySeedAndStopsOnStopString) {
  const std::vector<std::string> args = {
      "run", "-m",    SourcePath("models/demo"), "-p", "Love is", "-n", "24", "--temp",
      "1.0", "--json"};
  auto with_seed = [&](const std::string& seed) {
    std::vector<std::string> a = args;
    a.insert(a.end(), {"--seed", seed});
    CommandResult r = RunKite(a);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out)["ids"];
  };
  const json first = with_seed("11");
  EXPECT_EQ(with_seed("11"), first);
  EXPECT_NE(with_seed("12"), first);  // 24 tokens at temperature 1 over a 4096 vocabulary

  // Greedy text from the README sample stops before "world".
  CommandResult stopped =
      RunKite({"run", "-m", SourcePath("models/demo"), "-p", "The secret of life is", "--temp", "0",
               "-n", "40", "--stop", "world", "--json"});
  ASSERT_EQ(stopped.exit_code, 0) << stopped.err;
  const json out = json::parse(stopped.out);
  EXPECT_EQ(out["text"], " a man who is a\ncompet of the ");
  EXPECT_EQ(out["stats"]["stop_reason"], "stop_string");
}

// --chat renders the model's template (demo: "{{bos}}role: content\n...assistant:") around the
// prompt; the ids are those of that text, tokenized as `kite tokenize` does.
TEST(CliRun, ChatFlagWrapsThePromptInTheTemplate) {
  const std::string model = SourcePath("models/demo");
  CommandResult run = RunKite({"run", "-m", model, "-p", "Tell me a joke", "--chat", "--system",
                               "Be brief", "-n", "1", "--temp", "0", "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  // BOS from the template's "{{ bos_token }}" is the BOS `kite tokenize` adds.
  CommandResult tokens = RunKite({"tokenize", "-m", model, "--json"},
                                 "system: Be brief\nuser: Tell me a joke\nassistant:");
  ASSERT_EQ(tokens.exit_code, 0) << tokens.err;
  EXPECT_EQ(json::parse(run.out)["prompt_ids"], json::parse(tokens.out));
}

TEST(CliRun, PromptLongerThanContextIsAnErrorUnlessTruncated) {
  const std::string model = SourcePath("models/demo");
  std::string prompt;
  for (int i = 0; i < 40; ++i) prompt += "The quick brown fox jumps over the lazy dog. ";
  CommandResult refused = RunKite({"run", "-m", model, "-p", prompt, "--ctx", "64", "-n", "4"});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_TRUE(Contains(refused.err, "the context holds 64")) << refused.err;
  EXPECT_TRUE(Contains(refused.err, "--truncate")) << refused.err;

  CommandResult kept = RunKite({"run", "-m", model, "-p", prompt, "--ctx", "64", "-n", "4",
                                "--temp", "0", "--truncate", "--json"});
  ASSERT_EQ(kept.exit_code, 0) << kept.err;
  const json out = json::parse(kept.out);
  EXPECT_EQ(out["prompt_ids"].size(), 60u);  // 64 - 4 to generate
  EXPECT_EQ(out["prompt_ids"][0], 1);        // BOS kept
  EXPECT_EQ(out["ids"].size(), 4u);
}

TEST(CliRun, BadModelPathNamesIt) {
  CommandResult result = RunKite({"run", "-m", "/no/such/model", "-p", "hi"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_TRUE(Contains(result.err, "/no/such/model")) << result.err;
  CommandResult no_prompt = RunKite({"run", "-m", SourcePath("models/demo")});
  EXPECT_NE(no_prompt.exit_code, 0);
  EXPECT_TRUE(Contains(no_prompt.err, "-p")) << no_prompt.err;
}

// A run.json supplies the settings; a flag given on the command line overrides its field.
TEST(CliRunConfig, FileSettingsApplyAndFlagsOverride) {
  const std::string path = TempPath("run.json");
  std::ofstream(path) << json{
      {"model", SourcePath("models/demo")},
      {"n_predict", 5},
      {"threads", 1},
      {"sampler",
       {{"temp", 0.0}}}}.dump();
  CommandResult from_file = RunKite({"run", "--config", path, "-p", "The secret of life is", "--json"});
  ASSERT_EQ(from_file.exit_code, 0) << from_file.err;
  const json greedy5 = json::parse(from_file.out)["ids"];
  EXPECT_EQ(greedy5, json({261, 439, 452, 304, 261}));  // README greedy ids
  CommandResult overridden =
      RunKite({"run", "--config", path, "-p", "The secret of life is", "-n", "2", "--json"});
  ASSERT_EQ(overridden.exit_code, 0) << overridden.err;
  EXPECT_EQ(json::parse(overridden.out)["ids"], json({261, 439}));
  std::filesystem::remove(path);
}

TEST(CliRunConfig, UnknownKeysAndMalformedFilesNameTheProblem) {
  const std::string path = TempPath("bad.json");
  std::ofstream(path) << R"({"model": "x", "sampler": {"temp": 0, "tmep": 1}})";
  CommandResult unknown = RunKite({"run", "--config", path, "-p", "hi"});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_TRUE(Contains(unknown.err, path)) << unknown.err;
  EXPECT_TRUE(Contains(unknown.err, "\"tmep\"")) << unknown.err;

  std::ofstream(path) << R"({"model": "x", "context": "big"})";
  CommandResult ill_typed = RunKite({"run", "--config", path, "-p", "hi"});
  EXPECT_EQ(ill_typed.exit_code, 1);
  EXPECT_TRUE(Contains(ill_typed.err, "context")) << ill_typed.err;

  std::ofstream(path) << R"({"model": )";
  CommandResult malformed = RunKite({"run", "--config", path, "-p", "hi"});
  EXPECT_EQ(malformed.exit_code, 1);
  EXPECT_TRUE(Contains(malformed.err, "line 1")) << malformed.err;
  std::filesystem::remove(path);
}

// Perplexity of the demo model on held-out fortunes, windows of 64, against
// tools/reference_ppl.py (float32; Kite's ref accumulates in double, F16 KV cache).
TEST(CliEval, PerplexityMatchesPytorchReference) {
  const json golden = ReadJson("testdata/eval/demo-heldout-head.ppl.json");
  CommandResult result =
      RunKite({"eval", "ppl", "-m", SourcePath("models/demo"), "-f",
               SourcePath("testdata/eval/demo-heldout-head.txt"), "--ctx", "64", "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const json out = json::parse(result.out);
  EXPECT_EQ(out["tokens"], golden["tokens"]);
  EXPECT_EQ(out["windows"], golden["windows"]);
  EXPECT_NEAR(out["ppl"].get<double>(), golden["ppl"].get<double>(),
              1e-4 * golden["ppl"].get<double>());
  // Kite reports the total NLL; the reference the mean per token.
  EXPECT_NEAR(out["nll"].get<double>() / out["tokens"].get<double>(), golden["nll"].get<double>(),
              1e-4);
}

TEST(CliEval, MissingTextFileIsNamed) {
  CommandResult result = RunKite(
      {"eval", "ppl", "-m", SourcePath("models/demo"), "-f", "/no/such.txt", "--ctx", "64"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_TRUE(Contains(result.err, "/no/such.txt")) << result.err;
}

// Greedy replies of at most 8 tokens; each reply is followed by one newline.
std::vector<std::string> ChatArgs(const std::string& model) {
  return {"chat", "-m", model, "--temp", "0", "-n", "8"};
}

TEST(CliChat, ResetForgetsAndSaveLoadRestoresTheConversation) {
  const std::string model = SourcePath("models/demo");
  CommandResult once = RunKite(ChatArgs(model), "Hello there\n");
  ASSERT_EQ(once.exit_code, 0) << once.err;
  ASSERT_GT(once.out.size(), 1u);
  // After /reset the same question gets the same greedy reply.
  CommandResult twice = RunKite(ChatArgs(model), "Hello there\n/reset\nHello there\n");
  ASSERT_EQ(twice.exit_code, 0) << twice.err;
  EXPECT_EQ(twice.out, once.out + once.out);
  EXPECT_TRUE(Contains(twice.err, "conversation reset")) << twice.err;

  const std::string saved = TempPath("chat.kv");
  CommandResult save = RunKite(ChatArgs(model), "Hello there\n/save " + saved + "\n");
  ASSERT_EQ(save.exit_code, 0) << save.err;
  EXPECT_TRUE(std::filesystem::exists(saved));
  EXPECT_TRUE(std::filesystem::exists(saved + ".json"));

  // Both turns in one process; the second turn reuses the first turn's KV cache.
  CommandResult straight = RunKite(ChatArgs(model), "Hello there\nWhat now?\n/stats\n");
  ASSERT_EQ(straight.exit_code, 0) << straight.err;
  ASSERT_EQ(straight.out.substr(0, once.out.size()), once.out);
  EXPECT_TRUE(Contains(straight.err, "context ")) << straight.err;  // /stats
  EXPECT_FALSE(Contains(straight.err, "(0 reused)")) << straight.err;
  // The restored conversation answers the second turn as the uninterrupted one did.
  CommandResult restored = RunKite(ChatArgs(model), "/load " + saved + "\nWhat now?\n");
  ASSERT_EQ(restored.exit_code, 0) << restored.err;
  EXPECT_EQ(once.out + restored.out, straight.out);
  std::filesystem::remove(saved);
  std::filesystem::remove(saved + ".json");

  CommandResult missing = RunKite(ChatArgs(model), "/load /no/such/file\n");
  EXPECT_TRUE(Contains(missing.err, "/no/such/file")) << missing.err;
}

TEST(CliInspect, PlacementShowsEveryNodeOnABackend) {
  CommandResult result =
      RunKite({"inspect", SourcePath("testdata/reference/llama-gqa"), "--placement", "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const json out = json::parse(result.out);
  ASSERT_EQ(out["graphs"].size(), 2u);
  EXPECT_EQ(out["graphs"][0]["phase"], "decode");
  EXPECT_EQ(out["graphs"][1]["phase"], "prefill");
  // 2 layers x (norm, q, k, v, rope q, rope k, attention, o, add, norm, gate, up, swiglu, down,
  // add) + embedding + final norm + lm_head.
  const json& placed = out["graphs"][0]["placement"];
  EXPECT_EQ(placed.size(), 2u * 15u + 3u);
  for (const json& node : placed) EXPECT_FALSE(node["backend"].get<std::string>().empty());

  CommandResult text =
      RunKite({"inspect", SourcePath("testdata/reference/llama-gqa"), "--placement"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_TRUE(Contains(text.out, "blk.1.attn")) << text.out;

  CommandResult unknown = RunKite(
      {"inspect", SourcePath("testdata/reference/llama-gqa"), "--placement", "--backend", "tpu"});
  EXPECT_EQ(unknown.exit_code, 2);  // refused by the settings table, as in run and chat
  EXPECT_TRUE(Contains(unknown.err, "--backend tpu: must be one of ref, cpu")) << unknown.err;
}

}  // namespace
}  // namespace kite::testing
