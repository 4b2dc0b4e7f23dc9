// Which backend a communicator runs on (chosen at init by device/device_probe.h's selectBackend,
// agreed by every rank; core/engine/backend.h is the interface a backend implements). A header of its
// own, below core, so that the device probe can name the kind without the communicator.
#pragma once

namespace accl {

enum class Backend { Host, Cuda };

inline const char* backendName(Backend b) { return b == Backend::Cuda ? "cuda" : "host"; }

}  // namespace accl
