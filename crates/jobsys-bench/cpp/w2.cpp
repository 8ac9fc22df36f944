// W2 (parallel-for) from C++: oneTBB's parallel_for with its auto
// partitioner, and jobsys through jobsys.hpp, each beside a serial loop
// compiled the same way.
//
// One binary per library: compile with exactly one of -DJOBSYS_W2_JOBSYS,
// -DJOBSYS_W2_TBB. `jobsys-bench cpp-w2` does that (see cpp/README.md).
//
// Usage: w2 WORKERS SIZE SAMPLES WARMUP MULTIPLIER
//   WORKERS: jobsys workers besides the calling thread; oneTBB gets a
//   task_arena of WORKERS + 1 threads with one reserved for the caller, so
//   each library runs on as many threads.
//   MULTIPLIER: 3 (read from the command line, so that the 20 steps cannot
//   be folded into one multiply-add; the Rust side black-boxes it).
// Prints one JSON object per line, for the library and for the serial loop:
//   {"library":"..","size":N,"threads":N,"samples":[us per call,...]}
// Samples alternate (library, serial, library, ...), so that drift in the
// machine's load reaches both. Every call's array is compared with the
// serial result.
//
// The kernel is crates/jobsys-bench/src/workloads/w2_kernel.rs's: each
// element x becomes x * m + 1 (wrapping), 20 times.

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

static inline void kernel(uint32_t &x, uint32_t m) {
    uint32_t v = x;
    for (int i = 0; i < 20; i++) v = v * m + 1;
    x = v;
}

// Out of line: the serial loop and the libraries' bodies call the same code.
__attribute__((noinline)) static void kernel_range(uint32_t *xs, size_t begin, size_t end, uint32_t m) {
    for (size_t i = begin; i < end; i++) kernel(xs[i], m);
}

#if defined(JOBSYS_W2_JOBSYS)
#include "jobsys.hpp"
static const char *LIBRARY = "jobsys-cpp";
struct Lib {
    jobsys::System js;
    static jobsys_config cfg(unsigned workers) {
        jobsys_config c = jobsys::default_config();
        c.workers = int32_t(workers);
        return c;
    }
    explicit Lib(unsigned workers) : js(cfg(workers)) {}
    // Batch 0: the library chooses (Batch::Auto in Rust).
    void run(uint32_t *xs, size_t n, uint32_t m) {
        js.complete(js.parallel_for(0, n, 0, [=](size_t b, size_t e) { kernel_range(xs, b, e, m); }));
    }
};

#elif defined(JOBSYS_W2_TBB)
#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/partitioner.h>
#include <oneapi/tbb/task_arena.h>
static const char *LIBRARY = "oneTBB";
// max_allowed_parallelism: without it oneTBB caps its workers at the
// machine's cores, and an arena of more threads than cores gets fewer.
struct Lib {
    tbb::global_control gc;
    tbb::task_arena arena;
    explicit Lib(unsigned workers)
        : gc(tbb::global_control::max_allowed_parallelism, workers + 1), arena(int(workers) + 1, 1) {}
    // The default grain size (1) and the auto partitioner: oneTBB's default.
    void run(uint32_t *xs, size_t n, uint32_t m) {
        arena.execute([&] {
            tbb::parallel_for(
                tbb::blocked_range<size_t>(0, n),
                [=](const tbb::blocked_range<size_t> &r) { kernel_range(xs, r.begin(), r.end(), m); },
                tbb::auto_partitioner());
        });
    }
};

#else
#error "define one of JOBSYS_W2_JOBSYS, JOBSYS_W2_TBB"
#endif

static double us_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

static void print(const char *library, size_t n, unsigned threads, const std::vector<double> &xs) {
    std::string out;
    char buf[64];
    for (double x : xs) {
        std::snprintf(buf, sizeof buf, "%s%.3f", out.empty() ? "" : ",", x);
        out += buf;
    }
    std::printf("{\"library\":\"%s\",\"size\":%zu,\"threads\":%u,\"samples\":[%s]}\n", library, n, threads,
                out.c_str());
}

int main(int argc, char **argv) {
    if (argc != 6) {
        std::fprintf(stderr, "usage: %s WORKERS SIZE SAMPLES WARMUP MULTIPLIER\n", argv[0]);
        return 2;
    }
    unsigned workers = unsigned(std::atoi(argv[1]));
    size_t n = size_t(std::atoll(argv[2]));
    int samples = std::atoi(argv[3]), warmup = std::atoi(argv[4]);
    uint32_t m = uint32_t(std::atoi(argv[5]));
    std::vector<uint32_t> expect(n), xs(n);
    for (size_t i = 0; i < n; i++) expect[i] = uint32_t(i);
    kernel_range(expect.data(), 0, n, m);
    Lib lib(workers);
    std::vector<double> mine, serial;
    for (int i = 0; i < warmup + samples; i++) {
        for (size_t j = 0; j < n; j++) xs[j] = uint32_t(j);
        auto t0 = std::chrono::steady_clock::now();
        lib.run(xs.data(), n, m);
        double us = us_since(t0);
        if (xs != expect) {
            std::fprintf(stderr, "%s: the parallel loop's result differs from the serial one\n", LIBRARY);
            return 1;
        }
        for (size_t j = 0; j < n; j++) xs[j] = uint32_t(j);
        t0 = std::chrono::steady_clock::now();
        kernel_range(xs.data(), 0, n, m);
        double sus = us_since(t0);
        if (i < warmup) continue;
        mine.push_back(us);
        serial.push_back(sus);
    }
    print(LIBRARY, n, workers + 1, mine);
    print("serial-cpp", n, 1, serial);
    return 0;
}
