// Batched decode: one graph run carries the next token of up to `parallel` sessions of one
// Engine, so a server's decode step reads the weights once for all its streams instead of once
// per stream (continuous batching: the caller picks which sessions join each step).
//
// The contract:
// - Step(sessions, tokens) feeds tokens[i] to *sessions[i] at that session's own position
//   (its n_past()); each session attends to its own KV sequence only (per-token sequence ids and
//   page tables in the run's KvCacheView). Sessions may be at any positions.
// - The logits of row i are the same bits as sessions[i]->Feed({tokens[i]}) alone would give,
//   whatever the other rows are and however many there are (the step's KV view says its rows
//   are decode steps, and the kernels then compute each token's row as for T = 1, on cpu any
//   weights at any B: cpu::MatMulJob::decode_steps): greedy output never depends on the
//   server's load.
// - All or nothing: on any error (a bad id, a session at the end of its context, the same
//   session twice, a session of another engine, the KV pool out of pages, a kernel error) no
//   session's history or cache changes, and the message names the row (index i) at fault.
// - On success each session's history gains its token, as after Feed. A session's own
//   Feed/Generate may be used between steps (prefill, then join the batch).
// - One decoder is used by one thread at a time; the sessions of a step must not be used by
//   another thread during it. Several decoders may share an engine.
// - No allocation per step in steady state: the compiled graph of each batch size is kept by the
//   engine (never evicted) and the decoder keeps a lease on it and its scratch.
//
//   BatchDecoder decoder(*engine);
//   std::array<Session*, 2> batch{&a, &b};
//   std::array<int32_t, 2> next{id_a, id_b};
//   std::span<const float> logits = KITE_TRY(decoder.Step(batch, next));  // [2, vocab]
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "base/status.h"
#include "graph/kv_cache.h"
#include "runtime/engine.h"

namespace kite {

class Session;

class BatchDecoder {
 public:
  // `engine` must outlive the decoder. Batches of 1 .. max_batch() sessions.
  explicit BatchDecoder(const Engine& engine);
  ~BatchDecoder();
  BatchDecoder(const BatchDecoder&) = delete;
  BatchDecoder& operator=(const BatchDecoder&) = delete;

  // The engine's `parallel`: as many sessions as the KV pool holds whole contexts for.
  int32_t max_batch() const;

  // Feeds tokens[i] to *sessions[i] (sizes equal, 1 .. max_batch()). Returns the logits [B,
  // vocab] row-major, row i for sessions[i]; valid until the next Step or the decoder goes.
  // InvalidInput for bad arguments, OutOfResources when the pool has no page for a session's
  // next position; nothing changes then.
  Result<std::span<const float>> Step(std::span<Session* const> sessions,
                                      std::span<const int32_t> tokens);

  // Steps from now on show every node to `observer` (nullptr: nobody), which must outlive them:
  // `kite bench --profile`.
  void set_observer(Observer* observer) { observer_ = observer; }

 private:
  const Engine& engine_;
  Observer* observer_ = nullptr;
  // leases_[B]: the graph of B tokens with every token's logits, taken on first use.
  std::vector<std::optional<Engine::GraphLease>> leases_;
  std::vector<int32_t> positions_;         // [max_batch]
  std::vector<int32_t> token_sequence_;    // [max_batch]: row i is sequence i
  std::vector<KvSequenceView> sequences_;  // [max_batch]
};

}  // namespace kite
