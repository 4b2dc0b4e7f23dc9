// Keeps C++ exceptions from crossing the C API: every entry point runs its body through
// apiGuard(), which maps an escaped exception to an NCCL error with a message naming the call.
#pragma once

#include <new>
#include <system_error>

#include "core/comm/comm_lifetime.h"
#include "nccl.h"
#include "util/check.h"

namespace accl {

template <class Body>
ncclResult_t apiGuard(const char* call, Body&& body) noexcept {
  ApiCallScope scope;  // communicators the call checks stay alive until it returns
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return fail(ncclSystemError, "%s: out of host memory", call);
  } catch (const std::system_error& e) {
    return fail(ncclSystemError, "%s: %s", call, e.what());
  } catch (const std::exception& e) {
    return fail(ncclInternalError, "%s: unexpected internal exception: %s", call, e.what());
  } catch (...) {
    return fail(ncclInternalError, "%s: unexpected internal exception", call);
  }
}

}  // namespace accl
