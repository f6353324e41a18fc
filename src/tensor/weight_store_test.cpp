#include "tensor/weight_store.h"

#include <gtest/gtest.h>

namespace kite {
namespace {

TEST(WeightStoreTest, EveryWeightAndEveryReplacementGetsANewId) {
  WeightStore store;
  const float values[4] = {1, 2, 3, 4};
  const uint64_t a = store.Add({.name = "a", .shape = {4}, .data = values, .bytes = 16}).id;
  const uint64_t b = store.Add({.name = "b", .shape = {4}, .data = values, .bytes = 16}).id;
  EXPECT_NE(a, 0u);
  EXPECT_NE(a, b);
  // Same name, same bytes: still a new id, since the store cannot know the bytes are unchanged.
  const uint64_t a2 = store.Add({.name = "a", .shape = {4}, .data = values, .bytes = 16}).id;
  EXPECT_NE(a2, a);
  EXPECT_EQ(store.Find("a")->id, a2);
  EXPECT_EQ(store.weights().size(), 2u);
  EXPECT_EQ(store.Bytes(), 32u);
  EXPECT_EQ(store.Find("c"), nullptr);
}

TEST(WeightStoreTest, ABufferReplacesAWeightAndStaysOwned) {
  WeightStore store;
  const float values[4] = {1, 2, 3, 4};
  const uint64_t old_id = store.Add({.name = "w", .shape = {4}, .data = values, .bytes = 16}).id;
  AlignedBuffer buffer = *AlignedBuffer::Allocate(16);
  reinterpret_cast<float*>(buffer.data())[3] = 7.0f;
  const TensorView view = *store.AddBuffer("w", DType::kF32, {4}, std::move(buffer));
  EXPECT_NE(view.id, old_id);
  EXPECT_EQ(store.Find("w")->data, view.data);
  EXPECT_EQ(static_cast<const float*>(store.Find("w")->data)[3], 7.0f);
}

TEST(WeightStoreTest, ABufferTooSmallForTheShapeIsRefusedNamingTheWeight) {
  WeightStore store;
  const auto view = store.AddBuffer("blk.0.w", DType::kF32, {2, 4}, *AlignedBuffer::Allocate(16));
  ASSERT_FALSE(view.has_value());
  EXPECT_NE(view.error().message.find("blk.0.w"), std::string::npos);
  EXPECT_NE(view.error().message.find("32"), std::string::npos);
}

}  // namespace
}  // namespace kite
