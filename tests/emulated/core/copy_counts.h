// Process-wide counters of the host<->device copies issued through the
// runtime's copy calls (RtMemcpy, RtMemcpyAsync: any API's names), so a test
// can tell whether data crossed between host and device. Counted when a
// validated copy is enqueued, not when it runs. Host-to-host and
// device-to-device copies are not counted. Read them with
// hvda_emu_copy_counts (emu_core.h).
#pragma once

#include <cstddef>

namespace hvda_emu {

// Counts one copy of n bytes of the given MemcpyKind. Thread-safe, lock-free.
void CountCopy(int kind, size_t n);

}  // namespace hvda_emu
