// Theoretical hit rate: checked against an independent count over the raw JSON of the bundled
// sample (nlohmann DOM + a per-session trie of (parent node, local hash id) edges), and on small
// hand-made traces.
#include <gtest/gtest.h>

#include <chrono>
#include <ctime>
#include <map>
#include <nlohmann/json.hpp>

#include "trace/trace_files.h"
#include "trace/trace_stats.h"
#include "trace_test_util.h"

namespace ds {
namespace {

// Flattens requests depth-first (sub-agent requests where the sub-agent appears).
void flatten(const nlohmann::json& reqs, std::vector<const nlohmann::json*>& out) {
  for (const auto& r : reqs) {
    if (r.at("type") == "subagent")
      flatten(r.at("requests"), out);
    else
      out.push_back(&r);
  }
}

struct Counts {
  int64_t hit = 0, total = 0;
};

// Per session: the longest run of leading full blocks present in a trie of all earlier
// requests' block sequences; sessions never share (hash_id_scope "local").
Counts independent_count(const std::vector<TraceFile>& files) {
  Counts c;
  for (const TraceFile& f : files) {
    nlohmann::json doc = nlohmann::json::parse(f.text);
    int64_t block = doc.value("block_size", 64);
    std::vector<const nlohmann::json*> reqs;
    flatten(doc.at("requests"), reqs);
    std::map<std::pair<int64_t, int64_t>, int64_t> trie;  // (node, id) -> child node
    int64_t next_node = 1;
    for (const nlohmann::json* r : reqs) {
      int64_t in = r->at("in").get<int64_t>();
      const auto& ids = r->at("hash_ids");
      int64_t full = std::min<int64_t>(in / block, static_cast<int64_t>(ids.size()));
      int64_t node = 0, run = 0;
      bool still = true;
      for (int64_t b = 0; b < full; ++b) {
        auto key = std::make_pair(node, ids[static_cast<size_t>(b)].get<int64_t>());
        auto it = trie.find(key);
        if (it == trie.end()) {
          still = false;
          it = trie.emplace(key, next_node++).first;
        } else if (still) {
          ++run;
        }
        node = it->second;
      }
      c.hit += run * block;
      c.total += in;
    }
  }
  return c;
}

TEST(TraceStats, BundledHitRateMatchesIndependentCount) {
  std::string path = test::bundled("claude_code_sample.tar.gz");
  Counts want = independent_count(read_trace_files(path));
  auto t0 = std::chrono::steady_clock::now();
  std::clock_t c0 = std::clock();
  Trace trace = load_trace(path);
  auto t1 = std::chrono::steady_clock::now();
  std::clock_t c1 = std::clock();
  std::vector<std::vector<int64_t>> hits = theoretical_hit_tokens(trace);
  auto t2 = std::chrono::steady_clock::now();
  std::clock_t c2 = std::clock();
  int64_t got = 0, total = 0;
  for (size_t s = 0; s < hits.size(); ++s)
    for (size_t i = 0; i < hits[s].size(); ++i) {
      got += hits[s][i];
      total += trace.sessions[s].turns[i].n_input_tokens;
    }
  EXPECT_EQ(total, want.total);
  EXPECT_EQ(got, want.hit);
  EXPECT_EQ(want.hit, 375131200);  // also counted with Python (data/traces/README.md)
  EXPECT_NEAR(theoretical_hit_rate(trace), 0.964484, 1e-6);
  std::printf(
      "[ info ] bundled sample: load %.3f s wall / %.3f s cpu, theoretical hit %.3f s wall / %.3f s cpu\n",
      std::chrono::duration<double>(t1 - t0).count(), double(c1 - c0) / CLOCKS_PER_SEC,
      std::chrono::duration<double>(t2 - t1).count(), double(c2 - c1) / CLOCKS_PER_SEC);
}

TEST(TraceStats, PrefixStopsAtFirstUnseenBlockAndIgnoresPartialBlocks) {
  Trace t;
  t.block_tokens = 4;
  t.sessions.push_back({"a", {}});
  auto turn = [](int64_t n, std::vector<uint64_t> ids) {
    TraceTurn x;
    x.n_input_tokens = n;
    x.hash_ids = std::move(ids);
    return x;
  };
  t.sessions[0].turns.push_back(turn(10, {1, 2, 3}));     // full blocks 1,2; partial 3
  t.sessions[0].turns.push_back(turn(16, {1, 2, 3, 4}));  // 1,2 hit; 3 was only partial
  t.sessions[0].turns.push_back(turn(12, {1, 5, 3}));     // 1 hit; [1,5] unseen, 3 after it too
  t.sessions[0].turns.push_back(turn(8, {2, 1}));         // [2] never a first block
  t.sessions.push_back({"b", {}});
  t.sessions[1].turns.push_back(turn(16, {1, 2, 3, 4}));  // all 4 seen (other session, same ids)
  std::vector<std::vector<int64_t>> h = theoretical_hit_tokens(t);
  EXPECT_EQ(h[0], (std::vector<int64_t>{0, 8, 4, 0}));
  EXPECT_EQ(h[1], (std::vector<int64_t>{16}));
  EXPECT_DOUBLE_EQ(theoretical_hit_rate(t), 28.0 / 62.0);
}

TEST(TraceStats, OpenLoopVisitsByArrival) {
  Trace t;
  t.block_tokens = 1;
  t.closed_loop = false;
  TraceTurn late, early;
  late.arrival_s = 5;
  late.n_input_tokens = 2;
  late.hash_ids = {7, 8};
  early.arrival_s = 1;
  early.n_input_tokens = 1;
  early.hash_ids = {7};
  t.sessions = {{"late", {late}}, {"early", {early}}};
  std::vector<std::vector<int64_t>> h = theoretical_hit_tokens(t);
  EXPECT_EQ(h[0][0], 1);  // [7] arrived earlier
  EXPECT_EQ(h[1][0], 0);
  EXPECT_EQ(theoretical_hit_rate(Trace{}), 0.0);
}

}  // namespace
}  // namespace ds
