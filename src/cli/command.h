// Every `stasis` subcommand is one class in its own file, registered in one table (command.cc);
// `stasis --help` is generated from that table.
#pragma once
#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace stasis::cli {

class Command {
 public:
  virtual ~Command() = default;
  virtual const char* name() const = 0;
  virtual const char* summary() const = 0;
  // Declares options and positionals on `app` (a CLI11 subcommand).
  virtual void configure(CLI::App& app) = 0;
  // Runs after parsing; returns the process exit status. Throws stasis::Error for failures.
  virtual int run() = 0;
};

using CommandFactory = std::function<std::unique_ptr<Command>()>;
// The table of subcommands, in the order `stasis --help` lists them.
const std::vector<CommandFactory>& all_commands();

// Absolute path of the running `stasis` executable and of the files installed beside it.
std::string self_executable();
std::string runtime_library_path();  // libstasis_runtime.so
std::string x11_proxy_path();        // stasis-x11-proxy (launch --x11)
std::string restart_loader_path();   // stasis-loader
std::string softib_library_dir();    // the folder holding softib's libibverbs.so.1
std::string opengl_plugin_library_path();  // the OpenGL plugin (launch --x11), "" where not built
std::string ib_plugin_library_path();  // the InfiniBand plugin (libstasis_ib.so)

}  // namespace stasis::cli
