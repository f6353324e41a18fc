// Qwen3's dense decoder, as the Qwen3 technical report and transformers' Qwen3 describe it: the
// Llama decoder without q/k/v biases, with an RMSNorm over each q and k head (its own weight
// [head_dim], the same for every head) between the projection and RoPE, and head_dim given
// apart from hidden / heads (128 for every size). The Llama builder runs it (config.qk_norm).
// llama.cpp's GGUF arch "qwen3": blk.N.attn_q_norm.weight, blk.N.attn_k_norm.weight.
#include "models/qwen3.h"

#include "models/llama.h"

namespace kite {

namespace {

const HfNamePart kQwen3HfParts[] = {
    {"attn_q_norm.", "self_attn.q_norm."},
    {"attn_k_norm.", "self_attn.k_norm."},
};

Status Qwen3FromHf(const HfConfig&, ModelConfig* config) {
  config->qk_norm = true;
  return Ok();
}

Status Qwen3FromGguf(const GgufFile&, const std::string&, ModelConfig* config) {
  config->qk_norm = true;
  return Ok();
}

std::string Qwen3GgufArch(const ModelConfig&) { return "qwen3"; }

}  // namespace

const Architecture kQwen3Architecture = {.family = "qwen3",
                                         .tensors = &LlamaTensors,
                                         .create = &CreateLlamaFamilyModel,
                                         .hf_parts = kQwen3HfParts,
                                         .from_hf = &Qwen3FromHf,
                                         .from_gguf = &Qwen3FromGguf,
                                         .gguf_arch = &Qwen3GgufArch};

}  // namespace kite
