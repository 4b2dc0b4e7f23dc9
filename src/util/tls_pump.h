// The helper thread that drives TLS handshakes and the writes queued behind them (see
// util/tls_session.h): one per process, started with the first session that needs it, asleep while
// none does (a forked child starts its own). It polls the sessions' fds and calls TlsSession::pump() until each says it is done.
#pragma once

#include <memory>

namespace accl {

class TlsSession;

void addToTlsPump(std::shared_ptr<TlsSession> session);

}  // namespace accl
