// OfflineBound: an upper bound on the prefix-cache hit tokens that ANY cache policy with a given
// memory budget could have realized on one run's request timeline (admission, first-token and
// finish times as the run produced them). Why it is a bound (a relaxation of the real problem):
//  - a hit of request r on page j (the chained key of its first j+1 pages) needs that page resident
//    at r's admission a_r. If some other request holding the page is running then, it is free.
//    Otherwise the page was last held by a request that finished at f < a_r, and no request held
//    it in between, so the cache alone kept it resident over [f, a_r]: a cost of
//    page_bytes x (a_r - f) byte-seconds;
//  - at every time t, cache-held pages + the distinct pages of running requests whose prefill is
//    done + one live state per running request fit in the budget B (device + host tiers), so the
//    cache-held byte-seconds of any policy sum to at most C = integral of (B - running(t)) dt;
//  - any policy's measured hits are therefore a set of (request, page) items of total cost <= C.
//    Maximising hit tokens over ALL such sets, dropping the constraints a real cache also has
//    (pages of one hit form a prefix, a checkpoint must sit at its end, entries are whole pages of
//    the engine's size, warm-up requests compete for the same memory), is a fractional knapsack:
//    take items by increasing cost until C is spent. Its value >= what any policy realized.
// Theoretical (infinite-cache) hits are the items with a finite cost; the bound is never above them.
// Tokens are hashed in pages of page_tokens (the chained page key of core/hash.h). Deterministic.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

namespace ds {

class OfflineBound {
 public:
  // budget_bytes: device + host capacity; page_bytes: KV bytes of one page of page_tokens;
  // live_state_bytes: memory a running request holds besides its KV pages.
  OfflineBound(int64_t page_tokens, double budget_bytes, double page_bytes, double live_state_bytes);

  // Chained keys of the full pages of `tokens` (prompt_rule: only pages inside [0, n - 1), where
  // every cache here can hit).
  static std::vector<uint64_t> page_keys(std::span<const int32_t> tokens, int64_t page_tokens,
                                         bool prompt_rule);

  // Events, in non-decreasing time. `id` is any key unique among running requests; a second
  // admission of a running id (re-admission after preemption) is ignored.
  void admit(int64_t id, std::vector<uint64_t> prompt_keys, bool measured, double t_s);
  void prefill_done(int64_t id, double t_s);                             // first token
  void finish(int64_t id, std::span<const int32_t> tokens, double t_s);  // prompt + decoded

  // The bound at time `end_s` (capacity integrated up to then): hit tokens of measured requests.
  double bound_hit_tokens(double end_s) const;

 private:
  struct Page {
    int32_t holders = 0;           // running requests holding it (from admission)
    int32_t computed_holders = 0;  // running requests whose prefill is done
    double last_release_s = -1;    // last finish of a holder; < 0: never released
  };
  struct Running {
    std::vector<uint64_t> keys;  // prompt page keys registered at admission
    bool prefilled = false;
  };
  void advance(double t_s);

  int64_t page_tokens_;
  double budget_, page_bytes_, live_bytes_;
  std::unordered_map<uint64_t, Page> pages_;
  std::unordered_map<int64_t, Running> running_;
  int64_t distinct_computed_ = 0;  // pages with computed_holders > 0
  double t_ = 0, capacity_ = 0;    // byte-seconds free for the cache so far
  std::vector<double> gaps_;       // cost (seconds) of each measured reusable page; 0 = held live
};

}  // namespace ds
