// SeqPublished<T>: a small trivially copyable value that one writer at a time publishes without
// a lock or a locked instruction and any thread reads whole (a sequence lock): the writer makes
// the version odd, stores the changed words, makes it even again; a reader copies the words and
// retries when the version was odd or moved meanwhile. Every shared word is an atomic, so two
// writers that break the one-writer rule only give readers a mixed value, never undefined memory
// use. For per-launch records that a launch writes twice and a status reader rarely reads
// (activity/ras_comms.h): a mutex there cost four locked instructions per launch.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <thread>
#include <type_traits>

namespace accl {

template <class T>
class SeqPublished {
  static_assert(std::is_trivially_copyable_v<T>, "published by words");
  static constexpr size_t kWords = (sizeof(T) + 7) / 8;

 public:
  // Publishes the words of `v` that hold bytes [from, to) (offsetof a field, and the end of a
  // later one: the fields a write changed); the others keep what was published before.
  void publish(const T& v, size_t from = 0, size_t to = sizeof(T)) {
    const char* bytes = reinterpret_cast<const char*>(&v);
    const uint32_t version = version_.load(std::memory_order_relaxed);
    version_.store(version + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);  // the odd version before any word
    for (size_t i = from / 8; i < (to + 7) / 8; ++i) {
      uint64_t word = 0;  // straight from `v`: a staging copy stalled on store forwarding
      std::memcpy(&word, bytes + 8 * i, i + 1 < kWords || sizeof(T) % 8 == 0 ? 8 : sizeof(T) % 8);
      words_[i].store(word, std::memory_order_relaxed);
    }
    version_.store(version + 2, std::memory_order_release);
  }

  // A consistent copy. A reader hardly waits for a writer (a write is a few stores, and a
  // launch writes twice per call). A writer descheduled half-way leaves the version odd until it
  // runs again: after a short spin the reader yields the core to it, and only a writer stopped
  // for good (a debugger) makes it give up, after a second without a change, and take what it read.
  T read() const {
    uint64_t w[kWords];
    uint32_t previous = 0;
    std::chrono::steady_clock::time_point unchangedSince{};
    for (int tries = 0;; ++tries) {
      const uint32_t before = version_.load(std::memory_order_acquire);
      for (size_t i = 0; i < kWords; ++i) w[i] = words_[i].load(std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_acquire);  // the words before the second look
      if ((before & 1) == 0 && version_.load(std::memory_order_relaxed) == before) break;
      if (tries < 1000) continue;
      const auto now = std::chrono::steady_clock::now();
      if (tries == 1000 || before != previous) unchangedSince = now;
      previous = before;
      if (now - unchangedSince > std::chrono::seconds(1)) break;
      std::this_thread::yield();
    }
    T out;
    std::memcpy(&out, w, sizeof(T));
    return out;
  }

 private:
  std::atomic<uint32_t> version_{0};
  std::atomic<uint64_t> words_[kWords] = {};
};

}  // namespace accl
