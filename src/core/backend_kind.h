// Which backend a communicator runs on (chosen at init by device/device_probe.h's selectBackend,
// agreed by every rank; core/backend.h is the interface a backend implements). A header of its
// own so that device code can name the kind without the communicator (core/comm.h).
#pragma once

namespace accl {

enum class Backend { Host, Cuda };

const char* backendName(Backend b);

}  // namespace accl
