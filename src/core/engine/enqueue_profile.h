// The profiler events of the enqueue path (profiler/comm_profiler.h), built from what enqueue
// knows when each happens:
//   GroupApi      from a communicator's first call in a group to the end of its launch; states
//                 GroupStartApiStop at that first call, GroupEndApiStart when the group ends.
//   CollApi/P2pApi  one API call (parent: GroupApi), stopped when the call returns.
// CollApi, Coll, P2pApi and P2p carry the call's userProfilerTag (v7's userTag; 0: untagged): a
// send / recv has one only as a part of a tagged ncclAlltoAllConfig / GatherConfig / ScatterConfig.
//   Group         one launch of one communicator (NCCL's v4 parent of Coll / P2p).
//   Coll / P2p    one operation of the launch, started when it is planned (algorithm, protocol
//                 and channels known; parent: its API event, parentGroup: the Group) and stopped
//                 once the launch was handed to the backend, which on the host backend means
//                 once it ran. KernelCh events of the backend name them as parents.
//   KernelLaunch  the backend's launch call (parent: GroupApi).
// Every helper returns the plugin's handle, null when the event is not wanted.
#pragma once

#include <cstdint>

#include "core/engine/enqueue.h"
#include "profiler/comm_profiler.h"
#include "tuner/cost_model.h"

namespace accl {

// NCCL's name of a datatype in profiler events ("ncclFloat32").
const char* profTypeName(ncclDataType_t type);

// The events of one launch that its operations hang from.
struct LaunchEvents {
  prof::CommProfiler* prof = nullptr;
  void* groupApi = nullptr;
  void* group = nullptr;
};

void* profStartGroupApi(prof::CommProfiler& p, int groupDepth);
// `captured`: the call's stream is capturing a CUDA graph; `userTag`: its userProfilerTag.
void* profStartCollApi(prof::CommProfiler& p, void* groupApi, const CollCall& c, bool captured, uint64_t userTag);
void* profStartP2pApi(prof::CommProfiler& p, void* groupApi, const P2pCall& c, bool captured);
void* profStartGroup(prof::CommProfiler& p);
// `seq`: the communicator's count of earlier collectives of this function.
void* profStartColl(const LaunchEvents& l, void* api, const CollCall& c, uint32_t op, const TunerChoice& choice,
                    int nChannels, uint64_t seq, size_t trafficBytes, uint64_t userTag);
void* profStartP2p(const LaunchEvents& l, void* api, const P2pCall& c, int nChannels);
void* profStartKernelLaunch(prof::CommProfiler& p, void* groupApi, cudaStream_t stream);

}  // namespace accl
