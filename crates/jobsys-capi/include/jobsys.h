/*
 * jobsys.h - the C API of jobsys, a work-stealing job system for
 * frame-based programs (game engines). C11 and C++ compatible.
 *
 * Link: libjobsys_capi.a -lpthread -ldl -lm (or libjobsys_capi.so), or with
 * CMake: add_subdirectory(crates/jobsys-capi) + target jobsys::jobsys;
 * build with `cargo build -p jobsys-capi --release`. See docs/c-api.md.
 *
 * The model: a job is a function pointer plus a `void* data` (or a small
 * copy of your data kept in the job itself), described by one
 * jobsys_job_desc: name, priority, dependencies, pin, flags. Two calls
 * schedule: jobsys_schedule (one call of the function) and
 * jobsys_parallel_for (pieces of a range on every thread). Scheduling
 * returns a handle; a job may depend on other handles and runs after they
 * all finished. `jobsys_complete` waits for a handle and, while it waits,
 * runs the work that handle needs on the calling thread. `jobsys_join`
 * forks two calls and joins them, with no handle at all.
 *
 *   static void hello(void *data) { printf("hello from %s\n", (const char *)data); }
 *
 *   jobsys_system *sys;
 *   jobsys_create(NULL, &sys);
 *   jobsys_handle h;
 *   jobsys_schedule(sys, NULL, hello, "a job", &h);
 *   jobsys_complete(sys, h);
 *   jobsys_destroy(sys);
 *
 * Conventions, for every function below unless its comment says otherwise:
 * - Returns a jobsys_error: JOBSYS_OK (0) or a failure code. On failure,
 *   jobsys_last_error_message() says what went wrong, no out-parameter is
 *   written, nothing was scheduled, and the system stays usable.
 * - Thread-safe: any thread may call it on the same system at the same
 *   time, including jobs running on the system's workers.
 * - JOBSYS_ERR_NULL_ARGUMENT if the system (or another required pointer)
 *   is NULL. A pointer to a destroyed system cannot be detected: using one
 *   is undefined behaviour, as with free().
 * - Handles are checked: a forged or corrupted handle gives
 *   JOBSYS_ERR_INVALID_HANDLE, one from another (or a destroyed) system
 *   JOBSYS_ERR_FOREIGN_HANDLE. A zeroed handle names no job (see
 *   jobsys_handle).
 * - No Rust panic ever unwinds into your code: an internal failure is
 *   returned as JOBSYS_ERR_INTERNAL (a jobsys bug; please report it).
 *
 * Jobs (the callbacks you pass):
 * - run on any thread (a worker, or a thread waiting in jobsys_complete),
 *   so `data` must be usable from any thread; a parallel_for callback runs
 *   on several threads at once, each call with its own piece of the range.
 *   A pinned job (JOBSYS_JOB_PINNED) runs on the one thread its pin names.
 * - end only by returning. Never longjmp out of a job and never let a C++
 *   exception escape it (the C++ wrapper catches them for you): that
 *   would unwind through jobsys' frames, which is undefined behaviour.
 * - may call any function here, including scheduling more jobs and
 *   waiting for them (jobsys_complete), except jobsys_destroy on their own
 *   system.
 * - report failure with jobsys_fail(message) and then return: the job is
 *   failed, jobs that depend on it do not run and fail too, and
 *   jobsys_complete on any of them returns JOBSYS_ERR_JOB_FAILED /
 *   JOBSYS_ERR_DEPENDENCY_FAILED with the message.
 * - may be cancelled (jobsys_cancel): not started yet, it never runs; already
 *   running, jobsys_is_cancelled() reads true in it (poll it to stop early).
 *   Either way it and its dependents fail with JOBSYS_ERR_CANCELLED.
 * - If jobsys itself panics in the Rust code around a job (a jobsys bug),
 *   the process aborts with a message on stderr rather than unwind into C.
 */
#ifndef JOBSYS_H
#define JOBSYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Types -------------------------------------------------------------- */

/* What every function returns. */
typedef enum jobsys_error {
    JOBSYS_OK = 0,
    JOBSYS_ERR_NULL_ARGUMENT = 1,      /* a required pointer was NULL */
    JOBSYS_ERR_INVALID_ARGUMENT = 2,   /* a value out of range (begin > end, bad priority, ...) */
    JOBSYS_ERR_CONFIG = 3,             /* jobsys_create: the configuration was rejected */
    JOBSYS_ERR_INVALID_HANDLE = 4,     /* a handle no system gave out */
    JOBSYS_ERR_FOREIGN_HANDLE = 5,     /* a handle of another (or a destroyed) system */
    JOBSYS_ERR_JOB_FAILED = 6,         /* the job called jobsys_fail */
    JOBSYS_ERR_DEPENDENCY_FAILED = 7,  /* a job it depends on failed, so it did not run */
    JOBSYS_ERR_WAIT_ON_SELF = 8,       /* a job waited on itself or on a job that needs it */
    JOBSYS_ERR_BAD_STATE = 9,          /* not allowed here/now (see the function) */
    JOBSYS_ERR_INTERNAL = 10,          /* a bug in jobsys; the message says where */
    JOBSYS_ERR_IO = 11,                /* a file could not be written */
    JOBSYS_ERR_CANCELLED = 12,         /* the job, or one it depends on, was cancelled */
    JOBSYS_ERR_OUTCOME_UNKNOWN = 13,   /* the job finished, but whether it failed is no longer
                                          known (see jobsys_handle); treat it as a failure */
    JOBSYS_ERR_TIMEOUT = 14            /* jobsys_complete_timeout: the time ran out first; the
                                          job goes on (not cancelled) */
} jobsys_error;

/* How idle workers wait for work (see crates/jobsys/src/sleep/README.md, "Idle policies"). */
typedef enum jobsys_idle_policy {
    JOBSYS_IDLE_DEFAULT = 0,          /* $JOBSYS_IDLE_POLICY if set, else SPIN_THEN_SLEEP 30 us */
    JOBSYS_IDLE_SPIN_THEN_SLEEP = 1,  /* spin for spin_us, then sleep */
    JOBSYS_IDLE_WHIPPING_BOY = 2,     /* one worker always awake; scheduling never wakes */
    JOBSYS_IDLE_ALWAYS_SPIN = 3,      /* never sleep (burns every worker's core) */
    JOBSYS_IDLE_ADAPTIVE = 4          /* spin only when work usually comes soon */
} jobsys_idle_policy;

/* Job priority. Runnable HIGH jobs are taken before NORMAL before LOW. */
typedef enum jobsys_priority {
    JOBSYS_PRIORITY_NORMAL = 0,       /* 0, so a zeroed jobsys_job_desc is the default */
    JOBSYS_PRIORITY_HIGH = 1,
    JOBSYS_PRIORITY_LOW = 2
} jobsys_priority;

/* The class of core a job runs on (desc.core_class), on hybrid CPUs (big.LITTLE, Intel P/E):
 * PERFORMANCE queues the job for the performance-core workers, EFFICIENCY for the
 * efficiency-core workers; whichever worker of the class is free runs it (one waiting in
 * jobsys_complete too). It takes effect only when the workers span both classes:
 * a hybrid machine and config.pin_workers (each worker on one CPU, the fastest first); otherwise,
 * and with ANY, the job runs anywhere. It replaces JOBSYS_JOB_PINNED's pin when it applies. */
typedef enum jobsys_core_class {
    JOBSYS_CORE_ANY = 0,              /* 0, so a zeroed jobsys_job_desc is the default */
    JOBSYS_CORE_PERFORMANCE = 1,
    JOBSYS_CORE_EFFICIENCY = 2
} jobsys_core_class;

/* Profiler callbacks (like enkiTS's): jobsys calls them as its threads start, run jobs, wait,
 * sleep, wake each other and mark frames, so the profiler an engine uses (Tracy, Superluminal,
 * Optick, its own) shows the job system. Set jobsys_config.profiler to a table; every callback
 * may be NULL (not called; it costs one branch). Usage:
 *
 *   static void on_begin(void *ud, uint32_t thread, uint64_t job, const char *name, size_t len)
 *   { my_zone_begin(ud, thread, name, len); }
 *   ...
 *   jobsys_profiler_callbacks cb = {.size = sizeof cb};   (the other fields NULL)
 *   cb.user_data = &my_profiler;
 *   cb.job_begin = on_begin;
 *   cb.job_end = on_end;
 *   jobsys_config config;
 *   jobsys_config_init(&config);
 *   config.profiler = &cb;                         (copied by jobsys_create)
 *
 * - size: set it to sizeof(jobsys_profiler_callbacks). A later jobsys may add callbacks at the
 *   end: a table from an older header then reads as NULL for them, and a table from a newer
 *   header loses only the callbacks this library does not know. 0 (forgotten) or less than
 *   this version's size: jobsys_create returns JOBSYS_ERR_CONFIG.
 * - jobsys_create copies the table (it may live on the stack); user_data and the functions
 *   must stay valid until jobsys_destroy returns. A table whose callbacks are all NULL is the
 *   same as none (profiler = NULL): nothing is installed.
 * - Each call comes from the thread the event happened on, inside the scheduler, from any
 *   thread and several at once: user_data must be thread-safe. On one thread, begins and ends
 *   nest like brackets (a job's end before the end of the wait it ran in, a sleep inside a
 *   wait ends before the wait).
 * - `thread` is the thread's jobsys_thread_index (one numbering everywhere, docs/engine.md
 *   "Thread index"): 0 the thread that called jobsys_create, 1..workers the workers
 *   ({JOBSYS_PIN_WORKER, w}, thread name "jobsys-worker-<w>"), then registered threads; a
 *   thread with no index (it only scheduled or waited) is 65536 + k, k >= 0.
 *   thread_start names them. A wake's `wakee` and a steal's `victim` use the same numbers.
 * - `job`: an id unique among the jobs alive at once (it may be reused after its job
 *   finished); the ready, begins, ends and waits of one job carry the same id. It is not a
 *   jobsys_handle's field.
 * - Names are (pointer, length), NOT NUL-terminated: print them with "%.*s", (int)len, name.
 *   A thread name is valid only during the call (copy it). A job name is valid for the
 *   process's life (jobsys keeps every job name: jobsys_job_desc names are copied once per
 *   distinct name, so one name has one pointer), so a profiler may keep the pointer.
 * - A callback MUST NOT call any jobsys function (some run under the scheduler's locks: it
 *   could deadlock or recurse), must not block or take long (every job's begin and end wait
 *   for it), and must end by returning: never longjmp out of one, never let a C++ exception
 *   escape it (undefined behaviour; jobsys.hpp's ProfilerHooks catches them and aborts).
 * - Called only when jobsys was built with its `trace` feature (the C library always is). */
typedef struct jobsys_profiler_callbacks {
    uint32_t size;                    /* sizeof(jobsys_profiler_callbacks) */
    void *user_data;                  /* passed first to every callback */
    /* Thread `thread` starts working for the system: a worker first thing (name
     * "jobsys-worker-<thread>"), another thread when it first uses it (its thread name, or "" with
     * len 0). */
    void (*thread_start)(void *user_data, uint32_t thread, const char *name, size_t name_len);
    /* Thread `thread` is done: a worker last thing before it exits (every worker's stop has
     * been called when jobsys_destroy returns); another thread when it exits while the system
     * lives (possibly in a thread-local destructor; never if the system is destroyed first). */
    void (*thread_stop)(void *user_data, uint32_t thread);
    /* `job` became runnable: scheduled with no unfinished dependency, or released by its last
     * dependency finishing (on the thread that finished it). */
    void (*job_ready)(void *user_data, uint32_t thread, uint64_t job);
    /* This thread starts running `job`: its jobsys_job_desc name (unnamed jobs: jobsys's
     * internal name for a C job's closure). A parallel_for is one job: each thread that runs
     * pieces of it has its own begin and end. */
    void (*job_begin)(void *user_data, uint32_t thread, uint64_t job, const char *name,
                      size_t name_len);
    /* This thread is done with `job` (same name as its begin). */
    void (*job_end)(void *user_data, uint32_t thread, uint64_t job, const char *name,
                    size_t name_len);
    /* This thread took work from thread `victim`'s queue. */
    void (*steal)(void *user_data, uint32_t thread, uint32_t victim);
    /* This thread starts waiting for `job` (jobsys_complete; jobs it runs meanwhile nest). */
    void (*wait_begin)(void *user_data, uint32_t thread, uint64_t job);
    /* This thread's wait for `job` ended. */
    void (*wait_end)(void *user_data, uint32_t thread, uint64_t job);
    /* This thread blocks (an idle worker, or a waiter with nothing to help with). */
    void (*sleep_begin)(void *user_data, uint32_t thread);
    /* This thread woke up. */
    void (*sleep_end)(void *user_data, uint32_t thread);
    /* This thread wakes thread `wakee` (before the wakee's sleep_end; under a scheduler lock). */
    void (*wake)(void *user_data, uint32_t thread, uint32_t wakee);
    /* jobsys_frame_begin: frame `frame` begins (numbered per system from 0). */
    void (*frame_begin)(void *user_data, uint32_t thread, uint64_t frame);
    /* jobsys_frame_end: frame `frame` ends. */
    void (*frame_end)(void *user_data, uint32_t thread, uint64_t frame);
    /* jobsys_set_active_workers (or follow_cpus) changed the active workers to `count`. */
    void (*active_workers)(void *user_data, uint32_t thread, uint32_t count);
    /* This thread was runnable but not running (waiting for a CPU: preempted by the OS, or not
     * yet picked after a wake) for `wait_ns` in all since its previous sample. Called at one of
     * the thread's state boundaries (a job's begin or end, a search, spin or sleep begin, a
     * sleep end, a wait's begin or end), at most once per 50 us per thread, only with a nonzero
     * wait; the wait lies somewhere between the previous sample and this call. Never called
     * where the run-queue wait cannot be read (not Linux, or no per-thread schedstat). */
    void (*preempted)(void *user_data, uint32_t thread, uint64_t wait_ns);
} jobsys_profiler_callbacks;

/* Settings for jobsys_create. Fill with jobsys_config_init, then change fields.
 * A config that jobsys_config_init did not fill (zeroed with memset or
 * `= {0}`, or uninitialised) is rejected: jobsys_create returns
 * JOBSYS_ERR_CONFIG, "config was not initialised with jobsys_config_init",
 * rather than read zero as 0 workers and no priority inheritance.
 * (Pass NULL to jobsys_create for the defaults.)
 * A test mode has no field: JOBSYS_SHUFFLE=<seed> (or `random`) in the
 * environment makes every choice among ready jobs come from the seed, so a
 * missing dependency shows up; at 0 workers a seed repeats its order. */
typedef struct jobsys_config {
    int32_t workers;                  /* worker threads, at most 512; -1 (default): $JOBSYS_WORKERS,
                                         else the CPUs this process may use - 1 */
    jobsys_idle_policy idle_policy;   /* default JOBSYS_IDLE_DEFAULT */
    uint32_t spin_us;                 /* SPIN_THEN_SLEEP: spin time in microseconds (default 30) */
    uint32_t adaptive_max_spin_us;    /* ADAPTIVE: longest spin (default 50) */
    float adaptive_cpu_cap;           /* ADAPTIVE: share of a core to spin, 0..1 (default 0.1) */
    bool priority_inheritance;        /* workers first take jobs a waiter needs (default true) */
    bool exclude_efficiency_cores;    /* keep workers off E-cores / LITTLE cores (default false) */
    bool pin_workers;                 /* pin each worker to its own CPU (default false) */
    bool trace;                       /* start a trace capture at once (default false) */
    bool follow_cpus;                 /* follow the CPUs this process may use (affinity, cgroup
                                         quota, CPUs online; re-read at most every 5 ms by threads
                                         awake anyway): active workers = min(the
                                         jobsys_set_active_workers limit, usable CPUs - 1)
                                         (default false) */
    const jobsys_profiler_callbacks *profiler; /* callbacks to call (see above), copied by
                                         jobsys_create; default NULL: none */
    void (*on_unobserved_panic)(void *user, const char *message, size_t message_len);
                                      /* a job failure (a panic, jobsys_fail) that no
                                         jobsys_complete read, once the system can no longer
                                         report it (it forgot the failure, or jobsys_destroy):
                                         called with the error text, which names the job
                                         (not NUL-terminated). Runs on whichever jobsys thread
                                         lets go of the failure last: must not wait on jobs.
                                         Default NULL: the text is printed to stderr */
    void *on_unobserved_panic_user;   /* passed first to on_unobserved_panic */
    uint32_t initialized;             /* set by jobsys_config_init; do not change */
} jobsys_config;

/* A job system. Opaque; created by jobsys_create, freed by jobsys_destroy. */
typedef struct jobsys_system jobsys_system;

/* Names a scheduled job. A plain 128-bit value: copy, store and compare it
 * freely (equal fields = same job). A handle stays valid for the life of
 * its system, on any thread: once the job finished it reads as complete.
 * A zeroed handle (JOBSYS_HANDLE_NONE) names no job: as a dependency it is
 * skipped, jobsys_complete returns JOBSYS_OK at once and jobsys_is_complete
 * reads true, so graph code needs no "has a predecessor?" branch.
 * A failed or cancelled job keeps reporting its failure while the system
 * remembers it (its newest failures, jobsys_config's default 4096); after
 * that jobsys_complete returns JOBSYS_ERR_OUTCOME_UNKNOWN, never JOBSYS_OK,
 * and a job scheduled after the handle never runs and reports it too.
 * Layout (treat it as opaque): `id` = the address of the job's slot in the
 * system's storage, `gen` = the system's id (bits 63..32) and the slot's
 * generation (31..0). There is no table behind it: the system checks a
 * handle against its own pages before it reads the slot, so a forged or
 * corrupted value gives JOBSYS_ERR_INVALID_HANDLE and one of another (or a
 * destroyed) system JOBSYS_ERR_FOREIGN_HANDLE, never undefined behaviour.
 * See docs/c-api.md, "Handles". */
typedef struct jobsys_handle {
    uint64_t id;
    uint64_t gen;
} jobsys_handle;

/* The handle that names no job ({0, 0}); `jobsys_handle h = {0};` is the same. */
#ifdef __cplusplus
#define JOBSYS_HANDLE_NONE (jobsys_handle{0, 0})
#else
#define JOBSYS_HANDLE_NONE ((jobsys_handle){0, 0})
#endif

/* Which thread a pinned job runs on (jobsys_job_desc.pin). Thread indices: 0 is the thread
 * that called jobsys_create, 1..workers the workers (thread "jobsys-worker-<w>" is w), then the
 * threads that called jobsys_register_thread (see jobsys_thread_index; docs/engine.md, "Thread
 * index": profiler callbacks, traces and jobsys_get_worker_stats use the same numbers). */
typedef enum jobsys_pin_kind {
    JOBSYS_PIN_MAIN = 0,              /* the thread that called jobsys_create; index 0 */
    JOBSYS_PIN_WORKER = 1,            /* the worker whose thread index is `index`, 1..workers */
    JOBSYS_PIN_THREAD = 2,            /* the thread whose jobsys_thread_index is `index` now */
    JOBSYS_PIN_REGISTERED = 3         /* one registration: `index` from jobsys_register_thread_pin */
} jobsys_pin_kind;

/* A pin: e.g. {JOBSYS_PIN_WORKER, 1}, {JOBSYS_PIN_THREAD, index from jobsys_register_thread},
 * or the pin jobsys_register_thread_pin gives. A zeroed pin is the main thread. An index is
 * reused once its thread exits, so {JOBSYS_PIN_THREAD, i} names whichever thread holds i when
 * the job is scheduled; the pin from jobsys_register_thread_pin names that thread only (once it
 * has exited, jobs pinned with it are cancelled, never run by i's next holder). */
typedef struct jobsys_pin {
    jobsys_pin_kind kind;
    uint32_t index;
} jobsys_pin;

/* A job: called once with its data (jobsys_schedule's `data`, or the address of the
 * job's own copy when the desc gives data_size). */
typedef void (*jobsys_job_fn)(void *data);

/* A parallel_for piece: called for the indices [begin, end). */
typedef void (*jobsys_range_fn)(void *data, size_t begin, size_t end);

/* Called once with the job's data when the job will never call its function
 * again: after its last call, or without any call if it never ran (a
 * dependency failed, or it was cancelled before it started: then on the
 * thread that called jobsys_cancel, before that call returns). The place to
 * free `data`, or to destroy what the job's own copy holds (data_size > 0:
 * jobsys frees the copy itself after this returns). Not called when
 * scheduling failed.
 * It runs as the end of its job: jobsys_destroy of the job's system returns
 * JOBSYS_ERR_BAD_STATE there, waiting on the job's own handle returns
 * JOBSYS_ERR_WAIT_ON_SELF, and jobsys_fail returns JOBSYS_ERR_BAD_STATE
 * (the job is done; fail it from its function). */
typedef void (*jobsys_release_fn)(void *data);

/* jobsys_job_desc.flags, or-ed together. */
typedef enum jobsys_job_flags {
    JOBSYS_JOB_BATCHED = 1,           /* wake no worker: the job waits in this thread's queue
                                         (awake workers may take it) until jobsys_flush or a
                                         jobsys_complete on this thread */
    JOBSYS_JOB_PINNED = 2,            /* run only on the thread desc.pin names (see jobsys_pin);
                                         a pinned parallel_for runs its range there, in order */
    JOBSYS_JOB_BLOCKING = 4,          /* fn may block (file or network I/O): it runs on a blocking
                                         thread, shared by the process's systems, started on
                                         demand, so no worker waits meanwhile; the handle
                                         finishes when fn returns. jobsys_schedule only, not with
                                         JOBSYS_JOB_PINNED (INVALID_ARGUMENT) */
    JOBSYS_JOB_KEEP_PRIORITY = 8      /* graph nodes only (a job gets INVALID_ARGUMENT): the
                                         measured critical path does not raise the node to
                                         JOBSYS_PRIORITY_HIGH; it keeps desc.priority every run */
} jobsys_job_flags;

/* A limiter: at most `max` of its jobs (desc.limiter) run at once. Each running one holds a seat,
 * an index in [0, max) that no other running job of the limiter holds (jobsys_limiter_slot), to
 * index a fixed array of scratch buffers, say. A job asks for its seat once its dependencies have
 * finished and waits for one without holding a thread; the seat is given back when the job ends
 * (returned, failed, skipped or cancelled). Waiting jobs get seats HIGH first, then in order. A
 * parallel_for holds one seat for its whole range. */
typedef struct jobsys_limiter jobsys_limiter;

/* Bytes of data (desc.data_size) a job copies into itself: jobsys_schedule then allocates
 * nothing. A larger copy is allocated once. The copy is 8-byte aligned. A parallel_for
 * allocates one block per loop whatever you pass (its range state leaves no room in the job);
 * a copy up to this size goes into that block. */
#define JOBSYS_INLINE_DATA 40

/* Everything about a job but its function: one descriptor for jobsys_schedule and
 * jobsys_parallel_for (NULL: unnamed, NORMAL, no dependency, no pin, no release). Start from
 * JOBSYS_JOB_DESC_INIT and set what you need:
 *
 *   jobsys_handle deps[2] = {a, b};
 *   jobsys_job_desc d = JOBSYS_JOB_DESC_INIT;
 *   d.name = "physics";
 *   d.deps = deps;
 *   d.ndeps = 2;
 *   jobsys_schedule(sys, &d, step_physics, &world, &h);
 *
 * Read during the call only (it and the deps array may live on the stack). */
typedef struct jobsys_job_desc {
    uint32_t size;                    /* sizeof(jobsys_job_desc). A desc from a newer header is
                                         accepted if every field this library does not know is
                                         zero; one smaller than this version's, or 0, is
                                         INVALID_ARGUMENT */
    uint32_t flags;                   /* jobsys_job_flags; 0: none */
    const char *name;                 /* for the tracer, profiler and error messages; NULL:
                                         unnamed. Copied: each distinct name is kept once, for
                                         the process's life */
    jobsys_priority priority;         /* default JOBSYS_PRIORITY_NORMAL */
    jobsys_pin pin;                   /* the thread, with JOBSYS_JOB_PINNED (else ignored) */
    const jobsys_handle *deps;        /* run after every job in deps[0..ndeps) finished; if one
                                         failed, the function is not called and this job fails
                                         too. Zeroed handles are skipped. NULL if ndeps is 0 */
    size_t ndeps;
    size_t data_size;                 /* 0: `data` is passed to the job as it is (yours to keep
                                         alive). > 0: `data` points to data_size bytes that
                                         jobsys copies into the job before the call returns
                                         (a plain byte copy, for trivially copyable data); the
                                         function and release get the copy's address, valid
                                         during that call */
    jobsys_release_fn release;        /* NULL: none */
    const jobsys_limiter *limiter;    /* NULL: none. Run only with a seat of this limiter; read
                                         during the call (destroying the limiter afterwards is
                                         fine, its jobs keep what they need) */
    jobsys_core_class core_class;     /* default JOBSYS_CORE_ANY (see jobsys_core_class) */
} jobsys_job_desc;

/* A jobsys_job_desc with the defaults and its size set. */
#define JOBSYS_JOB_DESC_INIT \
    { sizeof(jobsys_job_desc), 0, NULL, JOBSYS_PRIORITY_NORMAL, {JOBSYS_PIN_MAIN, 0}, NULL, 0, 0, NULL, NULL, \
      JOBSYS_CORE_ANY }

/* Counters (jobsys_get_stats, jobsys_take_stats, jobsys_get_worker_stats). */
typedef struct jobsys_stats {
    uint64_t workers;                 /* worker threads (1 for one worker's counters) */
    uint64_t jobs_scheduled;          /* each schedule, parallel_for and combine counts one */
    uint64_t jobs_finished;           /* ran, or failed because a dependency failed */
    uint64_t wakes;                   /* sleeping workers woken */
    uint64_t futile_wakes;            /* woken workers that found nothing to do */
    uint64_t sleeps;                  /* times a worker went to sleep */
    uint64_t spin_time_ns;            /* time workers spent spinning idle */
    uint64_t steals;                  /* jobs taken from another thread's queue */
    uint64_t failed_steals;           /* steal sweeps that found nothing */
    uint64_t active_workers;          /* workers allowed to take work now (a gauge, not a counter;
                                         one worker's counters: 1 if it is active, else 0) */
    uint64_t handoffs;                /* jobs run right after the job that released them, by its
                                         thread, without going through a queue */
} jobsys_stats;

/* ---- Errors ------------------------------------------------------------- */

/* Message of the most recent failing call on this thread ("" if none); owned by jobsys, valid
 * until this thread's next failing call. Never fails. */
const char *jobsys_last_error_message(void);

/* Name of an error code, e.g. "JOBSYS_ERR_INVALID_HANDLE" ("JOBSYS_ERR_UNKNOWN" if it is none);
 * static storage. Never fails. */
const char *jobsys_error_name(jobsys_error code);

/* ---- Create and destroy ------------------------------------------------- */

/* Fill *config with the defaults. Errors: NULL_ARGUMENT. */
jobsys_error jobsys_config_init(jobsys_config *config);

/* Start a system (its worker threads) configured by *config (NULL: defaults) and store it in *out.
 * Errors: NULL_ARGUMENT (out), CONFIG (a bad value: workers < -1 or > 512, unknown idle_policy,
 * adaptive_cpu_cap outside 0..1; or the OS refused threads/affinity/nice). */
jobsys_error jobsys_create(const jobsys_config *config, jobsys_system **out);

/* Run every job scheduled so far (and those they schedule) to the end, stop and join the workers,
 * close open hot zones, free the system; `sys` is invalid afterwards. No other thread may use
 * `sys` during or after the call (its own jobs may, while it drains). Errors: NULL_ARGUMENT;
 * BAD_STATE if called from inside one of this system's jobs (nothing is destroyed). Job failures
 * are not reported here. A job pinned to another outside thread (the main thread, a registered
 * one) can never run, since that thread may not call in meanwhile: it is cancelled (CANCELLED;
 * its release callback runs), as its dependents are. */
jobsys_error jobsys_destroy(jobsys_system *sys);

/* *out = the number of worker threads. Errors: NULL_ARGUMENT. */
jobsys_error jobsys_workers(const jobsys_system *sys, uint32_t *out);

/* ---- Jobs --------------------------------------------------------------- */

/* Schedule fn(data) as one job described by *desc (NULL: the defaults; see jobsys_job_desc);
 * *out (if out is not NULL) = its handle. Errors: NULL_ARGUMENT (sys, fn, deps NULL with
 * ndeps > 0, data NULL with data_size > 0), INVALID_ARGUMENT (desc->size, unknown flags, a bad
 * priority or pin: unknown pin kind, MAIN with index != 0, WORKER index outside 1..workers,
 * THREAD index no thread ever registered, REGISTERED value not from jobsys_register_thread_pin),
 * INVALID_HANDLE, FOREIGN_HANDLE (a dependency). */
jobsys_error jobsys_schedule(jobsys_system *sys, const jobsys_job_desc *desc, jobsys_job_fn fn,
                             void *data, jobsys_handle *out);

/* Run fn(data, b, e) over pieces [b, e) that cover [begin, end) exactly once, on all threads,
 * as one job described by *desc (NULL: the defaults); batch = indices per piece (the last may be
 * shorter), 0 = auto (about 16 pieces per thread). Empty range: the job has nothing to run and
 * completes as soon as its dependencies have. Errors: as jobsys_schedule, plus
 * INVALID_ARGUMENT (begin > end). */
jobsys_error jobsys_parallel_for(jobsys_system *sys, const jobsys_job_desc *desc, size_t begin,
                                 size_t end, size_t batch, jobsys_range_fn fn, void *data,
                                 jobsys_handle *out);

/* Fork/join: run a(a_data) and b(b_data), potentially in parallel, and return when both have
 * returned. b runs on the calling thread; a is offered to other threads and, unless one took it
 * meanwhile, runs here afterwards. Costs no allocation and no handle: the cheapest way to split
 * work recursively. Errors: NULL_ARGUMENT (sys, a, b); JOB_FAILED if either called jobsys_fail
 * (a's message if both did), after both have returned. */
jobsys_error jobsys_join(jobsys_system *sys, jobsys_job_fn a, void *a_data, jobsys_job_fn b,
                         void *b_data);

/* *out = one handle that completes when all of handles[0..n) have (n = 0: complete at once); fails
 * if any of them fails. Zeroed handles are skipped. Errors: NULL_ARGUMENT (sys, out, handles with n > 0), INVALID_HANDLE,
 * FOREIGN_HANDLE. */
jobsys_error jobsys_combine(jobsys_system *sys, const jobsys_handle *handles, size_t n,
                            jobsys_handle *out);

/* Wait until h finished, running work h needs on this thread meanwhile (flushes this thread's
 * batch first). Errors: NULL_ARGUMENT, INVALID_HANDLE, FOREIGN_HANDLE, JOB_FAILED,
 * DEPENDENCY_FAILED (every later call on h reports it again), WAIT_ON_SELF (a job waited on itself
 * or on a job that needs it). A failed job that has a desc name is named in the message:
 * `the job "physics" failed: ...`, `a job this one depends on, job "physics", failed: ...`, a
 * cancellation's text ends `(job "physics")`. */
jobsys_error jobsys_complete(jobsys_system *sys, jobsys_handle h);

/* jobsys_complete that gives up after timeout_ns nanoseconds with JOBSYS_ERR_TIMEOUT, leaving the
 * job as it is (not cancelled: wait again, or jobsys_cancel it). It runs h's work meanwhile as
 * jobsys_complete does, and a job it runs is not interrupted, so it may return later than the
 * timeout by that job's length. A finished job never reports TIMEOUT, even with timeout_ns 0.
 * Errors: those of jobsys_complete, and TIMEOUT. */
jobsys_error jobsys_complete_timeout(jobsys_system *sys, jobsys_handle h, uint64_t timeout_ns);

/* Wait until one of handles[0..n) has finished (successfully or not) and set *index to its index
 * (the lowest, if several have); ask jobsys_complete for its outcome. Runs other work on this
 * thread meanwhile, as jobsys_complete does; the other jobs go on as they were. A zeroed handle
 * counts as finished. Costs nothing when one has finished; otherwise a small job per unfinished
 * handle. Errors: NULL_ARGUMENT (sys, index, handles with n > 0), INVALID_ARGUMENT (n is 0),
 * INVALID_HANDLE, FOREIGN_HANDLE, WAIT_ON_SELF (none can finish while this thread waits: each is a
 * job this thread is inside of, or needs one). */
jobsys_error jobsys_wait_any(jobsys_system *sys, const jobsys_handle *handles, size_t n,
                             size_t *index);

/* *out = a limiter of max seats (see jobsys_limiter). Errors: NULL_ARGUMENT (out),
 * INVALID_ARGUMENT (max is 0). */
jobsys_error jobsys_limiter_create(size_t max, jobsys_limiter **out);

/* Free a limiter (NULL: nothing). Its jobs that wait or run are unaffected. No call may be
 * scheduling with it meanwhile. Never fails. */
jobsys_error jobsys_limiter_destroy(jobsys_limiter *limiter);

/* No seat: what jobsys_limiter_slot returns outside a limited job. */
#define JOBSYS_NO_SEAT SIZE_MAX

/* The seat of the limited job running on this thread, in [0, max); JOBSYS_NO_SEAT outside one.
 * Never fails. */
size_t jobsys_limiter_slot(void);

/* *done = whether h finished (successfully or not). Never blocks, never runs a job. Errors:
 * NULL_ARGUMENT (sys, done), INVALID_HANDLE, FOREIGN_HANDLE. */
jobsys_error jobsys_is_complete(jobsys_system *sys, jobsys_handle h, bool *done);

/* Cancel h: a job, a parallel_for, or a jobsys_combine group (its members, recursively; the
 * dependencies of a single job are not touched). *stopped (if not NULL) = true if it was stopped
 * before it started: then its function is never called and its release callback runs now, on this
 * thread (for a group: true if the group had not finished). A running job gets *stopped = false
 * and is asked to stop: jobsys_is_cancelled() reads true inside it (a parallel_for hands out no
 * more pieces; *stopped = true only if no piece had started). A finished job: *stopped = false,
 * its result is unchanged. A cancelled job and its dependents finish failed: jobsys_complete on
 * them returns CANCELLED (a job waiting for dependencies finishes when they have). Errors:
 * NULL_ARGUMENT (sys), INVALID_HANDLE, FOREIGN_HANDLE. */
jobsys_error jobsys_cancel(jobsys_system *sys, jobsys_handle h, bool *stopped);

/* Inside a job: whether jobsys_cancel was called on it after it started (a long job polls this
 * and returns early; it fails as cancelled whatever it does then). False outside a job. Never
 * fails. */
bool jobsys_is_cancelled(void);

/* Inside a job: mark the job running on this thread as failed with a copy of message (NULL: a
 * generic one), then return from the job as usual. The first message counts. Errors: BAD_STATE
 * when no job is running on this thread (in a release callback, for one). */
jobsys_error jobsys_fail(const char *message);

/* ---- Frame graphs ------------------------------------------------------- */

/* A frame graph: nodes with the options of a job, built once and run every frame. A run costs no
 * building: each node is released when its dependencies in that run have finished. Runs may
 * overlap (node n of run k+1 waits for node n of run k; at most max_in_flight runs at once). Each
 * run measures its nodes, and the next runs submit ready nodes by their longest remaining path and
 * give the critical path's nodes HIGH priority, whatever their desc's (unless its flags have
 * JOBSYS_JOB_KEEP_PRIORITY): desc.priority is the node's priority off the critical path.
 *
 *   jobsys_graph_builder *b;
 *   jobsys_graph_builder_create(sys, &b);
 *   jobsys_node input, physics;
 *   jobsys_graph_add(sys, b, NULL, NULL, 0, read_input, &world, &input);
 *   jobsys_graph_add(sys, b, &physics_desc, &input, 1, step_physics, &world, &physics);
 *   jobsys_graph *g;
 *   jobsys_graph_build(b, 0, &g);                  (frees b)
 *   for (;;) {                                     (every frame)
 *       jobsys_handle run;
 *       jobsys_graph_run(sys, g, &run);
 *       jobsys_graph_sync(sys, g, physics);        (a mid-frame sync point)
 *       jobsys_complete(sys, run);
 *   }
 *   jobsys_graph_destroy(g);
 *
 * A node's function is called once per run, never by two runs at once; a loop node's on pieces
 * of its range from several threads at once. Its data (desc->data_size: 0, your pointer, kept
 * alive by you; > 0, a copy made when the node is added) lives as long as the graph: release
 * (desc->release) is called once, after the graph is destroyed and its last run has finished
 * (on the thread that finishes it), or when a builder that was not built is destroyed; never when
 * jobsys_graph_add returns an error (the data stays yours). A failing
 * node (jobsys_fail) fails its dependents and its run; the next run starts clean. */
typedef struct jobsys_graph_builder jobsys_graph_builder;
typedef struct jobsys_graph jobsys_graph;

/* One node of a graph (its index in the order nodes were added, and its builder's tag). A node of
 * another graph is INVALID_ARGUMENT. All-zero is no node. */
typedef struct jobsys_node {
    uint32_t index;
    uint32_t graph;
} jobsys_node;

/* *out = a new builder for a graph whose runs run on sys. Errors: NULL_ARGUMENT (sys, out). */
jobsys_error jobsys_graph_builder_create(jobsys_system *sys, jobsys_graph_builder **out);

/* Free a builder that was not built (NULL: nothing), releasing its nodes' data. Never fails. */
void jobsys_graph_builder_destroy(jobsys_graph_builder *b);

/* Add a node that calls fn(data) once per run, after the nodes after[0..nafter), with the options
 * of *desc (NULL: none): name, priority, pin, limiter, data_size, release,
 * JOBSYS_JOB_KEEP_PRIORITY. *out (if not NULL) = the node. desc->deps must be empty (a node's
 * dependencies are nodes), and JOBSYS_JOB_BATCHED and JOBSYS_JOB_BLOCKING do not apply. Errors:
 * NULL_ARGUMENT (sys, b, fn, after with nafter > 0, data with data_size > 0), INVALID_ARGUMENT
 * (desc as jobsys_schedule; a node of another graph; sys is not the builder's). */
jobsys_error jobsys_graph_add(jobsys_system *sys, jobsys_graph_builder *b,
                              const jobsys_job_desc *desc, const jobsys_node *after,
                              size_t nafter, jobsys_job_fn fn, void *data, jobsys_node *out);

/* Add a loop node: each run calls fn(data, b, e) on pieces [b, e) covering [begin, end), batch
 * indices each (0: chosen by jobsys), from all threads (from the pinned one with a pin). Errors:
 * as jobsys_graph_add, and INVALID_ARGUMENT for begin > end. */
jobsys_error jobsys_graph_add_for(jobsys_system *sys, jobsys_graph_builder *b,
                                  const jobsys_job_desc *desc, const jobsys_node *after,
                                  size_t nafter, size_t begin, size_t end, size_t batch,
                                  jobsys_range_fn fn, void *data, jobsys_node *out);

/* `to` runs after `from` in every run (as if `from` were in to's after list). Errors:
 * NULL_ARGUMENT (b), INVALID_ARGUMENT (a node of another graph). */
jobsys_error jobsys_graph_edge(jobsys_graph_builder *b, jobsys_node from, jobsys_node to);

/* *out = the graph of b's nodes; b is freed whatever this returns (on an error with its nodes'
 * data released). max_in_flight: the most runs in flight at once, 0 for the default (2). Errors:
 * NULL_ARGUMENT (b, out), INVALID_ARGUMENT (a cycle of edges; the message names its nodes). */
jobsys_error jobsys_graph_build(jobsys_graph_builder *b, uint32_t max_in_flight,
                                jobsys_graph **out);

/* Free a graph (NULL: nothing). Runs in flight go on; the nodes' data is released after the last
 * of them. No other call on g may be in progress. Never fails. */
void jobsys_graph_destroy(jobsys_graph *g);

/* Start a run of g; *out (if not NULL) = a handle for the whole run: complete it, cancel it, or
 * schedule after it like any job (a group of the run's nodes: a failed node makes jobsys_complete
 * on it DEPENDENCY_FAILED, its message naming the node). With max_in_flight runs in
 * flight this first waits for the oldest, helping with its work. After the first runs it
 * allocates nothing. Errors: NULL_ARGUMENT (sys, g), INVALID_ARGUMENT (g was built for another
 * system). */
jobsys_error jobsys_graph_run(jobsys_system *sys, const jobsys_graph *g, jobsys_handle *out);

/* A sync point: wait until `node` of the newest run has finished, helping meanwhile; OK at once
 * before the first run. Errors: those of jobsys_complete on the node's job (JOB_FAILED,
 * DEPENDENCY_FAILED, CANCELLED), NULL_ARGUMENT (sys, g), INVALID_ARGUMENT (a node of another
 * graph, or g was built for another system). */
jobsys_error jobsys_graph_sync(jobsys_system *sys, const jobsys_graph *g, jobsys_node node);

/* What the newest finished run measured, for one node. The frame of a report is the longest path
 * of the graph with these durations: the run's length with as many threads as it could use. */
typedef struct jobsys_node_report {
    jobsys_node node;
    uint64_t duration_ns; /* first start to last end (a loop node's pieces included) */
    uint64_t slack_ns;    /* how much longer it could take without a longer frame; 0 on the path */
    uint32_t critical;    /* its place on the critical path, from 1 (the first node); 0: not on it */
    uint32_t reserved;    /* 0 */
} jobsys_node_report;

/* The newest finished run's report: *frame_ns = its frame; nodes[i] = node i's report, for each
 * i below n and the node count; *count (if not NULL) = the node count. It allocates (call it per
 * frame only if that is fine). Errors: NULL_ARGUMENT (sys, g, frame_ns; nodes with n > 0),
 * BAD_STATE (no run has finished yet), INVALID_ARGUMENT (g was built for another system). */
jobsys_error jobsys_graph_report(jobsys_system *sys, const jobsys_graph *g, uint64_t *frame_ns,
                                 jobsys_node_report *nodes, size_t n, size_t *count);

/* *frame_ns = the frame of the newest finished run's report had `node` taken `factor` times as
 * long (0.8: 20 % faster), the other nodes unchanged. Errors: as jobsys_graph_report, and
 * INVALID_ARGUMENT (a node of another graph; factor negative or not finite). */
jobsys_error jobsys_graph_what_if(jobsys_system *sys, const jobsys_graph *g, jobsys_node node,
                                  double factor, uint64_t *frame_ns);

/* ---- Pinned jobs, threads, active workers -------------------------------- */

/* Pinned jobs (desc->flags JOBSYS_JOB_PINNED, desc->pin) run only on the thread the pin names,
 * never on another. A worker runs jobs pinned to it before any other work (waking for them even
 * when parked or benched). An outside thread (the main thread, a registered one) runs its pinned
 * jobs in jobsys_run_pinned, and while it waits in jobsys_complete (then it runs all of its ready
 * pinned jobs, needed or not). Until then the job waits: jobsys_complete on it from another
 * thread blocks until that thread calls in (jobsys_destroy cancels it). If a registered thread
 * exits, its queued pinned jobs are cancelled (CANCELLED), as are those that become ready later
 * and those pinned to it after (a THREAD pin: while its index is free; a REGISTERED pin:
 * always). */

/* Make the calling thread (a render or IO thread, say) one that runs jobs pinned to it, until it
 * exits; *index (if not NULL) = its thread index, for {JOBSYS_PIN_THREAD, index}: the smallest
 * index above the workers' that no live registered thread holds (the first registered thread gets
 * workers + 1; see jobsys_thread_index for the bound). Calling again returns the same index; on
 * the thread that called jobsys_create it is 0. After the thread exits, a thread registering later
 * may get its index. Errors: NULL_ARGUMENT, BAD_STATE (called on one of the system's workers). */
jobsys_error jobsys_register_thread(jobsys_system *sys, uint32_t *index);

/* jobsys_register_thread, and *pin = the pin that names this thread's registration and nothing
 * else: {JOBSYS_PIN_REGISTERED, value} ({JOBSYS_PIN_MAIN, 0} on the thread that called
 * jobsys_create). Unlike {JOBSYS_PIN_THREAD, index}, it never names the index's next holder: jobs
 * pinned with it after the thread exits are cancelled (CANCELLED). Calling again gives the same
 * pin. Errors: NULL_ARGUMENT (sys, pin), BAD_STATE (called on one of the system's workers). */
jobsys_error jobsys_register_thread_pin(jobsys_system *sys, jobsys_pin *pin);

/* Run the calling thread's pinned jobs that are ready now (at most as many as were queued when it
 * was called; call it from the thread's loop, e.g. once per frame); *ran (if not NULL) = how many
 * ran. Errors: NULL_ARGUMENT. */
jobsys_error jobsys_run_pinned(jobsys_system *sys, uint32_t *ran);

/* *out = the calling thread's index: 0 for the thread that called jobsys_create, 1..workers for
 * the workers, then registered threads; -1 for a thread the system does not know (one that
 * never registered, or a worker of another system). Stable while the thread lives and dense:
 * every index is below workers + 1 + N, N the most threads registered at the same time (a thread
 * counts from jobsys_register_thread until it has exited), so an array of that many entries
 * covers every index; threads that only schedule or wait take none. Errors: NULL_ARGUMENT
 * (sys, out). */
jobsys_error jobsys_thread_index(const jobsys_system *sys, int32_t *out);

/* Let at most n workers take work (0..workers; the default is all). The others park, taking no
 * work but the jobs pinned to them, until n grows again; the threads in jobsys_complete run what
 * is left (n = 0: they run everything). Takes effect at once for idle workers, when it finishes
 * its current job for a busy one. With config.follow_cpus the active count is min(n, usable CPUs
 * - 1). Errors: NULL_ARGUMENT, INVALID_ARGUMENT (n > workers; the message names both). */
jobsys_error jobsys_set_active_workers(jobsys_system *sys, uint32_t n);

/* *out = the workers allowed to take work now. Errors: NULL_ARGUMENT (sys, out). */
jobsys_error jobsys_active_workers(const jobsys_system *sys, uint32_t *out);

/* ---- Batching and hot zones --------------------------------------------- */

/* Publish this thread's batched jobs (JOBSYS_JOB_BATCHED), waking as many sleeping workers as there is work for, at
 * once; *woken (if not NULL) = how many woke. Errors: NULL_ARGUMENT. */
jobsys_error jobsys_flush(jobsys_system *sys, uint32_t *woken);

/* Open a hot zone: while any is open, idle workers spin instead of sleeping (wakes sleeping
 * workers once). Zones nest. Errors: NULL_ARGUMENT. */
jobsys_error jobsys_hot_zone_begin(jobsys_system *sys);

/* Close one open hot zone (any thread may close one another thread opened). Errors: NULL_ARGUMENT,
 * BAD_STATE (none open). */
jobsys_error jobsys_hot_zone_end(jobsys_system *sys);

/* ---- Statistics --------------------------------------------------------- */

/* *out = counters summed over all threads since the system started. Errors: NULL_ARGUMENT (sys,
 * out). */
jobsys_error jobsys_get_stats(const jobsys_system *sys, jobsys_stats *out);

/* *out = counters since the previous jobsys_take_stats call (or the start): call once per frame.
 * Errors: NULL_ARGUMENT (sys, out). */
jobsys_error jobsys_take_stats(jobsys_system *sys, jobsys_stats *out);

/* *out = counters of the worker whose thread index is `thread_index` (1..workers). Errors:
 * NULL_ARGUMENT (sys, out), INVALID_ARGUMENT (not a worker's index). */
jobsys_error jobsys_get_worker_stats(const jobsys_system *sys, uint32_t thread_index,
                                     jobsys_stats *out);

/* ---- Tracing ------------------------------------------------------------ */

/* Start recording what every thread of the system does (jobs, steals, spins, sleeps, wakes,
 * waits); near-zero cost while not recording. Errors: NULL_ARGUMENT, BAD_STATE (a capture is
 * already running). */
jobsys_error jobsys_trace_start(jobsys_system *sys);

/* Stop recording; the system keeps this capture (replacing an earlier one) for jobsys_trace_write.
 * Errors: NULL_ARGUMENT, BAD_STATE (no capture running). */
jobsys_error jobsys_trace_stop(jobsys_system *sys);

/* Write the last stopped capture to the file `path` (created or truncated) as a raw capture (JSON,
 * format "jobsys-raw-trace"): `jobsys-trace summary|compare|render` read it, and
 * `jobsys-trace export FILE -o OUT.json` makes the Chrome trace JSON that ui.perfetto.dev opens.
 * Errors: NULL_ARGUMENT (sys, path), BAD_STATE (nothing stopped yet), IO. */
jobsys_error jobsys_trace_write(jobsys_system *sys, const char *path);

/* Mark the beginning of a frame in the running capture (`jobsys-trace compare --frames` compares
 * captures frame by frame); one relaxed load when not recording. Call it once per frame, from the
 * thread that runs the frame loop. Errors: NULL_ARGUMENT. */
jobsys_error jobsys_frame_begin(jobsys_system *sys);

/* Mark the end of the frame begun last (nothing when not recording). Errors: NULL_ARGUMENT. */
jobsys_error jobsys_frame_end(jobsys_system *sys);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* JOBSYS_H */
