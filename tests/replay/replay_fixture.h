// Shared fixtures of the replay tests: the K3-on-B300 cost model (bundled profiles) and a small
// hand-built agentic trace whose turns extend each other (so hits are known by construction).
#pragma once

#include <memory>

#include "plan/cost_model.h"
#include "plan/hardware_profile.h"
#include "plan/model_profile.h"
#include "plan/planner.h"
#include "replay/replay.h"
#include "trace/trace.h"

namespace ds::test {

struct K3Node {
  ModelProfile model = ModelProfile::load("kimi-k3");
  HardwareProfile hw = HardwareProfile::load("b300");
  MemoryPlan plan = make_plan(model, hw, PlanOptions{});
  CostModel cost{model, hw, CostOptions{.tp = 8}};
};

inline const K3Node& k3_node() {
  static const K3Node* node = new K3Node();
  return *node;
}

// n_sessions sessions of n_turns; turn k has 3000 + 2500 k prompt tokens, 40 output tokens, and
// the hash ids of the previous turn's prompt as its prefix (block ids unique per session).
inline Trace extending_trace(int n_sessions, int n_turns) {
  Trace t;
  t.source = "test:extending";
  t.block_tokens = 64;
  t.closed_loop = true;
  for (int s = 0; s < n_sessions; ++s) {
    TraceSession session;
    session.id = "s" + std::to_string(s);
    for (int k = 0; k < n_turns; ++k) {
      TraceTurn turn;
      turn.n_input_tokens = 3000 + 2500 * k;
      turn.n_output_tokens = 40;
      turn.think_time_s = 2.0;
      for (int64_t b = 0; b * 64 < turn.n_input_tokens; ++b)
        turn.hash_ids.push_back(static_cast<uint64_t>(s) * 1000000 + static_cast<uint64_t>(b));
      session.turns.push_back(std::move(turn));
    }
    t.sessions.push_back(std::move(session));
  }
  return t;
}

// A ReplayConfig on the K3 node with a device budget of `kv_tokens` MLA-KV tokens.
inline ReplayConfig k3_config(int concurrency, int64_t kv_tokens, const std::string& retention,
                              const std::string& eviction = "leaf-lru") {
  const K3Node& n = k3_node();
  ReplayConfig rc;
  rc.label = retention;
  rc.concurrency = concurrency;
  rc.seed = 11;
  rc.gpus = 8;
  rc.kv_budget_tokens = kv_tokens;
  rc.cache.sizes.kv_bytes_per_token = n.plan.kv_bytes_per_token;
  rc.cache.sizes.checkpoint_bytes = static_cast<int64_t>(n.plan.kda_state_bytes_per_gpu);
  rc.cache.sizes.live_state_bytes = rc.cache.sizes.checkpoint_bytes;
  rc.cache.tiers = {CacheTier{.name = "hbm",
                              .capacity_bytes = kv_tokens * n.plan.kv_bytes_per_token,
                              .read_bw_bytes_per_s = 8e12,
                              .write_bw_bytes_per_s = 8e12}};
  rc.cache.retention = retention;
  rc.cache.eviction = eviction;
  return rc;
}

}  // namespace ds::test
