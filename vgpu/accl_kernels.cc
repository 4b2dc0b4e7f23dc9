// accl's own CUDA kernels (src/backend/cuda/kernels/kernel.cu) built for the CPU: the same block
// body (channel_body.h, dev_run.h) over the device-primitives layer's CPU side. The function table
// holds the kernel set of ACCL_KERNEL_SUBSET (float32 / bfloat16 sum and the copy collectives,
// every algorithm and protocol) in every build: the full set's CPU instantiations would cost the
// build minutes for types that exercise no other code; an item outside it fails as an id the
// kernels lack does (kDevErrNoKernel in the error word).
#include <utility>
#include <vector>

#include "backend/cuda/kernels/channel_body.h"
#include "vgpu/cpu_kernels.h"

namespace accl::vgpu {
namespace {

template <int kId>
void fillOne(DevFn* table) {
  if constexpr (devFuncInSubset(kId) && devFuncKey(kId).coll != kFuncSendRecv) table[kId] = &devRun<devInstanceOf(kId)>;
}
template <int... kIds>
void fillSubset(DevFn* table, std::integer_sequence<int, kIds...>) {
  (fillOne<kIds>(table), ...);
}

// The table of the subset's ids, filled once.
const DevFn* cpuTable() {
  static const std::vector<DevFn> table = [] {
    std::vector<DevFn> t(kDevNumFuncs, nullptr);
    fillSubset(t.data(), std::make_integer_sequence<int, kDevNumFuncs>{});
    return t;
  }();
  return table.data();
}

void commKernelThread(const void* params) {
  const KernelArgs& args = *static_cast<const KernelArgs*>(params);
  devRunChannel(args.header, args.itemBase(), *static_cast<const DevComm*>(args.header.comm), simt::blockIndex(),
                cpuTable());
}

// The device table lives in the CPU build itself: filling it is a no-op here.
void fillTableThread(const void*) {}

const CpuKernel kKernels[] = {
    {"accl::commKernel(accl::KernelArgs)", sizeof(KernelArgs), 512, 128, &commKernelThread},
    {"accl::fillTableKernel()", 0, 1024, 16, &fillTableThread},
};

}  // namespace

const CpuKernel* findCpuKernel(const std::string& name) {
  for (const CpuKernel& k : kKernels)
    if (name == k.name) return &k;
  return nullptr;
}

std::string knownCpuKernels() {
  std::string s;
  for (const CpuKernel& k : kKernels) s += (s.empty() ? "" : ", ") + std::string(k.name);
  return s;
}

}  // namespace accl::vgpu
