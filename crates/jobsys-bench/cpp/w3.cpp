// W3 (the frame graph) from C++: jobsys through jobsys.hpp, and the C++ peers.
//
// One binary per library: compile with exactly one of -DJOBSYS_W3_JOBSYS,
// -DJOBSYS_W3_ENKITS, -DJOBSYS_W3_TASKFLOW, -DJOBSYS_W3_TBB. `jobsys-bench
// cpp-w3` does that (see cpp/README.md).
//
// Usage: w3 WORKERS SAMPLES WARMUP GRAPH_FILE D_NS
//   WORKERS: jobsys workers besides the calling thread; every peer gets
//   WORKERS + 1 threads in all. GRAPH_FILE: the frame, as `jobsys-bench
//   cpp-w3` writes it from src/graph.rs (one job per line, schedule order):
//       PIECES SYNC NDEPS DEP...
//   PIECES 0 for a single job, else a parallel job of that many pieces;
//   SYNC the earlier job the frame's thread waits for before scheduling this
//   one, or -1; DEP the earlier jobs this one runs after.
// Prints one JSON object per form and line:
//   {"library":"..","threads":N,"samples":[ms per frame,...]}
//
// Every job or piece spins D_NS on the monotonic clock (as the Rust side's
// spin_ns) and counts itself; every frame checks the total, and one checked
// frame per form (before the timed ones) verifies that no piece started
// before its job's dependencies had finished.
//
// Each library runs the frame in its own idiomatic form:
//   jobsys-cpp:       the frame scheduled job by job every frame, as W3 on
//                     the Rust side: js.job().after(deps).schedule(f) or
//                     .parallel_for(0, pieces, 1, f), complete() at a sync
//                     point, then complete() on every job, newest first.
//   jobsys-cpp-graph: a jobsys::Graph built once, one run() per frame.
//   enkiTS, oneTBB (flow graph), Taskflow: their dependency graphs, built
//   once and run every frame (the form each documents for a task graph).
// The graphs turn a sync point into a chain of empty barrier nodes: barrier
// k runs after the synced job and barrier k - 1, and every job scheduled
// after sync point k runs after barrier k, so each job waits for what it
// waits for in the per-frame form. Parallel jobs: grain 1 (every piece may
// run alone), each library's default partitioner.

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "count.hpp"

static const uint32_t BARRIER = UINT32_MAX;

// One job of the frame, as GRAPH_FILE gives it.
struct Job {
    uint32_t pieces; // 0: a single job
    int64_t sync;    // -1: none
    std::vector<uint32_t> deps;
};

// A node of the frame as a dependency graph (sync points as barriers).
struct DagNode {
    uint32_t job;    // BARRIER for a barrier node
    uint32_t pieces; // 0: a single job (or a barrier)
    std::vector<uint32_t> preds;
};

struct W3 {
    std::vector<Job> jobs;
    std::vector<DagNode> dag; // in a valid serial order
    uint64_t d_ns = 0, pieces = 0;
    bool check = false;
    std::unique_ptr<std::atomic<bool>[]> done;
    std::unique_ptr<std::atomic<uint32_t>[]> left;
    std::atomic<uint64_t> violations{0};

    bool load(const char *path) {
        std::ifstream in(path);
        size_t n = 0;
        if (!(in >> n)) return false;
        jobs.resize(n);
        for (size_t i = 0; i < n; i++) {
            Job &j = jobs[i];
            size_t nd = 0;
            if (!(in >> j.pieces >> j.sync >> nd) || j.sync >= int64_t(i)) return false;
            j.deps.resize(nd);
            for (uint32_t &d : j.deps)
                if (!(in >> d) || d >= i) return false;
            pieces += j.pieces ? j.pieces : 1;
        }
        std::vector<uint32_t> id(n);
        int64_t barrier = -1;
        for (size_t i = 0; i < n; i++) {
            const Job &j = jobs[i];
            if (j.sync >= 0) {
                DagNode b{BARRIER, 0, {id[size_t(j.sync)]}};
                if (barrier >= 0) b.preds.push_back(uint32_t(barrier));
                barrier = int64_t(dag.size());
                dag.push_back(std::move(b));
            }
            DagNode x{uint32_t(i), j.pieces, {}};
            for (uint32_t d : j.deps) x.preds.push_back(id[d]);
            if (barrier >= 0) x.preds.push_back(uint32_t(barrier));
            id[i] = uint32_t(dag.size());
            dag.push_back(std::move(x));
        }
        done.reset(new std::atomic<bool>[n]);
        left.reset(new std::atomic<uint32_t>[n]);
        return true;
    }

    void reset_checks() {
        for (size_t i = 0; i < jobs.size(); i++) {
            done[i].store(false, std::memory_order_relaxed);
            left[i].store(jobs[i].pieces ? jobs[i].pieces : 1, std::memory_order_relaxed);
        }
        violations.store(0, std::memory_order_relaxed);
    }

    // Jobs not finished, or pieces that started too early, in the checked frame.
    uint64_t failures() const {
        uint64_t bad = violations.load(std::memory_order_acquire);
        for (size_t i = 0; i < jobs.size(); i++) bad += !done[i].load(std::memory_order_acquire);
        return bad;
    }

    // One piece of job i: spin D, count; when checking, first verify the
    // job's dependencies are done, and mark the job done after its last piece.
    void piece(uint32_t i) {
        if (check) {
            for (uint32_t d : jobs[i].deps)
                if (!done[d].load(std::memory_order_acquire)) violations.fetch_add(1);
        }
        auto t0 = std::chrono::steady_clock::now();
        auto d = std::chrono::nanoseconds(d_ns);
        while (std::chrono::steady_clock::now() - t0 < d) {
        }
        count_one();
        if (check && left[i].fetch_sub(1, std::memory_order_acq_rel) == 1)
            done[i].store(true, std::memory_order_release);
    }

    // A DAG node's work: every piece of its job, in order (a barrier: none).
    void run_node(const DagNode &n) {
        if (n.job == BARRIER) return;
        for (uint32_t k = 0; k < (n.pieces ? n.pieces : 1); k++) piece(n.job);
    }
};
static W3 g;

// One form of running the frame, and its library name.
struct Form {
    const char *library;
    unsigned threads;
    std::function<void()> frame;
};

// The serial baseline: every piece on this thread, in schedule order.
static Form serial_form() {
    return {"serial-cpp", 1, [] {
                for (const DagNode &n : g.dag) g.run_node(n);
            }};
}

#if defined(JOBSYS_W3_JOBSYS)
#include "jobsys.hpp"
struct Lib {
    jobsys::System js;
    std::vector<jobsys::Handle> hs, deps;
    std::unique_ptr<jobsys::Graph> graph;
    static jobsys_config cfg(unsigned workers) {
        jobsys_config c = jobsys::default_config();
        c.workers = int32_t(workers);
        return c;
    }
    explicit Lib(unsigned workers) : js(cfg(workers)) {
        jobsys::GraphBuilder b(js);
        std::vector<jobsys::Node> ids, after;
        for (const DagNode &n : g.dag) {
            after.clear();
            for (uint32_t p : n.preds) after.push_back(ids[p]);
            auto nb = b.node();
            nb.after(after);
            uint32_t j = n.job;
            if (j == BARRIER)
                ids.push_back(nb.name("sync").call([] {}));
            else if (n.pieces == 0)
                ids.push_back(nb.call([j] { g.piece(j); }));
            else
                ids.push_back(nb.parallel_for(0, n.pieces, 1, [j](size_t) { g.piece(j); }));
        }
        graph.reset(new jobsys::Graph(b.build()));
    }
    void per_frame() {
        hs.clear();
        for (uint32_t i = 0; i < g.jobs.size(); i++) {
            const Job &job = g.jobs[i];
            if (job.sync >= 0) js.complete(hs[size_t(job.sync)]);
            deps.clear();
            for (uint32_t d : job.deps) deps.push_back(hs[d]);
            auto b = js.job();
            b.after(deps);
            if (job.pieces == 0)
                hs.push_back(b.schedule([i] { g.piece(i); }));
            else
                hs.push_back(b.parallel_for(0, job.pieces, 1, [i](size_t) { g.piece(i); }));
        }
        for (size_t k = hs.size(); k-- > 0;) js.complete(hs[k]);
    }
    std::vector<Form> forms(unsigned threads) {
        return {serial_form(),
                {"jobsys-cpp", threads, [this] { per_frame(); }},
                {"jobsys-cpp-graph", threads, [this] { js.complete(graph->run()); }}};
    }
};

#elif defined(JOBSYS_W3_ENKITS)
#include "TaskScheduler.h"
// enkiTS: a task set per node (set size = its pieces, min range 1), its
// dependencies as enki::Dependency objects set once; a frame adds the root
// tasks to the pipe and waits for a final empty task that runs after every
// node with no dependents (WaitforTask runs tasks meanwhile).
struct NodeTask : enki::ITaskSet {
    const DagNode *node = nullptr;
    std::vector<enki::Dependency> deps;
    void ExecuteRange(enki::TaskSetPartition r, uint32_t) override {
        if (node == nullptr || node->job == BARRIER) return;
        for (uint32_t k = r.start; k < r.end; k++) g.piece(node->job);
    }
};
struct Lib {
    enki::TaskScheduler ts;
    std::vector<std::unique_ptr<NodeTask>> tasks;
    std::vector<NodeTask *> roots;
    NodeTask final_task;
    explicit Lib(unsigned workers) {
        ts.Initialize(workers + 1); // threads in all, the caller included
        std::vector<bool> has_succ(g.dag.size(), false);
        for (const DagNode &n : g.dag) {
            auto t = std::make_unique<NodeTask>();
            t->node = &n;
            t->m_SetSize = n.pieces ? n.pieces : 1;
            t->m_MinRange = 1;
            t->deps = std::vector<enki::Dependency>(n.preds.size());
            for (size_t k = 0; k < n.preds.size(); k++) {
                t->deps[k].SetDependency(tasks[n.preds[k]].get(), t.get());
                has_succ[n.preds[k]] = true;
            }
            if (n.preds.empty()) roots.push_back(t.get());
            tasks.push_back(std::move(t));
        }
        size_t sinks = 0;
        for (bool s : has_succ) sinks += !s;
        final_task.deps = std::vector<enki::Dependency>(sinks);
        for (size_t i = 0, k = 0; i < tasks.size(); i++)
            if (!has_succ[i]) final_task.deps[k++].SetDependency(tasks[i].get(), &final_task);
    }
    void frame() {
        for (NodeTask *r : roots) ts.AddTaskSetToPipe(r);
        ts.WaitforTask(&final_task);
    }
    std::vector<Form> forms(unsigned threads) { return {{"enkiTS", threads, [this] { frame(); }}}; }
};

#elif defined(JOBSYS_W3_TASKFLOW)
#include <taskflow/taskflow.hpp>
#include <taskflow/algorithm/for_each.hpp>
// Taskflow: one tf::Taskflow built once (a parallel job is a for_each_index
// task), run every frame with executor.run(taskflow).wait(). No thread
// outside the executor runs tasks, so the executor gets all WORKERS + 1
// threads and the calling thread only blocks.
struct Lib {
    tf::Executor ex;
    tf::Taskflow flow;
    explicit Lib(unsigned workers) : ex(workers + 1) {
        std::vector<tf::Task> ts;
        for (const DagNode &n : g.dag) {
            uint32_t j = n.job;
            tf::Task t;
            if (j == BARRIER)
                t = flow.emplace([] {});
            else if (n.pieces == 0)
                t = flow.emplace([j] { g.piece(j); });
            else
                t = flow.for_each_index(uint32_t(0), n.pieces, uint32_t(1), [j](uint32_t) { g.piece(j); });
            for (uint32_t p : n.preds) ts[p].precede(t);
            ts.push_back(t);
        }
    }
    std::vector<Form> forms(unsigned threads) {
        return {{"taskflow", threads, [this] { ex.run(flow).wait(); }}};
    }
};

#elif defined(JOBSYS_W3_TBB)
#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>
// oneTBB: a flow graph of continue_nodes built once (a parallel job's body
// is a parallel_for over its pieces, auto partitioner), started every frame
// by one broadcast to the roots, then wait_for_all; in a task_arena of
// WORKERS + 1 slots, the calling thread in one.
namespace flow = tbb::flow;
struct Lib {
    tbb::global_control gc;
    tbb::task_arena arena;
    std::unique_ptr<flow::graph> graph;
    std::unique_ptr<flow::broadcast_node<flow::continue_msg>> start;
    std::vector<std::unique_ptr<flow::continue_node<flow::continue_msg>>> nodes;
    explicit Lib(unsigned workers)
        : gc(tbb::global_control::max_allowed_parallelism, workers + 1), arena(int(workers + 1), 1) {
        arena.execute([&] {
            graph = std::make_unique<flow::graph>();
            start = std::make_unique<flow::broadcast_node<flow::continue_msg>>(*graph);
            for (const DagNode &n : g.dag) {
                const DagNode *np = &n;
                auto body = [np](const flow::continue_msg &) {
                    if (np->job == BARRIER) return;
                    uint32_t j = np->job;
                    if (np->pieces == 0) {
                        g.piece(j);
                    } else {
                        tbb::parallel_for(tbb::blocked_range<uint32_t>(0, np->pieces, 1),
                                          [j](const tbb::blocked_range<uint32_t> &r) {
                                              for (uint32_t k = r.begin(); k < r.end(); k++) g.piece(j);
                                          });
                    }
                };
                nodes.push_back(std::make_unique<flow::continue_node<flow::continue_msg>>(*graph, body));
                if (n.preds.empty()) flow::make_edge(*start, *nodes.back());
                for (uint32_t p : n.preds) flow::make_edge(*nodes[p], *nodes.back());
            }
        });
    }
    void frame() {
        arena.execute([&] {
            start->try_put(flow::continue_msg());
            graph->wait_for_all();
        });
    }
    std::vector<Form> forms(unsigned threads) { return {{"oneTBB", threads, [this] { frame(); }}}; }
};
#else
#error "compile with one of -DJOBSYS_W3_JOBSYS, -DJOBSYS_W3_ENKITS, -DJOBSYS_W3_TASKFLOW, -DJOBSYS_W3_TBB"
#endif

int main(int argc, char **argv) {
    if (argc != 6) {
        std::fprintf(stderr, "usage: %s WORKERS SAMPLES WARMUP GRAPH_FILE D_NS\n", argv[0]);
        return 2;
    }
    unsigned workers = unsigned(std::atoi(argv[1]));
    int samples = std::atoi(argv[2]), warmup = std::atoi(argv[3]);
    if (!g.load(argv[4])) {
        std::fprintf(stderr, "%s: cannot read the frame graph %s\n", argv[0], argv[4]);
        return 2;
    }
    g.d_ns = uint64_t(std::atoll(argv[5]));
    Lib lib(workers);
    for (const Form &f : lib.forms(workers + 1)) {
        g.reset_checks();
        g.check = true;
        f.frame();
        g.check = false;
        if (uint64_t bad = g.failures()) {
            std::fprintf(stderr, "%s: the checked frame: %llu jobs unfinished or pieces started early\n",
                         f.library, (unsigned long long)bad);
            return 1;
        }
        std::string out;
        for (int i = 0; i < warmup + samples; i++) {
            uint64_t before = counted();
            auto t0 = std::chrono::steady_clock::now();
            f.frame();
            auto t1 = std::chrono::steady_clock::now();
            uint64_t ran = counted() - before;
            if (ran != g.pieces) {
                std::fprintf(stderr, "%s: %llu pieces ran in a frame, expected %llu\n", f.library,
                             (unsigned long long)ran, (unsigned long long)g.pieces);
                return 1;
            }
            if (i < warmup) continue;
            double ms = double(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count()) / 1e6;
            char buf[64];
            std::snprintf(buf, sizeof buf, "%s%.4f", out.empty() ? "" : ",", ms);
            out += buf;
        }
        std::printf("{\"library\":\"%s\",\"threads\":%u,\"samples\":[%s]}\n", f.library, f.threads, out.c_str());
        std::fflush(stdout);
    }
    return 0;
}
