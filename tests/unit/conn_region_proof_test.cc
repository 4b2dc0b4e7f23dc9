// The transport seam for the mapped-region transports (transports/transport.h, mapped_ends.h)
// and the proof that an attached region is the peer's (transports/region_proof.h): both ends own
// memory (the receiver its slots and tail, the sender its head) and map the other's; forged,
// swapped, foreign, wrongly sized and wrong-end regions are refused with ncclSystemError naming
// both ranks, never used. Also the registry's order and the "who can share memory" rule.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "support/transport_ends.h"
#include "transports/p2p/host_p2p.h"
#include "transports/region_proof.h"
#include "transports/shm/host_shm.h"
#include "transports/transport.h"
#include "util/host_identity.h"
#include "util/last_error.h"

namespace accl {
namespace {

constexpr int kChannel = 3;

FifoLayout smallLayout(size_t slotBytes = 64) {
  FifoLayout l;
  l.simpleSlotBytes = slotBytes;
  l.llSlotWords = 8;
  return l;
}

using test::EndPair;
using test::SetUpEnd;

PeerInfo peerInfo(int rank) { return test::localPeerInfo(rank); }

template <class T>
ConnBlob withPayload(const ConnBlob& blob, const T& payload) {
  ConnBlob b = blob;
  putBlobPayload(&b, payload);
  return b;
}

std::string lastError() { return lastErrorText(); }

void expectConnectedPair(EndPair& pair) {
  const FifoView& r = pair.recv.end.view;
  const FifoView& s = pair.send.end.view;
  // The sender stores into the receiver's slots and tail; the receiver into the sender's head.
  s.simple[100] = 42;
  EXPECT_EQ(r.simple[100], 42) << "the two mappings of the slots must be one memory";
  s.tail->value = 7;
  EXPECT_EQ(r.tail->value, 7u);
  r.head->value = 5;
  EXPECT_EQ(s.head->value, 5u);
  r.ll[3].flag = 9;
  EXPECT_EQ(s.ll[3].flag, 9u);
  EXPECT_EQ(r.layout.simpleSlotBytes, s.layout.simpleSlotBytes);
}

TEST(TransportSeamTest, RegistryListsP2pThenShmThenNet) {
  // A CUDA build lists its GPU transports first (transports/p2p/cuda_p2p.h); they serve only
  // ranks with device FIFOs, so these host-backend PeerInfos skip them.
#ifdef ACCL_HAVE_CUDA
  const int g = 2;
  EXPECT_STREQ(transportAt(0)->name, "P2P/cuda");
  EXPECT_STREQ(transportAt(1)->name, "SHM/cuda");
#else
  const int g = 0;
#endif
  ASSERT_EQ(transportCount(), g + 3);
  EXPECT_STREQ(transportAt(g + 0)->name, "P2P/host");
  EXPECT_STREQ(transportAt(g + 1)->name, "SHM/host");
  EXPECT_STREQ(transportAt(g + 2)->name, "NET");
  EXPECT_EQ(transportAt(g + 3), nullptr);
  EXPECT_EQ(transportAt(-1), nullptr);
  PeerInfo a = peerInfo(0), b = peerInfo(1);
  EXPECT_EQ(pickTransport(a, b), g + 0) << "ranks of one process use p2p";
  b.pid += 1;
  b.pidHash += 1;
  b.place.pid += 1;
  EXPECT_EQ(pickTransport(a, b), g + 1) << "processes of one kernel and PID namespace use shm";
  PeerInfo otherNode = b;
  otherNode.hostHash += 1;  // NCCL_HOSTID's virtual node: the network, as in NCCL
  EXPECT_EQ(pickTransport(a, otherNode), g + 2);
  b.place.pidNsInode += 1;
  EXPECT_EQ(pickTransport(a, b), -1) << "one node, no shared memory: the network only with p2p and shm disabled";
  for (int t = 0; t < g + 2; ++t) {
    EXPECT_EQ(transportAt(t)->send.proxyProgress, nullptr) << transportAt(t)->name << " needs no proxy";
    EXPECT_EQ(transportAt(t)->recv.proxyProgress, nullptr) << transportAt(t)->name << " needs no proxy";
  }
  EXPECT_NE(transportAt(g + 2)->send.proxyProgress, nullptr);
  EXPECT_NE(transportAt(g + 2)->recv.proxyProgress, nullptr);
}

TEST(TransportSeamTest, EachEndOwnsTheCountersItWaitsOn) {
  for (const Transport* t : {&kHostP2pTransport, &kHostShmTransport}) {
    const FifoLayout layout = smallLayout(128);
    EndPair pair(*t, layout);
    ASSERT_TRUE(pair.setUp()) << t->name << ": " << lastError();
    ASSERT_EQ(pair.connect(), ncclSuccess) << t->name << ": " << lastError();
    expectConnectedPair(pair);
    // Memory: the receiver owns header + tail + slots, the sender header + head; each maps the other's.
    const uint64_t recvRegion = kRegionHeaderBytes + layout.recvBytes();
    const uint64_t sendRegion = kRegionHeaderBytes + FifoLayout::sendBytes();
    EXPECT_EQ(recvRegion, 64u + 64u + 8 * 128u + 8 * 8 * 8u);
    EXPECT_EQ(pair.recv.end.ownedBytes, recvRegion) << t->name;
    EXPECT_EQ(pair.recv.end.mappedBytes, sendRegion) << t->name;
    EXPECT_EQ(pair.send.end.ownedBytes, sendRegion) << t->name;
    EXPECT_EQ(pair.send.end.mappedBytes, recvRegion) << t->name;
  }
}

TEST(TransportSeamTest, BlobsAreOpaqueAndBounded) {
  EXPECT_EQ(sizeof(ConnBlob), kConnBlobBytes);
  EXPECT_LE(sizeof(P2pBlob), sizeof(ConnBlob::payload));
  EXPECT_LE(sizeof(ShmBlob), sizeof(ConnBlob::payload));
  // The net transport's blob must hold at least a 128-byte listen handle (NCCL_NET_HANDLE_MAXSIZE).
  EXPECT_GE(sizeof(ConnBlob::payload), 128u + 64u);
}

TEST(ConnRegionProofTest, ForgedTokenIsRefused) {
  EndPair pair(kHostShmTransport, smallLayout());
  ShmBlob forged = blobPayload<ShmBlob>(pair.recv.blob);
  forged.region.token ^= 0x5a5a5a5a5a5a5a5aull;
  EXPECT_EQ(pair.send.connect(withPayload(pair.recv.blob, forged)), ncclSystemError);
  std::string msg = lastError();
  EXPECT_NE(msg.find("rank 1 cannot prove"), std::string::npos) << msg;
  EXPECT_NE(msg.find("rank 0's"), std::string::npos) << msg;
  EXPECT_NE(msg.find("token"), std::string::npos) << msg;
  EXPECT_NE(msg.find("channel 3"), std::string::npos) << msg;
  // The genuine blob still connects.
  EXPECT_EQ(pair.send.connect(pair.recv.blob), ncclSuccess) << lastError();
}

TEST(ConnRegionProofTest, ForgedHeadRegionIsRefusedByTheReceiver) {
  EndPair pair(kHostShmTransport, smallLayout());
  ShmBlob forged = blobPayload<ShmBlob>(pair.send.blob);
  forged.region.token += 1;
  EXPECT_EQ(pair.recv.connect(withPayload(pair.send.blob, forged)), ncclSystemError);
  std::string msg = lastError();
  EXPECT_NE(msg.find("rank 0 cannot prove"), std::string::npos) << msg;
  EXPECT_NE(msg.find("rank 1's"), std::string::npos) << msg;
}

// The case of ranks in two PID namespaces: the blob's /proc/<pid>/fd/<fd> resolves to another
// region of the same size (here: another region of this process, as the sender's own would be).
TEST(ConnRegionProofTest, AnotherRegionBehindTheNameIsRefused) {
  EndPair wanted(kHostShmTransport, smallLayout());
  SetUpEnd other(kHostShmTransport, ConnSide::kRecv, 0, 2, smallLayout());
  ShmBlob swapped = blobPayload<ShmBlob>(wanted.recv.blob);
  std::memcpy(swapped.path, blobPayload<ShmBlob>(other.blob).path, sizeof(swapped.path));
  EXPECT_EQ(wanted.send.connect(withPayload(wanted.recv.blob, swapped)), ncclSystemError);
  std::string msg = lastError();
  EXPECT_NE(msg.find("differs from the"), std::string::npos) << msg;
  EXPECT_NE(msg.find("refusing to use it"), std::string::npos) << msg;
}

// A receiver's region offered where the sender's head region belongs (same owner, other end).
TEST(ConnRegionProofTest, TheOtherEndsRegionIsRefused) {
  EndPair pair(kHostShmTransport, smallLayout());
  SetUpEnd otherEnd(kHostShmTransport, ConnSide::kSend, 1, 0, smallLayout());
  // A blob that claims to be a sender's head region but names a receiver's FIFO: refused before mapping.
  ShmBlob claim = blobPayload<ShmBlob>(pair.send.blob);
  std::memcpy(claim.path, blobPayload<ShmBlob>(pair.recv.blob).path, sizeof(claim.path));
  EXPECT_EQ(pair.recv.connect(withPayload(pair.send.blob, claim)), ncclSystemError);
  EXPECT_NE(lastError().find("bytes, the owner announced"), std::string::npos) << lastError();
  // A receiver's blob handed to the receiver as if it came from the sender: refused as malformed.
  EXPECT_EQ(pair.recv.connect(pair.recv.blob), ncclSystemError);
  EXPECT_NE(lastError().find("malformed"), std::string::npos) << lastError();
  EXPECT_EQ(pair.recv.connect(otherEnd.blob), ncclSuccess) << lastError();
}

TEST(ConnRegionProofTest, RegionOfAnotherSizeIsRefusedBeforeMapping) {
  EndPair wanted(kHostShmTransport, smallLayout(64));
  SetUpEnd larger(kHostShmTransport, ConnSide::kRecv, 0, 1, smallLayout(64 * 2));
  ShmBlob swapped = blobPayload<ShmBlob>(wanted.recv.blob);
  std::memcpy(swapped.path, blobPayload<ShmBlob>(larger.blob).path, sizeof(swapped.path));
  EXPECT_EQ(wanted.send.connect(withPayload(wanted.recv.blob, swapped)), ncclSystemError);
  std::string msg = lastError();
  EXPECT_NE(msg.find("bytes, the owner announced"), std::string::npos) << msg;
  EXPECT_NE(msg.find("rank 1 cannot attach"), std::string::npos) << msg;
  // A size that does not match the layout is refused before anything is opened.
  ShmBlob wrongSize = blobPayload<ShmBlob>(wanted.recv.blob);
  wrongSize.region.bytes += 4096;
  EXPECT_EQ(wanted.send.connect(withPayload(wanted.recv.blob, wrongSize)), ncclSystemError);
  EXPECT_NE(lastError().find("malformed"), std::string::npos) << lastError();
}

TEST(ConnRegionProofTest, SomethingOtherThanARegionIsRefused) {
  EndPair wanted(kHostShmTransport, smallLayout());
  char path[] = "/tmp/accl-region-proof-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  unlink(path);
  ShmBlob foreign = blobPayload<ShmBlob>(wanted.recv.blob);
  ASSERT_EQ(ftruncate(fd, static_cast<off_t>(foreign.region.bytes)), 0);
  std::snprintf(foreign.path, sizeof(foreign.path), "/proc/%d/fd/%d", getpid(), fd);
  EXPECT_EQ(wanted.send.connect(withPayload(wanted.recv.blob, foreign)), ncclSystemError);
  std::string msg = lastError();
  EXPECT_NE(msg.find("not an accl region"), std::string::npos) << msg;
  close(fd);
}

// Plain memory with no header, as a region whose owner never stamped it.
class UnstampedRegion : public ConnRegion {
 public:
  UnstampedRegion() {
    mem_ = std::calloc(1, 4096);
    start_ = mem_;
  }
  ~UnstampedRegion() override { std::free(mem_); }

 private:
  void* mem_;
};

TEST(ConnRegionProofTest, UnstampedRegionIsRefused) {
  UnstampedRegion region;
  RegionRef ref{};
  ref.token = 1234;
  ref.bytes = 4096;
  std::string why;
  EXPECT_FALSE(regionMatchesRef(region, ref, &why));
  EXPECT_NE(why.find("no region header"), std::string::npos) << why;
  RegionRef stamped{};
  stamped.bytes = 4096;
  stampRegion(&region, RegionStamp{0, 1, kChannel, ConnSide::kRecv}, &stamped);
  EXPECT_TRUE(regionMatchesRef(region, stamped, &why)) << why;
  RegionRef otherEnd = stamped;
  otherEnd.side = static_cast<uint32_t>(ConnSide::kSend);
  EXPECT_FALSE(regionMatchesRef(region, otherEnd, &why));
  EXPECT_NE(why.find("receiver region"), std::string::npos) << why;
}

TEST(ConnRegionProofTest, P2pBlobOfAnotherProcessIsRefusedWithoutTouchingTheAddress) {
  EndPair pair(kHostP2pTransport, smallLayout());
  P2pBlob foreign = blobPayload<P2pBlob>(pair.recv.blob);
  foreign.processToken ^= 1;  // made by another process
  foreign.address = 0x10;     // an address that would fault if it were used
  EXPECT_EQ(pair.send.connect(withPayload(pair.recv.blob, foreign)), ncclSystemError);
  std::string msg = lastError();
  EXPECT_NE(msg.find("not made in this process"), std::string::npos) << msg;
  // The genuine blobs still connect (and take the peers' holds, so the memory is freed).
  ASSERT_EQ(pair.send.connect(pair.recv.blob), ncclSuccess) << lastError();
  ASSERT_EQ(pair.recv.connect(pair.send.blob), ncclSuccess) << lastError();
  expectConnectedPair(pair);
}

TEST(ConnRegionProofTest, P2pForgedTokenIsRefusedAndLeavesTheRegionIntact) {
  EndPair pair(kHostP2pTransport, smallLayout());
  P2pBlob forged = blobPayload<P2pBlob>(pair.recv.blob);
  forged.region.token += 1;
  EXPECT_EQ(pair.send.connect(withPayload(pair.recv.blob, forged)), ncclSystemError);
  EXPECT_NE(lastError().find("token"), std::string::npos) << lastError();
  // Only the owner's hold is left: the refused attach neither dropped it nor kept its own.
  const P2pBlob genuine = blobPayload<P2pBlob>(pair.recv.blob);
  EXPECT_EQ(p2pRegionHolders(genuine), 1u) << "a refused attach changed the holds";
  ASSERT_EQ(pair.send.connect(pair.recv.blob), ncclSuccess) << lastError();
  EXPECT_EQ(p2pRegionHolders(genuine), 2u);
}

// A p2p region outlives the end that made it while the peer still holds it: a rank that leaves
// early never pulls memory from under its peer.
TEST(ConnRegionProofTest, P2pRegionLivesUntilBothEndsLetGo) {
  auto pair = std::make_unique<EndPair>(kHostP2pTransport, smallLayout());
  ASSERT_EQ(pair->send.connect(pair->recv.blob), ncclSuccess) << lastError();
  ASSERT_EQ(pair->recv.connect(pair->send.blob), ncclSuccess) << lastError();
  const P2pBlob head = blobPayload<P2pBlob>(pair->send.blob);
  EXPECT_EQ(p2pRegionHolders(head), 2u);
  FifoView receiverView = pair->recv.end.view;
  kHostP2pTransport.send.free(&pair->send.end);  // the sender leaves first
  EXPECT_EQ(p2pRegionHolders(head), 1u);
  receiverView.head->value = 3;  // the receiver may still release into the head it maps
  EXPECT_EQ(receiverView.head->value, 3u);
}

TEST(ConnRegionProofTest, SharingMemoryNeedsOneKernelAndOnePidNamespace) {
  ProcessPlace self = processPlace();
  EXPECT_NE(self.pidNsInode, 0u);
  EXPECT_EQ(self.pid, getpid());
  std::string why;
  EXPECT_TRUE(canShareMemory(self, self, &why));

  ProcessPlace otherHost = self;  // NCCL_HOSTID plays no part: only kernel and PID namespace do
  std::snprintf(otherHost.hostname, sizeof(otherHost.hostname), "elsewhere");
  EXPECT_TRUE(canShareMemory(self, otherHost, &why));

  ProcessPlace container = self;
  container.pidNsInode += 1;
  EXPECT_FALSE(canShareMemory(self, container, &why));
  EXPECT_NE(why.find("different PID namespaces"), std::string::npos) << why;

  ProcessPlace machine = self;
  machine.bootHash ^= 1;
  EXPECT_FALSE(canShareMemory(self, machine, &why));
  EXPECT_NE(why.find("different machines"), std::string::npos) << why;
}

TEST(ConnRegionProofTest, TokensAreRandom) {
  EXPECT_NE(randomU64(), randomU64());
  EXPECT_NE(randomU64(), 0u);
}

}  // namespace
}  // namespace accl
