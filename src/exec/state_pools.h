// The model executor's storage, owned by the executor and indexed by the ids the cache hands out
// (device-agnostic layout; this CPU implementation keeps them in ordinary memory):
//  - LatentPagePool: MLA latent pages of one tier, one array per MLA layer,
//    f32 [n_pages, page_tokens, latent_dim].
//  - StateSlotPool: KDA state slots (live or checkpoint) of one tier, each the states of all KDA
//    layers of one sequence at one position, f32 [n_slots, n_kda_layers, conv + S].
// Both grow (doubling) to the highest id used, so memory follows what the cache actually hands out;
// growth moves the arrays, so views are taken after reserve() for the whole step.
#pragma once

#include <cstdint>
#include <vector>

#include "layers/kda_state.h"

namespace ds {

class LatentPagePool {
 public:
  LatentPagePool(int n_layers, int64_t page_tokens, int latent_dim);

  void reserve(int32_t page);  // room for page ids 0..page
  float* layer(int i) { return layers_[size_t(i)].data(); }
  // Copies page `src_page` of `src` (every layer) into page `dst_page` of this pool.
  void copy_page(int32_t dst_page, LatentPagePool& src, int32_t src_page);
  int64_t page_floats() const { return page_tokens_ * latent_dim_; }  // per layer
  int64_t n_pages() const { return n_pages_; }
  int64_t bytes() const {
    return n_pages_ * page_floats() * int64_t(layers_.size()) * int64_t(sizeof(float));
  }

 private:
  int64_t page_tokens_;
  int64_t latent_dim_;
  int64_t n_pages_ = 0;
  std::vector<std::vector<float>> layers_;  // [n_layers] f32 [n_pages, page_tokens, latent_dim]
};

class StateSlotPool {
 public:
  StateSlotPool(int n_layers, const KdaStateShape& shape);

  void reserve(int32_t slot);  // room for slot ids 0..slot
  KdaStateView view(int32_t slot, int layer);
  void copy_slot(int32_t dst_slot, StateSlotPool& src, int32_t src_slot);
  void zero_slot(int32_t slot);
  int64_t slot_floats() const { return int64_t(shape_.floats()) * n_layers_; }
  int64_t n_slots() const { return n_slots_; }
  int64_t bytes() const { return n_slots_ * slot_floats() * int64_t(sizeof(float)); }

 private:
  float* slot_data(int32_t slot);
  int n_layers_;
  KdaStateShape shape_;
  int64_t n_slots_ = 0;
  std::vector<float> data_;  // f32 [n_slots, n_layers, conv + S]
};

}  // namespace ds
