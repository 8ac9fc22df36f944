/*
 * Calls from a job's release callback that must end: jobsys_destroy on the
 * job's own system (JOBSYS_ERR_BAD_STATE, not a livelock or a hang) and
 * jobsys_complete on the job's own handle (JOBSYS_ERR_WAIT_ON_SELF, not a
 * hang), whether the job ran, was skipped because a dependency failed, was
 * cancelled before it started (the callback then runs inside jobsys_cancel),
 * or is a parallel_for. Run by tests/wait_ends.rs.
 *
 * Usage: wait_ends SCENARIO WORKERS. Prints "wait_ends SCENARIO workers=N:
 * ok" at the end; a failed check exits with status 1; a call that never
 * returns is ended by an alarm after WATCHDOG_SECS (status 2, naming the
 * scenario).
 */
#define _POSIX_C_SOURCE 200112L /* alarm, sched_yield, write */
#include "jobsys.h"

#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WATCHDOG_SECS 30

#define CHECK(cond)                                                              \
    do {                                                                         \
        if (!(cond)) {                                                           \
            fprintf(stderr, "%s:%d: %s: check failed: %s (last error: %s)\n",    \
                    __FILE__, __LINE__, scenario, #cond,                         \
                    jobsys_last_error_message());                                \
            exit(1);                                                             \
        }                                                                        \
    } while (0)

#define EXPECT(got, code)                                                        \
    do {                                                                         \
        jobsys_error e_ = (got);                                                 \
        if (e_ != (code)) {                                                      \
            fprintf(stderr, "%s:%d: %s: %s gave %s, expected %s\n", __FILE__,    \
                    __LINE__, scenario, #got, jobsys_error_name(e_),             \
                    jobsys_error_name(code));                                    \
            exit(1);                                                             \
        }                                                                        \
    } while (0)

#define OK(call) EXPECT(call, JOBSYS_OK)

static const char *scenario = "?";
static char hung_message[256];

static void on_alarm(int sig) {
    (void)sig;
    /* write and _exit are async-signal-safe. */
    ssize_t n = write(2, hung_message, strlen(hung_message));
    (void)n;
    _exit(2);
}

/* Shared by the main thread, the jobs and their release callbacks. */
struct job_ctx {
    jobsys_system *sys;
    jobsys_handle self;     /* the job's own handle, published before `ready` */
    atomic_int ready;       /* the handle is published: jobs may proceed */
    atomic_int calls;       /* job / piece calls */
    atomic_int released;    /* release callbacks */
    jobsys_error in_release; /* what the call in the release callback gave */
};

/* Until the job's own handle is published. */
static void wait_ready(struct job_ctx *c) {
    while (!atomic_load(&c->ready)) sched_yield();
}

static void gated_job(void *data) {
    struct job_ctx *c = data;
    wait_ready(c);
    atomic_fetch_add(&c->calls, 1);
}

static void gated_piece(void *data, size_t begin, size_t end) {
    struct job_ctx *c = data;
    wait_ready(c);
    atomic_fetch_add(&c->calls, (int)(end - begin));
}

/* The dependency of the skip scenarios: fails once the handles are out. */
static void gated_failing_job(void *data) {
    struct job_ctx *c = data;
    wait_ready(c);
    jobsys_fail("the dependency fails");
}

static void destroy_in_release(void *data) {
    struct job_ctx *c = data;
    c->in_release = jobsys_destroy(c->sys);
    atomic_fetch_add(&c->released, 1);
}

static void wait_on_self_in_release(void *data) {
    struct job_ctx *c = data;
    c->in_release = jobsys_complete(c->sys, c->self);
    atomic_fetch_add(&c->released, 1);
}

static jobsys_system *create(int32_t workers) {
    jobsys_config cfg;
    OK(jobsys_config_init(&cfg));
    cfg.workers = workers;
    jobsys_system *sys = NULL;
    OK(jobsys_create(&cfg, &sys));
    CHECK(sys != NULL);
    return sys;
}

/* What job the scenario schedules, and what its release callback calls. */
enum shape { SINGLE, SINGLE_SKIPPED, LOOP, LOOP_SKIPPED, SINGLE_CANCELLED, LOOP_CANCELLED };

static void run(enum shape shape, jobsys_release_fn release, jobsys_error want,
                int32_t workers) {
    struct job_ctx c;
    memset(&c, 0, sizeof c);
    c.sys = create(workers);
    jobsys_job_desc desc = JOBSYS_JOB_DESC_INIT;
    desc.name = "released";
    desc.release = release;
    jobsys_handle dep, h;
    jobsys_job_desc after = desc; /* the same, after dep */
    after.deps = &dep;
    after.ndeps = 1;
    int skipped = shape == SINGLE_SKIPPED || shape == LOOP_SKIPPED;
    int cancelled = shape == SINGLE_CANCELLED || shape == LOOP_CANCELLED;
    /* The cancel scenarios' dependency: holds the job back until after the cancel. */
    struct job_ctx gate;
    memset(&gate, 0, sizeof gate);
    if (skipped) OK(jobsys_schedule(c.sys, NULL, gated_failing_job, &c, &dep));
    if (cancelled) OK(jobsys_schedule(c.sys, NULL, gated_job, &gate, &dep));
    switch (shape) {
    case SINGLE:
        OK(jobsys_schedule(c.sys, &desc, gated_job, &c, &h));
        break;
    case SINGLE_SKIPPED:
        OK(jobsys_schedule(c.sys, &after, gated_job, &c, &h));
        break;
    case LOOP:
        OK(jobsys_parallel_for(c.sys, &desc, 0, 8, 1, gated_piece, &c, &h));
        break;
    case LOOP_SKIPPED:
    case LOOP_CANCELLED:
        OK(jobsys_parallel_for(c.sys, &after, 0, 8, 1, gated_piece, &c, &h));
        break;
    case SINGLE_CANCELLED:
        OK(jobsys_schedule(c.sys, &after, gated_job, &c, &h));
        break;
    }
    c.self = h;
    atomic_store(&c.ready, 1);
    if (cancelled) {
        bool stopped = false;
        OK(jobsys_cancel(c.sys, h, &stopped));
        CHECK(stopped);
        /* The release callback ran in the call, on this thread. */
        CHECK(atomic_load(&c.released) == 1);
        atomic_store(&gate.ready, 1);
        EXPECT(jobsys_complete(c.sys, h), JOBSYS_ERR_CANCELLED);
        OK(jobsys_complete(c.sys, dep));
        CHECK(atomic_load(&c.calls) == 0 && atomic_load(&gate.calls) == 1);
    } else if (skipped) {
        EXPECT(jobsys_complete(c.sys, h), JOBSYS_ERR_DEPENDENCY_FAILED);
        CHECK(atomic_load(&c.calls) == 0);
    } else {
        OK(jobsys_complete(c.sys, h));
        CHECK(atomic_load(&c.calls) == (shape == LOOP ? 8 : 1));
    }
    /* The release callback ran once, before the job counted as complete. */
    CHECK(atomic_load(&c.released) == 1);
    EXPECT(c.in_release, want);
    /* The system is whole and still works. */
    jobsys_handle again;
    struct job_ctx d;
    memset(&d, 0, sizeof d);
    atomic_store(&d.ready, 1);
    OK(jobsys_schedule(c.sys, NULL, gated_job, &d, &again));
    OK(jobsys_complete(c.sys, again));
    CHECK(atomic_load(&d.calls) == 1);
    OK(jobsys_destroy(c.sys));
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s SCENARIO WORKERS\n", argv[0]);
        return 64;
    }
    scenario = argv[1];
    int32_t workers = (int32_t)atoi(argv[2]);
    snprintf(hung_message, sizeof hung_message,
             "wait_ends %s workers=%d: did not finish within %d s (a call that never returns)\n",
             scenario, (int)workers, WATCHDOG_SECS);
    signal(SIGALRM, on_alarm);
    alarm(WATCHDOG_SECS);

    if (strcmp(scenario, "destroy_in_release") == 0) {
        run(SINGLE, destroy_in_release, JOBSYS_ERR_BAD_STATE, workers);
    } else if (strcmp(scenario, "destroy_in_release_skipped") == 0) {
        run(SINGLE_SKIPPED, destroy_in_release, JOBSYS_ERR_BAD_STATE, workers);
    } else if (strcmp(scenario, "destroy_in_release_loop") == 0) {
        run(LOOP, destroy_in_release, JOBSYS_ERR_BAD_STATE, workers);
    } else if (strcmp(scenario, "wait_in_release") == 0) {
        run(SINGLE, wait_on_self_in_release, JOBSYS_ERR_WAIT_ON_SELF, workers);
    } else if (strcmp(scenario, "wait_in_release_skipped") == 0) {
        run(SINGLE_SKIPPED, wait_on_self_in_release, JOBSYS_ERR_WAIT_ON_SELF, workers);
    } else if (strcmp(scenario, "wait_in_release_loop") == 0) {
        run(LOOP, wait_on_self_in_release, JOBSYS_ERR_WAIT_ON_SELF, workers);
    } else if (strcmp(scenario, "wait_in_release_loop_skipped") == 0) {
        run(LOOP_SKIPPED, wait_on_self_in_release, JOBSYS_ERR_WAIT_ON_SELF, workers);
    } else if (strcmp(scenario, "destroy_in_release_cancelled") == 0) {
        run(SINGLE_CANCELLED, destroy_in_release, JOBSYS_ERR_BAD_STATE, workers);
    } else if (strcmp(scenario, "destroy_in_release_loop_cancelled") == 0) {
        run(LOOP_CANCELLED, destroy_in_release, JOBSYS_ERR_BAD_STATE, workers);
    } else if (strcmp(scenario, "wait_in_release_cancelled") == 0) {
        run(SINGLE_CANCELLED, wait_on_self_in_release, JOBSYS_ERR_WAIT_ON_SELF, workers);
    } else if (strcmp(scenario, "wait_in_release_loop_cancelled") == 0) {
        run(LOOP_CANCELLED, wait_on_self_in_release, JOBSYS_ERR_WAIT_ON_SELF, workers);
    } else {
        fprintf(stderr, "unknown scenario %s\n", scenario);
        return 64;
    }
    printf("wait_ends %s workers=%d: ok\n", scenario, (int)workers);
    return 0;
}
