// Session: one conversation with an Engine. It owns a sequence of the engine's KV pool and the
// history it holds, feeds tokens through the engine's graphs in prefill chunks, reuses the
// longest common prefix of a new prompt (multi-turn chat), generates with the sampler chain and
// saves/restores its state. Sessions of one engine run side by side, on any threads, each
// keeping its own cache; a session itself is used by one thread at a time. Several sessions'
// decode steps can also share one graph run (runtime/batch_decode.h), and a session can take
// another's prefix rows (CopyPrefixFrom). The engine must outlive its sessions.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "runtime/draft_length.h"
#include "runtime/drafter.h"
#include "runtime/engine.h"
#include "runtime/sampler.h"
#include "runtime/speculator.h"

namespace kite {

class Session {
 public:
  // OutOfResources (naming the pool) comes later, from the feed that finds no free page.
  explicit Session(const Engine& engine);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Feeds `tokens` at positions [n_past, n_past + T), in chunks of the engine's prefill_chunk.
  // Returns the logits of the last token, [vocab], or with all_logits those of every token,
  // [T, vocab] row-major (for perplexity). The span stays valid until the next call that feeds.
  // InvalidInput when T is 0, an id is outside the vocabulary, or n_past + T exceeds the
  // context (the message gives both numbers); nothing is fed then.
  Result<std::span<const float>> Feed(std::span<const int32_t> tokens, bool all_logits = false);

  // Feeds `tokens` (1 <= T <= the engine's prefill_chunk) in one run in which every row is
  // computed as a decode step of that token alone would be (attention through the one-token
  // kernel, as in a batched decode step whose rows are all this sequence), so the logits [T,
  // vocab] are the same bits as T calls of Feed with one token: speculative verification feeds
  // a draft this way, and greedy output then equals plain decoding's exactly, near-ties
  // included. InvalidInput as Feed, or for T above the prefill chunk.
  Result<std::span<const float>> FeedAsDecodeSteps(std::span<const int32_t> tokens);

  struct PromptResult {
    int32_t reused = 0;             // tokens of the history kept in the cache
    std::span<const float> logits;  // [vocab] of the prompt's last token
  };
  // Keeps the longest common prefix of `ids` with the history (at most ids.size() - 1 tokens,
  // since the last token must be fed to get its logits), drops the rest of the cache and feeds
  // the remainder.
  Result<PromptResult> FeedPrompt(std::span<const int32_t> ids);

  // Keeps the longest common prefix of `ids` with the history, at most ids.size() - 1 tokens
  // (the caller feeds at least the last token, for its logits), and drops the rest of the
  // history and the cache pages past it (back to the pool). Returns the kept length. FeedPrompt
  // is ReusePrefix, then Feed of what follows the kept prefix.
  int32_t ReusePrefix(std::span<const int32_t> ids);

  // Makes this session's history the first `length` tokens of `other`'s, copying their KV rows
  // (the prefix cache across sessions: a system prompt computed once serves every session).
  // Then feeding the same tokens to both gives the same logits. `other` is a session of the
  // same engine, not fed by another thread during the call; length <= other.n_past().
  // InvalidInput for another engine or a length out of range, OutOfResources when the pool is
  // short; this session is unchanged then.
  Status CopyPrefixFrom(const Session& other, int32_t length);

  struct GenerateOptions {
    int32_t max_tokens = 256;  // < 0: until an EOS token or the context is full
    bool ignore_eos = false;   // EOS tokens are sampled and fed like any other
    std::vector<std::string> stop_strings;  // generation ends before the first one appears
    SamplerConfig sampler;
    // Called with each token and the text it releases (possibly "", while text that may start
    // a stop string is held back); the last call may carry text with id -1 (held-back text
    // flushed at the end). Returning false stops generation (stop_reason "callback").
    std::function<bool(int32_t id, std::string_view text)> on_token;
    // Set (from any thread) to stop: checked before each prefill chunk and each decode step.
    // A cancelled Generate returns stop_reason "cancelled" with what it sampled so far, and the
    // cache keeps only the prefix it reused: the pages this call took go back to the pool.
    const std::atomic<bool>* cancel = nullptr;
    // Speculative decoding (runtime/speculator.h): each decode step feeds a draft of `drafter`
    // with the token before it in one pass and keeps what the target agrees with; nullptr:
    // plain decoding. Greedy output is the same tokens either way; sampled output is a sample
    // of the same distribution (other draws). Used by this call only, while it runs.
    Drafter* drafter = nullptr;
    DraftLimits draft_limits;
  };
  struct GenerateResult {
    std::vector<int32_t> ids;  // the sampled tokens, without a final EOS
    std::string text;          // their text, without a stop string and what follows it
    // "eos", "stop_string", "max_tokens", "context_full", "callback" or "cancelled".
    std::string stop_reason;
    int32_t prompt_tokens = 0;   // tokens of the prompt
    int32_t reused_tokens = 0;   // of which came from the cache
    int32_t prefill_tokens = 0;  // fed in the prefill (prompt - reused)
    double prefill_seconds = 0.0;
    int32_t decode_tokens = 0;  // tokens fed (and kept) after the prompt
    double decode_seconds = 0.0;
    SpeculativeStats speculative;  // all zero without a drafter
  };
  // FeedPrompt(prompt_ids), then samples up to max_tokens tokens, feeding each back. Stops on
  // any EOS id of the model (unless ignore_eos), on a stop string, at max_tokens, when the context is full or when
  // on_token says so. InvalidInput when the prompt is empty or longer than the context (both
  // numbers in the message; `kite run --truncate` trims it first).
  Result<GenerateResult> Generate(std::span<const int32_t> prompt_ids,
                                  const GenerateOptions& options);

  // Forgets the history (the cache pages return to the pool).
  void Reset();
  // Keeps the first `length` tokens of the history (all of it when it is shorter) and drops the
  // rest with their cache pages, e.g. what a cancelled request added after its prompt. Keeps
  // none when a sliding window released KV rows the kept prefix's next query would see.
  void Truncate(int32_t length);
  // Sliding-window layers keep `tokens` KV rows more than the next query sees, so that a
  // Truncate of that many tokens loses no row of the window: speculative decoding driven from
  // outside Generate (the server's scheduler) sets its --draft-max. Generate sets its own.
  void set_rollback_reserve(int32_t tokens) { rollback_reserve_ = tokens; }
  const std::vector<int32_t>& history() const { return history_; }
  const Engine& engine() const { return engine_; }
  int32_t n_past() const { return static_cast<int32_t>(history_.size()); }
  // The KV cache rows of the history.
  const KvSequence& kv_sequence() const { return sequence_; }

  // Runs from now on show every node to `observer` (nullptr: nobody), which must outlive them:
  // the profiler, calibration.
  void set_observer(Observer* observer) { observer_ = observer; }

  // The history and its KV cache rows, as a GGUF file (kite.session.* metadata, tensors
  // "history" and blk.N.k / blk.N.v [n_past, n_kv_heads, head_dim]). Load refuses a file made
  // for another model or longer than the context, naming the field; a file without the KV rows
  // or with another KV type is re-fed instead.
  Status Save(const std::string& path) const;
  Status Load(const std::string& path);

 private:
  friend class BatchDecoder;  // feeds a token of this session in a batched run
  // InvalidInput unless `tokens` is not empty, every id is in the vocabulary and they fit in
  // the context after the history.
  Status CheckFeed(std::span<const int32_t> tokens) const;
  // Feeds checked tokens in chunks; returns an empty span, having fed the chunks before, when
  // `cancel` is set before a chunk.
  Result<std::span<const float>> FeedChunks(std::span<const int32_t> tokens, bool all_logits,
                                            const std::atomic<bool>* cancel);
  // FeedPrompt, stopped as FeedChunks is by `cancel` (the result's logits are empty then).
  Result<PromptResult> FeedPromptUntil(std::span<const int32_t> ids,
                                       const std::atomic<bool>* cancel);
  // Feeds one chunk (T <= prefill_chunk) at position n_past; as_decode_steps: see
  // FeedAsDecodeSteps.
  Result<std::span<const float>> FeedChunk(std::span<const int32_t> tokens, bool all_logits,
                                           bool as_decode_steps = false);
  // Gives back the KV pages no later query of a sliding-window layer sees.
  void ReleaseOutsideWindows();

  const Engine& engine_;
  KvSequence sequence_;
  // The graph of the last feed: its outputs are the logits the caller may still read, and the
  // next feed of the same shape (the next decode step) runs it again.
  std::optional<Engine::GraphLease> lease_;
  // FeedAsDecodeSteps' graphs, by token count, kept apart from lease_ so that speculative
  // decoding, which alternates decode steps and passes of several lengths, does not hand graphs
  // back and forth (and take another's arena, cold in the caches) on every step.
  std::vector<std::optional<Engine::GraphLease>> step_leases_;
  Observer* observer_ = nullptr;
  std::vector<int32_t> history_;
  std::vector<int32_t> positions_;  // scratch [prefill_chunk]
  // FeedAsDecodeSteps' view: token t is "sequence" t, every one of them this sequence.
  std::vector<KvSequenceView> step_views_;  // [prefill_chunk]
  std::vector<int32_t> step_order_;         // [prefill_chunk]: 0, 1, 2, ...
  std::vector<float> all_logits_;   // [T, vocab] of the last Feed with all_logits
  std::vector<bool> sliding_;       // per layer: attends through the sliding window
  int32_t window_ = 0;              // the sliding layers' window; 0: none
  // Positions a sliding window's KV rows are kept beyond what the next query sees, so that
  // Truncate can take back that many tokens (speculative decoding's rejected drafts).
  int32_t rollback_reserve_ = 0;
};

}  // namespace kite
