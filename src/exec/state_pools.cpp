#include "exec/state_pools.h"

#include <algorithm>
#include <cstring>

#include "core/check.h"

namespace ds {
namespace {

int64_t grown(int64_t have, int32_t id) {
  return std::max<int64_t>({int64_t(id) + 1, 2 * have, 16});
}

}  // namespace

LatentPagePool::LatentPagePool(int n_layers, int64_t page_tokens, int latent_dim)
    : page_tokens_(page_tokens), latent_dim_(latent_dim), layers_(size_t(std::max(n_layers, 0))) {
  DS_CHECK(n_layers >= 0 && page_tokens > 0 && latent_dim > 0, "latent pool: {} layers, pages of {} x {}",
           n_layers, page_tokens, latent_dim);
}

void LatentPagePool::reserve(int32_t page) {
  DS_CHECK(page >= 0, "latent pool: page id {}", page);
  if (page < n_pages_) return;
  n_pages_ = grown(n_pages_, page);
  for (auto& l : layers_) l.resize(size_t(n_pages_ * page_floats()));
}

void LatentPagePool::copy_page(int32_t dst_page, LatentPagePool& src, int32_t src_page) {
  DS_CHECK(src.layers_.size() == layers_.size() && src.page_floats() == page_floats(),
           "latent pool: copy between pools of different shapes");
  reserve(dst_page);
  src.reserve(src_page);
  for (size_t i = 0; i < layers_.size(); ++i)
    std::memcpy(layers_[i].data() + dst_page * page_floats(),
                src.layers_[i].data() + src_page * page_floats(), size_t(page_floats()) * sizeof(float));
}

StateSlotPool::StateSlotPool(int n_layers, const KdaStateShape& shape) : n_layers_(n_layers), shape_(shape) {
  DS_CHECK(n_layers >= 0, "state pool: {} layers", n_layers);
}

void StateSlotPool::reserve(int32_t slot) {
  DS_CHECK(slot >= 0, "state pool: slot id {}", slot);
  if (slot < n_slots_) return;
  n_slots_ = grown(n_slots_, slot);
  data_.resize(size_t(n_slots_ * slot_floats()));
}

float* StateSlotPool::slot_data(int32_t slot) {
  reserve(slot);
  return data_.data() + slot * slot_floats();
}

KdaStateView StateSlotPool::view(int32_t slot, int layer) {
  DS_CHECK(layer >= 0 && layer < n_layers_, "state pool: layer {} of {}", layer, n_layers_);
  return KdaStateView::over(shape_, slot_data(slot) + int64_t(layer) * int64_t(shape_.floats()));
}

void StateSlotPool::copy_slot(int32_t dst_slot, StateSlotPool& src, int32_t src_slot) {
  DS_CHECK(src.slot_floats() == slot_floats(), "state pool: copy between pools of different shapes");
  reserve(dst_slot);
  const float* from = src.slot_data(src_slot);
  std::memcpy(slot_data(dst_slot), from, size_t(slot_floats()) * sizeof(float));
}

void StateSlotPool::zero_slot(int32_t slot) {
  std::memset(slot_data(slot), 0, size_t(slot_floats()) * sizeof(float));
}

}  // namespace ds
