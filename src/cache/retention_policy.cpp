#include "cache/retention_policy.h"

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
  if (spec == "none") return std::make_unique<NoRetention>();
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
  fail("unknown retention policy '{}' (every-block | interval:N | semantic | prompt-end | none)", spec);
}

}  // namespace ds
