// The network proxy's ProxyStep events and the end of its ProxyOps (see net_conn.h and
// profiler/proxy_op_marks.h). A step is an event from just before the proxy posts it to the
// device until the device has sent it (sender) or it has landed in the receiver's FIFO
// (receiver); its state SendWait / RecvWait carries its payload bytes. Its requests carry the
// step's NetStepParent, under which a net plugin's own NetPlugin events hang
// (profiler/net_plugin_events.h). A receive that lands before the receiving rank's
// operation has begun has no ProxyOp to hang from yet and is not reported.
#include "transports/net/net_conn.h"

namespace accl {

void* netProfileStepBegin(NetConnResources* r, uint64_t step, size_t bytes) {
  NetConnResources::Step& st = r->steps[step % kFifoSteps];
  if (!st.profEvent) {
    if (!r->prof->wants(prof::kProxyStep | prof::kNetPlugin)) return nullptr;
    void* op = r->profOps->opOf(step);
    if (!op) return nullptr;
    prof::Event e;
    e.d.type = prof::kProxyStep;
    e.d.parentObj = op;
    e.d.proxyStep.step = static_cast<int>(step);
    st.profEvent = r->prof->start(e);
    if (!st.profEvent) return nullptr;
    prof::ProfStateArgsV5 args{};
    args.proxyStep.transSize = bytes;
    r->prof->record(st.profEvent, r->side == ConnSide::kSend ? prof::kProxyStepSendWait : prof::kProxyStepRecvWait,
                    &args);
    if (r->profParents) r->profParents[step % kFifoSteps].open(r->prof, st.profEvent);
  }
  return r->profParents ? &r->profParents[step % kFifoSteps] : nullptr;
}

void netProfileStepDone(NetConnResources* r, uint64_t step) {
  if (!r->prof) return;
  NetConnResources::Step& st = r->steps[step % kFifoSteps];
  if (r->profParents) r->profParents[step % kFifoSteps].close();
  if (st.profEvent) r->prof->stop(st.profEvent);
  st.profEvent = nullptr;
  r->profOps->retire(*r->prof, step + 1);
}

void netProfileRetireAll(NetConnResources* r) {
  if (!r->prof) return;
  if (r->profParents)
    for (int i = 0; i < kFifoSteps; ++i) r->profParents[i].stopLeftovers();
  for (NetConnResources::Step& st : r->steps) {
    if (st.profEvent) r->prof->stop(st.profEvent);
    st.profEvent = nullptr;
  }
  r->profOps->retireAll(*r->prof);
}

}  // namespace accl
