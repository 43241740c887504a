# Cross-compiling for arm64 (GB200/GH200 hosts) with Debian's cross toolchain
# (g++-aarch64-linux-gnu). The arm64 libraries live in a sysroot of extracted :arm64
# packages (FAULTLINE_ARM64_SYSROOT, made by scripts/cross-arm64.sh); the C library and
# libstdc++ development files come with the cross compiler.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

if(NOT FAULTLINE_ARM64_SYSROOT)
  message(FATAL_ERROR "set -DFAULTLINE_ARM64_SYSROOT=DIR (scripts/cross-arm64.sh makes one)")
endif()
set(sysroot ${FAULTLINE_ARM64_SYSROOT})
# try_compile projects see the toolchain file again: pass the sysroot on.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES FAULTLINE_ARM64_SYSROOT)

# Libraries, headers and CMake package files from the sysroot first, then the host's
# architecture-independent ones (header-only libraries: nlohmann-json, CLI11, toml++).
set(CMAKE_FIND_ROOT_PATH ${sysroot} /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
set(CMAKE_C_FLAGS_INIT "-isystem ${sysroot}/usr/include -isystem ${sysroot}/usr/include/aarch64-linux-gnu")
set(CMAKE_CXX_FLAGS_INIT "${CMAKE_C_FLAGS_INIT}")
# The linker resolves the libraries' own dependencies (libcurl -> nghttp2, krb5...) here.
set(link_dirs "-L${sysroot}/usr/lib/aarch64-linux-gnu -L${sysroot}/lib/aarch64-linux-gnu")
set(link_dirs "${link_dirs} -Wl,-rpath-link,${sysroot}/usr/lib/aarch64-linux-gnu")
set(link_dirs "${link_dirs} -Wl,-rpath-link,${sysroot}/lib/aarch64-linux-gnu")
set(CMAKE_EXE_LINKER_FLAGS_INIT "${link_dirs}")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "${link_dirs}")

# pkg-config reads the arm64 .pc files (libhs, cpp-httplib) and prefixes their paths.
set(ENV{PKG_CONFIG_LIBDIR} ${sysroot}/usr/lib/aarch64-linux-gnu/pkgconfig:${sysroot}/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_SYSROOT_DIR} ${sysroot})

# Test binaries run under qemu-user with the sysroot as their root (the dynamic loader
# and the libraries); gtest_discover_tests lists the tests through it too.
find_program(FAULTLINE_QEMU_AARCH64 NAMES qemu-aarch64-static qemu-aarch64)
if(FAULTLINE_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${FAULTLINE_QEMU_AARCH64} -L ${sysroot})
endif()
