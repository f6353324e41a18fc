#include "graph/kv_cache.h"

#include <gtest/gtest.h>

#include <set>

namespace kite {
namespace {

KvCacheConfig SmallConfig() {
  return {.n_layers = 2,
          .n_kv_heads = 2,
          .head_dim = 4,
          .page_size = 4,
          .n_pages = 10,
          .dtype = DType::kF16};
}

std::set<std::byte*> PagesInUse(const KvCache& cache) {
  std::set<std::byte*> pages;
  for (const KvLayerView& layer : cache.view().layers) {
    for (std::byte* page : layer.pages) pages.insert(page);
  }
  return pages;
}

TEST(KvCache, RejectsBadConfig) {
  KvCacheConfig config = SmallConfig();
  config.n_pages = 0;
  const Result<KvCache> empty = KvCache::Create(config);
  ASSERT_FALSE(empty.has_value());
  EXPECT_NE(empty.error().message.find("n_pages"), std::string::npos);
  config = SmallConfig();
  config.dtype = DType::kQ4_0;  // not a KV cache type
  const Result<KvCache> q4 = KvCache::Create(config);
  ASSERT_FALSE(q4.has_value());
  EXPECT_NE(q4.error().message.find("expected one of f16, f32, q8_0"), std::string::npos)
      << q4.error().message;
  config = SmallConfig();
  config.dtype = DType::kQ8_0;  // head_dim 4: not whole blocks of 32
  const Result<KvCache> q8 = KvCache::Create(config);
  ASSERT_FALSE(q8.has_value());
  EXPECT_NE(q8.error().message.find("head_dim 4 is not a multiple of 32"), std::string::npos)
      << q8.error().message;
  EXPECT_NE(q8.error().message.find("q8_0"), std::string::npos) << q8.error().message;
}

TEST(KvCache, TypeNamesParseAsGgmlSpellsThem) {
  EXPECT_EQ(KvCacheTypeNames(), "f16, f32, q8_0");
  EXPECT_EQ(ParseKvCacheType("q8_0"), DType::kQ8_0);
  EXPECT_EQ(ParseKvCacheType("Q8_0"), DType::kQ8_0);
  EXPECT_EQ(ParseKvCacheType("f32"), DType::kF32);
  EXPECT_EQ(ParseKvCacheType("q4_0"), std::nullopt);
  EXPECT_EQ(ParseKvCacheType("fp16"), std::nullopt);
}

// A q8_0 row is, per head, head_dim / 32 blocks of 34 bytes (32 codes, an f16 scale): a head is
// whole blocks, and the pool is sized from that, not from 1 byte an element.
TEST(KvCache, Q8_0RowsAreWholeBlocksPerHead) {
  KvCacheConfig config = SmallConfig();
  config.dtype = DType::kQ8_0;
  config.n_kv_heads = 3;
  config.head_dim = 64;
  KvCache cache = *KvCache::Create(config);
  ASSERT_TRUE(cache.Resize(5));
  const KvLayerView& layer = cache.view().layers[1];
  EXPECT_EQ(layer.head_bytes, 2u * 34);
  EXPECT_EQ(layer.row_bytes(), 3u * 2 * 34);
  EXPECT_EQ(layer.value(0), layer.key(3) + layer.row_bytes());  // k rows, then v rows
  EXPECT_EQ(KvHeadBytes(DType::kF16, 64), 128u);
  EXPECT_EQ(KvHeadBytes(DType::kF32, 64), 256u);
}

TEST(KvCache, ResizeMapsPagesPerLayer) {
  KvCache cache = *KvCache::Create(SmallConfig());
  EXPECT_EQ(cache.free_pages(), 10);
  ASSERT_TRUE(cache.Resize(5));  // 2 pages of 4 positions, for each of 2 layers
  EXPECT_EQ(cache.length(), 5);
  EXPECT_EQ(cache.free_pages(), 6);
  const KvCacheView view = cache.view();
  ASSERT_EQ(view.layers.size(), 2u);
  for (const KvLayerView& layer : view.layers) {
    EXPECT_EQ(layer.length, 5);
    EXPECT_EQ(layer.pages.size(), 2u);
    EXPECT_EQ(layer.row_bytes(), 2u * 4 * 2);  // 2 heads x 4 dims x f16
  }
  EXPECT_EQ(PagesInUse(cache).size(), 4u);  // no page is mapped twice

  // Each position's k and v rows are distinct, 16-byte ranges: mark them all and check none was
  // marked before.
  std::set<const std::byte*> rows;
  for (const KvLayerView& layer : view.layers) {
    for (int64_t pos = 0; pos < 8; ++pos) {  // both pages in full
      EXPECT_TRUE(rows.insert(layer.key(pos)).second);
      EXPECT_TRUE(rows.insert(layer.value(pos)).second);
    }
  }
  // Within a page, k rows come first, then v rows: v of position 0 follows k of position 3.
  const KvLayerView& layer0 = view.layers[0];
  EXPECT_EQ(layer0.value(0), layer0.key(3) + layer0.row_bytes());
  EXPECT_EQ(layer0.key(5), layer0.pages[1] + layer0.row_bytes());
}

TEST(KvCache, ShrinkReturnsPagesAndGrowReusesThem) {
  KvCache cache = *KvCache::Create(SmallConfig());
  ASSERT_TRUE(cache.Resize(16));  // 4 pages per layer: 8 of 10
  EXPECT_EQ(cache.free_pages(), 2);
  const std::set<std::byte*> all = PagesInUse(cache);
  ASSERT_TRUE(cache.Resize(4));  // 1 page per layer
  EXPECT_EQ(cache.free_pages(), 8);
  ASSERT_TRUE(cache.Resize(12));
  EXPECT_EQ(cache.free_pages(), 4);
  for (std::byte* page : PagesInUse(cache)) EXPECT_TRUE(all.count(page)) << "a new page?";
  ASSERT_TRUE(cache.Resize(0));
  EXPECT_EQ(cache.free_pages(), 10);
  EXPECT_TRUE(PagesInUse(cache).empty());
}

TEST(KvCache, OutOfPagesChangesNothing) {
  KvCache cache = *KvCache::Create(SmallConfig());
  ASSERT_TRUE(cache.Resize(8));
  const Status status = cache.Resize(21);  // 6 pages per layer: 12 > 10
  ASSERT_FALSE(status.has_value());
  EXPECT_EQ(status.error().code, ErrorCode::kOutOfResources);
  EXPECT_EQ(cache.length(), 8);
  EXPECT_EQ(cache.free_pages(), 6);
  EXPECT_FALSE(cache.Resize(-1).has_value());
}

}  // namespace
}  // namespace kite
