/*
 * The sharded handle table from C threads (docs/c-api.md, "The handle
 * table"): handles cross threads, outlive the thread that made them, stay
 * exact under concurrent use, and forged shard numbers are rejected. Run by
 * tests/c_programs.rs (argument: jobs per thread, default 20000) and by
 * tests/valgrind.rs (fewer). Prints "shards_test: ok"; a failed check exits
 * with status 1.
 */
#define _POSIX_C_SOURCE 200112L /* setenv */
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

/* The shard a handle names (bits 31..26 of id, as jobsys.h documents). */
static unsigned shard_of(jobsys_handle h) { return (unsigned)(h.id >> 26) & 63u; }

/* ---- Many threads at once, every job exactly once ---------------------- */

typedef struct {
    jobsys_system *sys;
    atomic_uint *counters; /* jobs_per_thread of them */
    unsigned shard;        /* the shard this thread's handles named */
} worker_arg;

/* Schedule and complete jobs in small groups (so several are in flight). */
static void *schedule_and_complete(void *p) {
    worker_arg *a = p;
    jobsys_handle hs[16];
    a->shard = 64;
    for (unsigned i = 0; i < jobs_per_thread; i += 16) {
        unsigned n = jobs_per_thread - i < 16 ? jobs_per_thread - i : 16;
        for (unsigned k = 0; k < n; k++) {
            OK(jobsys_schedule(a->sys, NULL, bump, &a->counters[i + k], &hs[k]));
            if (a->shard == 64) a->shard = shard_of(hs[k]);
            CHECK(shard_of(hs[k]) == a->shard); /* one thread, one shard */
        }
        for (unsigned k = 0; k < n; k++) OK(jobsys_complete(a->sys, hs[k]));
    }
    return NULL;
}

static void test_concurrent(int32_t workers, unsigned expect_shards) {
    jobsys_system *sys = create(workers);
    atomic_uint *counters = calloc((size_t)THREADS * jobs_per_thread, sizeof *counters);
    CHECK(counters != NULL);
    pthread_t t[THREADS];
    worker_arg args[THREADS];
    for (int i = 0; i < THREADS; i++) {
        args[i] = (worker_arg){sys, counters + (size_t)i * jobs_per_thread, 0};
        CHECK(pthread_create(&t[i], NULL, schedule_and_complete, &args[i]) == 0);
    }
    for (int i = 0; i < THREADS; i++) CHECK(pthread_join(t[i], NULL) == 0);
    for (size_t i = 0; i < (size_t)THREADS * jobs_per_thread; i++) CHECK(atomic_load(&counters[i]) == 1);
    /* With 32 shards, 8 threads created one after another use 8 different
     * shards (consecutive thread numbers); with 1, all use shard 0. */
    int distinct = 0;
    for (int i = 0; i < THREADS; i++) {
        int seen = 0;
        for (int j = 0; j < i; j++) seen |= args[j].shard == args[i].shard;
        distinct += !seen;
    }
    CHECK(distinct == (int)(expect_shards < THREADS ? expect_shards : THREADS));
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
    /* A handle used as a dependency on a third thread's shard (here). */
    atomic_uint after = 0;
    jobsys_handle h;
    OK(jobsys_schedule_after(sys, NULL, hs, n, bump, &after, &h));
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

/* 300 threads one after another (more than the 32 shards: they share
 * them), each scheduling 8 jobs; every other thread leaves its jobs
 * pending. At 0 workers nothing runs unless some thread completes it, so
 * jobsys_destroy's drain must find the pending jobs in every shard. */
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

/* ---- Forged shard numbers ---------------------------------------------- */

static void test_forged_shard(void) {
    jobsys_system *sys = create(1);
    atomic_uint c = 0;
    jobsys_handle h;
    OK(jobsys_schedule(sys, NULL, bump, &c, &h));
    OK(jobsys_complete(sys, h));
    jobsys_handle forged = h;
    forged.id = (h.id & ~(63ull << 26)) | (40ull << 26); /* shard 40 of 32 */
    EXPECT(jobsys_complete(sys, forged), JOBSYS_ERR_INVALID_HANDLE);
    MESSAGE_HAS("shard 40, and this system has 32");
    EXPECT(jobsys_schedule_after(sys, NULL, &forged, 1, bump, &c, NULL), JOBSYS_ERR_INVALID_HANDLE);
    MESSAGE_HAS("shard 40");
    /* Another shard in range, with an index that shard never gave out. */
    forged.id = (h.id & ~(63ull << 26)) | ((uint64_t)((shard_of(h) + 1) % 32) << 26) | 12345u;
    EXPECT(jobsys_complete(sys, forged), JOBSYS_ERR_INVALID_HANDLE);
    OK(jobsys_complete(sys, h));
    OK(jobsys_destroy(sys));
    CHECK(atomic_load(&c) == 1);
}

/* A system created with JOBSYS_CAPI_HANDLE_SHARDS=1 has one shard (the
 * single-lock table, kept for measuring); a bad value is a CONFIG error. */
static void test_one_shard(void) {
    CHECK(setenv("JOBSYS_CAPI_HANDLE_SHARDS", "33", 1) == 0);
    jobsys_system *sys = NULL;
    EXPECT(jobsys_create(NULL, &sys), JOBSYS_ERR_CONFIG);
    MESSAGE_HAS("JOBSYS_CAPI_HANDLE_SHARDS");
    CHECK(setenv("JOBSYS_CAPI_HANDLE_SHARDS", "1", 1) == 0);
    sys = create(1);
    atomic_uint c = 0;
    jobsys_handle h;
    OK(jobsys_schedule(sys, NULL, bump, &c, &h));
    CHECK(shard_of(h) == 0);
    jobsys_handle forged = h;
    forged.id |= 5ull << 26;
    EXPECT(jobsys_complete(sys, forged), JOBSYS_ERR_INVALID_HANDLE);
    MESSAGE_HAS("shard 5, and this system has 1");
    OK(jobsys_complete(sys, h));
    OK(jobsys_destroy(sys));
    test_concurrent(2, 1);
    CHECK(unsetenv("JOBSYS_CAPI_HANDLE_SHARDS") == 0);
}

int main(int argc, char **argv) {
    if (argc > 1) jobs_per_thread = (unsigned)strtoul(argv[1], NULL, 10);
    CHECK(jobs_per_thread > 0);
    test_concurrent(2, 32);
    test_concurrent(0, 32);
    test_cross_thread(2);
    test_cross_thread(0);
    test_short_lived_threads();
    test_forged_shard();
    test_one_shard();
    printf("shards_test: ok\n");
    return 0;
}
