// kite_session: one Session of the model's engine, its generations (raw text, ids, chat) and
// their cancellation from another thread.
#include "api/handles.h"
#include "runtime/prompt.h"
#include "runtime/run_config.h"

namespace kite::api {

namespace {

// Marks the session's generation as running for as long as it lives (see kite_session::mutex).
class Running {
 public:
  explicit Running(kite_session* session) : session_(session) {
    std::lock_guard lock(session_->mutex);
    session_->running = true;
    session_->cancel.store(false, std::memory_order_relaxed);
  }
  ~Running() {
    std::lock_guard lock(session_->mutex);
    session_->running = false;
  }
  Running(const Running&) = delete;
  Running& operator=(const Running&) = delete;

 private:
  kite_session* session_;
};

kite_status Generate(const char* function, kite_session* session, std::span<const int32_t> ids,
                     const RunSettings& defaults, kite_token_callback on_token, void* user_data,
                     kite_result** result_out) {
  RunSettings settings = defaults;
  DrawSeedIfRandom(&settings);  // seed -1: a seed of its own per generation
  Session::GenerateOptions options = GenerateOptionsOf(settings);
  // The cancel flag is read by Generate before each prefill chunk and decode step, and here
  // before each token is handed out (returning false ends Generate before the next step).
  options.cancel = &session->cancel;
  options.on_token = [&](int32_t id, std::string_view text) {
    if (session->cancel.load(std::memory_order_acquire)) return false;
    return on_token == nullptr || on_token(user_data, id, text.data(), text.size()) != 0;
  };
  Result<Session::GenerateResult> generated;
  bool cancelled = false;
  {
    Running running(session);
    generated = session->session.Generate(ids, options);
    cancelled = generated && (generated->stop_reason == "cancelled" ||
                              (generated->stop_reason == "callback" &&
                               session->cancel.load(std::memory_order_acquire)));
  }
  if (!generated) return Fail(generated.error());
  if (result_out != nullptr) {
    auto result = std::make_unique<kite_result>();
    result->text = std::move(generated->text);
    result->ids = std::move(generated->ids);
    result->stop_reason = cancelled ? "cancelled" : generated->stop_reason;
    result->prompt_tokens = generated->prompt_tokens;
    result->reused_tokens = generated->reused_tokens;
    *result_out = result.release();
  }
  if (cancelled) {
    return Fail(KITE_CANCELLED, std::string(function) + ": cancelled by kite_session_cancel");
  }
  return KITE_OK;
}

const RunSettings& SettingsOf(const kite_session* session, const kite_params* params) {
  return params != nullptr ? params->settings : session->model->settings;
}

}  // namespace

}  // namespace kite::api

using kite::api::Fail;
using kite::api::FailNull;
using kite::api::Guard;

extern "C" {

kite_status kite_session_new(kite_model* model, kite_session** out) {
  return Guard(__func__, [&](const char* function) {
    if (out == nullptr) return FailNull(function, "out");
    *out = nullptr;
    if (model == nullptr) return FailNull(function, "model");
    *out = new kite_session(model);
    return KITE_OK;
  });
}

void kite_session_free(kite_session* session) { delete session; }

void kite_session_reset(kite_session* session) {
  if (session != nullptr) session->session.Reset();
}

int32_t kite_session_n_past(const kite_session* session) {
  return session == nullptr ? 0 : session->session.n_past();
}

kite_status kite_session_save(const kite_session* session, const char* path) {
  return Guard(__func__, [&](const char* function) {
    if (session == nullptr) return FailNull(function, "session");
    if (path == nullptr) return FailNull(function, "path");
    if (kite::Status status = session->session.Save(path); !status) return Fail(status.error());
    return KITE_OK;
  });
}

kite_status kite_session_load(kite_session* session, const char* path) {
  return Guard(__func__, [&](const char* function) {
    if (session == nullptr) return FailNull(function, "session");
    if (path == nullptr) return FailNull(function, "path");
    if (kite::Status status = session->session.Load(path); !status) return Fail(status.error());
    return KITE_OK;
  });
}

void kite_session_cancel(kite_session* session) {
  if (session == nullptr) return;
  std::lock_guard lock(session->mutex);
  if (session->running) session->cancel.store(true, std::memory_order_release);
}

kite_status kite_generate(kite_session* session, const char* prompt, const kite_params* params,
                          kite_token_callback on_token, void* user_data, kite_result** result_out) {
  return Guard(__func__, [&](const char* function) {
    if (session == nullptr) return FailNull(function, "session");
    if (prompt == nullptr) return FailNull(function, "prompt");
    auto ids = kite::RawPromptIds(session->model->engine->tokenizer(), prompt);
    if (!ids) return Fail(ids.error());
    return kite::api::Generate(function, session, *ids, kite::api::SettingsOf(session, params),
                               on_token, user_data, result_out);
  });
}

kite_status kite_generate_tokens(kite_session* session, const int32_t* ids, size_t count,
                                 const kite_params* params, kite_token_callback on_token,
                                 void* user_data, kite_result** result_out) {
  return Guard(__func__, [&](const char* function) {
    if (session == nullptr) return FailNull(function, "session");
    if (ids == nullptr && count > 0) return FailNull(function, "ids");
    return kite::api::Generate(function, session, std::span<const int32_t>(ids, ids ? count : 0),
                               kite::api::SettingsOf(session, params), on_token, user_data,
                               result_out);
  });
}

kite_status kite_generate_chat(kite_session* session, const kite_message* messages, size_t count,
                               const kite_params* params, kite_token_callback on_token,
                               void* user_data, kite_result** result_out) {
  return Guard(__func__, [&](const char* function) {
    if (session == nullptr) return FailNull(function, "session");
    auto conversation = kite::api::Messages(function, messages, count);
    if (!conversation) return Fail(conversation.error());
    const kite::RunSettings& settings = kite::api::SettingsOf(session, params);
    const kite::Tokenizer& tokenizer = session->model->engine->tokenizer();
    auto chat_template = kite::SelectChatTemplate(tokenizer, settings.chat_template);
    if (!chat_template) return Fail(chat_template.error());
    auto ids = kite::ChatPromptIds(tokenizer, *chat_template, *conversation);
    if (!ids) return Fail(ids.error());
    return kite::api::Generate(function, session, *ids, settings, on_token, user_data, result_out);
  });
}

const char* kite_result_text(const kite_result* result, size_t* length_out) {
  if (result == nullptr) {
    if (length_out != nullptr) *length_out = 0;
    return "";
  }
  if (length_out != nullptr) *length_out = result->text.size();
  return result->text.c_str();
}

const int32_t* kite_result_ids(const kite_result* result, size_t* count_out) {
  if (count_out != nullptr) *count_out = result == nullptr ? 0 : result->ids.size();
  return result == nullptr ? nullptr : result->ids.data();
}

const char* kite_result_stop_reason(const kite_result* result) {
  return result == nullptr ? "" : result->stop_reason.c_str();
}

int32_t kite_result_prompt_tokens(const kite_result* result) {
  return result == nullptr ? 0 : result->prompt_tokens;
}

int32_t kite_result_reused_tokens(const kite_result* result) {
  return result == nullptr ? 0 : result->reused_tokens;
}

void kite_result_free(kite_result* result) { delete result; }

}  // extern "C"
