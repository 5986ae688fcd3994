// MLA latent rows of one layer for one sequence: per token the absorbed-MLA entry
// [RMSNorm(c~) ; k_pe] (kv_lora_rank + qk_rope_head_dim f32 values), in token order, never
// rewritten once written.
//  - MlaLatentPages: where the rows live — fixed-size pages of a pool, found through a page table
//    (an executor's paged latent pool). Layers read and write latents only through this view.
//  - MlaLatentStore: an owning, contiguous store for one sequence (standalone runs, tests); it
//    hands out a one-page view over itself.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace ds {

struct MlaLatentPages {
  float* pool = nullptr;           // f32 [n_pages, page_tokens, latent_dim]: this layer's pages
  std::span<const int32_t> pages;  // page ids; page i holds positions [i·P, (i+1)·P)
  int64_t page_tokens = 0;         // P
  int latent_dim = 0;              // L
  int64_t n_tokens = 0;            // rows already written (the position of the first new token)

  float* row(int64_t t) const {
    return pool + (int64_t(pages[size_t(t / page_tokens)]) * page_tokens + t % page_tokens) * latent_dim;
  }
  int64_t capacity() const { return int64_t(pages.size()) * page_tokens; }  // rows the pages can hold
  // Whether rows [0, n) are adjacent in memory (consecutive page ids).
  bool contiguous(int64_t n) const {
    for (int64_t i = 1; i * page_tokens < n; ++i)
      if (pages[size_t(i)] != pages[size_t(i - 1)] + 1) return false;
    return true;
  }
};

struct MlaLatentStore {
  int latent_dim = 0;         // L
  int64_t n_tokens = 0;       // rows written
  std::vector<float> latent;  // f32 [n_tokens, L] (capacity grows with pages())

  void init(int latent_dim_) {
    latent_dim = latent_dim_;
    n_tokens = 0;
    latent.clear();
  }
  const float* row(int64_t t) const { return latent.data() + t * latent_dim; }
  // A view with room for n_new more rows: one page spanning the whole store. The store must not
  // grow again while the view is in use.
  MlaLatentPages pages(int64_t n_new) {
    static constexpr int32_t kOnePage[1] = {0};
    const int64_t cap = n_tokens + n_new;
    latent.resize(size_t(cap * latent_dim));
    return {latent.data(), kOnePage, cap > 0 ? cap : 1, latent_dim, n_tokens};
  }
};

}  // namespace ds
