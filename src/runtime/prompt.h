// Turning what the user typed into prompt token ids, raw (BOS as the tokenizer's config says,
// then the text) or wrapped in the model's chat template, and ids back into text. The CLI, the
// server and the C API all build their prompts here.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "chat/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace kite {

// BOS (when the tokenizer adds one) + the text; never a trailing EOS, which would end the
// continuation before it starts.
Result<std::vector<int32_t>> RawPromptIds(const Tokenizer& tokenizer, const std::string& text);

// The text of `ids` as `kite detokenize` prints it: the BOS/EOS that Encode(text,
// add_special=true) puts around a text are dropped at the ends (so that encoding and decoding
// give the text back), unless `keep_special`.
Result<std::string> DecodeIds(const Tokenizer& tokenizer, std::span<const int32_t> ids,
                              bool keep_special);

// The model's template, or the built-in one named by `builtin_name` when not empty. A model
// without a template and no name is an error listing the built-in names.
Result<ChatTemplate> SelectChatTemplate(const Tokenizer& tokenizer, const std::string& builtin_name);

// The conversation as the template writes it, ending with the assistant's header.
Result<std::string> RenderChatPrompt(const Tokenizer& tokenizer, const ChatTemplate& chat_template,
                                     const std::vector<ChatMessage>& messages);

// Renders the conversation (ending with the assistant's header) and tokenizes it. Templates
// write BOS as text; it becomes the BOS id even for tokenizers that do not match special tokens
// in text (a SentencePiece tokenizer.model).
Result<std::vector<int32_t>> ChatPromptIds(const Tokenizer& tokenizer, const ChatTemplate& chat_template,
                                           const std::vector<ChatMessage>& messages);

// The prompt of the next turn of a multi-turn chat.
struct ChatTurnPrompt {
  std::vector<int32_t> ids;  // the whole conversation up to the new assistant header
  std::string rendered;      // the template's text of the same (for the turn after)
  int32_t new_tokens = 0;    // ids appended to the history; ids.size() when rendered afresh
};
// `messages` ends with the new user message; `history` holds the ids of the conversation before
// it as they were processed (prompts and replies as generated, which re-tokenizing the reply's
// text need not give back), `rendered` the template's text up to the last reply (the previous
// turn's ChatTurnPrompt::rendered). When the template writes the earlier turns as before, the
// prompt is `history` + the ids of what the template writes after the last reply (the end of
// the assistant's turn, the new user turn, the assistant header), so that only the new turn is
// computed; otherwise (an empty history, a template that rewrites earlier turns) it is the
// whole conversation rendered and tokenized anew, and the session reuses the KV of its prefix.
Result<ChatTurnPrompt> NextChatTurnPrompt(const Tokenizer& tokenizer,
                                          const ChatTemplate& chat_template,
                                          const std::vector<ChatMessage>& messages,
                                          std::span<const int32_t> history,
                                          std::string_view rendered);

}  // namespace kite
