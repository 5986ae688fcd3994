#include "cache/eviction_queue.h"

#include <algorithm>

namespace ds {

void EvictionQueue::push(const EvictionEntry& e) {
  heap_.push_back(e);
  std::push_heap(heap_.begin(), heap_.end(), std::greater<EvictionEntry>());
}

void EvictionQueue::pop() {
  std::pop_heap(heap_.begin(), heap_.end(), std::greater<EvictionEntry>());
  heap_.pop_back();
}

void EvictionQueue::compact(const std::function<bool(const EvictionEntry&)>& valid) {
  std::erase_if(heap_, [&](const EvictionEntry& e) { return !valid(e); });
  std::make_heap(heap_.begin(), heap_.end(), std::greater<EvictionEntry>());
}

}  // namespace ds
