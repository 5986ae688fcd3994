// Drives a HybridCache with a random operation sequence decoded from bytes (shared by the property
// test and the fuzz target): config, then match / admit / reserve+commit / finish / abort ops, with
// check_invariants() after every op and hit-shape checks. Violations throw (std::logic_error for
// driver-found ones, ds::Error from the cache's own checks).
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "cache/hybrid_cache.h"

namespace ds::test {

class ByteSource {
 public:
  explicit ByteSource(std::span<const uint8_t> bytes) : bytes_(bytes) {}
  bool empty() const { return pos_ >= bytes_.size(); }
  uint8_t next() { return empty() ? 0 : bytes_[pos_++]; }
  int pick(int n) { return next() % n; }  // [0, n)

 private:
  std::span<const uint8_t> bytes_;
  size_t pos_ = 0;
};

inline CacheConfig driver_config(ByteSource& in) {
  static const char* kRetention[] = {"every-block", "interval", "semantic", "prompt-end", "none"};
  static const char* kEviction[] = {"leaf-lru",        "consumed-state-lru", "flop-per-byte:1",
                                    "flop-per-byte:0", "seglen:0.85",        "seglen:0"};
  CacheConfig c;
  c.page_tokens = 2 + in.pick(4);
  c.sizes.kv_bytes_per_token = 1 + in.pick(2);
  c.sizes.checkpoint_bytes = in.pick(4) * 4;
  c.sizes.live_state_bytes = in.pick(3) * 4;
  c.sizes.flops_per_token = in.pick(2) * 100.0;
  c.sizes.attn_flops_per_token_ctx = in.pick(2) * 1.0;
  c.tiers.push_back({"hbm", 24 + 8 * in.pick(40), 1e3, 1e3});
  if (in.pick(2)) c.tiers.push_back({"dram", 8 * in.pick(50), 1e2, 1e2});
  std::string r = kRetention[in.pick(5)];
  if (r == "interval") r += ":" + std::to_string(c.page_tokens * (1 + in.pick(4)));
  c.retention = r;
  c.eviction = kEviction[in.pick(6)];
  c.max_running = 1 + in.pick(8);
  return c;
}

class CacheOpDriver {
 public:
  explicit CacheOpDriver(const CacheConfig& c) : cache_(c), page_(c.page_tokens) {}

  HybridCache& cache() { return cache_; }

  void run(ByteSource& in, int max_ops) {
    for (int i = 0; i < max_ops && !in.empty(); ++i) {
      step(in);
      cache_.check_invariants();
    }
    while (!running_.empty()) {
      cache_.abort(running_.back().seq);
      running_.pop_back();
      cache_.check_invariants();
    }
    const CacheStats& s = cache_.stats();
    expect(cache_.n_running() == 0 && s.tiers[0].live_bytes == 0, "sequences or live states leaked");
    expect(s.hit_tokens <= s.kv_reachable_tokens && s.hit_tokens + s.miss_tokens == s.prompt_tokens,
           "token counters inconsistent");
  }

 private:
  struct Running {
    SeqId seq;
    std::vector<int32_t> tokens;
    int64_t computed;
  };

  static void expect(bool ok, const char* what) {
    if (!ok) throw std::logic_error(std::string("cache driver: ") + what);
  }

  // Prompts share structure: segments from a small alphabet, or a finished sequence + a new turn.
  std::vector<int32_t> prompt(ByteSource& in) {
    std::vector<int32_t> t;
    if (!history_.empty() && in.pick(3) == 0) t = history_[in.pick(static_cast<int>(history_.size()))];
    const int n_seg = 1 + in.pick(4);
    for (int s = 0; s < n_seg; ++s) {
      const int seg = in.pick(6), len = 1 + in.pick(3 * static_cast<int>(page_));
      for (int k = 0; k < len; ++k) t.push_back(seg * 1000 + k);
    }
    return t;
  }

  void check_hit(const CacheHit& h, size_t prompt_len) const {
    expect(h.n_hit_tokens >= 0 && h.n_hit_tokens <= h.n_kv_tokens, "hit > kv-reachable");
    expect(h.n_kv_tokens % page_ == 0 && h.n_hit_tokens % page_ == 0, "hit not page aligned");
    expect(prompt_len == 0 || h.n_kv_tokens < static_cast<int64_t>(prompt_len),
           "hit covers the whole prompt");
    expect(h.n_hit_device_tokens + h.n_hit_host_tokens == h.n_hit_tokens, "tier split does not add up");
    expect(h.n_lost_tokens == h.n_kv_tokens - h.n_hit_tokens, "lost tokens wrong");
  }

  void step(ByteSource& in) {
    const int op = in.pick(running_.empty() ? 2 : 6);
    if (op == 0) {
      const auto p = prompt(in);
      check_hit(cache_.match(p), p.size());
    } else if (op == 1) {
      const auto p = prompt(in);
      const CacheHit m = cache_.match(p);
      CacheHit refused;
      auto adm = cache_.admit(p, &refused);
      if (!adm) {  // the refused admission reports what a lookup now finds, whether room making evicted or
                   // not
        const CacheHit now = cache_.match(p);
        expect(refused.n_hit_tokens == now.n_hit_tokens && refused.n_kv_tokens == now.n_kv_tokens &&
                   refused.n_hit_host_tokens == now.n_hit_host_tokens &&
                   refused.checkpoint_on_host == now.checkpoint_on_host &&
                   refused.bytes_to_load == now.bytes_to_load,
               "refused admission's hit differs from match");
        return;
      }
      check_hit(adm->hit, p.size());
      expect(adm->hit.n_hit_tokens == m.n_hit_tokens, "admit hit differs from match");
      running_.push_back({adm->seq, p, adm->hit.n_hit_tokens});
    } else {
      const size_t idx = in.pick(static_cast<int>(running_.size()));
      Running& r = running_[idx];
      if (op == 2 || op == 3) {  // compute a chunk (growing into "decode" past the prompt)
        const int64_t n = r.computed + 1 + in.pick(3 * static_cast<int>(page_));
        while (static_cast<int64_t>(r.tokens.size()) < n) r.tokens.push_back(7000 + in.pick(4));
        if (!cache_.reserve(r.seq, n)) return preempt(idx);
        for (const PlannedCheckpoint& c : cache_.plan_checkpoints(r.seq, r.computed, n))
          expect(c.position > r.computed && c.position <= n && c.position % page_ == 0 && c.slot >= 0,
                 "planned checkpoint outside the computed range");
        (void)cache_.take_transfers();
        cache_.commit(r.seq, r.tokens, n);
        r.computed = n;
      } else if (op == 4) {
        cache_.finish(r.seq, r.tokens);
        history_.push_back(r.tokens);
        if (history_.size() > 8) history_.erase(history_.begin());
        running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(idx));
      } else {
        preempt(idx);
      }
    }
  }

  void preempt(size_t idx) {
    cache_.abort(running_[idx].seq);
    running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(idx));
  }

  HybridCache cache_;
  int64_t page_;
  std::vector<Running> running_;
  std::vector<std::vector<int32_t>> history_;
};

}  // namespace ds::test
