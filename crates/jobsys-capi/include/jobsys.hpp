// jobsys.hpp - header-only C++17 wrapper over the jobsys C API (jobsys.h).
//
//   jobsys::System js;                                  // default config
//   auto physics = js.job().name("physics").priority(jobsys::Priority::High)
//                      .schedule([&] { step(world); });
//   auto anim  = js.schedule_after(physics, [&] { animate(world); });
//   auto parts = js.job().after(physics).parallel_for(0, n, 0, [&](size_t i) { update(p[i]); });
//   js.complete(js.combine({anim, parts}));             // throws jobsys::Error if a job failed
//
//   js.join([&] { sort(left); }, [&] { sort(right); }); // fork/join, no handle
//   js.scope([&](jobsys::Scope &s) {                    // waits for every job of s
//       for (auto &chunk : chunks) s.schedule([&chunk] { process(chunk); });
//   });
//
//   uint32_t me = js.register_thread();                 // on a render thread
//   auto draw = js.job().pin(jobsys::Pin::thread(me)).after(sim, upload)
//                   .schedule([&] { submit(cmds); });
//   js.run_pinned();                                    // on that thread, once per frame
//   js.cancel(draw);                                    // anywhere: complete(draw) throws
//                                                       // jobsys::Cancelled
//
// The job builder (System::job(), Scope::job()) mirrors the Rust one: set
// options, then end with schedule(f) or parallel_for(begin, end, batch, f).
// Options: name, priority (or desc: both), after (dependencies; repeated
// calls add up), pin, batched. Every combination works (see jobsys.h).
//
// Where a callable lives (no heap allocation for small lambdas):
// - A callable that is trivially copyable, at most JOBSYS_INLINE_DATA (40)
//   bytes and at most 8-byte aligned (jobsys::stored_inline_v<F>: e.g. a
//   lambda capturing up to five references or pointers, [&] with up to five
//   captured variables, or small values such as ints) is byte-copied into
//   the job itself (jobsys_job_desc.data_size): the wrapper allocates
//   nothing, and a static trampoline calls the job's copy. jobsys_schedule
//   itself then allocates nothing either; a parallel_for allocates one
//   block per loop in the library whatever you pass (jobsys.h).
// - Any other callable (bigger, over-aligned, or with a non-trivial copy or
//   destructor, e.g. one capturing a std::string or std::shared_ptr) is
//   moved into one `new` allocation, deleted by the job's release callback:
//   after its last call, or without any call if a dependency failed or it
//   was cancelled (see jobsys_release_fn). Exactly once either way.
// - Either way the job calls its own copy, not your object, made before
//   schedule() returns (changing or destroying the original afterwards
//   changes nothing). Jobs
//   capturing by reference must be completed before what they reference
//   dies (a Scope does this for you).
// - A schedule() callable is called once, as non-const (a mutable lambda may
//   change its copy). A parallel_for callable is called from several threads
//   at once, through a const reference: f(i) per index, or f(begin, end) per
//   piece if it takes two size_t.
//
// Errors:
// - An exception escaping a job is caught in the job (it must never unwind
//   into jobsys) and fails it, with e.what() as the message: complete() on
//   it, or on anything depending on it, throws jobsys::Error, whose message
//   names the job if it has a name (`the job "physics" failed: ...`).
//   join() instead rethrows the exception itself, as it runs on your stack.
// - Errors from the C API are thrown as jobsys::Error (code + message);
//   JOBSYS_ERR_CANCELLED as jobsys::Cancelled, a jobsys::Error. A job whose
//   outcome jobsys no longer remembers throws jobsys::Error with code()
//   JOBSYS_ERR_OUTCOME_UNKNOWN, never returns as if it succeeded.
// - A cancelled job that had not started never runs; its callable is still
//   destroyed (boxed: freed) exactly once.
//
// Thread-safety is the C API's: every member function may be called from
// any thread, including from jobs, except System's destructor. A JobBuilder
// is a plain value for one thread (not thread-safe); a Scope may be used
// from any thread, its own jobs included.
//
// Profiler hooks: derive from jobsys::ProfilerHooks, override what your
// profiler shows, pass it to System(config, hooks) (see ProfilerHooks).
#ifndef JOBSYS_HPP
#define JOBSYS_HPP

#include "jobsys.h"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace jobsys {

// A failed C API call or job: the code and jobsys_last_error_message().
class Error : public std::runtime_error {
public:
    Error(jobsys_error code, const std::string &message)
        : std::runtime_error(message), code_(code) {}
    jobsys_error code() const noexcept { return code_; }

private:
    jobsys_error code_;
};

// A wait on a cancelled job (or on one depending on it): JOBSYS_ERR_CANCELLED.
class Cancelled : public Error {
public:
    explicit Cancelled(const std::string &message) : Error(JOBSYS_ERR_CANCELLED, message) {}
};

namespace detail {

// The exception for a failed call that returned `e` (this thread's last error message).
inline std::string message_of(jobsys_error e) {
    return std::string(jobsys_error_name(e)) + ": " + jobsys_last_error_message();
}

[[noreturn]] inline void throw_error(jobsys_error e, const std::string &message) {
    if (e == JOBSYS_ERR_CANCELLED) throw Cancelled(message);
    throw Error(e, message);
}

inline void check(jobsys_error e) {
    if (e != JOBSYS_OK) throw_error(e, message_of(e));
}

} // namespace detail

// Job priority: runnable High jobs are taken before Normal before Low.
enum class Priority {
    Normal = JOBSYS_PRIORITY_NORMAL,
    High = JOBSYS_PRIORITY_HIGH,
    Low = JOBSYS_PRIORITY_LOW,
};

// The class of core a job runs on (jobsys_core_class): Performance or
// Efficiency queue it for the workers of that class (any free one runs
// it) on a hybrid CPU with pinned workers; otherwise, and with Any, it
// runs anywhere.
enum class CoreClass {
    Any = JOBSYS_CORE_ANY,
    Performance = JOBSYS_CORE_PERFORMANCE,
    Efficiency = JOBSYS_CORE_EFFICIENCY,
};

// Names a scheduled job; a plain value (copy, compare, hash, store in
// containers). A default-constructed Handle names no job: as a dependency
// it is skipped, complete() on it returns at once (the zeroed
// jobsys_handle, JOBSYS_HANDLE_NONE), so graph code needs no "is there a
// predecessor?" branch.
class Handle {
public:
    constexpr Handle() noexcept : h_{0, 0} {}
    constexpr explicit Handle(jobsys_handle h) noexcept : h_(h) {}
    constexpr jobsys_handle raw() const noexcept { return h_; }
    // Whether this is the handle that names no job.
    constexpr bool is_none() const noexcept { return h_.id == 0 && h_.gen == 0; }
    friend constexpr bool operator==(Handle a, Handle b) noexcept {
        return a.h_.id == b.h_.id && a.h_.gen == b.h_.gen;
    }
    friend constexpr bool operator!=(Handle a, Handle b) noexcept { return !(a == b); }

private:
    jobsys_handle h_;
};

// Deps views an array of Handles as the jobsys_handle array the C API takes.
static_assert(sizeof(Handle) == sizeof(jobsys_handle) && alignof(Handle) == alignof(jobsys_handle) &&
                  std::is_standard_layout_v<Handle> && std::is_trivially_copyable_v<Handle>,
              "a Handle is exactly a jobsys_handle");

// Dependencies: a non-owning view (pointer + count, nothing copied, nothing
// allocated) over contiguous handles: a Handle, {a, b}, a std::vector, a
// std::array, a C array, any contiguous container of Handles, a pointer and
// a count. The handles must stay alive while the view is used: a function
// taking a Deps reads it during the call only, and {a, b} lives until the
// end of the full expression it is written in.
class Deps {
public:
    constexpr Deps() noexcept = default;
    Deps(const Handle &h) noexcept : p_(raw(&h)), n_(1) {}
    Deps(std::initializer_list<Handle> l) noexcept : p_(raw(l.begin())), n_(l.size()) {}
    Deps(const Handle *p, std::size_t n) noexcept : p_(raw(p)), n_(n) {}
    constexpr Deps(const jobsys_handle *p, std::size_t n) noexcept : p_(p), n_(n) {}
    // std::vector<Handle>, std::array<Handle, N>, Handle[N], ...
    template <class R, class = std::enable_if_t<std::is_convertible_v<
                           decltype(std::data(std::declval<const R &>())), const Handle *>>>
    Deps(const R &r) noexcept : p_(raw(std::data(r))), n_(std::size(r)) {}

    constexpr const jobsys_handle *data() const noexcept { return n_ ? p_ : nullptr; }
    constexpr std::size_t size() const noexcept { return n_; }

private:
    static const jobsys_handle *raw(const Handle *h) noexcept {
        return reinterpret_cast<const jobsys_handle *>(h);
    }
    const jobsys_handle *p_ = nullptr;
    std::size_t n_ = 0;
};

// The thread a pinned job runs on (see jobsys_pin): Pin::main(),
// Pin::worker(w) (the worker with thread index w, 1..workers()),
// Pin::thread(i) (whichever thread holds index i, e.g. from
// System::register_thread()), or the pin System::register_thread_pin()
// returns (that thread only).
class Pin {
public:
    static Pin main() noexcept { return Pin(JOBSYS_PIN_MAIN, 0); }
    static Pin worker(uint32_t w) noexcept { return Pin(JOBSYS_PIN_WORKER, w); }
    static Pin thread(uint32_t index) noexcept { return Pin(JOBSYS_PIN_THREAD, index); }
    static Pin from_raw(jobsys_pin p) noexcept { return Pin(p.kind, p.index); }
    jobsys_pin raw() const noexcept { return p_; }

private:
    Pin(jobsys_pin_kind kind, uint32_t index) noexcept : p_{kind, index} {}
    jobsys_pin p_;
};

// Name and priority of a job at once (JobBuilder::desc), e.g. a constant
// shared by many jobs. The name is copied by jobsys when the job is
// scheduled.
struct JobDesc {
    const char *name = nullptr;
    Priority priority = Priority::Normal;
};

// Inside a job: whether it was cancelled after it started (poll it in a
// long job and return early). False outside a job.
inline bool is_cancelled() noexcept { return jobsys_is_cancelled(); }

// The defaults of jobsys_config_init, to change before constructing a System
// (e.g. `c.workers = 4; c.follow_cpus = true;`).
inline jobsys_config default_config() {
    jobsys_config c;
    detail::check(jobsys_config_init(&c));
    return c;
}

// Whether a job's callable of type F is kept in the job itself (no heap
// allocation) rather than boxed: trivially copyable, at most
// JOBSYS_INLINE_DATA bytes, at most 8-byte aligned. The same rule for
// schedule() and parallel_for().
template <class F>
inline constexpr bool stored_inline_v = std::is_trivially_copyable_v<std::decay_t<F>> &&
                                        sizeof(std::decay_t<F>) <= JOBSYS_INLINE_DATA &&
                                        alignof(std::decay_t<F>) <= 8;

namespace detail {

inline void fail_with_current_exception() noexcept {
    try {
        throw;
    } catch (const std::exception &e) {
        jobsys_fail(e.what());
    } catch (...) {
        jobsys_fail("a C++ exception that is not a std::exception");
    }
}

// Trampolines: C callbacks that call the callable at `p` (the job's own
// copy, or the boxed one). An exception fails the job.
template <class Fn>
void run(void *p) noexcept {
    try {
        (*std::launder(static_cast<Fn *>(p)))();
    } catch (...) {
        fail_with_current_exception();
    }
}

template <class Fn>
void run_range(void *p, std::size_t begin, std::size_t end) noexcept {
    try {
        const Fn &f = *std::launder(static_cast<const Fn *>(p));
        if constexpr (std::is_invocable_v<const Fn &, std::size_t, std::size_t>) {
            f(begin, end);
        } else {
            for (std::size_t i = begin; i < end; ++i) f(i);
        }
    } catch (...) {
        fail_with_current_exception();
    }
}

// A callable small enough to be passed as the data pointer's own bits.
template <class Fn>
inline constexpr bool fits_in_pointer_v = std::is_trivially_copyable_v<Fn> &&
                                          sizeof(Fn) <= sizeof(void *) &&
                                          alignof(Fn) <= alignof(void *);

// The trampoline of such a callable: `bits` is the callable's bytes.
template <class Fn>
void run_bits(void *bits) noexcept {
    try {
        alignas(Fn) unsigned char buf[sizeof(Fn)];
        std::memcpy(buf, &bits, sizeof(Fn));
        (*std::launder(reinterpret_cast<Fn *>(buf)))();
    } catch (...) {
        fail_with_current_exception();
    }
}

// The release callback of a boxed callable.
template <class Fn>
void release(void *p) noexcept {
    delete static_cast<Fn *>(p);
}

// One half of System::join: the callable (on the caller's stack) and what it threw.
template <class F>
struct JoinPart {
    F *f;
    std::exception_ptr thrown;
};

template <class F>
void run_join(void *p) noexcept {
    auto *part = static_cast<JoinPart<F> *>(p);
    try {
        (*part->f)();
    } catch (...) {
        part->thrown = std::current_exception(); // rethrown by join() on its caller's thread
    }
}

} // namespace detail

// Profiler hooks (jobsys_profiler_callbacks, whose comment in jobsys.h has
// the rules): derive, override the methods your profiler shows, and pass an
// instance to System(config, hooks); it must outlive the System.
//
//   struct MyHooks : jobsys::ProfilerHooks {
//       void job_begin(uint32_t thread, uint64_t job, std::string_view name) override {...}
//       void job_end(uint32_t thread, uint64_t job, std::string_view name) override {...}
//   };
//   MyHooks hooks;
//   jobsys::System js(jobsys::default_config(), hooks);
//
// - Only the methods your class overrides are installed (found at compile
//   time from its type); the others are NULL callbacks, which cost nothing.
//   A method is called through a qualified, non-virtual call on the type you
//   passed.
// - Called from any thread, several at once; `thread` is the thread's
//   thread_index() (0 the creating thread, 1..workers() the workers, then
//   registered threads; 65536 + k for a thread without an index; see
//   docs/engine.md, "Thread index").
// - Must not call into jobsys, must not block. An exception escaping a
//   method aborts the process after printing "jobsys: a ProfilerHooks
//   method threw ..." to stderr (it must not unwind through jobsys, and
//   swallowing it would leave the profiler's zones unbalanced).
// - Job names stay valid for the process's life; thread names only during
//   the call.
class ProfilerHooks {
public:
    virtual ~ProfilerHooks() = default;
    virtual void thread_start(uint32_t /*thread*/, std::string_view /*name*/) {}
    virtual void thread_stop(uint32_t /*thread*/) {}
    virtual void job_ready(uint32_t /*thread*/, uint64_t /*job*/) {}
    virtual void job_begin(uint32_t /*thread*/, uint64_t /*job*/, std::string_view /*name*/) {}
    virtual void job_end(uint32_t /*thread*/, uint64_t /*job*/, std::string_view /*name*/) {}
    virtual void steal(uint32_t /*thread*/, uint32_t /*victim*/) {}
    virtual void wait_begin(uint32_t /*thread*/, uint64_t /*job*/) {}
    virtual void wait_end(uint32_t /*thread*/, uint64_t /*job*/) {}
    virtual void sleep_begin(uint32_t /*thread*/) {}
    virtual void sleep_end(uint32_t /*thread*/) {}
    virtual void wake(uint32_t /*thread*/, uint32_t /*wakee*/) {}
    virtual void frame_begin(uint32_t /*thread*/, uint64_t /*frame*/) {}
    virtual void frame_end(uint32_t /*thread*/, uint64_t /*frame*/) {}
    virtual void active_workers(uint32_t /*thread*/, uint32_t /*count*/) {}
    // Runnable but not running for wait_ns since the last sample (see
    // jobsys_profiler_callbacks.preempted): the "preempted" state.
    virtual void preempted(uint32_t /*thread*/, uint64_t /*wait_ns*/) {}
};

namespace detail {

[[noreturn]] inline void hook_threw(const char *what) noexcept {
    std::fprintf(stderr,
                 "jobsys: a ProfilerHooks method threw (%s); a hook runs inside the scheduler, "
                 "so the process aborts (see jobsys_profiler_callbacks)\n",
                 what);
    std::abort();
}

// Calls f, aborting if it throws.
template <class F>
void call_hook(F &&f) noexcept {
    try {
        f();
    } catch (const std::exception &e) {
        hook_threw(e.what());
    } catch (...) {
        hook_threw("not a std::exception");
    }
}

// The C table for hooks of type H: a callback for each method H overrides
// (&H::m names ProfilerHooks' member, of type `R (ProfilerHooks::*)(...)`,
// unless H or a base between declares its own).
template <class H>
jobsys_profiler_callbacks profiler_callbacks(H &hooks) noexcept {
    static_assert(std::is_base_of_v<ProfilerHooks, H>, "hooks derive from jobsys::ProfilerHooks");
    jobsys_profiler_callbacks cb{};
    cb.size = sizeof cb;
    cb.user_data = static_cast<void *>(&hooks);
#define JOBSYS_HOOK_OVERRIDDEN(m) (!std::is_same_v<decltype(&H::m), decltype(&ProfilerHooks::m)>)
    if constexpr (JOBSYS_HOOK_OVERRIDDEN(thread_start))
        cb.thread_start = [](void *u, uint32_t t, const char *n, size_t l) {
            call_hook([&] { static_cast<H *>(u)->H::thread_start(t, std::string_view(n, l)); });
        };
    if constexpr (JOBSYS_HOOK_OVERRIDDEN(thread_stop))
        cb.thread_stop = [](void *u, uint32_t t) {
            call_hook([&] { static_cast<H *>(u)->H::thread_stop(t); });
        };
    if constexpr (JOBSYS_HOOK_OVERRIDDEN(job_ready))
        cb.job_ready = [](void *u, uint32_t t, uint64_t j) {
            call_hook([&] { static_cast<H *>(u)->H::job_ready(t, j); });
        };
    if constexpr (JOBSYS_HOOK_OVERRIDDEN(job_begin))
        cb.job_begin = [](void *u, uint32_t t, uint64_t j, const char *n, size_t l) {
            call_hook([&] { static_cast<H *>(u)->H::job_begin(t, j, std::string_view(n, l)); });
        };
    if constexpr (JOBSYS_HOOK_OVERRIDDEN(job_end))
        cb.job_end = [](void *u, uint32_t t, uint64_t j, const char *n, size_t l) {
            call_hook([&] { static_cast<H *>(u)->H::job_end(t, j, std::string_view(n, l)); });
        };
    if constexpr (JOBSYS_HOOK_OVERRIDDEN(steal))
        cb.steal = [](void *u, uint32_t t, uint32_t v) {
            call_hook([&] { static_cast<H *>(u)->H::steal(t, v); });
        };
    if constexpr (JOBSYS_HOOK_OVERRIDDEN(wait_begin))
        cb.wait_begin = [](void *u, uint32_t t, uint64_t j) {
            call_hook([&] { static_cast<H *>(u)->H::wait_begin(t, j); });
        };
    if constexpr (JOBSYS_HOOK_OVERRIDDEN(wait_end))
        cb.wait_end = [](void *u, uint32_t t, uint64_t j) {
            call_hook([&] { static_cast<H *>(u)->H::wait_end(t, j); });
        };
    if constexpr (JOBSYS_HOOK_OVERRIDDEN(sleep_begin))
        cb.sleep_begin = [](void *u, uint32_t t) {
            call_hook([&] { static_cast<H *>(u)->H::sleep_begin(t); });
        };
    if constexpr (JOBSYS_HOOK_OVERRIDDEN(sleep_end))
        cb.sleep_end = [](void *u, uint32_t t) {
            call_hook([&] { static_cast<H *>(u)->H::sleep_end(t); });
        };
    if constexpr (JOBSYS_HOOK_OVERRIDDEN(wake))
        cb.wake = [](void *u, uint32_t t, uint32_t w) {
            call_hook([&] { static_cast<H *>(u)->H::wake(t, w); });
        };
    if constexpr (JOBSYS_HOOK_OVERRIDDEN(frame_begin))
        cb.frame_begin = [](void *u, uint32_t t, uint64_t f) {
            call_hook([&] { static_cast<H *>(u)->H::frame_begin(t, f); });
        };
    if constexpr (JOBSYS_HOOK_OVERRIDDEN(frame_end))
        cb.frame_end = [](void *u, uint32_t t, uint64_t f) {
            call_hook([&] { static_cast<H *>(u)->H::frame_end(t, f); });
        };
    if constexpr (JOBSYS_HOOK_OVERRIDDEN(active_workers))
        cb.active_workers = [](void *u, uint32_t t, uint32_t c) {
            call_hook([&] { static_cast<H *>(u)->H::active_workers(t, c); });
        };
    if constexpr (JOBSYS_HOOK_OVERRIDDEN(preempted))
        cb.preempted = [](void *u, uint32_t t, uint64_t ns) {
            call_hook([&] { static_cast<H *>(u)->H::preempted(t, ns); });
        };
#undef JOBSYS_HOOK_OVERRIDDEN
    return cb;
}

} // namespace detail

// At most max() of its jobs (JobBuilder::limit) run at once; each running
// one holds a seat in [0, max()), read with jobsys::limiter_slot() (see
// jobsys_limiter). Owns the C limiter; jobs keep what they need of it, so
// it may go out of scope while they wait or run.
//
//   jobsys::Limiter decoders(2);
//   std::vector<Scratch> scratch(decoders.max());
//   js.job().limit(decoders).schedule([&] { decode(scratch[*jobsys::limiter_slot()]); });
class Limiter {
public:
    explicit Limiter(std::size_t max) : max_(max) {
        detail::check(jobsys_limiter_create(max, &raw_));
    }
    Limiter(const Limiter &) = delete;
    Limiter &operator=(const Limiter &) = delete;
    ~Limiter() { jobsys_limiter_destroy(raw_); }
    std::size_t max() const noexcept { return max_; }
    const jobsys_limiter *raw() const noexcept { return raw_; }

private:
    jobsys_limiter *raw_ = nullptr;
    std::size_t max_;
};

// The seat of the limited job running on this thread; empty outside one.
inline std::optional<std::size_t> limiter_slot() noexcept {
    std::size_t s = jobsys_limiter_slot();
    if (s == JOBSYS_NO_SEAT) return std::nullopt;
    return s;
}

class Scope;
class System;

// The options of one job, gathered by System::job() or Scope::job() and
// used by the call that ends it: schedule(f) or parallel_for(begin, end,
// batch, f). Each option returns the builder, so a job is one expression:
//
//   js.job().name("physics").priority(jobsys::Priority::High).after(input)
//       .schedule([&] { step(world); });
//
// The builder lives on the stack (about 260 bytes: the C descriptor and
// room for 8 dependency handles) and allocates nothing unless it gathers
// more than 8 dependencies from several after() calls (see after). Names
// and the ranges after(Deps) views are read when the job is scheduled:
// they must live until then (in one expression, they do). A builder may be
// kept and schedule several jobs with the same options.
//
// jobsys_job_desc.release has no option of its own: the wrapper uses it to
// free boxed callables. What must happen when a job is dropped, run or not,
// belongs in the destructor of something its callable holds (such a
// callable is not trivially copyable, so it is boxed and its destructor
// runs from the release callback).
class JobBuilder {
public:
    // The job's name, shown by the tracer and the profiler hooks, and in
    // error messages (`the job "physics" failed: ...`). Copied by jobsys.
    JobBuilder &name(const char *name) noexcept {
        desc_.name = name;
        return *this;
    }

    // Runnable High jobs are taken before Normal before Low.
    JobBuilder &priority(Priority p) noexcept {
        desc_.priority = static_cast<jobsys_priority>(p);
        return *this;
    }

    // Name and priority at once.
    JobBuilder &desc(const JobDesc &d) noexcept {
        return name(d.name).priority(d.priority);
    }

    // Run after every job in `deps` has finished; if one of them fails,
    // this job does not run and fails too. Calls add up: after(a, b) then
    // after(more) waits for a, b and every handle of `more`. Handles that
    // name no job (Handle()) are skipped.
    // - after(a, b, c) and after({a, b}) copy the handles into the builder
    //   (no allocation up to 8 in all).
    // - after(deps) with a vector, array or Deps views it: nothing copied
    //   when it is the only after() of the builder; keep it alive until the
    //   job is scheduled. Mixed with other after() calls, the handles are
    //   gathered in the builder (a std::vector beyond 8 in all).
    JobBuilder &after(Deps deps) {
        if (deps.size() == 0) return *this;
        if (!gathered_ && nview_ == 0) {
            view_ = deps.data();
            nview_ = deps.size();
        } else {
            gather(deps.data(), deps.size());
        }
        return *this;
    }
    JobBuilder &after(std::initializer_list<Handle> handles) {
        gather(Deps(handles).data(), handles.size());
        return *this;
    }
    template <class... Hs,
              class = std::enable_if_t<(sizeof...(Hs) > 0) &&
                                       (std::is_same_v<std::decay_t<Hs>, Handle> && ...)>>
    JobBuilder &after(const Hs &...handles) {
        const jobsys_handle raw[] = {handles.raw()...};
        gather(raw, sizeof...(Hs));
        return *this;
    }

    // Run only on the thread `pin` names (see jobsys_job_desc.pin): a
    // pinned parallel_for runs its whole range there, in order.
    JobBuilder &pin(Pin p) noexcept {
        desc_.flags |= JOBSYS_JOB_PINNED;
        desc_.pin = p.raw();
        return *this;
    }

    // Run on a worker of this class of core (see CoreClass); replaces
    // pin() when it applies.
    JobBuilder &core_class(CoreClass c) noexcept {
        desc_.core_class = static_cast<jobsys_core_class>(c);
        return *this;
    }

    // Wake no worker: the job waits in this thread's queue (awake workers
    // may take it) until System::flush() or a complete() on this thread.
    JobBuilder &batched(bool on = true) noexcept {
        if (on)
            desc_.flags |= JOBSYS_JOB_BATCHED;
        else
            desc_.flags &= ~uint32_t(JOBSYS_JOB_BATCHED);
        return *this;
    }

    // Run only with a seat of `l` (see Limiter): at most l.max() of its
    // jobs at once; a job waits for its seat without holding a thread.
    JobBuilder &limit(const Limiter &l) noexcept {
        desc_.limiter = l.raw();
        return *this;
    }

    // Schedule f(), which may block (file or network I/O), on a blocking
    // thread instead of a worker (JOBSYS_JOB_BLOCKING): no worker waits
    // meanwhile; the handle finishes when f returns. Not with pin().
    template <class F>
    Handle schedule_blocking(F &&f) {
        desc_.flags |= JOBSYS_JOB_BLOCKING;
        return schedule(std::forward<F>(f));
    }

    // Schedule f() as one job; its handle. f is stored in the job if
    // stored_inline_v<F>, else boxed (see the top of this file).
    template <class F>
    Handle schedule(F &&f) {
        using Fn = std::decay_t<F>;
        static_assert(std::is_invocable_v<Fn &>, "a job is callable with no arguments");
        jobsys_job_desc *d = with_deps();
        jobsys_handle h{0, 0};
        if constexpr (stored_inline_v<Fn>) {
            const Fn &copy = f; // jobsys copies its bytes before returning
            d->data_size = sizeof(Fn);
            d->release = nullptr;
            detail::check(jobsys_schedule(sys_, d, &detail::run<Fn>, as_data(copy), &h));
        } else {
            Fn *boxed = new Fn(std::forward<F>(f));
            d->data_size = 0;
            d->release = &detail::release<Fn>;
            jobsys_error e = jobsys_schedule(sys_, d, &detail::run<Fn>, boxed, &h);
            if (e != JOBSYS_OK) {
                delete boxed; // not scheduled: release is not called
                detail::check(e);
            }
        }
        return scheduled(h);
    }

    // f(i) for every i in [begin, end), or f(b, e) for each piece [b, e) if
    // f takes two size_t, on all threads (on the pinned thread alone with
    // pin()), as one job; its handle. batch = indices per piece (the last
    // may be shorter), 0 = auto. f is called through a const reference,
    // from several threads at once; stored as schedule() stores it. An
    // empty range completes with its dependencies; begin > end throws
    // Error (JOBSYS_ERR_INVALID_ARGUMENT).
    template <class F>
    Handle parallel_for(std::size_t begin, std::size_t end, std::size_t batch, F &&f) {
        using Fn = std::decay_t<F>;
        static_assert(std::is_invocable_v<const Fn &, std::size_t, std::size_t> ||
                          std::is_invocable_v<const Fn &, std::size_t>,
                      "parallel_for takes f(size_t i) or f(size_t begin, size_t end), callable as "
                      "const");
        jobsys_job_desc *d = with_deps();
        jobsys_handle h{0, 0};
        if constexpr (stored_inline_v<Fn>) {
            const Fn &copy = f;
            d->data_size = sizeof(Fn);
            d->release = nullptr;
            detail::check(jobsys_parallel_for(sys_, d, begin, end, batch,
                                              &detail::run_range<Fn>, as_data(copy), &h));
        } else {
            Fn *boxed = new Fn(std::forward<F>(f));
            d->data_size = 0;
            d->release = &detail::release<Fn>;
            jobsys_error e = jobsys_parallel_for(sys_, d, begin, end, batch,
                                                 &detail::run_range<Fn>, boxed, &h);
            if (e != JOBSYS_OK) {
                delete boxed;
                detail::check(e);
            }
        }
        return scheduled(h);
    }

private:
    friend class System;
    friend class Scope;
    static constexpr std::size_t kInlineDeps = 8;

    JobBuilder(jobsys_system *sys, Scope *scope) noexcept : sys_(sys), scope_(scope) {}

    template <class Fn>
    static void *as_data(const Fn &f) noexcept {
        return const_cast<void *>(static_cast<const void *>(std::addressof(f)));
    }

    // Copy handles into the builder, after those of an earlier view.
    void gather(const jobsys_handle *p, std::size_t n) {
        if (!gathered_) {
            gathered_ = true;
            const jobsys_handle *v = std::exchange(view_, nullptr);
            std::size_t nv = std::exchange(nview_, 0);
            append(v, nv);
        }
        append(p, n);
    }
    void append(const jobsys_handle *p, std::size_t n) {
        if (n == 0) return;
        if (spill_.empty() && nsmall_ + n <= kInlineDeps) {
            for (std::size_t i = 0; i < n; ++i) small_[nsmall_ + i] = p[i];
            nsmall_ += n;
            return;
        }
        if (spill_.empty()) spill_.assign(small_, small_ + nsmall_);
        spill_.insert(spill_.end(), p, p + n);
    }

    // The C descriptor, in place (no copy), its deps pointing at this
    // builder's (or the view). The caller sets data_size and release for
    // each call: a builder may schedule more than once.
    jobsys_job_desc *with_deps() noexcept {
        if (!gathered_) {
            desc_.deps = view_;
            desc_.ndeps = nview_;
        } else if (!spill_.empty()) {
            desc_.deps = spill_.data();
            desc_.ndeps = spill_.size();
        } else {
            desc_.deps = nsmall_ ? small_ : nullptr;
            desc_.ndeps = nsmall_;
        }
        return &desc_;
    }

    // h as a Handle, recorded in the scope first if the builder has one.
    Handle scheduled(jobsys_handle h) {
        if (scope_) track_in_scope(h);
        return Handle(h);
    }
    inline void track_in_scope(jobsys_handle h); // below Scope

    jobsys_system *sys_;
    Scope *scope_;
    jobsys_job_desc desc_ = JOBSYS_JOB_DESC_INIT;
    const jobsys_handle *view_ = nullptr; // the one after(Deps) while nothing was gathered
    std::size_t nview_ = 0;
    bool gathered_ = false; // deps are in small_ (or spill_), not view_
    std::size_t nsmall_ = 0;
    jobsys_handle small_[kInlineDeps]; // [0, nsmall_) written; not zeroed (a job's cost)
    std::vector<jobsys_handle> spill_; // more than kInlineDeps gathered
};

// A group of jobs that ends before System::scope() returns:
//
//   js.scope([&](jobsys::Scope &s) {
//       auto a = s.job().name("a").schedule([&] { ... });
//       s.job().after(a).parallel_for(0, n, 0, [&](size_t i) { ... });
//   }); // both finished here
//
// - scope(f) calls f(scope), then waits for every job scheduled through the
//   scope (s.job(), s.schedule(), ..., from any thread: jobs of the scope
//   may add more), also when f throws. So the jobs may capture the caller's
//   stack by reference.
// - Then, if f threw, scope() rethrows that; else, if a job of the scope
//   failed (or was cancelled), it throws the first such failure (in the
//   order the jobs were scheduled) as a jobsys::Error.
// - Cost: scheduling through a scope takes its mutex once to record the
//   handle; the first 16 handles are kept in the Scope itself (on the
//   stack of scope()), more in a std::vector (which allocates as it
//   grows). At the end, one jobsys_complete per recorded job, in order: a
//   finished job costs a check, an unfinished one has this thread help run
//   it. Nothing else (no extra job, no combine).
class Scope {
public:
    Scope(const Scope &) = delete;
    Scope &operator=(const Scope &) = delete;

    // A builder whose job the scope waits for.
    JobBuilder job() noexcept { return JobBuilder(sys_, this); }

    template <class F>
    Handle schedule(F &&f) {
        return job().schedule(std::forward<F>(f));
    }
    template <class F>
    Handle schedule_after(Deps deps, F &&f) {
        return job().after(deps).schedule(std::forward<F>(f));
    }
    template <class F>
    Handle parallel_for(std::size_t begin, std::size_t end, std::size_t batch, F &&f) {
        return job().parallel_for(begin, end, batch, std::forward<F>(f));
    }

    // The jobs scheduled through this scope so far.
    std::size_t size() const {
        std::lock_guard<std::mutex> g(mu_);
        return count();
    }

private:
    friend class System;
    friend class JobBuilder;
    static constexpr std::size_t kInline = 16;

    explicit Scope(jobsys_system *sys) noexcept : sys_(sys) {}

    void track(jobsys_handle h) {
        std::lock_guard<std::mutex> g(mu_);
        if (n_ < kInline)
            small_[n_++] = h;
        else
            more_.push_back(h);
    }
    std::size_t count() const noexcept { return n_ + more_.size(); }

    // Complete every recorded job (also those recorded meanwhile); the
    // first failure's code, its message in *message.
    jobsys_error wait(std::string *message) noexcept {
        jobsys_error first = JOBSYS_OK;
        for (std::size_t i = 0;; ++i) {
            jobsys_handle h;
            {
                std::lock_guard<std::mutex> g(mu_);
                if (i == count()) break;
                h = i < kInline ? small_[i] : more_[i - kInline];
            }
            jobsys_error e = jobsys_complete(sys_, h);
            if (e != JOBSYS_OK && first == JOBSYS_OK) {
                first = e;
                if (message) {
                    try {
                        *message = detail::message_of(e);
                    } catch (...) {
                        // out of memory: the code alone
                    }
                }
            }
        }
        return first;
    }

    // Wait, then throw the first failure.
    void end() {
        std::string message;
        jobsys_error e = wait(&message);
        if (e != JOBSYS_OK) detail::throw_error(e, message);
    }

    jobsys_system *sys_;
    mutable std::mutex mu_;
    std::size_t n_ = 0;
    jobsys_handle small_[kInline] = {};
    std::vector<jobsys_handle> more_;
};

inline void JobBuilder::track_in_scope(jobsys_handle h) {
    try {
        scope_->track(h);
    } catch (...) {
        // Not recorded (out of memory): wait here, so the scope never
        // ends before the job, then report.
        jobsys_complete(sys_, h);
        throw;
    }
}

// An open hot zone; closes when destroyed (see jobsys_hot_zone_begin).
class HotZone {
public:
    HotZone(HotZone &&o) noexcept : sys_(std::exchange(o.sys_, nullptr)) {}
    HotZone &operator=(HotZone &&) = delete;
    HotZone(const HotZone &) = delete;
    ~HotZone() {
        if (sys_) jobsys_hot_zone_end(sys_);
    }

private:
    friend class System;
    explicit HotZone(jobsys_system *s) : sys_(s) { detail::check(jobsys_hot_zone_begin(s)); }
    jobsys_system *sys_;
};

// An open frame of the trace; ends when destroyed (see jobsys_frame_begin).
class Frame {
public:
    Frame(Frame &&o) noexcept : sys_(std::exchange(o.sys_, nullptr)) {}
    Frame &operator=(Frame &&) = delete;
    Frame(const Frame &) = delete;
    ~Frame() {
        if (sys_) jobsys_frame_end(sys_);
    }

private:
    friend class System;
    explicit Frame(jobsys_system *s) : sys_(s) { detail::check(jobsys_frame_begin(s)); }
    jobsys_system *sys_;
};

// A job system (RAII over jobsys_system*). Move-only. The destructor runs
// every job scheduled so far, then stops the workers (jobsys_destroy); it
// must not run inside one of this system's own jobs.
class System {
public:
    System() : System(default_config()) {}
    explicit System(const jobsys_config &config) { detail::check(jobsys_create(&config, &sys_)); }
    // `config` with profiler hooks (see ProfilerHooks); `hooks` must outlive
    // the System. Replaces config.profiler.
    template <class H, class = std::enable_if_t<std::is_base_of_v<ProfilerHooks, H>>>
    System(jobsys_config config, H &hooks) {
        jobsys_profiler_callbacks cb = detail::profiler_callbacks(hooks);
        config.profiler = &cb; // copied by jobsys_create
        detail::check(jobsys_create(&config, &sys_));
    }
    // Default configuration with `workers` worker threads.
    explicit System(int32_t workers) : System(with_workers(workers)) {}
    ~System() {
        if (sys_) jobsys_destroy(sys_);
    }
    System(System &&o) noexcept : sys_(std::exchange(o.sys_, nullptr)) {}
    System &operator=(System &&o) noexcept {
        if (this != &o) {
            if (sys_) jobsys_destroy(sys_);
            sys_ = std::exchange(o.sys_, nullptr);
        }
        return *this;
    }
    System(const System &) = delete;
    System &operator=(const System &) = delete;

    jobsys_system *raw() const noexcept { return sys_; }

    uint32_t workers() const {
        uint32_t n = 0;
        detail::check(jobsys_workers(sys_, &n));
        return n;
    }

    // ---- Jobs ----

    // A job builder: js.job().name(..).priority(..).after(..).pin(..)
    // .batched().schedule(f) / .parallel_for(begin, end, batch, f). Nothing
    // waits for the job: complete its handle (or use scope()).
    JobBuilder job() noexcept { return JobBuilder(sys_, nullptr); }

    // job().schedule(f): run f() on some thread. A callable that fits in a
    // pointer (a lambda capturing one reference, or nothing) travels as
    // jobsys_schedule's data itself, with no desc to read: the cheapest job.
    template <class F>
    Handle schedule(F &&f) {
        using Fn = std::decay_t<F>;
        if constexpr (detail::fits_in_pointer_v<Fn>) {
            static_assert(std::is_invocable_v<Fn &>, "a job is callable with no arguments");
            const Fn copy = f; // a function decays to its pointer here
            void *bits = nullptr;
            std::memcpy(&bits, &copy, sizeof(Fn));
            jobsys_handle h{0, 0};
            detail::check(jobsys_schedule(sys_, nullptr, &detail::run_bits<Fn>, bits, &h));
            return Handle(h);
        } else {
            return job().schedule(std::forward<F>(f));
        }
    }

    // job().after(deps).schedule(f): run f() after every job in deps
    // finished (not at all if one failed).
    template <class F>
    Handle schedule_after(Deps deps, F &&f) {
        return job().after(deps).schedule(std::forward<F>(f));
    }

    // job().parallel_for(begin, end, batch, f).
    template <class F>
    Handle parallel_for(std::size_t begin, std::size_t end, std::size_t batch, F &&f) {
        return job().parallel_for(begin, end, batch, std::forward<F>(f));
    }

    // Fork/join (jobsys_join): run a() and b(), potentially in parallel,
    // and return when both have returned. b runs on this thread; a is
    // offered to other threads and, unless one took it meanwhile, runs here
    // afterwards. No handle, no allocation, nothing copied: both are called
    // in place. If a or b throws, join() rethrows that exception (a's if
    // both did) after both have returned; a jobsys_fail() in either throws
    // Error (JOBSYS_ERR_JOB_FAILED).
    template <class A, class B>
    void join(A &&a, B &&b) {
        using FA = std::remove_reference_t<A>;
        using FB = std::remove_reference_t<B>;
        static_assert(std::is_invocable_v<FA &> && std::is_invocable_v<FB &>,
                      "join takes two callables with no arguments");
        detail::JoinPart<FA> pa{std::addressof(a), nullptr};
        detail::JoinPart<FB> pb{std::addressof(b), nullptr};
        jobsys_error e = jobsys_join(sys_, &detail::run_join<FA>, &pa, &detail::run_join<FB>, &pb);
        if (pa.thrown) std::rethrow_exception(pa.thrown);
        if (pb.thrown) std::rethrow_exception(pb.thrown);
        detail::check(e);
    }

    // f(scope), then wait for every job scheduled through the scope (see
    // Scope); f's result. Throws what f threw, else the first failure of a
    // job of the scope.
    template <class F>
    auto scope(F &&f) -> std::invoke_result_t<F &, Scope &> {
        using R = std::invoke_result_t<F &, Scope &>;
        Scope s(sys_);
        if constexpr (std::is_void_v<R>) {
            try {
                f(s);
            } catch (...) {
                s.wait(nullptr);
                throw;
            }
            s.end();
        } else {
            R r = [&]() -> R {
                try {
                    return f(s);
                } catch (...) {
                    s.wait(nullptr);
                    throw;
                }
            }();
            s.end();
            return r;
        }
    }

    // One handle that completes when all of `handles` have; fails if any
    // of them fails (a job of its own in the system).
    Handle combine(Deps handles) {
        jobsys_handle h;
        detail::check(jobsys_combine(sys_, handles.data(), handles.size(), &h));
        return Handle(h);
    }

    // Wait for h, running work it needs on this thread meanwhile; throws
    // Error if it (or a dependency) failed, Cancelled if it was cancelled.
    // Handle() (no job) returns at once.
    void complete(Handle h) { detail::check(jobsys_complete(sys_, h.raw())); }

    // complete() that returns the code instead of throwing (the message:
    // jobsys_last_error_message()).
    jobsys_error try_complete(Handle h) noexcept { return jobsys_complete(sys_, h.raw()); }

    // complete() that gives up after `timeout`: false if h has not finished
    // by then (the job goes on, not cancelled: wait again or cancel it);
    // true once it has; throws as complete() does if it failed. A job this
    // thread runs meanwhile is not interrupted, so it may return later than
    // the timeout by that job's length.
    template <class Rep, class Period>
    bool complete_for(Handle h, std::chrono::duration<Rep, Period> timeout) {
        auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(timeout).count();
        jobsys_error e = jobsys_complete_timeout(sys_, h.raw(), ns < 0 ? 0 : uint64_t(ns));
        if (e == JOBSYS_ERR_TIMEOUT) return false;
        detail::check(e);
        return true;
    }

    // Wait until one of `handles` has finished (successfully or not) and
    // return its index (the lowest, if several have); complete() it for its
    // outcome. Runs other work meanwhile; the other jobs go on. Throws
    // Error for an empty list, a bad handle, or WAIT_ON_SELF.
    std::size_t wait_any(Deps handles) {
        std::size_t i = 0;
        detail::check(jobsys_wait_any(sys_, handles.data(), handles.size(), &i));
        return i;
    }

    // Whether h finished (successfully or not); never blocks.
    bool is_complete(Handle h) const {
        bool done = false;
        detail::check(jobsys_is_complete(sys_, h.raw(), &done));
        return done;
    }

    // Cancel h; true if it was stopped before it started (see jobsys_cancel).
    bool cancel(Handle h) {
        bool stopped = false;
        detail::check(jobsys_cancel(sys_, h.raw(), &stopped));
        return stopped;
    }

    // Publish this thread's batched jobs; returns how many workers woke.
    uint32_t flush() {
        uint32_t woken = 0;
        detail::check(jobsys_flush(sys_, &woken));
        return woken;
    }

    // ---- Threads and pins ----

    // Make the calling thread one that runs jobs pinned to it; its index
    // (for Pin::thread). See jobsys_register_thread.
    uint32_t register_thread() {
        uint32_t index = 0;
        detail::check(jobsys_register_thread(sys_, &index));
        return index;
    }

    // register_thread(), and the pin that names this thread only: jobs
    // pinned with it after the thread exits are cancelled, never run by a
    // thread that took its index. See jobsys_register_thread_pin.
    Pin register_thread_pin() {
        jobsys_pin p{};
        detail::check(jobsys_register_thread_pin(sys_, &p));
        return Pin::from_raw(p);
    }

    // Run the calling thread's ready pinned jobs; how many ran.
    uint32_t run_pinned() {
        uint32_t ran = 0;
        detail::check(jobsys_run_pinned(sys_, &ran));
        return ran;
    }

    // The calling thread's index (0: the thread that created the system,
    // 1..workers(): the workers, then registered threads); nullopt for a
    // thread the system does not know.
    std::optional<uint32_t> thread_index() const {
        int32_t i = -1;
        detail::check(jobsys_thread_index(sys_, &i));
        if (i < 0) return std::nullopt;
        return uint32_t(i);
    }

    // Let at most n workers take work (throws Error for n > workers()).
    void set_active_workers(uint32_t n) { detail::check(jobsys_set_active_workers(sys_, n)); }

    uint32_t active_workers() const {
        uint32_t n = 0;
        detail::check(jobsys_active_workers(sys_, &n));
        return n;
    }

    // ---- Hot zones, tracing, statistics ----

    HotZone hot_zone() { return HotZone(sys_); }

    // Tracing: start a capture, stop it, write the last stopped one to
    // `path` as a raw capture (see jobsys_trace_write).
    void trace_start() { detail::check(jobsys_trace_start(sys_)); }
    void trace_stop() { detail::check(jobsys_trace_stop(sys_)); }
    void trace_write(const char *path) { detail::check(jobsys_trace_write(sys_, path)); }
    // A frame of the trace, from here to the guard's end of scope:
    // `{ auto frame = js.frame(); ...schedule and complete the frame's jobs... }`.
    [[nodiscard]] Frame frame() { return Frame(sys_); }

    jobsys_stats stats() const {
        jobsys_stats s;
        detail::check(jobsys_get_stats(sys_, &s));
        return s;
    }
    jobsys_stats take_stats() {
        jobsys_stats s;
        detail::check(jobsys_take_stats(sys_, &s));
        return s;
    }
    // The worker with thread index `thread_index` (1..workers()).
    jobsys_stats worker_stats(uint32_t thread_index) const {
        jobsys_stats s;
        detail::check(jobsys_get_worker_stats(sys_, thread_index, &s));
        return s;
    }

private:
    static jobsys_config with_workers(int32_t workers) {
        jobsys_config c = default_config();
        c.workers = workers;
        return c;
    }

    jobsys_system *sys_ = nullptr;
};

// ---- Frame graphs ----
//
// A graph of nodes with the options of a job, built once and run every
// frame (jobsys_graph in jobsys.h; docs/graph.md):
//
//   jobsys::GraphBuilder b(js);
//   auto input = b.node().name("input").call([&] { read_input(world); });
//   auto physics = b.node().name("physics").after(input).call([&] { step(world); });
//   b.node().name("render").after(physics).call([&] { render(world); });
//   jobsys::Graph graph = b.build();
//   for (;;) {                              // every frame
//       jobsys::Handle run = graph.run();
//       graph.sync(physics);                // a mid-frame sync point
//       js.complete(run);
//   }
//
// A node's callable is called once per run (never by two runs at once); a
// loop node's through a const reference, from several threads at once. It
// is kept for the graph's life: in the node if it is trivially copyable
// (copied once, when the node is added), else boxed (one allocation per
// node, at build time). A run allocates nothing after the first runs. An
// exception thrown by a node fails it, its dependents and its run (the
// next run starts clean): sync() and complete() throw it as an Error.

// One node of a graph. A default Node names none.
class Node {
public:
    Node() noexcept = default;
    explicit Node(jobsys_node n) noexcept : n_(n) {}
    jobsys_node raw() const noexcept { return n_; }
    std::size_t index() const noexcept { return n_.index; }

private:
    jobsys_node n_{0, 0};
};

class GraphBuilder;

// A node's options, then call(f) or parallel_for(begin, end, batch, f),
// which add it.
class NodeBuilder {
public:
    NodeBuilder &name(const char *name) noexcept {
        desc_.name = name;
        return *this;
    }
    // The node's own priority (default Normal). A node on the measured
    // critical path runs as High whatever its own, unless keep_priority().
    NodeBuilder &priority(Priority p) noexcept {
        desc_.priority = static_cast<jobsys_priority>(p);
        return *this;
    }
    // The critical path does not raise this node: its own priority every run.
    NodeBuilder &keep_priority() noexcept {
        desc_.flags |= JOBSYS_JOB_KEEP_PRIORITY;
        return *this;
    }
    NodeBuilder &pin(Pin p) noexcept {
        desc_.flags |= JOBSYS_JOB_PINNED;
        desc_.pin = p.raw();
        return *this;
    }
    NodeBuilder &limit(const Limiter &l) noexcept {
        desc_.limiter = l.raw();
        return *this;
    }
    NodeBuilder &core_class(CoreClass c) noexcept {
        desc_.core_class = static_cast<jobsys_core_class>(c);
        return *this;
    }
    // Run after these nodes in every run (calls add up).
    template <class... Ns,
              class = std::enable_if_t<(std::is_same_v<std::decay_t<Ns>, Node> && ...)>>
    NodeBuilder &after(const Ns &...nodes) {
        (after_.push_back(nodes.raw()), ...);
        return *this;
    }
    NodeBuilder &after(std::initializer_list<Node> nodes) {
        for (const Node &n : nodes) after_.push_back(n.raw());
        return *this;
    }
    NodeBuilder &after(const std::vector<Node> &nodes) {
        for (const Node &n : nodes) after_.push_back(n.raw());
        return *this;
    }

    // Add the node: f() once per run.
    template <class F>
    Node call(F &&f) {
        using Fn = std::decay_t<F>;
        static_assert(std::is_invocable_v<const Fn &>, "a node is callable with no arguments");
        return add<Fn>(std::forward<F>(f), [&](void *data) {
            jobsys_node n{0, 0};
            jobsys_error e = jobsys_graph_add(sys_, b_, &desc_, after_.data(), after_.size(),
                                              &detail::run<const Fn>, data, &n);
            return std::make_pair(e, n);
        });
    }

    // Add a loop node: f(i) for every i in [begin, end), or f(b, e) per
    // piece if f takes two size_t, once per run; batch as
    // JobBuilder::parallel_for.
    template <class F>
    Node parallel_for(std::size_t begin, std::size_t end, std::size_t batch, F &&f) {
        using Fn = std::decay_t<F>;
        return add<Fn>(std::forward<F>(f), [&](void *data) {
            jobsys_node n{0, 0};
            jobsys_error e =
                jobsys_graph_add_for(sys_, b_, &desc_, after_.data(), after_.size(), begin, end,
                                     batch, &detail::run_range<Fn>, data, &n);
            return std::make_pair(e, n);
        });
    }

private:
    friend class GraphBuilder;
    NodeBuilder(jobsys_system *sys, jobsys_graph_builder *b) noexcept : sys_(sys), b_(b) {}

    template <class Fn, class F, class Add>
    Node add(F &&f, Add &&add_node) {
        if constexpr (std::is_trivially_copyable_v<Fn> && alignof(Fn) <= 8) {
            const Fn &copy = f; // jobsys copies its bytes, once
            desc_.data_size = sizeof(Fn);
            auto [e, n] = add_node(const_cast<void *>(static_cast<const void *>(&copy)));
            detail::check(e);
            return Node(n);
        } else {
            Fn *boxed = new Fn(std::forward<F>(f));
            desc_.release = &detail::release<Fn>;
            auto [e, n] = add_node(boxed);
            if (e != JOBSYS_OK) {
                delete boxed; // not added: release is not called
                detail::check(e);
            }
            return Node(n);
        }
    }

    jobsys_system *sys_;
    jobsys_graph_builder *b_;
    jobsys_job_desc desc_ = JOBSYS_JOB_DESC_INIT;
    std::vector<jobsys_node> after_;
};

// What the newest finished run of a graph measured (jobsys_graph_report).
struct NodeReport {
    Node node;
    std::chrono::nanoseconds duration; // first start to last end (loop pieces included)
    std::chrono::nanoseconds slack;    // how much longer without a longer frame; 0 on the path
    uint32_t critical;                 // place on the critical path, from 1; 0: not on it
};

struct GraphReport {
    std::chrono::nanoseconds frame; // the longest path with these durations
    std::vector<NodeReport> nodes;  // by node index

    // The critical path, first node first.
    std::vector<Node> critical_path() const {
        std::vector<Node> path;
        for (const NodeReport &n : nodes)
            if (n.critical != 0) {
                if (path.size() < n.critical) path.resize(n.critical);
                path[n.critical - 1] = n.node;
            }
        return path;
    }
};

// A built graph; move-only. Destroying it lets runs in flight finish.
class Graph {
public:
    Graph(Graph &&o) noexcept : sys_(o.sys_), g_(std::exchange(o.g_, nullptr)) {}
    Graph &operator=(Graph &&o) noexcept {
        if (this != &o) {
            jobsys_graph_destroy(g_);
            sys_ = o.sys_;
            g_ = std::exchange(o.g_, nullptr);
        }
        return *this;
    }
    Graph(const Graph &) = delete;
    Graph &operator=(const Graph &) = delete;
    ~Graph() { jobsys_graph_destroy(g_); }

    // Start a run; a handle for the whole run (complete it, or use it as
    // a dependency). Waits for the oldest run first when max_in_flight
    // runs are in flight.
    Handle run() {
        jobsys_handle h{0, 0};
        detail::check(jobsys_graph_run(sys_, g_, &h));
        return Handle(h);
    }
    // Wait (helping) for `node` of the newest run; throws its failure.
    void sync(Node node) { detail::check(jobsys_graph_sync(sys_, g_, node.raw())); }

    // The newest finished run's report (critical path, durations, slack);
    // std::nullopt before a run finished.
    std::optional<GraphReport> report() const {
        uint64_t frame = 0;
        std::size_t count = 0;
        jobsys_error e = jobsys_graph_report(sys_, g_, &frame, nullptr, 0, &count);
        if (e == JOBSYS_ERR_BAD_STATE) return std::nullopt;
        detail::check(e);
        std::vector<jobsys_node_report> raw(count);
        detail::check(jobsys_graph_report(sys_, g_, &frame, raw.data(), raw.size(), &count));
        GraphReport r{std::chrono::nanoseconds(frame), {}};
        r.nodes.reserve(raw.size());
        for (const jobsys_node_report &n : raw)
            r.nodes.push_back({Node(n.node), std::chrono::nanoseconds(n.duration_ns),
                               std::chrono::nanoseconds(n.slack_ns), n.critical});
        return r;
    }

    // The newest finished run's frame had `node` taken `factor` times as
    // long (0.8: 20 % faster). Throws before a run finished.
    std::chrono::nanoseconds what_if(Node node, double factor) const {
        uint64_t frame = 0;
        detail::check(jobsys_graph_what_if(sys_, g_, node.raw(), factor, &frame));
        return std::chrono::nanoseconds(frame);
    }

    const jobsys_graph *raw() const noexcept { return g_; }

private:
    friend class GraphBuilder;
    Graph(jobsys_system *sys, jobsys_graph *g) noexcept : sys_(sys), g_(g) {}
    jobsys_system *sys_;
    jobsys_graph *g_;
};

// Builds a graph whose runs run on `js`; build() makes the Graph.
class GraphBuilder {
public:
    explicit GraphBuilder(System &js) : sys_(js.raw()) {
        detail::check(jobsys_graph_builder_create(sys_, &b_));
    }
    GraphBuilder(const GraphBuilder &) = delete;
    GraphBuilder &operator=(const GraphBuilder &) = delete;
    ~GraphBuilder() { jobsys_graph_builder_destroy(b_); }

    NodeBuilder node() noexcept { return NodeBuilder(sys_, b_); }
    // `to` runs after `from` in every run.
    GraphBuilder &edge(Node from, Node to) {
        detail::check(jobsys_graph_edge(b_, from.raw(), to.raw()));
        return *this;
    }
    // The graph (the builder is empty afterwards). max_in_flight: the most
    // runs at once, 0 for the default (2). Throws Error on a cycle.
    Graph build(uint32_t max_in_flight = 0) {
        jobsys_graph *g = nullptr;
        detail::check(jobsys_graph_build(std::exchange(b_, nullptr), max_in_flight, &g));
        return Graph(sys_, g);
    }

private:
    jobsys_system *sys_;
    jobsys_graph_builder *b_ = nullptr;
};

} // namespace jobsys

// Handles in unordered containers.
namespace std {
template <>
struct hash<jobsys::Handle> {
    size_t operator()(jobsys::Handle h) const noexcept {
        jobsys_handle r = h.raw();
        return hash<uint64_t>()(r.id ^ (r.gen * 0x9E3779B97F4A7C15ull));
    }
};
} // namespace std

#endif // JOBSYS_HPP
