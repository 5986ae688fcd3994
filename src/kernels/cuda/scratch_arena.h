// Internal to src/kernels/cuda: the scratch memory of a captured graph. While a ScratchArena is
// installed on a thread (ArenaScope), that thread's alloc_device / free_device are served from it
// instead of the stream-ordered pool, so that a recorded step's scratch adds no memory nodes to
// the graph: a programmatic dependent launch (pdl.cuh) keeps its overlap only where its kernel node
// follows the previous kernel node directly, and every allocation or free between two kernels
// would make that edge an ordinary one. Blocks are stacked in request order; a freed block's memory
// is reused once every block above it is free (the order the device work uses it in, since all of
// it runs on one stream). A request beyond the arena's size is served by the pool and counted, so
// that a second recording can size the arena from high_water().
#pragma once

#include <cstdint>
#include <vector>

namespace ds::cuda {

class ScratchArena {
 public:
  explicit ScratchArena(int64_t bytes);  // 0: no memory, every request goes to the pool (measuring)
  ~ScratchArena();
  ScratchArena(const ScratchArena&) = delete;
  ScratchArena& operator=(const ScratchArena&) = delete;

  void* alloc(int64_t bytes);
  bool release(void* p);  // false: p is not a live block of this arena
  int64_t capacity_bytes() const { return capacity_; }
  int64_t high_water_bytes() const { return high_water_; }  // the most the live blocks ever spanned
  int64_t pooled_requests() const { return pooled_; }       // requests that did not fit

  // Consistency of the block stack (offsets ascending and contiguous, pooled blocks past capacity).
  void check_invariants() const;

 private:
  struct Block {
    int64_t offset, bytes;
    void* ptr;
    bool free, pooled;
  };
  char* base_ = nullptr;
  int64_t capacity_ = 0, high_water_ = 0, pooled_ = 0;
  std::vector<Block> blocks_;
};

// The arena serving the calling thread's device allocations (nullptr: the pool).
ScratchArena* thread_arena();

// Installs an arena for the calling thread until destroyed (then the previous one again).
class ArenaScope {
 public:
  explicit ArenaScope(ScratchArena* a);
  ~ArenaScope();
  ArenaScope(const ArenaScope&) = delete;
  ArenaScope& operator=(const ArenaScope&) = delete;

 private:
  ScratchArena* prev_;
};

}  // namespace ds::cuda
