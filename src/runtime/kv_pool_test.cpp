#include "runtime/kv_pool.h"

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

std::set<std::byte*> PagesInUse(const KvSequence& cache) {
  std::set<std::byte*> pages;
  for (const KvLayerView& layer : cache.view().layers) {
    for (std::byte* page : layer.pages) pages.insert(page);
  }
  return pages;
}

TEST(KvPool, RejectsBadConfig) {
  KvCacheConfig config = SmallConfig();
  config.n_pages = 0;
  const auto empty = KvPool::Create(config);
  ASSERT_FALSE(empty.has_value());
  EXPECT_NE(empty.error().message.find("n_pages"), std::string::npos);
  config = SmallConfig();
  config.dtype = DType::kQ4_0;  // not a KV cache type
  const auto q4 = KvPool::Create(config);
  ASSERT_FALSE(q4.has_value());
  EXPECT_NE(q4.error().message.find("expected one of f16, f32, q8_0"), std::string::npos)
      << q4.error().message;
  config = SmallConfig();
  config.dtype = DType::kQ8_0;  // head_dim 4: not whole blocks of 32
  const auto q8 = KvPool::Create(config);
  ASSERT_FALSE(q8.has_value());
  EXPECT_NE(q8.error().message.find("head_dim 4 is not a multiple of 32"), std::string::npos)
      << q8.error().message;
  EXPECT_NE(q8.error().message.find("q8_0"), std::string::npos) << q8.error().message;
}

// A q8_0 row is, per head, head_dim / 32 blocks of 34 bytes (32 codes, an f16 scale): a head is
// whole blocks, and the pool is sized from that, not from 1 byte an element.
TEST(KvPool, Q8_0RowsAreWholeBlocksPerHead) {
  KvCacheConfig config = SmallConfig();
  config.dtype = DType::kQ8_0;
  config.n_kv_heads = 3;
  config.head_dim = 64;
  const auto pool = *KvPool::Create(config);
  KvSequence cache(pool.get());
  ASSERT_TRUE(cache.Resize(5));
  const KvLayerView& layer = cache.view().layers[1];
  EXPECT_EQ(layer.head_bytes, 2u * 34);
  EXPECT_EQ(layer.row_bytes(), 3u * 2 * 34);
  EXPECT_EQ(layer.value(0), layer.key(3) + layer.row_bytes());  // k rows, then v rows
}

TEST(KvPool, ResizeMapsPagesPerLayer) {
  const auto pool = *KvPool::Create(SmallConfig());
  KvSequence cache(pool.get());
  EXPECT_EQ(pool->free_pages(), 10);
  ASSERT_TRUE(cache.Resize(5));  // 2 pages of 4 positions, for each of 2 layers
  EXPECT_EQ(cache.length(), 5);
  EXPECT_EQ(pool->free_pages(), 6);
  const KvSequenceView view = cache.view();
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

TEST(KvPool, ShrinkReturnsPagesAndGrowReusesThem) {
  const auto pool = *KvPool::Create(SmallConfig());
  KvSequence cache(pool.get());
  ASSERT_TRUE(cache.Resize(16));  // 4 pages per layer: 8 of 10
  EXPECT_EQ(pool->free_pages(), 2);
  const std::set<std::byte*> all = PagesInUse(cache);
  ASSERT_TRUE(cache.Resize(4));  // 1 page per layer
  EXPECT_EQ(pool->free_pages(), 8);
  ASSERT_TRUE(cache.Resize(12));
  EXPECT_EQ(pool->free_pages(), 4);
  for (std::byte* page : PagesInUse(cache)) EXPECT_TRUE(all.count(page)) << "a new page?";
  ASSERT_TRUE(cache.Resize(0));
  EXPECT_EQ(pool->free_pages(), 10);
  EXPECT_TRUE(PagesInUse(cache).empty());
}

TEST(KvPool, OutOfPagesChangesNothing) {
  const auto pool = *KvPool::Create(SmallConfig());
  KvSequence cache(pool.get());
  ASSERT_TRUE(cache.Resize(8));
  const Status status = cache.Resize(21);  // 6 pages per layer: 12 > 10
  ASSERT_FALSE(status.has_value());
  EXPECT_EQ(status.error().code, ErrorCode::kOutOfResources);
  EXPECT_EQ(cache.length(), 8);
  EXPECT_EQ(pool->free_pages(), 6);
  EXPECT_FALSE(cache.Resize(-1).has_value());
}

// Sequences of one pool hold distinct pages, and a sequence that goes returns its pages.
TEST(KvPool, SequencesShareThePoolWithDistinctPages) {
  const auto pool = *KvPool::Create(SmallConfig());
  KvSequence a(pool.get());
  ASSERT_TRUE(a.Resize(8));  // 2 pages x 2 layers
  {
    KvSequence b(pool.get());
    ASSERT_TRUE(b.Resize(4));  // 1 page x 2 layers
    EXPECT_EQ(pool->free_pages(), 4);
    for (std::byte* page : PagesInUse(b)) EXPECT_FALSE(PagesInUse(a).count(page));
    const Status short_pool = b.Resize(16);  // 3 more pages x 2 layers: 6 > 4
    ASSERT_FALSE(short_pool.has_value());
    EXPECT_NE(short_pool.error().message.find("shared by every session"), std::string::npos)
        << short_pool.error().message;
    EXPECT_EQ(b.length(), 4);
  }
  EXPECT_EQ(pool->free_pages(), 6);
  EXPECT_EQ(a.batch_view().sequences.size(), 1u);
  EXPECT_EQ(a.batch_view().layer(0, 1).length, 8);
}

// Sliding-window layers give back the pages no later query sees; the others keep theirs.
TEST(KvPool, ReleaseBelowGivesBackTheSlidingLayersOldPages) {
  const auto pool = *KvPool::Create(SmallConfig());
  const int64_t all = pool->free_pages();
  const int32_t page = pool->config().page_size;
  const int32_t layers = pool->config().n_layers;
  std::vector<bool> sliding(layers, true);
  sliding[0] = false;  // a global layer
  {
    KvSequence s(pool.get());
    ASSERT_TRUE(s.Resize(3 * page + 1).has_value());  // 4 pages a layer
    const int64_t used = all - pool->free_pages();
    EXPECT_EQ(used, 4 * layers);
    s.ReleaseBelow(sliding, 2 * page + 1);  // pages 0 and 1 of the sliding layers
    EXPECT_EQ(s.released(), 2 * page);
    EXPECT_EQ(all - pool->free_pages(), used - 2 * (layers - 1));
    EXPECT_EQ(s.view().layers[1].pages[1], nullptr);
    EXPECT_NE(s.view().layers[0].pages[1], nullptr);  // the global layer keeps its rows
    s.ReleaseBelow(sliding, page);                    // nothing new below
    EXPECT_EQ(s.released(), 2 * page);
    // Growing and shrinking past the released pages leaves them alone.
    ASSERT_TRUE(s.Resize(5 * page).has_value());
    ASSERT_TRUE(s.Resize(2 * page + 3).has_value());
    EXPECT_EQ(s.view().layers[1].pages[0], nullptr);
    // Rewinding below them starts afresh: every position has a page again.
    ASSERT_TRUE(s.Resize(page).has_value());
    EXPECT_EQ(s.released(), 0);
    EXPECT_NE(s.view().layers[1].pages[0], nullptr);
    EXPECT_EQ(all - pool->free_pages(), layers);
    s.ReleaseBelow(sliding, 5 * page);  // no further than the length
    EXPECT_EQ(s.released(), page);
  }
  EXPECT_EQ(pool->free_pages(), all);  // everything back, released or not
}

}  // namespace
}  // namespace kite
