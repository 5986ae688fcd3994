// Warm equals cold through the Engine on the device executor (gpu/gpu_executor.h), shared by the
// CPU run (tests/gpu/test_gpu_executor.cpp, CI) and the CUDA run (tests/gpu/cuda/, label gpu): a
// request served from the prefix cache — device pages and checkpoint slots, the pinned host tier
// after demotion and promotion, restores, preemption and recompute, mixed batches — produces the
// greedy tokens and logits of the same request computed cold by the same device model (one prefill,
// then one decode step per token).
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <random>

#include "../engine/model_engine.h"
#include "device_golden.h"
#include "exec/sampler.h"
#include "gpu/gpu_executor.h"

namespace ds::test {

// The engine over the device executor; the cache configuration of the CPU executor's tests.
struct DeviceEngine {
  DeviceEngine(const DeviceModel& m, const CacheSetup& c, bool decode_graphs = true, bool keep_logits = true,
               bool device_argmax = true)
      : exec(m, c.page_tokens,
             GpuExecutorOptions{.max_running = c.max_running,
                                .verify = true,
                                .keep_logits = keep_logits,
                                .decode_graphs = decode_graphs,
                                .device_argmax = device_argmax}),
        engine(ModelEngine::config(exec.cache_sizes(), c), exec, clock) {}

  std::map<RequestId, Request> run() {
    std::map<RequestId, Request> done;
    while (!engine.idle())
      for (Request& r : engine.step().finished) done.emplace(r.id, std::move(r));
    return done;
  }

  GpuExecutor exec;
  VirtualClock clock;
  Engine engine;
};

// Both runs are f32 computations of the same function in different orders (prefill split at the
// hit and in chunks, batched with other requests): Kimi Linear tiny within 1e-5, K3 tiny within
// 5e-5 (its own f32 noise floor, see tests/engine/model_engine.h). Returns the largest difference.
inline double expect_warm_equals_cold(const DeviceModel& m, const GpuExecutor& exec, const Request& r) {
  const double tol = m.config().attn_res_block_size > 0 ? 5e-5 : 1e-5;
  const int64_t V = m.config().vocab_size, n = r.n_output_tokens;
  const std::vector<int32_t> prompt(r.tokens.begin(), r.tokens.begin() + r.n_prompt_tokens);
  Harness h(m);
  Harness::Seq s = h.new_seq();
  std::vector<float> cold = h.run(s, prompt, LogitsWant::Last);
  std::vector<int32_t> cold_tokens{argmax_row(cold.data(), V)};
  for (int64_t j = 1; j < n; ++j) {
    const std::vector<float> l = h.run(s, std::span(cold_tokens).subspan(size_t(j - 1), 1), LogitsWant::Last);
    cold.insert(cold.end(), l.begin(), l.end());
    cold_tokens.push_back(argmax_row(l.data(), V));
  }
  EXPECT_EQ(std::vector<int32_t>(r.tokens.begin() + r.n_prompt_tokens, r.tokens.end()), cold_tokens)
      << "request " << r.id;
  const std::vector<float>& warm = exec.sampled_logits(r.id);
  EXPECT_EQ(int64_t(warm.size()), n * V) << "request " << r.id;
  double worst = 0;
  for (size_t i = 0; i < std::min(warm.size(), cold.size()); ++i)
    worst = std::max(worst, std::fabs(double(warm[i]) - cold[i]));
  EXPECT_LE(worst, tol) << "request " << r.id << " (hit " << r.n_hit_tokens << " tokens)";
  return worst;
}

// The scenarios below take the executor's model m and, optionally, another model `cold` computing
// the cold reference (the eager model when m replays decode graphs).

// ---- the scenarios --------------------------------------------------------------------------------

// A follow-up turn hits the cache: every-block retention on the device alone, interval:32 with a
// host tier.
inline double follow_up_turn(const DeviceModel& m, const DeviceModel* cold = nullptr) {
  const int32_t V = int32_t(m.config().vocab_size);
  double worst = 0;
  for (const auto& [retention, host] : {std::pair{"every-block", false}, std::pair{"interval:32", true}}) {
    DeviceEngine de(m, {.retention = retention, .host_tokens = host ? 1 << 16 : 0});
    std::mt19937_64 rng(7);
    de.engine.add(make_request(1, random_tokens(rng, 150, V), 6));
    const Request first = de.run().at(1);
    de.engine.add(make_request(2, concat(first.tokens, random_tokens(rng, 37, V)), 5));
    const Request second = de.run().at(2);
    EXPECT_GT(second.n_hit_tokens, 0) << retention;
    worst = std::max({worst, expect_warm_equals_cold(cold ? *cold : m, de.exec, first),
                      expect_warm_equals_cold(cold ? *cold : m, de.exec, second)});
  }
  return worst;
}

// Unrelated requests push the first one's pages and checkpoints to the host tier; the follow-up
// promotes them back.
inline double host_tier_round_trip(const DeviceModel& m, const DeviceModel* cold = nullptr) {
  const int32_t V = int32_t(m.config().vocab_size);
  const CacheModelSizes sz = GpuExecutor(m, 16).cache_sizes();
  const int64_t state_tokens = sz.checkpoint_bytes / sz.kv_bytes_per_token;
  DeviceEngine de(m, {.retention = "every-block",
                      .device_tokens = 4 * state_tokens + 600,
                      .host_tokens = 80 * state_tokens,
                      .max_running = 1});
  std::mt19937_64 rng(11);
  de.engine.add(make_request(1, random_tokens(rng, 150, V), 4));
  const Request first = de.run().at(1);
  for (RequestId id = 2; id <= 5; ++id) de.engine.add(make_request(id, random_tokens(rng, 150, V), 2));
  de.run();
  de.engine.add(make_request(9, concat(first.tokens, random_tokens(rng, 20, V)), 5));
  const Request warm = de.run().at(9);
  EXPECT_GT(warm.n_host_hit_tokens, 0);
  EXPECT_GT(de.engine.cache().stats().pages_promoted, 0);
  return expect_warm_equals_cold(cold ? *cold : m, de.exec, warm);
}

// Two requests that cannot both grow to their length: the newer is preempted and recomputed.
inline double preemption(const DeviceModel& m, const DeviceModel* cold = nullptr) {
  const int32_t V = int32_t(m.config().vocab_size);
  const CacheModelSizes sz = GpuExecutor(m, 16).cache_sizes();
  const int64_t state_tokens = sz.checkpoint_bytes / sz.kv_bytes_per_token;
  DeviceEngine de(m,
                  {.retention = "interval:64", .device_tokens = 5 * state_tokens + 300, .step_tokens = 48});
  std::mt19937_64 rng(5);
  de.engine.add(make_request(1, random_tokens(rng, 130, V), 70));
  de.engine.add(make_request(2, random_tokens(rng, 120, V), 70));
  const auto done = de.run();
  EXPECT_EQ(done.size(), 2u);
  EXPECT_GT(de.engine.scheduler().n_preemptions(), 0);
  double worst = 0;
  for (const auto& [id, r] : done)
    worst = std::max(worst, expect_warm_equals_cold(cold ? *cold : m, de.exec, r));
  return worst;
}

// Many requests of different lengths in one batch, two of them hitting a shared prefix.
inline double mixed_batch(const DeviceModel& m, const DeviceModel* cold = nullptr) {
  const int32_t V = int32_t(m.config().vocab_size);
  DeviceEngine de(m, {.retention = "every-block", .step_tokens = 512});
  std::mt19937_64 rng(3);
  de.engine.add(make_request(1, random_tokens(rng, 70, V), 3));
  const Request first = de.run().at(1);
  RequestId id = 2;
  for (int64_t len : {1, 5, 17, 64, 65, 130})
    de.engine.add(make_request(id++, random_tokens(rng, len, V), 5));
  for (int64_t len : {3, 40})
    de.engine.add(make_request(id++, concat(first.tokens, random_tokens(rng, len, V)), 6));
  const auto done = de.run();
  EXPECT_EQ(done.size(), 8u);
  int hits = 0;
  double worst = 0;
  for (const auto& [rid, r] : done) {
    hits += r.n_hit_tokens > 0;
    worst = std::max(worst, expect_warm_equals_cold(cold ? *cold : m, de.exec, r));
  }
  EXPECT_EQ(hits, 2);
  return worst;
}

// Decode steps through the executor on `graphs` (a model recording decode graphs) replay them and
// match the requests computed cold on `eager` (the same weights without graphs): follow-up turns,
// preemption (the pools grow: graphs recorded again) and decode batches of several sizes. An
// executor with decode_graphs off replays none. Returns the largest difference.
inline double decode_graphs_match_eager(const DeviceModel& graphs, const DeviceModel& eager) {
  const int64_t before = graphs.graph_replays();
  const double worst =
      std::max({follow_up_turn(graphs, &eager), preemption(graphs, &eager), mixed_batch(graphs, &eager)});
  EXPECT_GT(graphs.graph_replays() - before, 100);
  EXPECT_GE(graphs.graphs_recorded(), 3);  // batch sizes
  const int64_t on = graphs.graph_replays();
  DeviceEngine de(graphs, {.retention = "every-block"}, false);
  std::mt19937_64 rng(13);
  de.engine.add(make_request(1, random_tokens(rng, 40, int32_t(graphs.config().vocab_size)), 8));
  de.run();
  EXPECT_EQ(graphs.graph_replays(), on);
  return worst;
}

// The executor's device argmax gives the host sampler's tokens: the same requests — greedy, top-k 1
// at a temperature, greedy with log-probabilities and plain temperature sampling, prefill and decode
// steps batched together (graphs on `m` when it records them) — served once with device_argmax and
// once without produce identical tokens and log-probabilities, and the greedy and top-k 1 requests'
// tokens came from the device. Returns the number of device-argmax tokens.
inline int64_t device_argmax_matches_host(const DeviceModel& m) {
  struct Served {
    std::map<RequestId, std::vector<int32_t>> tokens;
    std::map<RequestId, std::vector<TokenLogprobs>> logprobs;
    int64_t argmax_tokens = 0, expected = 0;
  };
  auto serve = [&](bool device_argmax) {
    DeviceEngine de(m, {.retention = "every-block"}, true, false, device_argmax);
    std::mt19937_64 rng(29);
    const int32_t V = int32_t(m.config().vocab_size);
    Served out;
    for (int i = 0; i < 8; ++i) {
      Request r = make_request(i + 1, random_tokens(rng, 12 + 9 * i, V), 6 + i);
      if (i % 4 == 1) r.sampling.temperature = 0.8f, r.sampling.top_k = 1;
      if (i % 4 == 2) r.sampling.logprobs = 3;
      if (i % 4 == 3) r.sampling.temperature = 0.9f, r.sampling.seed = 7;
      if (samples_by_argmax(r.sampling)) out.expected += r.max_output_tokens;
      de.engine.add(std::move(r));
    }
    while (!de.engine.idle()) {
      const EngineEvents ev = de.engine.step();
      for (size_t j = 0; j < ev.tokens.size(); ++j) {
        out.tokens[ev.tokens[j].request_id].push_back(ev.tokens[j].token);
        if (!ev.logprobs.empty()) out.logprobs[ev.tokens[j].request_id].push_back(ev.logprobs[j]);
      }
    }
    out.argmax_tokens = de.exec.device_argmax_tokens();
    return out;
  };
  const Served dev = serve(true), host = serve(false);
  EXPECT_EQ(host.argmax_tokens, 0);
  EXPECT_GT(dev.expected, 0);
  EXPECT_EQ(dev.argmax_tokens, dev.expected);
  EXPECT_EQ(dev.tokens, host.tokens);
  EXPECT_EQ(dev.tokens.size(), 8u);
  EXPECT_EQ(dev.logprobs.size(), host.logprobs.size());
  for (const auto& [id, lp] : dev.logprobs) {
    const std::vector<TokenLogprobs>& h = host.logprobs.at(id);
    EXPECT_EQ(lp.size(), h.size()) << "request " << id;
    for (size_t j = 0; j < std::min(lp.size(), h.size()); ++j) {
      EXPECT_EQ(lp[j].logprob, h[j].logprob) << "request " << id;
      EXPECT_EQ(lp[j].top, h[j].top) << "request " << id;
    }
  }
  return dev.argmax_tokens;
}

}  // namespace ds::test
