// Builds a connected Gloo context for one communicator over our Store.
// Shared by the controller transport and the CPU Gloo collective backend.
#pragma once

#include <memory>

#include <gloo/context.h>

#include "common/hal/collective_backend.h"
#include "common/util/status.h"

namespace hvda {

// Blocks until every rank of spec has connected (full mesh over TCP) or the
// timeout passes. `iface` (HOROVOD_GLOO_IFACE) picks the NIC; empty:
// loopback when all ranks share this host, else the host name's address if
// it is one of this host's, else the first non-loopback interface that is up.
Status CreateGlooContext(const CommunicatorSpec& spec, const std::string& iface,
                         std::shared_ptr<gloo::Context>* out);

}  // namespace hvda
