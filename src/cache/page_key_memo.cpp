#include "cache/page_key_memo.h"

#include <algorithm>

namespace ds {

PageKeyMemo::PageKeyMemo(size_t entries) : capacity_(std::max<size_t>(entries, 1)) {
  entries_.reserve(capacity_);
}

std::vector<uint64_t>& PageKeyMemo::keys(std::span<const int32_t> prompt) {
  ++clock_;
  for (Entry& e : entries_)
    if (e.tokens.size() == prompt.size() && std::equal(prompt.begin(), prompt.end(), e.tokens.begin())) {
      e.last_use = clock_;
      return e.keys;
    }
  Entry* slot =
      entries_.size() < capacity_
          ? &entries_.emplace_back()
          : &*std::min_element(entries_.begin(), entries_.end(),
                               [](const Entry& a, const Entry& b) { return a.last_use < b.last_use; });
  slot->tokens.assign(prompt.begin(), prompt.end());
  slot->keys.clear();
  slot->last_use = clock_;
  return slot->keys;
}

}  // namespace ds
