// Serving metrics as plain data, and their Prometheus text exposition (/metrics).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cache/cache_stats.h"

namespace ds {

// Cumulative histogram with fixed upper bounds (seconds), Prometheus style.
struct Histogram {
  std::vector<double> bounds;   // ascending; +Inf implied
  std::vector<int64_t> counts;  // [bounds.size() + 1], non-cumulative per bucket
  double sum = 0;
  int64_t count = 0;
  explicit Histogram(std::vector<double> b = {}) : bounds(std::move(b)), counts(bounds.size() + 1, 0) {}
  void observe(double v);
};

struct ServingMetrics {
  int64_t n_running = 0, n_waiting = 0;
  int64_t requests_finished = 0, requests_aborted = 0, requests_rejected = 0;
  int64_t prompt_tokens = 0, generation_tokens = 0;
  int64_t preemptions = 0;
  int64_t steps = 0;
  CacheStats cache;                // engine cache stats after the last step
  std::vector<std::string> tiers;  // tier names, device first
  Histogram ttft_s{{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}};
  Histogram tpot_s{{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1}};
  Histogram e2e_s{{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}};
};

// Prometheus text format 0.0.4; every name starts with "deltaserve_".
std::string prometheus_text(const ServingMetrics& m, const std::string& model_name);

}  // namespace ds
