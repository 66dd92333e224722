// The emulation's knobs: environment variables read once, at first use
// (README.md lists them). Every getenv of the engine is in config.cc.
#pragma once

#include <cstddef>

namespace hvda_emu {

struct Config {
  int device_count;           // HVDA_EMU_DEVICE_COUNT
  unsigned stream_delay_us;   // HVDA_EMU_STREAM_DELAY_US: sleep before each stream operation
  double init_timeout_s;      // HVDA_EMU_INIT_TIMEOUT_SECONDS: comm init rendezvous limit
  size_t channel_bytes;       // HVDA_EMU_CHANNEL_BYTES: 0 = automatic (see shm_segment.h)
  bool broken_sum;            // HVDA_EMU_BROKEN_SUM=1: Sum adds 2x (a wrong library)
};

// The process's configuration; valid for the life of the process.
const Config& GetConfig();

}  // namespace hvda_emu
