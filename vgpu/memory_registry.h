// The memory registry's inside door, shared by vgpu/memory.cc (which owns the registry and the
// per-device memory budget) and vgpu/cumem.cc (whose cuMem mappings become device memory once
// cuMemSetAccess makes them reachable). Everything else asks through vgpu.h's findRange.
#pragma once

#include <cstddef>
#include <cstdint>

#include "vgpu/vgpu.h"

namespace accl::vgpu {

// Adds the live range `r`. `joinTag` (non-zero) marks ranges that are pieces of one larger address
// range — cuMem mappings of one reservation — so that a copy may run across adjacent pieces as it
// does on a GPU; 0 keeps the range on its own. `readOnly`: devices may read but not write it
// (copyChecked / setChecked refuse it as a destination). False when it overlaps a live range.
bool addRange(const MemRange& r, uintptr_t joinTag = 0, bool readOnly = false);
// Removes the live range starting at `base` that addRange added; false when there is none.
bool removeRange(const void* base);

// The exact live range containing `p` (not joined with its neighbours); false when none does.
bool rangeAt(const void* p, MemRange* out);

// The checks copyChecked / setChecked (vgpu.h) make, without moving a byte: for a copy's call-time
// check (the errors CUDA returns at once, before the work is queued), so that the work's own check
// when it runs cannot fail where the call succeeded. Same errors, same thread's last error.
cudaError_t validateCopy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, const char* call);
cudaError_t validateSet(void* dst, size_t bytes, const char* call);

// Device memory in use by this process: what cudaMemGetInfo reports and what the budget
// (DeviceInfo::memoryBytes) limits. chargeDevice fails, charging nothing, past the budget.
bool chargeDevice(int device, size_t bytes);
void unchargeDevice(int device, size_t bytes);
size_t chargedBytes(int device);

}  // namespace accl::vgpu
