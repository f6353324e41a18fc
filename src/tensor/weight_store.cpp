#include "tensor/weight_store.h"

#include <atomic>

namespace kite {

uint64_t NewWeightId() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

const TensorView& WeightStore::Add(TensorView view) {
  view.id = NewWeightId();
  std::string name = view.name;
  return weights_.insert_or_assign(std::move(name), std::move(view)).first->second;
}

Result<TensorView> WeightStore::AddBuffer(std::string name, DType dtype,
                                          std::vector<int64_t> shape, AlignedBuffer buffer) {
  int64_t elements = 1;
  for (int64_t dim : shape) elements *= dim;
  const uint64_t needed = KITE_TRY(BytesFor(dtype, elements));
  if (buffer.size() < needed) {
    return InvalidInput("weight '" + name + "': " + ShapeString(shape) + " " +
                        std::string(DTypeName(dtype)) + " needs " + std::to_string(needed) +
                        " bytes, the buffer holds " + std::to_string(buffer.size()));
  }
  TensorView view{.name = name, .dtype = dtype, .shape = std::move(shape),
                  .data = buffer.data(), .bytes = needed};
  buffers_.push_back(std::move(buffer));
  return Add(std::move(view));
}

const TensorView* WeightStore::Find(std::string_view name) const {
  const auto it = weights_.find(name);
  return it == weights_.end() ? nullptr : &it->second;
}

uint64_t WeightStore::Bytes() const {
  uint64_t bytes = 0;
  for (const auto& [name, view] : weights_) bytes += view.bytes;
  return bytes;
}

}  // namespace kite
