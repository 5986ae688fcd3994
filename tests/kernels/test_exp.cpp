// The vectorised exp (exp_array, used by the KDA and attention kernels) against std::exp over its
// whole range, and its clamping of out-of-range inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/cpu/activation.h"

namespace ds::cpu {
namespace {

TEST(Simd, ExpMatchesStdExp) {
  std::vector<float> x, y;
  for (float v = -100.0f; v <= 88.0f; v += 0.0137f) x.push_back(v);
  for (float v : {0.0f, -0.0f, 1e-8f, -1e-8f, 88.5f, -87.0f}) x.push_back(v);
  y.resize(x.size());
  exp_array(x.data(), int64_t(x.size()), y.data());
  for (size_t i = 0; i < x.size(); ++i) {
    const double ref = std::exp(double(x[i]));
    if (ref < 1.2e-38) {  // denormal results: absolute error only
      EXPECT_NEAR(y[i], ref, 1e-44) << x[i];
    } else {
      EXPECT_NEAR(y[i] / ref, 1.0, 5e-7) << x[i];
    }
  }
  float big[3] = {-1000.0f, -200.0f, -104.0f}, out[3];
  exp_array(big, 3, out);
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_EQ(out[1], 0.0f);
  EXPECT_LT(out[2], 1e-44f);
}

}  // namespace
}  // namespace ds::cpu
