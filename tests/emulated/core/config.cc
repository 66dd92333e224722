#include "config.h"

#include <cstdio>
#include <cstdlib>

namespace hvda_emu {
namespace {

// One knob: name, default, accepted range. A value that does not parse or
// is out of range is reported once on stderr and replaced by the default.
struct Knob {
  const char* name;
  double default_value;
  double min, max;
};

double Read(const Knob& k) {
  const char* v = std::getenv(k.name);
  if (v == nullptr || *v == '\0') return k.default_value;
  char* end = nullptr;
  double x = std::strtod(v, &end);
  if (end == v || *end != '\0' || x < k.min || x > k.max) {
    std::fprintf(stderr, "hvda_emu: ignoring %s='%s' (want a number in [%g, %g]); using %g\n",
                 k.name, v, k.min, k.max, k.default_value);
    return k.default_value;
  }
  return x;
}

Config Load() {
  Config c;
  c.device_count = static_cast<int>(Read({"HVDA_EMU_DEVICE_COUNT", 4, 1, 64}));
  c.stream_delay_us = static_cast<unsigned>(Read({"HVDA_EMU_STREAM_DELAY_US", 0, 0, 10e6}));
  c.init_timeout_s = Read({"HVDA_EMU_INIT_TIMEOUT_SECONDS", 120, 0, 86400});
  c.channel_bytes = static_cast<size_t>(Read({"HVDA_EMU_CHANNEL_BYTES", 0, 0, 1 << 30}));
  c.broken_sum = Read({"HVDA_EMU_BROKEN_SUM", 0, 0, 1}) != 0;
  return c;
}

}  // namespace

const Config& GetConfig() {
  static const Config config = Load();
  return config;
}

}  // namespace hvda_emu
