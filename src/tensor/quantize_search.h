// llama.cpp's scale searches (ggml-quants.c), the building blocks of its importance-weighted
// quantizers (tensor/quantize_ggml_*.cpp). Each returns the scale of a group of n values and
// leaves its codes in L; they follow ggml's float arithmetic operation for operation (same
// operand order, float throughout, ggml's rounding helper), because a different rounding of one
// intermediate picks a different code and llama.cpp's files must come out byte for byte.
// Internal to the tensor layer.
#pragma once

#include <cstdint>

namespace kite::internal {

// Rounds to nearest, ties to even, as ggml's nearest_int (|v| < 2^22).
int NearestInt(float v);

// Symmetric codes L in 0..2·nmax-1 (value l - nmax) for x ≈ scale·(L - nmax), the scale found
// by trying 19 steps around nmax/max and keeping the one with the least error weighted by qw
// (or, without qw, by x², 1, |x| or sqrt|x| for rmse_type 1..4; rmse_type 0: no search).
float MakeQxQuants(int n, int nmax, const float* x, int8_t* L, int rmse_type, const float* qw);

// q3_K's variant without weights: the codes are refined one at a time (x²-weighted) instead.
float MakeQ3Quants(int n, int nmax, const float* x, int8_t* L, bool do_rmse);

// Asymmetric codes L in 0..nmax for x ≈ scale·L - the_min, from a least-squares fit of scale and
// min over nstep+1 trial inverse scales (rmin + rdelta·i + nmax)/(max - min), weighted by
// `weights` (absolute error when use_mad). MakeQkx3Quants takes x² when weights is null.
float MakeQkx2Quants(int n, int nmax, const float* x, const float* weights, uint8_t* L,
                     float* the_min, uint8_t* Laux, float rmin, float rdelta, int nstep,
                     bool use_mad);
float MakeQkx3Quants(int n, int nmax, const float* x, const float* weights, uint8_t* L,
                     float* the_min, uint8_t* Laux, float rmin, float rdelta, int nstep,
                     bool use_mad);

// Unsigned codes L in 0..nmax for non-negative x (sub-block scales or mins) under one scale,
// weighted by quant_weights: the k-quants' super-block scale.
float MakeQpQuants(int n, int nmax, const float* x, uint8_t* L, const float* quant_weights);

// The index of the level of `val` (n sorted levels, n a power of 2) nearest to x, ties to the
// upper one.
int BestIndexInt8(int n, const int8_t* val, float x);

}  // namespace kite::internal
