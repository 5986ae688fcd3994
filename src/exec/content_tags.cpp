#include "exec/content_tags.h"

#include "core/check.h"
#include "core/hash.h"

namespace ds {

uint64_t ContentTags::mix(uint64_t hash, int32_t token) {
  return splitmix64(hash ^ (static_cast<uint64_t>(static_cast<uint32_t>(token)) + 0x51ed27ull));
}

std::vector<int32_t>& ContentTags::page(int tier, int32_t id, int64_t page_tokens) {
  DS_CHECK(id >= 0 && (tier == 0 || tier == 1), "content tags: page {} in tier {}", id, tier);
  auto& v = pages_[tier][id];
  if (v.empty()) v.assign(static_cast<size_t>(page_tokens), -1);
  return v;
}

ContentTags::State& ContentTags::slot(std::unordered_map<int32_t, State>& m, int32_t id, const char* what) {
  DS_CHECK(id >= 0, "content tags: {} slot {}", what, id);
  return m[id];
}

const ContentTags::State& ContentTags::live(int32_t slot) const {
  static const State kNone;
  auto it = live_.find(slot);
  return it == live_.end() ? kNone : it->second;
}

void ContentTags::apply(const CacheTransfer& t) {
  switch (t.kind) {
    case TransferKind::Page: {
      auto it = pages_[t.src_tier].find(t.src);
      if (it == pages_[t.src_tier].end())
        pages_[t.dst_tier].erase(t.dst);
      else
        pages_[t.dst_tier][t.dst] = it->second;
      break;
    }
    case TransferKind::Checkpoint:
      slot(ckpts_[t.dst_tier], t.dst, "checkpoint") = slot(ckpts_[t.src_tier], t.src, "checkpoint");
      break;
    case TransferKind::Restore:
      slot(live_, t.dst, "live") = slot(ckpts_[t.src_tier], t.src, "checkpoint");
      break;
  }
}

void ContentTags::step(const ScheduledSeq& s, int64_t P) {
  State& st = slot(live_, s.live_slot, "live");
  if (s.begin == 0) st = State{0, 0};
  DS_CHECK(st.n_tokens == s.begin,
           "content tags: request {}: live slot {} holds {} tokens, step begins at {}", s.request_id,
           s.live_slot, st.n_tokens, s.begin);
  DS_CHECK(static_cast<int64_t>(s.pages.size()) * P >= s.end,
           "content tags: request {}: {} pages for {} tokens", s.request_id, s.pages.size(), s.end);
  uint64_t h = 0;  // the prefix as the pages hold it must be the prefix the live state consumed
  for (int64_t p = 0; p < s.begin; ++p) h = mix(h, page(0, s.pages[p / P], P)[p % P]);
  DS_CHECK(h == st.hash, "content tags: request {}: its pages disagree with its live state at {} tokens",
           s.request_id, s.begin);
  size_t c = 0;
  for (int64_t p = s.begin; p < s.end; ++p) {
    const int32_t tok = s.tokens[p - s.begin];
    page(0, s.pages[p / P], P)[p % P] = tok;
    st.hash = mix(st.hash, tok);
    st.n_tokens = p + 1;
    for (; c < s.checkpoints.size() && s.checkpoints[c].position == p + 1; ++c)
      slot(ckpts_[0], s.checkpoints[c].slot, "checkpoint") = st;
  }
  DS_CHECK(c == s.checkpoints.size(), "content tags: request {}: checkpoint positions outside ({}, {}]",
           s.request_id, s.begin, s.end);
}

}  // namespace ds
