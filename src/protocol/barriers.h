// The coordinated sequences, top-down: every barrier the coordinator runs across all the
// processes of a computation, in order, with what each one means. The coordinator walks this
// table (coordinator/checkpoint_machine.cc) and the runtime looks up what a BARRIER message asks
// (runtime/runtime.cc): neither compares barrier names of its own. The in-process side of
// "checkpoint" reads top-down in runtime/checkpoint.cc.
//
// Header-only and constexpr, with no allocation: the preloaded runtime includes it.
#pragma once
#include <stddef.h>
#include <stdint.h>

namespace stasis::protocol {

enum class Barrier : uint8_t {
  None,  // after the last step of a sequence; no barrier under way
  Suspend,
  Children,
  Drain,
  Plugin,  // the barriers plugins add, each under its own name (and any name not built in)
  Checkpoint,
  Resume,
  Commit,
  Restart,
};

enum class Sequence : uint8_t { Checkpoint, Restart };

struct BarrierStep {
  Sequence sequence;
  Barrier barrier;
  const char* name;  // StasisBarrier.name; the plugins' own names for Barrier::Plugin
  Barrier next;      // the next barrier when every process succeeded (None: the sequence ends)
  // A process's state (`stasis status`) while it runs the barrier, and once it answered.
  const char* state_during;
  const char* state_after;
  const char* meaning;
};

// Departures from `next`, all made by the coordinator's state machine:
// - "children" is repeated (asking only those still missing a child) until every live child of
//   every process is a suspended process of the computation; processes that join meanwhile are
//   sent "suspend" and take part from there.
// - With kill_after, "checkpoint" is followed by "commit" and then KILL: nothing resumes.
// - After a failure the computation runs on: "resume" (if not done yet), then "commit" with
//   abort=1, which discards the images and stops forked writers.
// clang-format off
inline constexpr BarrierStep kBarrierSteps[] = {
    // A checkpoint.
    {Sequence::Checkpoint, Barrier::Suspend, "suspend", Barrier::Children,
     "suspending", "suspended",
     "plugins' pre-suspend hooks run, then every user thread stops"},
    {Sequence::Checkpoint, Barrier::Children, "children", Barrier::Drain,
     "suspended", "suspended",
     "each process reports its live children (CHILDREN): a process tree is saved whole"},
    {Sequence::Checkpoint, Barrier::Drain, "drain", Barrier::Plugin,
     "draining", "suspended",
     "bytes held back in the runtime are pushed out; plugins drain their channels and decide "
     "who saves what processes share (every barrier of a checkpoint names its directory)"},
    {Sequence::Checkpoint, Barrier::Plugin, nullptr, Barrier::Checkpoint,
     nullptr, nullptr,  // each plugin barrier's own name
     "the barriers plugins add (InfiniBand's \"ib-quiesce\"...), one after another, in the "
     "order processes declared them"},
    {Sequence::Checkpoint, Barrier::Checkpoint, "checkpoint", Barrier::Resume,
     "checkpointing", "checkpointed",
     "each process writes its image into the generation directory, in place or from a forked "
     "writer"},
    {Sequence::Checkpoint, Barrier::Resume, "resume", Barrier::Commit,
     "resuming", "running",
     "every user thread runs again (also after a failure)"},
    {Sequence::Checkpoint, Barrier::Commit, "commit", Barrier::None,
     "committing", "running",
     "every image is durable (forked writers finished); then MANIFEST.json and `latest` make "
     "the generation complete. With abort=1: the images are discarded"},
    // After `stasis restart`: each restarted process joins with restarted=1; the sequence starts
    // once all of them (restart_process_count) are connected. Their state (memory, descriptors,
    // queued bytes refilled) was restored before they joined.
    {Sequence::Restart, Barrier::Restart, "restart", Barrier::Resume,
     "restarting", "restarted",
     "every restarted process is connected; plugins re-create what processes share"},
    {Sequence::Restart, Barrier::Resume, "resume", Barrier::None,
     "resuming", "running",
     "every user thread runs again"},
};
// clang-format on

constexpr bool names_equal(const char* a, const char* b) {
  if (a == nullptr || b == nullptr) return false;
  while (*a != '\0' && *a == *b) a++, b++;
  return *a == *b;
}

// The step of `barrier` in `sequence` (nullptr if it has none).
constexpr const BarrierStep* find_step(Sequence sequence, Barrier barrier) {
  for (const BarrierStep& step : kBarrierSteps)
    if (step.sequence == sequence && step.barrier == barrier) return &step;
  return nullptr;
}

constexpr const BarrierStep& first_step(Sequence sequence) {
  for (const BarrierStep& step : kBarrierSteps)
    if (step.sequence == sequence) return step;
  return kBarrierSteps[0];
}

// The first step of a built-in barrier by its name (nullptr for any other name). A barrier in
// both sequences ("resume") means the same, and has the same states, in each.
constexpr const BarrierStep* find_named(const char* name) {
  for (const BarrierStep& step : kBarrierSteps)
    if (names_equal(step.name, name)) return &step;
  return nullptr;
}

// The built-in barrier a BARRIER message names; Plugin for any other name.
constexpr Barrier barrier_named(const char* name) {
  const BarrierStep* step = find_named(name);
  return step != nullptr ? step->barrier : Barrier::Plugin;
}

// The name on the wire of a built-in barrier ("" for Plugin and None).
constexpr const char* barrier_name(Barrier barrier) {
  for (const BarrierStep& step : kBarrierSteps)
    if (step.barrier == barrier && step.name != nullptr) return step.name;
  return "";
}

// Plugins may not take a built-in barrier's name.
constexpr bool is_builtin_barrier_name(const char* name) {
  return barrier_named(name) != Barrier::Plugin;
}

// The table reads in order: each step's `next` is the step after it in its sequence.
constexpr bool steps_in_order() {
  constexpr size_t count = sizeof kBarrierSteps / sizeof kBarrierSteps[0];
  for (size_t i = 0; i < count; i++) {
    bool last = i + 1 == count || kBarrierSteps[i + 1].sequence != kBarrierSteps[i].sequence;
    Barrier following = last ? Barrier::None : kBarrierSteps[i + 1].barrier;
    if (kBarrierSteps[i].next != following) return false;
  }
  return true;
}
static_assert(steps_in_order(), "kBarrierSteps: `next` must name the step below it");
static_assert(barrier_named("drain") == Barrier::Drain &&
              barrier_named("ib-quiesce") == Barrier::Plugin);

}  // namespace stasis::protocol
