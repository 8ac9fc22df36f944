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

static void physics(void *data, uint32_t begin, uint32_t end) {
    (void)data;
    for (uint32_t i = begin; i < end; i++)
        world.vel[i] = world.vel[i] * UINT64_C(6364136223846793005) + (world.seed ^ i);
}

static void ai(void *data) {
    (void)data;
    for (int k = 0; k < 256; k++)
        world.ai = world.ai * UINT64_C(2862933555777941757) + UINT64_C(3037000493) + world.seed;
}

static void animation(void *data, uint32_t begin, uint32_t end) {
    (void)data;
    for (uint32_t i = begin; i < end; i++) world.pos[i] += (world.vel[i] >> 17) + i;
}

static void render(void *data) {
    (void)data;
    uint64_t h = world.checksum;
    for (uint32_t i = 0; i < PARTICLES; i++) h = (h ^ world.pos[i]) * UINT64_C(0x100000001b3);
    world.checksum = h ^ world.ai;
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

    static const jobsys_job_desc input_desc = {"input", JOBSYS_PRIORITY_HIGH, NULL};
    static const jobsys_job_desc physics_desc = {"physics", JOBSYS_PRIORITY_HIGH, NULL};
    static const jobsys_job_desc ai_desc = {"ai", JOBSYS_PRIORITY_LOW, NULL};
    static const jobsys_job_desc animation_desc = {"animation", JOBSYS_PRIORITY_NORMAL, NULL};
    static const jobsys_job_desc render_desc = {"render", JOBSYS_PRIORITY_NORMAL, NULL};

    for (world.frame = 0; world.frame < FRAMES; world.frame++) {
        jobsys_handle in, phys, brain, anim, frame;
        check(jobsys_schedule(js, &input_desc, input, NULL, &in), "input");
        check(jobsys_parallel_for_after(js, &physics_desc, &in, 1, 0, PARTICLES, 0, physics, NULL, &phys), "physics");
        check(jobsys_schedule_after(js, &ai_desc, &in, 1, ai, NULL, &brain), "ai");
        check(jobsys_parallel_for_after(js, &animation_desc, &phys, 1, 0, PARTICLES, 256, animation, NULL, &anim), "animation");
        jobsys_handle before_render[2] = {anim, brain};
        check(jobsys_schedule_after(js, &render_desc, before_render, 2, render, NULL, &frame), "render");
        check(jobsys_complete(js, frame), "jobsys_complete");
    }

    jobsys_stats stats;
    check(jobsys_get_stats(js, &stats), "jobsys_get_stats");
    check(jobsys_destroy(js), "jobsys_destroy");
    printf("frame graph (C): %u frames, %u particles, %" PRIu64 " jobs, checksum %016" PRIx64 "\n",
           FRAMES, PARTICLES, stats.jobs_scheduled, world.checksum);
    return 0;
}
