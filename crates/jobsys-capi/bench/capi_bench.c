/*
 * Benchmarks of the C API's own cost (run by scripts/capi-bench.sh, which
 * documents the method; results in docs/c-api.md, "Cost").
 *
 *   capi_bench threads T JOBS WORKERS   T pthreads at once, each scheduling
 *                                       and completing JOBS/T empty jobs one
 *                                       by one (jobsys_schedule then
 *                                       jobsys_complete), on one system with
 *                                       WORKERS workers. Prints the wall time
 *                                       from the first thread's start to the
 *                                       last thread's end, per job.
 *   capi_bench w1 SAMPLES               W1 "single" through the C API: at 0
 *                                       workers, schedule + complete an empty
 *                                       job 65 000 times; one warm-up
 *                                       iteration, then SAMPLES timed ones.
 *   capi_bench w1desc SAMPLES           as w1, with a jobsys_job_desc giving
 *                                       16 bytes of inline data (data_size).
 *   capi_bench w1dep SAMPLES            as w1, with a desc naming one
 *                                       dependency (the previous, finished
 *                                       job).
 *
 * Every job bumps a counter of its scheduling thread; the total is checked, so a run that lost or repeated a
 * job fails. Output: one line of `key=value` pairs (ns_per_job: one number
 * per sample, comma-separated).
 */
#define _POSIX_C_SOURCE 200112L
#include "jobsys.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK_OK(call)                                                           \
    do {                                                                         \
        jobsys_error e_ = (call);                                                \
        if (e_ != JOBSYS_OK) {                                                   \
            fprintf(stderr, "%s:%d: %s: %s (%s)\n", __FILE__, __LINE__, #call,  \
                    jobsys_error_name(e_), jobsys_last_error_message());         \
            exit(1);                                                             \
        }                                                                        \
    } while (0)

/* A counter alone on its cache lines; only jobs of one thread bump it. */
typedef struct {
    _Alignas(128) atomic_uint_fast64_t n;
} counter;

/* The empty job: counts itself (a relaxed add on its thread's counter). */
static void empty_job(void *data) {
    atomic_fetch_add_explicit(&((counter *)data)->n, 1, memory_order_relaxed);
}

/* W1's empty job: like jobsys-bench's count::bump, a plain load and store
 * (all of W1 runs on the calling thread at 0 workers). */
static void w1_job(void *data) {
    atomic_uint_fast64_t *n = &((counter *)data)->n;
    atomic_store_explicit(n, atomic_load_explicit(n, memory_order_relaxed) + 1, memory_order_relaxed);
}

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static jobsys_system *create(int32_t workers) {
    jobsys_config cfg;
    CHECK_OK(jobsys_config_init(&cfg));
    cfg.workers = workers;
    jobsys_system *sys;
    CHECK_OK(jobsys_create(&cfg, &sys));
    return sys;
}

/* ---- threads ------------------------------------------------------------ */

typedef struct {
    jobsys_system *sys;
    pthread_barrier_t *start;
    unsigned long jobs;
    double start_ns, end_ns; /* this thread's own clock readings */
    counter count;
} thread_arg;

static void *schedule_complete_loop(void *p) {
    thread_arg *a = p;
    pthread_barrier_wait(a->start);
    a->start_ns = now_ns();
    for (unsigned long i = 0; i < a->jobs; i++) {
        jobsys_handle h;
        CHECK_OK(jobsys_schedule(a->sys, NULL, empty_job, &a->count, &h));
        CHECK_OK(jobsys_complete(a->sys, h));
    }
    a->end_ns = now_ns();
    return NULL;
}

static int bench_threads(unsigned threads, unsigned long jobs, int32_t workers) {
    jobsys_system *sys = create(workers);
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, threads + 1);
    thread_arg *args = aligned_alloc(128, sizeof(thread_arg) * threads);
    pthread_t *t = calloc(threads, sizeof *t);
    if (!args || !t) return 1;
    unsigned long per = jobs / threads;
    for (unsigned i = 0; i < threads; i++) {
        memset(&args[i], 0, sizeof args[i]);
        args[i].sys = sys;
        args[i].start = &start;
        args[i].jobs = per;
        if (pthread_create(&t[i], NULL, schedule_complete_loop, &args[i]) != 0) return 1;
    }
    pthread_barrier_wait(&start);
    for (unsigned i = 0; i < threads; i++) pthread_join(t[i], NULL);
    /* From the first thread's start to the last one's end (the threads
     * read the clock themselves: this thread may run late after the
     * barrier on a busy machine). */
    double t0 = args[0].start_ns, t1 = args[0].end_ns;
    for (unsigned i = 1; i < threads; i++) {
        if (args[i].start_ns < t0) t0 = args[i].start_ns;
        if (args[i].end_ns > t1) t1 = args[i].end_ns;
    }
    double ns = t1 - t0;
    unsigned long ran = 0;
    for (unsigned i = 0; i < threads; i++) ran += (unsigned long)atomic_load(&args[i].count.n);
    if (ran != per * threads) {
        fprintf(stderr, "%lu jobs ran, expected %lu\n", ran, per * threads);
        return 1;
    }
    printf("mode=threads threads=%u workers=%d jobs=%lu ns_per_job=%.1f\n", threads, workers, per * threads, ns / (double)(per * threads));
    CHECK_OK(jobsys_destroy(sys));
    pthread_barrier_destroy(&start);
    free(args);
    free(t);
    return 0;
}

/* ---- w1 ----------------------------------------------------------------- */

#define W1_JOBS 65000

/* One W1 "single" iteration; never inlined, so callgrind can count exactly
 * the iterations (--toggle-collect=w1_iteration). */
__attribute__((noinline)) void w1_iteration(jobsys_system *sys, counter *c) {
    for (int i = 0; i < W1_JOBS; i++) {
        jobsys_handle h;
        CHECK_OK(jobsys_schedule(sys, NULL, w1_job, c, &h));
        CHECK_OK(jobsys_complete(sys, h));
    }
}

/* w1desc's job data: 16 bytes copied into the job. */
typedef struct {
    counter *c;
    uint64_t pad;
} w1_data;

static void w1desc_job(void *data) {
    w1_job(((w1_data *)data)->c);
}

/* w1 with a desc and 16 bytes of inline data. */
__attribute__((noinline)) void w1desc_iteration(jobsys_system *sys, counter *c) {
    jobsys_job_desc d = JOBSYS_JOB_DESC_INIT;
    d.data_size = sizeof(w1_data);
    for (int i = 0; i < W1_JOBS; i++) {
        w1_data data = {c, (uint64_t)i};
        jobsys_handle h;
        CHECK_OK(jobsys_schedule(sys, &d, w1desc_job, &data, &h));
        CHECK_OK(jobsys_complete(sys, h));
    }
}

/* w1 with a desc naming one dependency: the previous (finished) job. */
__attribute__((noinline)) void w1dep_iteration(jobsys_system *sys, counter *c) {
    jobsys_handle prev;
    CHECK_OK(jobsys_schedule(sys, NULL, w1_job, c, &prev));
    CHECK_OK(jobsys_complete(sys, prev));
    atomic_fetch_sub(&c->n, 1);
    jobsys_job_desc d = JOBSYS_JOB_DESC_INIT;
    d.deps = &prev;
    d.ndeps = 1;
    for (int i = 0; i < W1_JOBS; i++) {
        jobsys_handle h;
        CHECK_OK(jobsys_schedule(sys, &d, w1_job, c, &h));
        CHECK_OK(jobsys_complete(sys, h));
        prev = h;
    }
}

static int bench_w1(const char *mode, unsigned samples) {
    jobsys_system *sys = create(0);
    static counter c;
    void (*iteration)(jobsys_system *, counter *) = w1_iteration;
    if (strcmp(mode, "w1desc") == 0) iteration = w1desc_iteration;
    if (strcmp(mode, "w1dep") == 0) iteration = w1dep_iteration;
    printf("mode=%s workers=0 jobs=%d ns_per_job=", mode, W1_JOBS);
    for (unsigned i = 0; i < samples + 1; i++) {
        uint_fast64_t before = atomic_load(&c.n);
        double t0 = now_ns();
        iteration(sys, &c);
        double ns = now_ns() - t0;
        if (atomic_load(&c.n) - before != W1_JOBS) {
            fprintf(stderr, "w1: a job was lost or repeated\n");
            return 1;
        }
        if (i > 0) printf("%s%.2f", i > 1 ? "," : "", ns / W1_JOBS);
    }
    printf("\n");
    CHECK_OK(jobsys_destroy(sys));
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 5 && strcmp(argv[1], "threads") == 0)
        return bench_threads((unsigned)atoi(argv[2]), strtoul(argv[3], NULL, 10), atoi(argv[4]));
    if (argc == 3 && (strcmp(argv[1], "w1") == 0 || strcmp(argv[1], "w1desc") == 0 || strcmp(argv[1], "w1dep") == 0))
        return bench_w1(argv[1], (unsigned)atoi(argv[2]));
    fprintf(stderr, "usage: capi_bench threads T JOBS WORKERS | capi_bench w1|w1desc|w1dep SAMPLES\n");
    return 2;
}
