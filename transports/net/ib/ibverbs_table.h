// The libibverbs entry points the IB network uses, loaded with dlopen (libibverbs.so.1, or the
// library ACCL_IBVERBS_LIB names) so that libnccl has no link dependency on libibverbs and loads on
// hosts without it. The types are the real ones from <infiniband/verbs.h>; the data-path calls
// (ibv_post_send / ibv_post_recv / ibv_poll_cq) are the header's inline wrappers, which call
// through the context's ops table and need no symbol.
#pragma once

#include <infiniband/verbs.h>

#include <string>

#include "nccl.h"

namespace accl::ib {

struct IbvTable {
  void* handle = nullptr;
  std::string path;
  // Required.
  ibv_device** (*getDeviceList)(int* num) = nullptr;
  void (*freeDeviceList)(ibv_device** list) = nullptr;
  const char* (*getDeviceName)(ibv_device* dev) = nullptr;
  ibv_context* (*openDevice)(ibv_device* dev) = nullptr;
  int (*closeDevice)(ibv_context* ctx) = nullptr;
  int (*queryDevice)(ibv_context* ctx, ibv_device_attr* attr) = nullptr;
  int (*queryPort)(ibv_context* ctx, uint8_t port, ibv_port_attr* attr) = nullptr;  // symbol ibv_query_port
  int (*queryGid)(ibv_context* ctx, uint8_t port, int index, ibv_gid* gid) = nullptr;
  ibv_pd* (*allocPd)(ibv_context* ctx) = nullptr;
  int (*deallocPd)(ibv_pd* pd) = nullptr;
  ibv_mr* (*regMr)(ibv_pd* pd, void* addr, size_t length, int access) = nullptr;
  int (*deregMr)(ibv_mr* mr) = nullptr;
  ibv_cq* (*createCq)(ibv_context* ctx, int cqe, void* cqContext, ibv_comp_channel* channel, int vector) = nullptr;
  int (*destroyCq)(ibv_cq* cq) = nullptr;
  ibv_qp* (*createQp)(ibv_pd* pd, ibv_qp_init_attr* attr) = nullptr;
  int (*modifyQp)(ibv_qp* qp, ibv_qp_attr* attr, int mask) = nullptr;
  int (*destroyQp)(ibv_qp* qp) = nullptr;
  // Optional (null when the library lacks them).
  ibv_mr* (*regMrIova2)(ibv_pd* pd, void* addr, size_t length, uint64_t iova, unsigned int access) = nullptr;
  ibv_mr* (*regDmabufMr)(ibv_pd* pd, uint64_t offset, size_t length, uint64_t iova, int fd, int access) = nullptr;
  const char* (*wcStatusStr)(ibv_wc_status status) = nullptr;
  int (*forkInit)() = nullptr;

  // Text of a work-completion status (the library's words when it has ibv_wc_status_str).
  const char* statusText(ibv_wc_status status) const;
};

// Loads the table once per process from ACCL_IBVERBS_LIB (default libibverbs.so.1). Returns null
// when the library or a required symbol is missing; *why then says what (for an INFO line). The
// library stays loaded for the life of the process.
const IbvTable* loadIbvTable(std::string* why);

}  // namespace accl::ib
