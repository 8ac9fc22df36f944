// A profiler bridge through jobsys::ProfilerHooks: the C++ twin of
// examples/c/profiler.c (same jobs, same output format). Each overridden
// method adds to its thread's row; only the overridden methods are
// installed as callbacks.
//
// Prints "profiler (C++): 3 frames, 48 jobs, every begin ended", then one
// line per thread (its jobs include jobsys's own, such as the combine
// groups; the counts and times vary from run to run).
//
// Build (after `cargo build -p jobsys-capi --release`, from crates/jobsys-capi):
//   c++ -std=c++17 -Wall -Wextra -Werror -Iinclude examples/cpp/profiler.cpp
//       ../../target/release/libjobsys_capi.a -lpthread -ldl -lm -o profiler_cpp
#include "jobsys.hpp"

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

namespace {

constexpr int kFrames = 3;
constexpr int kJobsPerFrame = 16;
constexpr uint32_t kMaxThreads = 64;

uint64_t now_ns() {
    return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::steady_clock::now().time_since_epoch())
                        .count());
}

// One row per thread index (docs/engine.md, "Thread index"), written only by its own thread, read
// after the System is destroyed (its workers joined).
struct Row {
    std::string name;
    uint64_t jobs = 0, job_ns = 0, waits = 0, sleeps = 0, begun_ns = 0;
    int depth = 0;
};

struct Timeline final : jobsys::ProfilerHooks {
    std::array<Row, kMaxThreads> rows;
    std::atomic<uint64_t> begins{0}, ends{0}, named{0}; // named: this program's jobs

    static bool is_ours(std::string_view name) {
        return name == "physics" || name == "animation" || name == "ai" || name == "audio";
    }

    void thread_start(uint32_t t, std::string_view name) override {
        if (t < kMaxThreads) rows[t].name = std::string(name); // valid only during the call
    }
    void job_begin(uint32_t t, uint64_t, std::string_view) override {
        begins++;
        if (t < kMaxThreads && rows[t].depth++ == 0) rows[t].begun_ns = now_ns();
    }
    void job_end(uint32_t t, uint64_t, std::string_view name) override {
        ends++;
        if (is_ours(name)) named++;
        if (t >= kMaxThreads) return;
        Row &r = rows[t];
        r.jobs++;
        if (--r.depth == 0) r.job_ns += now_ns() - r.begun_ns;
    }
    void wait_begin(uint32_t t, uint64_t) override {
        if (t < kMaxThreads) rows[t].waits++;
    }
    void sleep_begin(uint32_t t) override {
        if (t < kMaxThreads) rows[t].sleeps++;
    }
};

} // namespace

int main() {
    Timeline timeline; // must outlive the System
    {
        jobsys_config config = jobsys::default_config();
        config.workers = 2;
        jobsys::System js(config, timeline);
        const char *names[4] = {"physics", "animation", "ai", "audio"};
        for (int f = 0; f < kFrames; f++) {
            auto frame = js.frame();
            std::vector<jobsys::Handle> hs;
            for (int i = 0; i < kJobsPerFrame; i++)
                hs.push_back(js.job().name(names[i % 4]).schedule([i] {
                    volatile uint64_t x = uint64_t(i);
                    for (int k = 0; k < 200000; k++) x = x * 6364136223846793005u + 1;
                }));
            js.complete(js.combine(hs));
        }
    }
    uint64_t begins = timeline.begins, ends = timeline.ends;
    std::printf("profiler (C++): %d frames, %llu jobs, %s\n", kFrames,
                (unsigned long long)timeline.named.load(),
                begins == ends ? "every begin ended" : "UNBALANCED");
    for (uint32_t t = 0; t < kMaxThreads; t++) {
        const Row &r = timeline.rows[t];
        if (r.name.empty() && !r.jobs && !r.waits) continue;
        std::printf("thread %u %s: %llu jobs, %.3f ms in jobs, %llu waits, %llu sleeps\n", t,
                    r.name.empty() ? "(unnamed)" : r.name.c_str(), (unsigned long long)r.jobs,
                    double(r.job_ns) / 1e6, (unsigned long long)r.waits,
                    (unsigned long long)r.sleeps);
    }
    return begins == ends ? 0 : 1;
}
