// The ABI table: a flat list of (name, value) facts about one nccl.h — enum values, macro values
// and types, struct sizes/alignments/field offsets, initializer contents, function signatures.
// Each table is produced by its own translation unit compiled against exactly one header
// (NVIDIA's, or ours with or without the CUDA headers); this header must not include nccl.h.
#pragma once

#include <string>
#include <vector>

namespace accl::abi {

struct Entry {
  std::string name;   // the C expression that was evaluated, e.g. "offsetof(ncclConfig_t, netName)"
  std::string value;  // its value (or type name) rendered as text
};
using Table = std::vector<Entry>;

// NVIDIA's nccl.h; empty when the build found no NVIDIA header.
Table nvidiaAbiTable();
// Our include/nccl.h with the CUDA runtime headers (when the build found them) ...
Table acclAbiTableWithCuda();
// ... and with -DACCL_NO_CUDA_HEADERS (the header declares cudaStream_t itself).
Table acclAbiTableNoCuda();

// Whether the "with CUDA" translation unit actually saw the CUDA headers.
bool acclWithCudaSawCudaHeaders();

}  // namespace accl::abi
