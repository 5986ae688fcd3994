// PageKeyMap: open-addressing hash map from a chained page key (already a uniform 64-bit hash) to
// a tree node id; linear probing, power-of-two capacity, load <= 1/2, backward-shift deletion, so
// find/insert/erase touch one or two cache lines. Key 0 is reserved for empty slots (chain_key
// never returns 0). Owns: every stored key is reachable from its home slot without gaps.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ds {

class PageKeyMap {
 public:
  PageKeyMap() { slots_.resize(1024); }

  int32_t find(uint64_t key) const {
    for (size_t i = key & mask();; i = (i + 1) & mask()) {
      if (slots_[i].key == key) return slots_[i].node;
      if (slots_[i].key == 0) return -1;
    }
  }
  // Hint: the slot of `key` will be probed soon (hides the cache miss of a long walk).
  void prefetch(uint64_t key) const { __builtin_prefetch(&slots_[key & mask()]); }
  // false when the key is already present (the map is unchanged).
  bool insert(uint64_t key, int32_t node) {
    if (2 * (size_ + 1) > slots_.size()) grow();
    for (size_t i = key & mask();; i = (i + 1) & mask()) {
      if (slots_[i].key == key) return false;
      if (slots_[i].key == 0) {
        slots_[i] = {key, node};
        ++size_;
        return true;
      }
    }
  }
  void erase(uint64_t key) {
    size_t i = key & mask();
    while (slots_[i].key != key) {
      if (slots_[i].key == 0) return;
      i = (i + 1) & mask();
    }
    // Backward shift: move later entries of the probe run into the hole when their home allows.
    for (size_t j = (i + 1) & mask(); slots_[j].key != 0; j = (j + 1) & mask()) {
      const size_t home = slots_[j].key & mask();
      const bool movable = ((j - home) & mask()) >= ((j - i) & mask());
      if (movable) {
        slots_[i] = slots_[j];
        i = j;
      }
    }
    slots_[i] = {};
    --size_;
  }
  int64_t size() const { return static_cast<int64_t>(size_); }
  int64_t memory_bytes() const { return static_cast<int64_t>(slots_.capacity() * sizeof(Slot)); }

 private:
  struct Slot {
    uint64_t key = 0;
    int32_t node = -1;
  };
  size_t mask() const { return slots_.size() - 1; }
  void grow() {
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.resize(old.size() * 2);
    size_ = 0;
    for (const Slot& s : old)
      if (s.key != 0) insert(s.key, s.node);
  }
  std::vector<Slot> slots_;
  size_t size_ = 0;
};

}  // namespace ds
