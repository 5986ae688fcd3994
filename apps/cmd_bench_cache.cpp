// `deltaserve bench cache`: prefix-cache bookkeeping speed per eviction policy. Fills a device tier
// with N cached pages (sessions of pages_per_session pages, interval retention giving the requested
// number of checkpoints), then times lookups of whole cached prompts and inserts that must evict.
// Reports ops/s and pages/s for insert, match and evict, and bookkeeping bytes per cached page.
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cache/hybrid_cache.h"
#include "commands.h"
#include "core/check.h"

namespace ds::cli {
namespace {

struct BenchCacheOptions {
  int64_t n_pages = 1'000'000;
  int64_t n_checkpoints = 10'000;
  int64_t pages_per_session = 1000;
  int64_t page_tokens = 64;
  int64_t n_matches = 2000;
  int64_t n_evict_sessions = 100;
  std::vector<std::string> policies = {"leaf-lru", "consumed-state-lru", "flop-per-byte:1", "seglen:0.85"};
};

struct BenchCacheRow {
  std::string policy;
  double insert_pages_per_s = 0, match_per_s = 0, match_pages_per_s = 0, evict_pages_per_s = 0;
  int64_t cached_pages = 0, checkpoints = 0, evicted_pages = 0, evicted_checkpoints = 0;
  double bytes_per_page = 0;
};

// Process CPU seconds: the bench is single-threaded, and CPU time stays meaningful on a shared
// machine where wall time is inflated by other load.
double cpu_now_s() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}
double seconds_since(double t0) {
  return cpu_now_s() - t0;
}

// Session s: unique token ids, n_pages full pages plus one token (so every page gets cached).
void session_tokens(int64_t s, int64_t n_pages, int64_t page_tokens, std::vector<int32_t>& out) {
  out.resize(static_cast<size_t>(n_pages * page_tokens + 1));
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = static_cast<int32_t>((s * 7919 + static_cast<int64_t>(i)) & 0x3fffffff);
  out[0] = static_cast<int32_t>(s);  // first page differs per session: no sharing
}

void run_session(HybridCache& cache, const std::vector<int32_t>& tokens) {
  auto adm = cache.admit(tokens);
  DS_CHECK(adm.has_value(), "bench cache: admission failed (tier too small for one live state)");
  const auto n = static_cast<int64_t>(tokens.size());
  DS_CHECK(cache.reserve(adm->seq, n), "bench cache: reserve of {} tokens failed", n);
  cache.plan_checkpoints(adm->seq, adm->hit.n_hit_tokens, n);
  (void)cache.take_transfers();  // an executor would copy these
  cache.commit(adm->seq, tokens, n);
  cache.finish(adm->seq, tokens);
}

BenchCacheRow bench_policy(const BenchCacheOptions& o, const std::string& policy) {
  const int64_t n_sessions = o.n_pages / o.pages_per_session;
  const int64_t ckpts_per_session = std::max<int64_t>(1, o.n_checkpoints / std::max<int64_t>(1, n_sessions));
  const int64_t interval_pages = std::max<int64_t>(1, o.pages_per_session / ckpts_per_session);
  CacheConfig cfg;
  cfg.page_tokens = o.page_tokens;
  cfg.sizes.kv_bytes_per_token = 18 * 1024;  // K3-like MLA latent KV, all MLA layers (bf16)
  cfg.sizes.checkpoint_bytes = 64LL << 20;   // all KDA layers' f32 state + conv windows
  cfg.sizes.live_state_bytes = 64LL << 20;
  cfg.sizes.flops_per_token = 2e9;
  cfg.sizes.attn_flops_per_token_ctx = 4e4;
  const int64_t ckpts = n_sessions * (o.pages_per_session / interval_pages);
  // Exactly the filled size + one live state: the evict phase must evict for every page it adds.
  cfg.tiers.push_back({"hbm",
                       n_sessions * o.pages_per_session * cfg.page_bytes() +
                           ckpts * cfg.sizes.checkpoint_bytes + cfg.sizes.live_state_bytes,
                       1e12, 1e12});
  cfg.retention = "interval:" + std::to_string(interval_pages * o.page_tokens);
  cfg.eviction = policy;
  HybridCache cache(cfg);
  BenchCacheRow row;
  row.policy = policy;
  std::vector<int32_t> tokens;

  auto t0 = cpu_now_s();
  for (int64_t s = 0; s < n_sessions; ++s) {
    session_tokens(s, o.pages_per_session, o.page_tokens, tokens);
    run_session(cache, tokens);
  }
  row.insert_pages_per_s = static_cast<double>(cache.stats().pages_inserted) / seconds_since(t0);
  row.cached_pages = cache.stats().pages_inserted;
  row.checkpoints = cache.stats().checkpoints_created;
  row.bytes_per_page = static_cast<double>(cache.bookkeeping_bytes()) / static_cast<double>(row.cached_pages);

  std::mt19937_64 rng(1);
  std::vector<std::vector<int32_t>> prompts(16);
  for (auto& p : prompts)
    session_tokens(static_cast<int64_t>(rng() % n_sessions), o.pages_per_session, o.page_tokens, p);
  int64_t pages_walked = 0;
  t0 = cpu_now_s();
  for (int64_t i = 0; i < o.n_matches; ++i)
    pages_walked += cache.match(prompts[i % prompts.size()]).n_kv_tokens;
  const double match_s = seconds_since(t0);
  row.match_per_s = static_cast<double>(o.n_matches) / match_s;
  row.match_pages_per_s = static_cast<double>(pages_walked / o.page_tokens) / match_s;

  const CacheStats before = cache.stats();
  t0 = cpu_now_s();
  for (int64_t s = 0; s < o.n_evict_sessions; ++s) {
    session_tokens(n_sessions + s, o.pages_per_session, o.page_tokens, tokens);
    run_session(cache, tokens);
  }
  const double evict_s = seconds_since(t0);
  row.evicted_pages = cache.stats().pages_dropped - before.pages_dropped;
  row.evicted_checkpoints = cache.stats().checkpoints_dropped - before.checkpoints_dropped;
  row.evict_pages_per_s = static_cast<double>(row.evicted_pages) / evict_s;
  return row;
}

void run_bench_cache(const BenchCacheOptions& o) {
  DS_CHECK(o.page_tokens > 0 && o.pages_per_session > 0 && o.n_pages >= o.pages_per_session,
           "bench cache: need --pages >= --pages-per-session > 0 and --page-tokens > 0 (got {}, {}, {})",
           o.n_pages, o.pages_per_session, o.page_tokens);
  if (o.n_checkpoints < 0) fail("--checkpoints must be >= 0, got {}", o.n_checkpoints);
  if (o.n_matches < 1) fail("--matches must be >= 1, got {}", o.n_matches);
  if (o.n_evict_sessions < 1) fail("--evict-sessions must be >= 1, got {}", o.n_evict_sessions);
  if (o.n_pages > (int64_t{1} << 26)) fail("--pages must be <= 2^26 (bounded memory), got {}", o.n_pages);
  std::printf(
      "prefix cache bookkeeping (rates per CPU second): %lld pages of %lld tokens, ~%lld checkpoints, "
      "sessions of %lld pages\n",
      static_cast<long long>(o.n_pages), static_cast<long long>(o.page_tokens),
      static_cast<long long>(o.n_checkpoints), static_cast<long long>(o.pages_per_session));
  std::printf("%-20s %12s %10s %12s %12s %9s %9s %10s\n", "eviction", "insert pg/s", "match/s", "match pg/s",
              "evict pg/s", "pages", "ckpts", "B/page");
  for (const auto& p : o.policies) {
    const BenchCacheRow r = bench_policy(o, p);
    std::printf("%-20s %12.3g %10.3g %12.3g %12.3g %9lld %9lld %10.1f\n", r.policy.c_str(),
                r.insert_pages_per_s, r.match_per_s, r.match_pages_per_s, r.evict_pages_per_s,
                static_cast<long long>(r.cached_pages), static_cast<long long>(r.checkpoints),
                r.bytes_per_page);
    std::fflush(stdout);
  }
}

}  // namespace

void register_bench_cache(CLI::App& bench) {
  auto opts = std::make_shared<BenchCacheOptions>();
  auto* cmd =
      bench.add_subcommand("cache", "Prefix cache benchmark: match/insert/evict operations per second");
  cmd->add_option("--pages", opts->n_pages, "cached pages to fill")->capture_default_str();
  cmd->add_option("--checkpoints", opts->n_checkpoints, "checkpoints to keep (interval retention)")
      ->capture_default_str();
  cmd->add_option("--pages-per-session", opts->pages_per_session, "pages per cached prompt")
      ->capture_default_str();
  cmd->add_option("--page-tokens", opts->page_tokens, "tokens per KV page")->capture_default_str();
  cmd->add_option("--matches", opts->n_matches, "lookups of whole cached prompts to time")
      ->capture_default_str();
  cmd->add_option("--evict-sessions", opts->n_evict_sessions, "prompts inserted into the full cache")
      ->capture_default_str();
  cmd->add_option("--policies", opts->policies, "eviction policies")->delimiter(',')->capture_default_str();
  cmd->callback([opts] { run_bench_cache(*opts); });
}

}  // namespace ds::cli
