// How the ABI tables are assembled: each file that implements part of the
// ABI fills its own fields; plugin_entry.cc owns the tables and calls these
// once.
#pragma once

#include <memory>

#include "horovod_accel/plugin.h"
#include "tcp_mesh.h"

namespace example {

void FillDeviceOps(hvda_device_ops_v1* ops);      // device_ops.cc
void FillCommOps(hvda_ccl_ops_v1* ops);           // comm_ops.cc: ids, communicators
void FillCollectiveOps(hvda_ccl_ops_v1* ops);     // collectives.cc

// What an hvda_comm_t points to. The mesh is shared with the stream tasks
// that use it, so comm_destroy never pulls it from under running work: the
// sockets close when the last user lets go.
struct Comm {
  std::shared_ptr<Mesh> mesh;
};
inline Comm* ToComm(hvda_comm_t c) { return reinterpret_cast<Comm*>(c); }
inline hvda_comm_t ToHandle(Comm* c) { return reinterpret_cast<hvda_comm_t>(c); }

}  // namespace example
