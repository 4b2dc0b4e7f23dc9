// The identity of this node as every layer sees it: the host hash that groups ranks into nodes
// (PeerInfo::hostHash) and that topology XML carries as <cpu host_hash>. NCCL_HOSTID replaces the
// host name + boot id, which is how tests put ranks of one machine on virtual nodes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace accl {

// FNV-1a 64 of `n` bytes, continuing from `seed`.
uint64_t fnv1a64(const void* data, size_t n, uint64_t seed = 0xcbf29ce484222325ull);

// Same value on every rank of one node.
uint64_t hostHash();

}  // namespace accl
