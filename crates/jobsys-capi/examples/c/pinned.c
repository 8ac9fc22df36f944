/*
 * A render thread that runs its own jobs, through the jobsys C API:
 *
 *   main thread (game loop), each frame:      render thread, each frame:
 *     simulate (parallel_for, any thread)       jobsys_run_pinned: what is ready
 *     upload  ----pinned to render------+        jobsys_complete(present): helps
 *     draw (after simulate) --pinned----+          with simulate, runs draw and
 *     present (after draw) ---pinned----+          present when they are ready
 *
 * The render thread registers itself (jobsys_register_thread) and so gets a
 * thread index; jobs pinned to it ({JOBSYS_PIN_THREAD, index}) run on it and
 * nowhere else, in jobsys_run_pinned or while it waits in jobsys_complete.
 * In frame CANCELLED_FRAME the main thread drops the frame's render work
 * (say, the window was minimised): jobsys_cancel on the group of its three
 * pinned jobs. They never run, their release callbacks still run (so the
 * frame data, shared with simulate by a reference count, is freed), and the
 * render thread's wait reports JOBSYS_ERR_CANCELLED.
 *
 * The printed line is the same on every run, with any number of workers,
 * and equal (after "(C)") to the one examples/cpp/pinned.cpp prints
 * (tests/c_programs.rs checks both).
 *
 * Build (after `cargo build -p jobsys-capi --release`, from crates/jobsys-capi):
 *   cc -std=c11 -Wall -Wextra -Werror -Iinclude examples/c/pinned.c \
 *      ../../target/release/libjobsys_capi.a -lpthread -ldl -lm -o pinned
 */
#include "jobsys.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#define OBJECTS 4096u
#define FRAMES 8u
#define CANCELLED_FRAME 5u

static void check(jobsys_error e, const char *what) {
    if (e != JOBSYS_OK) {
        fprintf(stderr, "%s: %s: %s\n", what, jobsys_error_name(e), jobsys_last_error_message());
        exit(1);
    }
}

static jobsys_system *js;

/* One frame's data: written by simulate, read by the render jobs. Two
 * references, dropped by the release callbacks of simulate and present
 * (which run also for cancelled jobs): the last one frees it. */
struct frame {
    atomic_int refs;
    uint64_t number;
    uint64_t objects[OBJECTS];
    uint64_t uploaded;
    uint64_t drawn;
};

/* What the render thread did, read by main after joining it. */
static struct {
    int32_t index;               /* its thread index */
    atomic_uint pinned_elsewhere; /* pinned jobs that ran on another thread: must stay 0 */
    atomic_uint pinned_ran;
    uint64_t checksum;
    unsigned drawn, cancelled;
} render;

/* The mailbox main posts each frame's `present` handle to. */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int posted;                  /* frames posted; -1: quit */
    int presented;               /* frames the render thread finished */
    jobsys_handle present;
} mailbox = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, {0, 0}};

static void on_render_thread(void) {
    int32_t i;
    check(jobsys_thread_index(js, &i), "jobsys_thread_index");
    if (i != render.index) atomic_fetch_add(&render.pinned_elsewhere, 1);
    atomic_fetch_add(&render.pinned_ran, 1);
}

static void simulate(void *data, size_t begin, size_t end) {
    struct frame *f = data;
    for (size_t i = begin; i < end; i++)
        f->objects[i] = (f->number + 1) * UINT64_C(0x9E3779B97F4A7C15) ^ ((uint64_t)i * i);
}

static void upload(void *data) {
    struct frame *f = data;
    on_render_thread();
    f->uploaded = f->number * 3 + 1;
}

static void draw(void *data) {
    struct frame *f = data;
    on_render_thread();
    uint64_t h = f->uploaded;
    for (uint32_t i = 0; i < OBJECTS; i++) h = (h ^ f->objects[i]) * UINT64_C(0x100000001b3);
    f->drawn = h;
}

static void present(void *data) {
    struct frame *f = data;
    on_render_thread();
    render.checksum = (render.checksum ^ f->drawn) * UINT64_C(0x100000001b3);
}

static void unref_frame(void *data) {
    struct frame *f = data;
    if (atomic_fetch_sub(&f->refs, 1) == 1) free(f);
}

static void *render_thread(void *arg) {
    (void)arg;
    uint32_t index;
    check(jobsys_register_thread(js, &index), "jobsys_register_thread");
    render.index = (int32_t)index;
    pthread_mutex_lock(&mailbox.mu);
    mailbox.presented = -1; /* tells main the index is set */
    pthread_cond_broadcast(&mailbox.cv);
    for (int frame = 0;; frame++) {
        while (mailbox.posted == frame) pthread_cond_wait(&mailbox.cv, &mailbox.mu);
        if (mailbox.posted < 0) break;
        jobsys_handle present_h = mailbox.present;
        pthread_mutex_unlock(&mailbox.mu);

        uint32_t ready;
        check(jobsys_run_pinned(js, &ready), "jobsys_run_pinned"); /* the frame's upload, at least */
        jobsys_error e = jobsys_complete(js, present_h);
        if (e == JOBSYS_ERR_CANCELLED) {
            render.cancelled++;
        } else {
            check(e, "jobsys_complete(present)");
            render.drawn++;
        }

        pthread_mutex_lock(&mailbox.mu);
        mailbox.presented = frame + 1;
        pthread_cond_broadcast(&mailbox.cv);
    }
    pthread_mutex_unlock(&mailbox.mu);
    return NULL;
}

int main(void) {
    check(jobsys_create(NULL, &js), "jobsys_create");
    pthread_t thread;
    if (pthread_create(&thread, NULL, render_thread, NULL) != 0) return 1;
    pthread_mutex_lock(&mailbox.mu);
    while (mailbox.presented != -1) pthread_cond_wait(&mailbox.cv, &mailbox.mu);
    pthread_mutex_unlock(&mailbox.mu);
    const jobsys_pin on_render = {JOBSYS_PIN_THREAD, (uint32_t)render.index};

    /* simulate runs anywhere; upload, draw and present only on the render thread. */
    jobsys_job_desc sim_desc = JOBSYS_JOB_DESC_INIT;
    sim_desc.name = "simulate";
    sim_desc.priority = JOBSYS_PRIORITY_HIGH;
    sim_desc.release = unref_frame;
    jobsys_job_desc pinned = JOBSYS_JOB_DESC_INIT;
    pinned.flags = JOBSYS_JOB_PINNED;
    pinned.pin = on_render;
    for (uint64_t n = 0; n < FRAMES; n++) {
        struct frame *f = calloc(1, sizeof *f);
        if (f == NULL) return 1;
        atomic_init(&f->refs, 2);
        f->number = n;
        jobsys_handle sim, render_jobs[3], group;
        check(jobsys_parallel_for(js, &sim_desc, 0, OBJECTS, 256, simulate, f, &sim), "simulate");
        jobsys_job_desc d = pinned;
        check(jobsys_schedule(js, &d, upload, f, &render_jobs[0]), "upload");
        jobsys_handle before_draw[2] = {sim, render_jobs[0]};
        d.deps = before_draw;
        d.ndeps = 2;
        check(jobsys_schedule(js, &d, draw, f, &render_jobs[1]), "draw");
        d.name = "present";
        d.release = unref_frame;
        d.deps = &render_jobs[1];
        d.ndeps = 1;
        check(jobsys_schedule(js, &d, present, f, &render_jobs[2]), "present");
        if (n == CANCELLED_FRAME) {
            /* The render thread has not seen this frame yet: nothing of it started. */
            bool stopped;
            check(jobsys_combine(js, render_jobs, 3, &group), "jobsys_combine");
            check(jobsys_cancel(js, group, &stopped), "jobsys_cancel");
            if (!stopped) return 1; /* cannot happen: the render thread has not seen it */
            /* simulate (not in the group) still runs; its release drops the last reference. */
        }
        pthread_mutex_lock(&mailbox.mu);
        mailbox.present = render_jobs[2];
        mailbox.posted = (int)n + 1;
        pthread_cond_broadcast(&mailbox.cv);
        while (mailbox.presented != (int)n + 1) pthread_cond_wait(&mailbox.cv, &mailbox.mu);
        pthread_mutex_unlock(&mailbox.mu);
    }
    pthread_mutex_lock(&mailbox.mu);
    mailbox.posted = -1;
    pthread_cond_broadcast(&mailbox.cv);
    pthread_mutex_unlock(&mailbox.mu);
    pthread_join(thread, NULL);
    check(jobsys_destroy(js), "jobsys_destroy");

    printf("pinned (C): %u frames, %u drawn, %u cancelled, %u pinned jobs on the render thread, %u elsewhere, "
           "checksum %016" PRIx64 "\n",
           FRAMES, render.drawn, render.cancelled, atomic_load(&render.pinned_ran),
           atomic_load(&render.pinned_elsewhere), render.checksum);
    return 0;
}
