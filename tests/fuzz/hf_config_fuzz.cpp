// libFuzzer: arbitrary text -> ParseHfConfig. An accepted config must satisfy what the parser
// promises the model builders (positive sizes, heads that divide).
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "format/hf_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto config = kite::ParseHfConfig(text, "fuzz/config.json");
  if (!config) return 0;
  const kite::HfConfig& c = *config;
  if (c.vocab_size < 1 || c.hidden_size < 1 || c.intermediate_size < 1 || c.num_hidden_layers < 1 ||
      c.num_attention_heads < 1 || c.num_key_value_heads < 1 || c.head_dim < 1 ||
      c.max_position_embeddings < 1 || !(c.rms_norm_eps > 0) || !(c.rope_theta > 0) ||
      !(c.rope_scaling.factor > 0)) {
    std::abort();
  }
  if (c.num_attention_heads % c.num_key_value_heads != 0) std::abort();
  if (c.rope_scaling.type == "llama3" &&
      !(c.rope_scaling.low_freq_factor < c.rope_scaling.high_freq_factor)) {
    std::abort();
  }
  return 0;
}
