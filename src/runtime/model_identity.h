// A model's identity: what tells a file written for one model's weights (a saved session, cached
// reference logits) from another's.
#pragma once

#include <cstdint>

#include "models/model.h"

namespace kite {

// What identifies the loaded weights, cheaply and the same on every load: the architecture and
// shapes, every tensor's name, type and shape, and 16 windows of 4 KiB spread over each tensor's
// bytes (all of a tensor up to 64 KiB). Another model of the same shape, or a fine-tune that kept
// the embeddings, differs in the sampled bytes of its changed tensors; hashing every byte would
// read the whole model on each /save and /load.
uint64_t ModelIdentity(const Model& model);

}  // namespace kite
