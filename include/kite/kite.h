/* kite.h — Kite's C API: load a model once, run it from many threads, stream tokens.
 *
 * C99, no exceptions cross it: every call that can fail returns a kite_status, and the message
 * of the last failure on the calling thread is kite_last_error(). Link with libkite.so
 * (CMake: find_package(Kite) and target Kite::kite; pkg-config: kite).
 *
 *   kite_model* model;
 *   if (kite_model_load("models/demo", NULL, &model) != KITE_OK) {
 *     fprintf(stderr, "%s\n", kite_last_error());
 *   }
 *   kite_session* session;
 *   kite_session_new(model, &session);
 *   kite_generate(session, "Once upon a time", NULL, print_token, NULL, NULL);
 *   kite_session_free(session);
 *   kite_model_free(model);
 *
 * Settings (kite_params) are those of `kite run` and run.json, by their run.json keys
 * ("context", "threads", "sampler.temp", "sampler.top_p", "n_predict", "stop", ...), checked by
 * the same table: a refused value fails with the words `kite run` uses, naming the key:
 *   kite_params: "sampler.top_p" = 2: must be in [0, 1]
 *
 * Thread safety:
 * - kite_model: read-only once loaded. Any number of threads may use one model at once, each
 *   with its own sessions (they share the weights, the compiled graphs and the KV page pool).
 *   Free it after all its sessions, when no thread uses it.
 * - kite_session: used by one thread at a time, except kite_session_cancel, which any thread
 *   may call while the session exists.
 * - kite_params: changed by one thread at a time; a params object nobody changes may be passed
 *   to calls on many threads at once (calls only read it).
 * - kite_last_error(): per thread; valid until the next failing kite_* call on that thread.
 * - Callbacks run on the thread that called kite_generate*, before it returns. From a callback,
 *   call nothing on the same session except kite_session_cancel.
 * - Strings and arrays a kite_* call allocates for the caller are freed with kite_free().
 */
#ifndef KITE_KITE_H_
#define KITE_KITE_H_

#include <stddef.h>
#include <stdint.h>

/* The version of this header. kite_check_version tells whether the library loaded at run time
 * serves it: the same major version and a minor version at least this one. */
#define KITE_VERSION_MAJOR 0
#define KITE_VERSION_MINOR 1
#define KITE_VERSION_PATCH 0
#define KITE_VERSION_STRING "0.1.0"

#if defined(__GNUC__) || defined(__clang__)
#define KITE_API __attribute__((visibility("default")))
#else
#define KITE_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum kite_status {
  KITE_OK = 0,
  KITE_INVALID_INPUT = 1,     /* a bad argument, file or value */
  KITE_UNSUPPORTED = 2,       /* well-formed but not handled (an architecture, a dtype) */
  KITE_NOT_FOUND = 3,         /* a file, key or tensor that is not there */
  KITE_OUT_OF_RESOURCES = 4,  /* memory, context length, KV pages */
  KITE_INTERNAL = 5,          /* a bug in Kite */
  KITE_CANCELLED = 6,         /* kite_session_cancel stopped the generation */
  KITE_VERSION_MISMATCH = 7   /* kite_check_version: the library does not serve this header */
} kite_status;

/* The message of the last failed kite_* call on this thread ("" when none): what went wrong,
 * naming the file, setting, tensor or position. */
KITE_API const char* kite_last_error(void);
/* "ok", "invalid_input", ... */
KITE_API const char* kite_status_name(kite_status status);

/* The library's version, "MAJOR.MINOR.PATCH". */
KITE_API const char* kite_version(void);
/* KITE_OK when the library serves a header of version major.minor; otherwise
 * KITE_VERSION_MISMATCH, with both versions in kite_last_error(). Call it as
 * kite_check_version(KITE_VERSION_MAJOR, KITE_VERSION_MINOR). */
KITE_API kite_status kite_check_version(int major, int minor);

/* Frees what a kite_* call allocated for the caller (token arrays, texts). NULL is allowed. */
KITE_API void kite_free(void* pointer);

/* ---- Settings ------------------------------------------------------------------------------ */

typedef struct kite_params kite_params;

/* A new set of settings with the defaults of `kite run` (see `kite run --help`). */
KITE_API kite_status kite_params_new(kite_params** out);
KITE_API void kite_params_free(kite_params* params);
/* Set one setting by its run.json key. A list setting ("stop") gains one entry per call. A
 * float setting takes an integer too. Unknown keys, values of the wrong type and values out of
 * range fail with KITE_INVALID_INPUT and leave the params as they were. */
KITE_API kite_status kite_params_set_int(kite_params* params, const char* key, int64_t value);
KITE_API kite_status kite_params_set_float(kite_params* params, const char* key, double value);
KITE_API kite_status kite_params_set_bool(kite_params* params, const char* key, int value);
KITE_API kite_status kite_params_set_string(kite_params* params, const char* key, const char* value);
/* A run.json object as text, e.g. {"sampler": {"temp": 0}, "n_predict": 16}. */
KITE_API kite_status kite_params_set_json(kite_params* params, const char* json);
/* A config file: Kite's run.json or Genie's genie_config.json (as `kite run --config`). */
KITE_API kite_status kite_params_load_file(kite_params* params, const char* path);

/* ---- Models -------------------------------------------------------------------------------- */

typedef struct kite_model kite_model;

/* Loads a Hugging Face folder or a .gguf file (path NULL: the params' "model"). `params` (NULL:
 * the defaults) gives the engine settings ("context", "threads", "backend", "kv_type",
 * "parallel", ...) and the defaults of every generation on this model. */
KITE_API kite_status kite_model_load(const char* path, const kite_params* params, kite_model** out);
KITE_API void kite_model_free(kite_model* model);

KITE_API int32_t kite_model_vocab_size(const kite_model* model);
KITE_API int32_t kite_model_context_length(const kite_model* model);
/* The beginning-of-text id, -1 when the model has none. */
KITE_API int32_t kite_model_bos_id(const kite_model* model);
/* 1 when `id` ends generation (one of the model's end-of-text ids), else 0. */
KITE_API int kite_model_is_eos(const kite_model* model, int32_t id);

/* ---- Tokenizer and chat template ----------------------------------------------------------- */

/* The token ids of `text` (length bytes of UTF-8); add_special: the BOS/EOS the tokenizer's
 * config puts around a text. *ids_out is allocated (free with kite_free). */
KITE_API kite_status kite_tokenize(const kite_model* model, const char* text, size_t length,
                                   int add_special, int32_t** ids_out, size_t* count_out);
/* The text of `ids` (a BOS/EOS at either end dropped, so that tokenize + detokenize gives the
 * text back). *text_out is NUL-terminated and allocated (free with kite_free). */
KITE_API kite_status kite_detokenize(const kite_model* model, const int32_t* ids, size_t count,
                                     char** text_out, size_t* length_out);

typedef struct kite_message {
  const char* role; /* "system", "user", "assistant", ... */
  const char* content;
} kite_message;

/* The conversation as the chat template writes it, ending with the assistant's header: the
 * model's own template, or the built-in one the params' "chat_template" names (params may be
 * NULL). *prompt_out is allocated (free with kite_free). */
KITE_API kite_status kite_chat_render(const kite_model* model, const kite_params* params,
                                      const kite_message* messages, size_t count,
                                      char** prompt_out);

/* ---- Sessions and generation --------------------------------------------------------------- */

typedef struct kite_session kite_session;
typedef struct kite_result kite_result;

/* A conversation with its own KV cache, whose pages come from the model's pool (the "parallel"
 * setting: that many whole contexts). A generation that finds no free page fails with
 * KITE_OUT_OF_RESOURCES, naming the pool. */
KITE_API kite_status kite_session_new(kite_model* model, kite_session** out);
KITE_API void kite_session_free(kite_session* session);
/* Forgets the history; its KV pages return to the pool. */
KITE_API void kite_session_reset(kite_session* session);
/* Tokens the session's KV cache holds. */
KITE_API int32_t kite_session_n_past(const kite_session* session);
/* The history and its KV cache in a file; load refuses a file of another model or one longer
 * than the context, naming the file and the field. */
KITE_API kite_status kite_session_save(const kite_session* session, const char* path);
KITE_API kite_status kite_session_load(kite_session* session, const char* path);
/* Stops the generation running on `session`, from any thread. After it returns, at most one
 * more token callback runs (the one of a token being handed out at that moment) and the
 * generation ends before its next decode step or prompt chunk (`prefill_chunk` tokens); that
 * kite_generate* returns KITE_CANCELLED. When no generation runs, does nothing: a later
 * generation is not cancelled. */
KITE_API void kite_session_cancel(kite_session* session);

/* Called with each token and the text it releases, as soon as it is sampled. `text` (length
 * bytes, not NUL-terminated) is whole UTF-8 characters and may be empty while text that could
 * start a stop string is held back; a last call with id -1 may carry the held-back text. Return
 * nonzero to go on, 0 to stop (the generation then ends with KITE_OK, stop reason "callback"). */
typedef int (*kite_token_callback)(void* user_data, int32_t id, const char* text, size_t length);

/* Generates the continuation of `prompt` (raw text: BOS as the tokenizer's config says, then
 * the text). The session keeps the longest common prefix of its history and the prompt, so a
 * prompt that extends the previous one computes only what is new. `params` (NULL: the model's)
 * gives the sampler, "n_predict", "stop" and "ignore_eos" (its engine settings, "context",
 * "threads", ..., are the model's and not read here); on_token may be NULL. *result_out
 * (when result_out is not NULL) receives the text and counts, also after KITE_CANCELLED; free it
 * with kite_result_free. */
KITE_API kite_status kite_generate(kite_session* session, const char* prompt,
                                   const kite_params* params, kite_token_callback on_token,
                                   void* user_data, kite_result** result_out);
/* The same from token ids. */
KITE_API kite_status kite_generate_tokens(kite_session* session, const int32_t* ids, size_t count,
                                          const kite_params* params, kite_token_callback on_token,
                                          void* user_data, kite_result** result_out);
/* The assistant's reply to a conversation, rendered by the chat template (kite_chat_render). */
KITE_API kite_status kite_generate_chat(kite_session* session, const kite_message* messages,
                                        size_t count, const kite_params* params,
                                        kite_token_callback on_token, void* user_data,
                                        kite_result** result_out);

/* The generated text (NUL-terminated; *length_out, when not NULL, its length in bytes). */
KITE_API const char* kite_result_text(const kite_result* result, size_t* length_out);
/* The sampled ids (without a final EOS), valid while the result lives. */
KITE_API const int32_t* kite_result_ids(const kite_result* result, size_t* count_out);
/* Why generation ended: "eos", "stop_string", "max_tokens", "context_full", "callback" or
 * "cancelled". */
KITE_API const char* kite_result_stop_reason(const kite_result* result);
KITE_API int32_t kite_result_prompt_tokens(const kite_result* result);
/* Prompt tokens whose KV came from the session's history instead of being computed. */
KITE_API int32_t kite_result_reused_tokens(const kite_result* result);
KITE_API void kite_result_free(kite_result* result);

#ifdef __cplusplus
}
#endif

#endif /* KITE_KITE_H_ */
