// SeqPublished (activity/seq_published.h), the lock-free record behind accl-ras's per-launch
// activity: a reader never sees a value half-written, a partial publish keeps the words it does
// not cover, and the RAS record built on it reads back what a launch wrote.
#include "activity/seq_published.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

#include "activity/ras_comms.h"

namespace accl {
namespace {

// Nine words that a whole publish always writes with one value: a torn read mixes two.
struct Nine {
  uint64_t w[9];
};

TEST(SeqPublished, ReadersNeverSeeATornValue) {
  SeqPublished<Nine> box;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> written{0};
  std::thread writer([&] {
    Nine v;
    for (uint64_t k = 1; !stop.load(std::memory_order_relaxed); ++k) {
      for (uint64_t& x : v.w) x = k;
      box.publish(v);
      written.store(k, std::memory_order_relaxed);
      for (int i = 0; i < 8; ++i) written.load(std::memory_order_relaxed);  // a launch's own work between
    }
  });
  // Reads while the writer runs: at least 300 000 reads and 100 000 writes (on a loaded machine
  // the writer may start late), at most 20 s.
  uint64_t torn = 0, backwards = 0, last = 0, reads = 0;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (; (reads < 300000 || written.load() < 100000) && std::chrono::steady_clock::now() < end; ++reads) {
    const Nine got = box.read();
    for (uint64_t x : got.w) torn += x != got.w[0];
    backwards += got.w[0] < last;
    last = got.w[0];
  }
  stop = true;
  writer.join();
  EXPECT_EQ(torn, 0u) << "torn reads among " << reads;
  EXPECT_EQ(backwards, 0u) << "reads that went back in time";
  EXPECT_GE(written.load(), 100000u) << "the writer hardly ran";
}

TEST(SeqPublished, APartialPublishKeepsTheOtherWords) {
  SeqPublished<Nine> box;
  Nine v;
  for (int i = 0; i < 9; ++i) v.w[i] = 100 + i;
  box.publish(v);
  for (uint64_t& x : v.w) x = 7;
  box.publish(v, 2 * sizeof(uint64_t), 4 * sizeof(uint64_t));  // words 2 and 3 only
  const Nine got = box.read();
  for (int i = 0; i < 9; ++i) EXPECT_EQ(got.w[i], (i == 2 || i == 3) ? 7u : 100u + i) << "word " << i;
}

TEST(SeqPublished, TheRasRecordReadsBackAStartAndAnEnd) {
  RasComm rec;
  rec.state.collSeq = 41;
  rec.state.busy = true;
  rec.state.current.func = 2;
  rec.state.current.count = 1024;
  rec.state.currentSinceNs = 5;
  rec.publishStart();
  RasLaunchState st = rec.launchState();
  EXPECT_TRUE(st.busy);
  EXPECT_FALSE(st.hasLast);
  EXPECT_EQ(st.collSeq, 41u);
  EXPECT_EQ(st.current.count, 1024u);
  rec.state.busy = false;
  rec.state.hasLast = true;
  rec.state.last = rec.state.current;
  rec.state.lastEndNs = 9;
  rec.publishEnd();
  st = rec.launchState();
  EXPECT_FALSE(st.busy);
  EXPECT_TRUE(st.hasLast);
  EXPECT_EQ(st.last.func, 2);
  EXPECT_EQ(st.last.count, 1024u);
  EXPECT_EQ(st.lastEndNs, 9);
  EXPECT_EQ(st.currentSinceNs, 5);  // the end leaves the start's words as they were
  EXPECT_EQ(rec.activity().lastNote, "");
  rec.setLastNote("not run");
  EXPECT_EQ(rec.activity().lastNote, "not run");
}

}  // namespace
}  // namespace accl
