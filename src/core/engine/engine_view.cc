// EngineView's accessors: each forwards to the engine (see engine_view.h).
#include "core/engine/engine_view.h"

#include <cstdint>

#include "core/comm/buffer_registry.h"
#include "core/engine/engine.h"

namespace accl {

const CommFacts& EngineView::facts() const { return engine_->facts; }
int EngineView::nChannels() const { return engine_->nChannels; }
const FifoLayout& EngineView::layout() const { return engine_->layout; }
const ChannelPeers& EngineView::channel(int c) const { return engine_->channels[c]; }
Connection* EngineView::connection(int channel, int peer, bool isSend) const {
  return engine_->conns.find(channel, peer, isSend);
}
void EngineView::recycle(std::unique_ptr<Plan> plan) const { engine_->plans.recycle(std::move(plan)); }
bool EngineView::registeredBuffer(const void* ptr, size_t bytes, UserBufferReg* out) const {
  RegisteredRange r;
  if (!findRegisteredBuffer(engine_->comm, ptr, bytes, &r)) return false;
  *out = UserBufferReg{r.buff, r.size, static_cast<uint64_t>(reinterpret_cast<uintptr_t>(r.handle))};
  return true;
}

}  // namespace accl
