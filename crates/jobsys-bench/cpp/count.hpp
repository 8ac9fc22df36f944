// What the C++ programs of jobsys-bench share: a per-thread count of the
// work they ran, summed to check every iteration.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

// One counter per thread, on its own cache lines, as the Rust side's
// count::bump: a shared atomic would make every library's nested case a
// measurement of that one contended line. Counters are never freed (a
// worker's count must outlive it until the total is read).
struct alignas(128) Counter {
    std::atomic<uint64_t> n{0};
};
static std::mutex g_counters_mu;
static std::vector<Counter *> g_counters;

static Counter &my_counter() {
    thread_local Counter *mine = [] {
        auto *c = new Counter;
        std::lock_guard<std::mutex> lock(g_counters_mu);
        g_counters.push_back(c);
        return c;
    }();
    return *mine;
}

// Count one unit of work on this thread's counter (only this thread writes
// it: a load and a store, no read-modify-write).
static inline void count_one() {
    std::atomic<uint64_t> &n = my_counter().n;
    n.store(n.load(std::memory_order_relaxed) + 1, std::memory_order_release);
}

// Units counted so far by every thread.
static uint64_t counted() {
    std::lock_guard<std::mutex> lock(g_counters_mu);
    uint64_t total = 0;
    for (Counter *c : g_counters) total += c->n.load(std::memory_order_acquire);
    return total;
}
