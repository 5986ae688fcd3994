// OfflineBound: an upper bound on the prefix-cache hit tokens that ANY cache policy with a given
// memory budget could have realized on one run's request timeline (admission, first-token and
// finish times as the run produced them: the bound is per run, for that schedule). Why it is a bound:
//  - a hit of request r on page j (the chained key of its first j+1 pages) needs that page resident
//    at r's admission a_r. If some request holding the page is running then, it is free. Otherwise
//    the page was last held by a request that finished at f < a_r, no request held it in between,
//    so the cache alone kept it resident over the whole interval [f, a_r] (once dropped, a page
//    comes back only by being recomputed by a request);
//  - at every time t, cache-held pages + the distinct pages of running requests whose prefill is
//    done (from admission when the scheduler reserves whole prompts) and the pages their decoded
//    tokens completed (from the step that sampled the token after the page: its last token's KV
//    exists then) + one live state per running request fit in the budget B (device + host tiers), so at
//    most c(t) = (B - running(t)) / page_bytes pages' worth of those intervals are resident at t;
//  - any policy's measured hits are therefore a set of intervals whose overlap at every t is at
//    most c(t). Maximising their number over ALL such sets (fractionally: x_i in [0, 1]), dropping
//    the constraints a real cache also has (pages of one hit form a prefix, a checkpoint must sit at
//    its end and costs bytes, entries are whole pages of the engine's size, warm-up requests compete
//    for the same memory, a running request's partial last page and, without whole-prompt
//    reservation, the pages of a prompt still being prefilled), is an
//    interval-packing LP with unit sizes. Belady's rule solves it exactly: sweep time, and whenever
//    the intervals in the cache exceed c(t) drop (fractionally) those whose reuse lies furthest
//    ahead; an exchange argument shows no other choice keeps more (the dropped interval's remaining
//    occupancy covers that of any interval kept instead). So its value >= what any policy realized.
//  Unlike a knapsack over byte-seconds, the capacity cannot be moved between times: idle memory
//  early in a run does not pay for holding pages later, which is what makes the bound tight under
//  overload.
// Theoretical (infinite-cache) hits are the intervals plus the free reuses; the bound is never above them.
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
  // live_state_bytes: memory a running request holds besides its KV pages; prompt_from_admission:
  // the scheduler reserves a request's whole prompt when it admits it (any policy then holds the
  // prompt's pages from admission, not only from its first token).
  OfflineBound(int64_t page_tokens, double budget_bytes, double page_bytes, double live_state_bytes,
               bool prompt_from_admission = false);

  // Chained keys of the full pages of `tokens` (prompt_rule: only pages inside [0, n - 1), where
  // every cache here can hit).
  static std::vector<uint64_t> page_keys(std::span<const int32_t> tokens, int64_t page_tokens,
                                         bool prompt_rule);

  // Events, in non-decreasing time. `id` is any key unique among running requests; a second
  // admission of a running id (re-admission after preemption) is ignored.
  // prompt_tail: the prompt's tokens past its last key's page (decoded tokens extend them).
  void admit(int64_t id, std::vector<uint64_t> prompt_keys, bool measured, double t_s,
             std::vector<int32_t> prompt_tail = {});
  void prefill_done(int64_t id, double t_s);  // first token
  // A token sampled for running request `id`: the previously sampled one has its KV now, and a page
  // it completes is held by the request from t_s on (its pages count as running, like the prompt's).
  void sampled(int64_t id, int32_t token, double t_s);
  void finish(int64_t id, std::span<const int32_t> tokens, double t_s);  // prompt + decoded

  // The bound for the admissions so far (up to `end_s`): hit tokens of measured requests. O(n log n)
  // in the measured reusable pages.
  double bound_hit_tokens(double end_s) const;

 private:
  struct Page {
    int32_t holders = 0;           // running requests holding it (from admission)
    int32_t computed_holders = 0;  // running requests whose prefill is done
    double last_release_s = -1;    // last finish of a holder; < 0: never released
  };
  struct Running {
    std::vector<uint64_t> keys;  // page keys it holds: the prompt's from admission, decoded ones after
    bool prefilled = false;
    std::vector<int32_t> tail;  // computed tokens past keys.back()'s page
    int32_t last_sampled = -1;  // sampled, KV not yet computed (-1: none)
  };

  struct Interval {
    double start_s = 0, end_s = 0;  // last release of the page .. the admission that reuses it
  };
  struct Step {
    double t_s = 0, pages = 0;  // from t_s on, room for this many cache-held pages
  };
  void note_capacity(double t_s);

  int64_t page_tokens_;
  double budget_, page_bytes_, live_bytes_;
  bool prompt_from_admission_ = false;
  std::unordered_map<uint64_t, Page> pages_;
  std::unordered_map<int64_t, Running> running_;
  int64_t distinct_computed_ = 0;    // pages with computed_holders > 0
  double t_ = 0;                     // time of the last event
  int64_t free_pages_ = 0;           // measured reuses of pages a running request held: always hits
  std::vector<Interval> intervals_;  // measured reuses that need the page held by the cache
  std::vector<Step> steps_;          // c(t), a step function in event order
};

}  // namespace ds
