// Runtime side of the test-only device ('gcu' or 'emucuda', see gcu.h): the
// dlopen()ed TOPS or CUDA runtime, the device allocator, the device guard, the
// PrivateUse1 hooks and the small Python module (plain CPython API) the
// hvda_test_gcu package loads.
#include "gcu.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/Allocator.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/Storage.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <Python.h>
#include <dlfcn.h>

#include <atomic>
#include <exception>
#include <map>
#include <mutex>
#include <string>

namespace hvda_gcu {
namespace {

constexpr int kNotReady = 600;
constexpr int kMemoryAllocation = 2;
constexpr auto kGcu = c10::DeviceType::PrivateUse1;

using Stream = void*;
using Event = void*;

// The symbol names of one flavour. The signatures are the same in both (TOPS
// mirrors the CUDA runtime); the names differ in the prefix, and the pinned
// memory pair is topsHostMalloc/topsHostFree vs cudaHostAlloc/cudaFreeHost.
struct SymbolNames {
  const char* get_device_count;
  const char* set_device;
  const char* get_device;
  const char* malloc;
  const char* free;
  const char* memcpy;
  const char* stream_synchronize;
  const char* get_error_string;
  const char* get_last_error;
  const char* host_malloc;  // (void**, size_t, unsigned flags)
  const char* host_free;
  const char* event_create_with_flags;
  const char* event_destroy;
  const char* event_record;
  const char* event_query;
  const char* event_synchronize;
  const char* stream_wait_event;
};

struct Flavour {
  const char* name;     // "tops" / "cuda": what configure() takes
  const char* runtime;  // "TOPS" / "CUDA", for messages
  const char* env_var;  // the variable that names the library, for messages
  bool not_ready_sets_last_error;  // a NotReady event query leaves a last error to clear
  SymbolNames sym;
};

constexpr Flavour kTops = {
    "tops", "TOPS", "HOROVOD_GCU_RUNTIME_LIB", true,
    {"topsGetDeviceCount", "topsSetDevice", "topsGetDevice", "topsMalloc", "topsFree",
     "topsMemcpy", "topsStreamSynchronize", "topsGetErrorString", "topsGetLastError",
     "topsHostMalloc", "topsHostFree", "topsEventCreateWithFlags", "topsEventDestroy",
     "topsEventRecord", "topsEventQuery", "topsEventSynchronize", "topsStreamWaitEvent"}};

constexpr Flavour kCuda = {
    "cuda", "CUDA", "HOROVOD_CUDA_RUNTIME_LIB", false,
    {"cudaGetDeviceCount", "cudaSetDevice", "cudaGetDevice", "cudaMalloc", "cudaFree",
     "cudaMemcpy", "cudaStreamSynchronize", "cudaGetErrorString", "cudaGetLastError",
     "cudaHostAlloc", "cudaFreeHost", "cudaEventCreateWithFlags", "cudaEventDestroy",
     "cudaEventRecord", "cudaEventQuery", "cudaEventSynchronize", "cudaStreamWaitEvent"}};

// Set by configure() before any device use; read without a lock afterwards.
const Flavour* g_flavour = &kTops;
std::string g_device_name = "gcu";
bool g_configured = false;

const SymbolNames& sym() { return g_flavour->sym; }

// The runtime's entry points; the optional ones may be null.
struct Runtime {
  int (*GetDeviceCount)(int*) = nullptr;
  int (*SetDevice)(int) = nullptr;
  int (*GetDevice)(int*) = nullptr;
  int (*Malloc)(void**, size_t) = nullptr;
  int (*Free)(void*) = nullptr;
  int (*Memcpy)(void*, const void*, size_t, int) = nullptr;
  int (*StreamSynchronize)(Stream) = nullptr;
  const char* (*GetErrorString)(int) = nullptr;
  // optional
  int (*GetLastError)() = nullptr;
  int (*HostMalloc)(void**, size_t, unsigned) = nullptr;
  int (*HostFree)(void*) = nullptr;
  int (*EventCreateWithFlags)(Event*, unsigned) = nullptr;
  int (*EventDestroy)(Event) = nullptr;
  int (*EventRecord)(Event, Stream) = nullptr;
  int (*EventQuery)(Event) = nullptr;
  int (*EventSynchronize)(Event) = nullptr;
  int (*StreamWaitEvent)(Stream, Event, unsigned) = nullptr;
};

Runtime g_rt;
std::atomic<bool> g_loaded{false};
int g_count = 0;
std::string g_path;
std::mutex g_load_mu;

std::string err_str(int rc) {
  const char* s = g_rt.GetErrorString ? g_rt.GetErrorString(rc) : nullptr;
  return s ? s : "unknown error";
}

// `what` is the runtime function's name (sym().xxx).
#define GCU_CHECK(expr, what)                                                              \
  do {                                                                                     \
    int rc_ = (expr);                                                                      \
    TORCH_CHECK(rc_ == 0, g_device_name, ": ", what, " failed: ", err_str(rc_), " (", rc_, \
                ")");                                                                      \
  } while (0)

const Runtime& rt() {
  TORCH_CHECK(g_loaded.load(std::memory_order_acquire), g_device_name, ": the ",
              g_flavour->runtime, " runtime is not loaded: set ", g_flavour->env_var,
              " to the (emulated) ", g_flavour->runtime,
              " runtime library before importing torch");
  return g_rt;
}

bool have_events() {
  return g_rt.EventCreateWithFlags && g_rt.EventDestroy && g_rt.EventRecord && g_rt.EventQuery &&
         g_rt.EventSynchronize && g_rt.StreamWaitEvent;
}

// ---- device allocator ------------------------------------------------------

void device_free(void* p) {
  if (p && g_loaded.load()) g_rt.Free(p);
}

struct GcuAllocator final : c10::Allocator {
  c10::DataPtr allocate(size_t n) override {
    const c10::DeviceIndex dev = current_device();
    void* p = nullptr;
    if (n > 0) {
      const int rc = rt().Malloc(&p, n);
      TORCH_CHECK_WITH(OutOfMemoryError, rc != kMemoryAllocation,
                       g_device_name, ": out of memory allocating ", n, " bytes on ",
                       g_device_name, ":", int(dev));
      GCU_CHECK(rc, sym().malloc);
    }
    return {p, p, &device_free, c10::Device(kGcu, dev)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &device_free; }
  void copy_data(void* dst, const void* src, std::size_t n) const override {
    hvda_gcu::memcpy(dst, src, n, kD2D);
  }
};

GcuAllocator g_device_allocator;

// ---- pinned host allocator (topsHostMalloc / cudaHostAlloc), for pin_memory()

std::mutex g_pinned_mu;
std::map<const char*, size_t> g_pinned;  // base -> size

void host_free(void* p) {
  if (!p) return;
  {
    std::lock_guard<std::mutex> g(g_pinned_mu);
    g_pinned.erase(static_cast<const char*>(p));
  }
  if (g_loaded.load()) g_rt.HostFree(p);
}

struct GcuHostAllocator final : c10::Allocator {
  c10::DataPtr allocate(size_t n) override {
    TORCH_CHECK(rt().HostMalloc && g_rt.HostFree, g_device_name, ": the runtime ", g_path,
                " has no ", sym().host_malloc, "/", sym().host_free,
                ", so pinned memory is unavailable; use unpinned CPU tensors");
    void* p = nullptr;
    if (n > 0) {
      GCU_CHECK(g_rt.HostMalloc(&p, n, 0), sym().host_malloc);
      std::lock_guard<std::mutex> g(g_pinned_mu);
      g_pinned[static_cast<const char*>(p)] = n;
    }
    return {p, p, &host_free, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &host_free; }
  void copy_data(void* dst, const void* src, std::size_t n) const override {
    default_copy_data(dst, src, n);
  }
};

GcuHostAllocator g_host_allocator;

bool is_pinned(const void* ptr) {
  std::lock_guard<std::mutex> g(g_pinned_mu);
  const char* p = static_cast<const char*>(ptr);
  auto it = g_pinned.upper_bound(p);
  if (it == g_pinned.begin()) return false;
  --it;
  return p < it->first + it->second;
}

// ---- device guard: devices via {tops,cuda}{Set,Get}Device, one stream (0) --

struct GcuGuardImpl final : c10::impl::DeviceGuardImplInterface {
  GcuGuardImpl() = default;
  explicit GcuGuardImpl(c10::DeviceType t) { TORCH_INTERNAL_ASSERT(t == kGcu); }

  c10::DeviceType type() const override { return kGcu; }

  c10::Device exchangeDevice(c10::Device d) const override {
    TORCH_INTERNAL_ASSERT(d.type() == kGcu);
    const c10::Device old = getDevice();
    if (d.index() >= 0 && d.index() != old.index()) set_device(d.index());
    return old;
  }
  c10::Device getDevice() const override { return {kGcu, current_device()}; }
  void setDevice(c10::Device d) const override {
    TORCH_INTERNAL_ASSERT(d.type() == kGcu);
    if (d.index() >= 0) set_device(d.index());
  }
  void uncheckedSetDevice(c10::Device d) const noexcept override {
    if (g_loaded.load() && d.index() >= 0) g_rt.SetDevice(d.index());
  }

  // A single stream per device: the runtime's default stream (handle NULL).
  c10::Stream getStream(c10::Device d) const override {
    return c10::Stream(c10::Stream::DEFAULT, norm(d));
  }
  c10::Stream getDefaultStream(c10::Device d) const override { return getStream(d); }
  c10::Stream exchangeStream(c10::Stream s) const override { return getStream(s.device()); }
  void* getStreamNativeHandle(const c10::Stream) const override { return nullptr; }

  c10::DeviceIndex deviceCount() const noexcept override {
    return g_loaded.load() ? static_cast<c10::DeviceIndex>(g_count) : 0;
  }

  void record(void** event, const c10::Stream& stream, const c10::DeviceIndex device_index,
              const c10::EventFlag flag) const override {
    TORCH_CHECK(have_events(), g_device_name, ": the runtime ", g_path,
                " has no event API (", sym().event_create_with_flags, " etc.)");
    TORCH_CHECK(device_index == -1 || device_index == stream.device_index(),
                g_device_name, ": event device ", int(device_index),
                " does not match the stream's device ", int(stream.device_index()));
    c10::DeviceGuard guard(stream.device());
    if (*event == nullptr) {
      const unsigned flags = flag == c10::EventFlag::BACKEND_DEFAULT ? 0u : 2u;
      GCU_CHECK(g_rt.EventCreateWithFlags(event, flags), sym().event_create_with_flags);
    }
    GCU_CHECK(g_rt.EventRecord(*event, nullptr), sym().event_record);
  }
  void block(void* event, const c10::Stream& stream) const override {
    if (!event) return;
    c10::DeviceGuard guard(stream.device());
    GCU_CHECK(g_rt.StreamWaitEvent(nullptr, event, 0), sym().stream_wait_event);
  }
  bool queryEvent(void* event) const override {
    if (!event) return true;
    const int rc = g_rt.EventQuery(event);
    if (rc == kNotReady) {
      // TOPS: a NotReady query leaves a last error; clear it. CUDA's does
      // not, and clearing would drop an unrelated one.
      if (g_flavour->not_ready_sets_last_error && g_rt.GetLastError) g_rt.GetLastError();
      return false;
    }
    GCU_CHECK(rc, sym().event_query);
    return true;
  }
  void destroyEvent(void* event, const c10::DeviceIndex) const noexcept override {
    if (event && g_loaded.load() && g_rt.EventDestroy) g_rt.EventDestroy(event);
  }
  void synchronizeEvent(void* event) const override {
    if (!event) return;
    GCU_CHECK(g_rt.EventSynchronize(event), sym().event_synchronize);
  }
  bool queryStream(const c10::Stream& s) const override {
    if (!have_events()) {
      synchronize(s.device_index());
      return true;
    }
    c10::DeviceGuard guard(norm(s.device()));
    Event e = nullptr;
    GCU_CHECK(g_rt.EventCreateWithFlags(&e, 2), sym().event_create_with_flags);
    bool done = true;
    try {
      GCU_CHECK(g_rt.EventRecord(e, nullptr), sym().event_record);
      done = queryEvent(e);
    } catch (...) {
      g_rt.EventDestroy(e);
      throw;
    }
    g_rt.EventDestroy(e);
    return done;
  }
  void synchronizeStream(const c10::Stream& s) const override { synchronize(s.device_index()); }
  void synchronizeDevice(const c10::DeviceIndex index) const override { synchronize(index); }

 private:
  static c10::Device norm(c10::Device d) {
    return d.index() >= 0 ? d : c10::Device(kGcu, current_device());
  }
};

// ---- PrivateUse1 hooks ----------------------------------------------------

struct GcuHooks final : at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return g_loaded.load() && g_count > 0; }
  bool hasPrimaryContext(c10::DeviceIndex) const override { return true; }
  void init() const override {}
  c10::DeviceIndex deviceCount() const override {
    return g_loaded.load() ? static_cast<c10::DeviceIndex>(g_count) : 0;
  }
  void setCurrentDevice(c10::DeviceIndex d) const override { set_device(d); }
  c10::DeviceIndex getCurrentDevice() const override { return current_device(); }
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex d) const override {
    const c10::DeviceIndex old = current_device();
    if (d >= 0 && d != old) set_device(d);
    return old;
  }
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex d) const override {
    return exchangeDevice(d);
  }
  // Random numbers for device tensors come from the CPU generator (random ops
  // run through the CPU fallback).
  const at::Generator& getDefaultGenerator(c10::DeviceIndex) const override {
    return at::detail::getDefaultCPUGenerator();
  }
  at::Generator getNewGenerator(c10::DeviceIndex) const override {
    return at::detail::createCPUGenerator();
  }
  at::Device getDeviceFromPtr(void*) const override { return {kGcu, current_device()}; }
  bool isPinnedPtr(const void* data) const override { return is_pinned(data); }
  at::Allocator* getPinnedMemoryAllocator() const override { return &g_host_allocator; }
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t newsize) const override {
    resize_storage_bytes(storage.unsafeGetStorageImpl(), newsize);
  }
};

template <typename F>
void resolve(void* handle, const char* name, F*& fn, bool required) {
  dlerror();
  fn = reinterpret_cast<F*>(dlsym(handle, name));
  const char* err = fn ? nullptr : dlerror();
  TORCH_CHECK(fn || !required, g_device_name, ": symbol ", name, " not found in the ",
              g_flavour->runtime, " runtime ", g_path,
              err ? std::string(" (") + err + ")" : std::string(), "; point ",
              g_flavour->env_var, " at a ", g_flavour->runtime, " runtime library");
}

} // namespace

// ---- public functions (gcu.h) ---------------------------------------------

void configure(const char* flavour, const char* device_name) {
  std::lock_guard<std::mutex> lock(g_load_mu);
  const std::string f = flavour ? flavour : "";
  const Flavour* chosen = f == kTops.name ? &kTops : f == kCuda.name ? &kCuda : nullptr;
  TORCH_CHECK(chosen, "hvda_test_gcu: unknown runtime flavour '", f,
              "'; HVDA_TEST_DEVICE_RUNTIME must be 'tops' or 'cuda'");
  TORCH_CHECK(device_name && *device_name, "hvda_test_gcu: the device name is empty");
  if (g_configured || g_loaded.load()) {
    TORCH_CHECK(chosen == g_flavour && g_device_name == device_name,
                "hvda_test_gcu: this process already uses the ", g_flavour->name,
                " flavour as device '", g_device_name, "'; cannot switch to ", f, " as '",
                device_name, "' (set HVDA_TEST_DEVICE_RUNTIME before starting Python)");
    return;
  }
  g_flavour = chosen;
  g_device_name = device_name;
  g_configured = true;
}

const char* device_name() { return g_device_name.c_str(); }

bool runtime_loaded() { return g_loaded.load(); }

void load_runtime(const char* path) {
  std::lock_guard<std::mutex> lock(g_load_mu);
  TORCH_CHECK(path && *path, g_device_name, ": ", g_flavour->env_var,
              " is empty; it must name the (emulated) ", g_flavour->runtime, " runtime library");
  if (g_loaded.load()) {
    TORCH_CHECK(g_path == path, g_device_name, ": the ", g_flavour->runtime, " runtime ", g_path,
                " is already loaded; cannot switch to ", path);
    return;
  }
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    TORCH_CHECK(false, g_device_name, ": cannot load the ", g_flavour->runtime,
                " runtime named by ", g_flavour->env_var, " (", path, "): ",
                e ? e : "dlopen failed");
  }
  g_path = path;
  const SymbolNames& n = sym();
  Runtime r;
  try {
    resolve(h, n.get_device_count, r.GetDeviceCount, true);
    resolve(h, n.set_device, r.SetDevice, true);
    resolve(h, n.get_device, r.GetDevice, true);
    resolve(h, n.malloc, r.Malloc, true);
    resolve(h, n.free, r.Free, true);
    resolve(h, n.memcpy, r.Memcpy, true);
    resolve(h, n.stream_synchronize, r.StreamSynchronize, true);
    resolve(h, n.get_error_string, r.GetErrorString, true);
    resolve(h, n.get_last_error, r.GetLastError, false);
    resolve(h, n.host_malloc, r.HostMalloc, false);
    resolve(h, n.host_free, r.HostFree, false);
    resolve(h, n.event_create_with_flags, r.EventCreateWithFlags, false);
    resolve(h, n.event_destroy, r.EventDestroy, false);
    resolve(h, n.event_record, r.EventRecord, false);
    resolve(h, n.event_query, r.EventQuery, false);
    resolve(h, n.event_synchronize, r.EventSynchronize, false);
    resolve(h, n.stream_wait_event, r.StreamWaitEvent, false);
  } catch (...) {
    g_path.clear();
    dlclose(h);
    throw;
  }
  g_rt = r;
  int count = 0;
  const int rc = g_rt.GetDeviceCount(&count);
  if (rc != 0) {
    g_path.clear();
    TORCH_CHECK(false, g_device_name, ": ", n.get_device_count, " failed: ", err_str(rc), " (",
                rc, ")");
  }
  g_count = count;
  // The handle is kept for the life of the process (tensors may outlive
  // everything else and free their memory at exit).
  g_loaded.store(true, std::memory_order_release);
}

int device_count() { return g_loaded.load() ? g_count : 0; }

c10::DeviceIndex current_device() {
  int d = 0;
  GCU_CHECK(rt().GetDevice(&d), sym().get_device);
  return static_cast<c10::DeviceIndex>(d);
}

void set_device(c10::DeviceIndex index) {
  TORCH_CHECK(index >= 0 && index < device_count(), g_device_name, ": invalid device index ",
              int(index), " (", device_count(), " device(s))");
  GCU_CHECK(rt().SetDevice(index), sym().set_device);
}

void memcpy(void* dst, const void* src, std::size_t n, MemcpyKind kind) {
  if (n == 0) return;
  GCU_CHECK(rt().Memcpy(dst, src, n, kind), sym().memcpy);
}

void synchronize(c10::DeviceIndex index) {
  const c10::DeviceIndex cur = current_device();
  if (index < 0 || index == cur) {
    GCU_CHECK(rt().StreamSynchronize(nullptr), sym().stream_synchronize);
    return;
  }
  set_device(index);
  const int rc = g_rt.StreamSynchronize(nullptr);
  g_rt.SetDevice(cur);
  GCU_CHECK(rc, sym().stream_synchronize);
}

void resize_storage_bytes(c10::StorageImpl* storage, std::size_t nbytes) {
  TORCH_CHECK(storage->resizable(), "Trying to resize storage that is not resizable");
  TORCH_CHECK(storage->device_type() == kGcu, g_device_name, ": resize of a storage on ",
              storage->device_type(), ", not ", g_device_name);
  c10::DeviceGuard guard(storage->device());
  c10::Allocator* alloc = storage->allocator();
  TORCH_CHECK(alloc, g_device_name, ": storage has no allocator");
  c10::DataPtr fresh;
  if (nbytes > 0) fresh = alloc->allocate(nbytes);
  const std::size_t keep = std::min<std::size_t>(nbytes, storage->nbytes());
  const void* old = storage->data_ptr().get();
  if (keep > 0 && old) hvda_gcu::memcpy(fresh.get(), old, keep, kD2D);
  storage->set_data_ptr_noswap(std::move(fresh));
  storage->set_nbytes(nbytes);
}

} // namespace hvda_gcu

// ---- registrations --------------------------------------------------------

REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, &hvda_gcu::g_device_allocator);
C10_REGISTER_GUARD_IMPL(PrivateUse1, hvda_gcu::GcuGuardImpl);

// ---- Python module ---------------------------------------------------------

namespace {

template <typename F>
PyObject* guarded(F&& f) {
  try {
    return f();
  } catch (const c10::Error& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what_without_backtrace());
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
  return nullptr;
}

// _init_runtime(flavour, device_name, path): configure(flavour, device_name),
// then load_runtime(path) unless path is None.
PyObject* py_init_runtime(PyObject*, PyObject* args) {
  const char* flavour = nullptr;
  const char* name = nullptr;
  const char* path = nullptr;
  if (!PyArg_ParseTuple(args, "ssz:_init_runtime", &flavour, &name, &path)) return nullptr;
  return guarded([&]() -> PyObject* {
    hvda_gcu::configure(flavour, name);
    if (path) hvda_gcu::load_runtime(path);
    Py_RETURN_NONE;
  });
}

PyObject* py_runtime_path(PyObject*, PyObject*) {
  return guarded([&]() -> PyObject* {
    if (!hvda_gcu::runtime_loaded()) Py_RETURN_NONE;
    return PyUnicode_FromString(hvda_gcu::g_path.c_str());
  });
}

PyObject* py_device_count(PyObject*, PyObject*) {
  return PyLong_FromLong(hvda_gcu::device_count());
}

PyObject* py_current_device(PyObject*, PyObject*) {
  return guarded([&]() -> PyObject* { return PyLong_FromLong(hvda_gcu::current_device()); });
}

PyObject* py_set_device(PyObject*, PyObject* arg) {
  return guarded([&]() -> PyObject* {
    const long d = PyLong_AsLong(arg);
    if (d == -1 && PyErr_Occurred()) return nullptr;
    hvda_gcu::set_device(static_cast<c10::DeviceIndex>(d));
    Py_RETURN_NONE;
  });
}

PyObject* py_synchronize(PyObject*, PyObject* arg) {
  return guarded([&]() -> PyObject* {
    const long d = PyLong_AsLong(arg);
    if (d == -1 && PyErr_Occurred()) return nullptr;
    std::exception_ptr err;
    Py_BEGIN_ALLOW_THREADS
    try {
      hvda_gcu::synchronize(static_cast<c10::DeviceIndex>(d));
    } catch (...) {
      err = std::current_exception();
    }
    Py_END_ALLOW_THREADS
    if (err) std::rethrow_exception(err);
    Py_RETURN_NONE;
  });
}

PyMethodDef kMethods[] = {
    {"_init_runtime", py_init_runtime, METH_VARARGS,
     "_init_runtime(flavour ('tops'|'cuda'), device_name, path or None): select the flavour "
     "and device name, then dlopen the runtime at path"},
    {"_runtime_path", py_runtime_path, METH_NOARGS, "path of the loaded runtime, or None"},
    {"device_count", py_device_count, METH_NOARGS, "number of devices"},
    {"current_device", py_current_device, METH_NOARGS, "current device of this thread"},
    {"set_device", py_set_device, METH_O, "set the current device of this thread"},
    {"synchronize", py_synchronize, METH_O,
     "wait for the default stream of a device (-1: current)"},
    {nullptr, nullptr, 0, nullptr}};

#define HVDA_STR2(x) #x
#define HVDA_STR(x) HVDA_STR2(x)

PyModuleDef kModule = {PyModuleDef_HEAD_INIT, HVDA_STR(TORCH_EXTENSION_NAME),
                       "native part of the test-only torch device ('gcu' / 'emucuda')", -1,
                       kMethods};

} // namespace

#define HVDA_CONCAT2(a, b) a##b
#define HVDA_CONCAT(a, b) HVDA_CONCAT2(a, b)

PyMODINIT_FUNC HVDA_CONCAT(PyInit_, TORCH_EXTENSION_NAME)(void) {
  // The hooks answer "no devices" until the runtime is loaded; registered
  // here so CPU-side accelerator queries (pin_memory, torch.accelerator)
  // work in a process without the runtime too.
  static bool hooks_registered = false;
  if (!hooks_registered) {
    try {
      at::RegisterPrivateUse1HooksInterface(new hvda_gcu::GcuHooks());
    } catch (const c10::Error& e) {
      PyErr_SetString(PyExc_ImportError, e.what_without_backtrace());
      return nullptr;
    }
    hooks_registered = true;
  }
  return PyModule_Create(&kModule);
}
