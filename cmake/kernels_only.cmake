# KITE_KERNELS_ONLY: the kernel layers (base, tensor, graph, backends: CMakeLists.txt) and one
# test binary, kite_kernel_tests, that checks the cpu backend against ref: the backends layer's
# own tests, the op-by-op consistency harness and the packed weight layouts. It is what a build
# for another CPU needs, e.g. Arm under qemu-user (cmake/aarch64-linux-gnu.cmake, `make test-arm`).
# The graph runner the tests compile graphs with (runtime's executable, partitioner and KV pool)
# and the NPU weight layouts (quant/npu_weights) come as single files: the rest of those layers
# needs libraries (ICU, PCRE2, protobuf, ONNX) that such a build would have to provide for the
# target.
find_package(GTest REQUIRED)
file(GLOB_RECURSE kernel_tests CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/backends/*_test.cpp)
add_executable(kite_kernel_tests ${kernel_tests}
               ${CMAKE_SOURCE_DIR}/tests/backend_consistency_test.cpp
               ${CMAKE_SOURCE_DIR}/tests/cpu_pack_layout_test.cpp
               ${CMAKE_SOURCE_DIR}/src/runtime/executable.cpp
               ${CMAKE_SOURCE_DIR}/src/runtime/partitioner.cpp
               ${CMAKE_SOURCE_DIR}/src/runtime/kv_pool.cpp
               ${CMAKE_SOURCE_DIR}/src/quant/npu_weights.cpp)
target_link_libraries(kite_kernel_tests PRIVATE kite_backends_whole nlohmann_json::nlohmann_json
                      GTest::gtest GTest::gtest_main)
target_include_directories(kite_kernel_tests PRIVATE ${CMAKE_SOURCE_DIR}/tests)
target_compile_definitions(kite_kernel_tests PRIVATE KITE_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
