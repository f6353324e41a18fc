// libFuzzer: arbitrary bytes -> an OpenAI chat or completions request (server/openai_request.h).
// Whatever the parser accepts must be something the scheduler can be given: settings in the
// table's ranges, logprobs within OpenAI's limits, a prompt present; a refusal names a status
// of 400 and never leaves the message empty.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "server/openai_request.h"

namespace {

void Require(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // The first byte picks the endpoint (odd: completions).
  const kite::CompletionKind kind =
      data[0] & 1 ? kite::CompletionKind::kText : kite::CompletionKind::kChat;
  const std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  auto request = kite::ParseOpenAiRequest(kind, body, kite::RunSettings{});
  if (!request) {
    Require(request.error().status == 400 && !request.error().message.empty());
    return 0;
  }
  const kite::SamplerConfig& sampler = request->settings.sampler;
  Require(std::isfinite(sampler.temperature) && sampler.temperature >= 0);
  Require(sampler.top_p >= 0 && sampler.top_p <= 1);
  Require(std::isfinite(sampler.presence_penalty) && std::isfinite(sampler.frequency_penalty));
  Require(request->settings.n_predict >= -1);
  Require(request->top_logprobs >= 0 && request->top_logprobs <= kite::kMaxTopLogprobs);
  for (const std::string& stop : request->settings.stop) Require(!stop.empty());
  if (kind == kite::CompletionKind::kChat) {
    Require(!request->messages.empty());
  } else {
    for (int32_t id : request->prompt_ids) Require(id >= 0);
  }
  return 0;
}
