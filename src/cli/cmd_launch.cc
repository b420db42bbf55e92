// `stasis launch -- PROGRAM [ARGS...]`: become PROGRAM (same pid, same exit status) with the
// runtime preloaded and a coordinator to talk to.
#include <elf.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <optional>
#include <fmt/format.h>

#include "cli/checkpoint_on_signal.h"
#include "cli/command.h"
#include "coordinator/command_environment.h"
#include "image/compression.h"
#include "cli/coord_client.h"
#include "common/error.h"
#include "plugins/mpi_split/restore_mpi_rank.h"
#include "protocol/wire.h"
#include "relay/relay.h"

extern char** environ;

namespace stasis::cli {
namespace {

// PATH lookup as execvp does it, so we can inspect the file before exec'ing it.
std::string resolve_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(start, end - start);
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  throw Error(fmt::format("{}: command not found", name));
}

// The runtime enters a program through LD_PRELOAD, which a statically linked ELF ignores.
void refuse_static_binary(const std::string& program) {
  int fd = open(program.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(fmt::format("cannot open {}: {}", program, std::strerror(errno)));
  Elf64_Ehdr eh;
  bool is_elf = pread(fd, &eh, sizeof eh, 0) == sizeof eh && std::memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0;
  bool has_interp = false;
  if (is_elf) {
    for (int i = 0; i < eh.e_phnum; i++) {
      Elf64_Phdr ph;
      if (pread(fd, &ph, sizeof ph, static_cast<off_t>(eh.e_phoff + i * sizeof ph)) != sizeof ph) break;
      if (ph.p_type == PT_INTERP) has_interp = true;
    }
  }
  close(fd);
  if (is_elf && !has_interp)
    throw Error(fmt::format("{} is statically linked; Stasis enters programs through the dynamic "
                            "loader (LD_PRELOAD), so it can only run dynamically linked programs",
                            program));
}

// A process started on another host joins the computation's coordinator, which must answer
// from there; starting a second coordinator would split the computation in two.
std::string joined_coordinator_secret(const CoordAddress& addr) {
  if (!coordinator_answers(addr))
    throw Error(fmt::format("--join: no coordinator answers at {} from this host (launch the "
                            "computation with --coord ADDR:PORT, an address every host reaches)",
                            addr.str()));
  std::string secret = find_secret(addr);
  if (secret.empty())
    throw Error(fmt::format("--join: the coordinator at {} answers but its secret is not readable "
                            "at {} (the hosts must share STASIS_RUNTIME_DIR or $HOME/.stasis)",
                            addr.str(), secret_path(addr)));
  // The runtime's own lines never reach the program's streams (src/runtime/util.cc), so a
  // process the coordinator would refuse (a wrong secret) is refused here, by the command, on its
  // stderr: run outside the computation, it would be missing from every checkpoint.
  try {
    CoordConnection probe(addr);
  } catch (const Error& e) {
    throw Error(fmt::format("--join: the coordinator at {} refused this process: {}", addr.str(), e.what()));
  }
  return secret;
}

// Starts `stasis relay --daemon` for the coordinator at `addr` unless one already serves this
// host, and waits (2 s at most) until it listens. Not fatal: without a relay, processes join the
// coordinator directly.
void start_host_relay(const CoordAddress& addr, const std::string& secret) {
  std::string name = relay::socket_name(addr);
  auto listening = [&] {
    int fd = stasis_connect_abstract(name.c_str());
    if (fd >= 0) close(fd);
    return fd >= 0;
  };
  if (listening()) return;
  pid_t child = fork();
  if (child == 0) {
    unsetenv("LD_PRELOAD");
    unsetenv("STASIS_LAUNCH_PID");
    setenv("STASIS_SECRET", secret.c_str(), 1);
    std::string exe = self_executable(), coord = addr.str();
    execl(exe.c_str(), exe.c_str(), "relay", "--daemon", "--coord", coord.c_str(), nullptr);
    _exit(127);
  }
  if (child < 0) return;
  waitpid(child, nullptr, 0);
  for (int tries = 0; tries < 400 && !listening(); tries++) usleep(5000);
}

class LaunchCommand : public Command {
 public:
  const char* name() const override { return "launch"; }
  const char* summary() const override {
    return "Run a program under checkpoint control (starts a coordinator if none answers)";
  }
  void configure(CLI::App& app) override {
    app.add_option("--coord", coord_, "Coordinator HOST:PORT (default $STASIS_COORD, in a Slurm allocation its first node:7781, else 127.0.0.1:7781)");
    app.add_option("--ckpt-dir", ckpt_dir_, "Checkpoint directory (default $STASIS_CKPT_DIR or ./stasis-ckpt)");
    app.add_option("--interval", interval_, "Checkpoint every S seconds (for a coordinator it starts)")
        ->check(CLI::NonNegativeNumber);
    app.add_option("--compress", compress_, "Image compression: zstd (default) or none")
        ->check(CLI::IsMember(image::compression_names()));
    app.add_flag("--incremental", incremental_,
                 "After the first checkpoint, write only the pages the program changed since the "
                 "previous one (images chain to their parent; see docs/user-guide.md)");
    app.add_option("--full-every", full_every_,
                   "With --incremental: a full image after every K incremental ones (default 8)")
        ->check(CLI::PositiveNumber);
    app.add_option("--ib", ib_, "Checkpoint InfiniBand verbs programs (the InfiniBand plugin) over "
                                "'system' (the installed libibverbs) or 'soft' (softib, Stasis's "
                                "user-space HCA; see docs/softib.md and docs/infiniband.md)")
        ->check(CLI::IsMember({"system", "soft"}));
    app.add_option("--plugin", plugins_, "Load a Stasis plugin (a shared library) into the program; repeatable")
        ->check(CLI::ExistingFile);
    app.add_flag("--save-files{*}", save_files_,
                 "Also save the contents of the regular files the program has open (those whose path "
                 "matches the glob PATTERN, all without one), so that restart can put back missing or "
                 "changed ones (default $STASIS_SAVE_FILES)")
        ->type_name("[=PATTERN]");
    app.add_flag("--relay", relay_,
                 "Processes join through a relay per host (the first one there starts it) that "
                 "talks to the coordinator for them in batches: for many processes per host "
                 "(default: $STASIS_RELAY=1)");
    app.add_flag("--join", join_,
                 "Join the running coordinator at --coord/$STASIS_COORD, never start one (what a "
                 "remote launch runs on the other host; see docs/user-guide.md, Running across hosts)");
    app.add_option("--checkpoint-on-signal", checkpoint_signal_,
                   "On this signal (e.g. USR1, what `sbatch --signal=B:USR1@120` sends before the time "
                   "limit), checkpoint and stop the computation, then exit with 128 + its number; "
                   "`launch` stays as the program's parent to wait for it (docs/clusters.md)")
        ->type_name("SIG");
    app.add_flag("--x11", x11_,
                 "Relay the program's X connections through a proxy of the computation, so that a "
                 "restart gives them to the X server its own DISPLAY names (a windowed or OpenGL "
                 "program on an X server outside the computation; src/plugins/x11/README.md)");
    app.add_flag("--mpi", mpi_,
                 "Split-process MPI (src/plugins/mpi_split/README.md): PROGRAM is an MPI launcher (mpirun, "
                 "mpiexec) of a program built against Stasis's abi/mpi.h or Open MPI's own mpi.h (through "
                 "Stasis's Open MPI front), or that program itself in each task of `srun --mpi=pmix|pmi2 ... "
                 "stasis launch --mpi -- PROGRAM`; the launcher stays outside the "
                 "computation, each rank is checkpointed without its MPI library (the lower half it starts "
                 "itself)");
    app.add_option("program", argv_, "PROGRAM [ARGS...] (after --)")->required();
    app.prefix_command(false);
  }
  // The coordinator, told that a program is coming (ensure_coordinator_expecting). A coordinator
  // this launch may not command (another host's, whose secret is not here) is used as before.
  static std::string announced_launch(const CoordAddress& addr, const CoordinatorOptions& options) {
    try {
      return ensure_coordinator_expecting(addr, options, STASIS_CMD_EXPECT_LAUNCH);
    } catch (const Error&) {
      return ensure_coordinator(addr, options);
    }
  }

  int run() override {
    std::optional<CheckpointOnSignal> on_signal;
    if (!checkpoint_signal_.empty()) on_signal.emplace(checkpoint_signal_);
    CoordAddress addr = coordinator_address(coord_);
    CoordinatorOptions options;
    const CommandEnvironment env = CommandEnvironment::read();
    std::string dir = ckpt_dir_.empty() ? env.ckpt_dir : ckpt_dir_;
    if (!dir.empty()) options.ckpt_dir = std::filesystem::absolute(dir).lexically_normal().string();
    std::string compress = compress_.empty() ? env.compress : compress_;
    if (!compress.empty() && !image::is_compression_name(compress))
      throw Error(fmt::format("STASIS_COMPRESS={} is not {}", compress, image::kCompressionChoices));
    options.compress = compress;
    options.interval = interval_;
    std::string program = resolve_program(argv_[0]);
    refuse_static_binary(program);
    std::string runtime = runtime_library_path();
    std::string secret = join_ ? joined_coordinator_secret(addr) : announced_launch(addr, options);
    // This host's relay, before the program runs, so that every process after it joins there
    // (`launch --join` on other hosts starts theirs; the runtime starts one where none is).
    const char* relay_setting = getenv("STASIS_RELAY");
    if (relay_ || (relay_setting && std::string(relay_setting) == "1")) {
      relay_ = true;
      start_host_relay(addr, secret);
    }
    // From here on in the child: STASIS_LAUNCH_PID and the preload are the launched process's.
    if (on_signal) on_signal->fork_watcher(addr);
    // A process a remote launcher started on another host joins with its launch's --ib.
    if (ib_.empty() && (env.ib == "soft" || env.ib == "system")) ib_ = env.ib;

    const char* preload = getenv("LD_PRELOAD");
    std::string preload_value = runtime + (preload && *preload ? std::string(":") + preload : "");
    // The InfiniBand plugin goes first: it interposes verbs calls in front of the runtime's
    // own record of open devices and of libibverbs (docs/infiniband.md).
    if (!ib_.empty()) {
      std::string ib_plugin = ib_plugin_library_path();
      preload_value = ib_plugin + ":" + preload_value;
      plugins_.push_back(ib_plugin);
    }
    // With --x11 the OpenGL plugin goes first: it interposes libGL's entry points, recording the
    // GL state an indirect context keeps in the X server (src/plugins/opengl).
    if (x11_) {
      std::string gl_plugin = opengl_plugin_library_path();
      if (!gl_plugin.empty()) {
        preload_value = gl_plugin + ":" + preload_value;
        plugins_.push_back(gl_plugin);
      }
    }
    setenv("LD_PRELOAD", preload_value.c_str(), 1);
    setenv("STASIS_COORD", addr.str().c_str(), 1);
    setenv("STASIS_SECRET", secret.c_str(), 1);
    setenv("STASIS_LAUNCH_PID", std::to_string(getpid()).c_str(), 1);
    setenv("STASIS_EXE", self_executable().c_str(), 1);  // what a remote launch runs over there
    if (!options.ckpt_dir.empty()) setenv("STASIS_CKPT_DIR", options.ckpt_dir.c_str(), 1);
    if (!compress.empty()) setenv("STASIS_COMPRESS", compress.c_str(), 1);
    if (!plugins_.empty()) {
      std::string list = env.plugins;
      for (const auto& plugin : plugins_)
        list += (list.empty() ? "" : ":") + std::filesystem::absolute(plugin).string();
      setenv("STASIS_PLUGINS", list.c_str(), 1);
    }
    if (!ib_.empty()) setenv("STASIS_IB", ib_.c_str(), 1);
    if (ib_ == "soft") {
      const char* path = getenv("LD_LIBRARY_PATH");
      std::string dir = softib_library_dir();
      setenv("LD_LIBRARY_PATH", (dir + (path && *path ? ":" + std::string(path) : "")).c_str(), 1);
    }
    if (!save_files_.empty()) setenv("STASIS_SAVE_FILES", save_files_.c_str(), 1);
    if (mpi_) {
      // The launcher does not join; each rank does, as the root of its own tree (split_launch.h).
      setenv("STASIS_LAUNCH_PID", "mpi-rank", 1);
      setenv("STASIS_MPI_LOWER_MODE", "program", 1);
      // A program built against Open MPI's mpi.h loads Stasis's Open MPI front as its
      // libmpi.so.40 (src/plugins/mpi_split/ompi_abi/README.md); its lower half does not.
      std::filesystem::path front = std::filesystem::path(runtime).parent_path() / "ompi_abi";
      if (std::filesystem::exists(front / "libmpi.so.40")) {
        const char* path = getenv("LD_LIBRARY_PATH");
        setenv("LD_LIBRARY_PATH", (front.string() + (path && *path ? ":" + std::string(path) : "")).c_str(), 1);
        setenv("STASIS_MPI_OMPI_ABI_DIR", front.c_str(), 1);
      }
    }
    if (interval_ > 0) setenv("STASIS_INTERVAL", fmt::format("{}", interval_).c_str(), 1);
    if (incremental_) setenv("STASIS_INCREMENTAL", "1", 1);
    if (relay_) setenv("STASIS_RELAY", "1", 1);
    if (full_every_ > 0) setenv("STASIS_FULL_EVERY", std::to_string(full_every_).c_str(), 1);

    if (x11_) {  // the proxy runs the program as its child (src/plugins/x11/proxy)
      setenv("STASIS_X11_PROXY", "1", 1);
      argv_.insert(argv_.begin(), x11_proxy_path());
      program = argv_[0];
    }
    if (mpi_) restart::forward_to_remote_ranks(argv_);  // after every STASIS_* is set
    std::vector<char*> args;
    for (auto& a : argv_) args.push_back(a.data());
    args.push_back(nullptr);
    execv(program.c_str(), args.data());
    throw Error(fmt::format("cannot execute {}: {}", program, std::strerror(errno)));
  }

 private:
  std::string coord_, ckpt_dir_, compress_, ib_, save_files_, checkpoint_signal_;
  double interval_ = 0;
  bool incremental_ = false, join_ = false, x11_ = false, mpi_ = false, relay_ = false;
  unsigned full_every_ = 0;
  std::vector<std::string> argv_, plugins_;
};

}  // namespace

std::unique_ptr<Command> make_launch_command() { return std::make_unique<LaunchCommand>(); }

}  // namespace stasis::cli
