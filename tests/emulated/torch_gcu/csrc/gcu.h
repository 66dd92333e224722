// Test-only PrivateUse1 device 'gcu' over the emulated TOPS runtime.
//
// The runtime is never linked: runtime.cpp dlopen()s the library named by
// HOROVOD_GCU_RUNTIME_LIB (passed in from Python) and resolves the tops*
// symbols it needs. Device memory comes from topsMalloc and is never touched
// by the host: every transfer goes through topsMemcpy.
#pragma once

#include <c10/core/Device.h>
#include <c10/core/StorageImpl.h>
#include <c10/util/Exception.h>

#include <cstddef>

namespace hvda_gcu {

// Memcpy kinds of the TOPS API.
enum MemcpyKind : int { kH2H = 0, kH2D = 1, kD2H = 2, kD2D = 3 };

// True once load_runtime() succeeded.
bool runtime_loaded();

// dlopen()s `path` and resolves the tops* symbols; throws c10::Error with a
// clear message when the library or a required symbol is missing. Calling it
// again with the same path is a no-op; another path is an error.
void load_runtime(const char* path);

int device_count();
c10::DeviceIndex current_device();
void set_device(c10::DeviceIndex index);

// Host-synchronous copy through topsMemcpy; n == 0 is a no-op.
void memcpy(void* dst, const void* src, std::size_t n, MemcpyKind kind);

// Waits for the default stream of the device `index` (-1: current device).
void synchronize(c10::DeviceIndex index);

// Grows/shrinks a gcu storage to `nbytes`, keeping the old contents
// (device-to-device copy; the host never reads the data).
void resize_storage_bytes(c10::StorageImpl* storage, std::size_t nbytes);

} // namespace hvda_gcu
