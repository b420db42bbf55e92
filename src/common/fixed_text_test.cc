#include "common/fixed_text.h"

#include <gtest/gtest.h>

#include <climits>
#include <cstring>
#include <string>

using stasis::FixedText;

TEST(FixedText, AppendsTextAndNumbersAfterWhatIsThere) {
  char out[64] = "/gen";
  FixedText(out, sizeof out) << "/." << "shm" << "-" << 42u << "-" << -7 << "-" << 18446744073709551615ull;
  EXPECT_EQ(std::string(out), "/gen/.shm-42--7-18446744073709551615");
}

TEST(FixedText, WritesHexadecimal) {
  char out[32] = "";
  FixedText(out, sizeof out).hex(0xdeadbeef).hex(0);
  EXPECT_EQ(std::string(out), "0xdeadbeef0x0");
}

TEST(FixedText, TruncatesAndStaysTerminated) {
  char out[8];
  std::memset(out, 'x', sizeof out);
  out[0] = 0;
  FixedText text(out, 6);
  text << "abcdefgh" << 123;
  EXPECT_EQ(std::string(out), "abcde");
  EXPECT_EQ(text.size(), 5u);
  EXPECT_EQ(out[6], 'x');  // nothing past the capacity
}

TEST(FixedText, PrintsTheMostNegativeNumber) {
  char out[32] = "";
  FixedText(out, sizeof out) << LLONG_MIN;
  EXPECT_EQ(std::string(out), "-9223372036854775808");
}
