#include "restart/slurm_allocation.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/error.h"
#include "coordinator/command_environment.h"
#include "protocol/protocol.h"
#include "restart/hosts.h"
#include "restart/loader_protocol.h"

namespace stasis::restart {

namespace {

// What `argv` prints on stdout; throws, with its stderr's gist, when it fails.
std::string output_of(const std::vector<std::string>& argv) {
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) throw Error(fmt::format("cannot run {}: {}", argv[0], std::strerror(errno)));
  pid_t child = fork();
  if (child < 0) throw Error(fmt::format("cannot run {}: {}", argv[0], std::strerror(errno)));
  if (child == 0) {
    dup2(out[1], 1);
    std::vector<char*> words;
    for (const auto& w : argv) words.push_back(const_cast<char*>(w.c_str()));
    words.push_back(nullptr);
    execvp(words[0], words.data());
    fmt::print(stderr, "stasis restart: cannot run {}: {}\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  close(out[1]);
  std::string text;
  char buffer[4096];
  for (ssize_t n; (n = read(out[0], buffer, sizeof buffer)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    text.append(buffer, static_cast<size_t>(n));
  }
  close(out[0]);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw Error(fmt::format("`{}` failed (status {})", fmt::join(argv, " "), status));
  return text;
}

std::string numeric_address(const std::string& node, const std::string& address) {
  struct addrinfo hints {};
  hints.ai_family = AF_INET;
  struct addrinfo* found = nullptr;
  if (getaddrinfo(address.c_str(), nullptr, &hints, &found) != 0 || !found)
    throw Error(fmt::format("Slurm node {}: its address {} does not resolve", node, address));
  char text[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &reinterpret_cast<struct sockaddr_in*>(found->ai_addr)->sin_addr, text, sizeof text);
  freeaddrinfo(found);
  return text;
}

}  // namespace

std::vector<SlurmNode> allocation_nodes(size_t limit) {
  const std::string nodelist = CommandEnvironment::read().slurm_job_nodelist;
  if (nodelist.empty()) throw Error("not inside a Slurm allocation (no SLURM_JOB_NODELIST)");
  std::vector<SlurmNode> nodes;
  std::istringstream names(output_of({"scontrol", "show", "hostnames", nodelist}));
  for (std::string name; nodes.size() < limit && names >> name;) {
    // One line: "NodeName=n1 Arch=... NodeAddr=10.0.0.1 NodeHostName=n1 ...".
    std::istringstream fields(output_of({"scontrol", "show", "node", "--oneliner", name}));
    std::string address;
    for (std::string field; fields >> field;)
      if (field.starts_with("NodeAddr=")) address = field.substr(9);
    if (address.empty()) throw Error(fmt::format("Slurm node {}: `scontrol show node` gives no NodeAddr", name));
    nodes.push_back({name, numeric_address(name, address)});
  }
  if (nodes.empty()) throw Error(fmt::format("SLURM_JOB_NODELIST {} names no node", nodelist));
  return nodes;
}

std::string default_coord_in_allocation() {
  const CommandEnvironment env = CommandEnvironment::read();
  if (env.slurm_job_nodelist.empty() || !env.coord.empty()) return "";
  return fmt::format("{}:{}", allocation_nodes(1).front().address, STASIS_DEFAULT_PORT);
}

bool every_part_is_a_task(const std::vector<int>& parents, const std::vector<std::string>& old_hosts) {
  std::vector<size_t> roots = part_roots(parents, old_hosts);
  for (size_t i = 0; i < roots.size(); i++)
    if (roots[i] == i && parents[i] >= 0) return false;
  return true;
}

SlurmRelaunch plan_slurm_relaunch(const std::vector<int>& parents, const std::vector<std::string>& old_hosts,
                                  const std::vector<uint32_t>& vpids, const std::vector<SlurmNode>& allocation,
                                  const std::vector<std::string>& spaces) {
  std::vector<size_t> roots = part_roots(parents, old_hosts);
  std::vector<std::string> hosts;  // the old hosts, in the checkpoint's order
  for (const auto& h : old_hosts)
    if (std::find(hosts.begin(), hosts.end(), h) == hosts.end()) hosts.push_back(h);
  if (hosts.size() > allocation.size())
    throw Error(fmt::format("the checkpoint's tasks ran on {} nodes, this allocation has {}: allocate at least "
                            "{} (salloc -N {})",
                            hosts.size(), allocation.size(), hosts.size(), hosts.size()));
  std::map<std::string, size_t> node_of;  // old host -> index in allocation
  std::set<size_t> taken;
  for (const auto& h : hosts)
    for (size_t n = 0; n < allocation.size(); n++)
      if (allocation[n].address == h && taken.insert(n).second) node_of[h] = n;
  for (const auto& h : hosts) {
    if (node_of.count(h)) continue;
    size_t n = 0;
    while (taken.count(n)) n++;
    taken.insert(n);
    node_of[h] = n;
  }
  SlurmRelaunch plan;
  std::vector<std::string> pairs;
  for (const auto& h : hosts) pairs.push_back(h + "=" + allocation[node_of[h]].address);
  plan.hosts_text = fmt::format("{}", fmt::join(pairs, ","));
  std::vector<std::tuple<size_t, uint32_t, std::string>> tasks;  // (node, vpid, space), grouped by node as srun's block layout
  for (size_t i = 0; i < roots.size(); i++)
    if (roots[i] == i) tasks.emplace_back(node_of[old_hosts[i]], vpids[i], spaces.empty() ? "" : spaces[i]);
  std::sort(tasks.begin(), tasks.end());
  for (const auto& [node, vpid, space] : tasks) {
    plan.task_vpids.push_back(vpid);
    plan.task_spaces.push_back(space);
    plan.task_nodes.push_back(allocation[node].name);
  }
  return plan;
}

void exec_srun_relaunch(const SlurmRelaunch& plan, std::vector<std::string> restart_args,
                        const std::string& checkpoint_dir) {
  // srun reads the layout from a file (SLURM_HOSTFILE, one node per rank): one in memory, which
  // srun opens through /proc and which ends with it.
  int hostfile = memfd_create("stasis-slurm-hostfile", 0);
  if (hostfile < 0) throw Error(fmt::format("cannot make srun's host file: {}", std::strerror(errno)));
  std::string layout = fmt::format("{}\n", fmt::join(plan.task_nodes, "\n"));
  if (write(hostfile, layout.data(), layout.size()) != static_cast<ssize_t>(layout.size()))
    throw Error(fmt::format("cannot write srun's host file: {}", std::strerror(errno)));
  setenv("SLURM_HOSTFILE", fmt::format("/proc/{}/fd/{}", getpid(), hostfile).c_str(), 1);
  std::vector<std::string> parts;
  for (size_t t = 0; t < plan.task_vpids.size(); t++)
    parts.push_back(PartName{plan.task_vpids[t], t < plan.task_spaces.size() ? plan.task_spaces[t] : ""}.text());
  std::vector<std::string> argv = {"srun", "--ntasks", std::to_string(plan.task_vpids.size()),
                                   "--distribution=arbitrary",
                                   std::filesystem::read_symlink("/proc/self/exe").string(), "restart",
                                   "--task-parts", fmt::format("{}", fmt::join(parts, ",")),
                                   "--hosts", plan.hosts_text};
  argv.insert(argv.end(), restart_args.begin(), restart_args.end());
  argv.push_back(checkpoint_dir);
  fmt::print(stderr, "stasis restart: {} tasks on {} through srun\n", plan.task_vpids.size(),
             fmt::join(std::set<std::string>(plan.task_nodes.begin(), plan.task_nodes.end()), ","));
  std::vector<char*> words;
  for (auto& w : argv) words.push_back(w.data());
  words.push_back(nullptr);
  execvp(words[0], words.data());
  throw Error(fmt::format("cannot run srun to restart the tasks: {}", std::strerror(errno)));
}

PartName part_of_this_task(const std::string& task_parts) {
  const std::string procid = CommandEnvironment::read().slurm_procid;
  const char* rank_text = procid.c_str();
  if (procid.empty()) throw Error("--task-parts: not a task of a Slurm job step (no SLURM_PROCID)");
  std::vector<PartName> vpids;
  std::istringstream list(task_parts);
  for (std::string item; std::getline(list, item, ',');) vpids.push_back(parse_part_name(item, "--task-parts"));
  char* end = nullptr;
  unsigned long rank = strtoul(rank_text, &end, 10);
  if (!*rank_text || *end || rank >= vpids.size())
    throw Error(fmt::format("--task-parts: rank {} ($SLURM_PROCID) has no part ({} given)", rank_text, vpids.size()));
  return vpids[rank];
}

std::vector<std::string> with_step_environment(const std::vector<std::string>& step,
                                               const std::vector<std::string>& given) {
  static const std::set<std::string> kKept = {"SLURM_PROCID",   "SLURM_LOCALID",     "SLURM_GTIDS",
                                               "SLURM_TASK_PID", "SLURM_HOSTFILE",    "SLURM_DISTRIBUTION",
                                               "SLURM_ARBITRARY_NODELIST"};
  size_t room = STASIS_MAX_SETENV_BYTES - 1;  // each assignment and its NUL, then one NUL
  for (const auto& assignment : given) room -= std::min(room, assignment.size() + 1);
  std::vector<std::string> merged, left_out;
  for (const auto& assignment : step) {
    std::string name = assignment.substr(0, assignment.find('='));
    if (kKept.count(name) || assignment.find('=') == std::string::npos) continue;
    if (assignment.size() + 1 > room) {
      left_out.push_back(name);
      continue;
    }
    room -= assignment.size() + 1;
    merged.push_back(assignment);
  }
  if (!left_out.empty())
    fmt::print(stderr, "stasis restart: the restarted task keeps its old {} (no room for more assignments)\n",
               fmt::join(left_out, ", "));
  merged.insert(merged.end(), given.begin(), given.end());
  return merged;
}

std::map<uint32_t, std::vector<SrunStep>> plan_srun_steps(
    const std::vector<uint32_t>& vpids, const std::vector<std::pair<uint32_t, uint32_t>>& sruns,
    const std::vector<std::string>& old_hosts, const std::function<std::vector<SlurmNode>()>& allocation,
    std::vector<bool>& is_task, const std::vector<std::string>& spaces) {
  is_task.assign(vpids.size(), false);
  std::map<std::pair<uint32_t, uint32_t>, std::vector<size_t>> tasks_of;  // (parent, srun) -> tasks
  std::map<uint32_t, std::string> parent_space;
  for (size_t i = 0; i < vpids.size(); i++) {
    auto [srun, parent] = sruns[i];
    auto ran_it = std::find(vpids.begin(), vpids.end(), parent);  // the process that ran srun
    const size_t ran = static_cast<size_t>(ran_it - vpids.begin());
    if (srun != 0 && ran_it != vpids.end() && sruns[ran].first == 0) {
      tasks_of[{parent, srun}].push_back(i);
      parent_space[parent] = spaces.empty() ? "" : spaces[ran];
    }
  }
  std::map<uint32_t, std::vector<SrunStep>> steps;
  if (tasks_of.empty()) return steps;
  const std::vector<SlurmNode> nodes = allocation();
  for (const auto& [key, tasks] : tasks_of) {
    std::vector<std::string> hosts;
    std::vector<uint32_t> task_vpids;
    std::vector<std::string> task_spaces;
    for (size_t i : tasks) {
      hosts.push_back(old_hosts[i]);
      task_vpids.push_back(vpids[i]);
      task_spaces.push_back(spaces.empty() ? "" : spaces[i]);
      is_task[i] = true;
    }
    SrunStep step;
    step.vpid = key.second;
    step.parent_vpid = key.first;
    step.parent_space = parent_space[key.first];
    step.plan = plan_slurm_relaunch(std::vector<int>(tasks.size(), -1), hosts, task_vpids, nodes, task_spaces);
    steps[key.first].push_back(std::move(step));
  }
  return steps;
}

}  // namespace stasis::restart
