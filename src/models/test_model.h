// For tests and benchmarks: writes a small llama.cpp-style GGUF model with seeded random
// weights (or weights that make one token always win) and a SentencePiece-style vocabulary,
// so that loaders, graphs and sessions can be exercised without fixture files.
#pragma once

#include <cstdint>
#include <cstring>
#include <deque>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "base/half.h"
#include "format/gguf.h"

namespace kite::testing {

struct TestModelOptions {
  std::string arch = "llama";
  int32_t n_layers = 2;
  int32_t hidden = 32;
  int32_t n_heads = 4;
  int32_t n_kv_heads = 2;
  int32_t head_dim = 8;
  int32_t ffn = 48;
  int32_t vocab = 300;            // embedding rows
  int32_t tokenizer_vocab = 300;  // tokens in the vocabulary (<= vocab unless testing that)
  int32_t context_length = 256;
  bool tied = false;
  bool qkv_bias = false;
  DType dtype = DType::kF32;  // f32 or f16 for the matrices
  // >= 0 (untied only): every layer's output projections are zero and the embedding and
  // lm_head are set so that this token has the highest logit after any input.
  int32_t winner = -1;
  std::vector<float> rope_freqs;  // written as rope_freqs.weight when not empty
  std::vector<std::string> skip;  // tensor names not to write
  uint32_t seed = 1;
};

// Token i of the vocabulary: <unk>, <s>, </s>, the 256 byte tokens <0x00>..<0xFF>, then
// "▁w3", "▁w4", ... (so every id decodes to some text).
inline std::string TestTokenText(int32_t id) {
  if (id == 0) return "<unk>";
  if (id == 1) return "<s>";
  if (id == 2) return "</s>";
  if (id < 3 + 256) {
    static const char* kHex = "0123456789ABCDEF";
    const int byte = id - 3;
    return std::string("<0x") + kHex[byte / 16] + kHex[byte % 16] + ">";
  }
  return "\xe2\x96\x81w" + std::to_string(id);
}

inline Status WriteTestModel(const std::string& path, const TestModelOptions& o) {
  GgufWriter writer;
  const std::string& a = o.arch;
  writer.SetString("general.architecture", a);
  writer.SetUint32(a + ".block_count", o.n_layers);
  writer.SetUint32(a + ".context_length", o.context_length);
  writer.SetUint32(a + ".embedding_length", o.hidden);
  writer.SetUint32(a + ".feed_forward_length", o.ffn);
  writer.SetUint32(a + ".attention.head_count", o.n_heads);
  writer.SetUint32(a + ".attention.head_count_kv", o.n_kv_heads);
  writer.SetUint32(a + ".attention.key_length", o.head_dim);
  writer.SetUint32(a + ".rope.dimension_count", o.head_dim);
  writer.SetFloat32(a + ".attention.layer_norm_rms_epsilon", 1e-5f);
  writer.SetFloat32(a + ".rope.freq_base", 10000.0f);

  std::vector<std::string> tokens;
  GgufValue::Array types{GgufType::kInt32, {}};
  GgufValue::Array scores{GgufType::kFloat32, {}};
  for (int32_t id = 0; id < o.tokenizer_vocab; ++id) {
    tokens.push_back(TestTokenText(id));
    types.items.push_back(GgufValue{int32_t{id == 0 ? 2 : id < 3 ? 3 : id < 259 ? 6 : 1}});
    scores.items.push_back(GgufValue{-static_cast<float>(id)});
  }
  writer.SetString("tokenizer.ggml.model", "llama");
  writer.SetStringArray("tokenizer.ggml.tokens", tokens);
  writer.SetValue("tokenizer.ggml.token_type", GgufValue{types});
  writer.SetValue("tokenizer.ggml.scores", GgufValue{scores});

  std::mt19937 rng(o.seed);
  std::uniform_real_distribution<float> uniform(-0.5f, 0.5f);
  std::deque<std::vector<uint8_t>> data;  // alive until Write
  auto add = [&](const std::string& name, std::vector<int64_t> shape, auto value) -> Status {
    for (const std::string& skipped : o.skip) {
      if (skipped == name) return Ok();
    }
    int64_t count = 1;
    for (int64_t d : shape) count *= d;
    const bool f16 = o.dtype == DType::kF16 && shape.size() == 2;
    std::vector<uint8_t>& bytes = data.emplace_back(count * (f16 ? 2 : 4));
    for (int64_t i = 0; i < count; ++i) {
      const float v = value(i);
      if (f16) {
        const uint16_t h = F32ToF16(v);
        std::memcpy(bytes.data() + 2 * i, &h, 2);
      } else {
        std::memcpy(bytes.data() + 4 * i, &v, 4);
      }
    }
    return writer.AddTensor(name, f16 ? DType::kF16 : DType::kF32, std::move(shape), bytes);
  };
  const bool fixed = o.winner >= 0;
  auto random = [&](int64_t) { return uniform(rng); };
  auto zero_if_fixed = [&](int64_t) { return fixed ? 0.0f : uniform(rng); };
  auto norm = [&](int64_t) { return fixed ? 1.0f : 1.0f + 0.2f * uniform(rng); };
  // With `winner`, every embedding row is +1, so the residual stream stays all-positive and
  // lm_head's row `winner` (all +1) outscores the others (all 0).
  auto embedding = [&](int64_t) { return fixed ? 1.0f : uniform(rng); };
  auto lm_head = [&](int64_t i) {
    return fixed ? (i / o.hidden == o.winner ? 1.0f : 0.0f) : uniform(rng);
  };
  const int64_t q = int64_t{o.n_heads} * o.head_dim;
  const int64_t kv = int64_t{o.n_kv_heads} * o.head_dim;
  KITE_RETURN_IF_ERROR(add("token_embd.weight", {o.vocab, o.hidden}, embedding));
  for (int32_t layer = 0; layer < o.n_layers; ++layer) {
    const std::string p = "blk." + std::to_string(layer) + ".";
    KITE_RETURN_IF_ERROR(add(p + "attn_norm.weight", {o.hidden}, norm));
    KITE_RETURN_IF_ERROR(add(p + "attn_q.weight", {q, o.hidden}, random));
    KITE_RETURN_IF_ERROR(add(p + "attn_k.weight", {kv, o.hidden}, random));
    KITE_RETURN_IF_ERROR(add(p + "attn_v.weight", {kv, o.hidden}, random));
    if (o.qkv_bias) {
      KITE_RETURN_IF_ERROR(add(p + "attn_q.bias", {q}, random));
      KITE_RETURN_IF_ERROR(add(p + "attn_k.bias", {kv}, random));
      KITE_RETURN_IF_ERROR(add(p + "attn_v.bias", {kv}, random));
    }
    KITE_RETURN_IF_ERROR(add(p + "attn_output.weight", {o.hidden, q}, zero_if_fixed));
    KITE_RETURN_IF_ERROR(add(p + "ffn_norm.weight", {o.hidden}, norm));
    KITE_RETURN_IF_ERROR(add(p + "ffn_gate.weight", {o.ffn, o.hidden}, random));
    KITE_RETURN_IF_ERROR(add(p + "ffn_up.weight", {o.ffn, o.hidden}, random));
    KITE_RETURN_IF_ERROR(add(p + "ffn_down.weight", {o.hidden, o.ffn}, zero_if_fixed));
  }
  KITE_RETURN_IF_ERROR(add("output_norm.weight", {o.hidden}, norm));
  if (!o.tied) KITE_RETURN_IF_ERROR(add("output.weight", {o.vocab, o.hidden}, lm_head));
  if (!o.rope_freqs.empty()) {
    std::vector<float> freqs = o.rope_freqs;
    KITE_RETURN_IF_ERROR(add("rope_freqs.weight", {static_cast<int64_t>(freqs.size())},
                             [&](int64_t i) { return freqs[i]; }));
  }
  return writer.Write(path);
}

// A copy of the GGUF at `path`, at `path` + `suffix`, with the integer key `key` set to `value`
// (a header that disagrees with the tensors); returns the copy's path.
inline Result<std::string> CopyWithKey(const std::string& path, const std::string& key,
                                       uint32_t value, const std::string& suffix) {
  const GgufFile gguf = KITE_TRY(GgufFile::Open(path));
  GgufWriter writer;
  for (const auto& [name, item] : gguf.metadata()) writer.SetValue(name, item);
  writer.SetUint32(key, value);
  for (const GgufTensorInfo& info : gguf.tensors()) {
    const TensorView view = gguf.View(info);
    KITE_RETURN_IF_ERROR(writer.AddTensor(info.name, info.dtype, info.shape,
                                          {static_cast<const uint8_t*>(view.data), view.bytes}));
  }
  const std::string copy = path + suffix;
  KITE_RETURN_IF_ERROR(writer.Write(copy));
  return copy;
}

// Overwrites element `index` of the F32 tensor `name` in the GGUF at `path` (to plant a NaN).
inline Status SetTestModelValue(const std::string& path, const std::string& name, int64_t index,
                                float value) {
  uint64_t at = 0;
  {
    const GgufFile gguf = KITE_TRY(GgufFile::Open(path));
    const GgufTensorInfo* info = gguf.FindTensor(name);
    if (info == nullptr || info->dtype != DType::kF32 ||
        static_cast<uint64_t>(index + 1) * 4 > info->bytes) {
      return InvalidInput(path + ": no f32 tensor '" + name + "' with element " +
                          std::to_string(index));
    }
    at = gguf.data_offset() + info->offset + index * 4;
  }
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  file.seekp(static_cast<std::streamoff>(at));
  file.write(reinterpret_cast<const char*>(&value), 4);
  if (!file) return InvalidInput(path + ": could not write");
  return Ok();
}

}  // namespace kite::testing
