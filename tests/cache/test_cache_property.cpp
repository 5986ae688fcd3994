// Property test: long random operation sequences over every retention x eviction policy and one
// or two tiers; check_invariants() after every operation (refcounts, ownership, budgets, locks,
// checkpoint positions), no leak once every sequence is released. Seeds are fixed.
#include <gtest/gtest.h>

#include <random>

#include "cache_op_driver.h"

namespace ds {
namespace {

TEST(CacheProperty, RandomOperationSequencesKeepInvariants) {
  int64_t evictions = 0, hits = 0, demotions = 0, ckpt_alone = 0, failed = 0, promoted = 0;
  for (uint32_t seed = 1; seed <= 300; ++seed) {
    std::mt19937 rng(seed);
    std::vector<uint8_t> bytes(6000);
    for (auto& b : bytes) b = static_cast<uint8_t>(rng());
    test::ByteSource in(bytes);
    const CacheConfig cfg = test::driver_config(in);
    test::CacheOpDriver driver(cfg);
    ASSERT_NO_THROW(driver.run(in, 1000)) << "seed " << seed << " retention " << cfg.retention << " eviction "
                                          << cfg.eviction << " tiers " << cfg.tiers.size();
    const CacheStats& s = driver.cache().stats();
    hits += s.hit_tokens;
    demotions += s.n_evictions(EvictReason::KvDemoted);
    ckpt_alone +=
        s.n_evictions(EvictReason::CheckpointDropped) + s.n_evictions(EvictReason::CheckpointDemoted);
    failed += s.failed_reserves + s.failed_admissions;
    promoted += s.pages_promoted;
    for (auto e : s.evictions) evictions += e;
  }
  // The generator must actually exercise hits, eviction and demotion.
  EXPECT_GT(hits, 0);
  EXPECT_GT(evictions, 0);
  EXPECT_GT(demotions, 0);
  EXPECT_GT(ckpt_alone, 0);
  EXPECT_GT(failed, 0);
  EXPECT_GT(promoted, 0);
}

}  // namespace
}  // namespace ds
