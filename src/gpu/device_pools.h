// DevicePools: the step state of the device forward on one memory tier — paged MLA latents and KDA
// state slots — indexed by the ids the prefix cache hands out. Tier 0 lives on the model's device
// (HBM); a host tier is pinned host memory with the same layout, so that a page or slot moves
// between tiers with one copy per layer (pages) or one copy (slots).
//  - latents: per MLA layer f32 [n_pages, page_tokens, R + dr] (R = kv_lora_rank, dr = k_pe width);
//  - state slots: f32 [n_slots, n_kda_layers, conv + S] with, per KDA layer, the conv windows
//    [3, H*K, W-1] then S [H, K, V] (layers/kda_state.h layout).
// Both grow (doubling, existing contents copied) to the highest id used; pointers taken before a
// reserve() are invalidated by it.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/memory.h"
#include "layers/kda_state.h"

namespace ds {

class DevicePools {
 public:
  DevicePools(Device device, bool pinned, int n_mla, int64_t page_tokens, int latent_dim, int n_kda,
              const KdaStateShape& kda_shape);

  void reserve_pages(int64_t page);  // room for page ids 0..page
  void reserve_slots(int64_t slot);  // room for slot ids 0..slot

  float* latents(int mla_layer) const { return latents_[size_t(mla_layer)].as<float>(); }
  float* slot(int64_t s) const { return slots_.as<float>() + s * slot_floats(); }
  float* slots_base() const { return slots_.as<float>(); }

  // Copies page / slot `src_id` of `src` (possibly on another tier) into `dst_id` here.
  void copy_page(int64_t dst_id, DevicePools& src, int64_t src_id);
  void copy_slot(int64_t dst_id, DevicePools& src, int64_t src_id);
  void zero_slot(int64_t s);

  Device device() const { return device_; }
  int64_t page_tokens() const { return page_tokens_; }
  int latent_dim() const { return latent_dim_; }
  int64_t page_floats() const { return page_tokens_ * latent_dim_; }  // per layer
  int64_t n_pages() const { return n_pages_; }
  int64_t n_slots() const { return n_slots_; }
  const KdaStateShape& kda_shape() const { return kda_shape_; }
  int64_t layer_state_floats() const { return int64_t(kda_shape_.floats()); }
  int64_t slot_floats() const { return layer_state_floats() * n_kda_; }
  int64_t bytes() const;

 private:
  Device device_;
  bool pinned_;
  int64_t page_tokens_;
  int latent_dim_;
  int n_kda_;
  KdaStateShape kda_shape_;
  int64_t n_pages_ = 0, n_slots_ = 0;
  std::vector<Buffer> latents_;  // [n_mla]
  Buffer slots_;
};

}  // namespace ds
