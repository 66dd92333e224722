/* A loader fixture that links a library the "framework" also exports
 * (tests/cpp/plugin_isolation_test.cc): the plugin of fixture_plugin.c, named
 * "isolation", whose probe() calls hvda_dup_value() from the library it was
 * linked against (tests/cpp/plugins/dup_value.c) and reports which copy the
 * dynamic linker bound that call to:
 *   2 (libhvda_dup_b.so, its own)  -> HVDA_OK, last_error() says "own copy"
 *   anything else                  -> HVDA_UNAVAILABLE, last_error() names it
 * CMake links it against libhvda_dup_b.so (the isolation case) or against
 * libhvda_dup_gone.so, built where no search path finds it (the
 * "dependency missing" case).
 *
 * It reuses fixture_plugin.c's tables with that file's entry switched off,
 * and exports its own entry returning a table whose probe is the one below. */
#define FIXTURE_NO_ENTRY
#include "fixture_plugin.c"

extern int hvda_dup_value(void);

static hvda_status iso_probe(const hvda_host_api_v1* host) {
  (void)host;
  switch (hvda_dup_value()) {
    case 2: return fail(HVDA_OK, "hvda_dup_value() bound to the plugin's own copy (libhvda_dup_b.so)");
    case 1: return fail(HVDA_UNAVAILABLE,
                        "hvda_dup_value() bound to the framework's copy (libhvda_dup_a.so)");
    default: return fail(HVDA_UNAVAILABLE, "hvda_dup_value() bound to an unexpected copy");
  }
}

static hvda_status iso_init(const hvda_host_api_v1* host) { return iso_probe(host); }

static const hvda_plugin_v1 kIsolationPlugin = {
    sizeof(hvda_plugin_v1), HVDA_PLUGIN_ABI_MAJOR, 0, "isolation", "0.0.1", "isolation",
    iso_probe, iso_init, fx_finalize, fx_last_error, &kDevice, &kCcl};

HVDA_PLUGIN_EXPORT const hvda_plugin_v1* horovod_accel_plugin_v1(uint32_t host_major,
                                                                 uint32_t host_minor) {
  (void)host_major; (void)host_minor;
  return &kIsolationPlugin;
}
