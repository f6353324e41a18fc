// Turning what the user typed into prompt token ids: raw (BOS as the tokenizer's config says,
// then the text) or wrapped in the model's chat template.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "runtime/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace kite::cli {

// BOS (when the tokenizer adds one) + the text; never a trailing EOS, which would end the
// continuation before it starts.
Result<std::vector<int32_t>> RawPromptIds(const Tokenizer& tokenizer, const std::string& text);

// The model's template, or the built-in one named by `builtin_name` when not empty. A model
// without a template and no name is an error listing the built-in names.
Result<ChatTemplate> SelectChatTemplate(const Tokenizer& tokenizer, const std::string& builtin_name);

// Renders the conversation (ending with the assistant's header) and tokenizes it. Templates
// write BOS as text; it becomes the BOS id even for tokenizers that do not match special tokens
// in text (a SentencePiece tokenizer.model).
Result<std::vector<int32_t>> ChatPromptIds(const Tokenizer& tokenizer, const ChatTemplate& chat_template,
                                           const std::vector<ChatMessage>& messages);

}  // namespace kite::cli
