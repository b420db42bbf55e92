// The table of subcommands, and where `stasis` finds the files installed beside it.
#include "cli/command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "common/error.h"

namespace stasis::cli {

std::unique_ptr<Command> make_coordinator_command();
std::unique_ptr<Command> make_launch_command();
std::unique_ptr<Command> make_checkpoint_command();
std::unique_ptr<Command> make_restart_command();
std::unique_ptr<Command> make_status_command();
std::unique_ptr<Command> make_kill_command();
std::unique_ptr<Command> make_inspect_command();
std::unique_ptr<Command> make_relay_command();

const std::vector<CommandFactory>& all_commands() {
  static const std::vector<CommandFactory> table = {
      make_coordinator_command, make_launch_command, make_checkpoint_command, make_restart_command,
      make_status_command,      make_kill_command,   make_inspect_command,  make_relay_command,
  };
  return table;
}

std::string self_executable() {
  std::error_code error;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) throw Error(fmt::format("cannot read /proc/self/exe: {}", error.message()));
  return exe.string();
}

namespace {

// The build tree and the installed tree share a layout: bin/stasis, lib/stasis/<name>.
// A flat directory (everything beside the executable) works too.
std::string installed_file(const std::string& name) {
  std::filesystem::path exe_dir = std::filesystem::path(self_executable()).parent_path();
  const std::filesystem::path candidates[] = {exe_dir / ".." / "lib" / "stasis" / name,
                                              exe_dir / name};
  for (const auto& candidate : candidates) {
    std::error_code error;
    if (std::filesystem::is_regular_file(candidate, error)) {
      return std::filesystem::weakly_canonical(candidate, error).string();
    }
  }
  throw Error(fmt::format("cannot find {}: looked in {} and {} (is stasis installed completely?)",
                          name, candidates[0].lexically_normal().string(), candidates[1].string()));
}

}  // namespace

std::string runtime_library_path() { return installed_file("libstasis_runtime.so"); }

std::string restart_loader_path() { return installed_file("stasis-loader"); }

std::string x11_proxy_path() { return installed_file("stasis-x11-proxy"); }

std::string opengl_plugin_library_path() {
  try {
    return installed_file("libstasis_opengl.so");
  } catch (const Error&) {
    return "";  // built without the GL headers: GL programs run as before, their GL state not recorded
  }
}

std::string ib_plugin_library_path() { return installed_file("libstasis_ib.so"); }

std::string softib_library_dir() {
  std::filesystem::path exe_dir = std::filesystem::path(self_executable()).parent_path();
  std::filesystem::path dir = exe_dir / ".." / "lib" / "softib";
  std::error_code error;
  if (!std::filesystem::exists(dir / "libibverbs.so.1", error))
    throw Error(fmt::format("--ib=soft: softib is not installed ({} is missing)",
                            (dir / "libibverbs.so.1").lexically_normal().string()));
  return std::filesystem::weakly_canonical(dir, error).string();
}

}  // namespace stasis::cli
