// The recording profiler plugins (tests/unit/profiler_plugin_fixture) as the multi-rank profiler
// tests reach them: a version's library path (what NCCL_PROFILER_PLUGIN names), its emptied log,
// and the context a rank's communicator left there.
#pragma once

#include <dlfcn.h>

#include <string>

#include "unit/profiler_plugin_fixture/recording_profiler.h"

namespace accl::test {

inline std::string profilerPluginPath(int version) {
  return std::string(ACCL_TEST_PROFILER_DIR) + "/libnccl-profiler-acclTestV" + std::to_string(version) + ".so";
}

// The log of the library the communicators load (same path: same handle, kept open for the
// process), emptied; null if it cannot be opened.
inline RecordingLog* profilerFixtureLog(int version) {
  void* h = dlopen(profilerPluginPath(version).c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) return nullptr;
  auto* reset = reinterpret_cast<void (*)()>(dlsym(h, "acclTestProfilerReset"));
  reset();
  return reinterpret_cast<RecordingLog* (*)()>(dlsym(h, "acclTestProfilerLog"))();
}

// The finalized context of this rank's communicator (after its destroy), or null. The caller
// holds log->mutex.
inline const RecordedContext* finalizedContextOf(RecordingLog* log, int rank) {
  const RecordedContext* found = nullptr;
  for (const RecordedContext* c : log->contexts)
    if (c->rank == rank && c->finalized) found = c;
  return found;
}

}  // namespace accl::test
