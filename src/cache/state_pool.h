// StatePool: KDA state slots of one memory tier — live slots (one per running sequence, updated in
// place by the forward pass) and checkpoint slots (immutable copies of all KDA layers' states at
// one page boundary; restored by copying into a live slot, never mutated: copy-on-write).
// Owns: each slot is either free (on its free list exactly once) or held by exactly one owner.
#pragma once

#include <cstdint>
#include <vector>

namespace ds {

class StatePool {
 public:
  StatePool(int64_t max_live, int64_t max_checkpoints);

  int32_t allocate_live();  // -1 when max_live slots are in use
  void free_live(int32_t slot);
  int32_t allocate_checkpoint();  // -1 when max_checkpoints slots are in use
  void free_checkpoint(int32_t slot);

  int64_t n_live() const { return live_.n_used; }
  int64_t n_checkpoints() const { return ckpt_.n_used; }
  bool live_in_use(int32_t slot) const;
  bool checkpoint_in_use(int32_t slot) const;

  void check_invariants() const;

 private:
  struct Slots {
    int64_t max = 0;
    int64_t n_used = 0;
    std::vector<uint8_t> used;  // [n_ids]
    std::vector<int32_t> free;
    int32_t allocate();
    void release(int32_t slot, const char* kind);
    void check(const char* kind) const;
  };
  Slots live_;
  Slots ckpt_;
};

}  // namespace ds
