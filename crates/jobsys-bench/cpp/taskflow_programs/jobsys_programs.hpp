// jobsys versions of Taskflow's benchmark programs linear_chain, binary_tree
// and wavefront (the task graphs of taskflow/taskflow benchmarks/, written
// here through jobsys.hpp), and the timing harness their main programs use.
#pragma once
#include "jobsys.hpp"

#include <atomic>
#include <cassert>
#include <chrono>
#include <cstddef>
#include <vector>

namespace jobsys_programs {

// One system per thread count, kept for the process (as the Taskflow
// programs keep one static executor): `threads` working threads = the
// calling thread, which runs jobs while it waits, plus threads - 1 workers.
inline jobsys::System &system_for(unsigned threads) {
    static jobsys::System *systems[64] = {};
    if (!systems[threads]) {
        jobsys_config c = jobsys::default_config();
        c.workers = static_cast<int32_t>(threads) - 1;
        systems[threads] = new jobsys::System(c);
    }
    return *systems[threads];
}

template <class F>
std::chrono::microseconds timed(F &&f) {
    auto beg = std::chrono::high_resolution_clock::now();
    f();
    auto end = std::chrono::high_resolution_clock::now();
    return std::chrono::duration_cast<std::chrono::microseconds>(end - beg);
}

// A chain of `length` jobs, each after the one before.
inline void linear_chain(jobsys::System &js, std::size_t length) {
    std::size_t counter = 0;
    jobsys::Handle prev; // none: the first job has no dependency
    for (std::size_t i = 0; i < length; ++i) {
        prev = js.job().after(prev).schedule([&counter] { counter++; });
    }
    js.complete(prev);
    assert(counter == length);
}

// Nodes 1 .. 2^layers - 1, node i before nodes 2i and 2i + 1.
inline void binary_tree(jobsys::System &js, std::size_t layers) {
    std::atomic<std::size_t> counter{0};
    std::vector<jobsys::Handle> node(std::size_t(1) << layers);
    for (std::size_t i = 1; i < node.size(); ++i) {
        node[i] = js.job().after(node[i / 2]).schedule(
            [&counter] { counter.fetch_add(1, std::memory_order_relaxed); });
    }
    // The leaves come after every other node.
    for (std::size_t i = node.size() / 2; i < node.size(); ++i) js.complete(node[i]);
    assert(counter + 1 == node.size());
}

// An mb x nb grid of blocks, block (i, j) after (i - 1, j) and (i, j - 1).
inline void wavefront(jobsys::System &js, int mb, int nb, int (*block)(int, int)) {
    std::vector<jobsys::Handle> node(std::size_t(mb) * nb);
    for (int i = 0; i < mb; ++i) {
        for (int j = 0; j < nb; ++j) {
            jobsys::Handle up = i > 0 ? node[(i - 1) * nb + j] : jobsys::Handle();
            jobsys::Handle left = j > 0 ? node[i * nb + j - 1] : jobsys::Handle();
            node[i * nb + j] = js.job().after(up, left).schedule([=] { block(i, j); });
        }
    }
    js.complete(node.back()); // after every other block
}

} // namespace jobsys_programs
