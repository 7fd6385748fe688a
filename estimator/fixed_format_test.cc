#include "estimator/fixed_format.h"

#include <cmath>
#include <cstdio>
#include <random>

#include "gtest/gtest.h"

namespace memgate {
namespace {

std::string Printf(double value, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", digits, value);
  return buffer;
}

TEST(FixedFormatTest, MatchesPrintfOnTypicalValues) {
  for (double v : {0.0, 27.2, 27.195, 37.58, 0.005, 1.0 / 3, 94.0, 123456.789,
                   -3.25, 1e-9}) {
    for (int digits : {0, 1, 2, 4}) {
      // printf rounds the binary value half-to-even; llround rounds half
      // away from zero: they can differ only on exact binary halves.
      const std::string ours = Fixed(v, digits);
      EXPECT_NEAR(std::stod(ours), std::stod(Printf(v, digits)),
                  std::pow(10.0, -digits) * 1.0001)
          << v << " " << digits;
      EXPECT_EQ(ours.size(), Printf(v, digits).size()) << v << " " << digits;
    }
  }
  EXPECT_EQ(Fixed(27.2, 2), "27.20");
  EXPECT_EQ(Fixed(0.05, 4), "0.0500");
  EXPECT_EQ(Fixed(-0.5, 0).substr(0, 1), "-");
}

TEST(FixedFormatTest, RandomValuesAgreeWithPrintf) {
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> dist(0, 1e6);
  for (int i = 0; i < 10000; ++i) {
    const double v = dist(rng);
    EXPECT_EQ(Fixed(v, 2), Printf(v, 2)) << v;
  }
}

TEST(FixedFormatTest, HugeAndNonFiniteFallBackToPrintf) {
  EXPECT_EQ(Fixed(1e300, 2), Printf(1e300, 2));
  EXPECT_EQ(Fixed(INFINITY, 2), Printf(INFINITY, 2));
  EXPECT_EQ(Fixed(NAN, 2), Printf(NAN, 2));
}

}  // namespace
}  // namespace memgate
