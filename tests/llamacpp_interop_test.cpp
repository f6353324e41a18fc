// A user's first interop step: a GGUF that `kite synth` writes goes through llama.cpp's own
// quantizer (what `llama-quantize` calls) and the result loads, and generates the same greedy
// text, in Kite and in llama.cpp. llama.cpp is the pinned npm package node-llama-cpp 3.21.1
// (llama.cpp v0.4.0, its prebuilt CPU libraries), installed in tools/llamacpp by `make test`;
// the quantizer is called in this process through dlopen, the loader through node
// (tools/llamacpp/check_gguf.mjs). Without the package the test skips.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "arch_references.h"
#include "cli_runner.h"
#include "format/gguf.h"
#include "reference_golden.h"

namespace kite {
namespace {

using testing::RunKite;
using testing::RunProgram;
using testing::SourcePath;

const std::string kLibllama =
    SourcePath("tools/llamacpp/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/"
               "libllama.v0.4.0.so");

// llama_model_quantize_params field for field as include/llama.h of llama.cpp v0.4.0 (the
// release node-llama-cpp 3.21.1 bundles) declares it; the enums are int-sized.
struct LlamaQuantizeParams {
  int32_t nthread;
  int32_t ftype;                 // enum llama_ftype
  int32_t output_tensor_type;    // enum ggml_type
  int32_t token_embedding_type;  // enum ggml_type
  bool allow_requantize;
  bool quantize_output_tensor;
  bool only_copy;
  bool pure;
  bool keep_split;
  bool dry_run;
  const void* imatrix;
  const void* kv_overrides;
  const void* tensor_types;
  const int32_t* prune_layers;
  size_t max_buf_size;
};
constexpr int32_t kLlamaFtypeQ4_0 = 2;  // LLAMA_FTYPE_MOSTLY_Q4_0
constexpr int32_t kLlamaFtypeQ8_0 = 7;  // LLAMA_FTYPE_MOSTLY_Q8_0
constexpr int32_t kGgmlTypeCount = 43;  // GGML_TYPE_COUNT: "no override"

using DefaultParamsFn = LlamaQuantizeParams (*)();
using QuantizeFn = uint32_t (*)(const char*, const char*, const LlamaQuantizeParams*);
using LogFn = void (*)(int, const char*, void*);
using LogSetFn = void (*)(LogFn, void*);

void AppendLog(int /*level*/, const char* text, void* log) {
  static_cast<std::string*>(log)->append(text);
}

// The symbols of libllama this test calls. The library stays loaded until the process ends
// (ggml registers its backends in static objects).
struct Llama {
  DefaultParamsFn default_params = nullptr;
  QuantizeFn quantize = nullptr;
  LogSetFn log_set = nullptr;
};

Llama LoadLlama(std::string* error) {
  void* library = dlopen(kLibllama.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    *error = dlerror();
    return {};
  }
  Llama llama;
  llama.default_params =
      reinterpret_cast<DefaultParamsFn>(dlsym(library, "llama_model_quantize_default_params"));
  llama.quantize = reinterpret_cast<QuantizeFn>(dlsym(library, "llama_model_quantize"));
  llama.log_set = reinterpret_cast<LogSetFn>(dlsym(library, "llama_log_set"));
  if (!llama.default_params || !llama.quantize || !llama.log_set) {
    *error = kLibllama + " lacks llama_model_quantize, its default params or llama_log_set";
  }
  return llama;
}

struct Quantization {
  int32_t ftype;
  const char* name;
  DType matrices;   // what the attention and FFN weights become
  DType embedding;  // token_embd: llama.cpp keeps it at q8_0 when 576 is no multiple of 256
};

TEST(LlamaCppInteropTest, LlamaQuantizedKiteSynthFileLoadsInKiteAndLlamaCpp) {
  if (!std::filesystem::exists(kLibllama)) {
    GTEST_SKIP() << "llama.cpp is not installed (" << kLibllama
                 << " is absent): `make llamacpp` installs the pinned npm package "
                    "node-llama-cpp 3.21.1 in tools/llamacpp (make test does it first)";
  }
  std::string error;
  const Llama llama = LoadLlama(&error);
  ASSERT_TRUE(error.empty()) << error;
  std::string log;
  llama.log_set(AppendLog, &log);

  // Defaults as llama-quant.cpp sets them: a check that the struct above matches the library's.
  LlamaQuantizeParams params = llama.default_params();
  ASSERT_EQ(params.ftype, kLlamaFtypeQ8_0);
  ASSERT_EQ(params.output_tensor_type, kGgmlTypeCount);
  ASSERT_EQ(params.token_embedding_type, kGgmlTypeCount);
  ASSERT_TRUE(params.quantize_output_tensor);
  ASSERT_EQ(params.max_buf_size, size_t{8} << 30);
  params.nthread = 1;

  const std::string dir = ::testing::TempDir() + "kite_llamacpp_interop";
  std::filesystem::create_directories(dir);
  const std::string source = dir + "/synth-f16.gguf";
  const auto synth = RunKite({"synth", "--preset", "smollm2-135m", "--type", "f16", "--layers",
                              "2", "-o", source});
  ASSERT_EQ(synth.exit_code, 0) << synth.err;

  for (const Quantization& q : {Quantization{kLlamaFtypeQ4_0, "q4_0", DType::kQ4_0, DType::kQ8_0},
                                Quantization{kLlamaFtypeQ8_0, "q8_0", DType::kQ8_0, DType::kQ8_0}}) {
    SCOPED_TRACE(q.name);
    const std::string out = dir + "/llama-" + q.name + ".gguf";
    params.ftype = q.ftype;
    log.clear();
    ASSERT_EQ(llama.quantize(source.c_str(), out.c_str(), &params), 0u) << log;

    // Kite reads every tensor inside the file, with llama.cpp's types.
    auto file = GgufFile::Open(out);
    ASSERT_TRUE(file.has_value()) << file.error().message;
    EXPECT_EQ(file->FindTensor("blk.1.ffn_up.weight")->dtype, q.matrices);
    EXPECT_EQ(file->FindTensor("token_embd.weight")->dtype, q.embedding);
    const auto inspect = RunKite({"inspect", out});
    ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
    EXPECT_NE(inspect.out.find(q.name), std::string::npos) << inspect.out;

    const auto kite = RunKite({"run", "-m", out, "-p", "hi", "-n", "4", "--temp", "0"});
    ASSERT_EQ(kite.exit_code, 0) << kite.err;
    const auto llama_cpp = RunProgram("node", {SourcePath("tools/llamacpp/check_gguf.mjs"), out,
                                               "hi", "4"});
    ASSERT_EQ(llama_cpp.exit_code, 0) << llama_cpp.err << "(exit 127: no node on PATH)";
    const auto report = nlohmann::json::parse(llama_cpp.out, nullptr, false);
    ASSERT_TRUE(report.is_object()) << llama_cpp.out;
    EXPECT_EQ(report["generated_ids"].size(), 4u) << llama_cpp.out;
    // Greedy decoding on these random weights has wide margins: measured the same 4 tokens from
    // both at f16, q8_0 and q4_0.
    EXPECT_EQ(kite.out, report["text"].get<std::string>() + "\n");
    std::remove(out.c_str());
  }
  std::remove(source.c_str());
}

// The other direction for the non-linear types: files Kite writes in iq4_nl and iq4_xs (its
// quantizer, decoder and cpu kernels) load in llama.cpp and generate the same greedy text in
// both. smollm2's FFN down projection (1536 columns) takes whole iq4_xs super-blocks; its
// 576-column matrices fall back to iq4_nl, as llama.cpp's would. (A 1-layer llama-3.2-1b file
// with a 4096-token vocabulary was tried first: its fourth token is a near tie that Kite's exact
// ref backend and llama.cpp break one way and the int8-activation cpu kernels the other.)
TEST(LlamaCppInteropTest, KiteIq4FilesRunInLlamaCppAsInKite) {
  if (!std::filesystem::exists(kLibllama)) {
    GTEST_SKIP() << "llama.cpp is not installed (" << kLibllama
                 << " is absent): `make llamacpp` installs the pinned npm package";
  }
  const std::string dir = ::testing::TempDir() + "kite_llamacpp_iq4";
  std::filesystem::create_directories(dir);
  for (const char* type : {"iq4_nl", "iq4_xs"}) {
    SCOPED_TRACE(type);
    const std::string out = dir + "/synth-" + type + ".gguf";
    const auto synth = RunKite(
        {"synth", "--preset", "smollm2-135m", "--type", type, "--layers", "2", "-q", "-o", out});
    ASSERT_EQ(synth.exit_code, 0) << synth.err;
    auto file = GgufFile::Open(out);
    ASSERT_TRUE(file.has_value()) << file.error().message;
    EXPECT_EQ(DTypeName(file->FindTensor("blk.0.ffn_down.weight")->dtype), type);
    const auto kite = RunKite({"run", "-m", out, "-p", "hi", "-n", "4", "--temp", "0"});
    ASSERT_EQ(kite.exit_code, 0) << kite.err;
    const auto llama_cpp = RunProgram("node", {SourcePath("tools/llamacpp/check_gguf.mjs"), out,
                                               "hi", "4"});
    ASSERT_EQ(llama_cpp.exit_code, 0) << llama_cpp.err << "(exit 127: no node on PATH)";
    const auto report = nlohmann::json::parse(llama_cpp.out, nullptr, false);
    ASSERT_TRUE(report.is_object()) << llama_cpp.out;
    EXPECT_EQ(report["generated_ids"].size(), 4u) << llama_cpp.out;
    EXPECT_EQ(kite.out, report["text"].get<std::string>() + "\n");
    std::remove(out.c_str());
  }
}

}  // namespace
}  // namespace kite

namespace kite {
namespace {

// kite quantize gives each tensor the type llama-quantize gives it (llama_tensor_get_type, its
// fallbacks for rows of 576 that are not whole 256-blocks included), and llama.cpp runs Kite's
// Q4_K_M file to the same greedy tokens as Kite.
TEST(LlamaCppInteropTest, KiteQuantizeChoosesLlamaCppTypesAndLlamaCppRunsIt) {
  if (!std::filesystem::exists(kLibllama)) GTEST_SKIP() << kLibllama << " is absent";
  std::string error;
  const Llama llama = LoadLlama(&error);
  ASSERT_TRUE(error.empty()) << error;
  std::string log;
  llama.log_set(AppendLog, &log);
  LlamaQuantizeParams params = llama.default_params();
  params.nthread = 1;

  const std::string dir = ::testing::TempDir() + "kite_llamacpp_quantize";
  std::filesystem::create_directories(dir);
  const std::string source = dir + "/synth-f16.gguf";
  // 8 blocks, so that use_more_bits and the first-eighth rules pick some layers and not others.
  const auto synth = RunKite({"synth", "--preset", "smollm2-135m", "--type", "f16", "--layers",
                              "8", "--vocab", "320", "-q", "-o", source});
  ASSERT_EQ(synth.exit_code, 0) << synth.err;
  struct Ftype {
    int32_t id;  // LLAMA_FTYPE_MOSTLY_*
    const char* name;
  };
  for (const Ftype& ftype : {Ftype{15, "q4_k_m"}, Ftype{14, "q4_k_s"}, Ftype{17, "q5_k_m"},
                             Ftype{16, "q5_k_s"}, Ftype{18, "q6_k"}, Ftype{2, "q4_0"},
                             Ftype{3, "q4_1"}, Ftype{7, "q8_0"}}) {
    SCOPED_TRACE(ftype.name);
    const std::string theirs = dir + "/llama.gguf", ours = dir + "/kite-" + ftype.name + ".gguf";
    params.ftype = ftype.id;
    log.clear();
    ASSERT_EQ(llama.quantize(source.c_str(), theirs.c_str(), &params), 0u) << log;
    const auto kite = RunKite({"quantize", source, "-o", ours, "--type", ftype.name, "-q"});
    ASSERT_EQ(kite.exit_code, 0) << kite.err;
    auto a = GgufFile::Open(theirs);
    auto b = GgufFile::Open(ours);
    ASSERT_TRUE(a.has_value() && b.has_value());
    ASSERT_EQ(a->tensors().size(), b->tensors().size());
    for (const GgufTensorInfo& info : a->tensors()) {
      const GgufTensorInfo* mine = b->FindTensor(info.name);
      ASSERT_NE(mine, nullptr) << info.name;
      EXPECT_EQ(DTypeName(mine->dtype), DTypeName(info.dtype)) << info.name;
    }
    EXPECT_EQ(*b->GetInt("general.file_type"), *a->GetInt("general.file_type"));
    if (std::string(ftype.name) == "q4_k_m") {
      const auto kite_run = RunKite({"run", "-m", ours, "-p", "hi", "-n", "4", "--temp", "0"});
      ASSERT_EQ(kite_run.exit_code, 0) << kite_run.err;
      const auto llama_cpp =
          RunProgram("node", {SourcePath("tools/llamacpp/check_gguf.mjs"), ours, "hi", "4"});
      ASSERT_EQ(llama_cpp.exit_code, 0) << llama_cpp.err << "(exit 127: no node on PATH)";
      const auto report = nlohmann::json::parse(llama_cpp.out, nullptr, false);
      ASSERT_TRUE(report.is_object()) << llama_cpp.out;
      EXPECT_EQ(kite_run.out, report["text"].get<std::string>() + "\n");
    }
    std::remove(theirs.c_str());
    std::remove(ours.c_str());
  }
  std::remove(source.c_str());
}

// The converted Qwen3, Gemma 2, Gemma 3 and Phi-3 (LongRoPE) reference models (tests/
// arch_references.h) run in llama.cpp to the PyTorch goldens' greedy tokens, from the golden's
// prompt ids. Not the windowed Mistral: llama.cpp's "llama" arch has no sliding window (its
// output past the window is not that model's); nor Gemma 2 with a query_pre_attn_scalar other
// than head_dim, which llama.cpp does not read.
TEST(LlamaCppInteropTest, ConvertedArchitecturesRunInLlamaCppToTheGoldenTokens) {
  if (!std::filesystem::exists(kLibllama)) GTEST_SKIP() << kLibllama << " is absent";
  std::string why;
  const std::string dir = testing::ArchReferenceDir(&why);
  if (dir.empty()) GTEST_SKIP() << why;
  for (const std::string model : {"qwen3", "gemma2", "gemma3", "phi4-longrope"}) {
    SCOPED_TRACE(model);
    const std::string gguf = testing::ConvertedArchReference(dir, model);
    ASSERT_FALSE(gguf.empty());
    const testing::Golden golden = testing::LoadGoldenFile(dir + "/" + model + "/golden.json");
    const auto llama_cpp =
        RunProgram("node", {SourcePath("tools/llamacpp/check_gguf.mjs"), gguf, golden.prompt,
                            std::to_string(golden.new_tokens.size())});
    ASSERT_EQ(llama_cpp.exit_code, 0) << llama_cpp.err << "(exit 127: no node on PATH)";
    const auto report = nlohmann::json::parse(llama_cpp.out, nullptr, false);
    ASSERT_TRUE(report.is_object()) << llama_cpp.out;
    ASSERT_EQ(report["prompt_ids"].get<std::vector<int32_t>>(), golden.input_ids);
    const auto generated = report["generated_ids"].get<std::vector<int32_t>>();
    ASSERT_EQ(generated.size(), golden.new_tokens.size()) << llama_cpp.out;
    for (size_t i = 0; i < generated.size(); ++i) {
      ASSERT_EQ(generated[i], golden.new_tokens[i]) << "step " << i;
      if (golden.margins[i] < testing::kTieMargin) break;  // a near tie may flip
    }
  }
}

}  // namespace
}  // namespace kite
