// The network proxy's ProxyStep events and the end of its ProxyOps (see net_conn.h and
// profiler/proxy_op_marks.h). A step is an event from when the proxy posts it to the device until
// the device has sent it (sender) or it has landed in the receiver's FIFO (receiver); its state
// SendWait / RecvWait carries its payload bytes. A receive that lands before the receiving rank's
// operation has begun has no ProxyOp to hang from yet and is not reported.
#include "transports/net/net_conn.h"

namespace accl {

void netProfileStepPosted(NetConnResources* r, uint64_t step, size_t bytes) {
  if (!r->prof || !r->prof->wants(prof::kProxyStep | prof::kNetPlugin)) return;
  void* op = r->profOps->opOf(step);
  if (!op) return;
  prof::Event e;
  e.d.type = prof::kProxyStep;
  e.d.parentObj = op;
  e.d.proxyStep.step = static_cast<int>(step);
  void* h = r->prof->start(e);
  prof::ProfStateArgsV5 args{};
  args.proxyStep.transSize = bytes;
  r->prof->record(h, r->side == ConnSide::kSend ? prof::kProxyStepSendWait : prof::kProxyStepRecvWait, &args);
  r->steps[step % kFifoSteps].profEvent = h;
}

void netProfileStepDone(NetConnResources* r, uint64_t step) {
  if (!r->prof) return;
  NetConnResources::Step& st = r->steps[step % kFifoSteps];
  if (st.profEvent) r->prof->stop(st.profEvent);
  st.profEvent = nullptr;
  r->profOps->retire(*r->prof, step + 1);
}

void netProfileRetireAll(NetConnResources* r) {
  if (!r->prof) return;
  for (NetConnResources::Step& st : r->steps) {
    if (st.profEvent) r->prof->stop(st.profEvent);
    st.profEvent = nullptr;
  }
  r->profOps->retireAll(*r->prof);
}

}  // namespace accl
