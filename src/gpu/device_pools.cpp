#include "gpu/device_pools.h"

#include <algorithm>

#include "core/check.h"

namespace ds {
namespace {

int64_t grown(int64_t have, int64_t id) {
  return std::max<int64_t>({id + 1, 2 * have, 16});
}

// A new buffer of `bytes` holding the first `keep` bytes of `old`, the rest zero.
Buffer regrow(const Buffer& old, Device device, bool pinned, int64_t bytes) {
  Buffer b(device, bytes, pinned);
  b.zero();
  copy_bytes(b.data(), device, old.data(), device, std::min(old.bytes(), bytes));
  return b;
}

}  // namespace

DevicePools::DevicePools(Device device, bool pinned, int n_mla, int64_t page_tokens, int latent_dim,
                         int n_kda, const KdaStateShape& kda_shape)
    : device_(device),
      pinned_(pinned),
      page_tokens_(page_tokens),
      latent_dim_(latent_dim),
      n_kda_(n_kda),
      kda_shape_(kda_shape),
      latents_(size_t(std::max(n_mla, 0))) {
  DS_CHECK(n_mla >= 0 && n_kda >= 0 && page_tokens > 0 && latent_dim > 0,
           "device pools: {} MLA layers, pages of {} x {}, {} KDA layers", n_mla, page_tokens, latent_dim,
           n_kda);
}

void DevicePools::reserve_pages(int64_t page) {
  DS_CHECK(page >= 0, "device pools: page id {}", page);
  if (page < n_pages_) return;
  n_pages_ = grown(n_pages_, page);
  for (Buffer& b : latents_)
    b = regrow(b, device_, pinned_, n_pages_ * page_floats() * int64_t(sizeof(float)));
}

void DevicePools::reserve_slots(int64_t slot) {
  DS_CHECK(slot >= 0, "device pools: slot id {}", slot);
  if (slot < n_slots_) return;
  n_slots_ = grown(n_slots_, slot);
  slots_ = regrow(slots_, device_, pinned_, n_slots_ * slot_floats() * int64_t(sizeof(float)));
}

void DevicePools::copy_page(int64_t dst_id, DevicePools& src, int64_t src_id) {
  DS_CHECK(src.latents_.size() == latents_.size() && src.page_floats() == page_floats(),
           "device pools: page copy between pools of different shapes");
  reserve_pages(dst_id);
  src.reserve_pages(src_id);
  const int64_t bytes = page_floats() * int64_t(sizeof(float));
  for (size_t i = 0; i < latents_.size(); ++i)
    copy_bytes(latents(int(i)) + dst_id * page_floats(), device_,
               src.latents(int(i)) + src_id * page_floats(), src.device_, bytes);
}

void DevicePools::copy_slot(int64_t dst_id, DevicePools& src, int64_t src_id) {
  DS_CHECK(src.slot_floats() == slot_floats(), "device pools: slot copy between pools of different shapes");
  reserve_slots(dst_id);
  src.reserve_slots(src_id);
  copy_bytes(slot(dst_id), device_, src.slot(src_id), src.device_, slot_floats() * int64_t(sizeof(float)));
}

void DevicePools::zero_slot(int64_t s) {
  reserve_slots(s);
  zero_bytes(slot(s), device_, slot_floats() * int64_t(sizeof(float)));
}

int64_t DevicePools::bytes() const {
  int64_t n = slots_.bytes();
  for (const Buffer& b : latents_) n += b.bytes();
  return n;
}

}  // namespace ds
