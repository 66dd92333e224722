// What the collective engine uses of the emulated runtime (runtime.cc holds
// the process-wide runtime state: see NOTE [One process-wide instance] in
// emu_core.h).
#pragma once

#include <memory>

#include "device_memory.h"
#include "emu_core.h"
#include "stream.h"

namespace hvda_emu {

// The process's device allocations.
const DeviceMemory& ProcessDeviceMemory();

// The stream a handle names - null names the calling thread's current
// device's default stream - or null when the handle is no live stream.
std::shared_ptr<Stream> ResolveStream(StreamHandle handle);

}  // namespace hvda_emu
