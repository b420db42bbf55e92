// `stasis`: one CLI11 subcommand per entry of the command table. Every failure ends as one line
// on stderr, `stasis <subcommand>: <message>`, and exit status 1.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "cli/command.h"
#include "common/error.h"
#include "image/format.h"

namespace {

int fail(const std::string& where, std::string message) {
  for (char& c : message) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  fmt::print(stderr, "{}: {}\n", where, message);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  using stasis::cli::Command;
  CLI::App app{"Stasis: transparent checkpoint-restart for Linux processes.", "stasis"};
  app.set_version_flag("--version", fmt::format("stasis {} (image format {})", STASIS_VERSION,
                                                STASIS_IMAGE_VERSION));
  app.require_subcommand(1);

  struct Entry {
    std::unique_ptr<Command> command;
    CLI::App* app;
  };
  std::vector<Entry> entries;
  for (const auto& make : stasis::cli::all_commands()) {
    std::unique_ptr<Command> command = make();
    CLI::App* sub = app.add_subcommand(command->name(), command->summary());
    command->configure(*sub);
    entries.push_back({std::move(command), sub});
  }

  auto where = [&]() -> std::string {
    for (const Entry& entry : entries) {
      if (entry.app->parsed()) return fmt::format("stasis {}", entry.command->name());
    }
    return "stasis";
  };

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // CLI11 says "a subcommand is required" for a misspelt one; name the culprit instead.
    bool known = std::any_of(entries.begin(), entries.end(), [&](const Entry& entry) {
      return argc > 1 && entry.command->name() == std::string_view(argv[1]);
    });
    if (argc > 1 && argv[1][0] != '-' && !known) {
      return fail("stasis", fmt::format("unknown subcommand '{}' (see --help)", argv[1]));
    }
    return fail(where(), std::string(e.what()) + " (see --help)");
  }

  for (const Entry& entry : entries) {
    if (!entry.app->parsed()) continue;
    try {
      return entry.command->run();
    } catch (const std::exception& e) {
      return fail(where(), e.what());
    }
  }
  return fail("stasis", "no subcommand given (see --help)");
}
