/*
 * jobsys_profiler_callbacks from C: a recording table (every event appended
 * under a mutex, with the OS thread it came from), then checks:
 * - user_data reaches every callback;
 * - every worker's thread_start ("jobsys-worker-<w>", thread index w,
 *   1..workers) and thread_stop, once each, and the creating thread's start
 *   (thread index 0); each OS thread's events all carry the index of its
 *   start and none come after its stop;
 * - a job pinned to each worker w ({JOBSYS_PIN_WORKER, w}) sees
 *   jobsys_thread_index w, and its begin and end report thread w (one
 *   numbering: docs/engine.md, "Thread index");
 * - every named job: exactly one begin and one end, same id, same name,
 *   same OS thread, a ready for that id before its begin, and its body ran
 *   inside its own begin/end on that thread (a thread-local stack the
 *   callbacks push and pop);
 * - per OS thread, job, wait and sleep begins/ends nest like brackets;
 * - a sleep seen on a worker (waited for, not timed), wakes and steals name
 *   known threads;
 * - frames 0 and 1 from jobsys_frame_begin/end, on the creating thread;
 * - active_workers from jobsys_set_active_workers;
 * - a NULL table, an all-NULL table, a table with only job_begin, and a
 *   table whose size is 0 or too small (JOBSYS_ERR_CONFIG).
 * Prints "profiler_test: ok". Argument: the number of jobs (default 200).
 */
#define _POSIX_C_SOURCE 200112L /* nanosleep, clock_gettime */
#include "jobsys.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"

enum kind {
    THREAD_START, THREAD_STOP, JOB_READY, JOB_BEGIN, JOB_END, STEAL, WAIT_BEGIN, WAIT_END,
    SLEEP_BEGIN, SLEEP_END, WAKE, FRAME_BEGIN, FRAME_END, ACTIVE_WORKERS
};

typedef struct event {
    enum kind kind;
    uint32_t thread;   /* the callback's thread argument */
    int os_thread;     /* which OS thread called (this test's numbering) */
    uint64_t value;    /* job id, victim, wakee, frame, count */
    const char *name;  /* job_begin/end: the pointer as given */
    size_t len;
    char copy[64];     /* thread_start: a copy of the name */
} event;

#define MAX_EVENTS 400000
static event *events;
static size_t nevents;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int the_user_data;
static atomic_int os_threads;
static atomic_int bad_user_data;
static atomic_int sleeps_on_workers;
static uint32_t workers_n;

/* Per OS thread: its number here, and the names of the jobs whose begin was
 * called and not yet their end (innermost last). */
static _Thread_local int tls_os_thread = -1;
static _Thread_local const char *tls_open[64];
static _Thread_local size_t tls_open_len[64];
static _Thread_local int tls_depth;

static int os_thread(void) {
    if (tls_os_thread < 0) tls_os_thread = atomic_fetch_add(&os_threads, 1);
    return tls_os_thread;
}

static void record(void *ud, enum kind k, uint32_t thread, uint64_t value, const char *name,
                   size_t len) {
    if (ud != &the_user_data) atomic_fetch_add(&bad_user_data, 1);
    int me = os_thread();
    pthread_mutex_lock(&lock);
    if (nevents < MAX_EVENTS) {
        event *e = &events[nevents++];
        memset(e, 0, sizeof *e);
        e->kind = k;
        e->thread = thread;
        e->os_thread = me;
        e->value = value;
        e->name = name;
        e->len = len;
        if (k == THREAD_START) {
            size_t n = len < sizeof e->copy - 1 ? len : sizeof e->copy - 1;
            memcpy(e->copy, name, n);
        }
    }
    pthread_mutex_unlock(&lock);
}

static void on_thread_start(void *ud, uint32_t t, const char *name, size_t len) {
    record(ud, THREAD_START, t, 0, name, len);
}
static void on_thread_stop(void *ud, uint32_t t) { record(ud, THREAD_STOP, t, 0, NULL, 0); }
static void on_job_ready(void *ud, uint32_t t, uint64_t job) {
    record(ud, JOB_READY, t, job, NULL, 0);
}
static void on_job_begin(void *ud, uint32_t t, uint64_t job, const char *name, size_t len) {
    CHECK(tls_depth < 64);
    tls_open[tls_depth] = name;
    tls_open_len[tls_depth++] = len;
    record(ud, JOB_BEGIN, t, job, name, len);
}
static void on_job_end(void *ud, uint32_t t, uint64_t job, const char *name, size_t len) {
    CHECK(tls_depth > 0);
    tls_depth--;
    record(ud, JOB_END, t, job, name, len);
}
static void on_steal(void *ud, uint32_t t, uint32_t victim) {
    record(ud, STEAL, t, victim, NULL, 0);
}
static void on_wait_begin(void *ud, uint32_t t, uint64_t job) {
    record(ud, WAIT_BEGIN, t, job, NULL, 0);
}
static void on_wait_end(void *ud, uint32_t t, uint64_t job) {
    record(ud, WAIT_END, t, job, NULL, 0);
}
static void on_sleep_begin(void *ud, uint32_t t) {
    if (t >= 1 && t <= workers_n) atomic_fetch_add(&sleeps_on_workers, 1);
    record(ud, SLEEP_BEGIN, t, 0, NULL, 0);
}
static void on_sleep_end(void *ud, uint32_t t) { record(ud, SLEEP_END, t, 0, NULL, 0); }
static void on_wake(void *ud, uint32_t t, uint32_t wakee) { record(ud, WAKE, t, wakee, NULL, 0); }
static void on_frame_begin(void *ud, uint32_t t, uint64_t f) {
    record(ud, FRAME_BEGIN, t, f, NULL, 0);
}
static void on_frame_end(void *ud, uint32_t t, uint64_t f) { record(ud, FRAME_END, t, f, NULL, 0); }
static void on_active_workers(void *ud, uint32_t t, uint32_t n) {
    record(ud, ACTIVE_WORKERS, t, n, NULL, 0);
}

/* A job: checks that its own begin is the innermost open one on this thread. */
typedef struct job {
    char name[16];
    atomic_int runs;
    atomic_int inside_own_begin;
} job;

static void job_fn(void *data) {
    job *j = data;
    atomic_fetch_add(&j->runs, 1);
    if (tls_depth > 0 && tls_open_len[tls_depth - 1] == strlen(j->name) &&
        memcmp(tls_open[tls_depth - 1], j->name, strlen(j->name)) == 0)
        atomic_fetch_add(&j->inside_own_begin, 1);
    volatile uint64_t x = 0;
    for (int i = 0; i < 2000; i++) x += (uint64_t)i * i;
}

/* A job pinned to a worker: notes the thread index it runs on. */
typedef struct pinned_job {
    jobsys_system *sys;
    char name[16];
    int32_t index;
} pinned_job;

static void pinned_fn(void *data) {
    pinned_job *p = data;
    OK(jobsys_thread_index(p->sys, &p->index));
}

static void pfor_fn(void *data, size_t b, size_t e) {
    atomic_uint_fast64_t *sum = data;
    for (size_t i = b; i < e; i++) atomic_fetch_add(sum, i);
}

static int name_is(const event *e, const char *s) {
    return e->len == strlen(s) && memcmp(e->name, s, e->len) == 0;
}

static jobsys_profiler_callbacks full_table(void) {
    jobsys_profiler_callbacks cb = {.size = sizeof cb};
    cb.user_data = &the_user_data;
    cb.thread_start = on_thread_start;
    cb.thread_stop = on_thread_stop;
    cb.job_ready = on_job_ready;
    cb.job_begin = on_job_begin;
    cb.job_end = on_job_end;
    cb.steal = on_steal;
    cb.wait_begin = on_wait_begin;
    cb.wait_end = on_wait_end;
    cb.sleep_begin = on_sleep_begin;
    cb.sleep_end = on_sleep_end;
    cb.wake = on_wake;
    cb.frame_begin = on_frame_begin;
    cb.frame_end = on_frame_end;
    cb.active_workers = on_active_workers;
    return cb;
}

static void run_recorded(int njobs) {
    const uint32_t W = 3;
    workers_n = W;
    jobsys_profiler_callbacks cb = full_table();
    jobsys_config config;
    OK(jobsys_config_init(&config));
    config.workers = (int32_t)W;
    config.idle_policy = JOBSYS_IDLE_SPIN_THEN_SLEEP;
    config.spin_us = 0; /* idle workers sleep at once */
    config.profiler = &cb;
    jobsys_system *sys = NULL;
    OK(jobsys_create(&config, &sys));
    memset(&cb, 0xAB, sizeof cb); /* copied: the system must not read it again */

    job *jobs = calloc((size_t)njobs, sizeof *jobs);
    jobsys_handle *hs = calloc((size_t)njobs + 1, sizeof *hs);
    CHECK(jobs && hs);
    atomic_uint_fast64_t sum = 0;
    for (int frame = 0; frame < 2; frame++) {
        OK(jobsys_frame_begin(sys));
        int half = njobs / 2, lo = frame ? half : 0, hi = frame ? njobs : half;
        for (int i = lo; i < hi; i++) {
            snprintf(jobs[i].name, sizeof jobs[i].name, "job-%d", i);
            jobsys_job_desc d = JOBSYS_JOB_DESC_INIT;
            d.name = jobs[i].name;
            if (i > lo && i % 4 == 0) { /* some jobs depend on the one before */
                d.deps = &hs[i - 1];
                d.ndeps = 1;
            }
            OK(jobsys_schedule(sys, &d, job_fn, &jobs[i], &hs[i]));
        }
        jobsys_job_desc pd = JOBSYS_JOB_DESC_INIT;
        pd.name = "pfor";
        OK(jobsys_parallel_for(sys, &pd, 0, 1000, 10, pfor_fn, &sum, &hs[njobs]));
        jobsys_handle all;
        OK(jobsys_combine(sys, &hs[lo], (size_t)(hi - lo), &all));
        OK(jobsys_complete(sys, all));
        OK(jobsys_complete(sys, hs[njobs]));
        OK(jobsys_frame_end(sys));
    }
    CHECK(sum == 2 * 999 * 1000 / 2);
    /* One job pinned to each worker, by its thread index. */
    pinned_job pinned[3];
    for (uint32_t w = 1; w <= W; w++) {
        pinned_job *p = &pinned[w - 1];
        p->sys = sys;
        p->index = -1;
        snprintf(p->name, sizeof p->name, "pinned-%u", w);
        jobsys_job_desc d = JOBSYS_JOB_DESC_INIT;
        d.name = p->name;
        d.flags = JOBSYS_JOB_PINNED;
        d.pin = (jobsys_pin){JOBSYS_PIN_WORKER, w};
        jobsys_handle h;
        OK(jobsys_schedule(sys, &d, pinned_fn, p, &h));
        OK(jobsys_complete(sys, h));
    }
    OK(jobsys_set_active_workers(sys, 1));
    OK(jobsys_set_active_workers(sys, W));
    /* Wait (bounded) until a worker went to sleep: spin_us = 0 makes idle
     * workers sleep as soon as they find nothing; this is a condition, not
     * a timing guess. */
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    while (atomic_load(&sleeps_on_workers) == 0) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        CHECK(now.tv_sec - start.tv_sec < 30);
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    OK(jobsys_destroy(sys));

    /* ---- checks (no callback can run any more: the system is gone) ---- */
    CHECK(nevents < MAX_EVENTS);
    CHECK(atomic_load(&bad_user_data) == 0);
    int nos = atomic_load(&os_threads);
    uint32_t *index_of = malloc(sizeof(uint32_t) * (size_t)nos);
    int *started = calloc((size_t)nos, sizeof(int));
    int *stopped = calloc((size_t)nos, sizeof(int));
    int worker_starts[4] = {0}, worker_stops[4] = {0}; /* by thread index 1..3 */
    uint32_t max_thread = 0;
    int main_os = tls_os_thread;
    CHECK(index_of && started && stopped && main_os >= 0);
    for (size_t i = 0; i < nevents; i++) {
        const event *e = &events[i];
        if (e->thread > max_thread) max_thread = e->thread;
        CHECK(!stopped[e->os_thread]); /* nothing after a thread's stop */
        if (e->kind == THREAD_START) {
            CHECK(!started[e->os_thread]);
            started[e->os_thread] = 1;
            index_of[e->os_thread] = e->thread;
            if (e->thread >= 1 && e->thread <= W) {
                char want[32];
                snprintf(want, sizeof want, "jobsys-worker-%u", e->thread);
                CHECK(strcmp(e->copy, want) == 0);
                worker_starts[e->thread]++;
            }
            continue;
        }
        CHECK(started[e->os_thread]); /* the start comes first */
        CHECK(e->thread == index_of[e->os_thread]);
        if (e->kind == THREAD_STOP) {
            stopped[e->os_thread] = 1;
            if (e->thread >= 1 && e->thread <= W) worker_stops[e->thread]++;
        }
    }
    for (uint32_t w = 1; w <= W; w++) CHECK(worker_starts[w] == 1 && worker_stops[w] == 1);
    CHECK(started[main_os] && index_of[main_os] == 0 && !stopped[main_os]);

    /* The job pinned to worker w: thread index w inside it, and its begin
     * and end on thread w. */
    for (uint32_t w = 1; w <= W; w++) {
        CHECK(pinned[w - 1].index == (int32_t)w);
        int seen = 0;
        for (size_t i = 0; i < nevents; i++) {
            const event *e = &events[i];
            if ((e->kind == JOB_BEGIN || e->kind == JOB_END) && name_is(e, pinned[w - 1].name)) {
                CHECK(e->thread == w);
                seen++;
            }
        }
        CHECK(seen == 2);
    }

    /* Brackets per OS thread. */
    for (int t = 0; t < nos; t++) {
        enum kind stack[256];
        uint64_t ids[256];
        int depth = 0;
        for (size_t i = 0; i < nevents; i++) {
            const event *e = &events[i];
            if (e->os_thread != t) continue;
            enum kind k = e->kind;
            if (k == JOB_BEGIN || k == WAIT_BEGIN || k == SLEEP_BEGIN) {
                CHECK(depth < 256);
                stack[depth] = k;
                ids[depth++] = e->value;
            } else if (k == JOB_END || k == WAIT_END || k == SLEEP_END) {
                CHECK(depth > 0);
                depth--;
                CHECK(stack[depth] == k - 1);
                CHECK(ids[depth] == e->value);
            } else if (k == THREAD_STOP) {
                CHECK(depth == 0);
            }
        }
        CHECK(depth == 0);
    }

    /* Every named job: one begin and one end, paired, ready first, its body
     * inside its own begin. */
    for (int j = 0; j < njobs; j++) {
        CHECK(atomic_load(&jobs[j].runs) == 1);
        CHECK(atomic_load(&jobs[j].inside_own_begin) == 1);
        const event *b = NULL, *en = NULL;
        size_t bi = 0;
        int begins = 0, ends = 0;
        for (size_t i = 0; i < nevents; i++) {
            const event *e = &events[i];
            if ((e->kind == JOB_BEGIN || e->kind == JOB_END) && name_is(e, jobs[j].name)) {
                if (e->kind == JOB_BEGIN) begins++, b = e, bi = i;
                else ends++, en = e;
            }
        }
        CHECK(begins == 1 && ends == 1);
        CHECK(b->value == en->value && b->os_thread == en->os_thread && b->name == en->name);
        int ready = 0;
        for (size_t i = 0; i < bi; i++)
            if (events[i].kind == JOB_READY && events[i].value == b->value) ready = 1;
        CHECK(ready);
    }

    /* Frames, active workers, sleeps, wakes, steals. */
    int frames[2][2] = {{0}}, active1 = 0, activeW = 0, worker_sleeps = 0;
    for (size_t i = 0; i < nevents; i++) {
        const event *e = &events[i];
        if (e->kind == FRAME_BEGIN || e->kind == FRAME_END) {
            CHECK(e->value < 2 && e->os_thread == main_os);
            frames[e->value][e->kind == FRAME_END]++;
        }
        if (e->kind == ACTIVE_WORKERS) {
            active1 += e->value == 1;
            activeW += e->value == W;
        }
        if (e->kind == SLEEP_BEGIN && e->thread >= 1 && e->thread <= W) worker_sleeps++;
        if (e->kind == WAKE || e->kind == STEAL) CHECK(e->value <= max_thread);
    }
    CHECK(frames[0][0] == 1 && frames[0][1] == 1 && frames[1][0] == 1 && frames[1][1] == 1);
    size_t fb0 = 0, fe0 = 0, fb1 = 0, fe1 = 0;
    for (size_t i = 0; i < nevents; i++) {
        const event *e = &events[i];
        if (e->kind == FRAME_BEGIN) *(e->value ? &fb1 : &fb0) = i;
        if (e->kind == FRAME_END) *(e->value ? &fe1 : &fe0) = i;
    }
    CHECK(fb0 < fe0 && fe0 < fb1 && fb1 < fe1);
    CHECK(active1 == 1 && activeW == 1);
    CHECK(worker_sleeps >= 1);
    free(index_of);
    free(started);
    free(stopped);
    free(jobs);
    free(hs);
}

static atomic_int begins_only;
static void count_begin(void *ud, uint32_t t, uint64_t job, const char *name, size_t len) {
    (void)t, (void)job, (void)name, (void)len;
    CHECK(ud == NULL);
    atomic_fetch_add(&begins_only, 1);
}

static void nothing(void *data) { (void)data; }

/* Create a 1-worker system with `cb` (may be NULL), run one job, destroy. */
static jobsys_error run_one(const jobsys_profiler_callbacks *cb) {
    jobsys_config config;
    OK(jobsys_config_init(&config));
    config.workers = 1;
    config.profiler = cb;
    jobsys_system *sys = NULL;
    jobsys_error e = jobsys_create(&config, &sys);
    if (e != JOBSYS_OK) return e;
    jobsys_handle h;
    OK(jobsys_schedule(sys, NULL, nothing, NULL, &h));
    OK(jobsys_complete(sys, h));
    OK(jobsys_destroy(sys));
    return JOBSYS_OK;
}

static void tables(void) {
    /* NULL table, and a table with every callback NULL. */
    CHECK(run_one(NULL) == JOBSYS_OK);
    jobsys_profiler_callbacks none = {.size = sizeof none};
    CHECK(run_one(&none) == JOBSYS_OK);
    /* Only job_begin set: called for the one job, user_data NULL. */
    jobsys_profiler_callbacks one = {.size = sizeof one};
    one.job_begin = count_begin;
    CHECK(run_one(&one) == JOBSYS_OK);
    CHECK(atomic_load(&begins_only) == 1);
    /* size forgotten, or smaller than this version's: rejected. */
    jobsys_profiler_callbacks zero = full_table();
    zero.size = 0;
    CHECK(run_one(&zero) == JOBSYS_ERR_CONFIG);
    CHECK(strstr(jobsys_last_error_message(), "sizeof(jobsys_profiler_callbacks)") != NULL);
    zero.size = sizeof zero - sizeof(void *);
    CHECK(run_one(&zero) == JOBSYS_ERR_CONFIG);
}

int main(int argc, char **argv) {
    int njobs = argc > 1 ? atoi(argv[1]) : 200;
    CHECK(njobs >= 8);
    events = malloc(sizeof(event) * MAX_EVENTS);
    CHECK(events != NULL);
    run_recorded(njobs);
    tables();
    free(events);
    printf("profiler_test: ok\n");
    return 0;
}
