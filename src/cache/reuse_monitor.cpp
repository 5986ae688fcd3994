#include "cache/reuse_monitor.h"

#include <algorithm>

namespace ds {

void ReuseMonitor::add_ghost(uint64_t key, uint32_t last_use) {
  if (static_cast<int64_t>(ghost_fifo_.size()) < kGhosts) {
    ghost_fifo_.push_back(key);
  } else {  // forget the oldest ghost (unless the key was re-added since: keep the newer entry)
    uint64_t& slot = ghost_fifo_[static_cast<size_t>(ghost_next_)];
    auto it = ghosts_.find(slot);
    if (it != ghosts_.end() && slot != key) ghosts_.erase(it);
    slot = key;
    ghost_next_ = (ghost_next_ + 1) % kGhosts;
  }
  ghosts_[key] = last_use;
}

std::optional<uint32_t> ReuseMonitor::take_ghost(uint64_t key) {
  auto it = ghosts_.find(key);
  if (it == ghosts_.end()) return std::nullopt;
  const uint32_t t = it->second;
  ghosts_.erase(it);
  ++n_ghost_hits_;
  return t;
}

void ReuseMonitor::add_distance(uint32_t distance) {
  recent_[static_cast<size_t>(n_distances_ % kWindow)] = distance;
  ++n_distances_;
  if (n_distances_ < kWindow / 8 || n_distances_ % (kWindow / 8) != 0) return;
  const size_t n = static_cast<size_t>(std::min<int64_t>(n_distances_, kWindow));
  std::array<uint32_t, kWindow> v = recent_;
  const size_t k = n * 9 / 10;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k),
                   v.begin() + static_cast<std::ptrdiff_t>(n));
  horizon_ = v[k] + v[k] / 2;
}

int64_t ReuseMonitor::memory_bytes() const {
  return static_cast<int64_t>(ghosts_.size() * (sizeof(uint64_t) + sizeof(uint32_t) + 2 * sizeof(void*)) +
                              ghost_fifo_.capacity() * sizeof(uint64_t) + sizeof(recent_));
}

}  // namespace ds
