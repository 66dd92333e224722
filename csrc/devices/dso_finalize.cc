// Runs this library's C++ static destructors when the core dlcloses it.
//
// C++ registers a library's static destructors with
// __cxa_atexit(dtor, obj, &__dso_handle); someone must call
// __cxa_finalize(&__dso_handle) when the library is unloaded, or the entries
// stay in the process's exit list, pointing into unmapped code, and the
// process crashes at exit. GCC's crtbegin.o does that from .fini_array; zig's
// linker (the release wheels' toolchain, packaging/toolchain/zig.cmake) links
// no such object into shared libraries. This destructor does it for every
// toolchain; where crtbegin already ran it, the second call finds nothing
// left to run. Seen: a zig-built GCU plugin crashed every training process
// at exit (docs/design/packaging.md).
extern "C" {
extern void* __dso_handle;
void __cxa_finalize(void* dso);
}

namespace {

__attribute__((destructor)) void RunStaticDestructorsAtUnload() { __cxa_finalize(&__dso_handle); }

}  // namespace
