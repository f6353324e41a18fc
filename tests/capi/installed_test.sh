#!/usr/bin/env bash
# CApi.Installed: the C API as an application meets it. Installs the build into a fresh prefix,
# checks that libkite.so exports kite_* only, builds tests/capi/capi_test.c through
# find_package(Kite) (C99, -pedantic -Werror) and examples/kite_generate.c through pkg-config,
# runs both on the bundled model, and checks that the example's greedy text is `kite run`'s
# (when BUILD_DIR has a kite program: make test-tsan builds the library alone).
#   installed_test.sh SOURCE_DIR BUILD_DIR C_COMPILER [C_FLAGS [LINK_FLAGS]]
# C_FLAGS/LINK_FLAGS: the sanitizer flags of a KITE_SANITIZE build, so the programs (and with
# them libkite.so) run under ASan/UBSan.
set -euo pipefail
source_dir=$1 build_dir=$2 cc=$3 c_flags=${4:-} link_flags=${5:-}
model=$source_dir/models/demo
work=$(mktemp -d "${TMPDIR:-/tmp}/kite-capi.XXXXXX")
trap 'rm -rf "$work"' EXIT

fail() { echo "CApi.Installed: $*" >&2; exit 1; }

cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
# The tree is relocatable: the package and kite.pc find it where it was moved to.
mv "$work/prefix" "$work/moved"
prefix=$work/moved
[[ -f $prefix/include/kite/kite.h ]] || fail "kite.h not installed"
library=$(find "$prefix" -name 'libkite.so' | head -1)
[[ -n $library ]] || fail "libkite.so not installed"
libdir=$(dirname "$library")

# Nothing but the C API leaves the library.
others=$(nm -D --defined-only "$library" | awk '{print $3}' | grep -v '^kite_' || true)
[[ -z $others ]] || fail "libkite.so exports symbols other than kite_*: $(echo $others | head -c 400)"
nm -D --defined-only "$library" | grep -q ' kite_generate$' || fail "kite_generate not exported"

# The test program, through the CMake package.
cmake -S "$source_dir/tests/capi" -B "$work/build" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_C_COMPILER="$cc" -DCMAKE_C_FLAGS="$c_flags" -DCMAKE_C_STANDARD_LIBRARIES="$link_flags" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$work/build" >/dev/null || cmake --build "$work/build"
"$work/build/capi_test" "$model" "$work"

# The example, through pkg-config.
export PKG_CONFIG_PATH=$libdir/pkgconfig
[[ $(pkg-config --variable=includedir kite) -ef $prefix/include ]] || fail "kite.pc is not relocatable"
# shellcheck disable=SC2046,SC2086
"$cc" -std=c99 -pedantic -Werror -Wall -Wextra $c_flags "$source_dir/examples/kite_generate.c" \
  $(pkg-config --cflags --libs kite) $link_flags -o "$work/kite_generate"
example=$(LD_LIBRARY_PATH=$libdir "$work/kite_generate" "$model" "Once upon a time" 16)
[[ -n $example ]] || fail "kite_generate printed nothing"
if [[ -x $build_dir/kite ]]; then
  cli=$("$build_dir/kite" run -m "$model" -p "Once upon a time" -n 16 --temp 0 2>/dev/null)
  [[ $example == "$cli" ]] || fail "kite_generate printed \"$example\", kite run \"$cli\""
else  # make test-tsan builds the library alone
  echo "CApi.Installed: $build_dir/kite not built: the example's text is not compared with kite run's"
fi
echo "CApi.Installed: passed"
