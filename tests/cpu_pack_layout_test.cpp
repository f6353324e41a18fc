// The cpu backend's packed layouts come from the dtype rows' code facts (tensor/types/), not
// from a list of dtypes: the layouts the matmul kernels read are pinned here, byte counts
// included, for the types that have them, and every other row is refused by name.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "backends/cpu/packed_matrix.h"
#include "tensor/dtype_row.h"

namespace kite::cpu {
namespace {

struct Expected {
  PackFamily family;
  PackKernel kernel;
  int32_t block;
  int32_t code_bits;
  int32_t zero;
  bool has_min;
  int64_t block_bytes;  // of one block of a 16-row group
  int64_t header_bytes = 0;  // of a 16-row group's super-block (k-quants)
};

TEST(CpuPackLayoutTest, KernelsFollowTheRowFacts) {
  const std::map<DType, Expected> kernels = {
      {DType::kF32, {PackFamily::kFloat, PackKernel::kF32, 1, 8, 0, false, 16 * 4}},
      {DType::kF16, {PackFamily::kFloat, PackKernel::kF16, 1, 8, 0, false, 16 * 2}},
      {DType::kBF16, {PackFamily::kFloat, PackKernel::kBF16, 1, 8, 0, false, 16 * 2}},
      // codes 16·32·bits/8, then f16 d[16] (and m[16])
      {DType::kQ4_0, {PackFamily::kLegacy, PackKernel::kLegacy4, 32, 4, 8, false, 256 + 32}},
      {DType::kQ4_1, {PackFamily::kLegacy, PackKernel::kLegacy4Min, 32, 4, 0, true, 256 + 64}},
      {DType::kQ8_0, {PackFamily::kLegacy, PackKernel::kLegacy8, 32, 8, 128, false, 512 + 32}},
      // 5-bit codes: nibbles, then a vector of top bits (the file's 20 bytes a row and block)
      {DType::kQ5_0, {PackFamily::kLegacy, PackKernel::kLegacy5, 32, 5, 16, false, 320 + 32}},
      {DType::kQ5_1, {PackFamily::kLegacy, PackKernel::kLegacy5Min, 32, 5, 0, true, 320 + 64}},
      // k-quants in blocks of 32 under super-blocks of 256 (kquant_repack.h): each block its
      // codes and int8 scale[16] (and min[16], or q6_K's second
      // half's scale[16]); each super-block headed by f16 d[16] (and -dmin[16])
      {DType::kQ4_K,
       {PackFamily::kLegacy, PackKernel::kSuper4Min, 32, 4, 0, true, 256 + 32, 64}},
      {DType::kQ5_K,
       {PackFamily::kLegacy, PackKernel::kSuper5Min, 32, 5, 0, true, 320 + 32, 64}},
      {DType::kQ6_K,
       {PackFamily::kLegacy, PackKernel::kSuper6Halves, 32, 6, 32, false, 384 + 32, 32}},
      // 4-bit level indices, looked up as level + 128: zero 128
      {DType::kIQ4_NL,
       {PackFamily::kLegacy, PackKernel::kLegacy4Levels, 32, 4, 128, false, 256 + 32}},
      {DType::kIQ4_XS,
       {PackFamily::kLegacy, PackKernel::kSuper4Levels, 32, 4, 128, false, 256 + 16, 32}},
  };
  for (const DTypeRow* row : AllRows()) {
    SCOPED_TRACE(std::string(row->name));
    const auto layout = LayoutOf(row->dtype);
    const auto it = kernels.find(row->dtype);
    if (it == kernels.end()) {
      ASSERT_FALSE(layout.has_value());
      EXPECT_EQ(layout.error().message,
                "the cpu backend has no matmul kernel for " + std::string(row->name) + " weights");
      continue;
    }
    ASSERT_TRUE(layout.has_value()) << layout.error().message;
    const Expected& e = it->second;
    EXPECT_EQ(layout->family, e.family);
    EXPECT_EQ(layout->kernel, e.kernel);
    EXPECT_EQ(layout->block, e.block);
    EXPECT_EQ(layout->code_bits, e.code_bits);
    EXPECT_EQ(layout->zero, e.zero);
    EXPECT_EQ(layout->has_min, e.has_min);
    EXPECT_EQ(layout->block_bytes, e.block_bytes);
    EXPECT_EQ(layout->header_bytes, e.header_bytes);
    EXPECT_EQ(layout->super_scales, e.header_bytes > 0);
  }
}

}  // namespace
}  // namespace kite::cpu
