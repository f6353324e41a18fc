# libkite.so: the C API (include/kite/kite.h, src/api/) over the runtime, and the package that
# installs it: `cmake --install build --prefix PREFIX` puts the header, the library, a CMake
# package (find_package(Kite) -> Kite::kite) and a relocatable kite.pc under PREFIX.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# One version, the header's.
file(STRINGS ${CMAKE_SOURCE_DIR}/include/kite/kite.h version_lines
     REGEX "^#define KITE_VERSION_(MAJOR|MINOR|PATCH) ")
foreach(line ${version_lines})
  string(REGEX REPLACE "^#define KITE_VERSION_([A-Z]+) ([0-9]+).*" "\\1;\\2" part "${line}")
  list(GET part 0 name)
  list(GET part 1 number)
  set(KITE_VERSION_${name} ${number})
endforeach()
set(KITE_VERSION ${KITE_VERSION_MAJOR}.${KITE_VERSION_MINOR}.${KITE_VERSION_PATCH})

file(GLOB api_sources CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/api/*.cpp)
list(FILTER api_sources EXCLUDE REGEX "_test\\.cpp$")
add_library(kite_capi SHARED ${api_sources})
set_target_properties(kite_capi PROPERTIES
  OUTPUT_NAME kite EXPORT_NAME kite VERSION ${KITE_VERSION} SOVERSION ${KITE_VERSION_MAJOR}
  LINK_DEPENDS ${CMAKE_SOURCE_DIR}/src/api/exports.map)
target_include_directories(kite_capi
  PUBLIC $<BUILD_INTERFACE:${CMAKE_SOURCE_DIR}/include> $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>
  PRIVATE ${CMAKE_SOURCE_DIR}/src)
target_link_libraries(kite_capi PRIVATE kite_runtime)
target_link_options(kite_capi PRIVATE
  -Wl,--version-script=${CMAKE_SOURCE_DIR}/src/api/exports.map -Wl,--exclude-libs,ALL)
if(NOT KITE_SANITIZE AND NOT KITE_TSAN)
  # Every symbol resolved at link time; a sanitizer's runtime comes with the program instead.
  target_link_options(kite_capi PRIVATE -Wl,-z,defs)
endif()

install(TARGETS kite_capi EXPORT KiteTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${CMAKE_SOURCE_DIR}/include/kite/kite.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kite)
set(kite_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/Kite)
install(EXPORT KiteTargets NAMESPACE Kite:: DESTINATION ${kite_cmake_dir})
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/KiteConfig.cmake.in
  ${CMAKE_BINARY_DIR}/KiteConfig.cmake INSTALL_DESTINATION ${kite_cmake_dir})
# kite_check_version's rule: the same major version, a minor version at least the one asked.
write_basic_package_version_file(${CMAKE_BINARY_DIR}/KiteConfigVersion.cmake
  VERSION ${KITE_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_BINARY_DIR}/KiteConfig.cmake ${CMAKE_BINARY_DIR}/KiteConfigVersion.cmake
  DESTINATION ${kite_cmake_dir})
# kite.pc finds the prefix from its own folder (${pcfiledir}), so the tree can move.
file(RELATIVE_PATH KITE_PC_PREFIX_FROM_PCDIR /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
string(REGEX REPLACE "/$" "" KITE_PC_PREFIX_FROM_PCDIR "${KITE_PC_PREFIX_FROM_PCDIR}")  # "../.."
configure_file(${CMAKE_SOURCE_DIR}/cmake/kite.pc.in ${CMAKE_BINARY_DIR}/kite.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/kite.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

if(KITE_TESTS)
  # Installs this build into a fresh prefix and builds tests/capi/*.c (C99, -pedantic -Werror)
  # against it through find_package(Kite), and examples/kite_generate.c through pkg-config. Under
  # KITE_SANITIZE the C programs get the sanitizers too, so that libkite.so runs under them. They
  # are linked by the C compiler, which leaves out the C++ half of the sanitizer runtime that
  # libkite.so's UBSan checks (vptr) call: -fsanitize-link-c++-runtime and libstdc++ bring it.
  set(capi_c_flags "")
  set(capi_link_flags "")
  if(KITE_SANITIZE)
    set(capi_c_flags "-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined")
    set(capi_link_flags "-fsanitize=address,undefined -fsanitize-link-c++-runtime -lstdc++")
  endif()
  add_test(NAME CApi.Installed
           COMMAND bash ${CMAKE_SOURCE_DIR}/tests/capi/installed_test.sh ${CMAKE_SOURCE_DIR}
                   ${CMAKE_BINARY_DIR} ${CMAKE_C_COMPILER} "${capi_c_flags}" "${capi_link_flags}")
  set_tests_properties(CApi.Installed PROPERTIES TIMEOUT 300)
endif()
