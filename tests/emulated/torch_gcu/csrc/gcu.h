// Test-only PrivateUse1 device over an emulated CUDA-like runtime, in one of
// two flavours chosen by the Python side at _init_runtime time (one compiled
// extension serves both):
//   "tops": the TOPS runtime (tops* symbols) named by HOROVOD_GCU_RUNTIME_LIB;
//           torch device 'gcu'.
//   "cuda": the CUDA runtime (cuda* symbols) named by HOROVOD_CUDA_RUNTIME_LIB;
//           torch device 'emucuda' (PrivateUse1 cannot be named 'cuda').
// The runtime is never linked: runtime.cpp dlopen()s the library (path passed
// in from Python) and resolves the symbols it needs. Device memory comes from
// topsMalloc/cudaMalloc and is never touched by the host: every transfer
// goes through topsMemcpy/cudaMemcpy.
#pragma once

#include <c10/core/Device.h>
#include <c10/core/StorageImpl.h>
#include <c10/util/Exception.h>

#include <cstddef>

namespace hvda_gcu {

// Memcpy kinds, the same in both flavours.
enum MemcpyKind : int { kH2H = 0, kH2D = 1, kD2H = 2, kD2D = 3 };

// Selects the flavour ("tops" or "cuda") and the device name torch uses for
// PrivateUse1 (the prefix of every error message). Must run before the
// runtime is loaded or a tensor exists; calling it again with the same values
// is a no-op, other values are an error (a process has one PrivateUse1 name).
// Until it runs, the flavour is "tops" and the name "gcu".
void configure(const char* flavour, const char* device_name);

// The configured device name ('gcu', 'emucuda').
const char* device_name();

// True once load_runtime() succeeded.
bool runtime_loaded();

// dlopen()s `path` and resolves the flavour's symbols; throws c10::Error with
// a clear message when the library or a required symbol is missing. Calling
// it again with the same path is a no-op; another path is an error.
void load_runtime(const char* path);

int device_count();
c10::DeviceIndex current_device();
void set_device(c10::DeviceIndex index);

// Host-synchronous copy through topsMemcpy/cudaMemcpy; n == 0 is a no-op.
void memcpy(void* dst, const void* src, std::size_t n, MemcpyKind kind);

// Waits for the default stream of the device `index` (-1: current device).
void synchronize(c10::DeviceIndex index);

// Grows/shrinks a device storage to `nbytes`, keeping the old contents
// (device-to-device copy; the host never reads the data).
void resize_storage_bytes(c10::StorageImpl* storage, std::size_t nbytes);

} // namespace hvda_gcu
