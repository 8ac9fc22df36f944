/*
 * Handles from C threads (docs/c-api.md, "Handles"): a handle is the job's
 * slot address, the system's id and the slot's generation, checked by the
 * library against its own pages. Here: many threads schedule and complete
 * at once, every job exactly once; handles cross threads and outlive the
 * thread that made them; a handle of another or a destroyed system is
 * FOREIGN_HANDLE; forged bits (random, a real handle with bits flipped, an
 * address inside a slot) are INVALID_HANDLE or FOREIGN_HANDLE, never a
 * crash; a handle whose slot was reused many times reads complete (or its
 * failure, never success for a failed job); the zeroed handle names no job.
 * Run by tests/c_programs.rs (argument: jobs per thread, default 20000) and
 * by tests/valgrind.rs (fewer). Prints "handles_test: ok"; a failed check
 * exits with status 1.
 */
#include "jobsys.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define THREADS 8

static unsigned jobs_per_thread = 20000;

/* One counter per job: each job bumps its own, so "ran exactly once" is
 * checkable job by job. */
static void bump(void *data) { atomic_fetch_add((atomic_uint *)data, 1); }

static void fail_job(void *data) {
    (void)data;
    OK(jobsys_fail("failed on purpose"));
}

static jobsys_system *create(int32_t workers) {
    jobsys_config cfg;
    OK(jobsys_config_init(&cfg));
    cfg.workers = workers;
    jobsys_system *sys;
    OK(jobsys_create(&cfg, &sys));
    return sys;
}

/* A deterministic pseudo-random sequence (xorshift64*). */
static uint64_t rng_state = 0x9E3779B97F4A7C15u;
static uint64_t next_random(void) {
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1Du;
}

/* ---- Many threads at once, every job exactly once ---------------------- */

typedef struct {
    jobsys_system *sys;
    atomic_uint *counters; /* jobs_per_thread of them */
} worker_arg;

/* Schedule and complete jobs in small groups (so several are in flight),
 * every other group after the group before it (a dependency on handles
 * this thread made, some already finished). */
static void *schedule_and_complete(void *p) {
    worker_arg *a = p;
    jobsys_handle hs[16], prev[16];
    unsigned nprev = 0;
    for (unsigned i = 0; i < jobs_per_thread; i += 16) {
        unsigned n = jobs_per_thread - i < 16 ? jobs_per_thread - i : 16;
        jobsys_job_desc d = JOBSYS_JOB_DESC_INIT;
        if ((i / 16) % 2 == 1) {
            d.deps = prev;
            d.ndeps = nprev;
        }
        for (unsigned k = 0; k < n; k++) OK(jobsys_schedule(a->sys, &d, bump, &a->counters[i + k], &hs[k]));
        for (unsigned k = 0; k < n; k++) OK(jobsys_complete(a->sys, hs[k]));
        memcpy(prev, hs, sizeof hs);
        nprev = n;
    }
    return NULL;
}

static void test_concurrent(int32_t workers) {
    jobsys_system *sys = create(workers);
    atomic_uint *counters = calloc((size_t)THREADS * jobs_per_thread, sizeof *counters);
    CHECK(counters != NULL);
    pthread_t t[THREADS];
    worker_arg args[THREADS];
    for (int i = 0; i < THREADS; i++) {
        args[i] = (worker_arg){sys, counters + (size_t)i * jobs_per_thread};
        CHECK(pthread_create(&t[i], NULL, schedule_and_complete, &args[i]) == 0);
    }
    for (int i = 0; i < THREADS; i++) CHECK(pthread_join(t[i], NULL) == 0);
    for (size_t i = 0; i < (size_t)THREADS * jobs_per_thread; i++) CHECK(atomic_load(&counters[i]) == 1);
    OK(jobsys_destroy(sys));
    free(counters);
}

/* ---- Handles that cross threads and outlive their thread --------------- */

typedef struct {
    jobsys_system *sys;
    atomic_uint *counters;
    unsigned n;
    jobsys_handle *out; /* n handles of bump jobs, then one failing job's */
} maker_arg;

static void *make_jobs(void *p) {
    maker_arg *a = p;
    for (unsigned i = 0; i < a->n; i++) OK(jobsys_schedule(a->sys, NULL, bump, &a->counters[i], &a->out[i]));
    OK(jobsys_schedule(a->sys, NULL, fail_job, NULL, &a->out[a->n]));
    return NULL; /* the thread exits; its handles live on */
}

static void *complete_jobs(void *p) {
    maker_arg *a = p;
    for (unsigned i = 0; i < a->n; i++) OK(jobsys_complete(a->sys, a->out[i]));
    EXPECT(jobsys_complete(a->sys, a->out[a->n]), JOBSYS_ERR_JOB_FAILED);
    MESSAGE_HAS("failed on purpose");
    return NULL;
}

static void test_cross_thread(int32_t workers) {
    jobsys_system *sys = create(workers);
    unsigned n = 1000;
    atomic_uint *counters = calloc(n, sizeof *counters);
    jobsys_handle *hs = calloc(n + 1, sizeof *hs);
    CHECK(counters != NULL && hs != NULL);
    maker_arg a = {sys, counters, n, hs};
    pthread_t t;
    /* Made on a thread that has exited before anyone completes them. */
    CHECK(pthread_create(&t, NULL, make_jobs, &a) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    /* Completed on another thread (a failure reports there) ... */
    CHECK(pthread_create(&t, NULL, complete_jobs, &a) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    for (unsigned i = 0; i < n; i++) CHECK(atomic_load(&counters[i]) == 1);
    /* ... and again here: complete stays complete, the failure reports again. */
    for (unsigned i = 0; i < n; i++) OK(jobsys_complete(sys, hs[i]));
    EXPECT(jobsys_complete(sys, hs[n]), JOBSYS_ERR_JOB_FAILED);
    MESSAGE_HAS("failed on purpose");
    bool done = false;
    OK(jobsys_is_complete(sys, hs[0], &done));
    CHECK(done);
    /* All of them as the dependencies of one job here (past the few
     * resolved on the stack). */
    atomic_uint after = 0;
    jobsys_handle h;
    jobsys_job_desc d = JOBSYS_JOB_DESC_INIT;
    d.deps = hs;
    d.ndeps = n;
    OK(jobsys_schedule(sys, &d, bump, &after, &h));
    OK(jobsys_complete(sys, h));
    CHECK(atomic_load(&after) == 1);
    for (unsigned i = 0; i < n; i++) CHECK(atomic_load(&counters[i]) == 1);
    OK(jobsys_destroy(sys));
    free(counters);
    free(hs);
}

/* ---- Short-lived threads, and the drain of jobsys_destroy --------------- */

typedef struct {
    jobsys_system *sys;
    atomic_uint *counter;
    int complete; /* complete the jobs before exiting? */
} brief_arg;

static void *brief_thread(void *p) {
    brief_arg *a = p;
    jobsys_handle hs[8];
    for (int i = 0; i < 8; i++) OK(jobsys_schedule(a->sys, NULL, bump, a->counter, &hs[i]));
    if (a->complete)
        for (int i = 0; i < 8; i++) OK(jobsys_complete(a->sys, hs[i]));
    return NULL;
}

/* 300 threads one after another, each scheduling 8 jobs; every other
 * thread leaves its jobs pending. At 0 workers nothing runs unless some
 * thread completes it, so jobsys_destroy's drain must find the pending jobs
 * of every exited thread. */
static void test_short_lived_threads(void) {
    jobsys_system *sys = create(0);
    atomic_uint counter = 0;
    for (int i = 0; i < 300; i++) {
        brief_arg a = {sys, &counter, i % 2};
        pthread_t t;
        CHECK(pthread_create(&t, NULL, brief_thread, &a) == 0);
        CHECK(pthread_join(t, NULL) == 0);
    }
    CHECK(atomic_load(&counter) >= 150 * 8);
    OK(jobsys_destroy(sys));
    CHECK(atomic_load(&counter) == 300 * 8);
}

/* ---- Foreign handles ----------------------------------------------------- */

/* h is refused with `code` by every call that takes a handle, and as a
 * dependency; nothing runs, nothing is released. */
static atomic_uint refused_ran;
static void refused_job(void *data) {
    (void)data;
    atomic_fetch_add(&refused_ran, 1);
}
static void refused_range(void *data, size_t b, size_t e) {
    (void)data;
    (void)b;
    (void)e;
    atomic_fetch_add(&refused_ran, 1);
}
static void refused_release(void *data) {
    (void)data;
    atomic_fetch_add(&refused_ran, 1);
}

static void expect_refused(jobsys_system *sys, jobsys_handle bad, jobsys_error code, bool try_cancel) {
    bool done = false, stopped = false;
    jobsys_handle out = {0, 0};
    EXPECT(jobsys_complete(sys, bad), code);
    EXPECT(jobsys_is_complete(sys, bad, &done), code);
    if (try_cancel) EXPECT(jobsys_cancel(sys, bad, &stopped), code);
    jobsys_handle deps[3] = {JOBSYS_HANDLE_NONE, bad, JOBSYS_HANDLE_NONE};
    jobsys_job_desc d = JOBSYS_JOB_DESC_INIT;
    d.deps = deps;
    d.ndeps = 3;
    d.release = refused_release; /* not called: nothing was scheduled */
    EXPECT(jobsys_schedule(sys, &d, refused_job, NULL, &out), code);
    EXPECT(jobsys_parallel_for(sys, &d, 0, 10, 0, refused_range, NULL, &out), code);
    EXPECT(jobsys_combine(sys, deps, 3, &out), code);
    CHECK(out.id == 0 && out.gen == 0); /* no out-parameter written */
}

static void test_foreign(void) {
    jobsys_system *sys = create(1);
    jobsys_system *other = create(1);
    atomic_uint c = 0;
    jobsys_handle theirs, pending;
    OK(jobsys_schedule(other, NULL, bump, &c, &theirs));
    OK(jobsys_complete(other, theirs));
    /* Another live system's handle, finished ... */
    expect_refused(sys, theirs, JOBSYS_ERR_FOREIGN_HANDLE, true);
    MESSAGE_HAS("another (or a destroyed) system");
    /* ... and one it has not run yet (no workers there). */
    jobsys_system *idle = create(0);
    OK(jobsys_schedule(idle, NULL, bump, &c, &pending));
    expect_refused(sys, pending, JOBSYS_ERR_FOREIGN_HANDLE, true);
    /* Destroyed systems: their handles stay foreign, even for a system
     * created after (which may reuse the memory). */
    OK(jobsys_destroy(other));
    OK(jobsys_destroy(idle));
    CHECK(atomic_load(&c) == 2);
    jobsys_system *later = create(1);
    expect_refused(sys, theirs, JOBSYS_ERR_FOREIGN_HANDLE, true);
    expect_refused(later, theirs, JOBSYS_ERR_FOREIGN_HANDLE, true);
    expect_refused(later, pending, JOBSYS_ERR_FOREIGN_HANDLE, true);
    /* A handle of `later` is not `sys`'s, and the reverse. */
    jobsys_handle mine, its;
    OK(jobsys_schedule(sys, NULL, bump, &c, &mine));
    OK(jobsys_schedule(later, NULL, bump, &c, &its));
    expect_refused(sys, its, JOBSYS_ERR_FOREIGN_HANDLE, true);
    expect_refused(later, mine, JOBSYS_ERR_FOREIGN_HANDLE, true);
    OK(jobsys_complete(sys, mine));
    OK(jobsys_complete(later, its));
    CHECK(atomic_load(&refused_ran) == 0);
    OK(jobsys_destroy(later));
    OK(jobsys_destroy(sys));
}

/* ---- Forged handles ------------------------------------------------------ */

static bool invalid_or_foreign(jobsys_error e) {
    return e == JOBSYS_ERR_INVALID_HANDLE || e == JOBSYS_ERR_FOREIGN_HANDLE;
}

static void test_forged(void) {
    jobsys_system *sys = create(1);
    atomic_uint c = 0;
    jobsys_handle real;
    OK(jobsys_schedule(sys, NULL, bump, &c, &real));
    OK(jobsys_complete(sys, real));
    const uint64_t system_bits = real.gen & 0xFFFFFFFF00000000u;
    bool done;

    /* Random bits: another system id, almost surely. */
    for (int i = 0; i < 2000; i++) {
        jobsys_handle h = {next_random(), next_random()};
        if ((h.gen & 0xFFFFFFFF00000000u) == system_bits) continue;
        CHECK(invalid_or_foreign(jobsys_complete(sys, h)));
        CHECK(invalid_or_foreign(jobsys_is_complete(sys, h, &done)));
        CHECK(invalid_or_foreign(jobsys_cancel(sys, h, NULL)));
        expect_refused(sys, h, jobsys_complete(sys, h), true);
    }
    /* Random addresses with this system's id: not one of its slots. */
    for (int i = 0; i < 2000; i++) {
        jobsys_handle h = {next_random(), system_bits | (next_random() & 0xFFFFFFFFu)};
        expect_refused(sys, h, JOBSYS_ERR_INVALID_HANDLE, true);
    }
    /* The null address with this system's id. */
    expect_refused(sys, (jobsys_handle){0, real.gen}, JOBSYS_ERR_INVALID_HANDLE, true);
    MESSAGE_HAS("not a handle this system gave out");

    /* The real handle with one bit flipped. */
    for (int bit = 32; bit < 64; bit++) { /* the system id: another system */
        jobsys_handle h = real;
        h.gen ^= UINT64_C(1) << bit;
        expect_refused(sys, h, JOBSYS_ERR_FOREIGN_HANDLE, true);
    }
    int raised = 0;
    for (int bit = 16; bit < 32; bit++) { /* a generation the slot never reached */
        if (real.gen & (UINT64_C(1) << bit)) continue; /* set: flipping lowers it */
        jobsys_handle h = real;
        h.gen ^= UINT64_C(1) << bit;
        expect_refused(sys, h, JOBSYS_ERR_INVALID_HANDLE, true);
        raised++;
    }
    CHECK(raised > 0);
    for (int bit = 0; bit < 3; bit++) { /* an address inside the slot */
        jobsys_handle h = real;
        h.id ^= UINT64_C(1) << bit;
        expect_refused(sys, h, JOBSYS_ERR_INVALID_HANDLE, true);
    }
    for (int bit = 47; bit < 64; bit++) { /* outside the address space */
        jobsys_handle h = real;
        h.id ^= UINT64_C(1) << bit;
        expect_refused(sys, h, JOBSYS_ERR_INVALID_HANDLE, true);
    }
    /* Every address inside the slot but its start. A slot is at least 16
     * bytes and job slots are larger: offsets 1..15 are inside it. */
    for (uint64_t off = 1; off < 16; off++) {
        jobsys_handle h = real;
        h.id += off;
        expect_refused(sys, h, JOBSYS_ERR_INVALID_HANDLE, true);
    }
    /* Bits in the middle of the address may land on another slot of the
     * same pages: then the value reads as that slot's job (a plausible
     * handle), or is refused; never a crash. Only is_complete here: it
     * never blocks and changes nothing. */
    for (int bit = 3; bit < 47; bit++) {
        jobsys_handle h = real;
        h.id ^= UINT64_C(1) << bit;
        jobsys_error e = jobsys_is_complete(sys, h, &done);
        CHECK(e == JOBSYS_OK || e == JOBSYS_ERR_INVALID_HANDLE);
    }
    /* The real handle still works; nothing forged ran or was released. */
    OK(jobsys_complete(sys, real));
    CHECK(atomic_load(&c) == 1 && atomic_load(&refused_ran) == 0);
    OK(jobsys_destroy(sys));
}

/* ---- Stale handles and the zeroed handle -------------------------------- */

static void test_stale_and_none(void) {
    /* No workers: every job runs on this thread when completed, one after
     * another, so slots are taken and freed again and again. */
    jobsys_system *sys = create(0);
    atomic_uint c = 0;
    jobsys_handle ok_h, failed_h, h;
    OK(jobsys_schedule(sys, NULL, bump, &c, &ok_h));
    OK(jobsys_complete(sys, ok_h));
    OK(jobsys_schedule(sys, NULL, fail_job, NULL, &failed_h));
    EXPECT(jobsys_complete(sys, failed_h), JOBSYS_ERR_JOB_FAILED);
    unsigned reused = 0;
    for (unsigned i = 0; i < 20000; i++) {
        OK(jobsys_schedule(sys, NULL, bump, &c, &h));
        OK(jobsys_complete(sys, h));
        if (h.id == ok_h.id || h.id == failed_h.id) {
            CHECK(h.gen != ok_h.gen && h.gen != failed_h.gen); /* a new generation */
            reused++;
        }
    }
    CHECK(reused > 0); /* the test is about reused slots: make sure there were some */
    CHECK(atomic_load(&c) == 20001);
    /* The finished job's handle: complete; cancel does nothing; as a
     * dependency it is satisfied. */
    bool done = false, stopped = true;
    OK(jobsys_is_complete(sys, ok_h, &done));
    CHECK(done);
    OK(jobsys_complete(sys, ok_h));
    OK(jobsys_cancel(sys, ok_h, &stopped));
    CHECK(!stopped);
    jobsys_job_desc d = JOBSYS_JOB_DESC_INIT;
    d.deps = &ok_h;
    d.ndeps = 1;
    OK(jobsys_schedule(sys, &d, bump, &c, &h));
    OK(jobsys_complete(sys, h));
    CHECK(atomic_load(&c) == 20002);
    /* The failed job's handle: still its failure (remembered), never OK. */
    EXPECT(jobsys_complete(sys, failed_h), JOBSYS_ERR_JOB_FAILED);
    MESSAGE_HAS("failed on purpose");
    OK(jobsys_is_complete(sys, failed_h, &done));
    CHECK(done);
    d.deps = &failed_h;
    OK(jobsys_schedule(sys, &d, bump, &c, &h));
    EXPECT(jobsys_complete(sys, h), JOBSYS_ERR_DEPENDENCY_FAILED);
    CHECK(atomic_load(&c) == 20002);

    /* The zeroed handle names no job: skipped as a dependency (alone, among
     * others, or many), complete at once, cancel does nothing. */
    jobsys_handle none = JOBSYS_HANDLE_NONE;
    OK(jobsys_complete(sys, none));
    done = false;
    OK(jobsys_is_complete(sys, none, &done));
    CHECK(done);
    stopped = true;
    OK(jobsys_cancel(sys, none, &stopped));
    CHECK(!stopped);
    jobsys_handle deps[40];
    memset(deps, 0, sizeof deps);
    for (size_t n = 1; n <= 40; n += 13) {
        d.deps = deps;
        d.ndeps = n;
        OK(jobsys_schedule(sys, &d, bump, &c, &h));
        OK(jobsys_complete(sys, h));
    }
    CHECK(atomic_load(&c) == 20002 + 4);
    /* Among real ones, it does not hide them: the job waits for those. */
    jobsys_handle gate;
    OK(jobsys_schedule(sys, NULL, fail_job, NULL, &gate));
    deps[5] = gate;
    d.ndeps = 10;
    OK(jobsys_schedule(sys, &d, bump, &c, &h));
    EXPECT(jobsys_complete(sys, h), JOBSYS_ERR_DEPENDENCY_FAILED);
    CHECK(atomic_load(&c) == 20002 + 4);
    jobsys_handle group;
    memset(deps, 0, sizeof deps);
    OK(jobsys_combine(sys, deps, 40, &group));
    OK(jobsys_complete(sys, group));
    OK(jobsys_destroy(sys));
}

int main(int argc, char **argv) {
    if (argc > 1) jobs_per_thread = (unsigned)strtoul(argv[1], NULL, 10);
    CHECK(jobs_per_thread > 0);
    test_concurrent(2);
    test_concurrent(0);
    test_cross_thread(2);
    test_cross_thread(0);
    test_short_lived_threads();
    test_foreign();
    test_forged();
    test_stale_and_none();
    printf("handles_test: ok\n");
    return 0;
}
