// GenerationEnd: whether this rank's job generation has begun to end, and
// whether this rank's program has been told so (NOTE [Told of the end]).
//
// One per generation: made with the Generation, shared (std::shared_ptr) by
// it and every Work of that generation, so a Work that outlives its
// generation only ever speaks of its own. Thread-safe and lock-free: the
// thread that ends the generation calls Begin; whichever thread delivers a
// Work's failure calls NoteTold.
#pragma once

#include <atomic>

namespace hvda {

// NOTE [Told of the end]: a generation ends asynchronously for a rank (a
// peer's shutdown() or failure, a deadlock: the news travels in a cycle), so
// "has it ended?" depends on when a rank asks. What a rank's program has been
// told does not: an operation of it failed, after the end began, and that
// failure reached the program (synchronize raised, a framework's completion
// callback got it). init() on a rank that is still initialized starts the
// next generation only once the rank was told; before, it is a no-op (as
// upstream's), and the program's next operation tells it. So the outcome of
// init() never depends on how fast the news travelled.
class GenerationEnd {
 public:
  // The generation has begun to end (a failure, a peer's shutdown, a
  // declared deadlock): failures completed from now on are news of it.
  void Begin() { began_.store(true, std::memory_order_release); }
  bool began() const { return began_.load(std::memory_order_acquire); }
  // A failure completed after Begin reached the program.
  void NoteTold() { told_.store(true, std::memory_order_release); }
  bool told() const { return told_.load(std::memory_order_acquire); }

 private:
  std::atomic<bool> began_{false};
  std::atomic<bool> told_{false};
};

}  // namespace hvda
