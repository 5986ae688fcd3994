// PrefixTree structure: chained page keys, child counts, tier moves, removal rules.
#include <gtest/gtest.h>

#include "cache/prefix_tree.h"
#include "core/check.h"
#include "core/hash.h"

namespace ds {
namespace {

TEST(PageHash, EqualPagesEqualKeysAndChainDependsOnParent) {
  const int32_t a[4] = {1, 2, 3, 4}, b[4] = {1, 2, 3, 5};
  EXPECT_EQ(hash_page(a), hash_page(a));
  EXPECT_NE(hash_page(a), hash_page(b));
  const uint64_t k1 = chain_key(kRootPageKey, hash_page(a));
  EXPECT_NE(chain_key(k1, hash_page(a)), k1);  // same page, deeper prefix
  EXPECT_NE(chain_key(k1, hash_page(b)), chain_key(chain_key(kRootPageKey, hash_page(b)), hash_page(b)));
}

TEST(PrefixTree, AddFindRemoveKeepsCounts) {
  PrefixTree t;
  const int32_t a = t.add_child(PrefixTree::kRoot, 11, /*page=*/0, /*tier=*/0);
  const int32_t b = t.add_child(a, 22, 1, 0);
  const int32_t c = t.add_child(a, 33, 2, 1);
  ASSERT_GE(c, 0);
  EXPECT_EQ(t.find_child(PrefixTree::kRoot, 11), a);
  EXPECT_EQ(t.find_child(a, 22), b);
  EXPECT_EQ(t.find_child(b, 22), -1);  // key exists but under another parent
  EXPECT_EQ(t.at(a).n_children, 2);
  EXPECT_EQ(t.at(a).n_device_children, 1);
  EXPECT_EQ(t.at(b).depth, 2);
  EXPECT_EQ(t.add_child(a, 22, 3, 0), -1);  // duplicate key refused
  t.check_invariants();
  EXPECT_THROW(t.remove_leaf(a), Error);  // has children
  t.remove_leaf(b);
  t.set_kv_tier(a, 1);
  EXPECT_EQ(t.at(PrefixTree::kRoot).n_device_children, 0);
  EXPECT_EQ(t.n_nodes(), 3);
  t.check_invariants();
  EXPECT_THROW(t.add_child(a, 44, 4, 0), Error);  // device child under host parent
}

TEST(PrefixTree, LockedOrCheckpointedNodeIsNotRemovable) {
  PrefixTree t;
  const int32_t a = t.add_child(PrefixTree::kRoot, 1, 0, 0);
  t.at(a).lock_count = 1;
  EXPECT_THROW(t.remove_leaf(a), Error);
  t.at(a).lock_count = 0;
  t.at(a).ckpt_slot = 0;
  t.at(a).ckpt_tier = 0;
  EXPECT_THROW(t.remove_leaf(a), Error);
  t.at(a).ckpt_slot = -1;
  t.remove_leaf(a);
  EXPECT_EQ(t.find_child(PrefixTree::kRoot, 1), -1);
  t.check_invariants();
}

}  // namespace
}  // namespace ds

#include <random>
#include <unordered_map>

#include "cache/page_key_map.h"

namespace ds {
namespace {

TEST(PageKeyMap, MatchesAReferenceMapUnderRandomInsertErase) {
  PageKeyMap map;
  std::unordered_map<uint64_t, int32_t> ref;
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200000; ++i) {
    // Small key space with clustered low bits so probe runs collide and wrap.
    const uint64_t key = 1 + (rng() % 5000) * 1024 + (rng() % 3);
    if (rng() % 3 == 0) {
      map.erase(key);
      ref.erase(key);
    } else {
      const bool inserted = map.insert(key, i);
      EXPECT_EQ(inserted, ref.emplace(key, i).second);
    }
    if (i % 997 == 0) {
      for (const auto& [k, v] : ref) ASSERT_EQ(map.find(k), v);
    }
  }
  EXPECT_EQ(map.size(), static_cast<int64_t>(ref.size()));
  for (const auto& [k, v] : ref) EXPECT_EQ(map.find(k), v);
  EXPECT_EQ(map.find(999999999), -1);
}

}  // namespace
}  // namespace ds
