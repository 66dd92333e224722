// The exchange one communicator runs for one stream operation: per peer an
// ordered list of byte ranges to send and to receive, and reductions fed by
// receives. collectives.cc appends each call's part; the engine then calls
// Progress() until Done(). Everything runs on the stream's worker thread;
// all addresses are shadow (runtime-side) addresses.
//
// Matching: the bytes a rank sends to a peer are received by that peer in
// the same order (channels are FIFO), so every rank must append its calls'
// parts in the same order - the collective libraries' own rule.
//
// Deadlock freedom: every queue progresses independently, as far as its
// channel allows; a reduction consumes a piece only when every peer's piece
// is there, and channels hold at least two pieces; a send gated on a
// reduction (allreduce's second half) only waits for data whose inputs the
// peers send ungated.
#pragma once

#include <cstddef>
#include <deque>
#include <memory>
#include <vector>

#include "channel.h"
#include "reduce.h"

namespace hvda_emu {

// A rank's view of its communicator's channels.
struct Links {
  int rank = 0;
  int nranks = 1;
  std::vector<Channel> to;    // to[p]: this rank -> p
  std::vector<Channel> from;  // from[p]: p -> this rank
};

class Plan {
 public:
  explicit Plan(Links links);
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;

  int rank() const { return links_.rank; }
  int nranks() const { return links_.nranks; }

  // Sends bytes from src to peer. With `ready`, only the first *ready bytes
  // of src may be sent yet (*ready grows as a reduction of this plan runs).
  void Send(int peer, const char* src, size_t bytes, const size_t* ready = nullptr);
  // Receives bytes from peer into dst.
  void Recv(int peer, char* dst, size_t bytes);
  // dst[i] = the reduction, in rank order, of every rank's contribution i:
  // this rank's is local[i], each peer's arrives on its channel (the peer
  // Sends it). dst may equal local. Returns the count of bytes of dst done
  // (for gated sends; valid as long as the plan), or null when count is 0.
  const size_t* Reduce(const char* local, char* dst, size_t count, const Reduction& red);
  // Memory that lives as long as the plan (snapshots of inputs).
  char* Scratch(size_t bytes);

  // One pass over every queue; true when any byte moved.
  bool Progress();
  bool Done() const;

 private:
  struct ReduceTask {
    const char* local;
    char* dst;
    size_t bytes;
    Reduction red;
    size_t done = 0;
  };
  struct SendSeg {
    const char* src;
    size_t bytes;
    const size_t* ready;
    size_t done;
  };
  struct RecvSeg {
    char* dst;          // null for a reduction's bytes
    size_t bytes;
    ReduceTask* task;   // non-null: these bytes feed that reduction
    size_t done;
  };

  bool PumpSends(int peer);
  bool PumpRecvs(int peer);
  bool StepReduce(ReduceTask& t);

  Links links_;  // a copy: channels are views
  size_t piece_bytes_;  // a reduction's step; at most half a channel
  std::vector<std::deque<SendSeg>> sends_;
  std::vector<std::deque<RecvSeg>> recvs_;
  std::deque<ReduceTask> tasks_;  // a deque: addresses stay valid as it grows
  std::vector<std::unique_ptr<char[]>> scratch_;
  std::vector<char> acc_, peek_;
};

}  // namespace hvda_emu
