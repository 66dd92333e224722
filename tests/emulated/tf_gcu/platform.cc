// SE_InitPlugin: registers the platform "GCU" (TF device type GCU, devices
// /device:GCU:0 ..) with TF's StreamExecutor C API. Devices are the emulated
// TOPS runtime's (topsGetDeviceCount: HVDA_EMU_DEVICE_COUNT).
//
// TF copies the SP_* structs filled here; the strings must outlive the
// plugin (they are literals). Each SP_Device owns a GcuDevice
// (device_handle) from create_device to destroy_device.
#include "gcu_plugin.h"

namespace hvda_tf_gcu {
namespace {

constexpr char kPlatformName[] = "GCU";
constexpr char kDeviceType[] = "GCU";

void GetDeviceCount(const SP_Platform* /*platform*/, int* device_count, TF_Status* status) {
  *device_count = 0;
  TopsOk(topsGetDeviceCount(device_count), "topsGetDeviceCount", status);
}

void CreateDevice(const SP_Platform* /*platform*/, SE_CreateDeviceParams* params,
                  TF_Status* /*status*/) {
  SP_Device* device = params->device;
  device->struct_size = SP_DEVICE_STRUCT_SIZE;
  device->ext = nullptr;
  device->ordinal = params->ordinal;
  device->device_handle = new GcuDevice(params->ordinal);
  device->hardware_name = "emulated GCU";
  device->device_vendor = "horovod_accel emulation";
  device->pci_bus_id = nullptr;
}

void DestroyDevice(const SP_Platform* /*platform*/, SP_Device* device) {
  delete Device(device);
  device->device_handle = nullptr;
}

// No optional device functions (NUMA node, bandwidth, gflops): TF treats
// them as unset.
void CreateDeviceFns(const SP_Platform* /*platform*/, SE_CreateDeviceFnsParams* params,
                     TF_Status* /*status*/) {
  params->device_fns->struct_size = SP_DEVICE_FNS_STRUCT_SIZE;
}

void DestroyDeviceFns(const SP_Platform* /*platform*/, SP_DeviceFns* /*device_fns*/) {}

void CreateStreamExecutor(const SP_Platform* /*platform*/, SE_CreateStreamExecutorParams* params,
                          TF_Status* /*status*/) {
  SP_StreamExecutor* se = params->stream_executor;
  se->struct_size = SP_STREAMEXECUTOR_STRUCT_SIZE;
  FillMemoryFns(se);
  FillStreamFns(se);
}

void DestroyStreamExecutor(const SP_Platform* /*platform*/, SP_StreamExecutor* /*se*/) {}

void DestroyPlatform(SP_Platform* /*platform*/) {}
void DestroyPlatformFns(SP_PlatformFns* /*platform_fns*/) {}

}  // namespace
}  // namespace hvda_tf_gcu

extern "C" __attribute__((visibility("default"))) void SE_InitPlugin(
    SE_PlatformRegistrationParams* params, TF_Status* /*status*/) {
  using namespace hvda_tf_gcu;
  params->major_version = SE_MAJOR;
  params->minor_version = SE_MINOR;
  params->patch_version = SE_PATCH;
  SP_Platform* platform = params->platform;
  platform->struct_size = SP_PLATFORM_STRUCT_SIZE;
  platform->name = kPlatformName;
  platform->type = kDeviceType;
  platform->supports_unified_memory = 0;
  // TF allocates every tensor through `allocate`: the emulated memory's
  // guards (PROT_NONE device addresses, exact-range checks) see each one.
  platform->use_bfc_allocator = 0;
  platform->force_memory_growth = 0;
  SP_PlatformFns* fns = params->platform_fns;
  fns->struct_size = SP_PLATFORM_FNS_STRUCT_SIZE;
  fns->get_device_count = GetDeviceCount;
  fns->create_device = CreateDevice;
  fns->destroy_device = DestroyDevice;
  fns->create_device_fns = CreateDeviceFns;
  fns->destroy_device_fns = DestroyDeviceFns;
  fns->create_stream_executor = CreateStreamExecutor;
  fns->destroy_stream_executor = DestroyStreamExecutor;
  params->destroy_platform = DestroyPlatform;
  params->destroy_platform_fns = DestroyPlatformFns;
}
