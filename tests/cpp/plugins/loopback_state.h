// The loopback test plugin's state (tests/cpp/plugins/loopback_plugin.cc, the
// only file that includes this): per-thread error messages, the counters the
// tests read, streams as worker threads, events as stream positions, and the
// process-local rendezvous of in-process ranks.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>
#include <atomic>

#include "horovod_accel/plugin.h"

namespace loopback {


inline thread_local std::string last_message;

inline hvda_status Fail(hvda_status s, const std::string& m) {
  last_message = m;
  return s;
}

// What the tests check (hvda_loopback_stats).
struct Stats {
  std::mutex mu;
  std::map<std::string, int> live_ids;  // made, not yet released
  uint64_t ids_made = 0, ids_released = 0, bad_releases = 0, self_peers = 0;
  double last_op_timeout = -1;
  // While set, barrier waits ignore their timeout and comm_abort: a library
  // that breaks plugin.h's "timeouts" contract (the bounded-teardown test).
  std::atomic<bool> hang{false};
};

inline Stats& Counters() {
  static Stats s;  // process-local by design, like the rendezvous registry
  return s;
}

// ---------------------------------------------------------------- streams

struct Stream {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::function<hvda_status()>> queue;
  uint64_t enqueued = 0, done = 0;
  hvda_status error = HVDA_OK;
  std::string error_message;
  bool stop = false;
  std::thread worker;

  Stream() : worker([this] { Run(); }) {}
  ~Stream() {
    {
      std::lock_guard<std::mutex> l(mu);
      stop = true;
    }
    cv.notify_all();
    worker.join();
  }
  void Enqueue(std::function<hvda_status()> fn) {
    std::lock_guard<std::mutex> l(mu);
    queue.push_back(std::move(fn));
    ++enqueued;
    cv.notify_all();
  }
  void Run() {
    std::unique_lock<std::mutex> l(mu);
    for (;;) {
      cv.wait(l, [&] { return stop || !queue.empty(); });
      if (queue.empty()) return;
      auto fn = std::move(queue.front());
      queue.pop_front();
      l.unlock();
      hvda_status s = fn();
      std::string m = s == HVDA_OK ? "" : last_message;
      l.lock();
      if (s != HVDA_OK && error == HVDA_OK) {
        error = s;
        error_message = m;
      }
      ++done;
      cv.notify_all();
    }
  }
  hvda_status WaitFor(uint64_t seq) {
    std::unique_lock<std::mutex> l(mu);
    cv.wait(l, [&] { return done >= seq || error != HVDA_OK; });
    return error == HVDA_OK ? HVDA_OK : Fail(error, error_message);
  }
};

struct Event {
  Stream* stream = nullptr;
  uint64_t seq = 0;
};

inline Stream* S(hvda_stream_t s) { return reinterpret_cast<Stream*>(s); }
inline Event* E(hvda_event_t e) { return reinterpret_cast<Event*>(e); }

// ---------------------------------------------------------------- rendezvous

// The ranks of one communicator. A collective is a round: every rank posts
// its arguments, waits for all, computes its own output from the peers'
// posts, then waits for all again before inputs may change.
struct Group {
  explicit Group(int n) : size(n), posts(n) {}
  struct Post {
    const void* send = nullptr;
    void* recv = nullptr;
    std::vector<size_t> counts, displs;
  };
  const int size;
  std::mutex mu;
  std::condition_variable cv;
  int joined = 0;
  uint64_t arrivals = 0;  // total arrivals at barriers
  bool aborted = false;
  std::vector<Post> posts;
  // Point-to-point messages in flight, by (from, to), in send order.
  std::map<std::pair<int, int>, std::deque<std::vector<char>>> mail;

  // Blocks until every rank reached this barrier (or timeout / abort).
  hvda_status Barrier(double timeout_s) {
    std::unique_lock<std::mutex> l(mu);
    const uint64_t target = (arrivals / size + 1) * size;
    ++arrivals;
    cv.notify_all();
    while (Counters().hang.load() && arrivals < target)
      cv.wait_for(l, std::chrono::milliseconds(10));
    bool ok = cv.wait_for(l, std::chrono::duration<double>(timeout_s),
                          [&] { return arrivals >= target || aborted; });
    if (aborted) return Fail(HVDA_REMOTE_ERROR, "loopback plugin: communicator aborted");
    return ok ? HVDA_OK : Fail(HVDA_TIMEOUT, "loopback plugin: a peer did not arrive");
  }
};

struct Registry {
  std::mutex mu;
  std::map<std::string, std::shared_ptr<Group>> groups;
  std::atomic<uint64_t> next_id{1};
};

inline Registry& Groups() {
  static Registry r;  // process-local by design: the ranks are threads
  return r;
}

struct Comm {
  std::shared_ptr<Group> group;
  int rank;
  double timeout;  // bounds every wait: the op timeout where the core gave one
};

inline Comm* CM(hvda_comm_t c) { return reinterpret_cast<Comm*>(c); }

// Runs body(group posts) on stream s as one round.
inline hvda_status Round(Comm* c, hvda_stream_t s, Group::Post mine,
                  std::function<hvda_status(const std::vector<Group::Post>&)> body) {
  S(s)->Enqueue([c, mine, body] {
    Group& g = *c->group;
    {
      std::lock_guard<std::mutex> l(g.mu);
      g.posts[c->rank] = mine;
    }
    hvda_status st = g.Barrier(c->timeout);
    if (st != HVDA_OK) return st;
    std::vector<Group::Post> posts;
    {
      std::lock_guard<std::mutex> l(g.mu);
      posts = g.posts;
    }
    st = body(posts);
    hvda_status st2 = g.Barrier(c->timeout);
    return st != HVDA_OK ? st : st2;
  });
  return HVDA_OK;
}

}  // namespace loopback
