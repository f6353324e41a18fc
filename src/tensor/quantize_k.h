// Quantizers for the k-quants, the encoders of the k-quant rows (tensor/types/k_quants.cpp).
// Internal to the tensor layer.
#pragma once

#include <cstdint>

#include "tensor/quant_blocks.h"

namespace kite::internal {

// Round-to-nearest quantizers of one super-block (kQKK floats, already checked finite and within
// the F16 range): Quantize's.
BlockQ2_K QuantizeQ2_KBlock(const float* x);
BlockQ3_K QuantizeQ3_KBlock(const float* x);
BlockQ4_K QuantizeQ4_KBlock(const float* x);
BlockQ5_K QuantizeQ5_KBlock(const float* x);
BlockQ6_K QuantizeQ6_KBlock(const float* x);

// llama.cpp's quantizers of one row of n elements (whole super-blocks, checked as above) with
// its scale searches, weighted by importance (n floats) when not null: QuantizeRows's, the bytes
// of ggml_quantize_chunk (tensor/quantize_ggml_k.cpp).
void SearchQ2_KRow(const float* x, void* dst, int64_t n, const float* importance);
void SearchQ3_KRow(const float* x, void* dst, int64_t n, const float* importance);
void SearchQ4_KRow(const float* x, void* dst, int64_t n, const float* importance);
void SearchQ5_KRow(const float* x, void* dst, int64_t n, const float* importance);
void SearchQ6_KRow(const float* x, void* dst, int64_t n, const float* importance);

// Code placement shared by both (codes[e] is element e's code, the buffers start zeroed):
// low two bits of e to qs[32*(e/128) + e%32] at bit 2*((e%128)/32) (q2_K, q3_K);
void PackTwoBit(const uint8_t* codes, uint8_t* qs);
// low four bits of e to qs[32*(e/64) + e%32], high nibble when e%64 >= 32 (q4_K, q5_K);
void PackFourBit(const uint8_t* codes, uint8_t* qs);
// bit `bit` of e to bit e/32 of plane[e%32] (q3_K's hmask, q5_K's qh);
void PackBitPlane(const uint8_t* codes, int bit, uint8_t* plane);
// six-bit codes into q6_K's ql and qh.
void PackSixBit(const uint8_t* codes, BlockQ6_K& b);

}  // namespace kite::internal
