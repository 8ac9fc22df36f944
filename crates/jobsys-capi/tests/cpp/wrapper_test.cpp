// The C++ wrapper (jobsys.hpp): every member, exceptions turned into failed
// jobs, and every heap-allocated callable freed exactly once, also for jobs
// that never ran. Run by tests/c_programs.rs; prints "wrapper_test: ok".
#include "jobsys.hpp"

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "../c/check.h" // CHECK: prints the failed expression and jobsys's last error, exits 1

namespace {

std::atomic<int> live{0}; // Tracked objects alive (copies and moves included).
std::atomic<int> ran{0};

// Counts itself, so the test sees every callable freed.
struct Tracked {
    Tracked() { ++live; }
    Tracked(const Tracked &) { ++live; }
    Tracked(Tracked &&) noexcept { ++live; }
    ~Tracked() { --live; }
};

template <class F>
void expect_error(F &&f, jobsys_error code, const char *text) {
    try {
        f();
    } catch (const jobsys::Error &e) {
        if (e.code() != code || std::strstr(e.what(), text) == nullptr) {
            std::fprintf(stderr, "wrong error: %s (code %d, expected %d with \"%s\")\n", e.what(),
                         int(e.code()), int(code), text);
            std::exit(1);
        }
        return;
    }
    std::fprintf(stderr, "no jobsys::Error thrown (expected \"%s\")\n", text);
    std::exit(1);
}

void test_jobs(jobsys::System &js) {
    Tracked t;
    auto a = js.schedule([t] { ++ran; }, {"a", JOBSYS_PRIORITY_HIGH});
    auto b = js.schedule_after({a}, [t] { ++ran; });
    CHECK(a != b && a == a);
    js.complete(b);
    CHECK(js.is_complete(a) && js.is_complete(b));
    CHECK(ran == 2);

    // More than 8 dependencies (the Deps copy leaves its inline buffer).
    std::vector<jobsys::Handle> many;
    for (int i = 0; i < 20; i++) many.push_back(js.schedule([] { ++ran; }));
    auto all = js.combine(many);
    auto after = js.schedule_after(many, [] { ++ran; });
    js.complete(js.combine({all, after}));
    CHECK(ran == 2 + 21);
    CHECK(js.try_complete(all) == JOBSYS_OK);
}

void test_parallel_for(jobsys::System &js) {
    std::vector<std::atomic<int>> hits(1000);
    Tracked t;
    auto h = js.parallel_for(0, 1000, [&hits, t](uint32_t i) { hits[i]++; });
    js.complete(h);
    for (auto &x : hits) CHECK(x == 1);
    std::atomic<uint64_t> pieces{0}, sum{0};
    auto p = js.parallel_for_after(
        {h}, 0, 1000,
        [&](uint32_t b, uint32_t e) {
            pieces++;
            for (uint32_t i = b; i < e; i++) sum += i;
        },
        100, {"pieces", JOBSYS_PRIORITY_LOW});
    js.complete(p);
    CHECK(pieces == 10 && sum == 999 * 1000 / 2);
}

void test_failures(jobsys::System &js) {
    Tracked t;
    int before = ran;
    auto bad = js.schedule([t]() { throw std::runtime_error("exploded"); });
    auto dep = js.schedule_after({bad}, [t] { ++ran; }); // never runs
    auto odd = js.schedule([] { throw 42; });
    auto pf = js.parallel_for(0, 100, [](uint32_t i) {
        if (i == 70) throw std::out_of_range("index 70");
    });
    expect_error([&] { js.complete(bad); }, JOBSYS_ERR_JOB_FAILED, "exploded");
    expect_error([&] { js.complete(dep); }, JOBSYS_ERR_DEPENDENCY_FAILED, "exploded");
    expect_error([&] { js.complete(odd); }, JOBSYS_ERR_JOB_FAILED, "not a std::exception");
    expect_error([&] { js.complete(pf); }, JOBSYS_ERR_JOB_FAILED, "index 70");
    CHECK(js.try_complete(dep) == JOBSYS_ERR_DEPENDENCY_FAILED);
    CHECK(ran == before);
    expect_error([&] { js.complete(jobsys::Handle()); }, JOBSYS_ERR_INVALID_HANDLE, "not a handle");
    expect_error([&] { js.worker_stats(999); }, JOBSYS_ERR_INVALID_ARGUMENT, "thread index 999");
    expect_error([&] { js.parallel_for(5, 1, [](uint32_t) {}); }, JOBSYS_ERR_INVALID_ARGUMENT, "begin 5");
}

void test_batching_and_stats(jobsys::System &js) {
    int before = ran;
    {
        auto zone = js.hot_zone();
        auto zone2 = std::move(zone);
        std::vector<jobsys::Handle> hs;
        for (int i = 0; i < 10; i++) hs.push_back(js.schedule_batched([] { ++ran; }));
        hs.push_back(js.schedule_batched_after({hs[0]}, [] { ++ran; }));
        CHECK(js.flush() <= 11);
        js.complete(js.combine(hs));
    }
    CHECK(ran == before + 11);
    CHECK(jobsys_hot_zone_end(js.raw()) == JOBSYS_ERR_BAD_STATE); // both guards closed one zone
    jobsys_stats s = js.stats();
    CHECK(s.jobs_scheduled > 0 && s.workers == js.workers());
    js.take_stats();
    CHECK(js.worker_stats(1).workers == 1); // the worker with thread index 1
}

// Pins, thread indices, a registered std::thread, cancel (callables of
// cancelled jobs freed exactly once, never called), active workers.
void test_engine() {
    jobsys_config c = jobsys::default_config();
    c.workers = 2;
    c.follow_cpus = true;
    jobsys::System js(c);
    CHECK(js.thread_index() == std::optional<uint32_t>(0));
    CHECK(js.register_thread() == 0);
    CHECK(!jobsys::is_cancelled());

    // Main and workers.
    auto main_id = std::this_thread::get_id();
    std::thread::id on_main, on_worker;
    std::optional<uint32_t> main_index, worker_index;
    auto m = js.schedule_pinned(jobsys::Pin::main(), [&] {
        on_main = std::this_thread::get_id();
        main_index = js.thread_index();
    });
    auto w = js.schedule_pinned_after(jobsys::Pin::worker(2), {m}, [&] {
        on_worker = std::this_thread::get_id();
        worker_index = js.thread_index();
    }, {"on worker 2"});
    js.complete(w);
    CHECK(on_main == main_id && main_index == std::optional<uint32_t>(0));
    CHECK(on_worker != main_id && worker_index == std::optional<uint32_t>(2));
    CHECK(js.schedule_pinned(jobsys::Pin::main(), [] {}) != jobsys::Handle());
    CHECK(js.run_pinned() == 1 && js.run_pinned() == 0);
    expect_error([&] { js.schedule_pinned(jobsys::Pin::worker(3), [] {}); }, JOBSYS_ERR_INVALID_ARGUMENT,
                 "thread indices 1..=2");

    // A registered thread runs its pinned jobs in run_pinned.
    std::mutex mu;
    std::condition_variable cv;
    int step = 0;
    uint32_t render_index = 0, ran_there = 0;
    std::optional<uint32_t> seen;
    std::thread::id render_id, ran_on;
    std::thread render([&] {
        uint32_t i = js.register_thread();
        {
            std::lock_guard<std::mutex> g(mu);
            render_index = i;
            seen = js.thread_index();
            render_id = std::this_thread::get_id();
            step = 1;
        }
        cv.notify_all();
        std::unique_lock<std::mutex> l(mu);
        cv.wait(l, [&] { return step == 2; });
        ran_there = js.run_pinned();
    });
    {
        std::unique_lock<std::mutex> l(mu);
        cv.wait(l, [&] { return step == 1; });
    }
    CHECK(render_index == 3 && seen == std::optional<uint32_t>(3));
    auto r = js.schedule_pinned(jobsys::Pin::thread(render_index), [&] { ran_on = std::this_thread::get_id(); });
    {
        std::lock_guard<std::mutex> g(mu);
        step = 2;
    }
    cv.notify_all();
    render.join();
    js.complete(r);
    CHECK(ran_there == 1 && ran_on == render_id);
    std::optional<uint32_t> outside = 7u;
    std::thread([&] { outside = js.thread_index(); }).join();
    CHECK(!outside.has_value());

    // register_thread_pin names its thread only: once it exited, a job
    // pinned with it is cancelled, also when the thread that took its index
    // runs its pinned jobs.
    jobsys::Pin gone = jobsys::Pin::main();
    std::thread([&] { gone = js.register_thread_pin(); }).join();
    bool called = false;
    uint32_t taker_index = 0, taker_ran = 9;
    jobsys_error stale = JOBSYS_OK;
    std::thread([&] {
        taker_index = js.register_thread();
        auto h = js.schedule_pinned(gone, [&] { called = true; });
        taker_ran = js.run_pinned();
        stale = js.try_complete(h);
    }).join();
    CHECK(taker_index == 3 && taker_ran == 0 && !called && stale == JOBSYS_ERR_CANCELLED);

    // Cancel before start: never called, callable freed once, Cancelled thrown.
    int before = ran;
    {
        jobsys::System none(0);
        Tracked t;
        auto gate = none.schedule([t] { ++ran; });
        auto a = none.schedule_after({gate}, [t] { ++ran; });
        auto b = none.schedule_after({a}, [t] { ++ran; });
        int alive = live;
        CHECK(none.cancel(a));
        CHECK(live == alive - 1); // a's callable freed by cancel, on this thread
        expect_error([&] { none.complete(b); }, JOBSYS_ERR_CANCELLED, "cancelled");
        try {
            none.complete(a);
            CHECK(false);
        } catch (const jobsys::Cancelled &e) {
            CHECK(e.code() == JOBSYS_ERR_CANCELLED);
        }
        CHECK(none.try_complete(a) == JOBSYS_ERR_CANCELLED);
        none.complete(gate);
        CHECK(!none.cancel(gate) && !none.cancel(a));
        CHECK(ran == before + 1);
    }
    // A running job sees is_cancelled().
    std::atomic<bool> started{false}, saw{false};
    auto spin = js.schedule_pinned(jobsys::Pin::worker(1), [&] {
        started = true;
        while (!jobsys::is_cancelled()) {
        }
        saw = true;
    });
    while (!started) {
    }
    CHECK(!js.cancel(spin));
    CHECK(js.try_complete(spin) == JOBSYS_ERR_CANCELLED && saw);

    // Active workers: 0 and back with jobs in flight.
    CHECK(js.active_workers() <= 2);
    expect_error([&] { js.set_active_workers(3); }, JOBSYS_ERR_INVALID_ARGUMENT, "n = 3: the system has 2 workers");
    std::atomic<int> count{0};
    std::vector<jobsys::Handle> hs;
    for (int i = 0; i < 50; i++) hs.push_back(js.schedule([&] { ++count; }));
    js.set_active_workers(0);
    CHECK(js.active_workers() == 0 && js.stats().active_workers == 0);
    for (int i = 0; i < 50; i++) hs.push_back(js.schedule([&] { ++count; }));
    js.set_active_workers(2);
    js.complete(js.combine(hs));
    CHECK(count == 100 && js.active_workers() <= 2);
}

// Three frames, each a `System::frame()` guard around a job; written to
// $JOBSYS_TEST_TRACE when set (tests/c_programs.rs counts the frames).
void test_frames() {
    jobsys::System js(1);
    js.trace_start();
    for (int i = 0; i < 3; i++) {
        auto frame = js.frame();
        auto moved = std::move(frame); // ends the frame once, at scope end
        js.complete(js.schedule([] { ++ran; }));
    }
    js.trace_stop();
    if (const char *path = std::getenv("JOBSYS_TEST_TRACE")) js.trace_write(path);
    { auto untraced = js.frame(); } // not recording: a no-op
}
} // namespace

int main() {
    {
        jobsys_config c = jobsys::default_config();
        c.workers = 2;
        c.idle_policy = JOBSYS_IDLE_WHIPPING_BOY;
        jobsys::System first(c);
        jobsys::System js(std::move(first)); // moved-from `first` destroys nothing
        CHECK(first.raw() == nullptr && js.workers() == 2);
        test_jobs(js);
        test_parallel_for(js);
        test_failures(js);
        test_batching_and_stats(js);

        // Jobs still queued when the System goes out of scope run first.
        for (int i = 0; i < 50; i++) js.schedule([t = Tracked()] { ++ran; });
    }
    CHECK(live == 0);
    test_frames();
    test_engine();
    CHECK(live == 0);
    {
        jobsys::System zero(0);
        auto h = zero.schedule([] { ++ran; });
        zero.complete(h);
        jobsys_config bad = jobsys::default_config();
        bad.workers = -5;
        expect_error([&] { jobsys::System s(bad); }, JOBSYS_ERR_CONFIG, "workers = -5");
    }
    std::printf("wrapper_test: ok\n");
    return 0;
}
