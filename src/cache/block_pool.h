// BlockPool: page ids of one memory tier with reference counts and a LIFO free list; allocate and
// free are O(1). Owns: refcount(page) == 0 <=> page is on the free list (exactly once). Ids grow
// lazily up to max_pages, so a huge byte budget costs nothing until used. Bookkeeping only: the
// executor owns the page buffers ([n_pages, page_tokens, kv_bytes_per_token]).
#pragma once

#include <cstdint>
#include <vector>

namespace ds {

class BlockPool {
 public:
  explicit BlockPool(int64_t max_pages);

  int32_t allocate();        // new page with refcount 1; -1 when all max_pages are in use
  void ref(int32_t page);    // one more owner
  bool unref(int32_t page);  // one owner fewer; true (and back on the free list) at zero
  int32_t refcount(int32_t page) const;

  int64_t n_used() const { return n_used_; }
  int64_t max_pages() const { return max_pages_; }
  int64_t n_ids() const { return static_cast<int64_t>(refcount_.size()); }  // ids ever handed out

  void check_invariants() const;  // free list <=> refcount 0, no duplicates, n_used matches

 private:
  int64_t max_pages_ = 0;
  int64_t n_used_ = 0;
  std::vector<int32_t> refcount_;  // [n_ids]
  std::vector<int32_t> free_;      // page ids with refcount 0
};

}  // namespace ds
