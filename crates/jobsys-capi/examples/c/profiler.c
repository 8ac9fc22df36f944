/*
 * A profiler bridge through jobsys_profiler_callbacks: each callback adds to
 * its thread's row (names, jobs run, time in jobs, waits, sleeps), and at
 * the end the program prints a per-thread timeline summary. A real bridge
 * would forward the same calls to its profiler (zone begin/end, thread
 * names, frame marks). The C++ twin is examples/cpp/profiler.cpp.
 *
 * Prints "profiler (C): 3 frames, 48 jobs, every begin ended", then one
 * line per thread (its jobs include jobsys's own, such as the combine
 * groups; the counts and times vary from run to run).
 *
 * Build (after `cargo build -p jobsys-capi --release`, from crates/jobsys-capi):
 *   cc -std=c11 -Wall -Wextra -Werror -Iinclude examples/c/profiler.c \
 *      ../../target/release/libjobsys_capi.a -lpthread -ldl -lm -o profiler
 */
#define _POSIX_C_SOURCE 200112L /* clock_gettime */
#include "jobsys.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_THREADS 64
#define FRAMES 3
#define JOBS_PER_FRAME 16

/* One row per thread index (docs/engine.md, "Thread index"). A row is written only by its own
 * thread (callbacks run on the thread the event happened on) and read
 * after jobsys_destroy, which joined the workers. */
typedef struct row {
    char name[32];
    uint64_t jobs, job_ns, waits, sleeps;
    uint64_t begun_ns; /* when the running job began (jobs here do not nest) */
    int depth;
} row;

typedef struct profiler {
    row rows[MAX_THREADS];
    atomic_uint_fast64_t begins, ends, named; /* named: ends of this program's jobs */
} profiler;

static const char *names[4] = {"physics", "animation", "ai", "audio"};

/* Whether (name, len) is one of `names` (job names are not NUL-terminated;
 * other jobs are jobsys's own, e.g. the group jobsys_combine makes). */
static int is_ours(const char *name, size_t len) {
    for (int i = 0; i < 4; i++)
        if (strlen(names[i]) == len && memcmp(names[i], name, len) == 0) return 1;
    return 0;
}

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void thread_start(void *ud, uint32_t thread, const char *name, size_t len) {
    profiler *p = ud;
    if (thread >= MAX_THREADS) return;
    size_t n = len < sizeof p->rows[thread].name - 1 ? len : sizeof p->rows[thread].name - 1;
    memcpy(p->rows[thread].name, name, n); /* the name is valid only during the call */
    p->rows[thread].name[n] = '\0';
}

static void job_begin(void *ud, uint32_t thread, uint64_t job, const char *name, size_t len) {
    profiler *p = ud;
    (void)job, (void)name, (void)len;
    atomic_fetch_add(&p->begins, 1);
    if (thread < MAX_THREADS && p->rows[thread].depth++ == 0) p->rows[thread].begun_ns = now_ns();
}

static void job_end(void *ud, uint32_t thread, uint64_t job, const char *name, size_t len) {
    profiler *p = ud;
    (void)job;
    atomic_fetch_add(&p->ends, 1);
    if (is_ours(name, len)) atomic_fetch_add(&p->named, 1);
    if (thread >= MAX_THREADS) return;
    row *r = &p->rows[thread];
    r->jobs++;
    if (--r->depth == 0) r->job_ns += now_ns() - r->begun_ns;
}

static void wait_begin(void *ud, uint32_t thread, uint64_t job) {
    profiler *p = ud;
    (void)job;
    if (thread < MAX_THREADS) p->rows[thread].waits++;
}

static void sleep_begin(void *ud, uint32_t thread) {
    profiler *p = ud;
    if (thread < MAX_THREADS) p->rows[thread].sleeps++;
}

static void check(jobsys_error e, const char *what) {
    if (e != JOBSYS_OK) {
        fprintf(stderr, "%s: %s: %s\n", what, jobsys_error_name(e), jobsys_last_error_message());
        exit(1);
    }
}

static void work(void *data) {
    volatile uint64_t x = (uint64_t)(uintptr_t)data;
    for (int i = 0; i < 200000; i++) x = x * 6364136223846793005u + 1;
}

int main(void) {
    static profiler prof; /* zeroed */
    jobsys_profiler_callbacks cb = {.size = sizeof cb};
    cb.user_data = &prof;
    cb.thread_start = thread_start;
    cb.job_begin = job_begin;
    cb.job_end = job_end;
    cb.wait_begin = wait_begin;
    cb.sleep_begin = sleep_begin;

    jobsys_config config;
    check(jobsys_config_init(&config), "jobsys_config_init");
    config.workers = 2;
    config.profiler = &cb; /* copied: cb may go out of scope after jobsys_create */
    jobsys_system *sys = NULL;
    check(jobsys_create(&config, &sys), "jobsys_create");
    for (int f = 0; f < FRAMES; f++) {
        check(jobsys_frame_begin(sys), "jobsys_frame_begin");
        jobsys_handle hs[JOBS_PER_FRAME];
        for (int i = 0; i < JOBS_PER_FRAME; i++) {
            jobsys_job_desc d = JOBSYS_JOB_DESC_INIT;
            d.name = names[i % 4];
            check(jobsys_schedule(sys, &d, work, (void *)(uintptr_t)i, &hs[i]), "jobsys_schedule");
        }
        jobsys_handle all;
        check(jobsys_combine(sys, hs, JOBS_PER_FRAME, &all), "jobsys_combine");
        check(jobsys_complete(sys, all), "jobsys_complete");
        check(jobsys_frame_end(sys), "jobsys_frame_end");
    }
    check(jobsys_destroy(sys), "jobsys_destroy");

    uint64_t begins = atomic_load(&prof.begins), ends = atomic_load(&prof.ends);
    printf("profiler (C): %d frames, %llu jobs, %s\n", FRAMES,
           (unsigned long long)atomic_load(&prof.named),
           begins == ends ? "every begin ended" : "UNBALANCED");
    for (int t = 0; t < MAX_THREADS; t++) {
        const row *r = &prof.rows[t];
        if (!r->name[0] && !r->jobs && !r->waits) continue;
        printf("thread %d %s: %llu jobs, %.3f ms in jobs, %llu waits, %llu sleeps\n", t,
               r->name[0] ? r->name : "(unnamed)", (unsigned long long)r->jobs, r->job_ns / 1e6,
               (unsigned long long)r->waits, (unsigned long long)r->sleeps);
    }
    return begins == ends ? 0 : 1;
}
