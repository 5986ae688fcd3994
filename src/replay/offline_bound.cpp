#include "replay/offline_bound.h"

#include <algorithm>
#include <limits>
#include <map>

#include "core/check.h"
#include "core/hash.h"

namespace ds {

OfflineBound::OfflineBound(int64_t page_tokens, double budget_bytes, double page_bytes,
                           double live_state_bytes, bool prompt_from_admission)
    : page_tokens_(page_tokens),
      budget_(budget_bytes),
      page_bytes_(page_bytes),
      live_bytes_(live_state_bytes),
      prompt_from_admission_(prompt_from_admission) {
  DS_CHECK(page_tokens > 0 && budget_bytes >= 0 && page_bytes > 0 && live_state_bytes >= 0,
           "offline bound: bad sizes (page {} tokens, budget {} B, page {} B, live {} B)", page_tokens,
           budget_bytes, page_bytes, live_state_bytes);
}

// Chained keys of the full pages of `tokens`; with the prompt rule only pages inside [0, n - 1)
// (at least one token is always computed, as every cache here requires).
std::vector<uint64_t> OfflineBound::page_keys(std::span<const int32_t> tokens, int64_t page_tokens,
                                              bool prompt_rule) {
  const int64_t n = int64_t(tokens.size()) - (prompt_rule && !tokens.empty() ? 1 : 0);
  const int64_t np = n / page_tokens;
  std::vector<uint64_t> keys(size_t(std::max<int64_t>(np, 0)));
  uint64_t k = kRootPageKey;
  for (int64_t i = 0; i < np; ++i) {
    k = chain_key(k, hash_page(tokens.subspan(size_t(i * page_tokens), size_t(page_tokens))));
    keys[size_t(i)] = k;
  }
  return keys;
}

// Records c(t) after an event changed the running set.
void OfflineBound::note_capacity(double t_s) {
  t_ = std::max(t_, t_s);
  const double used = double(distinct_computed_) * page_bytes_ + double(running_.size()) * live_bytes_;
  const double pages = std::max(0.0, budget_ - used) / page_bytes_;
  if (!steps_.empty() && steps_.back().t_s >= t_)
    steps_.back().pages = pages;
  else
    steps_.push_back({t_, pages});
}

void OfflineBound::admit(int64_t id, std::vector<uint64_t> prompt_keys, bool measured, double t_s,
                         std::vector<int32_t> prompt_tail) {
  if (running_.count(id)) return;
  Running r;
  r.keys = std::move(prompt_keys);
  r.tail = std::move(prompt_tail);
  for (uint64_t k : r.keys) {
    auto it = pages_.find(k);
    if (it == pages_.end()) break;  // never computed: neither it nor any deeper page can hit
    if (!measured) continue;
    if (it->second.holders > 0 || t_s <= it->second.last_release_s)
      ++free_pages_;
    else
      intervals_.push_back({it->second.last_release_s, t_s});
  }
  for (uint64_t k : r.keys) ++pages_[k].holders;
  running_.emplace(id, std::move(r));
  if (prompt_from_admission_) prefill_done(id, t_s);
  note_capacity(t_s);
}

void OfflineBound::prefill_done(int64_t id, double t_s) {
  auto it = running_.find(id);
  if (it == running_.end() || it->second.prefilled) return;
  it->second.prefilled = true;
  for (uint64_t k : it->second.keys)
    if (pages_[k].computed_holders++ == 0) ++distinct_computed_;
  note_capacity(t_s);
}

// Decoded pages: token i's KV exists once token i + 1 is sampled (the step that sampled it ran
// the model over token i). A completed page is held by the request until it finishes, so it is
// running memory no policy can give to the cache; a page another running request already holds
// (same key) is counted once.
void OfflineBound::sampled(int64_t id, int32_t token, double t_s) {
  auto it = running_.find(id);
  if (it == running_.end()) return;
  Running& r = it->second;
  if (r.last_sampled >= 0) r.tail.push_back(r.last_sampled);
  r.last_sampled = token;
  if (int64_t(r.tail.size()) < page_tokens_) return;
  const uint64_t parent = r.keys.empty() ? kRootPageKey : r.keys.back();
  const uint64_t k =
      chain_key(parent, hash_page(std::span<const int32_t>(r.tail).first(size_t(page_tokens_))));
  r.tail.erase(r.tail.begin(), r.tail.begin() + page_tokens_);
  r.keys.push_back(k);
  Page& p = pages_[k];
  ++p.holders;
  if (r.prefilled && p.computed_holders++ == 0) ++distinct_computed_;
  note_capacity(t_s);
}

void OfflineBound::finish(int64_t id, std::span<const int32_t> tokens, double t_s) {
  auto it = running_.find(id);
  if (it == running_.end()) return;
  for (uint64_t k : it->second.keys) {
    Page& p = pages_[k];
    --p.holders;
    if (it->second.prefilled && --p.computed_holders == 0) --distinct_computed_;
    p.last_release_s = t_s;
  }
  // Pages completed by decoding (and the prompt's last page) exist from now on too.
  for (uint64_t k : page_keys(tokens, page_tokens_, false)) {
    Page& p = pages_[k];
    if (p.holders == 0) p.last_release_s = t_s;
  }
  running_.erase(it);
  note_capacity(t_s);
}

// Belady over the intervals with capacity c(t): sweep the events in time order; an interval that
// ends while (partly) resident is a hit for the part kept; when the resident part exceeds c(t),
// the intervals whose end lies furthest ahead lose their share first. Ends come before capacity
// changes and starts at the same time.
double OfflineBound::bound_hit_tokens(double end_s) const {
  std::vector<Interval> iv = intervals_;
  std::sort(iv.begin(), iv.end(), [](const Interval& a, const Interval& b) { return a.start_s < b.start_s; });
  // Resident intervals: end time -> kept amount (fractions of a page); total kept <= c(t).
  std::multimap<double, double> kept;
  double total = 0, hits = 0, cap = budget_ / page_bytes_;
  size_t next_iv = 0, next_step = 0;
  auto enforce = [&] {
    while (total > cap + 1e-12 && !kept.empty()) {
      auto last = std::prev(kept.end());
      const double cut = std::min(last->second, total - cap);
      last->second -= cut;
      total -= cut;
      if (last->second <= 1e-12) kept.erase(last);
    }
    if (kept.empty()) total = 0;
  };
  constexpr double kInf = std::numeric_limits<double>::infinity();
  for (;;) {
    const double t_end = kept.empty() ? kInf : kept.begin()->first;
    const double t_start = next_iv < iv.size() ? iv[next_iv].start_s : kInf;
    const double t_step =
        next_step < steps_.size() && steps_[next_step].t_s <= end_s ? steps_[next_step].t_s : kInf;
    const double t = std::min({t_end, t_start, t_step});
    if (t == kInf) break;
    if (t_end == t) {
      hits += kept.begin()->second;
      total -= kept.begin()->second;
      kept.erase(kept.begin());
    } else if (t_step == t) {
      cap = steps_[next_step++].pages;
      enforce();
    } else {
      kept.emplace(iv[next_iv].end_s, 1.0);
      total += 1.0;
      ++next_iv;
      enforce();
    }
  }
  return (hits + double(free_pages_)) * double(page_tokens_);
}

}  // namespace ds
