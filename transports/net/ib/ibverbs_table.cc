// Loads the verbs entry points of transports/net/ib/ibverbs_table.h with dlopen / dlsym.
#if __has_include(<infiniband/verbs.h>)
#include "transports/net/ib/ibverbs_table.h"

#include <dlfcn.h>

#include <map>
#include <memory>
#include <mutex>

#include "util/params.h"

namespace accl::ib {

const char* IbvTable::statusText(ibv_wc_status status) const {
  if (wcStatusStr) return wcStatusStr(status);
  return "work completion error";
}

namespace {

template <typename Fn>
bool bind(void* handle, const char* name, Fn* out, bool required, std::string* missing) {
  *out = reinterpret_cast<Fn>(dlsym(handle, name));
  if (!*out && required) {
    if (!missing->empty()) *missing += ", ";
    *missing += name;
  }
  return *out != nullptr || !required;
}

std::unique_ptr<IbvTable> load(const std::string& path, std::string* why) {
  dlerror();
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* err = dlerror();
    *why = "cannot load " + path + ": " + (err ? err : "unknown error");
    return nullptr;
  }
  auto t = std::make_unique<IbvTable>();
  t->handle = h;
  t->path = path;
  std::string missing;
  bind(h, "ibv_get_device_list", &t->getDeviceList, true, &missing);
  bind(h, "ibv_free_device_list", &t->freeDeviceList, true, &missing);
  bind(h, "ibv_get_device_name", &t->getDeviceName, true, &missing);
  bind(h, "ibv_open_device", &t->openDevice, true, &missing);
  bind(h, "ibv_close_device", &t->closeDevice, true, &missing);
  bind(h, "ibv_query_device", &t->queryDevice, true, &missing);
  bind(h, "ibv_query_port", &t->queryPort, true, &missing);
  bind(h, "ibv_query_gid", &t->queryGid, true, &missing);
  bind(h, "ibv_alloc_pd", &t->allocPd, true, &missing);
  bind(h, "ibv_dealloc_pd", &t->deallocPd, true, &missing);
  bind(h, "ibv_reg_mr", &t->regMr, true, &missing);
  bind(h, "ibv_dereg_mr", &t->deregMr, true, &missing);
  bind(h, "ibv_create_cq", &t->createCq, true, &missing);
  bind(h, "ibv_destroy_cq", &t->destroyCq, true, &missing);
  bind(h, "ibv_create_qp", &t->createQp, true, &missing);
  bind(h, "ibv_modify_qp", &t->modifyQp, true, &missing);
  bind(h, "ibv_destroy_qp", &t->destroyQp, true, &missing);
  bind(h, "ibv_reg_mr_iova2", &t->regMrIova2, false, &missing);
  bind(h, "ibv_reg_dmabuf_mr", &t->regDmabufMr, false, &missing);
  bind(h, "ibv_wc_status_str", &t->wcStatusStr, false, &missing);
  bind(h, "ibv_fork_init", &t->forkInit, false, &missing);
  if (!missing.empty()) {
    *why = path + " lacks " + missing;
    dlclose(h);
    return nullptr;
  }
  return t;
}

}  // namespace

const IbvTable* loadIbvTable(std::string* why) {
  // One table per library path, kept for the life of the process (tests switch paths).
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<IbvTable>> loaded;
  static std::map<std::string, std::string> failures;
  std::string path = paramStr("ACCL_IBVERBS_LIB");
  if (path.empty()) path = "libibverbs.so.1";
  std::lock_guard<std::mutex> lock(mu);
  auto it = loaded.find(path);
  if (it != loaded.end()) return it->second.get();
  auto f = failures.find(path);
  if (f != failures.end()) {
    *why = f->second;
    return nullptr;
  }
  std::unique_ptr<IbvTable> t = load(path, why);
  if (!t) {
    failures[path] = *why;
    return nullptr;
  }
  return (loaded[path] = std::move(t)).get();
}

}  // namespace accl::ib
#endif  // __has_include(<infiniband/verbs.h>)
