// W1 (spawn-empty) from C++: jobsys through jobsys.hpp, and the C++ peers.
//
// One binary per library: compile with exactly one of -DJOBSYS_W1_JOBSYS,
// -DJOBSYS_W1_ENKITS, -DJOBSYS_W1_TASKFLOW, -DJOBSYS_W1_TBB. `jobsys-bench
// cpp-w1` does that (see cpp/README.md).
//
// Usage: w1 WORKERS SAMPLES WARMUP SINGLE FLAT DEPTH
//   WORKERS: jobsys workers besides the calling thread. Every peer gets
//   WORKERS + 1 threads in all, so that each library runs on as many threads.
// Prints one JSON object per case and line:
//   {"library":"..","case":"single","threads":N,"samples":[ns per job,...]}
//
// The kernels are those of crates/jobsys-bench/src/workloads/w1_kernels.rs:
//   single: schedule one empty job, wait for it; SINGLE times.
//   flat:   schedule FLAT empty jobs, then wait for them (newest first where
//           the library waits per job).
//   nested: binary fork/join tree of depth DEPTH (2^DEPTH - 1 jobs):
//           node(d) { count; if (d > 1) join(node(d - 1), node(d - 1)); }
// The empty job bumps a counter; every iteration checks the total.

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "count.hpp"

// The empty job: counts itself, nothing else.
__attribute__((noinline)) static void empty_job() { count_one(); }

struct Sizes {
    size_t single, flat;
    unsigned depth;
};

#if defined(JOBSYS_W1_JOBSYS)
#include "jobsys.hpp"
static const char *LIBRARY = "jobsys-cpp";
struct Lib {
    jobsys::System js;
    std::vector<jobsys::Handle> hs;
    static jobsys_config cfg(unsigned workers) {
        jobsys_config c = jobsys::default_config();
        c.workers = int32_t(workers);
        return c;
    }
    explicit Lib(unsigned workers) : js(cfg(workers)) {}
    void single(const Sizes &s) {
        for (size_t i = 0; i < s.single; i++) {
            auto h = js.schedule([] { empty_job(); });
            js.complete(h);
        }
    }
    void flat(const Sizes &s) {
        hs.clear();
        for (size_t i = 0; i < s.flat; i++) hs.push_back(js.schedule([] { empty_job(); }));
        for (size_t i = hs.size(); i-- > 0;) js.complete(hs[i]);
    }
    void node(unsigned d) {
        empty_job();
        if (d > 1) js.join([&] { node(d - 1); }, [&] { node(d - 1); });
    }
    void nested(const Sizes &s) { node(s.depth); }
};

#elif defined(JOBSYS_W1_ENKITS)
#include "TaskScheduler.h"
static const char *LIBRARY = "enkiTS";
// enkiTS: a task set of set size 1 is its unit of work; AddTaskSetToPipe then
// WaitforTask (the waiting thread runs tasks meanwhile) is its
// "schedule one task, wait for it".
struct EmptyTask : enki::ITaskSet {
    void ExecuteRange(enki::TaskSetPartition, uint32_t) override { empty_job(); }
};
struct Lib;
// nested: a task set that adds its two children and waits for them
// (WaitforTask runs other tasks meanwhile): enkiTS's fork/join idiom.
struct NodeTask : enki::ITaskSet {
    enki::TaskScheduler *ts = nullptr;
    unsigned depth = 0;
    void ExecuteRange(enki::TaskSetPartition, uint32_t) override;
};
static void enki_node(enki::TaskScheduler &ts, unsigned d) {
    empty_job();
    if (d > 1) {
        NodeTask a, b;
        a.ts = b.ts = &ts;
        a.depth = b.depth = d - 1;
        ts.AddTaskSetToPipe(&a);
        ts.AddTaskSetToPipe(&b);
        ts.WaitforTask(&b);
        ts.WaitforTask(&a);
    }
}
void NodeTask::ExecuteRange(enki::TaskSetPartition, uint32_t) { enki_node(*ts, depth); }
struct Lib {
    enki::TaskScheduler ts;
    std::vector<EmptyTask> tasks;
    explicit Lib(unsigned workers) { ts.Initialize(workers + 1); } // threads in all, the caller included
    void single(const Sizes &s) {
        EmptyTask t;
        for (size_t i = 0; i < s.single; i++) {
            ts.AddTaskSetToPipe(&t);
            ts.WaitforTask(&t);
        }
    }
    void flat(const Sizes &s) {
        if (tasks.size() != s.flat) tasks = std::vector<EmptyTask>(s.flat);
        for (auto &t : tasks) ts.AddTaskSetToPipe(&t);
        for (size_t i = tasks.size(); i-- > 0;) ts.WaitforTask(&tasks[i]);
    }
    void nested(const Sizes &s) { enki_node(ts, s.depth); }
};

#elif defined(JOBSYS_W1_TASKFLOW)
#include <taskflow/taskflow.hpp>
static const char *LIBRARY = "taskflow";
// Taskflow: no thread outside the executor runs tasks, so the executor gets
// all WORKERS + 1 threads and the calling thread only blocks.
//   single: executor.async(f).get() -- its "schedule one task, wait for it"
//           (a tf::Taskflow per job would add a graph build per job).
//   flat:   silent_async x FLAT, then wait_for_all (no per-task futures).
//   nested: one async task runs the tree; each node spawns its children with
//           tf::Runtime::silent_async and joins them with Runtime::corun
//           (the worker runs other tasks while it waits).
static void tf_node(tf::Runtime &rt, unsigned d) {
    empty_job();
    if (d > 1) {
        rt.silent_async([d](tf::Runtime &r) { tf_node(r, d - 1); });
        rt.silent_async([d](tf::Runtime &r) { tf_node(r, d - 1); });
        rt.corun();
    }
}
struct Lib {
    tf::Executor ex;
    explicit Lib(unsigned workers) : ex(workers + 1) {}
    void single(const Sizes &s) {
        for (size_t i = 0; i < s.single; i++) ex.async([] { empty_job(); }).get();
    }
    void flat(const Sizes &s) {
        for (size_t i = 0; i < s.flat; i++) ex.silent_async([] { empty_job(); });
        ex.wait_for_all();
    }
    void nested(const Sizes &s) {
        unsigned d = s.depth;
        ex.async([d](tf::Runtime &rt) { tf_node(rt, d); }).get();
    }
};

#elif defined(JOBSYS_W1_TBB)
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_invoke.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>
static const char *LIBRARY = "oneTBB";
// oneTBB: a task_arena of WORKERS + 1 slots, the calling thread in one.
//   single: task_group::run then wait.  flat: run x FLAT then one wait.
//   nested: parallel_invoke (its fork/join).
static void tbb_node(unsigned d) {
    empty_job();
    if (d > 1) tbb::parallel_invoke([d] { tbb_node(d - 1); }, [d] { tbb_node(d - 1); });
}
struct Lib {
    tbb::global_control gc;
    tbb::task_arena arena;
    explicit Lib(unsigned workers)
        : gc(tbb::global_control::max_allowed_parallelism, workers + 1), arena(int(workers + 1), 1) {}
    void single(const Sizes &s) {
        arena.execute([&] {
            tbb::task_group g;
            for (size_t i = 0; i < s.single; i++) {
                g.run([] { empty_job(); });
                g.wait();
            }
        });
    }
    void flat(const Sizes &s) {
        arena.execute([&] {
            tbb::task_group g;
            for (size_t i = 0; i < s.flat; i++) g.run([] { empty_job(); });
            g.wait();
        });
    }
    void nested(const Sizes &s) {
        arena.execute([&] { tbb_node(s.depth); });
    }
};
#else
#error "compile with one of -DJOBSYS_W1_JOBSYS, -DJOBSYS_W1_ENKITS, -DJOBSYS_W1_TASKFLOW, -DJOBSYS_W1_TBB"
#endif

int main(int argc, char **argv) {
    if (argc != 7) {
        std::fprintf(stderr, "usage: %s WORKERS SAMPLES WARMUP SINGLE FLAT DEPTH\n", argv[0]);
        return 2;
    }
    unsigned workers = unsigned(std::atoi(argv[1]));
    int samples = std::atoi(argv[2]), warmup = std::atoi(argv[3]);
    Sizes s{size_t(std::atoll(argv[4])), size_t(std::atoll(argv[5])), unsigned(std::atoi(argv[6]))};
    Lib lib(workers);
    struct Case {
        const char *name;
        size_t jobs;
        void (Lib::*run)(const Sizes &);
    } cases[] = {{"single", s.single, &Lib::single},
                 {"flat", s.flat, &Lib::flat},
                 {"nested", (size_t(1) << s.depth) - 1, &Lib::nested}};
    for (const Case &c : cases) {
        std::string out;
        for (int i = 0; i < warmup + samples; i++) {
            uint64_t before = counted();
            auto t0 = std::chrono::steady_clock::now();
            (lib.*c.run)(s);
            auto t1 = std::chrono::steady_clock::now();
            uint64_t ran = counted() - before;
            if (ran != c.jobs) {
                std::fprintf(stderr, "%s %s: %llu jobs ran, expected %zu\n", LIBRARY, c.name,
                             (unsigned long long)ran, c.jobs);
                return 1;
            }
            if (i < warmup) continue;
            double ns = double(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count()) / double(c.jobs);
            char buf[64];
            std::snprintf(buf, sizeof buf, "%s%.3f", out.empty() ? "" : ",", ns);
            out += buf;
        }
        std::printf("{\"library\":\"%s\",\"case\":\"%s\",\"threads\":%u,\"samples\":[%s]}\n", LIBRARY, c.name,
                    workers + 1, out.c_str());
        std::fflush(stdout);
    }
    return 0;
}
