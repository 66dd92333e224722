// TcpStore: the client of horovodrun's rendezvous store
// (server: horovod_accel/rendezvous/server.py). Ranks find it through
// HOROVOD_GLOO_RENDEZVOUS_ADDR/PORT and prove they belong to the job with
// the secret in _HOROVOD_SECRET_KEY.
//
// NOTE [Rendezvous store wire protocol] (authoritative copy with the server in
// horovod_accel/rendezvous/protocol.py; change both together)
//   Frame:   u32 big-endian N, then N payload bytes (N <= 64 MiB; the first
//            frame of a connection <= 4 KiB).
//   Payload: u8 code, then fields, each u32 big-endian length + bytes.
//            Integers inside fields are ASCII decimal.
//   Requests: 0x01 HELLO [magic "hvda-store/1", secret] (first frame),
//             0x02 SET [key, value], 0x03 GET [key, timeout_ms] (the server
//             holds the reply until the key is set or timeout_ms passes;
//             < 0 = no limit), 0x04 ADD [key, delta], 0x05 DELETE [key].
//   Replies:  0x80 OK [fields], 0x81 TIMEOUT [msg], 0x82 REFUSED [msg] (then
//             closed), 0x83 ERROR [msg]. One request in flight per connection.
// This client uses HELLO, SET and GET.
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
