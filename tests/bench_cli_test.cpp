// `kite bench` end to end on the tiny reference models: the JSON has llama-bench's fields with
// the right types, echoes the flags, and its model size and parameter count match what the
// safetensors header says (read here, not with Kite's loader). Timings are only checked for
// consistency with each other, never against a speed.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cli_runner.h"

namespace kite::testing {
namespace {

using nlohmann::json;

struct HeaderTotals {
  uint64_t params = 0;
  uint64_t bytes = 0;
};

// Sums element counts and data extents over every tensor of a safetensors file: an 8-byte
// little-endian header length, then a JSON object name -> {dtype, shape, data_offsets}.
HeaderTotals SafetensorsTotals(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  unsigned char size_bytes[8] = {};
  in.read(reinterpret_cast<char*>(size_bytes), 8);
  uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i) header_size = header_size << 8 | size_bytes[i];
  std::string header(header_size, '\0');
  in.read(header.data(), static_cast<std::streamsize>(header_size));
  const json j = json::parse(header, nullptr, /*allow_exceptions=*/false);
  HeaderTotals totals;
  EXPECT_TRUE(j.is_object()) << path;
  if (!j.is_object()) return totals;
  for (const auto& [name, tensor] : j.items()) {
    if (name == "__metadata__") continue;
    uint64_t elements = 1;
    for (const json& d : tensor["shape"]) elements *= d.get<uint64_t>();
    totals.params += elements;
    totals.bytes +=
        tensor["data_offsets"][1].get<uint64_t>() - tensor["data_offsets"][0].get<uint64_t>();
  }
  return totals;
}

json ParseOutput(const CommandResult& result) {
  const json j = json::parse(result.out, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(j.is_discarded()) << result.out;
  return j;
}

void ExpectTestObject(const json& test, int n_prompt, int n_gen, int threads, int reps,
                      const std::string& model, const HeaderTotals& totals) {
  ASSERT_TRUE(test.is_object());
  for (const char* key : {"n_prompt", "n_gen", "n_threads", "avg_ns", "stddev_ns", "model_size",
                          "model_n_params", "peak_rss_bytes", "load_ns"}) {
    ASSERT_TRUE(test.contains(key) && test[key].is_number_integer()) << key << ": " << test.dump();
  }
  for (const char* key : {"avg_ts", "stddev_ts"}) {
    ASSERT_TRUE(test.contains(key) && test[key].is_number_float()) << key;
  }
  for (const char* key : {"model_filename", "model_type", "backends"}) {
    ASSERT_TRUE(test.contains(key) && test[key].is_string()) << key;
  }
  ASSERT_TRUE(test["samples_ns"].is_array() && test["samples_ts"].is_array());

  EXPECT_EQ(test["n_prompt"], n_prompt);
  EXPECT_EQ(test["n_gen"], n_gen);
  EXPECT_EQ(test["n_threads"], threads);
  EXPECT_EQ(test["model_filename"], model);
  EXPECT_EQ(test["backends"], "ref");
  EXPECT_EQ(test["model_n_params"].get<uint64_t>(), totals.params);
  EXPECT_EQ(test["model_size"].get<uint64_t>(), totals.bytes);
  EXPECT_GT(test["peak_rss_bytes"].get<uint64_t>(), 0u);
  EXPECT_GT(test["load_ns"].get<uint64_t>(), 0u);

  ASSERT_EQ(test["samples_ns"].size(), static_cast<size_t>(reps));
  ASSERT_EQ(test["samples_ts"].size(), static_cast<size_t>(reps));
  double sum_ts = 0, sum_ns = 0;
  for (int i = 0; i < reps; ++i) {
    ASSERT_TRUE(test["samples_ns"][i].is_number_unsigned());
    const double ns = test["samples_ns"][i].get<double>();
    ASSERT_GT(ns, 0);
    // llama-bench's definition: tokens of the test * 1e9 / nanoseconds of the repetition.
    EXPECT_NEAR(test["samples_ts"][i].get<double>(), (n_prompt + n_gen) * 1e9 / ns,
                1e-6 * (n_prompt + n_gen) * 1e9 / ns);
    sum_ts += test["samples_ts"][i].get<double>();
    sum_ns += ns;
  }
  EXPECT_GT(test["avg_ts"].get<double>(), 0);
  EXPECT_NEAR(test["avg_ts"].get<double>(), sum_ts / reps, 1e-6 * sum_ts / reps);
  EXPECT_NEAR(test["avg_ns"].get<double>(), sum_ns / reps, 1.0);
  EXPECT_GE(test["stddev_ts"].get<double>(), 0);
}

TEST(CliBench, JsonHasLlamaBenchFieldsAndEchoesFlags) {
  // llama-gqa has its own lm_head; qwen2-bias ties it to the embedding, which counts once.
  for (const std::string name : {"llama-gqa", "qwen2-bias"}) {
    const std::string model = SourcePath("testdata/reference/" + name);
    const HeaderTotals totals = SafetensorsTotals(model + "/model.safetensors");
    ASSERT_GT(totals.params, 0u);
    CommandResult result = RunKite({"bench", "-m", model, "-p", "8", "-n", "4", "-r", "2", "-t",
                                    "1", "--backend", "ref", "--json"});
    ASSERT_EQ(result.exit_code, 0) << result.err;
    const json out = ParseOutput(result);
    ASSERT_TRUE(out.is_array());
    ASSERT_EQ(out.size(), 2u) << out.dump();
    ExpectTestObject(out[0], 8, 0, 1, 2, model, totals);
    ExpectTestObject(out[1], 0, 4, 1, 2, model, totals);
  }
}

TEST(CliBench, CommaListsRunEachLengthAndZeroSkips) {
  const std::string model = SourcePath("testdata/reference/llama-gqa");
  CommandResult result = RunKite({"bench", "-m", model, "-p", "4,0,6", "-n", "0,3", "-r", "1", "-t",
                                  "1", "--backend", "ref", "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const json out = ParseOutput(result);
  ASSERT_TRUE(out.is_array());
  ASSERT_EQ(out.size(), 3u) << out.dump();
  const int expected[3][2] = {{4, 0}, {6, 0}, {0, 3}};  // every pp test, then every tg test
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(out[i]["n_prompt"], expected[i][0]);
    EXPECT_EQ(out[i]["n_gen"], expected[i][1]);
    EXPECT_EQ(out[i]["n_threads"], 1);  // not the default 2; above the CPUs it would be clamped
    EXPECT_EQ(out[i]["samples_ns"].size(), 1u);
  }
}

// --parallel: each tg test once per batch size, the t/s the aggregate of the step's sessions.
TEST(CliBench, ParallelRunsEachGenerationTestPerBatchSize) {
  const std::string model = SourcePath("testdata/reference/llama-gqa");
  CommandResult result = RunKite({"bench", "-m", model, "-p", "4", "-n", "3", "-r", "1", "-t", "1",
                                  "--parallel", "1,4", "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const json out = ParseOutput(result);
  ASSERT_TRUE(out.is_array());
  ASSERT_EQ(out.size(), 3u) << out.dump();  // pp4 alone, then tg3 at 1 and at 4 sessions
  EXPECT_EQ(out[0]["n_prompt"], 4);
  EXPECT_EQ(out[0]["n_parallel"], 1);
  for (int i = 1; i < 3; ++i) {
    const int parallel = i == 1 ? 1 : 4;
    EXPECT_EQ(out[i]["n_gen"], 3);
    EXPECT_EQ(out[i]["n_parallel"], parallel);
    const double ns = out[i]["samples_ns"][0].get<double>();
    EXPECT_NEAR(out[i]["samples_ts"][0].get<double>(), 3 * parallel * 1e9 / ns, 1e-6 * 1e9 / ns);
  }
}

TEST(CliBench, MarkdownTable) {
  const std::string model = SourcePath("testdata/reference/llama-gqa");
  CommandResult result =
      RunKite({"bench", "-m", model, "-p", "5", "-n", "2", "-r", "1", "--backend", "ref"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  std::istringstream lines(result.out);
  std::string header, rule, pp, tg;
  std::getline(lines, header);
  std::getline(lines, rule);
  std::getline(lines, pp);
  std::getline(lines, tg);
  for (const char* column : {"model", "size", "params", "backend", "threads", "test", "t/s"}) {
    EXPECT_NE(header.find(column), std::string::npos) << column << " in " << header;
  }
  EXPECT_EQ(rule.rfind("| --", 0), 0u) << rule;
  EXPECT_NE(pp.find(" pp5 |"), std::string::npos) << pp;
  EXPECT_NE(pp.find("±"), std::string::npos) << pp;
  EXPECT_NE(tg.find(" tg2 |"), std::string::npos) << tg;
  EXPECT_NE(result.out.find("peak RSS"), std::string::npos);
  EXPECT_NE(result.out.find("load "), std::string::npos);
}

// --profile: every graph run of the timed repetitions is in the profile. A Llama layer has 7
// matmuls (q, k, v, o, gate, up, down) and the model one lm_head, all f32 here, so a run makes
// 7 * layers + 1 of them; a pp test is one run a repetition, a tg test one run a token. The ops'
// time fits inside the repetitions' time.
TEST(CliBench, ProfileCountsTheMatmulsOfEveryRun) {
  const std::string model = SourcePath("testdata/reference/llama-gqa");
  std::ifstream config_file(model + "/config.json");
  const json config = json::parse(config_file, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(config.contains("num_hidden_layers"));
  const int64_t matmuls_per_run = 7 * config["num_hidden_layers"].get<int64_t>() + 1;
  CommandResult result = RunKite({"bench", "-m", model, "-p", "6", "-n", "3", "-r", "2",
                                  "--backend", "cpu", "--profile", "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const json out = ParseOutput(result);
  ASSERT_TRUE(out.is_array() && out.size() == 2u) << out.dump();
  const int64_t runs[2] = {2, 2 * 3};
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(out[i]["profile"].is_array()) << out[i].dump();
    int64_t matmuls = 0;
    uint64_t ops_ns = 0, test_ns = 0;
    for (const json& row : out[i]["profile"]) {
      EXPECT_EQ(row["backend"], "cpu") << row.dump();
      if (row["op"] == "matmul f32") matmuls = row["calls"].get<int64_t>();
      ops_ns += row["ns"].get<uint64_t>();
    }
    for (const json& ns : out[i]["samples_ns"]) test_ns += ns.get<uint64_t>();
    EXPECT_EQ(matmuls, runs[i] * matmuls_per_run) << out[i]["profile"].dump();
    EXPECT_GT(ops_ns, 0u);
    EXPECT_LE(ops_ns, test_ns);
  }
  CommandResult text = RunKite(
      {"bench", "-m", model, "-p", "0", "-n", "2", "-r", "1", "--backend", "cpu", "--profile"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("profile of tg2"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("matmul f32"), std::string::npos) << text.out;
}

TEST(CliBench, BadFlagsAreClearErrors) {
  const std::string model = SourcePath("testdata/reference/llama-gqa");
  struct Case {
    std::vector<std::string> args;
    int exit_code;
    std::vector<std::string> message_parts;
  };
  constexpr int kParseError = 2;  // a bad command line
  const std::vector<Case> cases = {
      {{"-r", "0"}, kParseError, {"--repetitions"}},
      {{"-t", "-1"}, kParseError, {"--threads -1: must be >= 0"}},
      {{"-t", "x"}, kParseError, {"--threads x: expected an integer"}},
      {{"-p", "4", "-n", "0", "-r", "1", "-t", "40000"}, 0, {"--threads 40000: more than the"}},
      {{"-p", "x"}, kParseError, {"--n-prompt"}},
      {{"-p", "0", "-n", "0"}, 1, {"nothing to measure"}},
      {{"-p", "8", "-n", "0", "--ctx", "4"}, 1, {"--ctx 4", "8 tokens"}},
      {{"-p", "4", "--backend", "nope"}, 1, {"nope", "ref"}},
      {{"-p", "0", "-n", "2", "--parallel", "0"}, 1, {"--parallel 0", "1 to"}},
      {{"-p", "4", "-n", "0", "--parallel", "2"}, 1, {"--parallel", "-n"}},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"bench", "-m", model};
    args.insert(args.end(), c.args.begin(), c.args.end());
    CommandResult result = RunKite(args);
    EXPECT_EQ(result.exit_code, c.exit_code) << c.args[0] << ": " << result.err;
    for (const std::string& part : c.message_parts) {
      EXPECT_NE(result.err.find(part), std::string::npos) << part << " in: " << result.err;
    }
  }
  CommandResult missing = RunKite({"bench", "-m", "/nonexistent/model.gguf", "-p", "4"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("/nonexistent/model.gguf"), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace kite::testing
