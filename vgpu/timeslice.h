// Processes that share a virtual device take turns on it, as CUDA contexts of different processes
// do on a GPU without MPS: while one process's kernels run, another's wait, and the device changes
// hands when a time slice ends and someone else is waiting. Two processes whose kernels wait for
// each other therefore progress one hand-off per time slice — slow, as on a GPU, never stuck.
// ACCL_VGPU_MPS=1 turns this off (MPS lets processes share the SMs); ACCL_VGPU_TIMESLICE_MS sets
// the slice (default 2 ms).
#pragma once

namespace accl::vgpu {

// A block of this process starts / ends on `device` (a process holds its turn while it runs blocks).
void turnBlockStarted(int device);
void turnBlockEnded(int device);
// Whether processes share the SMs (ACCL_VGPU_MPS=1; cudaDevAttrMpsEnabled) instead of taking turns.
bool mpsEnabled();
// Between two rounds of a running block: returns at once while this process has the device, else
// when it gets it back. Hands the device over when the slice ended and another process waits.
void turnCheckpoint(int device);

}  // namespace accl::vgpu
