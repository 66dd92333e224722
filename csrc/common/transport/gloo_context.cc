#include "common/transport/gloo_context.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <unistd.h>

#include <chrono>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

#include "common/store/store.h"
#include "common/util/settings.h"

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

// This host's IPv4 addresses, by interface, for interfaces that are up and
// not loopback, in the kernel's order.
std::vector<std::pair<std::string, std::string>> NetworkAddresses() {
  std::vector<std::pair<std::string, std::string>> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    if ((a->ifa_flags & IFF_UP) == 0 || (a->ifa_flags & IFF_LOOPBACK) != 0) continue;
    char ip[INET_ADDRSTRLEN] = {0};
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, ip, sizeof(ip));
    out.emplace_back(a->ifa_name, ip);
  }
  freeifaddrs(list);
  return out;
}

// Where this rank listens when its communicator spans hosts and no
// HOROVOD_GLOO_IFACE is set: the address the host name resolves to, when that
// is one of this host's non-loopback addresses (the usual cluster setup);
// else the first non-loopback interface that is up. Gloo's own host-name
// lookup is not used: hosts whose names do not resolve are common
// (containers, namespaces), and Gloo fails on them without a clear message.
Status ChooseAddress(gloo::transport::tcp::attr* attr) {
  const auto local = NetworkAddresses();
  char name[256] = {0};
  gethostname(name, sizeof(name) - 1);
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(name, nullptr, &hints, &found) == 0) {
    for (addrinfo* r = found; r != nullptr; r = r->ai_next) {
      char ip[INET_ADDRSTRLEN] = {0};
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(r->ai_addr)->sin_addr, ip, sizeof(ip));
      for (const auto& [iface, addr] : local) {
        if (addr == ip) {
          freeaddrinfo(found);
          attr->hostname = addr;
          return Status::OK();
        }
      }
    }
    freeaddrinfo(found);
  }
  if (local.empty())
    return Status::InvalidArgument(
        "the ranks of this communicator are on several hosts, but this host (" +
        std::string(name) + ") has no network interface with an IPv4 address that is up; "
        "connect it, or set " + setting_env::gloo_iface + " to the interface the hosts share");
  attr->iface = local.front().first;
  return Status::OK();
}

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
    } else {
      Status chosen = ChooseAddress(&attr);
      if (!chosen.ok()) return chosen;
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
                           ". Check that every rank was started and that " +
                           setting_env::gloo_iface + " names a reachable interface.");
  }
}

}  // namespace hvda
