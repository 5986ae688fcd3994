#include "cache/state_pool.h"

#include <limits>

#include "core/check.h"

namespace ds {

StatePool::StatePool(int64_t max_live, int64_t max_checkpoints) {
  DS_CHECK(max_live >= 0 && max_checkpoints >= 0, "StatePool: negative slot count (live {}, checkpoints {})",
           max_live, max_checkpoints);
  const int64_t cap = std::numeric_limits<int32_t>::max();
  live_.max = max_live < cap ? max_live : cap;
  ckpt_.max = max_checkpoints < cap ? max_checkpoints : cap;
}

int32_t StatePool::Slots::allocate() {
  int32_t s = -1;
  if (!free.empty()) {
    s = free.back();
    free.pop_back();
  } else if (static_cast<int64_t>(used.size()) < max) {
    s = static_cast<int32_t>(used.size());
    used.push_back(0);
  } else {
    return -1;
  }
  used[s] = 1;
  ++n_used;
  return s;
}

void StatePool::Slots::release(int32_t slot, const char* kind) {
  DS_CHECK(slot >= 0 && slot < static_cast<int32_t>(used.size()) && used[slot],
           "StatePool: {} slot {} is not in use", kind, slot);
  used[slot] = 0;
  free.push_back(slot);
  --n_used;
}

void StatePool::Slots::check(const char* kind) const {
  std::vector<uint8_t> seen(used.size(), 0);
  for (int32_t s : free) {
    DS_CHECK(s >= 0 && s < static_cast<int32_t>(used.size()), "StatePool: {} free entry {} out of range",
             kind, s);
    DS_CHECK(!seen[s] && !used[s], "StatePool: {} slot {} free twice or free while used", kind, s);
    seen[s] = 1;
  }
  int64_t n = 0;
  for (size_t s = 0; s < used.size(); ++s) {
    if (used[s])
      ++n;
    else
      DS_CHECK(seen[s], "StatePool: {} slot {} neither used nor free", kind, s);
  }
  DS_CHECK(n == n_used && n_used <= max, "StatePool: {} slots used {} (counter {}, max {})", kind, n, n_used,
           max);
}

int32_t StatePool::allocate_live() {
  return live_.allocate();
}
void StatePool::free_live(int32_t slot) {
  live_.release(slot, "live");
}
int32_t StatePool::allocate_checkpoint() {
  return ckpt_.allocate();
}
void StatePool::free_checkpoint(int32_t slot) {
  ckpt_.release(slot, "checkpoint");
}

bool StatePool::live_in_use(int32_t slot) const {
  return slot >= 0 && slot < static_cast<int32_t>(live_.used.size()) && live_.used[slot];
}
bool StatePool::checkpoint_in_use(int32_t slot) const {
  return slot >= 0 && slot < static_cast<int32_t>(ckpt_.used.size()) && ckpt_.used[slot];
}

void StatePool::check_invariants() const {
  live_.check("live");
  ckpt_.check("checkpoint");
}

}  // namespace ds
