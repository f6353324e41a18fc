// The dtype rows (tensor/types/): one per ggml id, consistent with each other, and their code
// facts true of the bytes: a block unpacked to codes and scales and put through the family's
// formula gives what Dequantize gives, so code that reads the facts (the cpu backend's packing)
// computes the same numbers.
#include "tensor/dtype_row.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "base/half.h"
#include "tensor/dequantize.h"
#include "tensor/quantize.h"
#include "tensor/types/families.h"

namespace kite {
namespace {

// Every enumerator of DType (dtype.h), written out so that one without a row fails here.
constexpr DType kAllTypes[] = {
    DType::kF32,    DType::kF16,   DType::kQ4_0,    DType::kQ4_1,   DType::kQ5_0,    DType::kQ5_1,
    DType::kQ8_0,   DType::kQ8_1,  DType::kQ2_K,    DType::kQ3_K,   DType::kQ4_K,    DType::kQ5_K,
    DType::kQ6_K,   DType::kQ8_K,  DType::kIQ2_XXS, DType::kIQ2_XS, DType::kIQ3_XXS, DType::kIQ1_S,
    DType::kIQ4_NL, DType::kIQ3_S, DType::kIQ2_S,   DType::kIQ4_XS, DType::kI8,      DType::kI16,
    DType::kI32,    DType::kI64,   DType::kF64,     DType::kIQ1_M,  DType::kBF16,    DType::kTQ1_0,
    DType::kTQ2_0,  DType::kU8,    DType::kU16,     DType::kI4,     DType::kU4,
};

// llama.cpp's tensor_type_fallback (llama-quant.cpp) for the super-block types: what a tensor
// whose rows are not whole super-blocks gets instead.
TEST(DTypeRowTest, SuperBlockTypesFallBackAsLlamaCpp) {
  EXPECT_EQ(FindRow(DType::kQ2_K)->fallback, DType::kIQ4_NL);
  EXPECT_EQ(FindRow(DType::kQ3_K)->fallback, DType::kIQ4_NL);
  EXPECT_EQ(FindRow(DType::kIQ4_XS)->fallback, DType::kIQ4_NL);
  EXPECT_EQ(FindRow(DType::kQ4_K)->fallback, DType::kQ5_0);
  EXPECT_EQ(FindRow(DType::kQ5_K)->fallback, DType::kQ5_1);
  EXPECT_EQ(FindRow(DType::kQ6_K)->fallback, DType::kQ8_0);
}

// u8 and u16 are the integer activations of quantized graphs: a file's type id 1024 is not one.
TEST(DTypeRowTest, KiteOnlyTypesAreNeverReadFromAFile) {
  EXPECT_FALSE(LookupDType(static_cast<uint32_t>(DType::kU8)).has_value());
  EXPECT_FALSE(LookupDType(static_cast<uint32_t>(DType::kU16)).has_value());
  EXPECT_FALSE(LookupDType(static_cast<uint32_t>(DType::kI4)).has_value());
  EXPECT_EQ(Traits(DType::kU4).block_size, 2);  // two codes a byte
  EXPECT_EQ(Traits(DType::kU4).block_bytes, 1);
  EXPECT_TRUE(LookupDType(static_cast<uint32_t>(DType::kQ4_0)).has_value());
  EXPECT_EQ(Traits(DType::kU16).block_bytes, 2);
}

TEST(DTypeRowTest, OneRowPerTypeIdAndName) {
  std::set<uint32_t> ids;
  std::set<std::string> names;
  size_t rows = 0;
  for (auto family : {internal::FloatTypeRows, internal::LegacyQuantRows, internal::KQuantRows,
                      internal::NonLinearQuantRows, internal::OtherTypeRows,
                      internal::PackedInt4Rows}) {
    for (const DTypeRow& row : family()) {
      ++rows;
      EXPECT_TRUE(ids.insert(static_cast<uint32_t>(row.dtype)).second)
          << "two rows for type id " << static_cast<uint32_t>(row.dtype);
      std::string lower(row.name);
      for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      EXPECT_TRUE(names.insert(lower).second) << "two rows named " << row.name;
    }
  }
  EXPECT_EQ(AllRows().size(), rows);
  EXPECT_EQ(rows, std::size(kAllTypes));
  for (DType dtype : kAllTypes) {
    const DTypeRow* row = FindRow(dtype);
    ASSERT_NE(row, nullptr) << "no row for type id " << static_cast<uint32_t>(dtype);
    EXPECT_EQ(row->dtype, dtype);
    EXPECT_EQ(ParseDType(row->name), dtype);
    EXPECT_EQ(Traits(dtype).name, row->name);
    EXPECT_EQ(Traits(dtype).block_size, row->block_size);
    EXPECT_EQ(Traits(dtype).block_bytes, row->block_bytes);
    EXPECT_EQ(Traits(dtype).can_dequantize, row->dequantize != nullptr);
  }
  EXPECT_EQ(FindRow(static_cast<DType>(33)), nullptr);  // a gap in ggml's ids
  EXPECT_EQ(FindRow(static_cast<DType>(1000)), nullptr);
}

TEST(DTypeRowTest, RowsAreConsistent) {
  for (const DTypeRow* row : AllRows()) {
    SCOPED_TRACE(std::string(row->name));
    EXPECT_GT(row->block_size, 0);
    EXPECT_GT(row->block_bytes, 0);
    // What Kite writes it can read back, and a block quantizer checks its input.
    if (row->quantize != nullptr) {
      EXPECT_NE(row->dequantize, nullptr);
      EXPECT_EQ(row->quantize_input != QuantizeInput::kAny, row->block_size > 1);
    }
    // A file type is only offered for a type Kite can write, with a fallback it can write.
    if (row->file_type != kNoFileType) {
      EXPECT_NE(row->quantize, nullptr);
      EXPECT_NE(FindRow(row->fallback)->quantize, nullptr);
    }
    // Code facts and an unpacker come together, on block types of one family.
    if (row->unpack != nullptr) {
      EXPECT_TRUE(row->codes.family == BlockFamily::kLegacy ||
                  row->codes.family == BlockFamily::kKQuant);
      EXPECT_GE(row->codes.code_bits, 1);
      EXPECT_LE(row->codes.code_bits, 8);
      EXPECT_GT(row->codes.sub_block, 0);
      EXPECT_EQ(row->block_size % row->codes.sub_block, 0);
      EXPECT_LE(row->block_size, 256);
      EXPECT_LE(row->block_size / row->codes.sub_block, 16);
    }
    if (row->codes.family == BlockFamily::kFloat) {
      EXPECT_EQ(row->block_size, 1);
    }
  }
}

// y = d·(q - zero) (+ m) for legacy blocks, d·sc·(q - zero) (- dmin·mn) per sub-block for
// k-quants (q6_K's scales are signed bytes); levels[q] in place of q - zero for non-linear codes.
float FromCodes(const CodeFacts& c, const UnpackedBlock& u, int e) {
  const float q = static_cast<float>(c.levels != nullptr ? c.levels[u.codes[e]]
                                                         : u.codes[e] - c.zero);
  if (c.family == BlockFamily::kLegacy) {
    return F16ToF32(u.d16) * q + (c.has_min ? F16ToF32(u.m16) : 0.0f);
  }
  const int s = e / c.sub_block;
  const float sc =
      c.has_min ? static_cast<float>(u.sc[s]) : static_cast<float>(static_cast<int8_t>(u.sc[s]));
  return u.d * sc * q - (c.has_min ? u.dmin * static_cast<float>(u.mn[s]) : 0.0f);
}

TEST(DTypeRowTest, UnpackedCodesFollowTheFactsToTheDecodedValues) {
  std::mt19937 rng(8);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  int checked = 0;
  for (const DTypeRow* row : AllRows()) {
    if (row->unpack == nullptr) continue;
    SCOPED_TRACE(std::string(row->name));
    ++checked;
    const int n = row->block_size * 3;
    std::vector<float> x(n);
    for (int i = 0; i < n; ++i) x[i] = normal(rng) * (i < row->block_size ? 0.01f : 3.0f);
    std::vector<uint8_t> bytes(row->block_bytes * 3);
    ASSERT_TRUE(Quantize(row->dtype, x.data(), bytes.data(), n).has_value());
    std::vector<float> y(n);
    ASSERT_TRUE(Dequantize(row->dtype, bytes.data(), y.data(), n).has_value());
    for (int b = 0; b < 3; ++b) {
      UnpackedBlock u;
      row->unpack(bytes.data() + b * row->block_bytes, &u);
      for (int e = 0; e < row->block_size; ++e) {
        ASSERT_LT(u.codes[e], 1 << row->codes.code_bits) << "element " << e;
        const float want = y[b * row->block_size + e];
        ASSERT_NEAR(FromCodes(row->codes, u, e), want, 1e-5f * (1.0f + std::fabs(want)))
            << "block " << b << " element " << e;
      }
    }
  }
  EXPECT_GE(checked, 8);  // q4_0, q4_1, q8_0, q4_K, q5_K, q6_K, iq4_nl, iq4_xs
}

}  // namespace
}  // namespace kite
