// What the collective calls (ccl_calls.cc: validation, one function per
// kind) share with the engine (ccl_engine.cc: communicators, groups, the
// stream operation that runs calls).
#pragma once

#include <memory>
#include <vector>

#include "collectives.h"
#include "comm.h"
#include "device_memory.h"
#include "emu_core.h"
#include "stream.h"

namespace hvda_emu {

// One validated call: its communicator, its plan part, and the device
// memory it uses (kept mapped until the stream operation finished).
struct Call {
  std::shared_ptr<Comm> comm;
  PlanPart part;
  std::vector<DeviceSpan> keep;
};

// The live communicator `handle` of api, or null.
std::shared_ptr<Comm> FindComm(CclApi api, CommHandle handle);

// Records the call in the calling thread's open group of api, or enqueues it
// on stream now as a stream operation of its own. Returns kCclSuccess.
int Submit(CclApi api, std::shared_ptr<Stream> stream, Call call);

}  // namespace hvda_emu
