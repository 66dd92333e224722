#include "common/util/thread_affinity.h"

#include <pthread.h>
#include <sched.h>

#include <cstring>
#include <sstream>
#include <vector>

#include "common/util/settings.h"

namespace hvda {

Status AffinityCoreFor(const std::string& spec, int local_rank, int* core) {
  *core = -1;
  if (spec.empty()) return Status::OK();
  std::vector<int> cores;
  std::stringstream ss(spec);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t used = 0;
    int value = -1;
    try {
      value = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || value < 0)
      return Status::InvalidArgument(std::string(setting_env::thread_affinity) + "='" + spec +
                                     "': '" + item +
                                     "' is not a core number; give a comma-separated list of "
                                     "cores, one per local rank (e.g. 0,2).");
    cores.push_back(value);
  }
  if (local_rank < 0 || local_rank >= static_cast<int>(cores.size()))
    return Status::InvalidArgument(std::string(setting_env::thread_affinity) + "='" + spec +
                                   "' lists " +
                                   std::to_string(cores.size()) + " cores but local rank " +
                                   std::to_string(local_rank) +
                                   " needs an entry; give one core per local rank.");
  *core = cores[local_rank];
  return Status::OK();
}

Status PinThread(std::thread& thread, int core) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (core >= CPU_SETSIZE)
    return Status::InvalidArgument(std::string(setting_env::thread_affinity) + ": core " +
                                   std::to_string(core) +
                                   " is out of range.");
  CPU_SET(core, &set);
  int err = pthread_setaffinity_np(thread.native_handle(), sizeof(set), &set);
  if (err != 0)
    return Status::InvalidArgument(std::string(setting_env::thread_affinity) +
                                   ": cannot pin the background thread to "
                                   "core " + std::to_string(core) + ": " + std::strerror(err) +
                                   " (is the core available to this process?).");
  return Status::OK();
}

}  // namespace hvda
