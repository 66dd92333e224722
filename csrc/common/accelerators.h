// Accelerators: the device plugins of one Runtime and the accelerator this
// rank's tensors run on (docs/design/plugins.md).
//
// - Load(paths), from Init: opens and initializes each plugin once per
//   process (they stay loaded across init() generations: vendor runtimes
//   do not like being unloaded). A plugin that fails is remembered with
//   its reason, logged, and never fatal: CPU work goes on, and a tensor on
//   its device type gets that reason at enqueue.
// - Bind(type, index), from framework threads at enqueue: the first device
//   tensor of a generation fixes this rank's device (one accelerator per
//   process, as upstream); later tensors must be on the same one.
// - device(), from the background thread: the bound device, binding the
//   first available plugin's device local_rank % count when this rank has
//   not enqueued a device tensor yet (e.g. it joined and must still take
//   part in other ranks' device collectives).
// - EndGeneration(), from Shutdown once every executor is gone: unbinds.
//
// Thread-safety: every method is thread-safe.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/plugin/plugin_device.h"
#include "common/plugin/plugin_discovery.h"
#include "common/plugin/plugin_library.h"
#include "common/util/logging.h"
#include "common/util/status.h"

namespace hvda {

class Accelerators {
 public:
  explicit Accelerators(const Logger* log) : host_(log), log_(log) {}
  ~Accelerators();

  void Load(const std::vector<std::string>& paths);
  Status Bind(const std::string& device_type, int index, std::shared_ptr<PluginDevice>* out);
  // The bound device (binding a default one, see above); null with *why
  // set when no plugin is available.
  std::shared_ptr<PluginDevice> device(int local_rank, std::string* why);
  void EndGeneration();
  // The loaded plugin serving device_type's collective counts
  // (PluginActivity::Snapshot); InvalidArgument naming the loaded types when
  // no usable plugin serves it.
  Status Activity(const std::string& device_type,
                  std::vector<std::pair<std::string, uint64_t>>* counts);

 private:
  struct Plugin {
    std::string path;
    std::shared_ptr<PluginLibrary> lib;  // null when it failed to load or init
    std::string device_type;
    std::string why;  // why it is unusable
  };
  Status BindLocked(const Plugin& p, int index);  // sets bound_
  std::string Known() const;

  HostApi host_;  // outlives every loaded plugin (destroyed after plugins_)
  const Logger* log_;
  std::mutex mu_;
  std::vector<Plugin> plugins_;
  std::shared_ptr<PluginDevice> bound_;
  std::string bound_type_;
};

}  // namespace hvda
