/* kite_generate: the continuation of a prompt, streamed as it is generated, through Kite's C
 * API. C99.
 *
 *   cc -std=c99 kite_generate.c $(pkg-config --cflags --libs kite) -o kite_generate
 *   ./kite_generate models/demo "Once upon a time" 32
 *
 * Greedy (temperature 0), so the output is what `kite run -m MODEL -p PROMPT -n N --temp 0`
 * prints. */
#include <stdio.h>
#include <stdlib.h>

#include <kite/kite.h>

static int print_token(void* user_data, int32_t id, const char* text, size_t length) {
  (void)user_data;
  (void)id;
  fwrite(text, 1, length, stdout);
  fflush(stdout);
  return 1; /* go on */
}

int main(int argc, char** argv) {
  kite_params* params = NULL;
  kite_model* model = NULL;
  kite_session* session = NULL;
  int exit_code = 1;

  if (argc < 3 || argc > 4) {
    fprintf(stderr, "usage: %s MODEL PROMPT [TOKENS]\n", argv[0]);
    return 2;
  }
  /* The header this program was built with must be one the library serves. */
  if (kite_check_version(KITE_VERSION_MAJOR, KITE_VERSION_MINOR) != KITE_OK) {
    fprintf(stderr, "%s\n", kite_last_error());
    return 1;
  }
  if (kite_params_new(&params) != KITE_OK ||
      kite_params_set_float(params, "sampler.temp", 0) != KITE_OK ||
      (argc == 4 && kite_params_set_int(params, "n_predict", atoi(argv[3])) != KITE_OK) ||
      kite_model_load(argv[1], params, &model) != KITE_OK ||
      kite_session_new(model, &session) != KITE_OK ||
      kite_generate(session, argv[2], NULL, print_token, NULL, NULL) != KITE_OK) {
    fprintf(stderr, "kite_generate: %s\n", kite_last_error());
  } else {
    printf("\n");
    exit_code = 0;
  }
  kite_session_free(session);
  kite_model_free(model);
  kite_params_free(params);
  return exit_code;
}
