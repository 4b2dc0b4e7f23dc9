// Broken net plugins for the fallback tests, one per ACCL_BROKEN_MODE:
//   1 (bad symbol)  exports only "ncclNetPlugin_v5", a version accl does not load;
//   2 (init fails)  a v8 table whose init returns ncclSystemError;
//   3 (no devices)  a v8 table whose init succeeds but which reports 0 devices;
//   4 (incomplete)  a v8 table without isend.
// None of them gets as far as moving data: every other entry point fails.
#include "transports/net/plugin/net_plugin_abi.h"

namespace {

using namespace accl::netplugin;

ncclResult_t notReached() { return ncclInternalError; }
ncclResult_t initOk(LogFn) { return ncclSuccess; }
ncclResult_t initFails(LogFn log) {
  if (log) log(2, 0x10, __FILE__, __LINE__, "acclBroken: init refuses to start (test fixture)");
  return ncclSystemError;
}
ncclResult_t noDevices(int* count) {
  *count = 0;
  return ncclSuccess;
}
ncclResult_t oneDevice(int* count) {
  *count = 1;
  return ncclSuccess;
}

NetV8 brokenTable(int mode) {
  NetV8 t{};
  t.name = "acclBroken";
  t.init = mode == 2 ? initFails : initOk;
  t.devices = mode == 3 ? noDevices : oneDevice;
  t.getProperties = [](int, PropsV8*) { return notReached(); };
  t.listen = [](int, void*, void**) { return notReached(); };
  t.connect = [](int, void*, void**, DeviceHandle**) { return notReached(); };
  t.accept = [](void*, void**, DeviceHandle**) { return notReached(); };
  t.regMr = [](void*, void*, size_t, int, void**) { return notReached(); };
  t.deregMr = [](void*, void*) { return notReached(); };
  if (mode != 4) t.isend = [](void*, void*, int, int, void*, void**) { return notReached(); };
  t.irecv = [](void*, int, void**, int*, int*, void**, void**) { return notReached(); };
  t.test = [](void*, int*, int*) { return notReached(); };
  t.closeSend = [](void*) { return notReached(); };
  t.closeRecv = [](void*) { return notReached(); };
  t.closeListen = [](void*) { return notReached(); };
  return t;
}

}  // namespace

extern "C" {
#if ACCL_BROKEN_MODE == 1
__attribute__((visibility("default"))) NetV8 ncclNetPlugin_v5 = brokenTable(1);
#else
__attribute__((visibility("default"))) NetV8 ncclNetPlugin_v8 = brokenTable(ACCL_BROKEN_MODE);
#endif
}
