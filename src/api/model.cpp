// kite_model: an Engine loaded once and shared by every session and thread; its tokenizer and
// chat template (runtime/prompt.h builds every prompt, as for the CLI and the server).
#include <cstdlib>
#include <cstring>

#include "api/handles.h"
#include "runtime/prompt.h"

namespace kite::api {

Result<std::vector<ChatMessage>> Messages(const char* function, const kite_message* messages,
                                          size_t count) {
  if (messages == nullptr && count > 0) {
    return InvalidInput(std::string(function) + ": messages is NULL");
  }
  std::vector<ChatMessage> conversation;
  for (size_t i = 0; i < count; ++i) {
    if (messages[i].role == nullptr || messages[i].content == nullptr) {
      return InvalidInput(std::string(function) + ": message " + std::to_string(i) + ": " +
                          (messages[i].role == nullptr ? "role" : "content") + " is NULL");
    }
    conversation.push_back({messages[i].role, messages[i].content});
  }
  return conversation;
}

}  // namespace kite::api

using kite::api::Fail;
using kite::api::FailNull;
using kite::api::Guard;

extern "C" {

kite_status kite_model_load(const char* path, const kite_params* params, kite_model** out) {
  return Guard(__func__, [&](const char* function) {
    if (out == nullptr) return FailNull(function, "out");
    *out = nullptr;
    auto model = std::make_unique<kite_model>();
    if (params != nullptr) model->settings = params->settings;
    if (path != nullptr) model->settings.model = path;
    if (model->settings.model.empty()) {
      return Fail(KITE_INVALID_INPUT, std::string(function) +
                                          ": no model: give a path or set \"model\" in the params");
    }
    auto engine = kite::Engine::Load(model->settings.model, model->settings.engine);
    if (!engine) return Fail(engine.error());
    model->engine = std::move(*engine);
    *out = model.release();
    return KITE_OK;
  });
}

void kite_model_free(kite_model* model) { delete model; }

int32_t kite_model_vocab_size(const kite_model* model) {
  return model == nullptr ? 0 : model->engine->tokenizer().vocab_size();
}

int32_t kite_model_context_length(const kite_model* model) {
  return model == nullptr ? 0 : model->engine->context_length();
}

int32_t kite_model_bos_id(const kite_model* model) {
  return model == nullptr ? -1 : model->engine->tokenizer().bos_id();
}

int kite_model_is_eos(const kite_model* model, int32_t id) {
  return model != nullptr && model->engine->IsEos(id) ? 1 : 0;
}

kite_status kite_tokenize(const kite_model* model, const char* text, size_t length,
                          int add_special, int32_t** ids_out, size_t* count_out) {
  return Guard(__func__, [&](const char* function) {
    if (model == nullptr) return FailNull(function, "model");
    if (text == nullptr && length > 0) return FailNull(function, "text");
    if (ids_out == nullptr) return FailNull(function, "ids_out");
    if (count_out == nullptr) return FailNull(function, "count_out");
    auto ids = model->engine->tokenizer().Encode(std::string_view(text == nullptr ? "" : text, length),
                                                 add_special != 0);
    if (!ids) return Fail(ids.error());
    // malloc(0) may return NULL: one element at least, so that NULL always means no memory.
    auto* copy = static_cast<int32_t*>(std::malloc(std::max<size_t>(ids->size(), 1) * sizeof(int32_t)));
    if (copy == nullptr) return Fail(KITE_OUT_OF_RESOURCES, std::string(function) + ": out of memory");
    if (!ids->empty()) std::memcpy(copy, ids->data(), ids->size() * sizeof(int32_t));
    *ids_out = copy;
    *count_out = ids->size();
    return KITE_OK;
  });
}

kite_status kite_detokenize(const kite_model* model, const int32_t* ids, size_t count,
                            char** text_out, size_t* length_out) {
  return Guard(__func__, [&](const char* function) {
    if (model == nullptr) return FailNull(function, "model");
    if (ids == nullptr && count > 0) return FailNull(function, "ids");
    if (text_out == nullptr) return FailNull(function, "text_out");
    const std::span<const int32_t> span(ids, ids == nullptr ? 0 : count);
    auto text = kite::DecodeIds(model->engine->tokenizer(), span, /*keep_special=*/false);
    if (!text) return Fail(text.error());
    *text_out = kite::api::CopyText(*text);
    if (*text_out == nullptr) return Fail(KITE_OUT_OF_RESOURCES, std::string(function) + ": out of memory");
    if (length_out != nullptr) *length_out = text->size();
    return KITE_OK;
  });
}

kite_status kite_chat_render(const kite_model* model, const kite_params* params,
                             const kite_message* messages, size_t count, char** prompt_out) {
  return Guard(__func__, [&](const char* function) {
    if (model == nullptr) return FailNull(function, "model");
    if (prompt_out == nullptr) return FailNull(function, "prompt_out");
    auto conversation = kite::api::Messages(function, messages, count);
    if (!conversation) return Fail(conversation.error());
    const kite::RunSettings& settings = params != nullptr ? params->settings : model->settings;
    const kite::Tokenizer& tokenizer = model->engine->tokenizer();
    auto chat_template = kite::SelectChatTemplate(tokenizer, settings.chat_template);
    if (!chat_template) return Fail(chat_template.error());
    auto prompt = kite::RenderChatPrompt(tokenizer, *chat_template, *conversation);
    if (!prompt) return Fail(prompt.error());
    *prompt_out = kite::api::CopyText(*prompt);
    if (*prompt_out == nullptr) return Fail(KITE_OUT_OF_RESOURCES, std::string(function) + ": out of memory");
    return KITE_OK;
  });
}

}  // extern "C"
