#include "models/model.h"

namespace kite {

Result<const TensorView*> Model::Weight(std::string_view name) const {
  const TensorView* view = weights_.Find(name);
  if (view == nullptr) {
    return NotFound(config_.source + ": model has no weight '" + std::string(name) + "'");
  }
  return view;
}

const QuantEncoding* Model::WeightEncoding(std::string_view name) const {
  const auto it = encodings_.find(name);
  return it == encodings_.end() ? nullptr : &it->second;
}

}  // namespace kite
