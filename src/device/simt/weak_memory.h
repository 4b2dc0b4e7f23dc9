// The weak-memory mode of the CPU SIMT harness: a memory that keeps, for every location the
// layer stores to during a launch, the recent history of its values, and lets each simulated
// thread read any value the memory model still allows it to see. It owns the rules; the harness
// (cpu_harness.h) creates one Memory per launch and one Thread per GPU thread, and simt_cpu.h
// routes every layer access through them when the launch runs in this mode.
//
// Why a history and not only store buffers: a store buffer explains why a store is seen late,
// not why a reader that never synchronised sees an old value after others see the new one (a
// stale L1 line on a GPU). Both are "this thread may read an older entry of the history", so the
// model is one rule, with store buffers as its special case:
//
//   * Every thread has a view: per writer thread, the newest of that writer's stores it is
//     bound to see (a vector clock). A thread always knows its own stores (store-to-load
//     forwarding). A weak load of x may return any entry of x's history from the newest one the
//     thread knows (or last read: per-location coherence) up to the newest; the seeded PRNG picks
//     the newest half the time and an older allowed entry otherwise, so spin loops progress.
//   * storeRelease carries a copy of the writer's view; loadAcquire reads the newest entry and
//     joins the view it carries. A weak load remembers what it read; fence() joins that (a
//     relaxed load + fence is an acquire) and records the view that later weak stores carry
//     (fence + relaxed store is a release). Releases and fences are cumulative: the view includes
//     what the thread learnt from others through barriers. Fences are fence.sc: each also
//     learns what every earlier fence knew.
//   * Barriers (bar.sync, __syncthreads, __syncwarp) join the views of their participants:
//     CTA-scope ordering. bar.arrive contributes its view without learning others'. A barrier is
//     not an acquire of anything a participant read relaxed: that needs a fence (PTX: a
//     CTA-scope fence does not synchronise with another block's release).
//   * Scopes: the layer has kGpu and kSystem only, both mean "every thread of the launch". The
//     block level is what barriers share: a store a barrier passed to the block reaches other
//     blocks only through a release (or by luck).
//   * LL128: a warp's line store is one commit per aligned 128-byte segment it touches; a line
//     load picks one cut-off per segment, so an aligned line is seen whole and a line straddling
//     two segments may be seen torn.
//
// Not modelled: load->store reordering (a load is performed when issued, so a release or acquire
// that only orders earlier loads before later stores -- the FIFO's head -- is never needed
// here), and anything stored outside the layer (plain accesses to user buffers).
//
// Locations are naturally aligned 4- or 8-byte words (16-byte vectors are two 8-byte words); a
// location keeps one access size. Real memory always holds the newest value, so code outside the
// launch (and code after it) reads final values. One weak launch at a time may store to a given
// location. Choices are deterministic per seed and thread; the interleaving of OS threads is not.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <unordered_map>
#include <vector>

namespace accl::simt::cpu::weak {

using View = std::vector<uint32_t>;  // per writer thread of the launch: a store count
using ViewPtr = std::shared_ptr<const View>;

inline void joinInto(View& into, const View& from) {
  for (size_t i = 0; i < into.size() && i < from.size(); ++i)
    if (from[i] > into[i]) into[i] = from[i];
}

// splitmix64: small, seedable, good enough to pick entries.
inline uint64_t mix(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

struct Entry {
  uint64_t value;
  uint64_t stamp;  // global store order: the location's coherence order
  int writer;      // launch thread index; -1: the value the location held before the launch stored to it
  uint32_t seq;    // the writer's store count at this store
  ViewPtr carried; // what a reader that acquires this entry learns (null: nothing)
};

struct Location {
  int bytes = 8;
  std::vector<Entry> entries;  // oldest first, at most kHistory
};

// Older entries are dropped: fewer stale choices, never a wrong one.
constexpr size_t kHistory = 24;

class Memory {
 public:
  Memory(uint64_t seed, int threads) : seed_(seed), threads_(threads) {}
  uint64_t seed() const { return seed_; }
  int threads() const { return threads_; }

  std::mutex& mutex() { return mu_; }
  // The union of what every fence so far knew (fence.sc order). Call with mutex() held.
  View& fenceOrderView() { return fenceOrder_; }
  uint64_t nextStamp() { return nextStamp_++; }
  uint64_t lastStamp() const { return nextStamp_ - 1; }

  // The location at p, or null when the launch never stored there. Call with mutex() held.
  Location* find(const void* p, int bytes) {
    auto it = locs_.find(reinterpret_cast<uintptr_t>(p));
    if (it == locs_.end()) return nullptr;
    checkSize(it->second, bytes);
    return &it->second;
  }
  Location& findOrCreate(void* p, int bytes) {
    auto [it, fresh] = locs_.try_emplace(reinterpret_cast<uintptr_t>(p));
    if (fresh) {
      it->second.bytes = bytes;
      it->second.entries.push_back(Entry{readReal(p, bytes), 0, -1, 0, nullptr});
    }
    checkSize(it->second, bytes);
    return it->second;
  }

  static uint64_t readReal(const void* p, int bytes) {
    if (bytes == 8) return std::atomic_ref<uint64_t>(*static_cast<uint64_t*>(const_cast<void*>(p))).load(std::memory_order_relaxed);
    return std::atomic_ref<uint32_t>(*static_cast<uint32_t*>(const_cast<void*>(p))).load(std::memory_order_relaxed);
  }
  static void writeReal(void* p, int bytes, uint64_t v) {
    if (bytes == 8) std::atomic_ref<uint64_t>(*static_cast<uint64_t*>(p)).store(v, std::memory_order_relaxed);
    else std::atomic_ref<uint32_t>(*static_cast<uint32_t*>(p)).store(uint32_t(v), std::memory_order_relaxed);
  }

 private:
  static void checkSize(const Location& loc, int bytes) {
    if (loc.bytes != bytes)
      throw std::logic_error("weak memory: a location accessed as " + std::to_string(loc.bytes) + " and " +
                             std::to_string(bytes) + " bytes");
  }

  uint64_t seed_;
  int threads_;
  std::mutex mu_;
  std::unordered_map<uintptr_t, Location> locs_;
  uint64_t nextStamp_ = 1;
  View fenceOrder_;
};

// One simulated thread's side of the model. Only its own GPU thread calls it (barriers call
// view()/learn() from that thread too).
class Thread {
 public:
  Thread(Memory& memory, int index)
      : mem_(memory), index_(index), view_(size_t(memory.threads()), 0), rng_(memory.seed() * 0x100000001b3ull + uint64_t(index)) {}

  uint64_t random() { return mix(rng_); }
  bool oneIn(unsigned n) { return random() % n == 0; }
  const View& view() const { return view_; }
  void learn(const View& other) { joinInto(view_, other); }

  uint64_t loadRelaxed(const void* p, int bytes) {
    ViewPtr carried;
    uint64_t v;
    {
      std::lock_guard<std::mutex> lock(mem_.mutex());
      Location* loc = mem_.find(p, bytes);
      if (loc == nullptr) return Memory::readReal(p, bytes);
      const size_t lo = lowestAllowed(p, *loc);
      size_t pick = loc->entries.size() - 1;
      if (pick > lo && oneIn(2)) pick = lo + random() % (pick - lo + 1);
      const Entry& e = loc->entries[pick];
      lastRead_[reinterpret_cast<uintptr_t>(p)] = e.stamp;
      v = e.value;
      carried = e.carried;
    }
    if (carried) joinInto(pending_, *carried);  // an acquire fence later makes this ours
    return v;
  }

  uint64_t loadAcquire(const void* p, int bytes) {
    ViewPtr carried;
    uint64_t v;
    {
      std::lock_guard<std::mutex> lock(mem_.mutex());
      Location* loc = mem_.find(p, bytes);
      if (loc == nullptr) return Memory::readReal(p, bytes);
      const Entry& e = loc->entries.back();
      lastRead_[reinterpret_cast<uintptr_t>(p)] = e.stamp;  // the entry itself; the writer's earlier
      v = e.value;                                           // stores only through what it carries
      carried = e.carried;
    }
    if (carried) joinInto(view_, *carried);
    return v;
  }

  void storeRelaxed(void* p, int bytes, uint64_t v) { store(p, bytes, v, fenceView_); }
  void storeRelease(void* p, int bytes, uint64_t v) {
    ++seq_;
    view_[size_t(index_)] = seq_;
    storeCounted(p, bytes, v, std::make_shared<const View>(view_));
  }

  // Relaxed read-modify-write: reads the newest value (atomicity), stores like storeRelaxed.
  uint64_t fetchAdd(void* p, int bytes, uint64_t add) {
    std::lock_guard<std::mutex> lock(mem_.mutex());
    Location& loc = mem_.findOrCreate(p, bytes);
    const uint64_t old = loc.entries.back().value;
    const uint64_t mask = bytes == 8 ? ~uint64_t(0) : 0xffffffffull;
    append(p, loc, (old + add) & mask, fenceView_);
    return old;
  }

  // fence.sc at GPU or system scope (__threadfence, __threadfence_system): an acquire of what
  // was read relaxed before it, a release for the weak stores after it, and one total order of
  // fences, in which each learns what every earlier one knew (so store buffering is forbidden).
  void fence() {
    joinInto(view_, pending_);
    {
      std::lock_guard<std::mutex> lock(mem_.mutex());
      View& sc = mem_.fenceOrderView();
      if (sc.empty()) sc.assign(view_.size(), 0);
      joinInto(view_, sc);
      sc = view_;
    }
    fenceView_ = std::make_shared<const View>(view_);
  }

  // ---- LL128 ----

  // Stores a whole 128-byte line (16 words): one commit per aligned 128-byte segment.
  void storeLine(uint64_t* line, const uint64_t (&words)[16]) {
    std::lock_guard<std::mutex> lock(mem_.mutex());
    uint64_t stamp = 0;
    uintptr_t segment = ~uintptr_t(0);
    for (int i = 0; i < 16; ++i) {
      const uintptr_t seg = reinterpret_cast<uintptr_t>(line + i) / 128;
      if (seg != segment) {  // a new segment: a new commit
        segment = seg;
        stamp = mem_.nextStamp();
      }
      Location& loc = mem_.findOrCreate(line + i, 8);
      ++seq_;
      view_[size_t(index_)] = seq_;
      push(line + i, loc, Entry{words[i], stamp, index_, seq_, fenceView_});
    }
  }

  // Cut-offs for loading `line`: one per aligned segment it touches ([0] the first, [1] the
  // second, equal to [0] when the line is aligned). A word is then read as its newest entry at
  // or before the cut-off of its segment, so one segment's words come from one moment.
  void lineCutoffs(const uint64_t* line, uint64_t (&cut)[2]) {
    std::lock_guard<std::mutex> lock(mem_.mutex());
    const uintptr_t first = reinterpret_cast<uintptr_t>(line) / 128;
    for (int s = 0; s < 2; ++s) {
      uint64_t floor = 0;
      std::vector<uint64_t> stamps;
      for (int i = 0; i < 16; ++i) {
        if (reinterpret_cast<uintptr_t>(line + i) / 128 != first + uintptr_t(s)) continue;
        Location* loc = mem_.find(line + i, 8);
        if (loc == nullptr) continue;
        const size_t lo = lowestAllowed(line + i, *loc);
        if (loc->entries[lo].stamp > floor) floor = loc->entries[lo].stamp;
        if (loc->entries.front().stamp > floor) floor = loc->entries.front().stamp;  // older ones were dropped
        for (const Entry& e : loc->entries) stamps.push_back(e.stamp);
      }
      std::vector<uint64_t> allowed;
      for (uint64_t st : stamps)
        if (st >= floor) allowed.push_back(st);
      // "Newest" is now, not whenever each lane gets to read: a store after this is not seen.
      cut[s] = allowed.empty() || oneIn(2) ? mem_.lastStamp() : allowed[random() % allowed.size()];
    }
    if (reinterpret_cast<uintptr_t>(line) % 128 == 0) cut[1] = cut[0];
  }

  uint64_t loadWordAt(const uint64_t* word, uint64_t cutoff) {
    std::lock_guard<std::mutex> lock(mem_.mutex());
    Location* loc = mem_.find(word, 8);
    if (loc == nullptr) return Memory::readReal(word, 8);
    size_t pick = lowestAllowed(word, *loc);
    for (size_t i = loc->entries.size(); i-- > pick;)
      if (loc->entries[i].stamp <= cutoff) {
        pick = i;
        break;
      }
    const Entry& e = loc->entries[pick];
    lastRead_[reinterpret_cast<uintptr_t>(word)] = e.stamp;
    return e.value;
  }

 private:
  void store(void* p, int bytes, uint64_t v, const ViewPtr& carried) {
    ++seq_;
    view_[size_t(index_)] = seq_;
    storeCounted(p, bytes, v, carried);
  }
  void storeCounted(void* p, int bytes, uint64_t v, const ViewPtr& carried) {
    std::lock_guard<std::mutex> lock(mem_.mutex());
    Location& loc = mem_.findOrCreate(p, bytes);
    push(p, loc, Entry{v, mem_.nextStamp(), index_, seq_, carried});
  }
  void append(void* p, Location& loc, uint64_t v, const ViewPtr& carried) {  // mutex held
    ++seq_;
    view_[size_t(index_)] = seq_;
    push(p, loc, Entry{v, mem_.nextStamp(), index_, seq_, carried});
  }
  static void push(void* p, Location& loc, Entry e) {
    Memory::writeReal(p, loc.bytes, e.value);
    loc.entries.push_back(std::move(e));
    if (loc.entries.size() > kHistory) loc.entries.erase(loc.entries.begin());
  }

  // The oldest entry of `loc` this thread may still read: the newest it knows of (its view, or
  // the last it read of this location), else the oldest kept.
  size_t lowestAllowed(const void* p, const Location& loc) const {
    const auto seen = lastRead_.find(reinterpret_cast<uintptr_t>(p));
    const uint64_t lastStamp = seen == lastRead_.end() ? 0 : seen->second;
    for (size_t i = loc.entries.size(); i-- > 0;) {
      const Entry& e = loc.entries[i];
      if (e.writer < 0 || view_[size_t(e.writer)] >= e.seq || e.stamp <= lastStamp) return i;
    }
    return 0;
  }

  Memory& mem_;
  int index_;
  View view_;
  View pending_ = View(view_.size(), 0);  // views carried by entries read relaxed since the last fence
  ViewPtr fenceView_;                     // what weak stores carry: the view at the last fence
  uint32_t seq_ = 0;
  uint64_t rng_;
  std::unordered_map<uintptr_t, uint64_t> lastRead_;  // location -> stamp of the entry last read
};

}  // namespace accl::simt::cpu::weak
