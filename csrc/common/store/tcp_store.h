// TcpStore: the client of horovodrun's rendezvous store
// (server: horovod_accel/rendezvous/server.py). Ranks find it through
// HOROVOD_GLOO_RENDEZVOUS_ADDR/PORT and prove they belong to the job with
// the secret in _HOROVOD_SECRET_KEY.
//
// The wire protocol is NOTE [Rendezvous store wire protocol] in
// common/store/wire_protocol.def, the one table both the Python server and
// this client are built from or tested against; the constants and framing
// used here come from common/store/wire_protocol.h.
// This client sends Hello, Set and Get.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "common/store/store.h"

namespace hvda {

// Connects to the store at host:port and authenticates with `secret`.
// Blocks: retries refused/unreachable connections until `timeout` passes (the
// server may start slightly after the rank), then returns kTimeout saying the
// store could not be reached; a wrong secret returns kAborted at once.
// `timeout` also bounds every later Set's wait for its reply.
// On success *out owns the store. The store is thread-safe: it keeps a pool of
// connections and opens another one when all are busy, so a Get blocked in one
// thread never delays a Set from another.
Status ConnectTcpStore(const std::string& host, int port, const std::string& secret,
                       std::chrono::milliseconds timeout, std::unique_ptr<Store>* out);

}  // namespace hvda
