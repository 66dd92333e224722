// The POSIX shared-memory segment of one communicator: the ranks'
// rendezvous, their pids (liveness), and one Channel per ordered pair of
// ranks (the diagonal too: a rank's sends to itself).
//
// Layout, each part page-aligned:
//   SegmentHeader | RankSlot[n] | ChannelControl[n * n] | data[n * n][channel_bytes]
//
// Name and lifetime: the name is derived from the unique id's token. Rank 0
// creates it (exclusively), the other ranks open it (polling until it
// exists); each registers its pid and waits until all n arrived. Rank 0
// unlinks the name as soon as all arrived - every rank has it mapped by then
// - so no name outlives a rendezvous, not even after a crash; the memory
// goes with the last unmapping (~ShmSegment).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "channel.h"

namespace hvda_emu {

class ShmSegment {
 public:
  // The channel capacity for n ranks: HVDA_EMU_CHANNEL_BYTES if set (rounded
  // down to a power of two, at least 4 KiB), else 1 MiB, shrunk for large n
  // so that a rank's inbound channels stay within 4 MiB (at least 64 KiB).
  static size_t ChannelBytesFor(int nranks);

  // Attaches rank `rank` of `nranks` to the segment `name` (created by rank
  // 0 with ChannelBytesFor(nranks): rank 0's setting wins). Blocks until all
  // ranks attached. On failure returns null with *code (a CclResult:
  // kCclSystem on timeout or OS errors, kCclInvalidUsage on a rank clash or
  // an nranks mismatch) and *error (a sentence for the user).
  static std::unique_ptr<ShmSegment> Attach(const std::string& name, int nranks, int rank,
                                            double timeout_s, int* code, std::string* error);
  // A process-private segment for a 1-rank communicator: no name, no
  // rendezvous.
  static std::unique_ptr<ShmSegment> CreatePrivate();

  ~ShmSegment();  // unmaps
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;

  int nranks() const { return nranks_; }
  // The channel that carries bytes from src to dst.
  Channel Link(int src, int dst) const;
  // False once rank's process is gone (exited, killed, or a zombie).
  bool RankAlive(int rank) const;
  int RankPid(int rank) const;

 private:
  ShmSegment(char* base, size_t bytes, int nranks);

  char* base_;
  size_t bytes_;
  int nranks_;
};

}  // namespace hvda_emu
