#include "link.h"

#include <atomic>

namespace hvda_mx {
namespace {

// Written once by Bind (the same values on a repeated bind) before any push
// can read them; `g_bound` publishes them.
MxFunctions g_mx{};
const hvda_core_api_v1* g_api = nullptr;
hvda_core_runtime* g_runtime = nullptr;
std::atomic<bool> g_bound{false};
std::atomic<uint64_t> g_epoch{0};

}  // namespace

const MxFunctions* Mx() { return g_bound.load(std::memory_order_acquire) ? &g_mx : nullptr; }

const hvda_core_api_v1* CoreApi() {
  return g_bound.load(std::memory_order_acquire) ? g_api : nullptr;
}

hvda_core_runtime* CoreRuntime() {
  return g_bound.load(std::memory_order_acquire) ? g_runtime : nullptr;
}

bool Bind(const hvda_core_api_v1* api, hvda_core_runtime* runtime, const MxFunctions& mx,
          std::string* error) {
  if (api == nullptr || runtime == nullptr) {
    *error = "hvda_mx_bind: no core table or runtime";
    return false;
  }
  if (api->major != HVDA_CORE_API_MAJOR || !HVDA_CORE_HAS_FIELD(api, hvda_core_api_v1, enqueue)) {
    *error = "the horovod_accel core's C API (major " + std::to_string(api->major) +
             ") does not match this MXNet engine library (built for major " +
             std::to_string(HVDA_CORE_API_MAJOR) + "); rebuild horovod_accel";
    return false;
  }
  if (!mx.MXEnginePushAsyncND || !mx.MXShallowCopyNDArray || !mx.MXNDArrayFree ||
      !mx.MXNDArrayToDLPack || !mx.MXNDArrayGetShapeEx || !mx.MXNDArrayGetDType ||
      !mx.MXNDArrayGetContext || !mx.MXGetLastError) {
    *error = "hvda_mx_bind: an MXNet C API function is missing (MXNet older than 1.6?)";
    return false;
  }
  if (g_bound.load(std::memory_order_acquire)) {
    // A second bind (e.g. a reloaded module) must bring the same process-wide links.
    if (g_api == api && g_runtime == runtime && g_mx.MXEnginePushAsyncND == mx.MXEnginePushAsyncND)
      return true;
    *error = "hvda_mx_bind: already bound to another core runtime or libmxnet";
    return false;
  }
  g_mx = mx;
  g_api = api;
  g_runtime = runtime;
  g_bound.store(true, std::memory_order_release);
  return true;
}

uint64_t Epoch() { return g_epoch.load(std::memory_order_acquire); }

void EndEpoch() { g_epoch.fetch_add(1, std::memory_order_acq_rel); }

std::string MxLastError() {
  const MxFunctions* mx = Mx();
  const char* msg = mx != nullptr ? mx->MXGetLastError() : nullptr;
  return msg != nullptr ? std::string(msg) : std::string();
}

}  // namespace hvda_mx
