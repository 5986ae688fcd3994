// LayerBatch: how the rows of a packed activation matrix [T_total, D] split into sequences of
// different lengths. Invariant: cu_tokens is non-decreasing, starts at 0, ends at n_tokens().
// Layers see only this layout plus their own per-sequence state; the runner builds it.
#pragma once

#include <cstdint>
#include <vector>

namespace ds {

struct LayerBatch {
  std::vector<int64_t> cu_tokens{0};  // [n_seq + 1] row offset of each sequence's new tokens

  int n_seq() const { return int(cu_tokens.size()) - 1; }
  int64_t n_tokens() const { return cu_tokens.back(); }
  int64_t begin(int s) const { return cu_tokens[size_t(s)]; }
  int64_t len(int s) const { return cu_tokens[size_t(s) + 1] - cu_tokens[size_t(s)]; }
  void add(int64_t n_new_tokens) { cu_tokens.push_back(cu_tokens.back() + n_new_tokens); }
};

}  // namespace ds
