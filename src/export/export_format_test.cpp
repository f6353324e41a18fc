// The pieces of a llama.cpp-style GGUF: q/k permutation, Llama 3 rope_freqs, metadata keys, the
// per-tensor type rule of llama.cpp's quantizer, and the streaming writer.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>

#include "export/gguf_stream.h"
#include "export/llama_gguf.h"
#include "export/weight_types.h"

namespace kite {
namespace {

TEST(LlamaGgufTest, PermutationInterleavesTheHalvesOfEachHead) {
  // head_dim 4: rows (0, 1 | 2, 3) pair as (0, 2) and (1, 3), which become adjacent.
  const int64_t want4[] = {0, 2, 1, 3, 4, 6, 5, 7};
  for (int64_t row = 0; row < 8; ++row) EXPECT_EQ(PermutedSourceRow(row, 4), want4[row]) << row;
  const int64_t want8[] = {0, 4, 1, 5, 2, 6, 3, 7};
  for (int64_t row = 0; row < 8; ++row) EXPECT_EQ(PermutedSourceRow(row, 8), want8[row]) << row;
}

TEST(LlamaGgufTest, Llama3RopeFreqsKeepBlendAndSlowPairs) {
  // testdata/reference/llama3-rope's setting. Wavelengths 2*pi*10000^(i/16): 6.3 (< 32/4: kept),
  // 19.9 (between 8 and 32: blended), 62.8 and up (> 32: slowed by the factor 8). The blend,
  // computed with numpy: 1 / ((1 - s) / 8 + s), s = (32 / 19.869177 - 1) / 3.
  ModelConfig c;
  c.head_dim = 16;
  c.rope.theta = 10000;
  c.rope.scaling = RopeScaling::kLlama3;
  c.rope.factor = 8;
  c.rope.low_freq_factor = 1;
  c.rope.high_freq_factor = 4;
  c.rope.original_max_position = 32;
  const std::vector<float> freqs = Llama3RopeFreqs(c);
  ASSERT_EQ(freqs.size(), 8u);
  EXPECT_FLOAT_EQ(freqs[0], 1.0f);
  EXPECT_NEAR(freqs[1], 3.2995391, 1e-5);
  for (size_t i = 2; i < 8; ++i) EXPECT_FLOAT_EQ(freqs[i], 8.0f) << i;
}

// What a GGUF loader hands the rope op (rope_freqs.weight as per-pair divisors) turns each pair
// as the Llama 3 parameters it was written from do: Llama 3.1 8B, Llama 3.2 1B, and the
// llama3-rope reference model (one blended pair).
TEST(LlamaGgufTest, Llama3RopeFreqsAsDivisorsGiveTheLlama3Frequencies) {
  struct Case {
    float theta;
    int32_t dim;
    float factor, low, high;
    int32_t original;
  };
  for (const Case& k : {Case{500000, 128, 8, 1, 4, 8192}, Case{500000, 64, 32, 1, 4, 8192},
                        Case{10000, 16, 8, 1, 4, 32}}) {
    ModelConfig c;
    c.head_dim = k.dim;
    c.rope = {.theta = k.theta,
              .rotary_dim = k.dim,
              .scaling = RopeScaling::kLlama3,
              .factor = k.factor,
              .low_freq_factor = k.low,
              .high_freq_factor = k.high,
              .original_max_position = k.original};
    RopeAttrs divided{.theta = k.theta, .rotary_dim = k.dim, .scaling = RopeScaling::kDivisors};
    divided.divisors = Llama3RopeFreqs(c);
    ASSERT_EQ(divided.divisors.size(), static_cast<size_t>(k.dim / 2));
    for (int32_t i = 0; i < k.dim / 2; ++i) {
      const double want = RopeInverseFrequency(c.rope, i);
      EXPECT_NEAR(RopeInverseFrequency(divided, i), want, 1e-6 * want) << k.dim << " pair " << i;
    }
  }
}

TEST(LlamaGgufTest, MetadataUsesLlamaCppKeys) {
  ModelConfig c;
  c.n_layers = 2;
  c.context_length = 128;
  c.hidden = 64;
  c.ffn = 160;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 16;
  c.vocab = 1000;
  c.rms_eps = 1e-6f;
  c.rope.theta = 1e6f;
  c.rope.rotary_dim = 16;  // written as rope.dimension_count (Phi-3 rotates fewer)
  c.rope.scaling = RopeScaling::kLinear;
  c.rope.factor = 4;
  GgufWriter writer;
  SetLlamaMetadata(c, {.arch = "qwen2", .name = "x", .file_type = 1}, &writer);
  auto bytes = writer.Serialize();
  ASSERT_TRUE(bytes.has_value());
  auto file = GgufFile::Parse(*bytes, "metadata");
  ASSERT_TRUE(file.has_value()) << file.error().message;
  EXPECT_EQ(*file->GetString("general.architecture"), "qwen2");
  EXPECT_EQ(*file->GetInt("qwen2.block_count"), 2);
  EXPECT_EQ(*file->GetInt("qwen2.context_length"), 128);
  EXPECT_EQ(*file->GetInt("qwen2.embedding_length"), 64);
  EXPECT_EQ(*file->GetInt("qwen2.feed_forward_length"), 160);
  EXPECT_EQ(*file->GetInt("qwen2.attention.head_count"), 4);
  EXPECT_EQ(*file->GetInt("qwen2.attention.head_count_kv"), 2);
  EXPECT_EQ(*file->GetInt("qwen2.rope.dimension_count"), 16);
  EXPECT_FLOAT_EQ(static_cast<float>(*file->GetFloat("qwen2.attention.layer_norm_rms_epsilon")),
                  1e-6f);
  EXPECT_FLOAT_EQ(static_cast<float>(*file->GetFloat("qwen2.rope.freq_base")), 1e6f);
  EXPECT_EQ(*file->GetString("qwen2.rope.scaling.type"), "linear");
  EXPECT_FLOAT_EQ(static_cast<float>(*file->GetFloat("qwen2.rope.scaling.factor")), 4.0f);
  EXPECT_EQ(*file->GetInt("general.file_type"), 1);
}

ExportType Type(const char* name) { return *ParseExportType(name); }

TEST(WeightTypesTest, Q4KMFollowsLlamaCpp) {
  // 16 layers: use_more_bits is layer < 2, layer >= 14, or (layer - 2) % 3 == 2.
  const ExportType t = Type("q4_k_m");
  const std::vector<int> more = {0, 1, 4, 7, 10, 13, 14, 15};
  for (int layer = 0; layer < 16; ++layer) {
    const bool six = std::find(more.begin(), more.end(), layer) != more.end();
    const std::string blk = "blk." + std::to_string(layer) + ".";
    EXPECT_EQ(ChooseTensorType(t, blk + "attn_v.weight", {512, 2048}, 16, true),
              six ? DType::kQ6_K : DType::kQ4_K)
        << layer;
    EXPECT_EQ(ChooseTensorType(t, blk + "ffn_down.weight", {2048, 8192}, 16, true),
              six ? DType::kQ6_K : DType::kQ4_K)
        << layer;
    EXPECT_EQ(ChooseTensorType(t, blk + "attn_q.weight", {2048, 2048}, 16, true), DType::kQ4_K);
    EXPECT_EQ(ChooseTensorType(t, blk + "attn_norm.weight", {2048}, 16, true), DType::kF32);
  }
  EXPECT_EQ(ChooseTensorType(t, "token_embd.weight", {128256, 2048}, 16, true), DType::kQ6_K);
  EXPECT_EQ(ChooseTensorType(t, "token_embd.weight", {32000, 4096}, 32, false), DType::kQ4_K);
  EXPECT_EQ(ChooseTensorType(t, "output.weight", {32000, 4096}, 32, false), DType::kQ6_K);
  // Qwen2.5-0.5B: rows of 896 are not whole 256-blocks.
  EXPECT_EQ(ChooseTensorType(t, "token_embd.weight", {151936, 896}, 24, true), DType::kQ8_0);
  EXPECT_EQ(ChooseTensorType(t, "blk.5.attn_q.weight", {896, 896}, 24, true), DType::kQ5_0);
  EXPECT_EQ(ChooseTensorType(t, "blk.5.attn_q.bias", {896}, 24, true), DType::kF32);
  EXPECT_EQ(ChooseTensorType(t, "blk.5.ffn_down.weight", {896, 4864}, 24, true), DType::kQ6_K);
  EXPECT_EQ(ChooseTensorType(t, "blk.4.ffn_down.weight", {896, 4864}, 24, true), DType::kQ4_K);
}

TEST(WeightTypesTest, PlainTypesApplyToEvery2DWeightWithFallbacks) {
  EXPECT_EQ(ChooseTensorType(Type("f16"), "token_embd.weight", {100, 64}, 1, true), DType::kF16);
  EXPECT_EQ(ChooseTensorType(Type("bf16"), "blk.0.ffn_norm.weight", {64}, 1, true), DType::kF32);
  EXPECT_EQ(ChooseTensorType(Type("q4_0"), "token_embd.weight", {100, 576}, 1, true), DType::kQ4_0);
  EXPECT_EQ(ChooseTensorType(Type("q4_k"), "blk.0.attn_q.weight", {576, 576}, 1, true),
            DType::kQ5_0);
  EXPECT_EQ(ChooseTensorType(Type("q5_k"), "blk.0.attn_q.weight", {576, 576}, 1, true),
            DType::kQ5_1);
  EXPECT_EQ(ChooseTensorType(Type("q6_k"), "blk.0.attn_q.weight", {576, 576}, 1, true),
            DType::kQ8_0);
  EXPECT_EQ(ChooseTensorType(Type("q6_k"), "blk.0.ffn_down.weight", {576, 1536}, 1, true),
            DType::kQ6_K);
  EXPECT_EQ(ChooseTensorType(Type("q8_0"), "blk.0.attn_q.weight", {48, 48}, 1, true),
            DType::kF16);  // 48 is not a whole number of 32-blocks
  EXPECT_EQ(ChooseTensorType(Type("q8_0"), "rope_freqs.weight", {32}, 1, true), DType::kF32);
}

TEST(WeightTypesTest, UnknownTypeListsTheValidOnes) {
  auto bad = ParseExportType("q3_k");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("q4_k_m"), std::string::npos) << bad.error().message;
  auto restricted = ParseExportType("q4_0", {"f32", "f16", "bf16"});
  ASSERT_FALSE(restricted.has_value());
  EXPECT_NE(restricted.error().message.find("f32, f16, bf16"), std::string::npos)
      << restricted.error().message;
  EXPECT_EQ(Type("q4_k_m").file_type, 15u);  // LLAMA_FTYPE_MOSTLY_Q4_K_M
  EXPECT_EQ(Type("bf16").file_type, 32u);    // LLAMA_FTYPE_MOSTLY_BF16
}

TEST(GgufStreamTest, RowsArriveInChunksAndReadBack) {
  // [1100, 2048] f32 is 8.6 MiB: more than one 8 MiB chunk.
  const std::vector<int64_t> shape = {1100, 2048};
  std::vector<int64_t> seen(1100, 0);
  StreamedTensor big{"big", DType::kF32, shape,
                     [&](int64_t first, int64_t rows, std::span<uint8_t> out) -> Status {
                       EXPECT_EQ(out.size(), static_cast<size_t>(rows) * 2048 * 4);
                       for (int64_t r = first; r < first + rows; ++r) {
                         ++seen[r];
                         std::vector<float> row(2048, static_cast<float>(r));
                         std::memcpy(out.data() + (r - first) * 2048 * 4, row.data(), 2048 * 4);
                       }
                       return Ok();
                     }};
  StreamedTensor small{
      "small", DType::kF16, {3}, [](int64_t, int64_t, std::span<uint8_t> out) -> Status {
        for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<uint8_t>(i + 1);
        return Ok();
      }};
  GgufWriter metadata;
  metadata.SetString("general.architecture", "test");
  const std::string path = ::testing::TempDir() + "kite_stream_test.gguf";
  std::vector<std::pair<uint64_t, uint64_t>> progress;
  const Status written = WriteGgufStreaming(
      metadata, {big, small}, path, {},
      [&](uint64_t done, uint64_t total) { progress.emplace_back(done, total); });
  ASSERT_TRUE(written.has_value()) << written.error().message;
  EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int64_t n) { return n == 1; }));
  ASSERT_GE(progress.size(), 3u);  // two chunks of "big", one of "small"
  EXPECT_EQ(progress.back().first, progress.back().second);
  auto file = GgufFile::Open(path);
  ASSERT_TRUE(file.has_value()) << file.error().message;
  EXPECT_EQ(*file->GetString("general.architecture"), "test");
  const GgufTensorInfo* info = file->FindTensor("big");
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->shape, shape);
  const auto* values = static_cast<const float*>(file->View(*info).data);
  EXPECT_EQ(values[0], 0.0f);
  EXPECT_EQ(values[1099 * 2048 + 5], 1099.0f);
  const auto* bytes = static_cast<const uint8_t*>(file->View(*file->FindTensor("small")).data);
  EXPECT_EQ(bytes[0], 1);
  EXPECT_EQ(bytes[5], 6);
  std::remove(path.c_str());
}

TEST(GgufStreamTest, AFailedFillRemovesTheFileAndNamesTheTensor) {
  StreamedTensor bad{
      "blk.3.broken", DType::kF32, {4}, [](int64_t, int64_t, std::span<uint8_t>) -> Status {
        return InvalidInput("no data");
      }};
  const std::string path = ::testing::TempDir() + "kite_stream_fail.gguf";
  const Status written = WriteGgufStreaming(GgufWriter(), {bad}, path, {});
  ASSERT_FALSE(written.has_value());
  EXPECT_NE(written.error().message.find("blk.3.broken"), std::string::npos)
      << written.error().message;
  EXPECT_EQ(std::fopen(path.c_str(), "rb"), nullptr);
}

}  // namespace
}  // namespace kite
