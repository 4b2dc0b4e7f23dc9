// The per-rank benchmark loop (see rank_runner.h).
#include "rank_runner.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "channel.h"
#include "elem_codec.h"
#include "pattern.h"
#include "rank_device.h"

namespace accl::bench {
namespace {

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void copyText(char* dst, size_t cap, const std::string& s) {
  std::snprintf(dst, cap, "%s", s.c_str());
}

ncclRedOp_t builtinOp(OpId op) {
  switch (op) {
    case OpId::kSum: return ncclSum;
    case OpId::kProd: return ncclProd;
    case OpId::kMax: return ncclMax;
    case OpId::kMin: return ncclMin;
    case OpId::kAvg: return ncclAvg;
    case OpId::kMulSum: return ncclSum;  // replaced by a PreMulSum op per call
  }
  return ncclSum;
}

// Send/recv pointers of one call.
struct CallBuffers {
  char* send;
  char* recv;
  char* recvBase;  // start of recvbuff (in place: the region the input is written into)
};

class RankRunner {
 public:
  explicit RankRunner(const RankContext& ctx) : ctx_(ctx), o_(*ctx.opts), plan_(*ctx.plan) {}

  int run() {
    bool ok = setUp() && runSteps() && finish();
    if (!ok) reportError();
    tearDown(!ok);
    if (ctx_.closeFd) close(ctx_.fd);
    return ok ? 0 : exitCode_;
  }

 private:
  // ---- failures ----
  bool failNccl(const char* call, ncclResult_t res, int line) {
    error_ = std::string("NCCL failure rank_runner.cc:") + std::to_string(line) + " '" + call + "': " +
             ncclErrorText(res);
    exitCode_ = kExitNcclError;
    return false;
  }
  bool fail(const std::string& text, int code) {
    error_ = text;
    exitCode_ = code;
    return false;
  }
  void reportError() {
    Record r = baseRecord(RecordKind::kError);
    r.step = step_;
    r.exitCode = exitCode_;
    copyText(r.text, sizeof(r.text), error_);
    writeRecord(ctx_.fd, r);
  }
  Record baseRecord(RecordKind kind) const {
    Record r;
    std::memset(&r, 0, sizeof(r));
    r.kind = kind;
    r.rank = ctx_.rank;
    r.step = -1;
    r.pid = (int32_t)getpid();
    r.device = dev_ ? dev_->deviceIndex() : -1;
    return r;
  }

#define RANK_NCCL(call)                                                \
  do {                                                                 \
    ncclResult_t res_ = (call);                                        \
    if (res_ != ncclSuccess) return failNccl(#call, res_, __LINE__);   \
  } while (0)

  // ---- set-up and tear-down ----
  bool setUp() {
    std::string err;
    dev_ = ctx_.cuda ? makeCudaDevice(ctx_.localIndex, o_.streamNull != 0, &err) : makeHostDevice();
    if (!dev_) {
      // The library has its own message for "no usable GPU"; lead with it, the runtime's code after.
      std::string refusal = libraryCudaRefusal();
      if (!refusal.empty()) return fail(refusal + " (CUDA runtime: " + err + ")", kExitNcclError);
      return fail(err, kExitCudaError);
    }
    Record hello = baseRecord(RecordKind::kHello);
    gethostname(hello.host, sizeof(hello.host) - 1);
    copyText(hello.busId, sizeof(hello.busId), dev_->busId());
    copyText(hello.deviceName, sizeof(hello.deviceName), dev_->name());
    if (!writeRecord(ctx_.fd, hello)) return fail("report channel closed", kExitNcclError);

    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.nvlinkCentricSched = 1;  // what nccl-tests sets with 2.28 headers
    if (o_.ctaPolicy >= 0) config.CTAPolicy = o_.ctaPolicy;
    RANK_NCCL(ncclCommInitRankConfig(&comm_, ctx_.nranks, ctx_.id, ctx_.rank, &config));
    collConfig_ = collConfig();
    int count = -1, me = -1;
    RANK_NCCL(ncclCommCount(comm_, &count));
    RANK_NCCL(ncclCommUserRank(comm_, &me));
    if (count != ctx_.nranks || me != ctx_.rank)
      return fail("communicator reports rank " + std::to_string(me) + " of " + std::to_string(count) +
                      ", expected " + std::to_string(ctx_.rank) + " of " + std::to_string(ctx_.nranks),
                  kExitNcclError);

    sendBytes_ = plan_.maxSendBytes(o_.unalign);
    recvBytes_ = plan_.maxRecvBytes(ctx_.rank, o_.unalign);
    if (!dev_->alloc(reinterpret_cast<void**>(&send_), sendBytes_, &err) ||
        !dev_->alloc(reinterpret_cast<void**>(&recv_), recvBytes_, &err))
      return fail(err, dev_->isHost() ? kExitNcclError : kExitCudaError);
    if (!dev_->isHost() && o_.checks > 0) {
      stageSend_.resize(sendBytes_);
      stageRecv_.resize(recvBytes_);
    }
    if (o_.localRegister == 1) {
      if (send_) RANK_NCCL(ncclCommRegister(comm_, send_, sendBytes_, &sendHandle_));
      if (recv_) RANK_NCCL(ncclCommRegister(comm_, recv_, recvBytes_, &recvHandle_));
    } else if (o_.localRegister == 2) {
      if (send_) RANK_NCCL(ncclCommWindowRegister(comm_, send_, sendBytes_, &sendWin_, NCCL_WIN_COLL_SYMMETRIC));
      if (recv_) RANK_NCCL(ncclCommWindowRegister(comm_, recv_, recvBytes_, &recvWin_, NCCL_WIN_COLL_SYMMETRIC));
    }
    return true;
  }

  bool finish() {
    if (sendHandle_) RANK_NCCL(ncclCommDeregister(comm_, sendHandle_));
    if (recvHandle_) RANK_NCCL(ncclCommDeregister(comm_, recvHandle_));
    if (sendWin_) RANK_NCCL(ncclCommWindowDeregister(comm_, sendWin_));
    if (recvWin_) RANK_NCCL(ncclCommWindowDeregister(comm_, recvWin_));
    sendHandle_ = recvHandle_ = nullptr;
    sendWin_ = recvWin_ = nullptr;
    RANK_NCCL(ncclCommDestroy(comm_));
    comm_ = nullptr;
    Record done = baseRecord(RecordKind::kDone);
    writeRecord(ctx_.fd, done);
    return true;
  }

  void tearDown(bool failed) {
    if (comm_) {
      // After a failure the peers may be gone: abort instead of a destroy that could wait for them.
      if (failed) ncclCommAbort(comm_);
      else ncclCommDestroy(comm_);
      comm_ = nullptr;
    }
    if (dev_) {
      dev_->release(send_);
      dev_->release(recv_);
    }
    send_ = recv_ = nullptr;
  }

  // ---- the steps ----
  bool runSteps() {
    int lastTest = -1;
    for (step_ = 0; step_ < (int)plan_.steps.size(); ++step_) {
      const PlanStep& s = plan_.steps[step_];
      if (s.test != lastTest) {
        lastTest = s.test;
        if (!warmUp(plan_.tests[s.test])) return false;
      }
      if (!benchStep(s)) return false;
    }
    step_ = -1;
    return true;
  }

  CallBuffers buffersFor(const PlanTest& t, const CollShape& shape, bool inPlace) const {
    size_t elt = (size_t)t.type->size;
    size_t shift = (size_t)o_.unalign * elt;
    CallBuffers b;
    b.recvBase = recv_ ? recv_ + shift : nullptr;
    if (!inPlace) {
      b.send = send_ ? send_ + shift : nullptr;
      b.recv = b.recvBase;
    } else {
      b.send = b.recvBase ? b.recvBase + shape.sendInPlaceOffset * (size_t)ctx_.rank * elt : nullptr;
      b.recv = b.recvBase ? b.recvBase + shape.recvInPlaceOffset * (size_t)ctx_.rank * elt : nullptr;
    }
    return b;
  }

  bool warmUp(const PlanTest& t) {
    for (size_t bytes : plan_.warmup) {
      CollShape shape = collShape(plan_.coll, bytes, t.type->size, ctx_.nranks);
      CallBuffers b = buffersFor(t, shape, false);
      for (int i = 0; i < o_.warmupIters; ++i)
        if (!launch(t, shape, b, o_.aggIters)) return false;
      if (!sync()) return false;
    }
    return true;
  }

  bool sync() {
    std::string err;
    int code = kExitNcclError;
    if (!dev_->synchronize(comm_, &err, &code)) return fail(err, code);
    return true;
  }

  // One iteration: `agg` calls, grouped when more than one (nccl-tests' -m).
  bool launch(const PlanTest& t, const CollShape& shape, const CallBuffers& b, int agg) {
    if (agg > 1) RANK_NCCL(ncclGroupStart());
    for (int a = 0; a < agg; ++a)
      if (!callOnce(t, shape, b)) return false;
    if (agg > 1) RANK_NCCL(ncclGroupEnd());
    if (o_.blocking && !dev_->isHost()) return sync();
    return true;
  }

  bool callOnce(const PlanTest& t, const CollShape& shape, const CallBuffers& b) {
    const ncclDataType_t type = t.type->type;
    const size_t count = shape.param;
    const int root = t.root;
    ncclComm_t comm = comm_;
    const bool reduces = collInfo(plan_.coll).reduces;
    ncclRedOp_t op = builtinOp(t.op);
    bool customOp = reduces && t.op == OpId::kMulSum;
    if (customOp) {
      uint64_t scalar = Pattern::preMulScalar(*t.type, ctx_.rank);
      RANK_NCCL(ncclRedOpCreatePreMulSum(&op, &scalar, type, ncclScalarHostImmediate, comm));
    }
    if (o_.collConfig && plan_.coll != CollId::kSendRecv) {
      if (!callConfigVariant(b, count, type, op, root)) return false;
    } else {
      if (!callPlain(b, count, type, op, root)) return false;
    }
    if (customOp) RANK_NCCL(ncclRedOpDestroy(op, comm));
    return true;
  }

  // --coll-config: the per-call config of every call (algSelection points into o_).
  ncclCollConfig_t collConfig() const {
    ncclCollConfig_t c = NCCL_COLLCONFIG_INITIALIZER;
    if (!o_.algSelection.empty()) c.algSelection = o_.algSelection.c_str();
    if (o_.collMinCtas > 0) c.minCTAs = o_.collMinCtas;
    if (o_.collMaxCtas > 0) c.maxCTAs = o_.collMaxCtas;
    c.forceAlgSelection = o_.collForce;
    c.userProfilerTag = o_.collTag;
    return c;
  }

  bool callConfigVariant(const CallBuffers& b, size_t count, ncclDataType_t type, ncclRedOp_t op, int root) {
    cudaStream_t stream = dev_->stream();
    ncclComm_t comm = comm_;
    const ncclCollConfig_t* cfg = o_.collConfigNull ? nullptr : &collConfig_;
    switch (plan_.coll) {
      case CollId::kAllReduce:
        RANK_NCCL(ncclAllReduceConfig(b.send, b.recv, count, type, op, comm, stream, cfg));
        break;
      case CollId::kAllGather:
        RANK_NCCL(ncclAllGatherConfig(b.send, b.recv, count, type, comm, stream, cfg));
        break;
      case CollId::kReduceScatter:
        RANK_NCCL(ncclReduceScatterConfig(b.send, b.recv, count, type, op, comm, stream, cfg));
        break;
      case CollId::kBroadcast:
        RANK_NCCL(ncclBroadcastConfig(b.send, b.recv, count, type, root, comm, stream, cfg));
        break;
      case CollId::kReduce:
        RANK_NCCL(ncclReduceConfig(b.send, b.recv, count, type, op, root, comm, stream, cfg));
        break;
      case CollId::kAllToAll:
        RANK_NCCL(ncclAlltoAllConfig(b.send, b.recv, count, type, comm, stream, cfg));
        break;
      case CollId::kGather:
        if (count > 0) RANK_NCCL(ncclGatherConfig(b.send, b.recv, count, type, root, comm, stream, cfg));
        break;
      case CollId::kScatter:
        if (count > 0) RANK_NCCL(ncclScatterConfig(b.send, b.recv, count, type, root, comm, stream, cfg));
        break;
      case CollId::kSendRecv:
        return fail("sendrecv has no Config variant", kExitInvalidUsage);
    }
    return true;
  }

  bool callPlain(const CallBuffers& b, size_t count, ncclDataType_t type, ncclRedOp_t op, int root) {
    cudaStream_t stream = dev_->stream();
    ncclComm_t comm = comm_;
    switch (plan_.coll) {
      case CollId::kAllReduce:
        RANK_NCCL(ncclAllReduce(b.send, b.recv, count, type, op, comm, stream));
        break;
      case CollId::kAllGather:
        RANK_NCCL(ncclAllGather(b.send, b.recv, count, type, comm, stream));
        break;
      case CollId::kReduceScatter:
        RANK_NCCL(ncclReduceScatter(b.send, b.recv, count, type, op, comm, stream));
        break;
      case CollId::kBroadcast:
        RANK_NCCL(ncclBroadcast(b.send, b.recv, count, type, root, comm, stream));
        break;
      case CollId::kReduce:
        RANK_NCCL(ncclReduce(b.send, b.recv, count, type, op, root, comm, stream));
        break;
      case CollId::kAllToAll:
        RANK_NCCL(ncclAlltoAll(b.send, b.recv, count, type, comm, stream));
        break;
      case CollId::kSendRecv: {
        int n = ctx_.nranks;
        RANK_NCCL(ncclGroupStart());
        RANK_NCCL(ncclSend(b.send, count, type, (ctx_.rank + 1) % n, comm, stream));
        RANK_NCCL(ncclRecv(b.recv, count, type, (ctx_.rank - 1 + n) % n, comm, stream));
        RANK_NCCL(ncclGroupEnd());
        break;
      }
      case CollId::kGather:
        if (count > 0) RANK_NCCL(ncclGather(b.send, b.recv, count, type, root, comm, stream));
        break;
      case CollId::kScatter:
        if (count > 0) RANK_NCCL(ncclScatter(b.send, b.recv, count, type, root, comm, stream));
        break;
    }
    return true;
  }

  // Writes the inputs of a checked call (and zeroes the receive side).
  bool prepare(const Pattern& p, const CollShape& shape, const CallBuffers& b, bool inPlace) {
    const size_t elt = (size_t)p.type().size;
    if (dev_->isHost()) {
      fillRank(p, ctx_.rank, inPlace, shape, b.send, b.recvBase);
      return true;
    }
    fillRank(p, ctx_.rank, inPlace, shape, stageSend_.data(), stageRecv_.data());
    std::string err;
    size_t recvElems = inPlace ? inPlaceExtent(shape, ctx_.rank) : shape.recv;
    if (!inPlace && shape.send && !dev_->upload(b.send, stageSend_.data(), shape.send * elt, &err))
      return fail(err, kExitCudaError);
    if (recvElems && !dev_->upload(b.recvBase, stageRecv_.data(), recvElems * elt, &err))
      return fail(err, kExitCudaError);
    return true;
  }

  bool verify(const Pattern& p, const CollShape& shape, const CallBuffers& b, bool inPlace, int64_t* wrong) {
    const size_t elt = (size_t)p.type().size;
    const void* out = b.recv;
    if (!dev_->isHost()) {
      std::string err;
      if (shape.recv && !dev_->download(stageRecv_.data(), b.recv, shape.recv * elt, &err))
        return fail(err, kExitCudaError);
      out = stageRecv_.data();
    }
    WrongSample first;
    *wrong = countWrong(p, ctx_.rank, inPlace, shape, out, &first);
    return true;
  }

  bool benchStep(const PlanStep& s) {
    const PlanTest& t = plan_.tests[s.test];
    const CollInfo& ci = collInfo(plan_.coll);
    CollShape shape = collShape(plan_.coll, s.bytes, t.type->size, ctx_.nranks);
    CallBuffers b = buffersFor(t, shape, s.inPlace);
    const bool check = o_.checks > 0 && (!s.inPlace || ci.checksInPlace);

    if (check) {
      Pattern p(plan_.coll, *t.type, t.op, t.root, ctx_.nranks, plan_.dataSeed(step_, 0));
      if (!prepare(p, shape, b, s.inPlace)) return false;
    }
    // One untimed call brings every rank to the same point before the clock starts.
    if (!launch(t, shape, b, 1) || !sync()) return false;

    double sec = 0, cpuSec = 0;
    const double calls = (double)o_.iters * (double)o_.aggIters;
    if (o_.graphLaunches > 0 && dev_->supportsGraphs()) {
      std::string err;
      if (!dev_->beginCapture(&err)) return fail(err, kExitCudaError);
      for (int i = 0; i < o_.iters; ++i)
        if (!launch(t, shape, b, o_.aggIters)) return false;
      if (!dev_->endCapture(&err)) return fail(err, kExitCudaError);
      auto t0 = std::chrono::steady_clock::now();
      for (int l = 0; l < o_.graphLaunches; ++l)
        if (!dev_->launchGraph(&err)) return fail(err, kExitCudaError);
      cpuSec = secondsSince(t0);
      if (!sync()) return false;
      sec = secondsSince(t0);
      dev_->destroyGraph();
      sec /= calls * o_.graphLaunches;
      cpuSec /= calls * o_.graphLaunches;
    } else {
      auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < o_.iters; ++i)
        if (!launch(t, shape, b, o_.aggIters)) return false;
      cpuSec = secondsSince(t0);
      if (!sync()) return false;
      sec = secondsSince(t0);
      sec /= calls;
      cpuSec /= calls;
    }

    int64_t wrong = -1;
    if (check) {
      wrong = 0;
      for (int c = 0; c < o_.checks && wrong == 0; ++c) {
        Pattern p(plan_.coll, *t.type, t.op, t.root, ctx_.nranks, plan_.dataSeed(step_, c + 1));
        if (!prepare(p, shape, b, s.inPlace)) return false;
        if (!launch(t, shape, b, 1) || !sync()) return false;
        if (!verify(p, shape, b, s.inPlace, &wrong)) return false;
      }
    }
    Record r = baseRecord(RecordKind::kResult);
    r.step = step_;
    r.timeSec = sec;
    r.cpuSec = cpuSec;
    r.wrong = wrong;
    if (!writeRecord(ctx_.fd, r)) return fail("report channel closed", kExitNcclError);
    return true;
  }

#undef RANK_NCCL

  const RankContext& ctx_;
  const Options& o_;
  const Plan& plan_;
  std::unique_ptr<RankDevice> dev_;
  ncclComm_t comm_ = nullptr;
  ncclCollConfig_t collConfig_ = NCCL_COLLCONFIG_INITIALIZER;  // --coll-config
  char* send_ = nullptr;
  char* recv_ = nullptr;
  size_t sendBytes_ = 0, recvBytes_ = 0;
  std::vector<char> stageSend_, stageRecv_;
  void* sendHandle_ = nullptr;
  void* recvHandle_ = nullptr;
  ncclWindow_t sendWin_ = nullptr;
  ncclWindow_t recvWin_ = nullptr;
  int step_ = -1;
  std::string error_;
  int exitCode_ = kExitNcclError;
};

}  // namespace

int runRank(const RankContext& ctx) {
  RankRunner runner(ctx);
  return runner.run();
}

}  // namespace accl::bench
