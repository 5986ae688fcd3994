#include "cache/eviction_policy.h"

#include <charconv>
#include <vector>

#include "core/check.h"

namespace ds {
namespace {

class LeafLru final : public EvictionPolicy {
 public:
  std::string name() const override { return "leaf-lru"; }
  bool evicts_checkpoints_alone() const override { return false; }
  double kv_score(uint64_t access, float) const override { return static_cast<double>(access); }
  double checkpoint_score(uint64_t access, float) const override { return static_cast<double>(access); }
};

class ConsumedStateLru final : public EvictionPolicy {
 public:
  std::string name() const override { return "consumed-state-lru"; }
  bool evicts_checkpoints_alone() const override { return true; }
  double kv_score(uint64_t access, float) const override { return static_cast<double>(access); }
  double checkpoint_score(uint64_t access, float) const override { return static_cast<double>(access); }
};

// Marconi: utility = recency + alpha · FLOP efficiency. Marconi normalizes both terms over the
// candidate set at each eviction; here recency is ticks/H and efficiency e is squashed to
// e / (e + e_ref) (e_ref = efficiency of one page at zero context) so scores fit a heap.
class FlopPerByte final : public EvictionPolicy {
 public:
  FlopPerByte(double alpha, double horizon, const CacheModelSizes& s, int64_t page_tokens)
      : alpha_(alpha), horizon_(horizon), sizes_(s) {
    e_ref_ = efficiency(page_tokens, page_tokens);
  }
  std::string name() const override { return "flop-per-byte"; }
  bool evicts_checkpoints_alone() const override { return true; }
  bool uses_replay_tokens() const override { return true; }
  float checkpoint_value(int64_t replay, int64_t end) const override {
    const double e = efficiency(replay, end);
    return static_cast<float>(e / (e + e_ref_));
  }
  double kv_score(uint64_t access, float v) const override { return access / horizon_ + alpha_ * v; }
  double checkpoint_score(uint64_t access, float v) const override { return access / horizon_ + alpha_ * v; }

 private:
  // FLOPs to recompute tokens (end-replay, end] per byte held (checkpoint + the segment's KV).
  double efficiency(int64_t replay, int64_t end) const {
    const double start = static_cast<double>(end - replay);
    const double per_token =
        sizes_.flops_per_token > 0 || sizes_.attn_flops_per_token_ctx > 0
            ? sizes_.flops_per_token + sizes_.attn_flops_per_token_ctx * (start + replay / 2.0)
            : 1.0;
    const double bytes = static_cast<double>(sizes_.checkpoint_bytes + replay * sizes_.kv_bytes_per_token);
    return replay * per_token / (bytes > 0 ? bytes : 1.0);
  }
  double alpha_, horizon_, e_ref_ = 1;
  CacheModelSizes sizes_;
};

// SegLen: rank by replay length to the nearest reusable ancestor, blended with recency.
class SegLen final : public EvictionPolicy {
 public:
  SegLen(double weight, double horizon, int64_t page_tokens)
      : weight_(weight), horizon_(horizon), r_ref_(64.0 * page_tokens) {}
  std::string name() const override { return "seglen"; }
  bool evicts_checkpoints_alone() const override { return true; }
  bool uses_replay_tokens() const override { return true; }
  float checkpoint_value(int64_t replay, int64_t) const override {
    return static_cast<float>(replay / (replay + r_ref_));
  }
  double kv_score(uint64_t access, float v) const override {
    return weight_ * access / horizon_ + (1 - weight_) * v;
  }
  double checkpoint_score(uint64_t access, float v) const override {
    return weight_ * access / horizon_ + (1 - weight_) * v;
  }

 private:
  double weight_, horizon_, r_ref_;
};

// "name:a:b" -> numeric args; ds::Error naming the spec on a bad number.
std::vector<double> parse_args(const std::string& spec, size_t name_len, size_t max_args) {
  std::vector<double> args;
  size_t pos = name_len;
  while (pos < spec.size()) {
    if (spec[pos] != ':') fail("eviction policy '{}': expected ':' at offset {}", spec, pos);
    size_t next = spec.find(':', pos + 1);
    if (next == std::string::npos) next = spec.size();
    double v = 0;
    auto [ptr, ec] = std::from_chars(spec.data() + pos + 1, spec.data() + next, v);
    if (ec != std::errc() || ptr != spec.data() + next || !(v >= 0) || v > 1e12)
      fail("eviction policy '{}': bad number '{}'", spec, spec.substr(pos + 1, next - pos - 1));
    args.push_back(v);
    pos = next;
  }
  if (args.size() > max_args) fail("eviction policy '{}': at most {} parameters", spec, max_args);
  return args;
}

bool has_prefix(const std::string& spec, const std::string& name) {
  return spec.rfind(name, 0) == 0 && (spec.size() == name.size() || spec[name.size()] == ':');
}

// Boundary-aware: a hit ends at a checkpoint, so KV pages past a path's deepest checkpoint can
// never be restored from (they would be recomputed anyway): such stranded leaves go first, oldest
// first, and are dropped rather than demoted. Live leaves then leave by last use — an agent
// session's path is reused when its next turn comes, one think time after the last — with the
// checkpoint's FLOP-per-byte value (recompute saved per byte held) as the tie-break. Under
// overload LRU over a cyclic reuse pattern hits nothing (every path is evicted just before its
// reuse), so the cache holds a subset of paths back (holds_paths; the mechanism lives in
// HybridCache: cache_eviction.cpp) and the sessions outside it wait or miss. With `:queue`,
// paths that a waiting request announced leave last, the latest arrival first: under overload the queue is
// admitted in arrival order, so the path whose reuse lies furthest ahead is the newest arrival's
// (Belady's choice for a FIFO queue; plain LRU would evict the queue head's path first and hit
// nothing once the working set exceeds the budget). KV leaves only; O(log n) per decision. With
// `:queued`, a prompt waits for held bytes only while another request is queued behind it: the
// scheduler admits first come first served, so a prompt that waits alone (a turn of one of the few
// very long sessions, with the working set about the budget) idles the lanes until the running
// requests drain, while with a queue behind it the memory is what every waiting request is short
// of (docs/policy.md, "Admission blocking"). With `:queue-overload`, only requests that arrive while
// the cache is overloaded (the same online signal as the held set's) are announced as `:queue` does:
// below the knee the order is plain boundary-aware's, past it the waiting queue's paths leave last
// (docs/policy.md, "The waiting queue's paths last, under overload only").
class BoundaryAware final : public EvictionPolicy {
 public:
  BoundaryAware(const CacheModelSizes& s, int64_t page_tokens, bool queue, bool queued, bool queue_overload)
      : marconi_(1.0, 64.0, s, page_tokens),
        queue_(queue || queue_overload),
        queued_(queued),
        queue_overload_(queue_overload) {}
  std::string name() const override {
    return queue_overload_ ? "boundary-aware:queue-overload"
           : queue_        ? "boundary-aware:queue"
           : queued_       ? "boundary-aware:queued"
                           : "boundary-aware";
  }
  bool evicts_checkpoints_alone() const override { return false; }
  bool uses_replay_tokens() const override { return true; }
  float checkpoint_value(int64_t replay, int64_t end) const override {
    return marconi_.checkpoint_value(replay, end);
  }
  bool drops_stranded_first() const override { return true; }
  bool uses_arrivals() const override { return queue_; }
  bool arrivals_only_under_overload() const override { return queue_overload_; }
  bool drops_superseded_checkpoints() const override { return true; }
  bool holds_paths() const override { return true; }
  bool blocks_only_behind_queue() const override { return queued_; }
  double kv_score(uint64_t access, float v) const override { return static_cast<double>(access) + 0.5 * v; }
  double checkpoint_score(uint64_t access, float v) const override {
    return static_cast<double>(access) + 0.5 * v;
  }

 private:
  FlopPerByte marconi_;  // only its value function
  bool queue_;           // :queue — waiting requests' paths leave last (uses_arrivals)
  bool queued_;          // :queued — prompts wait for held bytes only with a queue behind them
  bool queue_overload_;  // :queue-overload — :queue for requests that arrive while the cache is overloaded
};

}  // namespace

std::unique_ptr<EvictionPolicy> make_eviction_policy(const std::string& spec, const CacheModelSizes& sizes,
                                                     int64_t page_tokens) {
  if (spec == "leaf-lru" || spec == "lru") return std::make_unique<LeafLru>();
  if (spec == "consumed-state-lru") return std::make_unique<ConsumedStateLru>();
  for (const char* name : {"flop-per-byte", "marconi"}) {
    if (!has_prefix(spec, name)) continue;
    auto a = parse_args(spec, std::string(name).size(), 2);
    const double horizon = a.size() > 1 ? a[1] : 64.0;
    if (horizon <= 0) fail("eviction policy '{}': horizon must be > 0", spec);
    return std::make_unique<FlopPerByte>(a.empty() ? 1.0 : a[0], horizon, sizes, page_tokens);
  }
  for (const char* name : {"seglen", "replay-length"}) {
    if (!has_prefix(spec, name)) continue;
    auto a = parse_args(spec, std::string(name).size(), 2);
    const double w = a.empty() ? 0.85 : a[0];
    const double horizon = a.size() > 1 ? a[1] : 64.0;
    if (w > 1 || horizon <= 0) fail("eviction policy '{}': weight must be in [0,1], horizon > 0", spec);
    return std::make_unique<SegLen>(w, horizon, page_tokens);
  }
  if (spec == "boundary-aware" || spec == "boundary-aware:queue" || spec == "boundary-aware:queued" ||
      spec == "boundary-aware:queue-overload")
    return std::make_unique<BoundaryAware>(sizes, page_tokens, spec == "boundary-aware:queue",
                                           spec == "boundary-aware:queued",
                                           spec == "boundary-aware:queue-overload");
  fail(
      "unknown eviction policy '{}' (leaf-lru | consumed-state-lru | flop-per-byte[:alpha[:horizon]] | "
      "seglen[:weight[:horizon]] | boundary-aware[:queue|:queued|:queue-overload])",
      spec);
}

}  // namespace ds
