// DISPLAY values the X proxy and `stasis restart` accept, and the messages for the others.
#include "plugins/x11/display.h"

#include <gtest/gtest.h>

namespace stasis::x11 {
namespace {

TEST(DisplayNumber, LocalForms) {
  std::string why;
  EXPECT_EQ(display_number(":0", why), 0);
  EXPECT_EQ(display_number(":17", why), 17);
  EXPECT_EQ(display_number(":5.1", why), 5);
  EXPECT_EQ(display_number("unix:42", why), 42);
  EXPECT_EQ(why, "");
}

TEST(DisplayNumber, RefusedNamingTheValue) {
  for (const char* bad : {"", ":", "localhost:0", "host:3.0", ":x", ":12a", ":99999999", "0"}) {
    std::string why;
    EXPECT_EQ(display_number(bad, why), -1) << bad;
    EXPECT_NE(why.find(std::string("DISPLAY=") + bad), std::string::npos) << why;
  }
}

TEST(ConnectDisplay, NoServerNamesTheSocket) {
  std::string why;
  EXPECT_EQ(connect_display(":65000", why), -1);
  EXPECT_NE(why.find("DISPLAY=:65000"), std::string::npos) << why;
  EXPECT_NE(why.find("/tmp/.X11-unix/X65000"), std::string::npos) << why;
}

}  // namespace
}  // namespace stasis::x11
