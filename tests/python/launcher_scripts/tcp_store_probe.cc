// Command-line driver of the C++ TcpStore client, used by test_launcher.py
// (compiled there with g++ against csrc/common/store/tcp_store.cc and
// wire_protocol.cc alone).
//   tcp_store_probe HOST PORT SECRET CONNECT_MS set KEY VALUE
//   tcp_store_probe HOST PORT SECRET CONNECT_MS get KEY TIMEOUT_MS   (prints the value)
//   tcp_store_probe HOST PORT SECRET CONNECT_MS cross KEY            (one thread Gets KEY,
//       another Sets it 200 ms later through the same store; prints the value)
// Exit status: 0 on success, else the StatusCode; the reason goes to stderr.
#include <chrono>
#include <cstdio>
#include <future>
#include <iostream>
#include <string>
#include <thread>

#include "common/store/tcp_store.h"

using namespace hvda;
using std::chrono::milliseconds;

static int Fail(const Status& st) {
  std::cerr << "status " << static_cast<int>(st.code()) << ": " << st.reason() << std::endl;
  return static_cast<int>(st.code());
}

int main(int argc, char** argv) {
  if (argc < 7) {
    std::cerr << "usage: see the comment at the top of tcp_store_probe.cc" << std::endl;
    return 64;
  }
  std::unique_ptr<Store> store;
  Status st = ConnectTcpStore(argv[1], std::stoi(argv[2]), argv[3], milliseconds(std::stol(argv[4])),
                              &store);
  if (!st.ok()) return Fail(st);
  const std::string cmd = argv[5], key = argv[6];
  std::string value;
  if (cmd == "set" && argc == 8) {
    st = store->Set(key, argv[7]);
  } else if (cmd == "get" && argc == 8) {
    st = store->Get(key, &value, milliseconds(std::stol(argv[7])));
  } else if (cmd == "cross") {
    auto getter = std::async(std::launch::async, [&] {
      return store->Get(key, &value, milliseconds(10000));
    });
    std::this_thread::sleep_for(milliseconds(200));
    Status set_st = store->Set(key, "from-other-thread");
    if (!set_st.ok()) return Fail(set_st);
    st = getter.get();
  } else {
    std::cerr << "unknown command " << cmd << std::endl;
    return 64;
  }
  if (!st.ok()) return Fail(st);
  if (!value.empty()) std::cout << value << std::endl;
  return 0;
}
