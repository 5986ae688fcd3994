// Helpers for the cache tests: small configs (page of 4 tokens, 1 byte per KV token) and a
// "run one request to completion" driver, so scenarios read as lists of requests.
#pragma once

#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "cache/hybrid_cache.h"

namespace ds::test {

inline CacheConfig small_config(const std::string& retention, const std::string& eviction,
                                int64_t device_bytes, int64_t host_bytes = -1, int64_t ckpt_bytes = 4,
                                int64_t live_bytes = 0) {
  CacheConfig c;
  c.page_tokens = 4;
  c.sizes.kv_bytes_per_token = 1;  // page = 4 bytes
  c.sizes.checkpoint_bytes = ckpt_bytes;
  c.sizes.live_state_bytes = live_bytes;
  c.tiers.push_back({"hbm", device_bytes, 1000.0, 1000.0});
  if (host_bytes >= 0) c.tiers.push_back({"dram", host_bytes, 100.0, 100.0});
  c.retention = retention;
  c.eviction = eviction;
  return c;
}

// Tokens first, first+1, ..., first+n-1.
inline std::vector<int32_t> iota_tokens(int32_t first, int n) {
  std::vector<int32_t> t(n);
  std::iota(t.begin(), t.end(), first);
  return t;
}

inline std::vector<int32_t> concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

inline std::vector<int32_t> prefix(const std::vector<int32_t>& a, size_t n) {
  return std::vector<int32_t>(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(n));
}

// Admits `prompt`, computes it in one chunk, decodes `output` in a second one (all tokens' KV
// computed), finishes; checkpoints are planned before each chunk as an engine would. Returns the
// admission hit. Checks invariants after every step.
inline CacheHit run_request(HybridCache& cache, const std::vector<int32_t>& prompt,
                            const std::vector<int32_t>& output = {}) {
  auto adm = cache.admit(prompt);
  if (!adm) throw std::runtime_error("run_request: admission failed");
  cache.check_invariants();
  const auto all = concat(prompt, output);
  if (!cache.reserve(adm->seq, static_cast<int64_t>(all.size())))
    throw std::runtime_error("run_request: reserve failed");
  cache.check_invariants();
  const auto n_prompt = static_cast<int64_t>(prompt.size()), n_all = static_cast<int64_t>(all.size());
  cache.plan_checkpoints(adm->seq, adm->hit.n_hit_tokens, n_prompt);
  cache.check_invariants();
  cache.commit(adm->seq, prompt, n_prompt);
  cache.check_invariants();
  cache.plan_checkpoints(adm->seq, n_prompt, n_all);
  cache.finish(adm->seq, all);
  cache.check_invariants();
  return adm->hit;
}

}  // namespace ds::test
