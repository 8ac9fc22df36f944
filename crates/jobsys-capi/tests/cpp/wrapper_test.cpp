// The C++ wrapper (jobsys.hpp): the job builder and every option, the
// shortcuts, Deps views, Handle() as "no dependency", join, Scope, where a
// callable is stored (in the job, or boxed and freed exactly once, also for
// jobs that never ran), exceptions turned into failed jobs, and the rest of
// System. Run by tests/c_programs.rs; prints "wrapper_test: ok".
//
// Dependencies are checked without timing: a dependency that is a job
// pinned to the main thread cannot run before the main thread waits, so
// cancelling it must fail every job that really depends on it (a job that
// ignored the dependency would succeed instead).
#include "jobsys.hpp"

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

#include "../c/check.h" // CHECK: prints the failed expression and jobsys's last error, exits 1

namespace {

std::atomic<int> live{0}; // Tracked objects alive (copies and moves included).
std::atomic<int> ran{0};

// Counts itself, so the test sees every boxed callable freed.
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

// A job pinned to the main thread: it does not run before this thread
// waits (or calls run_pinned), so it can be cancelled before it starts.
jobsys::Handle held(jobsys::System &js) {
    return js.job().pin(jobsys::Pin::main()).schedule([] {});
}

// A corrupted handle of `js` (JOBSYS_ERR_INVALID_HANDLE).
jobsys::Handle forged(jobsys::System &js) {
    jobsys_handle h = js.schedule([] {}).raw();
    h.id += 1;
    return jobsys::Handle(h);
}

// Small callables are stored in the job, others boxed.
struct SmallFn {
    int *out;
    int value;
    void operator()() const { *out = value; }
};
struct BigFn {
    int *out;
    int value;
    char pad[64];
    void operator()() const { *out = value; }
};
struct alignas(16) OverAligned {
    int *out;
    void operator()() const { *out = 16; }
};
static_assert(jobsys::stored_inline_v<SmallFn>);
static_assert(!jobsys::stored_inline_v<BigFn>);
static_assert(!jobsys::stored_inline_v<OverAligned>);
static_assert(!jobsys::stored_inline_v<std::shared_ptr<int>>);

void test_builder_and_shortcuts(jobsys::System &js) {
    int before = ran;
    Tracked t;
    auto a = js.job().name("a").priority(jobsys::Priority::High).schedule([t] { ++ran; });
    auto b = js.schedule_after(a, [t] { ++ran; });
    CHECK(a != b && a == a && !a.is_none());
    js.complete(b);
    CHECK(js.is_complete(a) && js.is_complete(b));
    CHECK(ran == before + 2);

    // A builder may be kept and used again (each schedule() is one job).
    auto builder = js.job().name("twice").priority(jobsys::Priority::Low);
    auto one = builder.schedule([] { ++ran; });
    auto two = builder.schedule([] { ++ran; });
    CHECK(one != two);
    js.complete(js.combine({one, two}));
    CHECK(ran == before + 4);

    // desc(), batched() and batched(false).
    const jobsys::JobDesc audio{"audio", jobsys::Priority::Low};
    std::vector<jobsys::Handle> hs;
    for (int i = 0; i < 10; i++) hs.push_back(js.job().desc(audio).batched().schedule([] { ++ran; }));
    hs.push_back(js.job().batched().batched(false).after(hs[0]).schedule([] { ++ran; }));
    CHECK(js.flush() <= 11);
    js.complete(js.combine(hs));
    CHECK(ran == before + 15);

    // A mutable lambda changes its own copy.
    int seen = 0;
    js.complete(js.schedule([n = 41, &seen]() mutable { seen = ++n; }));
    CHECK(seen == 42);
    // Callables that fit in a pointer travel as the job's data itself: a
    // mutable one changes its own copy, a reference capture reaches the
    // caller's variable, and a small value capture arrives intact.
    auto by_ref = [&seen] { ++seen; };
    static_assert(jobsys::detail::fits_in_pointer_v<decltype(by_ref)>);
    js.complete(js.schedule(by_ref));
    CHECK(seen == 43);
    static std::atomic<int> got{0};
    std::int32_t small = 7;
    auto by_value = [small]() mutable { got = ++small; };
    static_assert(jobsys::detail::fits_in_pointer_v<decltype(by_value)>);
    js.complete(js.schedule(by_value));
    CHECK(got == 8 && small == 7);
    // A plain function.
    static std::atomic<int> fn_ran{0};
    struct F {
        static void f() { ++fn_ran; }
    };
    js.complete(js.schedule(F::f));
    js.complete(js.schedule(&F::f));
    CHECK(fn_ran == 2);

    std::unordered_set<jobsys::Handle> set{a, b, a};
    CHECK(set.size() == 2);
}

// The job calls its own copy, made before schedule() returned: changing or
// destroying the original afterwards changes nothing. Each job is pinned to
// this thread, so it cannot run before complete().
void test_the_job_owns_its_callable(jobsys::System &js) {
    const jobsys::Pin here = jobsys::Pin::main();
    int out = 0;
    {
        SmallFn f{&out, 1};
        auto h = js.job().pin(here).schedule(f);
        f.value = 2;
        js.complete(h);
        CHECK(out == 1);
    }
    {
        BigFn f{&out, 3, {}};
        auto h = js.job().pin(here).schedule(f);
        f.value = 4;
        js.complete(h);
        CHECK(out == 3);
    }
    {
        auto h = js.job().pin(here).schedule(OverAligned{&out});
        js.complete(h);
        CHECK(out == 16);
    }
    {
        std::optional<SmallFn> f = SmallFn{&out, 5};
        auto h = js.job().pin(here).schedule(*f);
        f.reset();
        js.complete(h);
        CHECK(out == 5);
    }
    // parallel_for too, with a functor that fits and one that does not.
    std::vector<size_t> hits(100);
    struct Loop {
        size_t *hits;
        size_t add;
        void operator()(size_t i) const { hits[i] += add; }
    };
    static_assert(jobsys::stored_inline_v<Loop>);
    Loop small{hits.data(), 1};
    auto p = js.job().pin(here).parallel_for(0, 100, 7, small);
    small.add = 100;
    js.complete(p);
    struct BigLoop {
        size_t *hits;
        size_t add;
        char pad[64];
        void operator()(size_t b, size_t e) const {
            for (size_t i = b; i < e; i++) hits[i] += add;
        }
    };
    BigLoop big{hits.data(), 10, {}};
    auto q = js.job().pin(here).parallel_for(0, 100, 0, big);
    big.add = 1000;
    js.complete(q);
    for (size_t x : hits) CHECK(x == 11);
}

// Boxed callables are freed exactly once: not scheduled at all (bad
// input: at once), run, never run (a dependency cancelled). A release may
// run after complete() returned, so the count is checked once the system
// is destroyed (its destructor runs everything to the end).
void test_boxed_callables_are_freed() {
    CHECK(live == 0);
    {
        jobsys::System js(2);
        Tracked t;
        jobsys::Handle bad = forged(js);
        expect_error([&] { js.schedule_after(bad, [t] { ++ran; }); }, JOBSYS_ERR_INVALID_HANDLE, "");
        expect_error([&] { js.job().after(bad).parallel_for(0, 1, 1, [t](size_t) {}); },
                     JOBSYS_ERR_INVALID_HANDLE, "");
        jobsys::System other(0);
        jobsys::Handle foreign = other.schedule([] {});
        expect_error([&] { js.job().after(foreign).schedule([t] {}); }, JOBSYS_ERR_FOREIGN_HANDLE, "");
        expect_error([&] { js.job().pin(jobsys::Pin::worker(3)).schedule([t] {}); },
                     JOBSYS_ERR_INVALID_ARGUMENT, "thread indices 1..=2");
        expect_error([&] { js.parallel_for(5, 4, 1, [t](size_t) {}); }, JOBSYS_ERR_INVALID_ARGUMENT,
                     "begin 5 > end 4");
        CHECK(live == 1); // only t: the boxed copies were deleted by the wrapper

        int before = ran;
        auto h = js.schedule([t] { ++ran; });
        auto p = js.parallel_for(0, 10, 1, [t](size_t) { ++ran; });
        js.complete(js.combine({h, p}));
        CHECK(ran == before + 11);
        // Never run: the dependency is cancelled before it started.
        auto gate = held(js);
        auto never = js.schedule_after(gate, [t] { ++ran; });
        auto never_loop = js.job().after(gate).parallel_for(0, 10, 1, [t](size_t) { ++ran; });
        CHECK(js.cancel(gate));
        CHECK(js.try_complete(never) == JOBSYS_ERR_CANCELLED);
        CHECK(js.try_complete(never_loop) == JOBSYS_ERR_CANCELLED);
        CHECK(ran == before + 11);
    }
    CHECK(live == 0);
}

// One builder may schedule more than once; each call stores its own
// callable: a boxed one (freed by its release callback), then one kept in
// the job (no release: a release left over from the boxed call would
// "delete" the inline copy), then loops the same way.
void test_builder_reused() {
    CHECK(live == 0);
    {
        jobsys::System js(1);
        Tracked t;
        std::atomic<int> hits{0};
        auto dep = js.schedule([] {});
        auto b = js.job().name("reused").after(dep);
        auto boxed = b.schedule([t, &hits] { hits += 1; }); // Tracked: not trivially copyable, boxed
        auto small = b.schedule([&hits] { hits += 10; });
        auto boxed_loop = b.parallel_for(0, 4, 1, [t, &hits](size_t) { hits += 100; });
        auto small_loop = b.parallel_for(0, 4, 1, [&hits](size_t) { hits += 1000; });
        js.complete(js.combine({boxed, small, boxed_loop, small_loop}));
        CHECK(hits == 1 + 10 + 400 + 4000);
        // Two dependencies take the library's short path when both are
        // good; a bad one among two is reported as it is alone.
        auto two = js.job().after(boxed, small).schedule([&hits] { hits += 1; });
        js.complete(two);
        CHECK(hits == 4412);
        jobsys::Handle bad = forged(js);
        expect_error([&] { js.job().after(two, bad).schedule([&hits] { hits += 1; }); },
                     JOBSYS_ERR_INVALID_HANDLE, "");
        jobsys::System other(0);
        jobsys::Handle foreign = other.schedule([] {});
        expect_error([&] { js.job().after(foreign, two).schedule([&hits] { hits += 1; }); },
                     JOBSYS_ERR_FOREIGN_HANDLE, "");
        CHECK(hits == 4412);
    }
    CHECK(live == 0);
}

// Deps views any contiguous handles without copying; after() calls add up.
void test_deps(jobsys::System &js) {
    std::vector<jobsys::Handle> v{jobsys::Handle(), jobsys::Handle()};
    std::array<jobsys::Handle, 3> arr{};
    jobsys::Handle carr[2] = {};
    jobsys::Handle one;
    CHECK(jobsys::Deps(v).data() == reinterpret_cast<const jobsys_handle *>(v.data()));
    CHECK(jobsys::Deps(v).size() == 2);
    CHECK(jobsys::Deps(arr).data() == reinterpret_cast<const jobsys_handle *>(arr.data()));
    CHECK(jobsys::Deps(arr).size() == 3);
    CHECK(jobsys::Deps(carr).data() == reinterpret_cast<const jobsys_handle *>(&carr[0]));
    CHECK(jobsys::Deps(carr).size() == 2);
    CHECK(jobsys::Deps(one).data() == reinterpret_cast<const jobsys_handle *>(&one));
    CHECK(jobsys::Deps(one).size() == 1);
    CHECK(jobsys::Deps().size() == 0 && jobsys::Deps().data() == nullptr);
    CHECK(jobsys::Deps(v.data(), 1).size() == 1);

    // Every way of giving dependencies, each dependency checked by
    // cancelling it alone: the job that depends on it must fail.
    //   after(a, b) [copied] + after(vec of 9) [view, then gathered: more
    //   than 8 in all] + after({c}) [copied] + after(arr) [gathered].
    const size_t kDeps = 2 + 9 + 1 + 3;
    for (size_t cancelled = 0; cancelled <= kDeps; cancelled++) {
        std::vector<jobsys::Handle> all;
        for (size_t i = 0; i < kDeps; i++) all.push_back(held(js));
        std::vector<jobsys::Handle> vec(all.begin() + 2, all.begin() + 11);
        std::array<jobsys::Handle, 3> tail{all[12], all[13], all[14]};
        int before = ran;
        auto job = js.job().after(all[0], all[1]).after(vec).after({all[11]}).after(tail).schedule([] { ++ran; });
        // Also: only a view; only copied handles; the shortcut; parallel_for.
        auto view_only = js.job().after(all).schedule([] { ++ran; });
        auto inline_only = js.job()
                               .after(all[0], all[1], all[2], all[3], all[4], all[5], all[6], all[7])
                               .after(all[8], all[9], all[10], all[11], all[12], all[13], all[14])
                               .schedule([] { ++ran; });
        auto shortcut = js.schedule_after(all, [] { ++ran; });
        auto loop = js.job().after(vec).after(all[0], all[1], all[11]).after(tail).parallel_for(
            0, 4, 1, [](size_t) { ++ran; });
        if (cancelled < kDeps) {
            CHECK(js.cancel(all[cancelled]));
            for (jobsys::Handle h : {job, view_only, inline_only, shortcut, loop})
                CHECK(js.try_complete(h) == JOBSYS_ERR_CANCELLED);
            CHECK(ran == before);
        } else {
            js.complete(js.combine({job, view_only, inline_only, shortcut, loop}));
            CHECK(ran == before + 4 + 4); // four jobs, four pieces
        }
        for (jobsys::Handle h : all) js.try_complete(h); // run the others
    }

    // Handle() names no job: skipped as a dependency, complete at once.
    jobsys::Handle none;
    CHECK(none.is_none() && none == jobsys::Handle(JOBSYS_HANDLE_NONE));
    js.complete(none);
    CHECK(js.try_complete(none) == JOBSYS_OK && js.is_complete(none));
    auto gate = held(js);
    auto after_none = js.job().after(none, gate).after(v).schedule([] { ++ran; });
    CHECK(js.cancel(gate));
    CHECK(js.try_complete(after_none) == JOBSYS_ERR_CANCELLED);
    js.complete(js.schedule_after(none, [] { ++ran; }));
    js.complete(js.combine({none, none}));
    js.complete(js.combine({}));
}

void test_parallel_for(jobsys::System &js) {
    std::vector<std::atomic<int>> hits(1000);
    auto h = js.parallel_for(0, 1000, 0, [&hits](size_t i) { hits[i]++; });
    js.complete(h);
    for (auto &x : hits) CHECK(x == 1);
    std::atomic<uint64_t> pieces{0}, sum{0};
    auto p = js.job().name("pieces").priority(jobsys::Priority::Low).after(h).parallel_for(
        0, 1000, 100, [&](size_t b, size_t e) {
            pieces++;
            for (size_t i = b; i < e; i++) sum += i;
        });
    js.complete(p);
    CHECK(pieces == 10 && sum == 999 * 1000 / 2);
    // size_t ranges beyond 32 bits.
    const size_t base = size_t(1) << 40;
    std::atomic<size_t> lo{~size_t(0)}, hi{0}, n{0};
    js.complete(js.parallel_for(base, base + 1000, 64, [&](size_t b, size_t e) {
        n += e - b;
        size_t cur = lo;
        while (b < cur && !lo.compare_exchange_weak(cur, b)) {
        }
        cur = hi;
        while (e > cur && !hi.compare_exchange_weak(cur, e)) {
        }
    }));
    CHECK(n == 1000 && lo == base && hi == base + 1000);
    // Empty range: completes at once.
    bool called = false;
    js.complete(js.parallel_for(7, 7, 0, [&](size_t) { called = true; }));
    CHECK(!called);
    // A pinned loop runs on the pinned thread, in order.
    std::vector<size_t> order;
    auto main_id = std::this_thread::get_id();
    bool elsewhere = false;
    js.complete(js.job().pin(jobsys::Pin::main()).parallel_for(0, 50, 5, [&](size_t b, size_t e) {
        if (std::this_thread::get_id() != main_id) elsewhere = true;
        for (size_t i = b; i < e; i++) order.push_back(i);
    }));
    CHECK(!elsewhere && order.size() == 50);
    for (size_t i = 0; i < 50; i++) CHECK(order[i] == i);
}

void test_failures(jobsys::System &js) {
    int before = ran;
    auto bad = js.job().name("exploder").schedule([] { throw std::runtime_error("exploded"); });
    auto dep = js.schedule_after(bad, [] { ++ran; }); // never runs
    auto odd = js.schedule([] { throw 42; });
    auto pf = js.job().name("indexer").parallel_for(0, 100, 1, [](size_t i) {
        if (i == 70) throw std::out_of_range("index 70");
    });
    auto failed_by_hand = js.schedule([] { jobsys_fail("by hand"); });
    expect_error([&] { js.complete(bad); }, JOBSYS_ERR_JOB_FAILED, "exploded");
    expect_error([&] { js.complete(bad); }, JOBSYS_ERR_JOB_FAILED, "job \"exploder\"");
    expect_error([&] { js.complete(dep); }, JOBSYS_ERR_DEPENDENCY_FAILED, "exploded");
    expect_error([&] { js.complete(dep); }, JOBSYS_ERR_DEPENDENCY_FAILED, "\"exploder\"");
    expect_error([&] { js.complete(odd); }, JOBSYS_ERR_JOB_FAILED, "not a std::exception");
    expect_error([&] { js.complete(pf); }, JOBSYS_ERR_JOB_FAILED, "index 70");
    expect_error([&] { js.complete(pf); }, JOBSYS_ERR_JOB_FAILED, "job \"indexer\"");
    expect_error([&] { js.complete(failed_by_hand); }, JOBSYS_ERR_JOB_FAILED, "by hand");
    CHECK(js.try_complete(dep) == JOBSYS_ERR_DEPENDENCY_FAILED);
    CHECK(ran == before);
    expect_error([&] { js.complete(forged(js)); }, JOBSYS_ERR_INVALID_HANDLE, "not a handle");
    expect_error([&] { js.worker_stats(999); }, JOBSYS_ERR_INVALID_ARGUMENT, "thread index 999");
}

// join: both run, in parallel when a worker takes one; exceptions come
// back as themselves; a recursive fork/join sums correctly.
size_t sum_range(jobsys::System &js, size_t b, size_t e) {
    if (e - b <= 64) {
        size_t s = 0;
        for (size_t i = b; i < e; i++) s += i;
        return s;
    }
    size_t m = b + (e - b) / 2, left = 0, right = 0;
    js.join([&] { left = sum_range(js, b, m); }, [&] { right = sum_range(js, m, e); });
    return left + right;
}

void test_join(jobsys::System &js) {
    int a = 0, b = 0;
    js.join([&] { a = 1; }, [&] { b = 2; });
    CHECK(a == 1 && b == 2);
    CHECK(sum_range(js, 0, 100000) == size_t(99999) * 100000 / 2);
    // Inside a job too.
    size_t in_job = 0;
    js.complete(js.schedule([&] { in_job = sum_range(js, 0, 10000); }));
    CHECK(in_job == size_t(9999) * 10000 / 2);
    // Exceptions: rethrown as they are, a's when both throw, after both returned.
    bool b_done = false;
    try {
        js.join([] { throw std::out_of_range("left"); }, [&] { b_done = true; });
        CHECK(false);
    } catch (const std::out_of_range &e) {
        CHECK(std::strcmp(e.what(), "left") == 0 && b_done);
    }
    bool a_done = false;
    try {
        js.join([&] { a_done = true; }, [] { throw 7; });
        CHECK(false);
    } catch (int x) {
        CHECK(x == 7 && a_done);
    }
    try {
        js.join([] { throw std::runtime_error("a"); }, [] { throw std::logic_error("b"); });
        CHECK(false);
    } catch (const std::runtime_error &e) {
        CHECK(std::strcmp(e.what(), "a") == 0);
    }
    expect_error([&] { js.join([] { jobsys_fail("failed in a"); }, [] {}); }, JOBSYS_ERR_JOB_FAILED,
                 "failed in a");
    // A join inside a job whose half throws fails that job.
    auto h = js.job().name("joiner").schedule([&] { js.join([] {}, [] { throw std::runtime_error("half"); }); });
    expect_error([&] { js.complete(h); }, JOBSYS_ERR_JOB_FAILED, "half");
    // Lvalue callables are called in place (not copied).
    struct Counter {
        int calls = 0;
        void operator()() { ++calls; }
    } ca, cb;
    js.join(ca, cb);
    CHECK(ca.calls == 1 && cb.calls == 1);
}

// Scope: waits for every job scheduled through it, also those that jobs of
// the scope schedule from other threads, and those beyond the 16 handles
// kept inline. The jobs below are pinned to this thread, so they cannot
// have run unless scope() waited for them.
void test_scope(jobsys::System &js) {
    const jobsys::Pin here = jobsys::Pin::main();
    std::atomic<int> done{0};
    size_t tracked = 0;
    js.scope([&](jobsys::Scope &s) {
        for (int i = 0; i < 40; i++) s.job().pin(here).schedule([&] { ++done; });
        tracked = s.size();
    });
    CHECK(tracked == 40 && done == 40);

    // Nested: a job of the scope (on worker 1) adds 20 more from its
    // thread, pinned here and held back by a gate (worker 2, open below),
    // so only the end of the scope can run them.
    done = 0;
    std::atomic<bool> open{false};
    js.scope([&](jobsys::Scope &s) {
        auto gate = js.job().pin(jobsys::Pin::worker(2)).schedule([&] {
            while (!open) {
            }
        });
        auto adder = s.job().pin(jobsys::Pin::worker(1)).schedule([&] {
            for (int i = 0; i < 20; i++) s.job().pin(here).after(gate).schedule([&] { ++done; });
            ++done;
        });
        js.complete(adder);
        CHECK(s.size() == 21 && done == 1);
        open = true;
    });
    CHECK(done == 21);

    // Builder options, dependencies between the scope's jobs, parallel_for,
    // the shortcuts, a result.
    std::vector<int> v(100, 0);
    int total = js.scope([&](jobsys::Scope &s) {
        auto fill = s.job().name("fill").pin(here).schedule([&] {
            for (size_t i = 0; i < v.size(); i++) v[i] = int(i);
        });
        auto twice = s.job().after(fill).parallel_for(0, v.size(), 10, [&](size_t i) { v[i] *= 2; });
        s.schedule_after(twice, [&] { ++done; });
        s.parallel_for(0, 3, 1, [&](size_t) { ++done; });
        s.schedule([&] { ++done; });
        return 5;
    });
    CHECK(total == 5);
    for (size_t i = 0; i < v.size(); i++) CHECK(v[i] == int(2 * i));
    CHECK(done == 21 + 5);

    // A scope inside a job of a scope (on a worker): it waits there.
    done = 0;
    js.scope([&](jobsys::Scope &outer) {
        for (int k = 0; k < 3; k++)
            outer.schedule([&] {
                std::atomic<int> mine{0};
                js.scope([&](jobsys::Scope &inner) {
                    for (int i = 0; i < 10; i++) inner.schedule([&] { ++mine; });
                });
                done += mine == 10 ? 110 : 0; // all of them done by now
            });
    });
    CHECK(done == 330);

    // A failed job: scope() throws it (naming the job) after every job finished.
    done = 0;
    try {
        js.scope([&](jobsys::Scope &s) {
            s.job().name("scope-thrower").pin(here).schedule([] { throw std::runtime_error("in scope"); });
            for (int i = 0; i < 5; i++) s.job().pin(here).schedule([&] { ++done; });
        });
        CHECK(false);
    } catch (const jobsys::Error &e) {
        CHECK(e.code() == JOBSYS_ERR_JOB_FAILED);
        CHECK(std::strstr(e.what(), "in scope") && std::strstr(e.what(), "\"scope-thrower\""));
        CHECK(done == 5);
    }
    // The body throws: its exception comes out, after the jobs finished.
    done = 0;
    try {
        js.scope([&](jobsys::Scope &s) {
            for (int i = 0; i < 5; i++) s.job().pin(here).schedule([&] { ++done; });
            throw std::logic_error("body");
        });
        CHECK(false);
    } catch (const std::logic_error &e) {
        CHECK(std::strcmp(e.what(), "body") == 0 && done == 5);
    }
    // A cancelled job of the scope: Cancelled.
    try {
        js.scope([&](jobsys::Scope &s) {
            auto h = s.job().pin(here).schedule([&] { ++done; });
            CHECK(js.cancel(h));
        });
        CHECK(false);
    } catch (const jobsys::Cancelled &) {
    }
    CHECK(done == 5);
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
    auto m = js.job().pin(jobsys::Pin::main()).schedule([&] {
        on_main = std::this_thread::get_id();
        main_index = js.thread_index();
    });
    auto w = js.job().name("on worker 2").pin(jobsys::Pin::worker(2)).after(m).schedule([&] {
        on_worker = std::this_thread::get_id();
        worker_index = js.thread_index();
    });
    js.complete(w);
    CHECK(on_main == main_id && main_index == std::optional<uint32_t>(0));
    CHECK(on_worker != main_id && worker_index == std::optional<uint32_t>(2));
    CHECK(!js.job().pin(jobsys::Pin::main()).schedule([] {}).is_none());
    CHECK(js.run_pinned() == 1 && js.run_pinned() == 0);

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
    auto r = js.job().pin(jobsys::Pin::thread(render_index)).schedule([&] { ran_on = std::this_thread::get_id(); });
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
        auto h = js.job().pin(gone).schedule([&] { called = true; });
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
        auto a = none.schedule_after(gate, [t] { ++ran; });
        auto b = none.schedule_after(a, [t] { ++ran; });
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
    auto spin = js.job().pin(jobsys::Pin::worker(1)).schedule([&] {
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

void test_batching_and_stats(jobsys::System &js) {
    int before = ran;
    {
        auto zone = js.hot_zone();
        auto zone2 = std::move(zone);
        std::vector<jobsys::Handle> hs;
        for (int i = 0; i < 10; i++) hs.push_back(js.job().batched().schedule([] { ++ran; }));
        CHECK(js.flush() <= 10);
        js.complete(js.combine(hs));
    }
    CHECK(ran == before + 10);
    CHECK(jobsys_hot_zone_end(js.raw()) == JOBSYS_ERR_BAD_STATE); // both guards closed one zone
    jobsys_stats s = js.stats();
    CHECK(s.jobs_scheduled > 0 && s.workers == js.workers());
    js.take_stats();
    CHECK(js.worker_stats(1).workers == 1); // the worker with thread index 1
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
// complete_for: false while the job runs past the timeout (the job goes
// on), true once it finished, throws as complete() does for a failure.
void test_complete_for() {
    jobsys::System js(1);
    std::atomic<bool> started{false}, go{false};
    auto h = js.schedule([&] {
        started = true;
        while (!go) std::this_thread::yield();
    });
    while (!started) std::this_thread::yield(); // on the worker
    auto t0 = std::chrono::steady_clock::now();
    CHECK(!js.complete_for(h, std::chrono::milliseconds(10)));
    CHECK(std::chrono::steady_clock::now() - t0 >= std::chrono::milliseconds(10));
    CHECK(!js.is_complete(h));
    go = true;
    CHECK(js.complete_for(h, std::chrono::hours(1)));
    CHECK(js.complete_for(h, std::chrono::nanoseconds(0)));
    CHECK(js.complete_for(jobsys::Handle(), std::chrono::nanoseconds(-5))); // no job
    auto bad = js.job().name("boom").schedule([] { throw std::runtime_error("boom"); });
    expect_error([&] { js.complete_for(bad, std::chrono::seconds(30)); }, JOBSYS_ERR_JOB_FAILED,
                 "boom");
}
// wait_any, Limiter and schedule_blocking through the wrapper.
void test_wait_any_limiter_blocking() {
    jobsys::System js(2);
    std::atomic<bool> started{false}, go{false};
    auto slow = js.schedule([&] {
        started = true;
        while (!go) std::this_thread::yield();
    });
    while (!started) std::this_thread::yield();
    auto quick = js.schedule([] {});
    std::vector<jobsys::Handle> both{slow, quick};
    CHECK(js.wait_any(both) == 1);
    CHECK(!js.is_complete(slow));
    go = true;
    js.complete(slow);
    expect_error([&] { js.wait_any(std::vector<jobsys::Handle>{}); },
                 JOBSYS_ERR_INVALID_ARGUMENT, "at least one handle");

    CHECK(!jobsys::limiter_slot());
    std::atomic<int> now{0}, most{0}, runs{0};
    std::vector<jobsys::Handle> hs;
    {
        jobsys::Limiter lim(2);
        CHECK(lim.max() == 2);
        for (int i = 0; i < 40; i++)
            hs.push_back(js.job().limit(lim).schedule([&] {
                auto seat = jobsys::limiter_slot();
                CHECK(seat && *seat < 2);
                int n = ++now;
                int m = most.load();
                while (n > m && !most.compare_exchange_weak(m, n)) {}
                for (volatile int k = 0; k < 2000; k++) {}
                --now;
                ++runs;
            }));
    } // the limiter goes out of scope; its jobs keep what they need
    js.complete(js.combine(hs));
    CHECK(runs == 40 && most <= 2);

    std::atomic<int> blocked{0};
    auto io = js.job().name("read").schedule_blocking([&] { ++blocked; });
    js.complete(io);
    CHECK(blocked == 1);
    expect_error([&] { js.job().pin(jobsys::Pin::main()).schedule_blocking([] {}); },
                 JOBSYS_ERR_INVALID_ARGUMENT, "JOBSYS_JOB_PINNED");
}
} // namespace

// A frame graph from C++: node order in every run, a trivially copyable
// callable kept in the node and a boxed one freed with the graph, a loop
// node, a throwing node failing its run only, a cycle refused.
void test_graph(jobsys::System &js) {
    CHECK(live == 0);
    // A core class on a machine whose workers span one class: runs anywhere.
    std::atomic<int> classed{0};
    js.complete(js.job().core_class(jobsys::CoreClass::Performance).schedule([&] { ++classed; }));
    CHECK(classed == 1);
    std::atomic<int> input{0}, physics{0}, render{0}, late{0};
    std::atomic<long> sum{0};
    {
        jobsys::GraphBuilder b(js);
        auto n_input = b.node().name("input").core_class(jobsys::CoreClass::Any).call([&input] {
            ++input;
        });
        auto n_physics = b.node().name("physics").after(n_input).call([&, t = Tracked()] {
            int run = ++physics;
            if (input < run) ++late;
            if (run == 2) throw std::runtime_error("physics exploded");
        });
        auto n_loop = b.node().name("particles").after({n_input}).parallel_for(
            0, 1000, 100, [&sum](std::size_t i) { sum += long(i); });
        auto n_render = b.node()
                            .priority(jobsys::Priority::High)
                            .keep_priority()
                            .after(n_physics, n_loop)
                            .call([&] {
                                int run = ++render;
                                if (physics < run) ++late;
                            });
        CHECK(live == 1); // the boxed node callable
        jobsys::Graph g = b.build(2);
        CHECK(!g.report()); // no run finished yet
        for (int run = 1; run <= 3; run++) {
            jobsys::Handle h = g.run();
            if (run == 2) {
                expect_error([&] { g.sync(n_physics); }, JOBSYS_ERR_JOB_FAILED, "physics exploded");
                CHECK(js.try_complete(h) == JOBSYS_ERR_DEPENDENCY_FAILED);
            } else {
                g.sync(n_physics);
                js.complete(h);
            }
        }
        CHECK(input == 3 && physics == 3 && render == 2 && late == 0);
        // The newest finished run measured: a path from input to render, the sink.
        std::optional<jobsys::GraphReport> r = g.report();
        CHECK(r && r->nodes.size() == 4);
        std::vector<jobsys::Node> path = r->critical_path();
        CHECK(path.size() >= 2 && path.front().index() == n_input.index() &&
              path.back().index() == n_render.index());
        for (const jobsys::NodeReport &n : r->nodes)
            CHECK(n.duration <= r->frame && (n.critical == 0 || n.slack.count() == 0));
        CHECK(g.what_if(n_render, 0.0) + r->nodes[n_render.index()].duration == r->frame);
        expect_error([&] { g.what_if(n_render, -2.0); }, JOBSYS_ERR_INVALID_ARGUMENT, "at least 0");
        CHECK(sum == 3 * 499500L);
        jobsys::Graph moved = std::move(g);
        js.complete(moved.run());
        CHECK(input == 4);

        jobsys::GraphBuilder cyc(js);
        auto x = cyc.node().call([t = Tracked()] {});
        auto y = cyc.node().after(x).call([] {});
        cyc.edge(y, x);
        expect_error([&] { cyc.build(); }, JOBSYS_ERR_INVALID_ARGUMENT, "cycle");
        CHECK(live == 1); // the failed build freed x's callable
        jobsys::GraphBuilder other(js);
        expect_error([&] { other.node().after(n_input).call([] {}); }, JOBSYS_ERR_INVALID_ARGUMENT,
                     "not a node of this graph");
    }
    CHECK(live == 0); // the graph's boxed callable freed with it
}

int main() {
    {
        jobsys_config c = jobsys::default_config();
        c.workers = 2;
        c.idle_policy = JOBSYS_IDLE_WHIPPING_BOY;
        jobsys::System first(c);
        jobsys::System js(std::move(first)); // moved-from `first` destroys nothing
        CHECK(first.raw() == nullptr && js.workers() == 2);
        test_builder_and_shortcuts(js);
        test_the_job_owns_its_callable(js);
        test_deps(js);
        test_parallel_for(js);
        test_failures(js);
        test_join(js);
        test_scope(js);
        test_batching_and_stats(js);
        test_graph(js);

        // Jobs still queued when the System goes out of scope run first.
        for (int i = 0; i < 50; i++) js.schedule([t = Tracked()] { ++ran; });
    }
    CHECK(live == 0);
    test_boxed_callables_are_freed();
    test_builder_reused();
    test_frames();
    test_complete_for();
    test_wait_any_limiter_blocking();
    test_engine();
    CHECK(live == 0);
    {
        jobsys::System zero(0);
        auto h = zero.schedule([] { ++ran; });
        zero.complete(h);
        std::vector<size_t> out(10);
        zero.complete(zero.parallel_for(0, 10, 3, [&](size_t i) { out[i] = i; }));
        for (size_t i = 0; i < 10; i++) CHECK(out[i] == i);
        size_t s = sum_range(zero, 0, 1000);
        CHECK(s == size_t(999) * 1000 / 2);
        jobsys_config bad = jobsys::default_config();
        bad.workers = -5;
        expect_error([&] { jobsys::System sys(bad); }, JOBSYS_ERR_CONFIG, "workers = -5");
    }
    std::printf("wrapper_test: ok\n");
    return 0;
}
