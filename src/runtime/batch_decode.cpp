#include "runtime/batch_decode.h"

#include <algorithm>
#include <string>

#include "runtime/context_limit.h"
#include "runtime/session.h"

namespace kite {

BatchDecoder::BatchDecoder(const Engine& engine)
    : engine_(engine),
      leases_(engine.options().parallel + 1),
      positions_(engine.options().parallel),
      token_sequence_(engine.options().parallel),
      sequences_(engine.options().parallel) {
  for (int32_t i = 0; i < max_batch(); ++i) token_sequence_[i] = i;  // row i is sequence i
}

BatchDecoder::~BatchDecoder() = default;

int32_t BatchDecoder::max_batch() const { return engine_.options().parallel; }

Result<std::span<const float>> BatchDecoder::Step(std::span<Session* const> sessions,
                                                  std::span<const int32_t> tokens) {
  const int64_t batch = std::ssize(sessions);
  if (batch < 1 || batch > max_batch()) {
    return InvalidInput("a batched decode step of " + std::to_string(batch) +
                        " sessions; expected 1.." + std::to_string(max_batch()) +
                        " (the engine's parallel)");
  }
  if (std::ssize(tokens) != batch) {
    return InvalidInput("a batched decode step of " + std::to_string(batch) + " sessions with " +
                        std::to_string(tokens.size()) + " tokens; expected one token a session");
  }
  const int32_t vocab = engine_.config().vocab;
  // Messages name the row at fault (built only on an error: a step allocates nothing).
  auto row = [](int64_t i) { return "row " + std::to_string(i) + " of a batched decode step"; };
  for (int64_t i = 0; i < batch; ++i) {
    const Session* session = sessions[i];
    if (session == nullptr) return InvalidInput(row(i) + ": no session");
    if (&session->engine_ != &engine_) {
      return InvalidInput(row(i) + ": a session of another engine");
    }
    if (std::find(sessions.begin(), sessions.begin() + i, session) != sessions.begin() + i) {
      return InvalidInput(row(i) + ": a session already in the step");
    }
    if (tokens[i] < 0 || tokens[i] >= vocab) {
      return InvalidInput(row(i) + ": id " + std::to_string(tokens[i]) +
                          ", outside the model's vocabulary [0, " + std::to_string(vocab) + ")");
    }
    if (session->n_past() >= engine_.context_length()) {
      return std::unexpected(
          std::move(
              CheckContextRoom("the token", session->n_past(), 1, engine_.context_length()).error())
              .WithContext(row(i)));
    }
  }

  // Pages for every session's next position, all or none.
  auto shrink = [&](int64_t count) {
    for (int64_t i = 0; i < count; ++i) {
      (void)sessions[i]->sequence_.Resize(sessions[i]->n_past());  // shrinking cannot fail
    }
  };
  for (int64_t i = 0; i < batch; ++i) {
    Session& session = *sessions[i];
    if (Status grown = session.sequence_.Resize(session.n_past() + 1); !grown) {
      shrink(i);
      return std::unexpected(std::move(grown.error()).WithContext(row(i)));
    }
    positions_[i] = session.n_past();
    sequences_[i] = session.sequence_.view();
  }

  std::optional<Engine::GraphLease>& lease = leases_[batch];
  if (!lease) {
    auto leased = engine_.LeaseGraph(static_cast<int32_t>(batch), /*all_logits=*/true);
    if (!leased) {
      shrink(batch);
      return std::unexpected(std::move(leased.error()));
    }
    lease = std::move(*leased);
  }
  RunState& state = lease->state();
  const KvCacheView view{.sequences = std::span(sequences_).first(batch),
                         .token_sequence = std::span(token_sequence_).first(batch)};
  Status status = state.SetInput("tokens", tokens);
  if (status) status = state.SetInput("positions", std::span(positions_).first(batch));
  if (status) status = lease->Run({.kv_cache = &view, .observer = observer_});
  if (!status) {
    shrink(batch);
    return std::unexpected(std::move(status.error()));
  }
  for (int64_t i = 0; i < batch; ++i) {
    sessions[i]->history_.push_back(tokens[i]);
    sessions[i]->ReleaseOutsideWindows();
  }
  return state.OutputF32(0);
}

}  // namespace kite
