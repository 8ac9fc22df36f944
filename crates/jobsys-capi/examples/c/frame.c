/*
 * A small frame graph through the jobsys C API, run for a few frames:
 *
 *   input --> physics (parallel_for) --> animation (parallel_for) --+
 *     |                                                              +--> render
 *     +-----> ai ----------------------------------------------------+
 *
 * Every job's result is deterministic, so the printed checksum is the same
 * on every run, with any number of workers, and equal to the one
 * examples/cpp/frame.cpp prints (tests/c_programs.rs checks both).
 *
 * Build (after `cargo build -p jobsys-capi --release`, from crates/jobsys-capi):
 *   cc -std=c11 -Wall -Wextra -Werror -Iinclude examples/c/frame.c \
 *      ../../target/release/libjobsys_capi.a -lpthread -ldl -lm -o frame
 */
#include "jobsys.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#define PARTICLES 10000u
#define FRAMES 10u

/* Stops the program with the error's name and message. */
static void check(jobsys_error e, const char *what) {
    if (e != JOBSYS_OK) {
        fprintf(stderr, "%s: %s: %s\n", what, jobsys_error_name(e), jobsys_last_error_message());
        exit(1);
    }
}

/* The world the jobs work on. Each job touches only what the graph lets it. */
static struct {
    uint64_t pos[PARTICLES];
    uint64_t vel[PARTICLES];
    uint64_t frame;
    uint64_t seed;
    uint64_t ai;
    uint64_t checksum;
} world;

static void input(void *data) {
    (void)data;
    world.seed = world.checksum ^ ((world.frame + 1) * UINT64_C(0x9E3779B97F4A7C15));
}

static void physics(void *data, size_t begin, size_t end) {
    (void)data;
    for (size_t i = begin; i < end; i++)
        world.vel[i] = world.vel[i] * UINT64_C(6364136223846793005) + (world.seed ^ i);
}

static void ai(void *data) {
    (void)data;
    for (int k = 0; k < 256; k++)
        world.ai = world.ai * UINT64_C(2862933555777941757) + UINT64_C(3037000493) + world.seed;
}

static void animation(void *data, size_t begin, size_t end) {
    (void)data;
    for (size_t i = begin; i < end; i++) world.pos[i] += (world.vel[i] >> 17) + i;
}

static void render(void *data) {
    (void)data;
    uint64_t h = world.checksum;
    for (uint32_t i = 0; i < PARTICLES; i++) h = (h ^ world.pos[i]) * UINT64_C(0x100000001b3);
    world.checksum = h ^ world.ai;
}

/* A job's name, priority and dependencies, the rest defaults. */
static jobsys_job_desc desc(const char *name, jobsys_priority priority, const jobsys_handle *deps,
                            size_t ndeps) {
    jobsys_job_desc d = JOBSYS_JOB_DESC_INIT;
    d.name = name;
    d.priority = priority;
    d.deps = deps;
    d.ndeps = ndeps;
    return d;
}

int main(void) {
    jobsys_config config;
    check(jobsys_config_init(&config), "jobsys_config_init");
    jobsys_system *js;
    check(jobsys_create(&config, &js), "jobsys_create");

    for (uint32_t i = 0; i < PARTICLES; i++) {
        world.pos[i] = i;
        world.vel[i] = (uint64_t)i * i;
    }
    world.ai = 1;
    world.checksum = UINT64_C(0xcbf29ce484222325);

    for (world.frame = 0; world.frame < FRAMES; world.frame++) {
        jobsys_handle in, phys, brain, anim, frame;
        jobsys_job_desc d = desc("input", JOBSYS_PRIORITY_HIGH, NULL, 0);
        check(jobsys_schedule(js, &d, input, NULL, &in), "input");
        d = desc("physics", JOBSYS_PRIORITY_HIGH, &in, 1);
        check(jobsys_parallel_for(js, &d, 0, PARTICLES, 0, physics, NULL, &phys), "physics");
        d = desc("ai", JOBSYS_PRIORITY_LOW, &in, 1);
        check(jobsys_schedule(js, &d, ai, NULL, &brain), "ai");
        d = desc("animation", JOBSYS_PRIORITY_NORMAL, &phys, 1);
        check(jobsys_parallel_for(js, &d, 0, PARTICLES, 256, animation, NULL, &anim), "animation");
        jobsys_handle before_render[2] = {anim, brain};
        d = desc("render", JOBSYS_PRIORITY_NORMAL, before_render, 2);
        check(jobsys_schedule(js, &d, render, NULL, &frame), "render");
        check(jobsys_complete(js, frame), "jobsys_complete");
    }

    jobsys_stats stats;
    check(jobsys_get_stats(js, &stats), "jobsys_get_stats");
    check(jobsys_destroy(js), "jobsys_destroy");
    printf("frame graph (C): %u frames, %u particles, %" PRIu64 " jobs, checksum %016" PRIx64 "\n",
           FRAMES, PARTICLES, stats.jobs_scheduled, world.checksum);
    return 0;
}
