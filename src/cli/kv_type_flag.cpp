#include "cli/kv_type_flag.h"

#include <string>

#include "graph/kv_cache.h"

namespace kite::cli {

void AddKvTypeFlag(CLI::App* command, DType* kv_type) {
  const CLI::Validator is_kv_type(
      [](std::string& name) -> std::string {
        if (ParseKvCacheType(name)) return "";
        return "\"" + name + "\" is not a KV cache type (" + KvCacheTypeNames() + ")";
      },
      "TYPE");
  command
      ->add_option_function<std::string>(
          "--kv-type", [kv_type](const std::string& name) { *kv_type = *ParseKvCacheType(name); },
          "KV cache type: " + KvCacheTypeNames() + " (default " + std::string(DTypeName(*kv_type)) +
              ")")
      ->check(is_kv_type);
}

}  // namespace kite::cli
