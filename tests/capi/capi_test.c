/* The C API as an application uses it, built with -std=c99 -pedantic -Werror against the
 * installed header and library (tests/capi/installed_test.sh):
 *   capi_test MODEL TMPDIR
 * Four threads share one model, each with its own session and sampler settings, and give what
 * one thread gives alone; one thread cancels another's generation; errors name the file or
 * setting; a saved session restores into another; tokenizer and chat template. Prints each
 * failed check and exits 1 when any failed. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <kite/kite.h>

static int failures = 0;

#define CHECK(condition)                                                      \
  do {                                                                        \
    if (!(condition)) {                                                       \
      fprintf(stderr, "%s:%d: failed: %s\n", __FILE__, __LINE__, #condition); \
      ++failures;                                                             \
    }                                                                         \
  } while (0)

/* A call that must succeed; on failure the library's message is shown. */
#define CHECK_OK(call)                                                                   \
  do {                                                                                   \
    kite_status status_ = (call);                                                        \
    if (status_ != KITE_OK) {                                                            \
      fprintf(stderr, "%s:%d: %s: %s: %s\n", __FILE__, __LINE__, #call,                  \
              kite_status_name(status_), kite_last_error());                             \
      ++failures;                                                                        \
    }                                                                                    \
  } while (0)

/* A call that must fail with `expected`, with `part` in its message. */
#define CHECK_FAILS(call, expected, part)                                                  \
  do {                                                                                     \
    kite_status status_ = (call);                                                          \
    if (status_ != (expected) || strstr(kite_last_error(), (part)) == NULL) {              \
      fprintf(stderr, "%s:%d: %s: got %s \"%s\", wanted %s with \"%s\"\n", __FILE__,       \
              __LINE__, #call, kite_status_name(status_), kite_last_error(),               \
              kite_status_name(expected), (part));                                         \
      ++failures;                                                                          \
    }                                                                                      \
  } while (0)

static const char* model_path;
static const char* tmp_dir;

/* ---- One model, four threads ------------------------------------------------------------- */

typedef struct {
  const char* prompt;
  const char* settings; /* run.json text: each job its own sampler */
  kite_model* model;
  char* text;           /* the output (malloc'd) */
} Job;

static char* Duplicate(const char* text) {
  char* copy = malloc(strlen(text) + 1);
  if (copy != NULL) strcpy(copy, text);
  return copy;
}

/* Runs `job` on a session of its own; job->text receives the output. */
static void* RunJob(void* argument) {
  Job* job = argument;
  kite_params* params = NULL;
  kite_session* session = NULL;
  kite_result* result = NULL;
  CHECK_OK(kite_params_new(&params));
  CHECK_OK(kite_params_set_json(params, job->settings));
  CHECK_OK(kite_session_new(job->model, &session));
  CHECK_OK(kite_generate(session, job->prompt, params, NULL, NULL, &result));
  job->text = Duplicate(kite_result_text(result, NULL));
  kite_result_free(result);
  kite_session_free(session);
  kite_params_free(params);
  return NULL;
}

static void TestThreadsShareOneModel(kite_model* model) {
  enum { kJobs = 4 };
  Job jobs[kJobs] = {
      {"Once upon a time", "{\"sampler\": {\"temp\": 0}, \"n_predict\": 24}", NULL, NULL},
      {"The little dog", "{\"sampler\": {\"temp\": 0}, \"n_predict\": 20}", NULL, NULL},
      {"One day, a girl",
       "{\"sampler\": {\"temp\": 0.9, \"seed\": 7, \"top_p\": 0.9}, \"n_predict\": 24}", NULL, NULL},
      {"Tom and Sue",
       "{\"sampler\": {\"temp\": 1.2, \"seed\": 99, \"top_k\": 10}, \"n_predict\": 16}", NULL, NULL},
  };
  char* alone[kJobs];
  pthread_t threads[kJobs];
  int i;
  for (i = 0; i < kJobs; ++i) {
    jobs[i].model = model;
    RunJob(&jobs[i]); /* alone, one after the other */
    alone[i] = jobs[i].text;
    jobs[i].text = NULL;
  }
  for (i = 0; i < kJobs; ++i) CHECK(pthread_create(&threads[i], NULL, RunJob, &jobs[i]) == 0);
  for (i = 0; i < kJobs; ++i) CHECK(pthread_join(threads[i], NULL) == 0);
  for (i = 0; i < kJobs; ++i) {
    CHECK(alone[i] != NULL && jobs[i].text != NULL);
    if (alone[i] == NULL || jobs[i].text == NULL) continue;
    CHECK(strlen(alone[i]) > 0);
    if (strcmp(alone[i], jobs[i].text) != 0) {
      fprintf(stderr, "job %d: alone \"%s\", among four threads \"%s\"\n", i, alone[i], jobs[i].text);
      ++failures;
    }
    free(alone[i]);
    free(jobs[i].text);
  }
}

/* ---- Cancellation from another thread --------------------------------------------------- */

typedef struct {
  pthread_mutex_t mutex;
  pthread_cond_t started;
  int tokens;          /* token callbacks so far */
  int tokens_at_cancel; /* read after kite_session_cancel returned */
  kite_session* session;
  kite_params* params;
  kite_status status;
  char stop_reason[32];
} CancelRun;

static int CountToken(void* user_data, int32_t id, const char* text, size_t length) {
  CancelRun* run = user_data;
  struct timespec pause = {0, 1000000}; /* a reader of 1 ms per token: time for the cancel */
  (void)id;
  (void)text;
  (void)length;
  pthread_mutex_lock(&run->mutex);
  if (++run->tokens == 3) pthread_cond_signal(&run->started);
  pthread_mutex_unlock(&run->mutex);
  nanosleep(&pause, NULL);
  return 1;
}

static void* Generate(void* argument) {
  CancelRun* run = argument;
  kite_result* result = NULL;
  run->status = kite_generate(run->session, "Once upon a time", run->params, CountToken, run, &result);
  snprintf(run->stop_reason, sizeof(run->stop_reason), "%s", kite_result_stop_reason(result));
  kite_result_free(result);
  return NULL;
}

static void* Cancel(void* argument) {
  CancelRun* run = argument;
  pthread_mutex_lock(&run->mutex);
  while (run->tokens < 3) pthread_cond_wait(&run->started, &run->mutex);
  pthread_mutex_unlock(&run->mutex);
  kite_session_cancel(run->session);
  pthread_mutex_lock(&run->mutex);
  run->tokens_at_cancel = run->tokens;
  pthread_mutex_unlock(&run->mutex);
  return NULL;
}

static void TestCancelFromAnotherThread(kite_model* model) {
  CancelRun run;
  pthread_t generator, canceller;
  kite_result* result = NULL;
  memset(&run, 0, sizeof(run));
  pthread_mutex_init(&run.mutex, NULL);
  pthread_cond_init(&run.started, NULL);
  CHECK_OK(kite_session_new(model, &run.session));
  CHECK_OK(kite_params_new(&run.params));
  /* Until the context is full (over 200 tokens at 1 ms each) unless cancelled. */
  CHECK_OK(kite_params_set_json(run.params, "{\"n_predict\": -1, \"ignore_eos\": true}"));
  /* A cancel while nothing runs is no cancel of the next generation. */
  kite_session_cancel(run.session);
  CHECK(pthread_create(&generator, NULL, Generate, &run) == 0);
  CHECK(pthread_create(&canceller, NULL, Cancel, &run) == 0);
  CHECK(pthread_join(canceller, NULL) == 0);
  CHECK(pthread_join(generator, NULL) == 0);
  CHECK(run.status == KITE_CANCELLED);
  CHECK(strcmp(run.stop_reason, "cancelled") == 0);
  CHECK(run.tokens_at_cancel >= 3);
  printf("cancel: %d token callbacks before the cancel returned, %d after\n", run.tokens_at_cancel,
         run.tokens - run.tokens_at_cancel);
  /* Within 2 decode steps of the cancel. */
  if (run.tokens - run.tokens_at_cancel > 2) {
    fprintf(stderr, "cancel: %d token callbacks after the cancel returned\n",
            run.tokens - run.tokens_at_cancel);
    ++failures;
  }
  /* The session goes on working after a cancel. */
  CHECK_OK(kite_params_set_json(run.params, "{\"n_predict\": 4, \"ignore_eos\": false}"));
  CHECK_OK(kite_generate(run.session, "Once upon a time", run.params, NULL, NULL, &result));
  CHECK(strcmp(kite_result_stop_reason(result), "max_tokens") == 0);
  kite_result_free(result);
  kite_params_free(run.params);
  kite_session_free(run.session);
  pthread_cond_destroy(&run.started);
  pthread_mutex_destroy(&run.mutex);
}

/* ---- Errors ------------------------------------------------------------------------------ */

static void* FailOnAnotherThread(void* argument) {
  kite_model* model = NULL;
  (void)argument;
  CHECK(kite_model_load("/nonexistent/other.gguf", NULL, &model) != KITE_OK);
  return NULL;
}

static void TestErrorsNameTheSettingOrFile(kite_model* model) {
  kite_params* params = NULL;
  kite_model* missing = (kite_model*)1;
  kite_session* session = NULL;
  pthread_t thread;
  char path[512];
  CHECK_OK(kite_params_new(&params));
  /* `kite run --top-p 2` says "--top-p 2: must be in [0, 1]": the same words, naming the key. */
  CHECK_FAILS(kite_params_set_float(params, "sampler.top_p", 2), KITE_INVALID_INPUT,
              "\"sampler.top_p\" = 2.0: must be in [0, 1]");
  CHECK_FAILS(kite_params_set_int(params, "sampler.top_q", 1), KITE_INVALID_INPUT,
              "unknown setting \"sampler.top_q\"");
  CHECK_FAILS(kite_params_set_string(params, "kv_type", "f8"), KITE_INVALID_INPUT,
              "\"kv_type\" = \"f8\": must be one of");
  CHECK_FAILS(kite_params_set_float(params, "n_predict", 1.5), KITE_INVALID_INPUT, "\"n_predict\"");
  CHECK_FAILS(kite_params_set_json(params, "{\"sampler\": {\"temp\": -1}}"), KITE_INVALID_INPUT,
              "\"sampler.temp\" = -1: must be >= 0");
  CHECK_FAILS(kite_params_set_json(params, "{\"sampler\": "), KITE_INVALID_INPUT, "not valid JSON");
  CHECK_FAILS(kite_params_load_file(params, "/nonexistent/run.json"), KITE_NOT_FOUND,
              "/nonexistent/run.json");
  CHECK_FAILS(kite_model_load("/nonexistent/model.gguf", params, &missing), KITE_NOT_FOUND,
              "/nonexistent/model.gguf");
  CHECK(missing == NULL);
  CHECK_FAILS(kite_params_set_int(NULL, "n_predict", 1), KITE_INVALID_INPUT,
              "kite_params_set_int: params is NULL");

  /* Each thread has its own last error. */
  CHECK_FAILS(kite_params_set_int(params, "threads", -2), KITE_INVALID_INPUT, "\"threads\" = -2");
  CHECK(pthread_create(&thread, NULL, FailOnAnotherThread, NULL) == 0);
  CHECK(pthread_join(thread, NULL) == 0);
  CHECK(strstr(kite_last_error(), "\"threads\" = -2") != NULL);

  CHECK_OK(kite_session_new(model, &session));
  snprintf(path, sizeof(path), "%s/no-such-session.gguf", tmp_dir);
  CHECK_FAILS(kite_session_load(session, path), KITE_NOT_FOUND, path);
  /* The refused values left the params as they were: this generation runs. */
  CHECK_OK(kite_params_set_int(params, "n_predict", 2));
  CHECK_OK(kite_generate(session, "Hello", params, NULL, NULL, NULL));
  kite_session_free(session);
  kite_params_free(params);
}

/* ---- Save and restore -------------------------------------------------------------------- */

static char* GenerateText(kite_session* session, const char* prompt, const kite_params* params,
                          int* reused) {
  kite_result* result = NULL;
  char* text;
  CHECK_OK(kite_generate(session, prompt, params, NULL, NULL, &result));
  text = Duplicate(kite_result_text(result, NULL));
  if (reused != NULL) *reused = kite_result_reused_tokens(result);
  kite_result_free(result);
  return text;
}

static void TestSaveAndRestore(kite_model* model) {
  kite_session *first = NULL, *restored = NULL, *fresh = NULL;
  kite_params* params = NULL;
  char path[512], prompt[1024];
  char *reply, *continued, *from_file, *from_scratch;
  int reused = 0;
  snprintf(path, sizeof(path), "%s/session.gguf", tmp_dir);
  CHECK_OK(kite_params_new(&params));
  CHECK_OK(kite_params_set_json(params, "{\"sampler\": {\"temp\": 0}, \"n_predict\": 12}"));
  CHECK_OK(kite_session_new(model, &first));
  CHECK_OK(kite_session_new(model, &restored));
  CHECK_OK(kite_session_new(model, &fresh));

  reply = GenerateText(first, "The cat sat", params, NULL);
  CHECK_OK(kite_session_save(first, path));
  CHECK_OK(kite_session_load(restored, path));
  CHECK(kite_session_n_past(restored) == kite_session_n_past(first));
  CHECK(kite_session_n_past(restored) > 0);

  snprintf(prompt, sizeof(prompt), "The cat sat%s and then", reply);
  continued = GenerateText(first, prompt, params, NULL);
  from_file = GenerateText(restored, prompt, params, &reused);
  from_scratch = GenerateText(fresh, prompt, params, NULL);
  CHECK(reused > 0); /* the restored KV cache was used */
  CHECK(strcmp(continued, from_file) == 0);
  CHECK(strcmp(from_scratch, from_file) == 0);
  free(reply);
  free(continued);
  free(from_file);
  free(from_scratch);
  kite_session_free(fresh);
  kite_session_free(restored);
  kite_session_free(first);
  kite_params_free(params);
}

/* ---- Tokenizer and chat template ---------------------------------------------------------- */

static void TestTokenizerAndChat(kite_model* model) {
  const char* text = "Hello world, said the fox.";
  int32_t* ids = NULL;
  size_t count = 0, length = 0;
  char* back = NULL;
  char* prompt = NULL;
  kite_message messages[2] = {{"system", "Be brief."}, {"user", "Hi there"}};
  kite_session* session = NULL;
  kite_result* result = NULL;

  CHECK_OK(kite_tokenize(model, text, strlen(text), 1, &ids, &count));
  CHECK(count > 2);
  if (count > 0) CHECK(ids[0] == kite_model_bos_id(model));
  CHECK_OK(kite_detokenize(model, ids, count, &back, &length));
  CHECK(back != NULL && strcmp(back, text) == 0 && length == strlen(text));
  kite_free(ids);
  kite_free(back);
  CHECK(kite_model_vocab_size(model) == 4096);
  CHECK(kite_model_context_length(model) == 256);
  CHECK(kite_model_is_eos(model, 2) == 1 && kite_model_is_eos(model, 3) == 0);

  /* The demo model's template writes "role: content\n" per message, then "assistant:". */
  CHECK_OK(kite_chat_render(model, NULL, messages, 2, &prompt));
  CHECK(prompt != NULL && strcmp(prompt, "<s>system: Be brief.\nuser: Hi there\nassistant:") == 0);
  kite_free(prompt);
  messages[1].content = NULL;
  CHECK_FAILS(kite_chat_render(model, NULL, messages, 2, &prompt), KITE_INVALID_INPUT,
              "message 1: content is NULL");
  messages[1].content = "Hi there";

  CHECK_OK(kite_session_new(model, &session));
  CHECK_OK(kite_generate_chat(session, messages, 2, NULL, NULL, NULL, &result));
  CHECK(kite_result_prompt_tokens(result) > 5);
  kite_result_free(result);

  /* The same prompt as text and as its ids (BOS included) gives the same greedy tokens. */
  {
    kite_params* greedy = NULL;
    kite_result* from_text = NULL;
    kite_result* from_ids = NULL;
    const int32_t *text_ids, *token_ids;
    size_t text_count = 0, token_count = 0;
    CHECK_OK(kite_params_new(&greedy));
    CHECK_OK(kite_params_set_json(greedy, "{\"sampler\": {\"temp\": 0}, \"n_predict\": 8}"));
    CHECK_OK(kite_tokenize(model, text, strlen(text), 1, &ids, &count));
    kite_session_reset(session);
    CHECK(kite_session_n_past(session) == 0);
    CHECK_OK(kite_generate(session, text, greedy, NULL, NULL, &from_text));
    kite_session_reset(session);
    CHECK_OK(kite_generate_tokens(session, ids, count, greedy, NULL, NULL, &from_ids));
    text_ids = kite_result_ids(from_text, &text_count);
    token_ids = kite_result_ids(from_ids, &token_count);
    CHECK(text_count == 8 && token_count == 8);
    CHECK(text_count == token_count && memcmp(text_ids, token_ids, text_count * sizeof(int32_t)) == 0);
    CHECK(strcmp(kite_result_text(from_text, NULL), kite_result_text(from_ids, NULL)) == 0);
    kite_free(ids);
    kite_result_free(from_text);
    kite_result_free(from_ids);
    kite_params_free(greedy);
  }
  kite_session_free(session);
}

int main(int argc, char** argv) {
  kite_params* params = NULL;
  kite_model* model = NULL;
  if (argc != 3) {
    fprintf(stderr, "usage: %s MODEL TMPDIR\n", argv[0]);
    return 2;
  }
  model_path = argv[1];
  tmp_dir = argv[2];

  CHECK_OK(kite_check_version(KITE_VERSION_MAJOR, KITE_VERSION_MINOR));
  CHECK(strcmp(kite_version(), KITE_VERSION_STRING) == 0);
  CHECK_FAILS(kite_check_version(KITE_VERSION_MAJOR + 1, 0), KITE_VERSION_MISMATCH,
              "built for Kite 1.0");

  CHECK_OK(kite_params_new(&params));
  CHECK_OK(kite_params_set_int(params, "parallel", 4)); /* a whole context for each thread */
  CHECK_OK(kite_params_set_int(params, "threads", 2));
  CHECK_OK(kite_model_load(model_path, params, &model));
  kite_params_free(params);
  if (model == NULL) return 1;

  TestErrorsNameTheSettingOrFile(model);
  TestTokenizerAndChat(model);
  TestThreadsShareOneModel(model);
  TestCancelFromAnotherThread(model);
  TestSaveAndRestore(model);
  kite_model_free(model);

  if (failures > 0) {
    fprintf(stderr, "%d checks failed\n", failures);
    return 1;
  }
  printf("all checks passed\n");
  return 0;
}
