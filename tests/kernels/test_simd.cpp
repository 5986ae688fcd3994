// The vectorised exp used by the KDA kernels against std::exp (relative error, whole range).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/cpu/simd.h"

namespace ds {
namespace {

TEST(Simd, ExpMatchesStdExp) {
  std::vector<float> x, y;
  for (float v = -100.0f; v <= 88.0f; v += 0.0137f) x.push_back(v);
  for (float v : {0.0f, -0.0f, 1e-8f, -1e-8f, 88.5f, -87.0f}) x.push_back(v);
  y.resize(x.size());
  simd::exp_array(x.data(), int64_t(x.size()), y.data());
  for (size_t i = 0; i < x.size(); ++i) {
    const double ref = std::exp(double(x[i]));
    if (ref < 1.2e-38) {  // denormal results: absolute error only
      EXPECT_NEAR(y[i], ref, 1e-44) << x[i];
    } else {
      EXPECT_NEAR(y[i] / ref, 1.0, 5e-7) << x[i];
    }
  }
  float big[3] = {-1000.0f, -200.0f, -104.0f}, out[3];
  simd::exp_array(big, 3, out);
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_EQ(out[1], 0.0f);
  EXPECT_LT(out[2], 1e-44f);
}

}  // namespace
}  // namespace ds
