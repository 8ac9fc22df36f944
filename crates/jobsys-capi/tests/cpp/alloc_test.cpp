// jobsys.hpp allocates nothing for a small lambda: a counting global
// operator new/delete (every form) sees 0 allocations, on any thread,
// across many rounds of schedule, builder with after(...) (variadic, a
// std::array view, a vector view), parallel_for, join, combine, complete
// and a Scope of a few jobs, each lambda a [&] capturing a few references
// (stored in the job itself: jobsys::stored_inline_v). A lambda too big for
// the job (or not trivially copyable) is boxed: at least one allocation per
// job, each freed.
//
// What is counted is C++'s operator new, i.e. the wrapper and this program:
// the Rust library allocates through malloc (jobsys_schedule with inline
// data allocates nothing there either; a parallel_for allocates its loop
// block, see jobsys.h), which this test does not see.
//
// Warm-up: the first calls on a thread may set up thread-local state (in the
// library, in the C++ runtime), and the vector below is filled once; so
// each measured pattern runs a few times before counting starts.
//
// Run by tests/c_programs.rs; prints "alloc_test: ok".
#include "jobsys.hpp"

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <vector>

#include "../c/check.h" // CHECK: prints the failed expression and jobsys's last error, exits 1

namespace {
std::atomic<long> news{0}, deletes{0};

void *counted_alloc(std::size_t n, std::size_t align) {
    news.fetch_add(1, std::memory_order_relaxed);
    if (n == 0) n = 1;
    void *p = align > alignof(std::max_align_t) ? std::aligned_alloc(align, (n + align - 1) / align * align)
                                                : std::malloc(n);
    return p;
}
void counted_free(void *p) {
    if (!p) return;
    deletes.fetch_add(1, std::memory_order_relaxed);
    std::free(p);
}
} // namespace

void *operator new(std::size_t n) {
    if (void *p = counted_alloc(n, 0)) return p;
    throw std::bad_alloc();
}
void *operator new[](std::size_t n) {
    if (void *p = counted_alloc(n, 0)) return p;
    throw std::bad_alloc();
}
void *operator new(std::size_t n, const std::nothrow_t &) noexcept { return counted_alloc(n, 0); }
void *operator new[](std::size_t n, const std::nothrow_t &) noexcept { return counted_alloc(n, 0); }
void *operator new(std::size_t n, std::align_val_t a) {
    if (void *p = counted_alloc(n, std::size_t(a))) return p;
    throw std::bad_alloc();
}
void *operator new[](std::size_t n, std::align_val_t a) {
    if (void *p = counted_alloc(n, std::size_t(a))) return p;
    throw std::bad_alloc();
}
void operator delete(void *p) noexcept { counted_free(p); }
void operator delete[](void *p) noexcept { counted_free(p); }
void operator delete(void *p, std::size_t) noexcept { counted_free(p); }
void operator delete[](void *p, std::size_t) noexcept { counted_free(p); }
void operator delete(void *p, std::align_val_t) noexcept { counted_free(p); }
void operator delete[](void *p, std::align_val_t) noexcept { counted_free(p); }
void operator delete(void *p, std::size_t, std::align_val_t) noexcept { counted_free(p); }
void operator delete[](void *p, std::size_t, std::align_val_t) noexcept { counted_free(p); }

namespace {

constexpr int kRounds = 200;
constexpr std::size_t kItems = 1000;

struct State {
    std::atomic<long> a{0}, b{0}, c{0}, d{0}, loop{0}, joined{0}, scoped{0};
    std::vector<jobsys::Handle> many; // a view target, filled during warm-up
};

// One round of every small-lambda pattern; what each job adds is checked
// after the rounds.
void round(jobsys::System &js, State &s) {
    auto a = js.schedule([&s] { s.a++; });
    auto b = js.job().name("b").priority(jobsys::Priority::High).after(a).schedule([&s] { s.b++; });
    std::array<jobsys::Handle, 2> ab{a, b};
    auto c = js.schedule_after(ab, [&s, &ab] { s.c += ab.size(); });
    s.many[0] = a;
    s.many[1] = c;
    auto d = js.job().after(a, b, c).after(s.many).batched().schedule([&s] { s.d++; });
    js.flush();
    auto loop = js.job().name("loop").after(d).parallel_for(0, kItems, 64, [&s](std::size_t lo, std::size_t hi) {
        s.loop += long(hi - lo);
    });
    js.complete(js.combine({a, b, c, d, loop}));
    long left = 0, right = 0;
    js.join([&] { left = 1; }, [&] { right = 2; });
    s.joined += left + right;
    js.scope([&](jobsys::Scope &sc) {
        for (int i = 0; i < 4; i++) sc.schedule([&s] { s.scoped++; });
        sc.job().after(a).parallel_for(0, 8, 1, [&s](std::size_t) { s.scoped++; });
    });
}

} // namespace

int main() {
    // The count is real: this program's operator new is the one called (not
    // so under valgrind, which replaces it), so a 0 below means something.
    long n_before = news.load();
    void *probe = ::operator new(16); // an explicit call: never elided
    bool counting = news.load() == n_before + 1;
    ::operator delete(probe);
    if (!counting) {
        std::fprintf(stderr, "alloc_test: the counting operator new is not in use\n");
        return 1;
    }

    jobsys::System js(2);
    State s;
    s.many.assign(4, jobsys::Handle()); // two slots set each round, two that name no job

    // The lambdas of round() fit in their jobs (checked here for one shape
    // of each: [&s], [&s, &ab], [&] with two references).
    {
        long x = 0;
        std::array<jobsys::Handle, 2> ab{};
        auto one = [&s] { s.a++; };
        auto two = [&s, &ab] { s.c += ab.size(); };
        auto both = [&] { x = long(ab.size()) + s.a; };
        static_assert(jobsys::stored_inline_v<decltype(one)>);
        static_assert(jobsys::stored_inline_v<decltype(two)>);
        static_assert(jobsys::stored_inline_v<decltype(both)>);
        both();
        CHECK(x == 2);
    }

    // Warm up: thread-local state on this thread and the workers.
    for (int i = 0; i < 5; i++) round(js, s);

    long n0 = news.load(), d0 = deletes.load();
    for (int i = 0; i < kRounds; i++) round(js, s);
    long allocated = news.load() - n0, freed = deletes.load() - d0;
    if (allocated != 0 || freed != 0) {
        std::fprintf(stderr, "alloc_test: %ld operator new and %ld operator delete in %d rounds of small lambdas\n",
                     allocated, freed, kRounds);
        return 1;
    }
    const long rounds = kRounds + 5;
    CHECK(s.a == rounds && s.b == rounds && s.c == 2 * rounds && s.d == rounds);
    CHECK(s.loop == rounds * long(kItems) && s.joined == 3 * rounds && s.scoped == 12 * rounds);

    // A big lambda (more than JOBSYS_INLINE_DATA bytes of captures) is
    // boxed: one allocation per job, freed once the jobs are done.
    struct Big {
        long v[8];
    };
    Big big{{1, 2, 3, 4, 5, 6, 7, 8}};
    std::atomic<long> sum{0};
    auto boxed = [big, &sum] { sum += big.v[7]; };
    auto boxed_loop = [big, &sum](std::size_t) { sum += big.v[0]; };
    static_assert(!jobsys::stored_inline_v<decltype(boxed)>);
    n0 = news.load();
    d0 = deletes.load();
    constexpr int kBig = 20;
    {
        std::array<jobsys::Handle, 2 * kBig> hs;
        for (int i = 0; i < kBig; i++) {
            hs[2 * i] = js.schedule(boxed);
            hs[2 * i + 1] = js.parallel_for(0, 4, 1, boxed_loop);
        }
        CHECK(news.load() - n0 >= 2 * kBig);
        js.complete(js.combine(hs));
    }
    CHECK(sum == kBig * 8 + kBig * 4);

    // A small lambda that is not trivially copyable is boxed too.
    struct Counted {
        Counted() = default;
        Counted(const Counted &) {}
    } counted;
    auto not_trivial = [counted, &sum] {
        (void)counted;
        sum++;
    };
    static_assert(!jobsys::stored_inline_v<decltype(not_trivial)>);
    long before = news.load();
    js.complete(js.schedule(not_trivial));
    CHECK(news.load() - before == 1);

    // Every box freed: the releases of finished jobs may still be running
    // right after complete(), so the count is read once the system is gone.
    long boxes = news.load() - n0;
    CHECK(boxes == 2 * kBig + 1);
    js = jobsys::System(0); // destroys the first system: every job and release done
    CHECK(deletes.load() - d0 == boxes);
    std::printf("alloc_test: ok\n");
    return 0;
}
