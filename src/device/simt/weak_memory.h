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
//   * Load buffering (a load that reads a store its own thread's later stores led to) cannot be
//     shown by a model that performs a load when it is issued; it is detected instead. Each
//     thread numbers its events (stores, fences, barrier arrivals; an acquire load ends a number
//     too) and keeps two more clocks: `seen`, the newest event of each thread it has heard of
//     through any chain of reads (relaxed ones too) and barriers, and `ordered`, per thread the
//     position below which that thread's loads are ordered before this thread's later stores at
//     GPU scope. A load is ordered before its own thread's later stores by being an acquire, by a
//     later fence, or (for that one store) by a later release store. `ordered` travels with every
//     store: an acquire takes it at once, a relaxed read at its thread's next fence or release. A
//     barrier passes `ordered` to its participants and also orders each participant's earlier
//     loads (and what they read relaxed) before the others' later stores, but at CTA scope only:
//     that part reaches another block through a release or a fence, never through a relaxed store
//     (a relaxed store to a location loaded in its own block may count it). Each location keeps
//     its recent loads (thread, position). A store to it by a thread that has seen an event the
//     loading thread did after a load, while `ordered` does not cover that load, closes a cycle a
//     weak machine allows: the load could have read this store. The store throws, which fails the
//     launch naming both threads and the address. This is the FIFO's `head`: with a relaxed post
//     (receiver) or a relaxed wait (sender) the receiver's slot loads, before barrier B, are not
//     ordered before the sender's rewrite of the slot, after barrier A. A store that depends on
//     the load (the FIFO's does, through a spin loop and a barrier) is reported all the same: the
//     layer promises no dependency order. Nor does the rule look at values: a poll whose flag
//     check would have rejected the newer store (LL, LL128) is reported too, so code that reuses
//     LL/LL128 lines with only the flags' ping-pong between (the ping-pong kernels of
//     tests/simt/simt_test_kernels.h) fails in this mode. Not tracked (fewer reports, never a
//     wrong one): the read of a read-modify-write (counters whose order does not matter), a load
//     of a location the launch has not stored to yet, and an acquire load after relaxed loads not
//     yet fenced (one position cannot tell its order from theirs).
//
// Not modelled: anything stored outside the layer (plain accesses to user buffers).
//
// Locations are naturally aligned 4- or 8-byte words (16-byte vectors are two 8-byte words); a
// location keeps one access size. Real memory always holds the newest value, so code outside the
// launch (and code after it) reads final values. One weak launch at a time may store to a given
// location. Choices are deterministic per seed and thread; the interleaving of OS threads is not.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace accl::simt::cpu::weak {

using View = std::vector<uint32_t>;  // per thread of the launch: a position in its events
using ViewPtr = std::shared_ptr<const View>;

// Joins `from` into `into`; true when `into` grew.
inline bool joinInto(View& into, const View& from) {
  bool grew = false;
  for (size_t i = 0; i < into.size() && i < from.size(); ++i)
    if (from[i] > into[i]) {
      into[i] = from[i];
      grew = true;
    }
  return grew;
}

inline void raiseTo(View& v, int i, uint32_t to) {
  if (v[size_t(i)] < to) v[size_t(i)] = to;
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
  uint32_t seq;    // the writer's position at this store
  ViewPtr carried; // what a reader that acquires this entry learns (null: nothing)
  ViewPtr seen;    // the writer's `seen` clock (its own entry is seq)
  ViewPtr ordered; // loads ordered before this store (null: none; the writer's own entry is orderedOwn)
  uint32_t orderedOwn = 0;
};

// A load a later store must not have been able to feed: thread and position.
struct LoadMark {
  int thread;
  uint32_t pos;
};

struct Location {
  int bytes = 8;
  std::vector<Entry> entries;    // oldest first, at most kHistory
  std::vector<LoadMark> loads;   // oldest first, at most kLoadMarks
};

// Older entries and marks are dropped: fewer stale choices and fewer reports, never a wrong one.
constexpr size_t kHistory = 24;
constexpr size_t kLoadMarks = 16;

// What a barrier generation's arrivals knew (joined), for each participant to learn.
struct BarrierKnowledge {
  View hb;          // views
  View seen;        // `seen` clocks, arrivals included
  View ordered;     // `ordered` clocks (GPU scope)
  View orderedCta;  // ... and what the barrier orders at CTA scope: every arrival's earlier loads
  bool empty() const { return hb.empty(); }
  void clear() {
    hb.clear();
    seen.clear();
    ordered.clear();
    orderedCta.clear();
  }
};

class Memory {
 public:
  // `blockDim`: threads per block (what CTA-scope ordering covers); `firstBlock`: the grid index
  // of the launch's first block (for messages). Threads are numbered block-major.
  Memory(uint64_t seed, int threads, int blockDim = 0, int firstBlock = 0)
      : seed_(seed), threads_(threads), blockDim_(blockDim), firstBlock_(firstBlock) {}
  uint64_t seed() const { return seed_; }
  int threads() const { return threads_; }
  bool sameBlock(int a, int b) const { return blockDim_ > 0 && a / blockDim_ == b / blockDim_; }
  std::string describe(int thread) const {
    if (blockDim_ <= 0) return "launch thread " + std::to_string(thread);
    return "block " + std::to_string(firstBlock_ + thread / blockDim_) + " thread " +
           std::to_string(thread % blockDim_);
  }

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
      it->second.entries.push_back(Entry{readReal(p, bytes), 0, -1, 0, nullptr, nullptr, nullptr, 0});
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
  int blockDim_;
  int firstBlock_;
  std::mutex mu_;
  std::unordered_map<uintptr_t, Location> locs_;
  uint64_t nextStamp_ = 1;
  View fenceOrder_;
};

// One simulated thread's side of the model. Only its own GPU thread calls it (barriers call
// arriveAt()/leave() from that thread too).
class Thread {
 public:
  Thread(Memory& memory, int index)
      : mem_(memory), index_(index), view_(size_t(memory.threads()), 0), rng_(memory.seed() * 0x100000001b3ull + uint64_t(index)) {}

  uint64_t random() { return mix(rng_); }
  bool oneIn(unsigned n) { return random() % n == 0; }
  const View& view() const { return view_; }

  uint64_t loadRelaxed(const void* p, int bytes) {
    Heard heard;
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
      heard = Heard(e);
      markLoad(*loc, /*acquire=*/false);
    }
    if (heard.carried) joinInto(pending_, *heard.carried);  // an acquire fence later makes this ours
    hear(heard, ordPending_);
    return v;
  }

  uint64_t loadAcquire(const void* p, int bytes) {
    Heard heard;
    uint64_t v;
    {
      std::lock_guard<std::mutex> lock(mem_.mutex());
      Location* loc = mem_.find(p, bytes);
      if (loc == nullptr) return Memory::readReal(p, bytes);
      const Entry& e = loc->entries.back();
      lastRead_[reinterpret_cast<uintptr_t>(p)] = e.stamp;  // the entry itself; the writer's earlier
      v = e.value;                                           // stores only through what it carries
      heard = Heard(e);
      markLoad(*loc, /*acquire=*/true);
    }
    if (heard.carried) joinInto(view_, *heard.carried);
    if (hear(heard, ord_)) ordDirty_ = true;
    step();            // its own position: relaxed loads after it are not ordered by it
    return v;
  }

  void storeRelaxed(void* p, int bytes, uint64_t v) { store(p, bytes, v, fenceView_, /*release=*/false); }
  void storeRelease(void* p, int bytes, uint64_t v) { store(p, bytes, v, nullptr, /*release=*/true); }

  // Relaxed read-modify-write: reads the newest value (atomicity), stores like storeRelaxed. Its
  // read leaves no load mark (see the file comment).
  uint64_t fetchAdd(void* p, int bytes, uint64_t add) {
    std::lock_guard<std::mutex> lock(mem_.mutex());
    Location& loc = mem_.findOrCreate(p, bytes);
    const Entry& e = loc.entries.back();
    const uint64_t old = e.value;
    if (e.carried) joinInto(pending_, *e.carried);
    hear(Heard(e), ordPending_);
    const uint64_t mask = bytes == 8 ? ~uint64_t(0) : 0xffffffffull;
    const Stored s = prepareStore(fenceView_, /*release=*/false);
    checkLoads(p, loc, /*release=*/false);
    push(p, loc, s.entry((old + add) & mask, mem_.nextStamp()));
    return old;
  }

  // fence.sc at GPU or system scope (__threadfence, __threadfence_system): an acquire of what
  // was read relaxed before it, a release for the weak stores after it, and one total order of
  // fences, in which each learns what every earlier one knew (so store buffering is forbidden).
  // It also orders every earlier load (and what the barriers before it ordered at CTA scope)
  // before the stores after it.
  void fence() {
    joinInto(view_, pending_);
    step();
    {
      std::lock_guard<std::mutex> lock(mem_.mutex());
      View& sc = mem_.fenceOrderView();
      if (sc.empty()) sc.assign(view_.size(), 0);
      joinInto(view_, sc);
      sc = view_;
    }
    fenceView_ = std::make_shared<const View>(view_);
    joinInto(ord_, ordPending_);
    joinInto(ord_, ordCta_);
    ordDirty_ = true;
    unordered_ = false;
  }

  // ---- barriers (cpu_harness.h) ----

  // Arrival at a barrier (bar.sync, bar.arrive, __syncwarp): an event of this thread, after
  // which its earlier loads are ordered for the other participants (CTA scope).
  void arriveAt(BarrierKnowledge& acc) {
    step();
    lastObservable_ = seq_;
    const size_t n = view_.size();
    if (acc.empty()) {
      acc.hb.assign(n, 0);
      acc.seen.assign(n, 0);
      acc.ordered.assign(n, 0);
      acc.orderedCta.assign(n, 0);
    }
    joinInto(acc.hb, view_);
    joinInto(acc.seen, seen_);
    raiseTo(acc.seen, index_, seq_);
    joinInto(acc.ordered, ord_);
    raiseTo(acc.ordered, index_, ownOrdered());
    joinInto(acc.orderedCta, ord_);
    joinInto(acc.orderedCta, ordCta_);
    joinInto(acc.orderedCta, ordPending_);
    raiseTo(acc.orderedCta, index_, seq_);
  }
  // Leaving it (bar.sync, __syncwarp; not bar.arrive): what every arrival knew.
  void leave(const BarrierKnowledge& all) {
    joinInto(view_, all.hb);
    if (joinInto(seen_, all.seen)) seenDirty_ = true;
    if (joinInto(ord_, all.ordered)) ordDirty_ = true;
    joinInto(ordCta_, all.orderedCta);
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
      const Stored s = prepareStore(fenceView_, /*release=*/false);
      checkLoads(line + i, loc, /*release=*/false);
      push(line + i, loc, s.entry(words[i], stamp));
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
    Heard heard;
    uint64_t v;
    {
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
      v = e.value;
      heard = Heard(e);
      markLoad(*loc, /*acquire=*/false);
    }
    if (heard.carried) joinInto(pending_, *heard.carried);
    hear(heard, ordPending_);
    return v;
  }

 private:
  // What a read learns from the entry it read, copied under the memory's mutex.
  struct Heard {
    Heard() = default;
    explicit Heard(const Entry& e)
        : carried(e.carried), seen(e.seen), ordered(e.ordered), writer(e.writer), seq(e.seq),
          orderedOwn(e.orderedOwn) {}
    ViewPtr carried, seen, ordered;
    int writer = -1;
    uint32_t seq = 0, orderedOwn = 0;
  };

  // A store's entry but its value and stamp: the thread's clocks at the store.
  struct Stored {
    int writer;
    uint32_t seq;
    ViewPtr carried, seen, ordered;
    uint32_t orderedOwn;
    Entry entry(uint64_t value, uint64_t stamp) const {
      return Entry{value, stamp, writer, seq, carried, seen, ordered, orderedOwn};
    }
  };

  // Advances this thread's position (its own entry of its view follows).
  void step() {
    ++seq_;
    view_[size_t(index_)] = seq_;
  }

  // The position below which this thread's loads are ordered before its next store (GPU scope):
  // the first relaxed load not yet fenced, else every load so far.
  uint32_t ownOrdered() const { return unordered_ ? firstUnordered_ : seq_; }

  // A new position for a store and the clocks it carries. Call before taking the memory's mutex
  // or with it held: it touches only this thread's state.
  Stored prepareStore(const ViewPtr& relaxedCarried, bool release) {
    step();
    lastObservable_ = seq_;
    if (seenDirty_ || !seenSnap_) {
      seenSnap_ = std::make_shared<const View>(seen_);
      seenDirty_ = false;
    }
    Stored s{index_, seq_, relaxedCarried, seenSnap_, nullptr, 0};
    if (release) {
      // A release is cumulative and orders every earlier load: what barriers ordered at CTA
      // scope and what was read relaxed are ordered before it.
      s.carried = std::make_shared<const View>(view_);
      View ord = ord_;
      joinInto(ord, ordCta_);
      joinInto(ord, ordPending_);
      s.ordered = std::make_shared<const View>(std::move(ord));
      s.orderedOwn = seq_;
    } else {
      if (ordDirty_ || !ordSnap_) {
        ordSnap_ = std::make_shared<const View>(ord_);
        ordDirty_ = false;
      }
      s.ordered = ordSnap_;
      s.orderedOwn = ownOrdered();
    }
    return s;
  }

  void store(void* p, int bytes, uint64_t v, const ViewPtr& relaxedCarried, bool release) {
    const Stored s = prepareStore(relaxedCarried, release);
    std::lock_guard<std::mutex> lock(mem_.mutex());
    Location& loc = mem_.findOrCreate(p, bytes);
    checkLoads(p, loc, release);
    push(p, loc, s.entry(v, mem_.nextStamp()));
  }

  static void push(void* p, Location& loc, Entry e) {
    Memory::writeReal(p, loc.bytes, e.value);
    loc.entries.push_back(std::move(e));
    if (loc.entries.size() > kHistory) loc.entries.erase(loc.entries.begin());
  }

  // Takes what a read heard: its `seen` clock always; its `ordered` clock into `into` (ord_ for
  // an acquire, ordPending_ for a relaxed read). True when `into` grew.
  bool hear(const Heard& h, View& into) {
    if (h.writer < 0) return false;
    if (h.seen && h.seen != lastSeenHeard_) {
      if (joinInto(seen_, *h.seen)) seenDirty_ = true;
      lastSeenHeard_ = h.seen;
    }
    if (seen_[size_t(h.writer)] < h.seq) {
      seen_[size_t(h.writer)] = h.seq;
      seenDirty_ = true;
    }
    bool grew = h.ordered && joinInto(into, *h.ordered);
    if (into[size_t(h.writer)] < h.orderedOwn) {
      into[size_t(h.writer)] = h.orderedOwn;
      grew = true;
    }
    return grew;
  }

  // Leaves a mark of a load of `loc` at this thread's position. Call with the mutex held. A mark
  // of this thread with no store or barrier arrival since is moved instead: a store that could
  // have fed the older load could have fed this one.
  void markLoad(Location& loc, bool acquire) {
    if (!acquire && !unordered_) {
      unordered_ = true;
      firstUnordered_ = seq_;
    } else if (acquire && unordered_) {
      return;  // its order is not told apart from the relaxed loads before it: not tracked
    }
    for (size_t i = loc.loads.size(); i-- > 0;)
      if (loc.loads[i].thread == index_) {
        if (loc.loads[i].pos >= lastObservable_) loc.loads.erase(loc.loads.begin() + ptrdiff_t(i));
        break;
      }
    loc.loads.push_back(LoadMark{index_, seq_});
    if (loc.loads.size() > kLoadMarks) loc.loads.erase(loc.loads.begin());
  }

  // The load-buffering check of a store to `loc` by this thread (see the file comment). Call
  // with the mutex held.
  void checkLoads(const void* p, const Location& loc, bool release) const {
    for (const LoadMark& m : loc.loads) {
      if (m.thread == index_) continue;
      const size_t t = size_t(m.thread);
      if (seen_[t] <= m.pos) continue;  // nothing after that load reached this thread
      if (ord_[t] > m.pos) continue;
      if (release && (ordCta_[t] > m.pos || ordPending_[t] > m.pos)) continue;
      if (!release && mem_.sameBlock(m.thread, index_) && ordCta_[t] > m.pos) continue;
      char addr[32];
      std::snprintf(addr, sizeof addr, "%p", p);
      throw std::logic_error("weak memory: load buffering at " + std::string(addr) + ": " + mem_.describe(m.thread) +
                             " loaded it and then did something " + mem_.describe(index_) +
                             " has seen before storing to it, but no release/acquire, fence or barrier "
                             "chain orders that load before this " + (release ? "release " : "relaxed ") +
                             "store, so the load could have read it");
    }
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
  View view_;                             // happens-before: per thread, the newest store this one is bound to see
  View pending_ = View(view_.size(), 0);  // views carried by entries read relaxed since the last fence
  ViewPtr fenceView_;                     // what weak stores carry: the view at the last fence
  uint32_t seq_ = 0;                      // this thread's position: its stores, fences, barrier arrivals, acquires
  uint64_t rng_;
  std::unordered_map<uintptr_t, uint64_t> lastRead_;  // location -> stamp of the entry last read

  // Load buffering (see the file comment).
  View seen_ = View(view_.size(), 0);        // per thread, the newest event heard of
  View ord_ = View(view_.size(), 0);         // loads ordered before this thread's later stores (GPU scope)
  View ordPending_ = View(view_.size(), 0);  // `ordered` of entries read relaxed: ordered at a fence or release
  View ordCta_ = View(view_.size(), 0);      // ordered by barriers at CTA scope: a fence or release passes it on
  ViewPtr seenSnap_, ordSnap_;               // what relaxed stores carry, remade when the clock grew
  bool seenDirty_ = true, ordDirty_ = true;
  ViewPtr lastSeenHeard_;                    // the last `seen` snapshot joined (joins are idempotent)
  bool unordered_ = false;                   // a relaxed load of a tracked location since the last fence
  uint32_t firstUnordered_ = 0;              // ... at this position
  uint32_t lastObservable_ = 0;              // position of the last store or barrier arrival
};

}  // namespace accl::simt::cpu::weak
