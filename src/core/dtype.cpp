#include "core/dtype.h"

#include <array>
#include <cmath>

namespace ds {

namespace {
struct DTypeInfo {
  DType type;
  std::string_view name;
  size_t size;
};
constexpr std::array<DTypeInfo, 8> kInfo{{
    {DType::F32, "F32", 4},
    {DType::BF16, "BF16", 2},
    {DType::F16, "F16", 2},
    {DType::I32, "I32", 4},
    {DType::I64, "I64", 8},
    {DType::U8, "U8", 1},
    {DType::I8, "I8", 1},
    {DType::F8_E4M3, "F8_E4M3", 1},
}};
}  // namespace

size_t dtype_size(DType t) {
  return kInfo[size_t(t)].size;
}
std::string_view dtype_name(DType t) {
  return kInfo[size_t(t)].name;
}

bool dtype_from_name(std::string_view name, DType* out) {
  for (const auto& i : kInfo) {
    if (i.name == name) {
      *out = i.type;
      return true;
    }
  }
  return false;
}

float f16_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t(h >> 15) << 31;
  const int exp = (h >> 10) & 0x1f;
  const uint32_t mant = h & 0x3ff;
  float f;
  if (exp == 0) {
    f = std::ldexp(float(mant), -24);  // zero or subnormal
  } else if (exp == 31) {
    f = mant ? NAN : INFINITY;
  } else {
    f = std::ldexp(float(mant | 0x400), exp - 25);
  }
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u |= sign;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t f32_to_f16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint16_t sign = uint16_t((u >> 16) & 0x8000);
  const float a = std::fabs(f);
  if (std::isnan(f)) return sign | 0x7e00;
  if (a >= 65520.f) return sign | 0x7c00;
  if (a < 6.103515625e-05f) {  // subnormal: round(a / 2^-24)
    return sign | uint16_t(std::nearbyint(a * 16777216.f));
  }
  int e;
  const float m = std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  uint32_t mant = uint32_t(std::nearbyint((m * 2.f - 1.f) * 1024.f));
  int exp = e - 1 + 15;
  if (mant == 1024) {
    mant = 0;
    ++exp;
  }
  if (exp >= 31) return sign | 0x7c00;
  return sign | uint16_t(exp << 10) | uint16_t(mant);
}

}  // namespace ds
