#include "common/transport/gloo_context.h"

#include <chrono>
#include <exception>

#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

#include "common/store/store.h"

namespace hvda {
namespace {

// Adapts hvda::Store to gloo's store interface. Gloo reports failures by
// exception, so errors are thrown here and caught in CreateGlooContext.
class GlooStoreAdapter : public gloo::rendezvous::Store {
 public:
  GlooStoreAdapter(hvda::Store* base, std::string prefix, std::chrono::milliseconds timeout)
      : base_(base), prefix_(std::move(prefix)), timeout_(timeout) {}

  void set(const std::string& key, const std::vector<char>& data) override {
    Status st = base_->Set(prefix_ + key, std::string(data.begin(), data.end()));
    if (!st.ok()) throw std::runtime_error(st.reason());
  }
  std::vector<char> get(const std::string& key) override {
    std::string v;
    Status st = base_->Get(prefix_ + key, &v, timeout_);
    if (!st.ok()) throw std::runtime_error(st.reason());
    return std::vector<char>(v.begin(), v.end());
  }
  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override {
    for (const auto& k : keys) {
      std::string v;
      Status st = base_->Get(prefix_ + k, &v, timeout);
      if (!st.ok()) throw std::runtime_error(st.reason());
    }
  }

 private:
  hvda::Store* base_;
  std::string prefix_;
  std::chrono::milliseconds timeout_;
};

bool AllSameHost(const CommunicatorSpec& spec) {
  for (const auto& h : spec.hosts)
    if (h != spec.hosts.front()) return false;
  return true;
}

}  // namespace

Status CreateGlooContext(const CommunicatorSpec& spec, const std::string& iface,
                         std::shared_ptr<gloo::Context>* out) {
  auto timeout = std::chrono::milliseconds(static_cast<int64_t>(spec.timeout_seconds * 1000));
  try {
    gloo::transport::tcp::attr attr;
    if (!iface.empty()) {
      attr.iface = iface;
    } else if (spec.hosts.empty() || AllSameHost(spec)) {
      attr.hostname = "127.0.0.1";
    }
    auto device = gloo::transport::tcp::CreateDevice(attr);
    auto ctx = std::make_shared<gloo::rendezvous::Context>(spec.rank, spec.size);
    ctx->setTimeout(timeout);
    GlooStoreAdapter store(spec.store, spec.prefix, timeout);
    ctx->connectFullMesh(store, device);
    *out = ctx;
    return Status::OK();
  } catch (const std::exception& e) {
    return Status::Aborted("could not connect Gloo communicator '" + spec.prefix + "' (rank " +
                           std::to_string(spec.rank) + " of " + std::to_string(spec.size) +
                           "): " + e.what() +
                           ". Check that every rank was started and that HOROVOD_GLOO_IFACE "
                           "names a reachable interface.");
  }
}

}  // namespace hvda
