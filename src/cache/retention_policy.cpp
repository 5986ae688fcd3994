#include "cache/retention_policy.h"

#include <algorithm>
#include <charconv>

#include "core/check.h"

namespace ds {
namespace {

int64_t prompt_end(const RetentionContext& ctx) {
  return ctx.prompt_tokens / ctx.page_tokens * ctx.page_tokens;
}

void push_if_in(std::vector<WantedCheckpoint>& out, int64_t p, int64_t begin, int64_t end,
                CheckpointReason r) {
  if (p > begin && p <= end && p > 0) out.push_back({p, r});
}

class EveryBlock final : public RetentionPolicy {
 public:
  std::string name() const override { return "every-block"; }
  void wanted(const RetentionContext& ctx, int64_t begin, int64_t end,
              std::vector<WantedCheckpoint>& out) const override {
    for (int64_t p = (begin / ctx.page_tokens + 1) * ctx.page_tokens; p <= end; p += ctx.page_tokens)
      out.push_back({p, CheckpointReason::Block});
  }
  bool allows(CheckpointReason r, int64_t) const override { return r == CheckpointReason::Block; }
};

class Interval final : public RetentionPolicy {
 public:
  explicit Interval(int64_t n) : n_(n) {}
  std::string name() const override { return "interval:" + std::to_string(n_); }
  void wanted(const RetentionContext& ctx, int64_t begin, int64_t end,
              std::vector<WantedCheckpoint>& out) const override {
    const int64_t pe = prompt_end(ctx);
    bool pe_done = pe % n_ == 0;  // a prompt end on the interval grid is listed once, as interval
    for (int64_t p = (begin / n_ + 1) * n_; p <= end; p += n_) {
      if (!pe_done && pe < p) {
        push_if_in(out, pe, begin, end, CheckpointReason::PromptEnd);
        pe_done = true;
      }
      out.push_back({p, CheckpointReason::Interval});
    }
    if (!pe_done) push_if_in(out, pe, begin, end, CheckpointReason::PromptEnd);
  }
  bool allows(CheckpointReason r, int64_t p) const override {
    return (r == CheckpointReason::Interval && p % n_ == 0) || r == CheckpointReason::PromptEnd;
  }

 private:
  int64_t n_;
};

class PromptEnd final : public RetentionPolicy {
 public:
  std::string name() const override { return "prompt-end"; }
  void wanted(const RetentionContext& ctx, int64_t begin, int64_t end,
              std::vector<WantedCheckpoint>& out) const override {
    push_if_in(out, prompt_end(ctx), begin, end, CheckpointReason::PromptEnd);
  }
  bool allows(CheckpointReason r, int64_t) const override { return r == CheckpointReason::PromptEnd; }
};

class Semantic final : public RetentionPolicy {
 public:
  std::string name() const override { return "semantic"; }
  void wanted(const RetentionContext& ctx, int64_t begin, int64_t end,
              std::vector<WantedCheckpoint>& out) const override {
    push_if_in(out, ctx.branch_tokens, begin, end, CheckpointReason::Branch);
  }
  bool keeps_decode_end() const override { return true; }
  bool allows(CheckpointReason r, int64_t) const override {
    return r == CheckpointReason::Branch || r == CheckpointReason::DecodeEnd;
  }
};

// Boundary-aware: only what an agent server knows about where a later prompt can branch off —
// the point where this prompt left the cached tree (a fork: sub-agents, retries) and the prompt
// end (the next turn) — plus, as `boundary-aware:decode`, the end of decoding (the next turn of a
// live conversation that extends the decoded tokens), and as `boundary-aware:N`, one state every N
// tokens of a long prefill (the interval:N positions) as a fallback when the tail of a path is
// evicted.
class BoundaryAwareRetention final : public RetentionPolicy {
 public:
  BoundaryAwareRetention(int64_t n, bool decode_end) : n_(n), decode_end_(decode_end) {}
  std::string name() const override {
    if (decode_end_) return "boundary-aware:decode";
    return n_ > 0 ? "boundary-aware:" + std::to_string(n_) : "boundary-aware";
  }
  void wanted(const RetentionContext& ctx, int64_t begin, int64_t end,
              std::vector<WantedCheckpoint>& out) const override {
    const size_t first = out.size();
    const int64_t pe = prompt_end(ctx);
    if (n_ > 0)
      for (int64_t p = (begin / n_ + 1) * n_; p <= end; p += n_)
        if (p != pe) out.push_back({p, CheckpointReason::Interval});
    push_if_in(out, pe, begin, end, CheckpointReason::PromptEnd);
    const int64_t b = ctx.branch_tokens;
    if (b != pe && (n_ == 0 || b % n_ != 0)) push_if_in(out, b, begin, end, CheckpointReason::Branch);
    // Tail state: while prompts leave cached paths inside them (a client that rewrites the end of
    // the history it resends), the next prompt of this conversation is predicted to leave this one
    // before its end; a state at the last kTailGrid multiple below the prompt end (where vLLM's
    // 32K interval puts its last) restores it up to there instead of from an earlier fork.
    if (ctx.forks_mid_path && n_ == 0) {
      const int64_t t = (pe - 1) / kTailGrid * kTailGrid / ctx.page_tokens * ctx.page_tokens;
      if (t != b) push_if_in(out, t, begin, end, CheckpointReason::Interval);
    }
    std::sort(out.begin() + std::ptrdiff_t(first), out.end(),
              [](const WantedCheckpoint& x, const WantedCheckpoint& y) { return x.position < y.position; });
  }
  bool keeps_decode_end() const override { return decode_end_; }
  bool allows(CheckpointReason r, int64_t p) const override {
    return (r == CheckpointReason::Interval && (n_ == 0 || p % n_ == 0)) ||
           r == CheckpointReason::PromptEnd || r == CheckpointReason::Branch ||
           (decode_end_ && r == CheckpointReason::DecodeEnd);
  }

 private:
  static constexpr int64_t kTailGrid = 32768;  // tokens
  int64_t n_;                                  // 0 = no interval positions (only the tail state)
  bool decode_end_;
};

// vLLM's retention interval 0 in this cache: the latest replay boundary (prompt end) and the
// shared-prefix junction where the prompt left the cached tree; no decode-end state.
class Junction final : public RetentionPolicy {
 public:
  std::string name() const override { return "junction"; }
  void wanted(const RetentionContext& ctx, int64_t begin, int64_t end,
              std::vector<WantedCheckpoint>& out) const override {
    const int64_t pe = prompt_end(ctx), b = ctx.branch_tokens;
    if (b > 0 && b < pe) push_if_in(out, b, begin, end, CheckpointReason::Branch);
    push_if_in(out, pe, begin, end, CheckpointReason::PromptEnd);
    if (b > pe) push_if_in(out, b, begin, end, CheckpointReason::Branch);
  }
  bool allows(CheckpointReason r, int64_t) const override {
    return r == CheckpointReason::PromptEnd || r == CheckpointReason::Branch;
  }
};

class NoRetention final : public RetentionPolicy {
 public:
  std::string name() const override { return "none"; }
  void wanted(const RetentionContext&, int64_t, int64_t, std::vector<WantedCheckpoint>&) const override {}
  bool allows(CheckpointReason, int64_t) const override { return false; }
};

}  // namespace

std::unique_ptr<RetentionPolicy> make_retention_policy(const std::string& spec, int64_t page_tokens) {
  DS_CHECK(page_tokens > 0, "retention policy: page_tokens must be > 0, got {}", page_tokens);
  if (spec == "every-block") return std::make_unique<EveryBlock>();
  if (spec == "semantic") return std::make_unique<Semantic>();
  if (spec == "prompt-end") return std::make_unique<PromptEnd>();
  if (spec == "junction") return std::make_unique<Junction>();
  if (spec == "none") return std::make_unique<NoRetention>();
  if (spec == "boundary-aware:decode") return std::make_unique<BoundaryAwareRetention>(0, true);
  if (spec == "boundary-aware" || spec.rfind("boundary-aware:", 0) == 0) {
    int64_t n = 0;
    if (spec.size() > 14) {
      const std::string arg = spec.substr(15);
      auto [ptr, ec] = std::from_chars(arg.data(), arg.data() + arg.size(), n);
      if (ec != std::errc() || ptr != arg.data() + arg.size() || n <= 0)
        fail("retention policy '{}': interval must be a positive integer", spec);
    }
    if (n % page_tokens != 0)
      fail("retention policy '{}': interval {} is not a multiple of the page size {}", spec, n, page_tokens);
    return std::make_unique<BoundaryAwareRetention>(n, false);
  }
  if (spec.rfind("interval:", 0) == 0) {
    const std::string arg = spec.substr(9);
    int64_t n = 0;
    auto [ptr, ec] = std::from_chars(arg.data(), arg.data() + arg.size(), n);
    if (ec != std::errc() || ptr != arg.data() + arg.size() || n <= 0)
      fail("retention policy '{}': interval must be a positive integer", spec);
    if (n % page_tokens != 0)
      fail("retention policy '{}': interval {} is not a multiple of the page size {}", spec, n, page_tokens);
    return std::make_unique<Interval>(n);
  }
  fail(
      "unknown retention policy '{}' (every-block | interval:N | semantic | prompt-end | junction | "
      "boundary-aware[:N|:decode] | none)",
      spec);
}

}  // namespace ds
