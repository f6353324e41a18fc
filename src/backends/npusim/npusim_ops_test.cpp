// Every npusim kernel against tools/npusim_reference.py, the numpy implementation of
// docs/npusim.md written from the spec: the script makes random inputs on awkward shapes and
// its output codes when the test runs; each kernel must give the same codes, bit for bit.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backends/npusim/fp16_kernels.h"
#include "backends/npusim/kernels.h"
#include "base/half.h"
#include "graph/ops.h"

namespace kite::npusim {
namespace {

using nlohmann::json;

ActEncoding Enc(const json& e) {
  return MakeActEncoding(e.at("scale").get<float>(), e.at("offset").get<int32_t>(),
                         e.at("bits").get<int32_t>());
}

std::vector<int32_t> Ints(const json& j) {
  std::vector<int32_t> out;
  for (const json& row : j) {
    if (row.is_array()) {
      for (const json& v : row) out.push_back(v.get<int32_t>());
    } else {
      out.push_back(row.get<int32_t>());
    }
  }
  return out;
}

template <typename T>
std::vector<T> Values(const json& j) {
  std::vector<T> out;
  for (const json& row : j) {
    if (row.is_array()) {
      for (const json& v : row) out.push_back(v.get<T>());
    } else {
      out.push_back(row.get<T>());
    }
  }
  return out;
}

// §11's f16 values; the reference writes an overflow as "inf" / "-inf".
std::vector<float> Floats(const json& j) {
  std::vector<float> out;
  for (const json& v : j) {
    out.push_back(v.is_string() ? (v.get<std::string>() == "inf" ? INFINITY : -INFINITY)
                                : v.get<float>());
  }
  return out;
}

// A rope case's attributes, as the reference's cases write them.
RopeAttrs RopeAttrsOf(const json& c) {
  return {.mode = c.at("neox").get<bool>() ? RopeMode::kNeox : RopeMode::kInterleaved,
          .theta = c.at("theta").get<float>(),
          .rotary_dim = c.at("rotary_dim").get<int32_t>()};
}

Fp16Function Fp16Of(const std::string& name) {
  if (name == "silu") return Fp16Function::kSilu;
  if (name == "gelu_tanh") return Fp16Function::kGeluTanh;
  return Fp16Function::kGeluErf;
}

TableFunction Function(const std::string& name) {
  if (name == "silu") return TableFunction::kSilu;
  if (name == "gelu_tanh") return TableFunction::kGeluTanh;
  return TableFunction::kGeluErf;
}

class NpusimOpsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::filesystem::path dir =
        std::filesystem::temp_directory_path() / ("npusim_cases_" + std::to_string(getpid()));
    const std::string command =
        "/usr/bin/python3 " KITE_SOURCE_DIR "/tools/npusim_reference.py --cases " + dir.string();
    if (std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") != 0) {
      skip_ = "Debian's python3-numpy is not installed (make deps)";
      return;
    }
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
    std::ifstream in(dir / "cases.json");
    cases_ = json::parse(in);
    std::filesystem::remove_all(dir);
  }
  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
  }
  // Each case of `op`, with its name, for the test body to run and compare.
  static std::vector<json> Cases(const std::string& op) {
    std::vector<json> out;
    for (const json& c : cases_.at("cases")) {
      if (c.at("op") == op) out.push_back(c);
    }
    return out;
  }
  static inline json cases_;
  static inline std::string skip_;
};

TEST_F(NpusimOpsTest, MatMulEqualsReference) {
  ASSERT_FALSE(Cases("matmul").empty());
  for (const json& c : Cases("matmul")) {
    SCOPED_TRACE(c.at("name").get<std::string>());
    const auto shape = Values<int64_t>(c.at("shape"));  // T, K, N
    std::vector<int8_t> codes;
    for (int32_t w : Ints(c.at("w"))) codes.push_back(static_cast<int8_t>(w));
    const auto scales = Values<float>(c.at("w_scales"));
    std::vector<uint8_t> mults;
    for (int32_t m : Ints(c.at("mult"))) mults.push_back(static_cast<uint8_t>(m));
    const auto bias = Values<float>(c.at("bias"));
    const MatMulWeights weights{.n = shape[2],
                                .k = shape[1],
                                .codes = codes,
                                .scales = scales,
                                .lpbq_block = c.at("lpbq_block").get<int64_t>(),
                                .mults = mults,
                                .bias = bias};
    auto plan = PlanMatMul(weights, Enc(c.at("x_enc")), Enc(c.at("y_enc")));
    ASSERT_TRUE(plan) << plan.error().message;
    const auto x = Ints(c.at("x"));
    std::vector<int32_t> y(shape[0] * shape[2]);
    std::vector<int16_t> centred(x.size());
    MatMul(*plan, x, shape[0], y, centred, nullptr);
    EXPECT_EQ(y, Ints(c.at("expect")));
    ThreadPool pool(2);
    std::vector<int32_t> threaded(y.size());
    MatMul(*plan, x, shape[0], threaded, centred, &pool);
    EXPECT_EQ(threaded, y);
  }
}

TEST_F(NpusimOpsTest, AddAndMulEqualReference) {
  for (const std::string op : {"add", "mul"}) {
    ASSERT_FALSE(Cases(op).empty());
    for (const json& c : Cases(op)) {
      SCOPED_TRACE(c.at("name").get<std::string>());
      const auto a_shape = Values<int64_t>(c.at("a_shape"));
      const auto b_shape = Values<int64_t>(c.at("b_shape"));
      const Broadcast shape = MakeBroadcast(a_shape, b_shape);
      const auto a = Ints(c.at("a"));
      const auto b = Ints(c.at("b"));
      std::vector<int32_t> y(c.at("expect").size());
      if (op == "add") {
        auto plan = PlanAdd(Enc(c.at("a_enc")), Enc(c.at("b_enc")), Enc(c.at("y_enc")));
        ASSERT_TRUE(plan);
        Add(*plan, shape, a, b, y);
      } else {
        auto plan = PlanMul(Enc(c.at("a_enc")), Enc(c.at("b_enc")), Enc(c.at("y_enc")));
        ASSERT_TRUE(plan);
        Mul(*plan, shape, a, b, y);
      }
      EXPECT_EQ(y, Ints(c.at("expect")));
    }
  }
}

TEST_F(NpusimOpsTest, ActivationTablesEqualReference) {
  ASSERT_FALSE(Cases("activation").empty());
  for (const json& c : Cases("activation")) {
    SCOPED_TRACE(c.at("name").get<std::string>());
    auto plan = PlanActivation(Function(c.at("function")), Enc(c.at("x_enc")), Enc(c.at("y_enc")));
    ASSERT_TRUE(plan);
    const auto x = Ints(c.at("x"));
    std::vector<int32_t> y(x.size());
    Activation(*plan, x, y);
    EXPECT_EQ(y, Ints(c.at("expect")));
  }
  ASSERT_FALSE(Cases("gated").empty());
  for (const json& c : Cases("gated")) {
    SCOPED_TRACE(c.at("name").get<std::string>());
    auto plan = PlanGated(Function(c.at("function")), Enc(c.at("g_enc")), Enc(c.at("u_enc")),
                          Enc(c.at("y_enc")));
    ASSERT_TRUE(plan);
    const auto g = Ints(c.at("g"));
    std::vector<int32_t> y(g.size());
    Gated(*plan, g, Ints(c.at("u")), y);
    EXPECT_EQ(y, Ints(c.at("expect")));
  }
}

TEST_F(NpusimOpsTest, RmsNormEqualsReference) {
  ASSERT_FALSE(Cases("rms_norm").empty());
  for (const json& c : Cases("rms_norm")) {
    SCOPED_TRACE(c.at("name").get<std::string>());
    const auto w = Values<float>(c.at("w"));
    auto plan = PlanRmsNorm(w, c.at("eps").get<float>(), Enc(c.at("x_enc")), Enc(c.at("y_enc")));
    ASSERT_TRUE(plan);
    const auto x = Ints(c.at("x"));
    std::vector<int32_t> y(x.size());
    RmsNorm(*plan, x, y);
    EXPECT_EQ(y, Ints(c.at("expect")));
  }
}

TEST_F(NpusimOpsTest, RopeEqualsReference) {
  ASSERT_FALSE(Cases("rope").empty());
  for (const json& c : Cases("rope")) {
    SCOPED_TRACE(c.at("name").get<std::string>());
    const auto shape = Values<int64_t>(c.at("shape"));
    const RopeAttrs attrs = RopeAttrsOf(c);
    auto plan = PlanRope(RopeInverseFrequencies(attrs), attrs.mode == RopeMode::kNeox,
                         attrs.rotary_dim, 1.0f, Enc(c.at("x_enc")), Enc(c.at("y_enc")));
    ASSERT_TRUE(plan);
    const auto x = Ints(c.at("x"));
    std::vector<int32_t> y(x.size());
    Rope(*plan, x, Ints(c.at("positions")), shape[1], shape[2], y);
    EXPECT_EQ(y, Ints(c.at("expect")));
  }
}

TEST_F(NpusimOpsTest, AttentionEqualsReference) {
  ASSERT_FALSE(Cases("attention").empty());
  for (const json& c : Cases("attention")) {
    SCOPED_TRACE(c.at("name").get<std::string>());
    const auto q_shape = Values<int64_t>(c.at("q_shape"));    // T, Hq, D
    const auto kv_shape = Values<int64_t>(c.at("kv_shape"));  // P, Hkv, D
    const ActEncoding k_enc = Enc(c.at("k_enc"));
    auto plan = PlanAttention(c.at("scale").get<float>(), c.at("window").get<int32_t>(),
                              Enc(c.at("q_enc")), k_enc, Enc(c.at("v_enc")), Enc(c.at("y_enc")));
    ASSERT_TRUE(plan);
    // The cache as the backend stores it: raw u8 or u16 codes, [P, Hkv, D].
    const int64_t width = k_enc.bits / 8;
    auto store = [&](const std::vector<int32_t>& codes) {
      std::vector<uint8_t> bytes(codes.size() * width);
      for (size_t i = 0; i < codes.size(); ++i) {
        if (width == 1) {
          bytes[i] = static_cast<uint8_t>(codes[i]);
        } else {
          const uint16_t code = static_cast<uint16_t>(codes[i]);
          std::memcpy(bytes.data() + 2 * i, &code, 2);
        }
      }
      return bytes;
    };
    const auto keys = store(Ints(c.at("k")));
    const auto values = store(Ints(c.at("v")));
    const int64_t row = kv_shape[1] * kv_shape[2];
    const KvCodes cache{.key = [&](int64_t, int64_t j, int64_t h) -> const void* {
                          return keys.data() + (j * row + h * kv_shape[2]) * width;
                        },
                        .value = [&](int64_t, int64_t j, int64_t h) -> const void* {
                          return values.data() + (j * row + h * kv_shape[2]) * width;
                        }};
    const auto q = Ints(c.at("q"));
    const auto positions = Ints(c.at("positions"));
    std::vector<int32_t> y(q.size());
    std::vector<int64_t> weights(kv_shape[0] + q_shape[2]);
    const int64_t group = q_shape[1] / kv_shape[1];
    for (int64_t t = 0; t < q_shape[0]; ++t) {
      for (int64_t h = 0; h < q_shape[1]; ++h) {
        const int64_t at = (t * q_shape[1] + h) * q_shape[2];
        AttendRow(*plan, cache, t, positions[t], h / group, std::span(q).subspan(at, q_shape[2]),
                  weights, std::span(y).subspan(at, q_shape[2]));
      }
    }
    EXPECT_EQ(y, Ints(c.at("expect")));
  }
}

TEST_F(NpusimOpsTest, QuantizeEqualsReference) {
  ASSERT_FALSE(Cases("quantize").empty());
  for (const json& c : Cases("quantize")) {
    SCOPED_TRACE(c.at("name").get<std::string>());
    std::vector<float> x;
    for (const json& v : c.at("x")) x.push_back(v.is_null() ? NAN : v.get<float>());
    std::vector<int32_t> q(x.size());
    QuantizeF32(Enc(c.at("y_enc")), x, q);
    EXPECT_EQ(q, Ints(c.at("expect")));
  }
}

// ---------------------------------------------------------------- the FP16 path (§11)

TEST_F(NpusimOpsTest, Fp16MatMulEqualsReference) {
  ASSERT_FALSE(Cases("fp16_matmul").empty());
  for (const json& c : Cases("fp16_matmul")) {
    SCOPED_TRACE(c.at("name").get<std::string>());
    const auto shape = Values<int64_t>(c.at("shape"));  // T, K, N
    Fp16MatMulPlan plan{.n = shape[2], .k = shape[1]};
    const auto codes = Ints(c.at("codes"));
    const auto mults = Ints(c.at("mults"));
    const int64_t block = c.at("block").get<int64_t>();
    for (int64_t i = 0; i < plan.n * plan.k; ++i) {
      const int32_t mult =
          block > 0 ? mults[i / plan.k * (plan.k / block) + i % plan.k / block] : 1;
      plan.codes.push_back(static_cast<int16_t>(codes[i] * mult));
    }
    for (float s : Floats(c.at("scales"))) plan.scales.push_back(s);
    for (float b : Floats(c.at("bias"))) plan.bias.push_back(b);
    const auto x = Floats(c.at("x"));
    std::vector<float> y(shape[0] * shape[2]);
    Fp16MatMul(plan, x, shape[0], y, nullptr);
    EXPECT_EQ(y, Floats(c.at("expect")));
    ThreadPool pool(2);
    std::vector<float> threaded(y.size());
    Fp16MatMul(plan, x, shape[0], threaded, &pool);
    EXPECT_EQ(threaded, y);
  }
}

TEST_F(NpusimOpsTest, Fp16AddMulEqualReference) {
  for (const std::string op : {"add", "mul"}) {
    ASSERT_FALSE(Cases("fp16_" + op).empty());
    for (const json& c : Cases("fp16_" + op)) {
      SCOPED_TRACE(c.at("name").get<std::string>());
      const Broadcast shape =
          MakeBroadcast(Values<int64_t>(c.at("a_shape")), Values<int64_t>(c.at("b_shape")));
      const auto expect = Floats(c.at("expect"));
      std::vector<float> y(expect.size());
      Fp16AddMul(op == "mul", shape, Floats(c.at("a")), Floats(c.at("b")), y);
      EXPECT_EQ(y, expect);
    }
  }
}

TEST_F(NpusimOpsTest, Fp16ActivationsEqualReference) {
  ASSERT_FALSE(Cases("fp16_activation").empty());
  for (const json& c : Cases("fp16_activation")) {
    SCOPED_TRACE(c.at("name").get<std::string>());
    const auto x = Floats(c.at("x"));
    std::vector<float> y(x.size());
    Fp16Activation(Fp16Of(c.at("function")), x, y);
    EXPECT_EQ(y, Floats(c.at("expect")));
  }
  ASSERT_FALSE(Cases("fp16_gated").empty());
  for (const json& c : Cases("fp16_gated")) {
    SCOPED_TRACE(c.at("name").get<std::string>());
    const auto g = Floats(c.at("g"));
    std::vector<float> y(g.size());
    Fp16Gated(Fp16Of(c.at("function")), g, Floats(c.at("u")), y);
    EXPECT_EQ(y, Floats(c.at("expect")));
  }
}

TEST_F(NpusimOpsTest, Fp16RmsNormAndRopeEqualReference) {
  ASSERT_FALSE(Cases("fp16_rms_norm").empty());
  for (const json& c : Cases("fp16_rms_norm")) {
    SCOPED_TRACE(c.at("name").get<std::string>());
    const auto x = Floats(c.at("x"));
    std::vector<float> y(x.size());
    Fp16RmsNorm(Floats(c.at("w")), c.at("eps").get<float>(), x, y);
    EXPECT_EQ(y, Floats(c.at("expect")));
  }
  ASSERT_FALSE(Cases("fp16_rope").empty());
  for (const json& c : Cases("fp16_rope")) {
    SCOPED_TRACE(c.at("name").get<std::string>());
    const auto shape = Values<int64_t>(c.at("shape"));
    const RopeAttrs attrs = RopeAttrsOf(c);
    const auto x = Floats(c.at("x"));
    std::vector<float> y(x.size());
    Fp16Rope(RopeInverseFrequencies(attrs), attrs.mode == RopeMode::kNeox, 1.0f, x,
             Ints(c.at("positions")), shape[1], shape[2], y);
    EXPECT_EQ(y, Floats(c.at("expect")));
  }
}

TEST_F(NpusimOpsTest, Fp16AttentionEqualsReference) {
  ASSERT_FALSE(Cases("fp16_attention").empty());
  for (const json& c : Cases("fp16_attention")) {
    SCOPED_TRACE(c.at("name").get<std::string>());
    const auto q_shape = Values<int64_t>(c.at("q_shape"));    // T, Hq, D
    const auto kv_shape = Values<int64_t>(c.at("kv_shape"));  // P, Hkv, D
    // The cache as an f16 KV cache holds it: f16 bits, [P, Hkv, D].
    auto store = [](const std::vector<float>& x) {
      std::vector<uint16_t> bits;
      for (float v : x) bits.push_back(F32ToF16(v));
      return bits;
    };
    const auto keys = store(Floats(c.at("k")));
    const auto values = store(Floats(c.at("v")));
    const int64_t row = kv_shape[1] * kv_shape[2];
    const auto q = Floats(c.at("q"));
    const auto positions = Ints(c.at("positions"));
    std::vector<float> y(q.size());
    std::vector<double> weights(kv_shape[0]);
    const int64_t group = q_shape[1] / kv_shape[1];
    for (int64_t t = 0; t < q_shape[0]; ++t) {
      for (int64_t h = 0; h < q_shape[1]; ++h) {
        const int64_t head = h / group * kv_shape[2];
        const Fp16Cache cache{
            .f16 = true,
            .key = [&](int64_t j) -> const void* { return keys.data() + j * row + head; },
            .value = [&](int64_t j) -> const void* { return values.data() + j * row + head; }};
        const int64_t at = (t * q_shape[1] + h) * q_shape[2];
        Fp16AttendRow(c.at("scale").get<float>(), c.at("window").get<int32_t>(), cache,
                      positions[t], std::span(q).subspan(at, q_shape[2]), weights,
                      std::span(y).subspan(at, q_shape[2]));
      }
    }
    EXPECT_EQ(y, Floats(c.at("expect")));
  }
}

}  // namespace
}  // namespace kite::npusim
