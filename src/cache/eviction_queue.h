// EvictionQueue: min-heap of eviction candidates (score, node, version) with lazy deletion: an
// entry is stale when the node's version moved on since it was pushed; the owner discards stale
// tops and compacts when stale entries dominate. push/pop O(log n).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace ds {

struct EvictionEntry {
  double score = 0;
  int32_t node = -1;
  uint32_t version = 0;
  bool operator>(const EvictionEntry& o) const {
    return score != o.score ? score > o.score : node > o.node;  // ties: lower node id first
  }
};

class EvictionQueue {
 public:
  void push(const EvictionEntry& e);
  bool empty() const { return heap_.empty(); }
  const EvictionEntry& top() const { return heap_.front(); }
  void pop();
  int64_t size() const { return static_cast<int64_t>(heap_.size()); }
  // Keeps only entries for which valid(entry) holds; O(n).
  void compact(const std::function<bool(const EvictionEntry&)>& valid);

 private:
  std::vector<EvictionEntry> heap_;
};

}  // namespace ds
