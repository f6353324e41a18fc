# Cross build for 64-bit Arm Linux (`make test-arm`) with Debian's cross compiler
# (g++-aarch64-linux-gnu) and the arm64 libraries installed beside the host's by multiarch
# (dpkg --add-architecture arm64; libhwy-dev:arm64 libgtest-dev:arm64). The programs run under
# qemu-user with the arm64 C library multiarch installs (libc6:arm64): QEMU_LD_PREFIX=/ (the
# cross toolchain's own copy, under /usr/aarch64-linux-gnu, hangs creating a thread in qemu 7.2).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
# Libraries and CMake packages from /usr/lib/aarch64-linux-gnu, never the host's.
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# pkg-config reads the arm64 .pc files only (and the architecture-free ones).
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /)
