// Proof that an attached connection region is the peer's (transports/region_proof.h) and the
// "who can share memory" rule (util/host_identity.h): forged, swapped, foreign and wrongly sized
// regions are refused with ncclSystemError naming both ranks, never used.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "transports/region_proof.h"
#include "transports/transport.h"
#include "util/host_identity.h"
#include "util/last_error.h"

namespace accl {
namespace {

FifoLayout smallLayout(size_t slotBytes = 64) {
  FifoLayout l;
  l.simpleSlotBytes = slotBytes;
  l.llSlotWords = 8;
  return l;
}

// A region owned by "rank 0" for "rank 1" on channel 3, as ConnectionTable makes it.
struct OwnedRegion {
  std::unique_ptr<ConnRegion> region;
  ConnBlob blob;
  OwnedRegion(const Transport& t, const FifoLayout& layout, int owner = 0, int peer = 1) {
    std::memset(&blob, 0, sizeof(blob));
    blob.magic = ConnBlob::kMagic;
    blob.layout = layout;
    EXPECT_EQ(t.setupRecv(layout, &region, &blob), ncclSuccess) << lastErrorText();
    stampRegion(region.get(), owner, peer, 3, &blob);
  }
};

std::string lastError() { return lastErrorText(); }

TEST(ConnRegionProofTest, GenuineShmRegionAttachesAndSharesMemory) {
  OwnedRegion owner(kHostShmTransport, smallLayout());
  std::unique_ptr<ConnRegion> mapped;
  ASSERT_EQ(attachPeerRegion(&kHostShmTransport, owner.blob, 1, 0, 3, &mapped), ncclSuccess) << lastError();
  static_cast<char*>(mapped->base())[100] = 42;
  EXPECT_EQ(static_cast<char*>(owner.region->base())[100], 42) << "the two mappings must be one memory";
  EXPECT_EQ(mapped->header()->token, owner.blob.token);
}

TEST(ConnRegionProofTest, ForgedTokenIsRefused) {
  OwnedRegion owner(kHostShmTransport, smallLayout());
  ConnBlob forged = owner.blob;
  forged.token ^= 0x5a5a5a5a5a5a5a5aull;
  std::unique_ptr<ConnRegion> mapped;
  EXPECT_EQ(attachPeerRegion(&kHostShmTransport, forged, 1, 0, 3, &mapped), ncclSystemError);
  EXPECT_EQ(mapped, nullptr);
  std::string msg = lastError();
  EXPECT_NE(msg.find("rank 1 cannot prove"), std::string::npos) << msg;
  EXPECT_NE(msg.find("rank 0's"), std::string::npos) << msg;
  EXPECT_NE(msg.find("token"), std::string::npos) << msg;
  EXPECT_NE(msg.find("channel 3"), std::string::npos) << msg;
}

// The case of ranks in two PID namespaces: the blob's /proc/<pid>/fd/<fd> resolves to another
// region of the same size (here: another region of this process, as the sender's own would be).
TEST(ConnRegionProofTest, AnotherRegionBehindTheNameIsRefused) {
  OwnedRegion wanted(kHostShmTransport, smallLayout());
  OwnedRegion other(kHostShmTransport, smallLayout(), 1, 0);
  ConnBlob swapped = wanted.blob;
  std::memcpy(swapped.name, other.blob.name, sizeof(swapped.name));
  std::unique_ptr<ConnRegion> mapped;
  EXPECT_EQ(attachPeerRegion(&kHostShmTransport, swapped, 1, 0, 3, &mapped), ncclSystemError);
  std::string msg = lastError();
  EXPECT_NE(msg.find("differs from the"), std::string::npos) << msg;
  EXPECT_NE(msg.find("refusing to use it"), std::string::npos) << msg;
}

TEST(ConnRegionProofTest, RegionOfAnotherSizeIsRefusedBeforeMapping) {
  OwnedRegion wanted(kHostShmTransport, smallLayout(64));
  OwnedRegion smaller(kHostShmTransport, smallLayout(64 * 2));  // larger, in fact: sizes differ
  ConnBlob swapped = wanted.blob;
  std::memcpy(swapped.name, smaller.blob.name, sizeof(swapped.name));
  std::unique_ptr<ConnRegion> mapped;
  EXPECT_EQ(attachPeerRegion(&kHostShmTransport, swapped, 1, 0, 3, &mapped), ncclSystemError);
  std::string msg = lastError();
  EXPECT_NE(msg.find("bytes, the owner announced"), std::string::npos) << msg;
  EXPECT_NE(msg.find("rank 1 cannot attach"), std::string::npos) << msg;
}

TEST(ConnRegionProofTest, SomethingOtherThanARegionIsRefused) {
  OwnedRegion wanted(kHostShmTransport, smallLayout());
  char path[] = "/tmp/accl-region-proof-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  unlink(path);
  ASSERT_EQ(ftruncate(fd, static_cast<off_t>(wanted.blob.bytes)), 0);
  ConnBlob foreign = wanted.blob;
  std::snprintf(foreign.name, sizeof(foreign.name), "/proc/%d/fd/%d", getpid(), fd);
  std::unique_ptr<ConnRegion> mapped;
  EXPECT_EQ(attachPeerRegion(&kHostShmTransport, foreign, 1, 0, 3, &mapped), ncclSystemError);
  std::string msg = lastError();
  EXPECT_NE(msg.find("not an accl region"), std::string::npos) << msg;
  close(fd);
}

TEST(ConnRegionProofTest, UnstampedRegionIsRefused) {
  std::unique_ptr<ConnRegion> region;
  ConnBlob blob;
  std::memset(&blob, 0, sizeof(blob));
  blob.layout = smallLayout();
  ASSERT_EQ(kHostShmTransport.setupRecv(blob.layout, &region, &blob), ncclSuccess);
  blob.token = 1234;  // the owner never wrote its header
  std::string why;
  EXPECT_FALSE(regionMatchesBlob(*region, blob, &why));
  EXPECT_NE(why.find("no region header"), std::string::npos) << why;
}

TEST(ConnRegionProofTest, P2pBlobOfAnotherProcessIsRefusedWithoutTouchingTheAddress) {
  OwnedRegion owner(kHostP2pTransport, smallLayout());
  ConnBlob foreign = owner.blob;
  foreign.processToken ^= 1;   // made by another process
  foreign.address = 0x10;      // an address that would fault if it were used
  std::unique_ptr<ConnRegion> mapped;
  EXPECT_EQ(attachPeerRegion(&kHostP2pTransport, foreign, 1, 0, 3, &mapped), ncclSystemError);
  std::string msg = lastError();
  EXPECT_NE(msg.find("not made in this process"), std::string::npos) << msg;
  // The genuine blob still attaches (and takes the sender's reference, so the memory is freed).
  ASSERT_EQ(attachPeerRegion(&kHostP2pTransport, owner.blob, 1, 0, 3, &mapped), ncclSuccess) << lastError();
}

TEST(ConnRegionProofTest, P2pForgedTokenIsRefusedAndLeavesTheRegionIntact) {
  OwnedRegion owner(kHostP2pTransport, smallLayout());
  ConnBlob forged = owner.blob;
  forged.token += 1;
  std::unique_ptr<ConnRegion> mapped;
  EXPECT_EQ(attachPeerRegion(&kHostP2pTransport, forged, 1, 0, 3, &mapped), ncclSystemError);
  EXPECT_NE(lastError().find("token"), std::string::npos) << lastError();
  // Only the owner's reference is left: the refused attach neither dropped it nor kept its own.
  EXPECT_EQ(static_cast<FifoCtrl*>(owner.region->base())->refs, 1u) << "a refused attach changed the references";
  ASSERT_EQ(attachPeerRegion(&kHostP2pTransport, owner.blob, 1, 0, 3, &mapped), ncclSuccess) << lastError();
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
