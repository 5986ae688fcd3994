#include "cache/block_pool.h"

#include <limits>

#include "core/check.h"

namespace ds {

BlockPool::BlockPool(int64_t max_pages) : max_pages_(max_pages) {
  DS_CHECK(max_pages >= 0, "BlockPool: max_pages must be >= 0, got {}", max_pages);
  if (max_pages_ > std::numeric_limits<int32_t>::max()) max_pages_ = std::numeric_limits<int32_t>::max();
}

int32_t BlockPool::allocate() {
  int32_t page = -1;
  if (!free_.empty()) {
    page = free_.back();
    free_.pop_back();
  } else if (n_ids() < max_pages_) {
    page = static_cast<int32_t>(refcount_.size());
    refcount_.push_back(0);
  } else {
    return -1;
  }
  refcount_[page] = 1;
  ++n_used_;
  return page;
}

void BlockPool::ref(int32_t page) {
  DS_CHECK(page >= 0 && page < n_ids() && refcount_[page] > 0, "BlockPool::ref: page {} is not allocated",
           page);
  ++refcount_[page];
}

bool BlockPool::unref(int32_t page) {
  DS_CHECK(page >= 0 && page < n_ids() && refcount_[page] > 0, "BlockPool::unref: page {} is not allocated",
           page);
  if (--refcount_[page] > 0) return false;
  free_.push_back(page);
  --n_used_;
  return true;
}

int32_t BlockPool::refcount(int32_t page) const {
  DS_CHECK(page >= 0 && page < n_ids(), "BlockPool::refcount: page {} out of range [0, {})", page, n_ids());
  return refcount_[page];
}

void BlockPool::check_invariants() const {
  std::vector<uint8_t> on_free(refcount_.size(), 0);
  for (int32_t p : free_) {
    DS_CHECK(p >= 0 && p < n_ids(), "BlockPool: free-list entry {} out of range", p);
    DS_CHECK(!on_free[p], "BlockPool: page {} is on the free list twice", p);
    DS_CHECK(refcount_[p] == 0, "BlockPool: free page {} has refcount {}", p, refcount_[p]);
    on_free[p] = 1;
  }
  int64_t used = 0;
  for (size_t p = 0; p < refcount_.size(); ++p) {
    DS_CHECK(refcount_[p] >= 0, "BlockPool: page {} has negative refcount {}", p, refcount_[p]);
    if (refcount_[p] > 0)
      ++used;
    else
      DS_CHECK(on_free[p], "BlockPool: page {} has refcount 0 but is not on the free list", p);
  }
  DS_CHECK(used == n_used_, "BlockPool: {} pages referenced but n_used is {}", used, n_used_);
  DS_CHECK(n_used_ <= max_pages_, "BlockPool: {} pages used > max {}", n_used_, max_pages_);
}

}  // namespace ds
