#include "plugins/ssh/relay/ssh_command_line.h"

#include <gtest/gtest.h>

namespace stasis::ssh {
namespace {

TEST(SshCommandLine, KeepsOptionsUserHostAndCommand) {
  SshCommandLine ssh;
  ASSERT_EQ(parse_ssh_command_line({"ssh", "-p", "2222", "-oBatchMode=yes", "-nT", "alice@node2", "echo", "a b"}, ssh), "");
  EXPECT_EQ(ssh.host, "node2");
  EXPECT_EQ(ssh.user, "alice");
  EXPECT_TRUE(ssh.no_stdin);
  EXPECT_EQ(ssh.command_text(), "echo a b");
  EXPECT_EQ(ssh.launcher_words(),
            (std::vector<std::string>{"ssh", "-p", "2222", "-oBatchMode=yes", "-nT", "-l", "alice"}));
}

TEST(SshCommandLine, ValueOptionsAreNotTheHost) {
  SshCommandLine ssh;
  ASSERT_EQ(parse_ssh_command_line({"ssh", "-l", "bob", "-i", "/k", "-o", "Port 22", "--", "h", "cmd"}, ssh), "");
  EXPECT_EQ(ssh.host, "h");
  EXPECT_EQ(ssh.user, "");
  EXPECT_FALSE(ssh.no_stdin);
  EXPECT_EQ(ssh.launcher_words(), (std::vector<std::string>{"ssh", "-l", "bob", "-i", "/k", "-o", "Port 22"}));
}

TEST(SshCommandLine, RefusesWhatTheRelayCannotCarry) {
  SshCommandLine ssh;
  EXPECT_EQ(parse_ssh_command_line({"ssh", "-t", "h", "top"}, ssh), "-t (a pseudo-terminal)");
  EXPECT_EQ(parse_ssh_command_line({"ssh", "-xt", "h", "top"}, ssh), "-t (a pseudo-terminal)");
  EXPECT_EQ(parse_ssh_command_line({"ssh", "-L", "80:x:80", "h", "c"}, ssh), "-L (port forwarding)");
  EXPECT_EQ(parse_ssh_command_line({"ssh", "-o", "LocalForward=1 x:2", "h", "c"}, ssh),
            "-o LocalForward (port forwarding)");
  EXPECT_EQ(parse_ssh_command_line({"ssh", "-oRequestTTY=force", "h", "c"}, ssh),
            "-o RequestTTY=force (a pseudo-terminal)");
  EXPECT_EQ(parse_ssh_command_line({"ssh", "-oRequestTTY=no", "h", "c"}, ssh), "");
  EXPECT_EQ(parse_ssh_command_line({"ssh", "h"}, ssh), "no remote command (an interactive login)");
  EXPECT_EQ(parse_ssh_command_line({"ssh", "-p"}, ssh), "-p without its value");
}

}  // namespace
}  // namespace stasis::ssh
