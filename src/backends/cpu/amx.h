// Whether the cpu kernels may use Intel AMX (Advanced Matrix Extensions: Sapphire Rapids and
// later Xeons): eight tile registers of up to 16 rows x 64 bytes and an instruction that
// multiplies two of them into a third, 16 x 16 x 32 bf16 products (TDPBF16PS) at a time.
// Linux hands a process AMX's 8 KB of tile state only when asked (arch_prctl
// ARCH_REQ_XCOMP_PERM); until then the instructions fault.
#pragma once

#include <atomic>
#include <cstdint>

namespace kite::cpu {

// CPUID's AMX-TILE and AMX-BF16, and AVX512_BF16, which the AMX kernels also use (what scratch
// memory is sized for); false off x86-64 Linux.
bool CpuHasAmxBf16();
// CpuHasAmxBf16 and Linux granting the tile data state. The grant is asked for at the first
// call, from the first prefill that could take AMX, not at start: it enlarges every signal
// frame of the process, which a program that loads libkite and never runs one should not pay.
bool CpuCanUseAmxBf16();
// Off: prefills keep to the AVX-512 kernels on a CPU with AMX (tests; --no-amx, through
// BackendOptions::amx). A matmul reads it once (MatMulJob::amx).
inline std::atomic<bool> amx_bf16_allowed = true;
// Whether a prefill of BF16 or integer weights runs on AMX's bf16 tiles (matmul_bf16_amx-inl.h,
// matmul_dequant_pairs-inl.h).
inline bool UseAmxBf16() {
  return amx_bf16_allowed.load(std::memory_order_relaxed) && CpuCanUseAmxBf16();
}

// A tile's rows (tokens of x) and the bf16 of K it takes (64 bytes a row).
inline constexpr int kAmxTileRows = 16;
inline constexpr int64_t kAmxTileK = 32;
// An AMX bf16 prefill reads x as rows of AmxPaddedK(K) bf16, AmxPaddedTokens(T) of them (tiles
// of 32 tokens), the padding zero.
inline int64_t AmxPaddedK(int64_t k) { return (k + kAmxTileK - 1) / kAmxTileK * kAmxTileK; }
inline int64_t AmxPaddedTokens(int64_t tokens) {
  return (tokens + 2 * kAmxTileRows - 1) / (2 * kAmxTileRows) * (2 * kAmxTileRows);
}

}  // namespace kite::cpu
