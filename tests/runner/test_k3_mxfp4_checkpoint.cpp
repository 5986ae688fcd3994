// End to end through the loader and the runner: the k3-tiny checkpoint with its routed-expert
// w1/w3 stored as compressed-tensors MXFP4 (weight_packed + weight_scale) must give the same
// logits as the same checkpoint with those experts stored as bf16 of the exact dequantised values.
// (w2 is [128, 48]; 48 inputs are not a whole number of 32-groups, so it stays bf16 in both.)
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "golden_fixture.h"

namespace ds {
namespace {

namespace fs = std::filesystem;
using namespace ds::testing;

const std::string kSrc = DS_TEST_DATA_DIR "/golden/k3-tiny";

struct OutTensor {
  std::string dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

void write_checkpoint(const fs::path& dir, const std::map<std::string, OutTensor>& ts) {
  fs::create_directories(dir);
  fs::copy_file(kSrc + "/config.json", dir / "config.json", fs::copy_options::overwrite_existing);
  nlohmann::json h = nlohmann::json::object();
  size_t off = 0;
  for (const auto& [name, t] : ts) {
    h[name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {off, off + t.bytes.size()}}};
    off += t.bytes.size();
  }
  std::string head = h.dump();
  head.resize((head.size() + 7) / 8 * 8, ' ');
  std::ofstream f(dir / "model.safetensors", std::ios::binary);
  const uint64_t n = head.size();
  f.write(reinterpret_cast<const char*>(&n), 8);
  f.write(head.data(), std::streamsize(head.size()));
  for (const auto& [name, t] : ts)
    f.write(reinterpret_cast<const char*>(t.bytes.data()), std::streamsize(t.bytes.size()));
  ASSERT_TRUE(f.good());
}

// Nearest E2M1 code (bit 3 = sign) of v, |v| clamped to 6.
uint8_t e2m1_code(float v) {
  static constexpr float kMag[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  const float a = std::fabs(v);
  int best = 0;
  for (int i = 1; i < 8; ++i)
    if (std::fabs(kMag[i] - a) < std::fabs(kMag[best] - a)) best = i;
  return uint8_t(best | (v < 0 ? 8 : 0));
}

// Quantises W bf16 [out, in] to MXFP4 (scale 2^(floor(log2 max|group|) - 2), OCP MX) and returns
// the packed / scale tensors plus the bf16 tensor of the exact dequantised values.
void quantise(const TensorRef& w, OutTensor& packed, OutTensor& scale, OutTensor& deq) {
  const int64_t out = w.shape[0], in = w.shape[1];
  packed = {"U8", {out, in / 2}, std::vector<uint8_t>(size_t(out * in / 2))};
  scale = {"U8", {out, in / 32}, std::vector<uint8_t>(size_t(out * in / 32))};
  deq = {"BF16", {out, in}, std::vector<uint8_t>(size_t(out * in * 2))};
  static constexpr float kMag[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  for (int64_t r = 0; r < out; ++r)
    for (int64_t g = 0; g < in / 32; ++g) {
      float v[32], mx = 0.0f;
      for (int i = 0; i < 32; ++i) {
        uint16_t b;
        std::memcpy(&b, w.data + 2 * (r * in + g * 32 + i), 2);
        v[i] = bf16_to_f32(b), mx = std::max(mx, std::fabs(v[i]));
      }
      const int e = mx > 0 ? int(std::floor(std::log2(mx))) - 2 : -127;
      const int s = std::clamp(e + 127, 0, 254);
      scale.bytes[size_t(r * in / 32 + g)] = uint8_t(s);
      const float sc = std::ldexp(1.0f, s - 127);
      for (int i = 0; i < 32; ++i) {
        const uint8_t c = e2m1_code(v[i] / sc);
        uint8_t& byte = packed.bytes[size_t(r * in / 2 + g * 16 + i / 2)];
        byte = uint8_t(i % 2 == 0 ? (byte & 0xf0) | c : (byte & 0x0f) | (c << 4));  // low nibble first
        const float d = (c & 8 ? -1.0f : 1.0f) * kMag[c & 7] * sc;
        const uint16_t b = f32_to_bf16(d);
        ASSERT_EQ(bf16_to_f32(b), d);  // every MXFP4 value is exact in bf16
        std::memcpy(deq.bytes.data() + 2 * (r * in + g * 32 + i), &b, 2);
      }
    }
}

TEST(K3Mxfp4Checkpoint, LogitsEqualDequantisedBf16Checkpoint) {
  const auto src = SafetensorsFile::open(kSrc + "/model.safetensors");
  std::map<std::string, OutTensor> q, d;
  int n_quantised = 0;
  for (const auto& [name, t] : src->tensors()) {
    const bool expert = name.find(".experts.") != std::string::npos &&
                        (name.ends_with("w1.weight") || name.ends_with("w3.weight"));
    if (!expert) {
      OutTensor copy{std::string(dtype_name(t.dtype)), t.shape,
                     std::vector<uint8_t>(t.data, t.data + t.n_bytes)};
      q[name] = copy;
      d[name] = std::move(copy);
      continue;
    }
    const std::string base = name.substr(0, name.size() - std::string(".weight").size());
    quantise(t, q[base + ".weight_packed"], q[base + ".weight_scale"], d[name]);
    ++n_quantised;
  }
  ASSERT_EQ(n_quantised, 4 * 16 * 2);  // 4 MoE layers x 16 experts x {w1, w3}
  const fs::path root = fs::temp_directory_path() / ("ds_k3_mxfp4_" + std::to_string(::getpid()));
  write_checkpoint(root / "mxfp4", q);
  write_checkpoint(root / "bf16", d);
  std::vector<float> lq, ld;
  {
    const auto rq = ModelRunner::load((root / "mxfp4").string()),
               rd = ModelRunner::load((root / "bf16").string());
    const auto golden = SafetensorsFile::open(kSrc + "/golden.safetensors");
    const TensorRef* t = golden->find("prompt_65.input_ids");
    ASSERT_TRUE(t != nullptr && t->dtype == DType::I32);
    std::vector<int32_t> ids(size_t(t->numel()));
    std::memcpy(ids.data(), t->data, ids.size() * 4);
    for (auto* p : {&lq, &ld}) {
      const ModelRunner& r = p == &lq ? *rq : *rd;
      SequenceState st = r.new_sequence();
      ForwardBatch b;
      b.seqs.push_back({ids, &st, LogitsWant::All, {}});
      *p = r.forward(b).logits[0];
    }
  }
  fs::remove_all(root);
  expect_close(lq, ld, kLogitAtol, kLogitRtol, "k3.mxfp4_vs_dequantised_bf16");
}

}  // namespace
}  // namespace ds
