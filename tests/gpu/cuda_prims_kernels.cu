// The CUDA Prims (src/device/cuda/cuda_prims.h) under nvcc: ring all-reduce of src/algos run by
// CudaPrims in a kernel with one block per rank (ranks of one GPU, connections in device
// memory), checked against closed-form sums and, bit for bit, against the host backend's
// reduction order (tests/simt/ring_order.h) for every element width; and a point-to-point
// batch (device/cuda/p2p_batch.h) whose receive precedes its send on both ranks. Tree all-reduce
// (three receive sources) is compiled too. Building this file (CI, sm_90) proves the Prims, the
// schedules and the p2p batch compile for the device (ptxas -v gives their register and spill
// figures); cuda_prims_gpu_test runs it where a GPU exists.
#include <cuda_runtime.h>

#include <cstring>
#include <string>
#include <vector>

#include "algos/ring_all_reduce.h"
#include "algos/tree_all_reduce.h"
#include "cuda_prims_kernels.h"
#include "device/common/red_ops.h"
#include "device/cuda/p2p_batch.h"
#include "device/cuda/cuda_prims.h"
#include "gpu_test_util.h"
#include "ring_order.h"

namespace accl::gputest {
namespace {

constexpr size_t kSimpleSlotBytes = 1024;
constexpr size_t kLLSlotWords = 128;
constexpr size_t kLL128SlotLines = 8;
constexpr int kMaxRanks = 8;

struct RingKernelArgs {
  PrimsConn* senderEnds;    // [nranks]: rank r -> r + 1, as rank r sees it
  PrimsConn* receiverEnds;  // [nranks]: the same connection as rank r + 1 sees it
  int nranks;
  ProtoId proto;
  size_t count;
  size_t chunk;
  char* inputs;   // rank r's input at inputs + r * stride
  char* outputs;  // rank r's output at outputs + r * stride
  size_t stride;
  const uint32_t* abortFlag;
  uint32_t* aborted;
};

// The kernels' block size (src/backend/cuda: 512 threads) bounds the registers as it does there.
constexpr int kMaxBlockThreads = 512;

template <class T, class Op>
__global__ void __launch_bounds__(kMaxBlockThreads) ringAllReduceKernel(RingKernelArgs a, Op op) {
  const int r = blockIdx.x;
  int ranks[kMaxRanks];
  for (int i = 0; i < a.nranks; ++i) ranks[i] = i;
  CudaPrimsArgs args;
  if (a.nranks > 1) {
    args.recv[0] = &a.receiverEnds[(r + a.nranks - 1) % a.nranks];
    args.send[0] = &a.senderEnds[r];
    args.nRecv = args.nSend = 1;
  }
  args.input = a.inputs + r * a.stride;
  args.output = a.outputs + r * a.stride;
  args.proto = a.proto;
  args.abortFlag = a.abortFlag;
  CudaPrims<T, Op, 1, 1> prims(args, op);  // a ring: one receive and one send peer
  RingView ring{a.nranks, r, ranks};
  CollWork work{};
  work.chanOffset = 0;
  work.chanCount = a.count;
  work.chunkElems = a.chunk;
  ringAllReduce(prims, ring, work);
  if (prims.aborted() && threadIdx.x == 0) atomicAdd(a.aborted, 1u);
}

size_t chunkFor(ProtoId proto, size_t elemSize) {
  PrimsConn c;
  c.simpleSlotBytes = kSimpleSlotBytes;
  c.llSlotWords = kLLSlotWords;
  c.ll128SlotLines = kLL128SlotLines;
  return primsChunkCapacity(c, proto, elemSize);
}

// Runs ring all-reduce with `op` over inputs x[r] on nranks blocks and compares every rank's
// result with `want` bit for bit (and the guard elements after it); "" or what went wrong.
template <class T, class Op>
std::string runRing(ProtoId proto, const std::vector<std::vector<T>>& x, const std::vector<T>& want, bool inPlace,
                    const Op& op) {
  const int nranks = int(x.size());
  const size_t count = want.size();
  if (nranks < 1 || nranks > kMaxRanks) return "nranks out of range";
  // Connection memory, one region per connection: tail | head | Simple | LL | LL128 slots.
  const size_t simpleBytes = kSimpleSlotBytes * kFifoSteps;
  const size_t llBytes = kLLSlotWords * 8 * kFifoSteps;
  const size_t ll128Bytes = kLL128SlotLines * simt::kLL128LineBytes * kFifoSteps;
  const size_t regionBytes = 128 + simpleBytes + llBytes + ll128Bytes;
  DeviceBuffer regions(regionBytes * nranks);
  std::vector<PrimsConn> ends(nranks);
  for (int r = 0; r < nranks; ++r) {
    char* base = regions.as<char>() + r * regionBytes;
    PrimsConn& c = ends[r];
    c.tail = reinterpret_cast<uint64_t*>(base);
    c.head = reinterpret_cast<uint64_t*>(base + 64);
    c.simple = base + 128;
    c.ll = reinterpret_cast<uint64_t*>(base + 128 + simpleBytes);
    c.ll128 = reinterpret_cast<uint64_t*>(base + 128 + simpleBytes + llBytes);
    c.simpleSlotBytes = kSimpleSlotBytes;
    c.llSlotWords = kLLSlotWords;
    c.ll128SlotLines = kLL128SlotLines;
  }
  DeviceBuffer senderEnds(sizeof(PrimsConn) * nranks), receiverEnds(sizeof(PrimsConn) * nranks);
  cudaMemcpy(senderEnds.ptr, ends.data(), sizeof(PrimsConn) * nranks, cudaMemcpyHostToDevice);
  cudaMemcpy(receiverEnds.ptr, ends.data(), sizeof(PrimsConn) * nranks, cudaMemcpyHostToDevice);

  // Each rank's buffer: count elements and 5 guards, at a 256-byte stride.
  const size_t guard = 5, elems = count + guard, stride = (elems * sizeof(T) + 255) / 256 * 256;
  const size_t per = stride / sizeof(T);
  T unset;  // a byte pattern every type can hold
  memset(&unset, 0x4d, sizeof(T));
  std::vector<T> hostIn(per * nranks, unset), hostOut(per * nranks, unset);
  for (int r = 0; r < nranks; ++r)
    for (size_t i = 0; i < count; ++i) hostIn[r * per + i] = x[r][i];
  DeviceBuffer in(stride * nranks), out(stride * nranks), aborted(sizeof(uint32_t));
  cudaMemcpy(in.ptr, hostIn.data(), stride * nranks, cudaMemcpyHostToDevice);
  cudaMemcpy(out.ptr, hostOut.data(), stride * nranks, cudaMemcpyHostToDevice);
  AbortFlag abort;
  if (!abort.ok()) return "cudaHostAlloc (mapped abort flag) failed";

  RingKernelArgs a{senderEnds.as<PrimsConn>(),
                   receiverEnds.as<PrimsConn>(),
                   nranks,
                   proto,
                   count,
                   chunkFor(proto, sizeof(T)),
                   in.as<char>(),
                   inPlace ? in.as<char>() : out.as<char>(),
                   stride,
                   abort.device,
                   aborted.as<uint32_t>()};
  ringAllReduceKernel<T><<<nranks, 64>>>(a, op);
  std::string err = finishOrAbort(abort);
  if (!err.empty()) return err;
  uint32_t nAborted = 0;
  cudaMemcpy(&nAborted, aborted.ptr, sizeof nAborted, cudaMemcpyDeviceToHost);
  if (nAborted) return "a block reported an abort";
  std::vector<T> result(per * nranks);
  cudaMemcpy(result.data(), inPlace ? in.ptr : out.ptr, stride * nranks, cudaMemcpyDeviceToHost);
  for (int r = 0; r < nranks; ++r) {
    const T* res = result.data() + r * per;
    for (size_t i = 0; i < count; ++i)
      if (memcmp(&res[i], &want[i], sizeof(T)) != 0)
        return "rank " + std::to_string(r) + " element " + std::to_string(i) + " differs";
    for (size_t i = count; i < elems; ++i)
      if (memcmp(&res[i], &unset, sizeof(T)) != 0) return "rank " + std::to_string(r) + " guard overwritten";
  }
  return "";
}

// Closed-form sums: rank r contributes (r + 1) * ((i % 13) + 1).
template <class T>
std::string runClosedForm(int nranks, ProtoId proto, size_t count, bool inPlace) {
  std::vector<std::vector<T>> x(nranks, std::vector<T>(count));
  std::vector<T> want(count);
  for (size_t i = 0; i < count; ++i) {
    for (int r = 0; r < nranks; ++r) x[r][i] = T((r + 1) * int((i % 13) + 1));
    want[i] = T(nranks * (nranks + 1) / 2 * int((i % 13) + 1));
  }
  return runRing(proto, x, want, inPlace, RedSum<T>{});
}

// Random inputs, expected value in the host backend's reduction order (bit for bit).
template <class T, class Op>
std::string runHostOrder(int nranks, ProtoId proto, size_t count, const Op& op) {
  uint64_t state = 999 + uint64_t(nranks) * 31 + uint64_t(proto);
  std::vector<std::vector<T>> x(nranks);
  for (auto& v : x)
    for (size_t i = 0; i < count; ++i) v.push_back(primstest::randomElem<T>(state));
  return runRing(proto, x, primstest::ringOrderResult(x, count, chunkFor(proto, sizeof(T)), op), false, op);
}

// Compile-only: tree all-reduce with the default fan (three receive sources per step) and a
// point-to-point batch (sends and receives on separate warp groups), for ptxas's register and
// spill figures of those forms.
template <class T, class Op>
__global__ void __launch_bounds__(kMaxBlockThreads)
    treeAllReduceKernel(const PrimsConn* const* conns, TreeView tree, CollWork work, T* buf, Op op) {
  CudaPrimsArgs up, down;
  for (int i = 0; i < kMaxTreeChildren; ++i) {
    if (tree.down[i] < 0) continue;
    up.recv[up.nRecv++] = const_cast<PrimsConn*>(conns[i]);
    down.send[down.nSend++] = const_cast<PrimsConn*>(conns[3 + i]);
  }
  up.send[up.nSend++] = const_cast<PrimsConn*>(conns[6]);
  down.recv[down.nRecv++] = const_cast<PrimsConn*>(conns[7]);
  up.input = buf;
  up.output = buf;
  down.input = buf;
  down.output = buf;
  down.inputIsContribution = false;
  CudaPrims<T, Op> upPrims(up, op);
  CudaPrims<T, Op> downPrims(down, op);
  treeAllReduce(upPrims, downPrims, tree, work);
}
template __global__ void treeAllReduceKernel<float, RedSum<float>>(const PrimsConn* const*, TreeView, CollWork, float*,
                                                                  RedSum<float>);

// Block b runs transfers[b * perBlock ..] as one batch.
__global__ void __launch_bounds__(kMaxBlockThreads) p2pBatchKernel(const CudaP2pTransfer* transfers, int perBlock,
                                                                   const uint32_t* abortFlag, uint32_t* failed) {
  const CudaP2pTransfer* mine = transfers + blockIdx.x * perBlock;
  if (!cudaP2pBatch<uint8_t>(perBlock, [&](int i) { return mine[i]; }, abortFlag) && threadIdx.x == 0)
    atomicAdd(failed, 1u);
}

// Two ranks (blocks), each receiving from the other before sending to it, `bytes` each way.
std::string runP2pExchange(ProtoId proto, size_t bytes, int blockThreads) {
  const size_t simpleBytes = kSimpleSlotBytes * kFifoSteps;
  const size_t llBytes = kLLSlotWords * 8 * kFifoSteps;
  const size_t ll128Bytes = kLL128SlotLines * simt::kLL128LineBytes * kFifoSteps;
  const size_t regionBytes = 128 + simpleBytes + llBytes + ll128Bytes;
  DeviceBuffer regions(regionBytes * 2);
  std::vector<PrimsConn> ends(4);  // [2c]: sender's end of connection c (c -> 1 - c), [2c + 1]: receiver's
  for (int c = 0; c < 2; ++c) {
    char* base = regions.as<char>() + c * regionBytes;
    PrimsConn e;
    e.tail = reinterpret_cast<uint64_t*>(base);
    e.head = reinterpret_cast<uint64_t*>(base + 64);
    e.simple = base + 128;
    e.ll = reinterpret_cast<uint64_t*>(base + 128 + simpleBytes);
    e.ll128 = reinterpret_cast<uint64_t*>(base + 128 + simpleBytes + llBytes);
    e.simpleSlotBytes = kSimpleSlotBytes;
    e.llSlotWords = kLLSlotWords;
    e.ll128SlotLines = kLL128SlotLines;
    ends[2 * c] = ends[2 * c + 1] = e;
  }
  DeviceBuffer devEnds(sizeof(PrimsConn) * 4);
  cudaMemcpy(devEnds.ptr, ends.data(), sizeof(PrimsConn) * 4, cudaMemcpyHostToDevice);
  const size_t stride = (bytes + 255) / 256 * 256 + 256;
  std::vector<uint8_t> hostIn(2 * stride), hostOut(2 * stride, 0xee);
  for (int r = 0; r < 2; ++r)
    for (size_t i = 0; i < bytes; ++i) hostIn[r * stride + i] = uint8_t(r * 101 + i * 7 + 3);
  DeviceBuffer in(2 * stride), out(2 * stride), failed(sizeof(uint32_t));
  cudaMemcpy(in.ptr, hostIn.data(), 2 * stride, cudaMemcpyHostToDevice);
  cudaMemcpy(out.ptr, hostOut.data(), 2 * stride, cudaMemcpyHostToDevice);
  std::vector<CudaP2pTransfer> t(4);
  for (int r = 0; r < 2; ++r) {
    CudaP2pTransfer& recv = t[2 * r];
    recv.conn = devEnds.as<PrimsConn>() + 2 * (1 - r) + 1;  // connection (1 - r) -> r, receiver's end
    recv.recvbuff = out.as<uint8_t>() + r * stride;
    CudaP2pTransfer& send = t[2 * r + 1];
    send.isSend = true;
    send.conn = devEnds.as<PrimsConn>() + 2 * r;  // connection r -> 1 - r, sender's end
    send.sendbuff = in.as<uint8_t>() + r * stride;
    for (CudaP2pTransfer* x : {&recv, &send}) {
      x->count = bytes;
      x->chunkElems = chunkFor(proto, 1);
      x->proto = proto;
    }
  }
  DeviceBuffer devT(sizeof(CudaP2pTransfer) * 4);
  cudaMemcpy(devT.ptr, t.data(), sizeof(CudaP2pTransfer) * 4, cudaMemcpyHostToDevice);
  AbortFlag abort;
  if (!abort.ok()) return "cudaHostAlloc (mapped abort flag) failed";
  p2pBatchKernel<<<2, blockThreads>>>(devT.as<CudaP2pTransfer>(), 2, abort.device, failed.as<uint32_t>());
  std::string err = finishOrAbort(abort);
  if (!err.empty()) return err;
  uint32_t nFailed = 0;
  cudaMemcpy(&nFailed, failed.ptr, sizeof nFailed, cudaMemcpyDeviceToHost);
  if (nFailed) return "a block reported an abort";
  cudaMemcpy(hostOut.data(), out.ptr, 2 * stride, cudaMemcpyDeviceToHost);
  for (int r = 0; r < 2; ++r) {
    for (size_t i = 0; i < bytes; ++i)
      if (hostOut[r * stride + i] != hostIn[(1 - r) * stride + i])
        return "rank " + std::to_string(r) + " byte " + std::to_string(i) + " differs";
    if (hostOut[r * stride + bytes] != 0xee) return "rank " + std::to_string(r) + " guard overwritten";
  }
  return "";
}

// Compile-only: widths and ops the runnable cases below do not reach.
template __global__ void ringAllReduceKernel<int8_t, RedProd<int8_t>>(RingKernelArgs, RedProd<int8_t>);
template __global__ void ringAllReduceKernel<uint64_t, RedMin<uint64_t>>(RingKernelArgs, RedMin<uint64_t>);

}  // namespace

PrimsRingOutcome runPrimsRingAllReduceOnDevice(PrimsElem elem, int nranks, ProtoId proto, size_t count, bool inPlace) {
  PrimsRingOutcome out;
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) return out;
  out.ran = true;
  switch (elem) {
    case PrimsElem::kFloat:
      out.error = runClosedForm<float>(nranks, proto, count, inPlace);
      break;
    case PrimsElem::kUint8:
      out.error = runClosedForm<uint8_t>(nranks, proto, count, inPlace);
      break;
    case PrimsElem::kDouble:
      out.error = runClosedForm<double>(nranks, proto, count, inPlace);
      break;
  }
  return out;
}

PrimsRingOutcome runPrimsP2pExchangeOnDevice(ProtoId proto, size_t bytes, int blockThreads) {
  PrimsRingOutcome out;
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) return out;
  out.ran = true;
  out.error = runP2pExchange(proto, bytes, blockThreads);
  return out;
}

PrimsRingOutcome runPrimsHostOrderOnDevice(PrimsOrderCase c, int nranks, ProtoId proto, size_t count) {
  PrimsRingOutcome out;
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) return out;
  out.ran = true;
  switch (c) {
    case PrimsOrderCase::kFloatSum:
      out.error = runHostOrder<float>(nranks, proto, count, RedSum<float>{});
      break;
    case PrimsOrderCase::kFloatPreMulSum:
      out.error = runHostOrder<float>(nranks, proto, count, RedPreMulSum<float>{0.3f});
      break;
    case PrimsOrderCase::kDoubleProd:
      out.error = runHostOrder<double>(nranks, proto, count, RedProd<double>{});
      break;
    case PrimsOrderCase::kHalfSum:
      out.error = runHostOrder<Half>(nranks, proto, count, RedSum<Half>{});
      break;
    case PrimsOrderCase::kBf16Sum:
      out.error = runHostOrder<Bf16>(nranks, proto, count, RedSum<Bf16>{});
      break;
    case PrimsOrderCase::kBf16Min:
      out.error = runHostOrder<Bf16>(nranks, proto, count, RedMin<Bf16>{});
      break;
    case PrimsOrderCase::kFp8E4M3Sum:
      out.error = runHostOrder<Fp8E4M3>(nranks, proto, count, RedSum<Fp8E4M3>{});
      break;
    case PrimsOrderCase::kFp8E5M2PreMulSum:
      out.error = runHostOrder<Fp8E5M2>(nranks, proto, count, RedPreMulSum<Fp8E5M2>{Fp8E5M2::fromFloat(0.5f)});
      break;
    case PrimsOrderCase::kInt32SumPostDiv:
      out.error = runHostOrder<int32_t>(nranks, proto, count, RedSumPostDiv<int32_t>{uint64_t(nranks)});
      break;
  }
  return out;
}

}  // namespace accl::gputest
