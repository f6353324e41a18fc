#include "models/check_tensors.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "base/half.h"
#include "tensor/quantize.h"

namespace kite {
namespace {

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A weight store with views of buffers this holds, as a loader's views of a file's bytes.
class Weights {
 public:
  Weights() {
    storage_.reserve(16);  // the views point into the buffers: they must not move
  }
  void Add(const std::string& name, DType dtype, std::vector<int64_t> shape,
           std::vector<uint8_t> bytes) {
    const std::vector<uint8_t>& stored = storage_.emplace_back(std::move(bytes));
    store_.Add(TensorView{name, dtype, std::move(shape), stored.data(), stored.size()});
  }
  void AddF32(const std::string& name, std::vector<int64_t> shape, const std::vector<float>& v) {
    std::vector<uint8_t> bytes(v.size() * 4);
    std::memcpy(bytes.data(), v.data(), bytes.size());
    Add(name, DType::kF32, std::move(shape), std::move(bytes));
  }
  const WeightStore& store() const { return store_; }

 private:
  WeightStore store_;
  std::vector<std::vector<uint8_t>> storage_;
};

TEST(CheckTensorsTest, FiniteWeightsPass) {
  Weights w;
  w.AddF32("a.weight", {2, 3}, {1, -2, 3, 0, 1e30f, -1e-30f});
  w.Add("ids", DType::kI32, {1}, {0xff, 0xff, 0xc0, 0x7f});  // an f32 NaN's bits, but an integer
  EXPECT_TRUE(CheckTensorsFinite(w.store(), "model.gguf", nullptr, nullptr).has_value());
}

TEST(CheckTensorsTest, NamesTheFirstBadTensorElementAndValue) {
  Weights w;
  std::vector<float> values(4 * 8, 0.5f);
  values[13] = std::numeric_limits<float>::quiet_NaN();
  values[30] = std::numeric_limits<float>::infinity();
  w.AddF32("blk.0.ffn_down.weight", {4, 8}, values);
  w.AddF32("output_norm.weight", {8},
           std::vector<float>(8, -std::numeric_limits<float>::infinity()));
  auto status = CheckTensorsFinite(w.store(), "model.gguf",
                                   [](const std::string& name) { return "file:" + name; }, nullptr);
  ASSERT_FALSE(status.has_value());
  EXPECT_EQ(status.error().code, ErrorCode::kInvalidInput);
  EXPECT_TRUE(Contains(status.error().message,
                       "model.gguf: tensor 'file:blk.0.ffn_down.weight' [4, 8] f32 holds nan at "
                       "element 13 (row 1, column 5)"))
      << status.error().message;
}

TEST(CheckTensorsTest, QuantizedRowsAreDecoded) {
  // Q8_0 [3, 64]: two blocks of 32 per row, each a f16 scale then 32 int8.
  std::vector<float> values(3 * 64);
  for (size_t i = 0; i < values.size(); ++i) values[i] = std::sin(static_cast<float>(i)) + 2.0f;
  std::vector<uint8_t> bytes(3 * 2 * 34);
  ASSERT_TRUE(Quantize(DType::kQ8_0, values.data(), bytes.data(), 3 * 64).has_value());
  Weights clean;
  clean.Add("q.weight", DType::kQ8_0, {3, 64}, bytes);
  EXPECT_TRUE(CheckTensorsFinite(clean.store(), "model.gguf", nullptr, nullptr).has_value());

  // Row 2's second block gets an infinite scale: its first element is the first bad one.
  const uint16_t inf = F32ToF16(std::numeric_limits<float>::infinity());
  std::memcpy(bytes.data() + (2 * 2 + 1) * 34, &inf, 2);
  Weights bad;
  bad.Add("q.weight", DType::kQ8_0, {3, 64}, bytes);
  auto status = CheckTensorsFinite(bad.store(), "model.gguf", nullptr, nullptr);
  ASSERT_FALSE(status.has_value());
  EXPECT_TRUE(Contains(status.error().message, "q8_0 holds inf at element 160 (row 2, column 32)"))
      << status.error().message;
}

TEST(CheckTensorsTest, ThreadsFindTheSameFirstElement) {
  // Many rows, so the pool's threads take different chunks; the bad rows are far apart.
  const int64_t rows = 4096, columns = 64;
  std::vector<float> values(rows * columns, 1.0f);
  values[3000 * columns + 7] = std::numeric_limits<float>::quiet_NaN();
  values[100 * columns + 9] = -std::numeric_limits<float>::infinity();
  Weights w;
  w.AddF32("big.weight", {rows, columns}, values);
  ThreadPool pool(4);
  auto status = CheckTensorsFinite(w.store(), "model.gguf", nullptr, &pool);
  ASSERT_FALSE(status.has_value());
  EXPECT_TRUE(Contains(status.error().message, "holds -inf at element 6409 (row 100, column 9)"))
      << status.error().message;
}

}  // namespace
}  // namespace kite
