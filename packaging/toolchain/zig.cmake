# CMake toolchain of the release wheels (scripts/build_wheels.sh,
# docs/design/packaging.md): zig's clang, from the `ziglang` wheel on PyPI,
# compiles for x86_64 Linux against glibc $HVDA_GLIBC (default 2.28, the
# manylinux_2_28 baseline torch's own wheels use) with zig's libc++ linked
# statically, so a binary needs nothing from the system newer than that glibc
# and no libstdc++ at all. Gloo is built with the same toolchain
# (scripts/build_gloo.sh): C++ types cross its API, so it must share the
# standard library.
#
# Needs: HVDA_ZIG, the zig binary (`python -m ziglang env` names its folder).
# Every library is stripped (-s); each exports only its entry points (a
# version script per library), so the libc++ linked into it (operator
# new/delete included) never interposes on the process's libstdc++.
if(NOT DEFINED ENV{HVDA_ZIG})
  message(FATAL_ERROR "packaging/toolchain/zig.cmake: set HVDA_ZIG to the zig binary "
                      "(pip install ziglang; scripts/build_wheels.sh does both)")
endif()
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(CMAKE_C_COMPILER ${CMAKE_CURRENT_LIST_DIR}/zig-cc)
set(CMAKE_CXX_COMPILER ${CMAKE_CURRENT_LIST_DIR}/zig-c++)
set(CMAKE_SHARED_LINKER_FLAGS_INIT "-s")
set(CMAKE_MODULE_LINKER_FLAGS_INIT "-s")
# Headers and CMake packages (Python's, MPI's, Gloo's prefix) come from the
# build machine as usual: this is a glibc-version target, not a foreign system.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
