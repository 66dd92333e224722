/* Two builds of "the same library" for the plugin isolation test
 * (tests/cpp/plugin_isolation_test.cc): libhvda_dup_a.so stands for the
 * framework's copy (loaded RTLD_GLOBAL first, as torch's libtorch_cpu.so
 * carries Gloo), libhvda_dup_b.so for the copy the plugin links against, and
 * libhvda_dup_gone.so for a dependency that is not on any search path at
 * load time. Each answers its own HVDA_DUP_VALUE, so a caller can tell which
 * copy its call was bound to. */
#ifndef HVDA_DUP_VALUE
#error "build with -DHVDA_DUP_VALUE=<n>"
#endif

__attribute__((visibility("default"))) int hvda_dup_value(void) { return HVDA_DUP_VALUE; }
