// The identity of this node and process as every layer sees it:
// - the host hash that groups ranks into nodes (PeerInfo::hostHash) and that topology XML carries
//   as <cpu host_hash>. NCCL_HOSTID replaces the host name + boot id, which is how tests put ranks
//   of one machine on virtual nodes;
// - the process place (kernel instance, PID namespace, host name): what decides whether two
//   processes can really share memory, whatever NCCL_HOSTID says (transports/shm);
// - random 64-bit values for tokens that prove a shared region belongs to its owner.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace accl {

// FNV-1a 64 of `n` bytes, continuing from `seed`.
uint64_t fnv1a64(const void* data, size_t n, uint64_t seed = 0xcbf29ce484222325ull);

// Same value on every rank of one node.
uint64_t hostHash();

// Where a process runs, as far as sharing memory is concerned. Plain bytes (exchanged in PeerInfo).
struct ProcessPlace {
  uint64_t bootHash;    // hash of /proc/sys/kernel/random/boot_id: one value per running kernel
  uint64_t pidNsInode;  // inode and device of /proc/self/ns/pid: processes see each other's
  uint64_t pidNsDev;    //   /proc/<pid> only inside one PID namespace (of one kernel)
  int32_t pid;          // getpid() inside that namespace
  int32_t reserved;
  char hostname[64];    // the UTS host name (not NCCL_HOSTID), for messages
};

// This process's place (read on each call: a forked child gets its own pid).
ProcessPlace processPlace();

// Whether two processes can map each other's memory through /proc/<pid>/fd: same kernel and same
// PID namespace. When not, *why says how they differ ("different machines (boot ids differ)", ...).
bool canShareMemory(const ProcessPlace& a, const ProcessPlace& b, std::string* why);

// 64 random bits from the kernel (getrandom); never 0.
uint64_t randomU64();

}  // namespace accl
