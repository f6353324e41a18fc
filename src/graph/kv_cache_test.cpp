#include "graph/kv_cache.h"

#include <gtest/gtest.h>

namespace kite {
namespace {

TEST(KvCacheTypes, TypeNamesParseAsGgmlSpellsThem) {
  EXPECT_EQ(KvCacheTypeNames(), "f16, f32, q8_0");
  EXPECT_EQ(ParseKvCacheType("q8_0"), DType::kQ8_0);
  EXPECT_EQ(ParseKvCacheType("Q8_0"), DType::kQ8_0);
  EXPECT_EQ(ParseKvCacheType("f32"), DType::kF32);
  EXPECT_EQ(ParseKvCacheType("q4_0"), std::nullopt);
  EXPECT_EQ(ParseKvCacheType("fp16"), std::nullopt);
}

TEST(KvCacheTypes, HeadBytesAreWholeBlocks) {
  EXPECT_EQ(KvHeadBytes(DType::kQ8_0, 64), 2u * 34);
  EXPECT_EQ(KvHeadBytes(DType::kF16, 64), 128u);
  EXPECT_EQ(KvHeadBytes(DType::kF32, 64), 256u);
  EXPECT_TRUE(CheckKvHeadDim(DType::kQ8_0, 64).has_value());
  EXPECT_FALSE(CheckKvHeadDim(DType::kQ8_0, 48).has_value());
}

TEST(KvCacheView, TokensWithoutSequenceIdsAreAllInTheFirst) {
  KvLayerView a{.length = 1}, b{.length = 2};
  const KvSequenceView sequences[2] = {{.layers = {&a, 1}}, {.layers = {&b, 1}}};
  KvCacheView view{.sequences = sequences};
  EXPECT_EQ(view.sequence_of(3), 0);
  EXPECT_EQ(view.layer(3, 0).length, 1);
  const int32_t ids[2] = {1, 0};
  view.token_sequence = ids;
  EXPECT_EQ(view.layer(0, 0).length, 2);
  EXPECT_EQ(view.layer(1, 0).length, 1);
}

}  // namespace
}  // namespace kite
