// ControllerTransport over a connected Gloo context (point-to-point messages
// on dedicated slots, so it never interferes with data-plane collectives that
// use other contexts).
#pragma once

#include <memory>

#include <gloo/context.h>

#include "common/transport/controller_transport.h"

namespace hvda {

class GlooControllerTransport : public ControllerTransport {
 public:
  // Shares ownership of ctx; the context must be used by nobody else.
  explicit GlooControllerTransport(std::shared_ptr<gloo::Context> ctx);
  int rank() const override { return ctx_->rank; }
  int size() const override { return ctx_->size; }
  Status Gather(const std::string& mine, std::vector<std::string>* all) override;
  Status Broadcast(std::string* bytes) override;
  Status BitAnd(std::vector<uint64_t>* bits) override;

 private:
  // One message: a fixed-size first frame carrying the length and the head of
  // the payload, and a second frame only for long payloads.
  void Send(int peer, uint64_t slot, const std::string& bytes);
  std::string Recv(int peer, uint64_t slot);

  std::shared_ptr<gloo::Context> ctx_;
  std::vector<char> frame_;  // scratch for the first frame
};

}  // namespace hvda
