// jobsys.hpp - header-only C++17 wrapper over the jobsys C API (jobsys.h).
//
//   jobsys::System js;                                  // default config
//   auto physics = js.schedule([&] { step(world); }, {"physics", JOBSYS_PRIORITY_HIGH});
//   auto anim    = js.schedule_after({physics}, [&] { animate(world); });
//   auto parts   = js.parallel_for(0, n, [&](uint32_t i) { update(p[i]); });
//   js.complete(js.combine({anim, parts}));             // throws jobsys::Error if a job failed
//
//   uint32_t me = js.register_thread();                 // on a render thread
//   auto draw = js.schedule_pinned(jobsys::Pin::thread(me), [&] { submit(cmds); });
//   js.run_pinned();                                    // on that thread, once per frame
//   js.cancel(draw);                                    // anywhere: complete(draw) throws
//                                                       // jobsys::Cancelled
//
// - Callables are moved to the heap and freed by the job's release callback:
//   after the job ran, or without running if a dependency failed or it was
//   cancelled. Jobs capturing by reference must be completed before what
//   they reference dies.
// - An exception escaping a job is caught in the job (it must never unwind
//   into jobsys) and fails it, with e.what() as the message: complete() on
//   it, or on anything depending on it, throws jobsys::Error.
// - A parallel_for callable is called from several threads at once, through
//   a const reference: f(i) per index, or f(begin, end) per piece if it
//   takes two uint32_t.
// - Errors from the C API are thrown as jobsys::Error (code + message);
//   JOBSYS_ERR_CANCELLED as jobsys::Cancelled, a jobsys::Error. A job whose
//   outcome jobsys no longer remembers throws jobsys::Error with code()
//   JOBSYS_ERR_OUTCOME_UNKNOWN, never returns as if it succeeded.
// - A cancelled job that had not started never runs; its callable is
//   still freed exactly once (by jobsys_cancel, on the cancelling thread).
// - Thread-safety is the C API's: every member function may be called from
//   any thread, including from jobs, except the destructor.
// - Profiler hooks: derive from jobsys::ProfilerHooks, override what your
//   profiler shows, pass it to System(config, hooks) (see ProfilerHooks).
#ifndef JOBSYS_HPP
#define JOBSYS_HPP

#include "jobsys.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <initializer_list>
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

inline void check(jobsys_error e) {
    if (e == JOBSYS_OK) return;
    std::string message = std::string(jobsys_error_name(e)) + ": " + jobsys_last_error_message();
    if (e == JOBSYS_ERR_CANCELLED) throw Cancelled(message);
    throw Error(e, message);
}

// Trampolines: C callbacks that call the heap-allocated callable.
template <class F>
void run(void *p) noexcept {
    try {
        (*static_cast<F *>(p))();
    } catch (const std::exception &e) {
        jobsys_fail(e.what());
    } catch (...) {
        jobsys_fail("a C++ exception that is not a std::exception");
    }
}

template <class F>
void run_range(void *p, uint32_t begin, uint32_t end) noexcept {
    try {
        const F &f = *static_cast<const F *>(p);
        if constexpr (std::is_invocable_v<const F &, uint32_t, uint32_t>) {
            f(begin, end);
        } else {
            for (uint32_t i = begin; i < end; ++i) f(i);
        }
    } catch (const std::exception &e) {
        jobsys_fail(e.what());
    } catch (...) {
        jobsys_fail("a C++ exception that is not a std::exception");
    }
}

template <class F>
void release(void *p) noexcept {
    delete static_cast<F *>(p);
}

} // namespace detail

// Names a scheduled job; a plain value (copy, compare, store in containers).
// A default-constructed Handle is invalid.
class Handle {
public:
    Handle() noexcept : h_{0, 0} {}
    explicit Handle(jobsys_handle h) noexcept : h_(h) {}
    jobsys_handle raw() const noexcept { return h_; }
    friend bool operator==(Handle a, Handle b) noexcept {
        return a.h_.id == b.h_.id && a.h_.gen == b.h_.gen;
    }
    friend bool operator!=(Handle a, Handle b) noexcept { return !(a == b); }

private:
    jobsys_handle h_;
};

// Dependencies: {a, b}, a std::vector<Handle>, or a pointer and a count.
// Holds a copy in the form the C API takes (no allocation up to 8
// handles); used as a function argument only.
class Deps {
public:
    Deps() noexcept : data_(small_), n_(0) {}
    Deps(std::initializer_list<Handle> l) : Deps(l.begin(), l.size()) {}
    Deps(const std::vector<Handle> &v) : Deps(v.data(), v.size()) {}
    Deps(const Handle *p, std::size_t n) : data_(small_), n_(n) {
        jobsys_handle *out = small_;
        if (n > 8) {
            big_.resize(n);
            out = big_.data();
        }
        for (std::size_t i = 0; i < n; ++i) out[i] = p[i].raw();
        data_ = out;
    }
    Deps(const Deps &) = delete;
    Deps &operator=(const Deps &) = delete;
    const jobsys_handle *data() const noexcept { return data_; }
    std::size_t size() const noexcept { return n_; }

private:
    jobsys_handle small_[8];
    std::vector<jobsys_handle> big_;
    const jobsys_handle *data_;
    std::size_t n_;
};

// The thread a pinned job runs on (see jobsys_pin): Pin::main(),
// Pin::worker(w) (the worker with thread index w, 1..workers()), Pin::thread(i) (whichever thread holds index i,
// e.g. from System::register_thread()), or the pin
// System::register_thread_pin() returns (that thread only).
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

// Inside a job: whether it was cancelled after it started (poll it in a
// long job and return early). False outside a job.
inline bool is_cancelled() noexcept { return jobsys_is_cancelled(); }

// Name (for the tracer; copied) and priority of a job.
struct JobDesc {
    const char *name = nullptr;
    jobsys_priority priority = JOBSYS_PRIORITY_NORMAL;
};

// The defaults of jobsys_config_init, to change before constructing a System
// (e.g. `c.workers = 4; c.follow_cpus = true;`).
inline jobsys_config default_config() {
    jobsys_config c;
    detail::check(jobsys_config_init(&c));
    return c;
}

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
#undef JOBSYS_HOOK_OVERRIDDEN
    return cb;
}

} // namespace detail

class System;

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

    // Run f() on some thread.
    template <class F>
    Handle schedule(F &&f, const JobDesc &desc = {}) {
        return schedule_after({}, std::forward<F>(f), desc);
    }

    // Run f() after every job in deps finished (not at all if one failed).
    template <class F>
    Handle schedule_after(const Deps &deps, F &&f, const JobDesc &desc = {}) {
        return submit<F>(jobsys_schedule_after, deps, std::forward<F>(f), desc);
    }

    // Run f() on the thread `pin` names only (see jobsys_schedule_pinned).
    template <class F>
    Handle schedule_pinned(Pin pin, F &&f, const JobDesc &desc = {}) {
        return schedule_pinned_after(pin, {}, std::forward<F>(f), desc);
    }

    template <class F>
    Handle schedule_pinned_after(Pin pin, const Deps &deps, F &&f, const JobDesc &desc = {}) {
        jobsys_pin p = pin.raw();
        auto call = [p](jobsys_system *s, const jobsys_job_desc *d, const jobsys_handle *deps_,
                        size_t n, jobsys_job_fn fn, void *data, jobsys_handle *out) {
            return jobsys_schedule_pinned_after(s, p, d, deps_, n, fn, data, out);
        };
        return submit<F>(call, deps, std::forward<F>(f), desc);
    }

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

    // Cancel h; true if it was stopped before it started (see jobsys_cancel).
    bool cancel(Handle h) {
        bool stopped = false;
        detail::check(jobsys_cancel(sys_, h.raw(), &stopped));
        return stopped;
    }

    // Let at most n workers take work (throws Error for n > workers()).
    void set_active_workers(uint32_t n) { detail::check(jobsys_set_active_workers(sys_, n)); }

    uint32_t active_workers() const {
        uint32_t n = 0;
        detail::check(jobsys_active_workers(sys_, &n));
        return n;
    }

    // schedule() that wakes no worker until flush().
    template <class F>
    Handle schedule_batched(F &&f) {
        return schedule_batched_after({}, std::forward<F>(f));
    }

    template <class F>
    Handle schedule_batched_after(const Deps &deps, F &&f) {
        return submit<F>(jobsys_schedule_batched_after, deps, std::forward<F>(f), JobDesc{});
    }

    // f(i) for every i in [begin, end) (or f(b, e) per piece), on all
    // threads; batch = indices per piece, 0 = auto.
    template <class F>
    Handle parallel_for(uint32_t begin, uint32_t end, F &&f, uint32_t batch = 0,
                        const JobDesc &desc = {}) {
        return parallel_for_after({}, begin, end, std::forward<F>(f), batch, desc);
    }

    template <class F>
    Handle parallel_for_after(const Deps &deps, uint32_t begin, uint32_t end, F &&f, uint32_t batch = 0,
                              const JobDesc &desc = {}) {
        using Fn = std::decay_t<F>;
        static_assert(std::is_invocable_v<const Fn &, uint32_t, uint32_t> ||
                          std::is_invocable_v<const Fn &, uint32_t>,
                      "parallel_for takes f(uint32_t i) or f(uint32_t begin, uint32_t end), callable as const");
        Fn *p = new Fn(std::forward<F>(f));
        jobsys_job_desc d{desc.name, desc.priority, &detail::release<Fn>};
        jobsys_handle h;
        jobsys_error e = jobsys_parallel_for_after(sys_, &d, deps.data(), deps.size(), begin, end,
                                                   batch, &detail::run_range<Fn>, p, &h);
        if (e != JOBSYS_OK) {
            delete p; // not scheduled: release is not called
            detail::check(e);
        }
        return Handle(h);
    }

    // One handle for all of `handles`.
    Handle combine(const Deps &handles) {
        jobsys_handle h;
        detail::check(jobsys_combine(sys_, handles.data(), handles.size(), &h));
        return Handle(h);
    }

    // Wait for h, helping; throws Error if it (or a dependency) failed.
    void complete(Handle h) { detail::check(jobsys_complete(sys_, h.raw())); }

    // complete() that returns the code instead of throwing.
    jobsys_error try_complete(Handle h) noexcept { return jobsys_complete(sys_, h.raw()); }

    bool is_complete(Handle h) const {
        bool done = false;
        detail::check(jobsys_is_complete(sys_, h.raw(), &done));
        return done;
    }

    // Publish this thread's batched jobs; returns how many workers woke.
    uint32_t flush() {
        uint32_t woken = 0;
        detail::check(jobsys_flush(sys_, &woken));
        return woken;
    }

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

    using ScheduleFn = jobsys_error (*)(jobsys_system *, const jobsys_job_desc *,
                                        const jobsys_handle *, size_t, jobsys_job_fn, void *,
                                        jobsys_handle *);

    // `fn`: a ScheduleFn, or a callable of that shape.
    template <class F, class Schedule = ScheduleFn>
    Handle submit(Schedule fn, const Deps &deps, F &&f, const JobDesc &desc) {
        using Fn = std::decay_t<F>;
        static_assert(std::is_invocable_v<Fn &>, "a job is callable with no arguments");
        Fn *p = new Fn(std::forward<F>(f));
        jobsys_job_desc d{desc.name, desc.priority, &detail::release<Fn>};
        jobsys_handle h;
        jobsys_error e = fn(sys_, &d, deps.data(), deps.size(), &detail::run<Fn>, p, &h);
        if (e != JOBSYS_OK) {
            delete p; // not scheduled: release is not called
            detail::check(e);
        }
        return Handle(h);
    }

    jobsys_system *sys_ = nullptr;
};

} // namespace jobsys

#endif // JOBSYS_HPP
