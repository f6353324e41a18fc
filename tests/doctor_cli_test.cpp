// `kite doctor`: each failure it claims to catch, made in a copy of the demo model (models/demo,
// a small Llama trained on fortunes, RoPE base 10^4) with one thing broken, and the demo itself
// passing every check. The RoPE fit and KL checks score the demo's held-out text (--text), which
// is like its training data; the built-in English prose is not (tests assert on the JSON report).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "base/half.h"
#include "cli_runner.h"

namespace kite::testing {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

class CliDoctor : public ::testing::Test {
 protected:
  // One folder per process (ctest runs each test in a process of its own, in parallel).
  static fs::path Folder() { return fs::path(::testing::TempDir()) / ("kite_doctor_" + std::to_string(getpid())); }
  static void TearDownTestSuite() { fs::remove_all(Folder()); }

  // A copy of the demo model: small files copied, the weights linked (copied when `copy_weights`).
  static fs::path CopyDemo(const std::string& name, bool copy_weights = false) {
    const fs::path out = Folder() / name;
    fs::remove_all(out);
    fs::create_directories(out);
    for (const fs::directory_entry& entry : fs::directory_iterator(SourcePath("models/demo"))) {
      const fs::path target = out / entry.path().filename();
      if (entry.path().extension() == ".safetensors" && !copy_weights) {
        fs::create_symlink(entry.path(), target);
      } else {
        fs::copy_file(entry.path(), target);
      }
    }
    return out;
  }

  // Replaces the bytes that follow the first occurrence of `key` in a file (a GGUF metadata value:
  // key, then its type and value).
  static void PatchAfter(const fs::path& path, const std::string& key, const std::string& bytes) {
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    std::string content((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    const size_t at = content.find(key);
    ASSERT_NE(at, std::string::npos) << key;
    file.seekp(static_cast<std::streamoff>(at + key.size()));
    file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    ASSERT_TRUE(file.good());
  }

  static json ReadJson(const fs::path& path) {
    std::ifstream in(path);
    return json::parse(in);
  }
  static void WriteText(const fs::path& path, const std::string& text) {
    fs::remove(path);
    std::ofstream(path) << text;
  }
  static void EditJson(const fs::path& path, const std::function<void(json&)>& edit) {
    json value = ReadJson(path);
    edit(value);
    WriteText(path, value.dump(2));
  }

  // Rewrites the F16 tensor `name` of a copied model.safetensors, element by element.
  static void EditF16Tensor(const fs::path& folder, const std::string& name,
                            const std::function<float(int64_t, float)>& edit) {
    std::fstream file(folder / "model.safetensors", std::ios::in | std::ios::out | std::ios::binary);
    uint64_t header_size = 0;
    file.read(reinterpret_cast<char*>(&header_size), 8);
    std::string header(header_size, '\0');
    file.read(header.data(), static_cast<std::streamsize>(header_size));
    const json info = json::parse(header).at(name);
    ASSERT_EQ(info.at("dtype"), "F16");
    const uint64_t begin = info.at("data_offsets")[0], end = info.at("data_offsets")[1];
    std::vector<uint16_t> values((end - begin) / 2);
    file.seekg(static_cast<std::streamoff>(8 + header_size + begin));
    file.read(reinterpret_cast<char*>(values.data()), static_cast<std::streamsize>(end - begin));
    for (size_t i = 0; i < values.size(); ++i) {
      values[i] = F32ToF16(edit(static_cast<int64_t>(i), F16ToF32(values[i])));
    }
    file.seekp(static_cast<std::streamoff>(8 + header_size + begin));
    file.write(reinterpret_cast<const char*>(values.data()), static_cast<std::streamsize>(end - begin));
    ASSERT_TRUE(file.good());
  }

  // `kite doctor MODEL --json ARGS...` on the demo's held-out text; the report.
  static json Doctor(const std::string& model, std::vector<std::string> args = {}, int expected_exit = -1) {
    std::vector<std::string> command = {"doctor", model, "--json", "--text", SourcePath("models/demo/heldout.txt")};
    command.insert(command.end(), args.begin(), args.end());
    const CommandResult result = RunKite(command);
    if (expected_exit >= 0) {
      EXPECT_EQ(result.exit_code, expected_exit) << result.out << result.err;
    }
    json report = json::parse(result.out, nullptr, /*allow_exceptions=*/false);
    EXPECT_FALSE(report.is_discarded()) << result.out << result.err;
    report["exit_code"] = result.exit_code;
    return report;
  }
  static json Check(const json& report, const std::string& id) {
    for (const json& check : report.at("checks")) {
      if (check.at("id") == id) return check;
    }
    ADD_FAILURE() << "no check " << id << " in " << report.dump(2);
    return json::object({{"status", "missing"}, {"summary", ""}, {"fix", ""}, {"data", json::object()}});
  }
  static bool Mentions(const json& check, const std::string& text) {
    return check.at("summary").get<std::string>().find(text) != std::string::npos;
  }
};

TEST_F(CliDoctor, HealthyModelPassesEveryCheck) {
  const json report = Doctor(SourcePath("models/demo"), {}, 0);
  EXPECT_EQ(report["status"], "pass") << report.dump(2);
  EXPECT_EQ(report["ctx"], 256);
  int checks = 0;
  for (const json& check : report["checks"]) {
    ++checks;
    if (check["id"] == "reference.kl") {
      EXPECT_EQ(check["status"], "skip");
    } else {
      EXPECT_EQ(check["status"], "pass") << check.dump(2);
      EXPECT_EQ(check["fix"], "");
    }
  }
  EXPECT_EQ(checks, 11);
  EXPECT_EQ(report["counts"]["pass"], 10);
  EXPECT_EQ(Check(report, "generation.greedy")["data"]["tokens"], 32);
  // The declared base is the best of the three.
  for (const json& base : Check(report, "rope.fit")["data"]["bases"]) {
    EXPECT_GE(base["nll"].get<double>(), Check(report, "rope.fit")["data"]["bases"][0]["nll"].get<double>());
  }
}

TEST_F(CliDoctor, TextReportPrintsOneLinePerCheckAndTheFix) {
  const fs::path model = CopyDemo("text_report");
  EditJson(model / "generation_config.json", [](json& config) { config["eos_token_id"] = 300; });
  const CommandResult result = RunKite({"doctor", model.string()});
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_NE(result.out.find("FAIL  tokenizer.special_ids"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("pass  file.compat"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("fix: make bos_token_id / eos_token_id"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("11 checks at context 256"), std::string::npos) << result.out;
}

// A GGUF in Kite's int8 layout, its format version (u32 type 4, value 1) raised to 2: a file from
// a newer Kite.
TEST_F(CliDoctor, FileFromANewerKiteFails) {
  fs::create_directories(Folder());
  const fs::path int8 = Folder() / "demo-int8-v2.gguf";
  const CommandResult quantize = RunKite({"quantize", SourcePath("models/demo"), "--type", "int8", "-o", int8.string(), "-q"});
  ASSERT_EQ(quantize.exit_code, 0) << quantize.err;
  const json before = Check(Doctor(int8.string()), "file.compat");
  EXPECT_EQ(before["status"], "pass") << before.dump(2);
  EXPECT_EQ(before["data"]["kite.quantized_gguf.version"], 1);
  PatchAfter(int8, "kite.quantized_gguf.version", std::string("\x04\0\0\0\x02\0\0\0", 8));
  const json report = Doctor(int8.string(), {}, 1);
  const json compat = Check(report, "file.compat");
  EXPECT_EQ(compat["status"], "fail");
  EXPECT_TRUE(Mentions(compat, "kite.quantized_gguf.version is 2; this Kite reads version 1")) << compat.dump(2);
  EXPECT_NE(compat["fix"].get<std::string>().find("written by a newer Kite"), std::string::npos);
  EXPECT_EQ(Check(report, "generation.greedy")["status"], "skip");
}

TEST_F(CliDoctor, ArchitectureOrGgufVersionKiteDoesNotReadFails) {
  fs::create_directories(Folder());
  const fs::path gguf = Folder() / "demo-mamba.gguf";
  const CommandResult convert = RunKite({"convert", SourcePath("models/demo"), "-o", gguf.string(), "-q"});
  ASSERT_EQ(convert.exit_code, 0) << convert.err;
  // general.architecture: type 8 (string), length 5, "llama" -> "mamba".
  PatchAfter(gguf, "general.architecture", std::string("\x08\0\0\0\x05\0\0\0\0\0\0\0mamba", 17));
  const json compat = Check(Doctor(gguf.string(), {}, 1), "file.compat");
  EXPECT_EQ(compat["status"], "fail");
  EXPECT_TRUE(Mentions(compat, "general.architecture 'mamba' is not supported")) << compat.dump(2);
  EXPECT_EQ(compat["data"]["architecture"], "mamba");

  // GGUF version 1 (32-bit counts), which Kite does not read: the u32 after the magic.
  PatchAfter(gguf, "GGUF", std::string("\x01\0\0\0", 4));
  const json report = Doctor(gguf.string(), {}, 1);
  const json old = Check(report, "file.compat");
  EXPECT_EQ(old["status"], "fail");
  EXPECT_TRUE(Mentions(old, "GGUF version 1 is not supported")) << old.dump(2);
  EXPECT_EQ(Check(report, "tokenizer.vocab")["status"], "skip");
}

TEST_F(CliDoctor, TokenizerOfAnotherModelFails) {
  const fs::path model = CopyDemo("gpt2_tokenizer");
  fs::remove(model / "tokenizer.model");
  fs::remove(model / "tokenizer_config.json");
  fs::copy_file(SourcePath("testdata/tokenizers/gpt2/tokenizer.json"), model / "tokenizer.json");
  fs::copy_file(SourcePath("testdata/tokenizers/gpt2/tokenizer_config.json"), model / "tokenizer_config.json");
  const json report = Doctor(model.string(), {}, 1);
  const json vocab = Check(report, "tokenizer.vocab");
  EXPECT_EQ(vocab["status"], "fail");
  EXPECT_TRUE(Mentions(vocab, "50257 tokens, the embedding 4096 rows")) << vocab.dump(2);
  // config.json's BOS 1 / EOS 2 are '"' and '#' in GPT-2's vocabulary.
  const json ids = Check(report, "tokenizer.special_ids");
  EXPECT_EQ(ids["status"], "fail");
  EXPECT_TRUE(Mentions(ids, "config.json names EOS 2 '#', an ordinary text token")) << ids.dump(2);
  EXPECT_EQ(Check(report, "generation.greedy")["status"], "skip");
}

TEST_F(CliDoctor, GenerationConfigEosThatDisagreesFailsBeforeItIsMerged) {
  // config.json and the tokenizer say 2 ('</s>'); generation_config.json alone says 300, a word
  // piece, which the runtime would add to the stop ids.
  const fs::path model = CopyDemo("eos_disagrees");
  EditJson(model / "generation_config.json", [](json& config) { config["eos_token_id"] = 300; });
  const json report = Doctor(model.string(), {}, 1);
  const json ids = Check(report, "tokenizer.special_ids");
  EXPECT_EQ(ids["status"], "fail");
  EXPECT_TRUE(Mentions(ids, "generation_config.json names EOS 300")) << ids.dump(2);
  EXPECT_TRUE(Mentions(ids, "EOS disagrees: tokenizer.model ends text with 2 '</s>', generation_config.json with 300"))
      << ids.dump(2);
  EXPECT_EQ(ids["data"]["tokenizer.model"]["eos"], json::array({2}));
  EXPECT_EQ(ids["data"]["generation_config.json"]["eos"], json::array({300}));

  // A special token, but not the end one: only the comparison with the tokenizer's own ids
  // (before the merge) shows it.
  EditJson(model / "generation_config.json", [](json& config) { config["eos_token_id"] = 1; });
  const json special = Check(Doctor(model.string(), {}, 1), "tokenizer.special_ids");
  EXPECT_EQ(special["status"], "fail");
  EXPECT_EQ(special["summary"], "EOS disagrees: tokenizer.model ends text with 2 '</s>', generation_config.json with 1 '<s>'");
}

// An id past the vocabulary stops the runtime's tokenizer loading; the doctor still reads each file.
TEST_F(CliDoctor, GenerationConfigEosOutsideTheVocabularyIsNamed) {
  const fs::path model = CopyDemo("eos_outside");
  EditJson(model / "generation_config.json", [](json& config) { config["eos_token_id"] = json::array({2, 5000}); });
  const json report = Doctor(model.string(), {}, 1);
  const json vocab = Check(report, "tokenizer.vocab");
  EXPECT_EQ(vocab["status"], "fail");
  EXPECT_TRUE(Mentions(vocab, "generation_config.json: field 'eos_token_id'")) << vocab.dump(2);
  const json ids = Check(report, "tokenizer.special_ids");
  EXPECT_EQ(ids["status"], "fail");
  EXPECT_TRUE(Mentions(ids, "generation_config.json names EOS id 5000, outside the tokenizer's 4096 tokens")) << ids.dump(2);
}

TEST_F(CliDoctor, BosThatDisagreesFails) {
  const fs::path model = CopyDemo("bos_disagrees");
  EditJson(model / "config.json", [](json& config) { config["bos_token_id"] = 2; });
  const json ids = Check(Doctor(model.string(), {}, 1), "tokenizer.special_ids");
  EXPECT_EQ(ids["status"], "fail");
  EXPECT_TRUE(Mentions(ids, "BOS disagrees: tokenizer.model says 1 '<s>', config.json says 2 '</s>'")) << ids.dump(2);
}

TEST_F(CliDoctor, RopeBaseTenTimesTooSmallFails) {
  const fs::path model = CopyDemo("rope_small");
  EditJson(model / "config.json", [](json& config) { config["rope_theta"] = 1000.0; });
  const json report = Doctor(model.string(), {}, 1);
  const json fit = Check(report, "rope.fit");
  EXPECT_EQ(fit["status"], "fail") << fit.dump(2);
  EXPECT_TRUE(Mentions(fit, "the weights fit base 10000 better")) << fit.dump(2);
  EXPECT_TRUE(Mentions(fit, "10x too small")) << fit.dump(2);
  EXPECT_NE(fit["fix"].get<std::string>().find("likely 10000"), std::string::npos);
}

TEST_F(CliDoctor, RopeBaseTenTimesTooLargeFails) {
  const fs::path model = CopyDemo("rope_large");
  EditJson(model / "config.json", [](json& config) { config["rope_theta"] = 100000.0; });
  const json report = Doctor(model.string(), {}, 1);
  const json fit = Check(report, "rope.fit");
  EXPECT_EQ(fit["status"], "fail") << fit.dump(2);
  EXPECT_TRUE(Mentions(fit, "the weights fit base 10000 better")) << fit.dump(2);
  EXPECT_TRUE(Mentions(fit, "10x too large")) << fit.dump(2);
  // From the config alone: the slowest of 16 pairs turns 256 * 1e5^(-30/32) = 0.0053 rad over
  // the context, below the 0.01 of a pair that carries no position.
  const json config = Check(report, "rope.config");
  EXPECT_EQ(config["status"], "warn") << config.dump(2);
  EXPECT_EQ(config["data"]["dead_pairs"], 1);
}

TEST_F(CliDoctor, ContextTheMachineCannotHoldFailsAndNamesOneThatFits) {
  // 2e9 positions of 6 layers x 4 kv heads x 32 x k,v x f16 = 3,072 bytes each: 6 TB.
  const json report = Doctor(SourcePath("models/demo"), {"--ctx", "2000000000"}, 1);
  const json memory = Check(report, "memory.context");
  EXPECT_EQ(memory["status"], "fail");
  EXPECT_TRUE(Mentions(memory, "this machine cannot hold the context")) << memory.dump(2);
  const json& data = memory["data"];
  EXPECT_EQ(data["kv_bytes_per_position"], 3072);
  const int64_t largest = data["largest_ctx"];
  EXPECT_GT(largest, 0);
  EXPECT_EQ(largest % 64, 0);
  // It fits in 90% of what this process read from /proc/meminfo, and one more page would not.
  const uint64_t budget = static_cast<uint64_t>(0.9 * data["available_bytes"].get<double>());
  const uint64_t weights = data["weights_bytes"];
  EXPECT_LE(weights + static_cast<uint64_t>(largest) * 3072, budget);
  if (largest + 64 < INT32_MAX) {
    EXPECT_GT(weights + static_cast<uint64_t>(largest + 64) * 3072, budget);
  }
  EXPECT_NE(memory["fix"].get<std::string>().find("use --ctx " + std::to_string(largest)), std::string::npos);
  // The rope checks look at the longest position asked for.
  EXPECT_EQ(Check(report, "rope.precision")["data"]["position"], 1999999999);
}

TEST_F(CliDoctor, LoopingModelFails) {
  // lm_head all zero: every logit is equal, greedy decoding picks id 0 at every step.
  const fs::path model = CopyDemo("looping", /*copy_weights=*/true);
  EditF16Tensor(model, "lm_head.weight", [](int64_t, float) { return 0.0f; });
  const json report = Doctor(model.string(), {}, 1);
  const json generation = Check(report, "generation.greedy");
  EXPECT_EQ(generation["status"], "fail") << generation.dump(2);
  EXPECT_TRUE(Mentions(generation, "greedy output falls into a loop: the last 32 tokens repeat")) << generation.dump(2);
  EXPECT_EQ(generation["data"]["loop_period"], 1);
  // A model that predicts nothing cannot tell one RoPE base from another.
  EXPECT_EQ(Check(report, "rope.fit")["status"], "warn");
}

TEST_F(CliDoctor, NanWeightsFailAndAreNamed) {
  const fs::path model = CopyDemo("nan", /*copy_weights=*/true);
  EditF16Tensor(model, "model.layers.2.mlp.down_proj.weight",
                [](int64_t i, float value) { return i == 1000 ? NAN : value; });
  const json report = Doctor(model.string(), {}, 1);
  const json generation = Check(report, "generation.greedy");
  EXPECT_EQ(generation["status"], "fail");
  EXPECT_EQ(generation["data"]["finite"], false);
  EXPECT_TRUE(Mentions(generation, "NaN")) << generation.dump(2);
  EXPECT_TRUE(Mentions(generation, "model.layers.2.mlp.down_proj.weight")) << generation.dump(2);
  EXPECT_EQ(Check(report, "rope.fit")["status"], "skip");
}

TEST_F(CliDoctor, ChatTemplateWithoutAssistantHeaderFails) {
  const fs::path model = CopyDemo("no_header");
  EditJson(model / "tokenizer_config.json", [](json& config) {
    config["chat_template"] =
        "{{ bos_token }}{% for message in messages %}{{ message['role'] }}: {{ message['content'] }}\n{% endfor %}";
  });
  const json check = Check(Doctor(model.string(), {}, 1), "tokenizer.chat_template");
  EXPECT_EQ(check["status"], "fail");
  EXPECT_TRUE(Mentions(check, "the prompt ends before the assistant's header")) << check.dump(2);
  EXPECT_EQ(check["data"]["before_reply"], "assistant: ");
}

// ChatML's template on the demo's tokenizer, which has no <|im_start|> token.
TEST_F(CliDoctor, ChatTemplateOfAnotherModelFails) {
  const fs::path model = CopyDemo("chatml");
  std::ifstream chatml(SourcePath("testdata/chat_templates/chatml.jinja"));
  const std::string chatml_template((std::istreambuf_iterator<char>(chatml)), std::istreambuf_iterator<char>());
  EditJson(model / "tokenizer_config.json", [&](json& config) { config["chat_template"] = chatml_template; });
  const json check = Check(Doctor(model.string(), {}, 1), "tokenizer.chat_template");
  EXPECT_EQ(check["status"], "fail");
  EXPECT_TRUE(Mentions(check, "the chat template writes <|im_start|>, <|im_end|>, which the tokenizer has no token for"))
      << check.dump(2);
}

TEST_F(CliDoctor, QuantizedModelAgainstItsReference) {
  const fs::path q8 = Folder() / "demo-q8_0.gguf";
  fs::create_directories(Folder());
  const CommandResult quantize = RunKite({"quantize", SourcePath("models/demo"), "--type", "q8_0", "-o", q8.string(), "-q"});
  ASSERT_EQ(quantize.exit_code, 0) << quantize.err;
  const json good = Check(Doctor(q8.string(), {"--reference", SourcePath("models/demo")}, 0), "reference.kl");
  EXPECT_EQ(good["status"], "pass") << good.dump(2);
  EXPECT_EQ(good["data"]["quantized"], true);
  EXPECT_LT(good["data"]["kld"].get<double>(), 0.01);
  EXPECT_GT(good["data"]["same_top"].get<double>(), 0.9);

  // Against a model that is not its reference (every logit equal: KL = ln 4096 - H(model)).
  const fs::path other = CopyDemo("flat_reference", /*copy_weights=*/true);
  EditF16Tensor(other, "lm_head.weight", [](int64_t, float) { return 0.0f; });
  const json bad = Check(Doctor(q8.string(), {"--reference", other.string()}, 1), "reference.kl");
  EXPECT_EQ(bad["status"], "fail") << bad.dump(2);
  EXPECT_GT(bad["data"]["kld"].get<double>(), 0.5);
}

}  // namespace
}  // namespace kite::testing
