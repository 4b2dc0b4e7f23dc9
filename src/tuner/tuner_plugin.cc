// TunerPlugin: finding, loading and adapting NCCL tuner plugins (see tuner_plugin.h).
#include "tuner/tuner_plugin.h"

#include <dlfcn.h>

#include <cstring>


#include "util/log.h"
#include "util/params.h"
#include "util/plugin_library.h"

namespace accl {
namespace {

// The logger handed to plugins (util/log.h pluginLogger): their lines go through accl's log with
// their own level and subsystem bits, named after the plugin kind when they give no file.
constexpr char kTunerOrigin[] = "tuner-plugin";

}  // namespace

void TunerPlugin::load(const TunerPluginArgs& args, std::unique_ptr<TunerPlugin>* out) {
  loadFrom(paramStr("NCCL_TUNER_PLUGIN"), args, out);
}

void TunerPlugin::loadFrom(const std::string& spec, const TunerPluginArgs& args, std::unique_ptr<TunerPlugin>* out) {
  out->reset();
  PluginLibrary lib = openPluginLibrary("tuner", spec);
  if (lib.disabled) {
    ACCL_INFO(ACCL_LOG_TUNING, "tuner plugin: disabled (NCCL_TUNER_PLUGIN=%s)", spec.c_str());
    return;
  }
  void* handle = lib.handle;
  const std::string& file = lib.file;
  const bool explicitChoice = lib.explicitChoice;
  if (!handle) {
    if (explicitChoice)
      ACCL_WARN("tuner plugin: cannot load NCCL_TUNER_PLUGIN=%s (%s); using the built-in model", spec.c_str(),
                lib.error.c_str());
    else
      ACCL_INFO(ACCL_LOG_TUNING, "tuner plugin: none (%s not found)", file.c_str());
    return;
  }

  std::unique_ptr<TunerPlugin> p(new TunerPlugin());
  p->handle_ = handle;
  p->path_ = file;
  const char* symbols[] = {kTunerSymbolV6, kTunerSymbolV5, kTunerSymbolV4, kTunerSymbolV3, kTunerSymbolV2};
  const int versions[] = {6, 5, 4, 3, 2};
  for (int i = 0; i < 5 && !p->api_; ++i) {
    if (void* sym = dlsym(handle, symbols[i])) {
      p->api_ = sym;
      p->version_ = versions[i];
    }
  }
  if (!p->api_) {
    if (explicitChoice)
      ACCL_WARN("tuner plugin: %s exports none of ncclTunerPlugin_v6/_v5/_v4/_v3/_v2; using the built-in model",
                file.c_str());
    else
      ACCL_INFO(ACCL_LOG_TUNING, "tuner plugin: %s has no tuner symbols", file.c_str());
    return;  // ~TunerPlugin unloads it (no context to finalize)
  }

  // Each version's first three members are name, init, getCollInfo (and the last one the
  // finalizer); check the pointers before calling anything.
  ncclResult_t res = ncclInternalError;
  const char* name = nullptr;
  bool complete = false;
  void* ctx = nullptr;
  switch (p->version_) {
    case 6: {
      auto* api = static_cast<const TunerPluginV6*>(p->api_);
      name = api->name;
      complete = api->init && api->getCollInfo;
      NvlDomainInfoV5 nvl = args.nvlDomains;
      if (complete)
        res = api->init(&ctx, args.commId, args.nRanks, args.nNodes, pluginLogger<kTunerOrigin>, &nvl, args.constants);
      break;
    }
    case 5: {
      auto* api = static_cast<const TunerPluginV5*>(p->api_);
      name = api->name;
      complete = api->init && api->getCollInfo;
      NvlDomainInfoV5 nvl = args.nvlDomains;
      if (complete)
        res = api->init(&ctx, args.commId, args.nRanks, args.nNodes, pluginLogger<kTunerOrigin>, &nvl, args.constants);
      break;
    }
    case 4: {
      auto* api = static_cast<const TunerPluginV4*>(p->api_);
      name = api->name;
      complete = api->init && api->getCollInfo;
      if (complete) res = api->init(args.nRanks, args.nNodes, pluginLogger<kTunerOrigin>, &ctx);
      break;
    }
    case 3: {
      auto* api = static_cast<const TunerPluginV3*>(p->api_);
      name = api->name;
      complete = api->init && api->getCollInfo;
      if (complete) res = api->init(args.nRanks, args.nNodes, pluginLogger<kTunerOrigin>, &ctx);
      break;
    }
    default: {
      auto* api = static_cast<const TunerPluginV2*>(p->api_);
      name = api->name;
      complete = api->init && api->getCollInfo;
      if (complete) res = api->init(args.nRanks, args.nNodes, pluginLogger<kTunerOrigin>, &ctx);
      break;
    }
  }
  p->name_ = name ? name : file;
  if (!complete) {
    ACCL_WARN("tuner plugin: %s (v%d) lacks init or getCollInfo; using the built-in model", file.c_str(), p->version_);
    p->api_ = nullptr;
    return;
  }
  if (res != ncclSuccess) {
    ACCL_WARN("tuner plugin: %s (v%d, %s) init failed with error %d; using the built-in model", file.c_str(),
              p->version_, p->name_.c_str(), static_cast<int>(res));
    p->api_ = nullptr;  // init failed: nothing to finalize
    return;
  }
  p->ctx_ = ctx;
  ACCL_INFO(ACCL_LOG_INIT | ACCL_LOG_TUNING, "tuner plugin: using %s (v%d) from %s", p->name_.c_str(), p->version_,
            file.c_str());
  *out = std::move(p);
}

TunerPlugin::~TunerPlugin() {
  if (api_) {
    ncclResult_t (*finish)(void*) = nullptr;
    switch (version_) {
      case 6: finish = static_cast<const TunerPluginV6*>(api_)->finalize; break;
      case 5: finish = static_cast<const TunerPluginV5*>(api_)->finalize; break;
      case 4: finish = static_cast<const TunerPluginV4*>(api_)->destroy; break;
      case 3: finish = static_cast<const TunerPluginV3*>(api_)->destroy; break;
      default: finish = static_cast<const TunerPluginV2*>(api_)->destroy; break;
    }
    if (finish && finish(ctx_) != ncclSuccess)
      ACCL_INFO(ACCL_LOG_TUNING, "tuner plugin %s: finalize returned an error (ignored)", name_.c_str());
  }
  if (handle_) dlclose(handle_);
}

void TunerPlugin::getCollInfo(FuncId func, size_t bytes, int numPipeOps, float (*table)[kPluginProtos],
                              int* nChannels) const {
  *nChannels = 0;
  float work[kPluginAlgos][kPluginProtos];
  std::memcpy(work, table, sizeof(work));
  int channels = 0;
  ncclResult_t res = ncclSuccess;
  float** asArg = reinterpret_cast<float**>(work);  // the ABI passes float[7][3] as float**
  switch (version_) {
    case 6:
      res = static_cast<const TunerPluginV6*>(api_)->getCollInfo(ctx_, func, bytes, numPipeOps, asArg, kPluginAlgos,
                                                                 kPluginProtos, /*regBuff=*/0, &channels);
      break;
    case 5:
      res = static_cast<const TunerPluginV5*>(api_)->getCollInfo(ctx_, func, bytes, numPipeOps, asArg, kPluginAlgos,
                                                                 kPluginProtos, /*regBuff=*/0, &channels);
      break;
    case 4:
      res = static_cast<const TunerPluginV4*>(api_)->getCollInfo(ctx_, func, bytes, numPipeOps, asArg, kPluginAlgos,
                                                                 kPluginProtos, /*regBuff=*/0, &channels);
      break;
    case 3:
      res = static_cast<const TunerPluginV3*>(api_)->getCollInfo(ctx_, func, bytes, numPipeOps, asArg, kPluginAlgos,
                                                                 kPluginProtos, &channels);
      break;
    default: {
      int algo = -1, proto = -1;
      res = static_cast<const TunerPluginV2*>(api_)->getCollInfo(ctx_, func, bytes, /*collNetSupport=*/0,
                                                                 /*nvlsSupport=*/0, numPipeOps, &algo, &proto,
                                                                 &channels);
      // v2 names its pick: make that entry the cheapest, if it exists here.
      if (res == ncclSuccess && algo >= 0 && algo < kPluginAlgos && proto >= 0 && proto < kPluginProtos &&
          work[algo][proto] >= 0.0f)
        work[algo][proto] = 0.0f;
      break;
    }
  }
  if (res != ncclSuccess) {
    if (!warned_.exchange(true)) {
      ACCL_WARN("tuner plugin %s: getCollInfo failed with error %d; the built-in choice is used", name_.c_str(),
                static_cast<int>(res));
    }
    return;
  }
  std::memcpy(table, work, sizeof(work));
  *nChannels = channels > 0 ? channels : 0;
}

size_t TunerPlugin::chunkSize(FuncId func, size_t bytes, int algo, int proto, int nChannels, size_t computed) const {
  if (version_ < 6 || !api_) return computed;
  auto* api = static_cast<const TunerPluginV6*>(api_);
  if (!api->getChunkSize) return computed;
  size_t chunk = computed;
  ncclResult_t res = api->getChunkSize(ctx_, func, bytes, algo, proto, nChannels, &chunk);
  if (res != ncclSuccess) {
    if (!chunkWarned_.exchange(true))
      ACCL_WARN("tuner plugin %s: getChunkSize failed with error %d; the computed chunk size is used", name_.c_str(),
                static_cast<int>(res));
    return computed;
  }
  return chunk > 0 ? chunk : computed;
}

}  // namespace accl
