// The recording profiler plugin's log, as tests read it: every context the plugin's init made
// (one per communicator) and every event it was given, in order, with the descriptor's fields
// turned into one shape whatever the plugin's ABI version (v1's indices become the names later
// versions send). Built as libnccl-profiler-acclTestV<N>.so for N = 1..7 (recording_profiler.cc);
// a test reaches the log through acclTestProfilerLog(), found with dlsym in the same library
// the communicator loaded.
//
// Steering (read at each init): ACCL_TEST_PROFILER_MASK — the activation mask init returns
// (unset: the mask init was given, or every v5 event when that is 0); ACCL_TEST_PROFILER_FAIL —
// "init" makes init fail, "start:N" / "stop:N" / "record:N" make the Nth such call of a context
// (from 1) fail.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace accl::test {

struct RecordedEvent {
  uint64_t seq = 0;  // order of startEvent over the whole process
  void* owner = nullptr;  // the RecordedContext that started it
  uint64_t type = 0;
  const void* parent = nullptr;  // a handle this plugin returned (a RecordedEvent*), or null
  int rank = -1;
  int64_t startNs = 0, stopNs = 0;  // CLOCK_MONOTONIC at startEvent / stopEvent (0: not stopped)
  bool stopped = false;
  std::vector<int> states;  // recordEventState calls, in order
  std::vector<uint64_t> stateValues;  // the state args' first 8 bytes (transSize, pTimer, ...)
  // Fields of the descriptor (those of its type; the rest stay default).
  std::string func, datatype, algo, proto, commName;
  size_t count = 0;
  int root = -1, peer = -1;
  uint64_t seqNumber = 0, commHash = 0;
  const void* sendBuff = nullptr;
  const void* recvBuff = nullptr;
  const void* parentGroup = nullptr;  // v5 / v6 coll and p2p
  int nChannels = 0, nWarps = 0, channelId = -1, groupDepth = 0, op = -1;
  uint64_t pTimer = 0;
  size_t trafficBytes = 0;
  bool graphCaptured = false;  // v5+ CollApi and P2pApi
  // v7: CollApi / P2pApi / Coll / P2p's userTag; Coll's kernel variant (kernelVariantNull: it
  // was a null pointer) and symmetric flag. KernelPhase events fill channelId, pTimer and func
  // (the phase's name).
  uint64_t userTag = 0;
  std::string kernelVariant;
  bool kernelVariantNull = false;
  bool isSymColl = false;
  int64_t pluginId = 0;  // v3+ NetPlugin: the net plugin's id and data
  const void* pluginData = nullptr;
};

struct RecordedContext {
  int version = 0;
  int rank = -1;  // v4+: from init; v1-v3: from the first event
  int nRanks = 0, nNodes = 0;
  uint64_t commId = 0;
  std::string commName;
  int maskGiven = 0, maskReturned = 0;
  bool finalized = false;
  int starts = 0, stops = 0, records = 0;  // calls, failed ones included
  std::vector<RecordedEvent*> events;  // owned; handles point at these
};

struct RecordingLog {
  std::mutex mutex;
  std::vector<RecordedContext*> contexts;  // owned, in init order
  int declinedInits = 0;  // ACCL_TEST_PROFILER_FAIL=nullcontext: inits that succeeded with no context

  // Frees every context and event (no communicator may still use one).
  void clear() {
    for (RecordedContext* c : contexts) {
      for (RecordedEvent* e : c->events) delete e;
      delete c;
    }
    contexts.clear();
    declinedInits = 0;
  }
  ~RecordingLog() { clear(); }
};

}  // namespace accl::test

extern "C" {
// The plugin's log (lock its mutex while reading), and a way to empty it between tests.
accl::test::RecordingLog* acclTestProfilerLog();
void acclTestProfilerReset();
}
