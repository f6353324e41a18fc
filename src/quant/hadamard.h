// Hadamard rotation of a Llama model (QuaRot, Ashkboos et al. 2024; SpinQuant's R1/R2 with
// fixed random Hadamards), data-free: rotating the residual stream by an orthogonal Q spreads
// the few huge activation channels (and weight outliers) over all channels, so that 4-bit
// weights and 8-bit activations lose less; the model computes the same function.
//
//   Q = diag(d) · H_n / sqrt(n)   (H_n a Hadamard matrix, d random ±1 from a seed; QᵀQ = I)
//
// Done exactly on the weights, norms first folded into the linears after them (RMSNorm
// commutes with an orthogonal Q once its weight is 1, since ||x·Q|| = ||x||):
//   token_embd rows          E ← E·Q            (the stream starts rotated)
//   attn_q/k/v, ffn_gate/up,  W ← W·diag(g)·Q   (g: the norm before them, which becomes 1)
//   output (lm_head)
//   attn_output, ffn_down    W ← Qᵀ·W, bias ← bias·Q   (what they add to the stream)
// and per attention head (QuaRot's R2, also exact: attention output is linear in v per head):
//   attn_v rows of head h     ← H_dᵀ·W_h (bias b_h·H_d), attn_output columns of head h ← ·H_d
// with H_d = Hadamard(head_dim), the same for every head (so a KV head's matches its queries').
// A tied lm_head becomes its own "output.weight" (embedding and head now differ by g).
// Not done: QuaRot's online rotation before ffn_down (it needs a Hadamard op on the
// activation in the graph) and of the KV cache.
//
// Orders: n = 2^k·m with m = 1 or the order of a Paley Hadamard matrix (12, 20, 24, 28, 36,
// 44, ...: Paley I for primes q ≡ 3 mod 4, order q + 1; Paley II for primes q ≡ 1 mod 4,
// order 2(q + 1)); any other size is refused by name.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "models/model.h"
#include "tensor/dtype.h"

namespace kite {

class HadamardRotation {
 public:
  // An error names `what` (e.g. "hidden size") and n when no construction covers n.
  static Result<HadamardRotation> Make(int64_t n, uint32_t seed, std::string_view what);

  int64_t size() const { return n_; }
  // x [rows, n] ← x·Q, in place.
  void RotateRows(std::span<float> x) const;
  // w [n, cols] ← Qᵀ·w, in place (every column rotated).
  void RotateColumns(std::span<float> w, int64_t cols) const;

 private:
  int64_t n_ = 0;
  int64_t pow2_ = 1;          // 2^k
  int64_t m_ = 1;             // the small factor's order
  std::vector<float> small_;  // [m, m] ±1 (empty when m = 1)
  std::vector<float> signs_;  // [n] d
};

struct HadamardOptions {
  uint32_t seed = 0;
  bool heads = true;  // also the per-head rotation of attn_v / attn_output
};

// The rotations of a model: the residual stream's (hidden) and the heads' (head_dim).
struct ModelRotation {
  HadamardRotation residual;
  HadamardRotation head;
  bool heads = true;
};

Result<ModelRotation> MakeModelRotation(const ModelConfig& config, const HadamardOptions& options);

// The rotated values of the model's weight `name` (canonical; values: its f32 values, the
// weight's shape); norms' weights come back as ones and weights the rotation does not touch
// unchanged. For a tied lm_head, ask for "output.weight" with token_embd's values. The weights
// one at a time, so a driver can stream a model through it. Errors name the weight.
Result<std::vector<float>> RotateWeight(const Model& model, const ModelRotation& rotation,
                                        std::string_view name, std::vector<float> values);

// The whole model rotated, as a new Model whose weights it owns, stored as `storage` (f32 for
// an exact function, f16 or bf16 to halve the memory of a large model before calibrating and
// quantizing it); a tied lm_head becomes "output.weight". What `kite quantize --hadamard`
// calibrates and quantizes instead of the input.
Result<std::unique_ptr<Model>> RotateModel(const Model& model, const HadamardOptions& options,
                                           DType storage = DType::kF32);

}  // namespace kite
