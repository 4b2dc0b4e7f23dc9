// The P2P/cuda transport (kCudaP2pTransport, registered in transports/transport.h; built only
// with CUDA; transports/gpu_link.h decides which GPU pairs get it): each end's FIFO memory
// (receiver: tail + slots; sender: head) in its own device memory, reached by the other end's
// device directly: same process: the pointer (cudaDeviceEnablePeerAccess between two devices; one
// device shared by several ranks: the plain pointer); other process: a cuMem allocation exported
// as a POSIX fd and passed over an IpcSocket (util/ipc_socket.h), or a cudaIpc handle when cuMem
// is off or unusable (NCCL_CUMEM_ENABLE). P2P write: the sender stores into the receiver's slots.
// (P2P read, where the receiver reads the sender's buffer over NVLink for Simple, is future work:
// the blob has room for a sender-side buffer.) GPU pairs of one machine without a P2P path use
// SHM/cuda (transports/shm/cuda_shm.cc). Both apply only to ranks whose backend runs kernels on
// device FIFOs (PeerInfo::gpuFifos). This header holds the blob the two ends exchange.
#pragma once

#include <cstdint>

#include "transports/conn_region.h"
#include "transports/gpu_link.h"
#include "transports/transport.h"
#include "util/ipc_socket.h"

namespace accl {

// The payload of a P2P/cuda blob.
struct CudaP2pBlob {
  RegionRef region;       // the owner's region (header stamped in device memory)
  uint64_t address;       // the region's start in the owner process (direct mode)
  uint64_t processToken;  // random per owner process: proves `address` is in this process
  uint64_t allocBytes;    // size of the allocation to import (cuMem: granularity-rounded)
  uint64_t fdToken;       // the token the peer's fd header must carry (cuMem mode)
  IpcAddress socket;      // where the owner receives the peer's fd (cuMem mode)
  int32_t mode;           // P2pMode
  int32_t dev;            // the owner's CUDA device (in its own process's numbering)
  unsigned char ipcHandle[64];  // cudaIpcMemHandle_t (IPC mode)
};

}  // namespace accl
