// TunerPlugin: an NCCL tuner plugin (v2..v6 ABI, tuner/tuner_plugin_abi.h) loaded from a shared
// library, behind one interface: the plugin edits a cost table of NCCL's seven algorithms x
// three protocols and may ask for a channel count.
//
// Which library (NCCL_TUNER_PLUGIN):
//   unset        libnccl-tuner.so if the dynamic loader finds it, silently nothing otherwise;
//   "none"       no plugin;
//   a path       (contains '/') that file;
//   a name       libnccl-tuner-<name>.so, else the name itself as a library file name.
// A library that is named explicitly but cannot be loaded, exports none of ncclTunerPlugin_v6,
// _v5, _v4, _v3, _v2 (tried in that order), or whose init fails, is a warning and no plugin: the
// communicator carries on with the built-in model, as NCCL does. (NCCL also looks for the tuner
// symbols in the network plugin's library; accl does not.)
//
// v2 plugins return an algorithm and protocol instead of editing the table: the adapter sets
// that entry to 0 µs, which makes it the cheapest one available. v6 plugins may also adjust the
// chunk size (chunkSize()); the host backend sizes its chunks from FIFO slots and does not ask
// yet: that is for the CUDA backend's planner.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "device/common/ids.h"
#include "nccl.h"
#include "tuner/tuner_plugin_abi.h"

namespace accl {

struct TunerPluginArgs {
  size_t nRanks = 1;
  size_t nNodes = 1;
  uint64_t commId = 0;
  NvlDomainInfoV5 nvlDomains{1, 1, 1};
  // In/out for v5 and v6 plugins: the model's constants (never null: pass a scratch copy if need be).
  TunerConstantsV5* constants = nullptr;
};

class TunerPlugin {
 public:
  ~TunerPlugin();  // finalize (v5, v6) / destroy (v2-v4), then unloads the library
  TunerPlugin(const TunerPlugin&) = delete;
  TunerPlugin& operator=(const TunerPlugin&) = delete;

  // Loads the plugin NCCL_TUNER_PLUGIN names; *out is null when there is none (never an error).
  static void load(const TunerPluginArgs& args, std::unique_ptr<TunerPlugin>* out);
  // Same with the setting given explicitly ("" = unset).
  static void loadFrom(const std::string& spec, const TunerPluginArgs& args, std::unique_ptr<TunerPlugin>* out);

  const char* name() const { return name_.c_str(); }
  int version() const { return version_; }
  const std::string& path() const { return path_; }

  // Lets the plugin edit `table` (µs, negative = not available) for one collective of `bytes`.
  // *nChannels is the plugin's channel count, 0 when it has no opinion. On a plugin error the
  // table is left as it was (logged once).
  void getCollInfo(FuncId func, size_t bytes, int numPipeOps, float (*table)[kPluginProtos], int* nChannels) const;

  // A v6 plugin's chunk size for one collective with algo / proto (NCCL indices) and nChannels
  // chosen: `computed` when the plugin has no getChunkSize (v2-v5, or NULL), fails (logged once)
  // or answers 0. The caller clamps the result to what its buffers hold.
  size_t chunkSize(FuncId func, size_t bytes, int algo, int proto, int nChannels, size_t computed) const;

 private:
  TunerPlugin() = default;
  void* handle_ = nullptr;
  int version_ = 0;
  const void* api_ = nullptr;  // TunerPluginV<version_>
  void* ctx_ = nullptr;
  std::string name_;
  std::string path_;
  mutable std::atomic<bool> warned_{false};       // getCollInfo failure logged once
  mutable std::atomic<bool> chunkWarned_{false};  // getChunkSize failure logged once
};

}  // namespace accl
