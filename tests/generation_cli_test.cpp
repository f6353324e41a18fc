// `kite run`, `kite chat`, `kite eval ppl`, `--config run.json` and `kite inspect --placement` end to
// end. Expected values come from the PyTorch reference (testdata/reference/*/golden.json,
// models/demo/README.md, testdata/eval/*.ppl.json from tools/reference_ppl.py), or from a second
// run of kite whose result must agree with the first (prefix reuse, /save and /load).
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <regex>

#include "cli_runner.h"
#include "tokenizer/tokenizer.h"

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

// The context check is the runtime's, the same for every caller: a prompt that fills the context
// exactly still gets the one token its last position's logits give.
TEST(CliRun, PromptAsLongAsTheContextGetsOneToken) {
  const std::string model = SourcePath("models/demo");
  const std::string prompt = "The quick brown fox jumps over the lazy dog.";
  CommandResult tokens = RunKite({"tokenize", "-m", model, "-p", prompt, "--json"});
  ASSERT_EQ(tokens.exit_code, 0) << tokens.err;
  const size_t n = json::parse(tokens.out).size();
  CommandResult run = RunKite({"run", "-m", model, "-p", prompt, "--ctx", std::to_string(n), "-n",
                               "4", "--temp", "0", "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const json out = json::parse(run.out);
  EXPECT_EQ(out["prompt_ids"].size(), n);
  EXPECT_EQ(out["ids"].size(), 1u);
  EXPECT_EQ(out["stats"]["stop_reason"], "context_full");
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
  EXPECT_FALSE(Contains(straight.err, "(0 reused,")) << straight.err;
  // The restored conversation answers the second turn as the uninterrupted one did.
  CommandResult restored = RunKite(ChatArgs(model), "/load " + saved + "\nWhat now?\n");
  ASSERT_EQ(restored.exit_code, 0) << restored.err;
  EXPECT_EQ(once.out + restored.out, straight.out);
  std::filesystem::remove(saved);
  std::filesystem::remove(saved + ".json");

  CommandResult missing = RunKite(ChatArgs(model), "/load /no/such/file\n");
  EXPECT_TRUE(Contains(missing.err, "/no/such/file")) << missing.err;
}

// What one /stats line of `kite chat` says about the last turn.
struct TurnStats {
  int context = 0;  // tokens in the KV cache after the turn
  int prompt = 0, reused = 0, computed = 0, generated = 0;
  std::string stop;
};

std::vector<TurnStats> StatsLines(const std::string& err) {
  static const std::regex line(
      R"(context (\d+)/\d+ tokens \| last turn: prompt (\d+) \((\d+) reused, (\d+) computed\), )"
      R"([^,]*, (\d+) generated, [^,]*, stop: (\S+))");
  std::vector<TurnStats> stats;
  for (auto it = std::sregex_iterator(err.begin(), err.end(), line); it != std::sregex_iterator();
       ++it) {
    const std::smatch& m = *it;
    stats.push_back({std::stoi(m[1]), std::stoi(m[2]), std::stoi(m[3]), std::stoi(m[4]),
                     std::stoi(m[5]), m[6]});
  }
  return stats;
}

// Each new turn of a chat computes only itself: the KV of every earlier prompt and reply (as
// generated) is reused, and what is computed is the template's text after the last reply (the
// end of the assistant's turn, the new user turn, the assistant header), written out here by
// hand for each template, plus the reply's last token when -n cut the reply before it was fed.
// On the demo's own template ("role: content\n", reply after "assistant:"), ChatML and Llama 3.
TEST(CliChat, EachTurnComputesOnlyTheNewTurn) {
  struct Case {
    std::vector<std::string> flags;
    std::function<std::string(const std::string&)> new_turn;
  };
  const std::vector<Case> cases = {
      {{}, [](const std::string& m) { return "\nuser: " + m + "\nassistant:"; }},
      {{"--chat-template", "chatml"},
       [](const std::string& m) {
         return "<|im_end|>\n<|im_start|>user\n" + m + "<|im_end|>\n<|im_start|>assistant\n";
       }},
      {{"--chat-template", "llama3"},
       [](const std::string& m) {
         return "<|eot_id|><|start_header_id|>user<|end_header_id|>\n\n" + m +
                "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n";
       }},
  };
  const std::string model = SourcePath("models/demo");
  auto tokenizer = Tokenizer::Load(model);
  ASSERT_TRUE(tokenizer.has_value()) << tokenizer.error().message;
  const std::vector<std::string> messages = {"Hello there", "What is your name?",
                                             "Tell me a story about a dragon."};
  for (const Case& c : cases) {
    std::vector<std::string> args = ChatArgs(model);
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    std::string input;
    for (const std::string& message : messages) input += message + "\n/stats\n";
    CommandResult result = RunKite(args, input);
    ASSERT_EQ(result.exit_code, 0) << result.err;
    const std::vector<TurnStats> stats = StatsLines(result.err);
    ASSERT_EQ(stats.size(), messages.size()) << result.err;
    EXPECT_EQ(stats[0].reused, 0);
    EXPECT_EQ(stats[0].computed, stats[0].prompt);
    for (size_t turn = 1; turn < messages.size(); ++turn) {
      const TurnStats& before = stats[turn - 1];
      const TurnStats& now = stats[turn];
      const int unfed = before.prompt + before.generated - before.context;
      const int new_turn =
          static_cast<int>((*tokenizer)->EncodeContinuation(c.new_turn(messages[turn]))->size());
      const std::string what = (c.flags.empty() ? "demo template" : c.flags[1]) + ", turn " +
                               std::to_string(turn + 1) + "\n" + result.err;
      EXPECT_EQ(now.reused, before.context) << what;
      EXPECT_EQ(now.computed, unfed + new_turn) << what;
      EXPECT_EQ(now.prompt, before.prompt + before.generated + new_turn) << what;
    }
  }
}

// `kite chat` with its stdin, stdout and stderr as pipes, so that a test can signal it in the
// middle of a reply.
class ChatProcess {
 public:
  explicit ChatProcess(const std::vector<std::string>& args) {
    ::signal(SIGPIPE, SIG_IGN);  // a write to a kite that died fails instead of killing the test
    int in[2], out[2], err[2];
    if (::pipe(in) || ::pipe(out) || ::pipe(err)) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(in[0], 0);
      ::dup2(out[1], 1);
      ::dup2(err[1], 2);
      for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]}) ::close(fd);
      ExecProgram(KITE_BINARY, args);
    }
    ::close(in[0]);
    ::close(out[1]);
    ::close(err[1]);
    in_ = in[1];
    fds_[0] = {out[0], POLLIN, 0};
    fds_[1] = {err[0], POLLIN, 0};
  }
  ~ChatProcess() {
    if (pid_ > 0 && !finished_) {
      ::kill(pid_, SIGKILL);
      Finish();
    }
  }

  void Write(const std::string& text) {
    for (size_t done = 0; done < text.size();) {
      const ssize_t n = ::write(in_, text.data() + done, text.size() - done);
      if (n <= 0) return;
      done += static_cast<size_t>(n);
    }
  }
  // Reads until `ready` holds; false when it does not within `seconds` or the pipes close.
  bool WaitFor(const std::function<bool()>& ready, int seconds) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (!ready()) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0 || !Pump(static_cast<int>(left.count()))) return false;
    }
    return true;
  }
  void Signal(int signal) { ::kill(pid_, signal); }
  // Closes stdin, reads to the end; the exit status (128 + N for signal N).
  int Finish() {
    if (in_ >= 0) ::close(in_);
    in_ = -1;
    while (Pump(-1)) {
    }
    int status = 0;
    ::waitpid(pid_, &status, 0);
    finished_ = true;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  std::string out, err;

 private:
  // One poll round; false when both pipes are closed or nothing came within timeout_ms.
  bool Pump(int timeout_ms) {
    if (fds_[0].fd < 0 && fds_[1].fd < 0) return false;
    const int ready = ::poll(fds_, 2, timeout_ms);
    if (ready < 0 && errno == EINTR) return true;
    if (ready <= 0) return false;
    std::string* sinks[2] = {&out, &err};
    for (int i = 0; i < 2; ++i) {
      if (fds_[i].fd < 0 || !(fds_[i].revents & (POLLIN | POLLHUP))) continue;
      char buffer[65536];
      const ssize_t n = ::read(fds_[i].fd, buffer, sizeof(buffer));
      if (n > 0) {
        sinks[i]->append(buffer, static_cast<size_t>(n));
      } else {
        ::close(fds_[i].fd);
        fds_[i].fd = -1;
      }
    }
    return true;
  }

  pid_t pid_ = -1;
  int in_ = -1;
  pollfd fds_[2] = {{-1, POLLIN, 0}, {-1, POLLIN, 0}};
  bool finished_ = false;
};

// Ctrl-C in the middle of a reply stops it and returns to the prompt; the partial reply stays in
// the conversation (the next turn reuses its KV) and the next message is answered. -n is large
// and the context long, so each reply runs until it is stopped.
TEST(CliChat, CtrlCStopsTheReplyAndKeepsTheConversation) {
  ChatProcess chat({"chat", "-m", SourcePath("models/demo"), "--temp", "0", "-n", "100000",
                    "--ctx", "2048"});
  for (const std::string message : {"Tell me a long story", "And then?"}) {
    const size_t before = chat.out.size();
    const size_t stats_before = StatsLines(chat.err).size();
    chat.Write(message + "\n");
    ASSERT_TRUE(chat.WaitFor([&] { return chat.out.size() > before; }, 120))
        << "no reply to " << message << "\n" << chat.err;
    chat.Signal(SIGINT);
    chat.Write("/stats\n");
    ASSERT_TRUE(chat.WaitFor([&] { return StatsLines(chat.err).size() > stats_before; }, 120))
        << "no /stats after Ctrl-C\n" << chat.err;
  }
  EXPECT_EQ(chat.Finish(), 0) << chat.err;
  const std::vector<TurnStats> stats = StatsLines(chat.err);
  ASSERT_EQ(stats.size(), 2u) << chat.err;
  for (const TurnStats& turn : stats) EXPECT_EQ(turn.stop, "callback") << chat.err;
  EXPECT_GT(stats[0].generated, 0);
  EXPECT_LT(stats[0].context, 2000) << "the reply ran to the end of the context";
  EXPECT_EQ(stats[1].reused, stats[0].context) << chat.err;  // the partial reply is kept
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
  EXPECT_TRUE(Contains(unknown.err, "--backend tpu: must be one or more of ref, cpu")) << unknown.err;

  // A preference list: ref first takes every node.
  CommandResult listed = RunKite({"inspect", SourcePath("testdata/reference/llama-gqa"),
                                  "--placement", "--backend", "ref,cpu"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_FALSE(Contains(listed.out, " cpu ")) << listed.out;
}

}  // namespace
}  // namespace kite::testing
