// TcpStore (common/store/tcp_store.h), the C++ client of horovodrun's
// rendezvous store, against a minimal server in this file that follows NOTE
// [Rendezvous store wire protocol] (common/store/wire_protocol.def) as
// horovod_accel/rendezvous/server.py serves it: HELLO with magic and secret
// first (REFUSED with the server's reason otherwise), SET, and GET held until
// the key is set or its timeout passes (then TIMEOUT).
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/store/tcp_store.h"
#include "common/store/wire_protocol.h"
#include "store_wire_test_util.h"

namespace hvda {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

// The codes come from the one table (common/store/wire_protocol.def); the
// framing below is this file's own, an independent reading of it.
using store_wire::kOpGet;
using store_wire::kOpHello;
using store_wire::kOpSet;
using store_wire::kStError;
using store_wire::kStOk;
using store_wire::kStRefused;
using store_wire::kStTimeout;

// Reads exactly `n` bytes from a blocking socket; false on EOF or error.
bool ReadExactly(int fd, std::string* out, size_t n) {
  out->assign(n, '\0');
  for (size_t got = 0; got < n;) {
    ssize_t r = recv(fd, &(*out)[got], n - got, 0);
    if (r <= 0) return false;
    got += static_cast<size_t>(r);
  }
  return true;
}

uint32_t BigEndianAt(const std::string& s, size_t at) {
  return (uint32_t(uint8_t(s[at])) << 24) | (uint32_t(uint8_t(s[at + 1])) << 16) |
         (uint32_t(uint8_t(s[at + 2])) << 8) | uint32_t(uint8_t(s[at + 3]));
}

void AppendBigEndian(std::string* s, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) s->push_back(static_cast<char>((v >> shift) & 0xff));
}

// The store's side of one connection: whole request frames in, replies out.
struct Frame {
  uint8_t code = 0;
  std::vector<std::string> fields;
};

// Reads one request; its bytes, length prefix included, go to *raw.
bool ReadFrame(int fd, Frame* req, std::string* raw) {
  std::string head, payload;
  if (!ReadExactly(fd, &head, 4) || !ReadExactly(fd, &payload, BigEndianAt(head, 0)) ||
      payload.empty())
    return false;
  *raw = head + payload;
  req->code = static_cast<uint8_t>(payload[0]);
  req->fields.clear();
  for (size_t at = 1; at < payload.size();) {
    if (at + 4 > payload.size()) return false;
    const uint32_t len = BigEndianAt(payload, at);
    if (at + 4 + len > payload.size()) return false;
    req->fields.push_back(payload.substr(at + 4, len));
    at += 4 + len;
  }
  return true;
}

void Reply(int fd, uint8_t code, const std::vector<std::string>& fields = {}) {
  std::string payload(1, static_cast<char>(code));
  for (const std::string& f : fields) {
    AppendBigEndian(&payload, static_cast<uint32_t>(f.size()));
    payload += f;
  }
  std::string frame;
  AppendBigEndian(&frame, static_cast<uint32_t>(payload.size()));
  frame += payload;
  (void)!send(fd, frame.data(), frame.size(), MSG_NOSIGNAL);
}

// A rendezvous store on 127.0.0.1 (an ephemeral port) for one test. Serves
// each connection on its own thread until Stop() (or the destructor), which
// wakes held GETs and closes every socket.
class FakeStoreServer {
 public:
  explicit FakeStoreServer(std::string secret) : secret_(std::move(secret)) {
    listener_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (bind(listener_, reinterpret_cast<sockaddr*>(&addr), len) != 0 || listen(listener_, 16) != 0 ||
        getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
      ADD_FAILURE() << "cannot listen on loopback";
    port_ = ntohs(addr.sin_port);
    accept_thread_ = std::thread([this] { AcceptLoop(); });
  }
  ~FakeStoreServer() { Stop(); }

  int port() const { return port_; }
  int connections() const { return connections_; }
  int refused() const { return refused_; }
  // GETs that found their key missing and were held (so far, in all).
  int held_gets() const { return held_gets_; }
  // The timeout_ms field of the last GET.
  std::string last_get_timeout() {
    std::lock_guard<std::mutex> lock(mu_);
    return last_get_timeout_;
  }

  // Every request frame received so far, whole, in arrival order.
  std::vector<std::string> frames() {
    std::lock_guard<std::mutex> lock(mu_);
    return frames_;
  }

  // From now on SET is answered with ERROR [why].
  void FailSetsWith(std::string why) {
    std::lock_guard<std::mutex> lock(mu_);
    set_error_ = std::move(why);
  }

  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopped_) return;
      stopped_ = true;
      for (int fd : conns_) shutdown(fd, SHUT_RDWR);
    }
    cv_.notify_all();
    shutdown(listener_, SHUT_RDWR);
    accept_thread_.join();  // no thread or connection is added after this
    for (std::thread& t : serve_threads_) t.join();
    for (int fd : conns_) close(fd);
    close(listener_);
  }

 private:
  void AcceptLoop() {
    while (true) {
      int fd = accept(listener_, nullptr, nullptr);
      if (fd < 0) return;
      std::lock_guard<std::mutex> lock(mu_);
      if (stopped_) {
        close(fd);
        return;
      }
      ++connections_;
      conns_.push_back(fd);
      serve_threads_.emplace_back([this, fd] { Serve(fd); });
    }
  }

  // Like rendezvous/server.py: a bad HELLO is refused with the reason and the
  // connection ends; then one request at a time until the client leaves.
  void Serve(int fd) {
    Frame req;
    std::string raw;
    if (!ReadFrame(fd, &req, &raw)) return;
    Record(raw);
    if (req.code != kOpHello || req.fields.size() != 2 || req.fields[0] != store_wire::kMagic) {
      return Refuse(fd, "the client speaks another protocol or version");
    }
    if (req.fields[1] != secret_ || secret_.empty()) {
      return Refuse(fd, "wrong job secret (_HOROVOD_SECRET_KEY); only processes started by this "
                        "horovodrun may connect");
    }
    Reply(fd, kStOk);
    while (ReadFrame(fd, &req, &raw)) {
      std::unique_lock<std::mutex> lock(mu_);
      frames_.push_back(raw);
      if (req.code == kOpSet && req.fields.size() == 2) {
        if (!set_error_.empty()) {
          Reply(fd, kStError, {set_error_});
          continue;
        }
        data_[req.fields[0]] = req.fields[1];
        cv_.notify_all();
        Reply(fd, kStOk);
      } else if (req.code == kOpGet && req.fields.size() == 2) {
        const std::string& key = req.fields[0];
        const long long ms = std::stoll(req.fields[1]);
        last_get_timeout_ = req.fields[1];
        auto ready = [&] { return stopped_ || data_.count(key) > 0; };
        if (!ready()) ++held_gets_;
        if (ms < 0)
          cv_.wait(lock, ready);
        else
          cv_.wait_for(lock, milliseconds(ms), ready);
        if (data_.count(key))
          Reply(fd, kStOk, {data_[key]});
        else if (!stopped_)
          Reply(fd, kStTimeout, {"key '" + key + "' was not set within " + req.fields[1] + " ms"});
      } else {
        Reply(fd, kStError, {"unknown request code"});
        return;
      }
    }
  }

  void Record(const std::string& raw) {
    std::lock_guard<std::mutex> lock(mu_);
    frames_.push_back(raw);
  }

  void Refuse(int fd, const std::string& why) {
    ++refused_;
    Reply(fd, kStRefused, {why});
    shutdown(fd, SHUT_RDWR);  // closed by Stop(), so the number is never reused meanwhile
  }

  const std::string secret_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<int> connections_{0};
  std::atomic<int> refused_{0};
  std::atomic<int> held_gets_{0};
  std::thread accept_thread_;
  std::mutex mu_;  // guards everything below
  std::condition_variable cv_;
  bool stopped_ = false;
  std::string set_error_;
  std::string last_get_timeout_;
  std::map<std::string, std::string> data_;
  std::vector<std::string> frames_;
  std::vector<int> conns_;
  std::vector<std::thread> serve_threads_;
};

// A server with secret "s" and a store connected to it, for each test.
class ConnectedTcpStore : public ::testing::Test {
 protected:
  void SetUp() override {
    Status st = ConnectTcpStore("127.0.0.1", server.port(), "s", milliseconds(5000), &store);
    ASSERT_TRUE(st.ok()) << st.reason();
  }
  FakeStoreServer server{"s"};
  std::unique_ptr<Store> store;
};

double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

TEST_F(ConnectedTcpStore, SetGetRoundTrip) {
  const std::string binary("a\0b\xff", 4);
  ASSERT_TRUE(store->Set("rank.0.addr", "10.0.0.1:4000").ok());
  ASSERT_TRUE(store->Set("blob", binary).ok());
  ASSERT_TRUE(store->Set("empty", "").ok());
  std::string value;
  ASSERT_TRUE(store->Get("rank.0.addr", &value, milliseconds(1000)).ok());
  EXPECT_EQ(value, "10.0.0.1:4000");
  ASSERT_TRUE(store->Get("blob", &value, milliseconds(1000)).ok());
  EXPECT_EQ(value, binary);
  ASSERT_TRUE(store->Get("empty", &value, milliseconds(1000)).ok());
  EXPECT_EQ(value, "");
  EXPECT_EQ(server.connections(), 1) << "sequential calls reuse one connection";
  // Keys through a PrefixStore land under the prefix.
  PrefixStore prefixed(store.get(), "round1/");
  ASSERT_TRUE(prefixed.Set("k", "v").ok());
  ASSERT_TRUE(store->Get("round1/k", &value, milliseconds(1000)).ok());
  EXPECT_EQ(value, "v");
}

// The bytes TcpStore sends are the table's (common/store/wire_protocol.def):
// each request it uses is the frame built from the table's field order with
// this test's values. tests/python/test_rendezvous_wire.py holds the Python
// server and client to the same table, so a disagreement on a code, a field
// order or the framing between the core and horovodrun fails a test.
TEST_F(ConnectedTcpStore, RequestBytesFollowTheTable) {
  ASSERT_TRUE(store->Set("rank.0", "10.0.0.1:4000").ok());
  std::string value;
  ASSERT_TRUE(store->Get("rank.0", &value, milliseconds(1500)).ok());
  const std::map<std::string, std::string> values = {{"magic", store_wire::kMagic},
                                                     {"secret", "s"},
                                                     {"key", "rank.0"},
                                                     {"value", "10.0.0.1:4000"},
                                                     {"timeout_ms", "1500"}};
  std::vector<std::string> expected, sent;
  for (const char* request : {"Hello", "Set", "Get"})
    expected.push_back(store_wire_test::Hex(store_wire_test::TableFrame(request, values)));
  for (const std::string& frame : server.frames()) sent.push_back(store_wire_test::Hex(frame));
  EXPECT_EQ(sent, expected);
}

// The server holds a GET until the key arrives; a SET from another thread
// meanwhile goes over a second connection rather than waiting behind it.
TEST_F(ConnectedTcpStore, GetWaitsForAKeySetLater) {
  std::string value;
  Status got;
  std::thread getter([&] { got = store->Get("late", &value, milliseconds(10000)); });
  // The SET goes only once the server holds the GET (a SET first would be
  // no test of waiting).
  const auto start = Clock::now();
  while (server.held_gets() == 0 && SecondsSince(start) < 5.0)
    std::this_thread::sleep_for(milliseconds(1));
  EXPECT_EQ(server.held_gets(), 1);
  EXPECT_TRUE(store->Set("late", "here").ok());  // (no ASSERT before the join)
  getter.join();
  ASSERT_TRUE(got.ok()) << got.reason();
  EXPECT_EQ(value, "here");
  EXPECT_LT(SecondsSince(start), 5.0);
  EXPECT_EQ(server.connections(), 2);
}

TEST_F(ConnectedTcpStore, GetTimesOutWithTheKeyInTheMessage) {
  std::string value = "untouched";
  const auto start = Clock::now();
  Status st = store->Get("never", &value, milliseconds(50));
  EXPECT_EQ(st.code(), StatusCode::kTimeout);
  EXPECT_NE(st.reason().find("rendezvous store key 'never' was not set within 50 ms"),
            std::string::npos)
      << st.reason();
  EXPECT_EQ(value, "untouched");
  EXPECT_GE(SecondsSince(start), 0.05);
  EXPECT_LT(SecondsSince(start), 5.0);
  // The connection stays usable after a TIMEOUT reply.
  EXPECT_TRUE(store->Set("never", "now").ok());
  EXPECT_TRUE(store->Get("never", &value, milliseconds(0)).ok());
  EXPECT_EQ(value, "now");
}

// Timeouts travel as ASCII milliseconds; a year or more means "no limit"
// (-1 on the wire), a negative one 0.
TEST_F(ConnectedTcpStore, GetTimeoutsOnTheWire) {
  ASSERT_TRUE(store->Set("k", "v").ok());
  std::string value;
  ASSERT_TRUE(store->Get("k", &value, milliseconds(1500)).ok());
  EXPECT_EQ(server.last_get_timeout(), "1500");
  ASSERT_TRUE(store->Get("k", &value, std::chrono::hours(24 * 366)).ok());
  EXPECT_EQ(server.last_get_timeout(), "-1");
  ASSERT_TRUE(store->Get("k", &value, milliseconds(-5)).ok());
  EXPECT_EQ(server.last_get_timeout(), "0");
  EXPECT_EQ(value, "v");
}

// A wrong secret, and a missing one (_HOROVOD_SECRET_KEY unset: the client
// sends an empty secret), are refused at once with the server's reason; the
// client does not retry until its timeout.
TEST(TcpStore, WrongOrMissingSecretIsRefusedAtOnce) {
  FakeStoreServer server("right");
  for (const std::string secret : {"wrong", ""}) {
    std::unique_ptr<Store> store;
    const auto start = Clock::now();
    Status st = ConnectTcpStore("127.0.0.1", server.port(), secret, milliseconds(10000), &store);
    EXPECT_EQ(st.code(), StatusCode::kAborted) << "secret '" << secret << "'";
    EXPECT_NE(st.reason().find("rendezvous store at 127.0.0.1:" + std::to_string(server.port()) +
                               " refused this process: wrong job secret (_HOROVOD_SECRET_KEY)"),
              std::string::npos)
        << st.reason();
    EXPECT_EQ(store, nullptr);
    EXPECT_LT(SecondsSince(start), 5.0);
  }
  EXPECT_EQ(server.refused(), 2);
  EXPECT_EQ(server.connections(), 2) << "one attempt per refusal, no retries";
}

TEST(TcpStore, UnreachableStoreTimesOutWithAClearMessage) {
  // A loopback port that nothing listens on: bound once, then released.
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), len), 0);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  close(fd);
  const int port = ntohs(addr.sin_port);
  std::unique_ptr<Store> store;
  const auto start = Clock::now();
  Status st = ConnectTcpStore("127.0.0.1", port, "s", milliseconds(300), &store);
  EXPECT_EQ(st.code(), StatusCode::kTimeout);
  EXPECT_NE(st.reason().find("could not reach the horovodrun rendezvous store at 127.0.0.1:" +
                             std::to_string(port)),
            std::string::npos)
      << st.reason();
  EXPECT_NE(st.reason().find("was this process started by horovodrun?"), std::string::npos);
  EXPECT_GE(SecondsSince(start), 0.1) << "retries for (about) the timeout";
  EXPECT_LT(SecondsSince(start), 3.0);
}

TEST(TcpStore, InvalidAddressNamesTheVariables) {
  std::unique_ptr<Store> store;
  for (int port : {0, -1, 70000}) {
    Status st = ConnectTcpStore("127.0.0.1", port, "s", milliseconds(100), &store);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(st.reason().find("HOROVOD_GLOO_RENDEZVOUS_ADDR/PORT"), std::string::npos);
  }
  EXPECT_EQ(ConnectTcpStore("", 1234, "s", milliseconds(100), &store).code(),
            StatusCode::kInvalidArgument);
}

TEST_F(ConnectedTcpStore, ServerErrorsAndLostConnectionsAreReported) {
  server.FailSetsWith("disk full");
  Status st = store->Set("k", "v");
  EXPECT_EQ(st.code(), StatusCode::kUnknown);
  EXPECT_NE(st.reason().find("rendezvous store rejected SET 'k': disk full"), std::string::npos)
      << st.reason();
  server.Stop();
  std::string value;
  st = store->Get("k", &value, milliseconds(1000));
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.reason().find("did horovodrun exit?"), std::string::npos) << st.reason();
}

}  // namespace
}  // namespace hvda
