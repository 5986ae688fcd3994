#include "replay/offline_bound.h"

#include <algorithm>

#include "core/check.h"
#include "core/hash.h"

namespace ds {

OfflineBound::OfflineBound(int64_t page_tokens, double budget_bytes, double page_bytes,
                           double live_state_bytes)
    : page_tokens_(page_tokens),
      budget_(budget_bytes),
      page_bytes_(page_bytes),
      live_bytes_(live_state_bytes) {
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

void OfflineBound::advance(double t_s) {
  if (t_s <= t_) return;
  const double used = double(distinct_computed_) * page_bytes_ + double(running_.size()) * live_bytes_;
  capacity_ += std::max(0.0, budget_ - used) * (t_s - t_);
  t_ = t_s;
}

void OfflineBound::admit(int64_t id, std::vector<uint64_t> prompt_keys, bool measured, double t_s) {
  advance(t_s);
  if (running_.count(id)) return;
  Running r;
  r.keys = std::move(prompt_keys);
  for (uint64_t k : r.keys) {
    auto it = pages_.find(k);
    if (it == pages_.end()) break;  // never computed: neither it nor any deeper page can hit
    if (measured)
      gaps_.push_back(it->second.holders > 0 ? 0.0 : std::max(0.0, t_s - it->second.last_release_s));
  }
  for (uint64_t k : r.keys) ++pages_[k].holders;
  running_.emplace(id, std::move(r));
}

void OfflineBound::prefill_done(int64_t id, double t_s) {
  advance(t_s);
  auto it = running_.find(id);
  if (it == running_.end() || it->second.prefilled) return;
  it->second.prefilled = true;
  for (uint64_t k : it->second.keys)
    if (pages_[k].computed_holders++ == 0) ++distinct_computed_;
}

void OfflineBound::finish(int64_t id, std::span<const int32_t> tokens, double t_s) {
  advance(t_s);
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
}

double OfflineBound::bound_hit_tokens(double end_s) const {
  double capacity = capacity_;
  if (end_s > t_) {
    const double used = double(distinct_computed_) * page_bytes_ + double(running_.size()) * live_bytes_;
    capacity += std::max(0.0, budget_ - used) * (end_s - t_);
  }
  std::vector<double> gaps = gaps_;
  std::sort(gaps.begin(), gaps.end());
  double pages = 0;
  for (double g : gaps) {
    const double cost = g * page_bytes_;
    if (cost <= capacity) {
      capacity -= cost;
      pages += 1;
    } else {
      pages += capacity / cost;
      break;
    }
  }
  return pages * double(page_tokens_);
}

}  // namespace ds
