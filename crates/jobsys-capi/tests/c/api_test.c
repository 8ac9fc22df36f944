/*
 * The C API from C: every function in jobsys.h is called here (tests/header.rs
 * checks that), with good and bad input. After each bad call the system must
 * still work (check_usable). Run by tests/c_programs.rs, also under valgrind.
 *
 * Prints the sizes of the header's structs (compared with the Rust side) and
 * "api_test: ok" at the end; any failed check exits with status 1.
 */
#define _POSIX_C_SOURCE 200112L /* nanosleep, setenv */
#include "jobsys.h"

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"

/* ---- Descs ---------------------------------------------------------------
 * A desc with a name, a priority and a release callback, the rest the
 * defaults; and jobsys_schedule / jobsys_parallel_for with dependencies, a
 * pin or the BATCHED flag set in a copy of *desc (NULL: the defaults). */

static jobsys_job_desc desc_of(const char *name, jobsys_priority priority, jobsys_release_fn release) {
    jobsys_job_desc d = JOBSYS_JOB_DESC_INIT;
    d.name = name;
    d.priority = priority;
    d.release = release;
    return d;
}

static jobsys_job_desc with(const jobsys_job_desc *desc, uint32_t flags, jobsys_pin pin,
                            const jobsys_handle *deps, size_t ndeps) {
    jobsys_job_desc d = JOBSYS_JOB_DESC_INIT;
    if (desc != NULL) d = *desc;
    d.flags |= flags;
    d.pin = pin;
    d.deps = deps;
    d.ndeps = ndeps;
    return d;
}

static const jobsys_pin no_pin = {JOBSYS_PIN_MAIN, 0};

static jobsys_error schedule_after(jobsys_system *sys, const jobsys_job_desc *desc,
                                   const jobsys_handle *deps, size_t ndeps, jobsys_job_fn fn,
                                   void *data, jobsys_handle *out) {
    jobsys_job_desc d = with(desc, 0, no_pin, deps, ndeps);
    return jobsys_schedule(sys, &d, fn, data, out);
}

static jobsys_error parallel_for_after(jobsys_system *sys, const jobsys_job_desc *desc,
                                       const jobsys_handle *deps, size_t ndeps, size_t begin,
                                       size_t end, size_t batch, jobsys_range_fn fn, void *data,
                                       jobsys_handle *out) {
    jobsys_job_desc d = with(desc, 0, no_pin, deps, ndeps);
    return jobsys_parallel_for(sys, &d, begin, end, batch, fn, data, out);
}

static jobsys_error schedule_batched_after(jobsys_system *sys, const jobsys_job_desc *desc,
                                           const jobsys_handle *deps, size_t ndeps,
                                           jobsys_job_fn fn, void *data, jobsys_handle *out) {
    jobsys_job_desc d = with(desc, JOBSYS_JOB_BATCHED, no_pin, deps, ndeps);
    return jobsys_schedule(sys, &d, fn, data, out);
}

static jobsys_error schedule_batched(jobsys_system *sys, const jobsys_job_desc *desc,
                                     jobsys_job_fn fn, void *data, jobsys_handle *out) {
    return schedule_batched_after(sys, desc, NULL, 0, fn, data, out);
}

static jobsys_error schedule_pinned_after(jobsys_system *sys, jobsys_pin pin,
                                          const jobsys_job_desc *desc, const jobsys_handle *deps,
                                          size_t ndeps, jobsys_job_fn fn, void *data,
                                          jobsys_handle *out) {
    jobsys_job_desc d = with(desc, JOBSYS_JOB_PINNED, pin, deps, ndeps);
    return jobsys_schedule(sys, &d, fn, data, out);
}

static jobsys_error schedule_pinned(jobsys_system *sys, jobsys_pin pin, const jobsys_job_desc *desc,
                                    jobsys_job_fn fn, void *data, jobsys_handle *out) {
    return schedule_pinned_after(sys, pin, desc, NULL, 0, fn, data, out);
}

static atomic_int ran;      /* jobs that ran */
static atomic_int released; /* release callbacks */

static void count_job(void *data) {
    (void)data;
    atomic_fetch_add(&ran, 1);
}

static void count_release(void *data) {
    (void)data;
    atomic_fetch_add(&released, 1);
}

static void sum_range(void *data, size_t begin, size_t end) {
    atomic_uint_fast64_t *sum = data;
    for (size_t i = begin; i < end; i++) atomic_fetch_add(sum, i);
}

static void fail_job(void *data) { jobsys_fail((const char *)data); }

static void fail_range(void *data, size_t begin, size_t end) {
    (void)data;
    if (begin <= 50 && 50 < end) jobsys_fail("piece with 50");
}

static void sleep_ms(long ms) {
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

static void slow_count(void *data) {
    sleep_ms(1);
    atomic_fetch_add((atomic_int *)data, 1);
}

static void slow_job(void *data) {
    (void)data;
    sleep_ms(1);
    atomic_fetch_add(&ran, 1);
}

/* A job that schedules two more jobs on its own system. */
static void spawning_job(void *data) {
    jobsys_system *sys = data;
    jobsys_handle h;
    CHECK(jobsys_schedule(sys, NULL, slow_job, NULL, &h) == JOBSYS_OK);
    CHECK(schedule_after(sys, NULL, &h, 1, count_job, NULL, NULL) == JOBSYS_OK);
    atomic_fetch_add(&ran, 1);
}

struct call_from_job {
    jobsys_system *sys;
    jobsys_handle target;
    jobsys_error result;
};

static void destroy_from_job(void *data) {
    struct call_from_job *c = data;
    c->result = jobsys_destroy(c->sys);
}

static void complete_from_job(void *data) {
    struct call_from_job *c = data;
    c->result = jobsys_complete(c->sys, c->target);
}

static void fail_outside_job(void *data) {
    /* A release callback is not a job. */
    jobsys_error *result = data;
    *result = jobsys_fail("not in a job");
}

static void count_into(void *data) { atomic_fetch_add((atomic_int *)data, 1); }

/* The system still schedules, runs and completes jobs. */
static void check_usable(jobsys_system *sys) {
    atomic_int count = 0;
    jobsys_handle a, b;
    OK(jobsys_schedule(sys, NULL, count_into, &count, &a));
    OK(schedule_after(sys, NULL, &a, 1, count_into, &count, &b));
    OK(jobsys_complete(sys, b));
    CHECK(atomic_load(&count) == 2);
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

static void test_errors_and_config(void) {
    CHECK(strcmp(jobsys_error_name(JOBSYS_ERR_INVALID_HANDLE), "JOBSYS_ERR_INVALID_HANDLE") == 0);
    CHECK(strcmp(jobsys_error_name(JOBSYS_OK), "JOBSYS_OK") == 0);
    CHECK(strcmp(jobsys_error_name((jobsys_error)999), "JOBSYS_ERR_UNKNOWN") == 0);

    EXPECT(jobsys_config_init(NULL), JOBSYS_ERR_NULL_ARGUMENT);
    MESSAGE_HAS("jobsys_config_init: config is NULL");

    jobsys_config cfg;
    OK(jobsys_config_init(&cfg));
    CHECK(cfg.workers == -1 && cfg.idle_policy == JOBSYS_IDLE_DEFAULT && cfg.spin_us == 30);
    CHECK(cfg.priority_inheritance && !cfg.pin_workers && !cfg.exclude_efficiency_cores);
    CHECK(cfg.profiler == NULL); /* no profiler callbacks by default */
    EXPECT(jobsys_create(&cfg, NULL), JOBSYS_ERR_NULL_ARGUMENT);

    /* A zeroed config (not from jobsys_config_init) is rejected, not read
     * as 0 workers without priority inheritance; nothing is written. */
    jobsys_system *sys = NULL;
    jobsys_config zeroed;
    memset(&zeroed, 0, sizeof zeroed);
    EXPECT(jobsys_create(&zeroed, &sys), JOBSYS_ERR_CONFIG);
    MESSAGE_HAS("config was not initialised with jobsys_config_init");
    CHECK(sys == NULL);
    jobsys_config copy = cfg; /* a copy of an initialised config is fine */
    copy.workers = 0;
    OK(jobsys_create(&copy, &sys));
    OK(jobsys_destroy(sys));
    sys = NULL;

    cfg.workers = -2;
    EXPECT(jobsys_create(&cfg, &sys), JOBSYS_ERR_CONFIG);
    cfg.workers = 100000;
    EXPECT(jobsys_create(&cfg, &sys), JOBSYS_ERR_CONFIG);
    MESSAGE_HAS("100000 workers");
    cfg.workers = 1;
    cfg.idle_policy = (jobsys_idle_policy)42;
    EXPECT(jobsys_create(&cfg, &sys), JOBSYS_ERR_CONFIG);
    cfg.idle_policy = JOBSYS_IDLE_ADAPTIVE;
    cfg.adaptive_cpu_cap = 2.0f;
    EXPECT(jobsys_create(&cfg, &sys), JOBSYS_ERR_CONFIG);
    MESSAGE_HAS("cpu_cap");
    cfg.adaptive_cpu_cap = -0.5f;
    EXPECT(jobsys_create(&cfg, &sys), JOBSYS_ERR_CONFIG);
    cfg.adaptive_cpu_cap = NAN;
    EXPECT(jobsys_create(&cfg, &sys), JOBSYS_ERR_CONFIG);
    MESSAGE_HAS("cpu_cap");
    CHECK(sys == NULL);

    /* Every policy, and NULL config (the defaults), gives a working system. */
    const jobsys_idle_policy policies[] = {JOBSYS_IDLE_DEFAULT, JOBSYS_IDLE_SPIN_THEN_SLEEP,
                                           JOBSYS_IDLE_WHIPPING_BOY, JOBSYS_IDLE_ALWAYS_SPIN,
                                           JOBSYS_IDLE_ADAPTIVE};
    for (size_t i = 0; i < sizeof policies / sizeof policies[0]; i++) {
        OK(jobsys_config_init(&cfg));
        cfg.workers = 1;
        cfg.idle_policy = policies[i];
        cfg.spin_us = 0;
        cfg.priority_inheritance = (i % 2) == 0;
        OK(jobsys_create(&cfg, &sys));
        uint32_t workers = 0;
        OK(jobsys_workers(sys, &workers));
        CHECK(workers == 1);
        check_usable(sys);
        OK(jobsys_destroy(sys));
    }
    OK(jobsys_create(NULL, &sys));
    check_usable(sys);
    OK(jobsys_destroy(sys));
}

/* Restore (or unset) an environment variable saved with save_env. */
static void restore_env(const char *name, const char *saved) {
    if (saved != NULL) {
        CHECK(setenv(name, saved, 1) == 0);
    } else {
        CHECK(unsetenv(name) == 0);
    }
}

static char *save_env(const char *name) {
    const char *v = getenv(name);
    if (v == NULL) return NULL;
    char *copy = malloc(strlen(v) + 1);
    CHECK(copy != NULL);
    strcpy(copy, v);
    return copy;
}

/* Bad JOBSYS_WORKERS / JOBSYS_IDLE_POLICY values are CONFIG errors when the
 * config defers to them (workers -1, JOBSYS_IDLE_DEFAULT), and are ignored
 * when it does not. Runs before any system exists, so no other thread reads
 * the environment while it changes. */
/* JOBSYS_SHUFFLE: the order 8 independent jobs ran in at 0 workers. */
static int shuffle_order[8];
static int shuffle_ran;
static void record_order(void *data) {
    shuffle_order[shuffle_ran++] = (int)(intptr_t)data;
}
static void order_with_shuffle(const char *seed, int out[8]) {
    jobsys_config cfg;
    jobsys_system *sys = NULL;
    jobsys_handle hs[8], all;
    CHECK(setenv("JOBSYS_SHUFFLE", seed, 1) == 0);
    OK(jobsys_config_init(&cfg));
    cfg.workers = 0;
    OK(jobsys_create(&cfg, &sys));
    shuffle_ran = 0;
    for (int i = 0; i < 8; i++) OK(jobsys_schedule(sys, NULL, record_order, (void *)(intptr_t)i, &hs[i]));
    OK(jobsys_combine(sys, hs, 8, &all));
    OK(jobsys_complete(sys, all));
    CHECK(shuffle_ran == 8);
    memcpy(out, shuffle_order, sizeof shuffle_order);
    OK(jobsys_destroy(sys));
}

static void test_shuffle_environment(void) {
    char *saved = save_env("JOBSYS_SHUFFLE");
    jobsys_config cfg;
    jobsys_system *sys = NULL;
    int a[8], b[8];
    bool differ = false;
    order_with_shuffle("5", a);
    order_with_shuffle("5", b);
    CHECK(memcmp(a, b, sizeof a) == 0); /* a seed repeats its order */
    for (int seed = 6; seed < 16 && !differ; seed++) {
        char text[8];
        snprintf(text, sizeof text, "%d", seed);
        order_with_shuffle(text, b);
        differ = memcmp(a, b, sizeof a) != 0;
    }
    CHECK(differ); /* and seeds differ */

    OK(jobsys_config_init(&cfg));
    CHECK(setenv("JOBSYS_SHUFFLE", "sometimes", 1) == 0);
    EXPECT(jobsys_create(&cfg, &sys), JOBSYS_ERR_CONFIG);
    MESSAGE_HAS("JOBSYS_SHUFFLE=\"sometimes\" is not a shuffle seed");
    CHECK(sys == NULL);
    restore_env("JOBSYS_SHUFFLE", saved);
    free(saved);
}

static void test_environment(void) {
    char *workers = save_env("JOBSYS_WORKERS");
    char *policy = save_env("JOBSYS_IDLE_POLICY");
    jobsys_config cfg;
    jobsys_system *sys = NULL;
    OK(jobsys_config_init(&cfg));
    CHECK(unsetenv("JOBSYS_IDLE_POLICY") == 0);

    CHECK(setenv("JOBSYS_WORKERS", "lots", 1) == 0);
    EXPECT(jobsys_create(&cfg, &sys), JOBSYS_ERR_CONFIG);
    MESSAGE_HAS("JOBSYS_WORKERS=\"lots\"");
    CHECK(setenv("JOBSYS_WORKERS", "100000", 1) == 0);
    EXPECT(jobsys_create(&cfg, &sys), JOBSYS_ERR_CONFIG);
    MESSAGE_HAS("100000 workers");
    CHECK(sys == NULL);
    cfg.workers = 1; /* an explicit count wins over the variable */
    OK(jobsys_create(&cfg, &sys));
    check_usable(sys);
    OK(jobsys_destroy(sys));
    sys = NULL;

    CHECK(setenv("JOBSYS_IDLE_POLICY", "sometimes-spin", 1) == 0);
    EXPECT(jobsys_create(&cfg, &sys), JOBSYS_ERR_CONFIG);
    MESSAGE_HAS("\"sometimes-spin\" is not an idle policy");
    CHECK(sys == NULL);
    cfg.idle_policy = JOBSYS_IDLE_WHIPPING_BOY; /* an explicit policy wins */
    OK(jobsys_create(&cfg, &sys));
    check_usable(sys);
    OK(jobsys_destroy(sys));

    restore_env("JOBSYS_WORKERS", workers);
    restore_env("JOBSYS_IDLE_POLICY", policy);
    free(workers);
    free(policy);
}

static void test_null_arguments(jobsys_system *sys) {
    jobsys_handle h;
    jobsys_stats st;
    bool done;
    uint32_t n;
    OK(jobsys_schedule(sys, NULL, count_job, NULL, &h));

    EXPECT(jobsys_destroy(NULL), JOBSYS_ERR_NULL_ARGUMENT);
    MESSAGE_HAS("jobsys_destroy: system is NULL");
    EXPECT(jobsys_workers(NULL, &n), JOBSYS_ERR_NULL_ARGUMENT);
    EXPECT(jobsys_workers(sys, NULL), JOBSYS_ERR_NULL_ARGUMENT);
    EXPECT(jobsys_schedule(NULL, NULL, count_job, NULL, &h), JOBSYS_ERR_NULL_ARGUMENT);
    EXPECT(jobsys_parallel_for(NULL, NULL, 0, 10, 0, sum_range, NULL, &h), JOBSYS_ERR_NULL_ARGUMENT);
    EXPECT(jobsys_join(NULL, count_job, NULL, count_job, NULL), JOBSYS_ERR_NULL_ARGUMENT);
    EXPECT(jobsys_combine(NULL, &h, 1, &h), JOBSYS_ERR_NULL_ARGUMENT);
    EXPECT(jobsys_complete(NULL, h), JOBSYS_ERR_NULL_ARGUMENT);
    EXPECT(jobsys_is_complete(NULL, h, &done), JOBSYS_ERR_NULL_ARGUMENT);
    EXPECT(jobsys_flush(NULL, &n), JOBSYS_ERR_NULL_ARGUMENT);
    EXPECT(jobsys_hot_zone_begin(NULL), JOBSYS_ERR_NULL_ARGUMENT);
    EXPECT(jobsys_hot_zone_end(NULL), JOBSYS_ERR_NULL_ARGUMENT);
    EXPECT(jobsys_get_stats(NULL, &st), JOBSYS_ERR_NULL_ARGUMENT);
    EXPECT(jobsys_take_stats(NULL, &st), JOBSYS_ERR_NULL_ARGUMENT);
    EXPECT(jobsys_get_worker_stats(NULL, 0, &st), JOBSYS_ERR_NULL_ARGUMENT);
    jobsys_pin main_pin = {JOBSYS_PIN_MAIN, 0};
    int32_t index;
    EXPECT(jobsys_register_thread(NULL, &n), JOBSYS_ERR_NULL_ARGUMENT);
    EXPECT(jobsys_register_thread_pin(NULL, &main_pin), JOBSYS_ERR_NULL_ARGUMENT);
    EXPECT(jobsys_run_pinned(NULL, &n), JOBSYS_ERR_NULL_ARGUMENT);
    EXPECT(jobsys_thread_index(NULL, &index), JOBSYS_ERR_NULL_ARGUMENT);
    EXPECT(jobsys_cancel(NULL, h, &done), JOBSYS_ERR_NULL_ARGUMENT);
    EXPECT(jobsys_set_active_workers(NULL, 1), JOBSYS_ERR_NULL_ARGUMENT);
    EXPECT(jobsys_active_workers(NULL, &n), JOBSYS_ERR_NULL_ARGUMENT);

    /* NULL function, NULL out-parameters that are required, NULL arrays. */
    EXPECT(jobsys_schedule(sys, NULL, NULL, NULL, &h), JOBSYS_ERR_NULL_ARGUMENT);
    MESSAGE_HAS("fn is NULL");
    EXPECT(schedule_after(sys, NULL, &h, 1, NULL, NULL, &h), JOBSYS_ERR_NULL_ARGUMENT);
    EXPECT(schedule_batched(sys, NULL, NULL, NULL, &h), JOBSYS_ERR_NULL_ARGUMENT);
    EXPECT(jobsys_parallel_for(sys, NULL, 0, 10, 0, NULL, NULL, &h), JOBSYS_ERR_NULL_ARGUMENT);
    EXPECT(schedule_after(sys, NULL, NULL, 2, count_job, NULL, &h), JOBSYS_ERR_NULL_ARGUMENT);
    EXPECT(jobsys_join(sys, NULL, NULL, count_job, NULL), JOBSYS_ERR_NULL_ARGUMENT);
    MESSAGE_HAS("a is NULL");
    EXPECT(jobsys_join(sys, count_job, NULL, NULL, NULL), JOBSYS_ERR_NULL_ARGUMENT);
    MESSAGE_HAS("b is NULL");
    jobsys_job_desc copy = JOBSYS_JOB_DESC_INIT;
    copy.data_size = 8; /* a copy of 8 bytes of ... NULL */
    EXPECT(jobsys_schedule(sys, &copy, count_job, NULL, &h), JOBSYS_ERR_NULL_ARGUMENT);
    MESSAGE_HAS("data");
    EXPECT(jobsys_parallel_for(sys, &copy, 0, 10, 0, sum_range, NULL, &h), JOBSYS_ERR_NULL_ARGUMENT);
    EXPECT(jobsys_combine(sys, NULL, 2, &h), JOBSYS_ERR_NULL_ARGUMENT);
    EXPECT(jobsys_combine(sys, &h, 1, NULL), JOBSYS_ERR_NULL_ARGUMENT);
    EXPECT(jobsys_is_complete(sys, h, NULL), JOBSYS_ERR_NULL_ARGUMENT);
    EXPECT(jobsys_get_stats(sys, NULL), JOBSYS_ERR_NULL_ARGUMENT);
    EXPECT(schedule_pinned(sys, main_pin, NULL, NULL, NULL, &h), JOBSYS_ERR_NULL_ARGUMENT);
    EXPECT(schedule_pinned_after(sys, main_pin, NULL, NULL, 1, count_job, NULL, &h), JOBSYS_ERR_NULL_ARGUMENT);
    EXPECT(jobsys_thread_index(sys, NULL), JOBSYS_ERR_NULL_ARGUMENT);
    EXPECT(jobsys_register_thread_pin(sys, NULL), JOBSYS_ERR_NULL_ARGUMENT);
    EXPECT(jobsys_active_workers(sys, NULL), JOBSYS_ERR_NULL_ARGUMENT);
    OK(jobsys_complete(sys, h));

    /* NULL deps with ndeps 0, NULL out for fire-and-forget jobs. */
    static atomic_int fire_and_forget;
    OK(schedule_after(sys, NULL, NULL, 0, count_into, &fire_and_forget, NULL));
    OK(jobsys_schedule(sys, NULL, count_into, &fire_and_forget, NULL));
    while (atomic_load(&fire_and_forget) < 2) sleep_ms(1);
    OK(jobsys_combine(sys, NULL, 0, &h));
    OK(jobsys_is_complete(sys, h, &done));
    CHECK(done);
    check_usable(sys);
}

static void test_invalid_handles(jobsys_system *sys) {
    jobsys_handle zero = JOBSYS_HANDLE_NONE, good, h;
    bool done = false;
    int before = atomic_load(&ran);
    OK(jobsys_schedule(sys, NULL, count_job, NULL, &good));
    /* A generation the slot never had; an address inside the slot. */
    jobsys_handle bad_gen = good, bad_addr = good;
    bad_gen.gen += 1u << 30;
    bad_addr.id += 8;

    /* The zeroed handle names no job: complete at once, cancel does nothing. */
    OK(jobsys_complete(sys, zero));
    OK(jobsys_is_complete(sys, zero, &done));
    CHECK(done);
    bool stopped = true;
    OK(jobsys_cancel(sys, zero, &stopped));
    CHECK(!stopped);
    EXPECT(jobsys_complete(sys, bad_gen), JOBSYS_ERR_INVALID_HANDLE);
    MESSAGE_HAS("not a handle this system gave out");
    EXPECT(jobsys_complete(sys, bad_addr), JOBSYS_ERR_INVALID_HANDLE);
    EXPECT(jobsys_is_complete(sys, bad_gen, &done), JOBSYS_ERR_INVALID_HANDLE);
    EXPECT(jobsys_cancel(sys, bad_addr, &stopped), JOBSYS_ERR_INVALID_HANDLE);
    jobsys_handle deps[2] = {good, bad_gen};
    atomic_store(&released, 0);
    jobsys_job_desc desc = desc_of(NULL, JOBSYS_PRIORITY_NORMAL, count_release);
    EXPECT(schedule_after(sys, &desc, deps, 2, count_job, NULL, &h), JOBSYS_ERR_INVALID_HANDLE);
    EXPECT(parallel_for_after(sys, &desc, deps, 2, 0, 8, 0, sum_range, NULL, &h), JOBSYS_ERR_INVALID_HANDLE);
    EXPECT(schedule_batched_after(sys, &desc, deps, 2, count_job, NULL, &h), JOBSYS_ERR_INVALID_HANDLE);
    EXPECT(jobsys_combine(sys, deps, 2, &h), JOBSYS_ERR_INVALID_HANDLE);
    /* One dependency and a plain desc (the short path): a bad one is still
     * refused with its error, a zeroed one skipped. */
    EXPECT(schedule_after(sys, NULL, &bad_gen, 1, count_job, NULL, &h), JOBSYS_ERR_INVALID_HANDLE);
    MESSAGE_HAS("not a handle this system gave out");
    EXPECT(schedule_after(sys, NULL, &bad_addr, 1, count_job, NULL, &h), JOBSYS_ERR_INVALID_HANDLE);
    OK(schedule_after(sys, NULL, &zero, 1, count_job, NULL, &h));
    OK(jobsys_complete(sys, h));
    /* Release is not called for a failed call (jobsys_release_fn). */
    CHECK(atomic_load(&released) == 0);
    /* A zeroed dependency is skipped (also many of them, past the few
     * resolved on the stack), in a combine too. */
    jobsys_handle none_deps[20];
    memset(none_deps, 0, sizeof none_deps);
    none_deps[7] = good;
    OK(schedule_after(sys, NULL, none_deps, 2, count_job, NULL, &h));
    OK(jobsys_complete(sys, h));
    OK(schedule_after(sys, NULL, none_deps, 20, count_job, NULL, &h));
    OK(jobsys_complete(sys, h));
    OK(jobsys_combine(sys, none_deps, 3, &h));
    OK(jobsys_complete(sys, h));
    OK(jobsys_complete(sys, good));
    /* Nothing else was scheduled. */
    CHECK(atomic_load(&ran) == before + 4);

    /* A handle of another system, alive or destroyed. */
    jobsys_system *other = create(1);
    jobsys_handle theirs;
    OK(jobsys_schedule(other, NULL, count_job, NULL, &theirs));
    EXPECT(jobsys_complete(sys, theirs), JOBSYS_ERR_FOREIGN_HANDLE);
    MESSAGE_HAS("another");
    EXPECT(schedule_after(sys, NULL, &theirs, 1, count_job, NULL, &h), JOBSYS_ERR_FOREIGN_HANDLE);
    OK(jobsys_complete(other, theirs));
    OK(jobsys_destroy(other));
    EXPECT(jobsys_is_complete(sys, theirs, &done), JOBSYS_ERR_FOREIGN_HANDLE);

    /* Handles of jobs that finished long ago (their slots reused since)
     * read as complete. */
    jobsys_handle first;
    OK(jobsys_schedule(sys, NULL, count_job, NULL, &first));
    OK(jobsys_complete(sys, first));
    for (int i = 0; i < 200; i++) {
        OK(jobsys_schedule(sys, NULL, count_job, NULL, &h));
        OK(jobsys_complete(sys, h));
    }
    OK(jobsys_is_complete(sys, first, &done));
    CHECK(done);
    OK(jobsys_complete(sys, first));
    OK(schedule_after(sys, NULL, &first, 1, count_job, NULL, &h));
    OK(jobsys_complete(sys, h));
    check_usable(sys);
}

static void test_parallel_for(jobsys_system *sys) {
    const uint32_t batches[] = {0, 1, 7, 1000, 5000};
    for (size_t i = 0; i < sizeof batches / sizeof batches[0]; i++) {
        atomic_uint_fast64_t sum = 0;
        jobsys_handle h;
        OK(jobsys_parallel_for(sys, NULL, 10, 1010, batches[i], sum_range, &sum, &h));
        OK(jobsys_complete(sys, h));
        /* 10 + 11 + ... + 1009 */
        CHECK(atomic_load(&sum) == (uint64_t)(10 + 1009) * 1000 / 2);
    }
    /* begin > end is an error; an empty range is complete at once. */
    jobsys_handle h;
    bool done = false;
    EXPECT(jobsys_parallel_for(sys, NULL, 5, 4, 0, sum_range, NULL, &h), JOBSYS_ERR_INVALID_ARGUMENT);
    MESSAGE_HAS("begin 5 > end 4");
    atomic_store(&released, 0);
    jobsys_job_desc desc = desc_of("empty", JOBSYS_PRIORITY_HIGH, count_release);
    OK(jobsys_parallel_for(sys, &desc, 7, 7, 0, sum_range, NULL, &h));
    OK(jobsys_is_complete(sys, h, &done));
    CHECK(done);
    CHECK(atomic_load(&released) == 1);
    /* After dependencies, named, low priority. */
    atomic_uint_fast64_t sum = 0;
    jobsys_handle dep, pf;
    desc.name = "pfor";
    desc.priority = JOBSYS_PRIORITY_LOW;
    OK(jobsys_schedule(sys, NULL, slow_job, NULL, &dep));
    OK(parallel_for_after(sys, &desc, &dep, 1, 0, 100, 3, sum_range, &sum, &pf));
    OK(jobsys_complete(sys, pf));
    CHECK(atomic_load(&sum) == 99 * 100 / 2);
    CHECK(atomic_load(&released) == 2);
    check_usable(sys);
}

static void test_descs(jobsys_system *sys) {
    jobsys_handle h;
    jobsys_job_desc desc = desc_of("physics", JOBSYS_PRIORITY_HIGH, NULL);
    OK(jobsys_schedule(sys, &desc, count_job, NULL, &h));
    OK(jobsys_complete(sys, h));
    desc.priority = (jobsys_priority)7;
    EXPECT(jobsys_schedule(sys, &desc, count_job, NULL, &h), JOBSYS_ERR_INVALID_ARGUMENT);
    MESSAGE_HAS("priority = 7");
    /* A batched job takes a name and a priority like any other. */
    desc.priority = JOBSYS_PRIORITY_LOW;
    OK(schedule_batched(sys, &desc, count_job, NULL, &h));
    OK(jobsys_complete(sys, h));
    atomic_store(&released, 0);
    jobsys_job_desc rel = desc_of(NULL, JOBSYS_PRIORITY_NORMAL, count_release);
    OK(schedule_batched(sys, &rel, count_job, NULL, &h));
    OK(jobsys_complete(sys, h));
    CHECK(atomic_load(&released) == 1);
    check_usable(sys);
}

static void test_failures(jobsys_system *sys) {
    jobsys_handle bad, after, both, ok, pf;
    atomic_store(&released, 0);
    int before = atomic_load(&ran);
    jobsys_job_desc rel = desc_of("dependent", JOBSYS_PRIORITY_NORMAL, count_release);
    OK(jobsys_schedule(sys, NULL, fail_job, "boom", &bad));
    OK(schedule_after(sys, &rel, &bad, 1, count_job, NULL, &after));
    OK(jobsys_schedule(sys, NULL, count_job, NULL, &ok));
    jobsys_handle pair[2] = {ok, bad};
    OK(jobsys_combine(sys, pair, 2, &both));

    EXPECT(jobsys_complete(sys, bad), JOBSYS_ERR_JOB_FAILED);
    MESSAGE_HAS("boom");
    EXPECT(jobsys_complete(sys, bad), JOBSYS_ERR_JOB_FAILED); /* reported again */
    EXPECT(jobsys_complete(sys, after), JOBSYS_ERR_DEPENDENCY_FAILED);
    MESSAGE_HAS("boom");
    EXPECT(jobsys_complete(sys, both), JOBSYS_ERR_DEPENDENCY_FAILED);
    OK(jobsys_complete(sys, ok));
    bool done = false;
    OK(jobsys_is_complete(sys, after, &done));
    CHECK(done);
    /* The dependent did not run, but its data was released. */
    CHECK(atomic_load(&ran) == before + 1);
    CHECK(atomic_load(&released) == 1);
    /* A job scheduled after a failed one later still fails. */
    OK(schedule_after(sys, NULL, &bad, 1, count_job, NULL, &after));
    EXPECT(jobsys_complete(sys, after), JOBSYS_ERR_DEPENDENCY_FAILED);
    /* A failing parallel_for piece fails the whole loop. */
    OK(jobsys_parallel_for(sys, NULL, 0, 100, 10, fail_range, NULL, &pf));
    EXPECT(jobsys_complete(sys, pf), JOBSYS_ERR_JOB_FAILED);
    MESSAGE_HAS("piece with 50");
    /* jobsys_fail(NULL) inside a job: failed, with a generic message. */
    jobsys_handle anon;
    OK(jobsys_schedule(sys, NULL, fail_job, NULL, &anon));
    EXPECT(jobsys_complete(sys, anon), JOBSYS_ERR_JOB_FAILED);
    MESSAGE_HAS("no message given");
    /* A named job's failure names it, and so does its dependent's. */
    jobsys_handle named, named_after;
    jobsys_job_desc collide = desc_of("collide", JOBSYS_PRIORITY_NORMAL, NULL);
    OK(jobsys_schedule(sys, &collide, fail_job, "crash", &named));
    OK(schedule_after(sys, NULL, &named, 1, count_job, NULL, &named_after));
    EXPECT(jobsys_complete(sys, named), JOBSYS_ERR_JOB_FAILED);
    MESSAGE_HAS("the job \"collide\" failed: crash");
    EXPECT(jobsys_complete(sys, named_after), JOBSYS_ERR_DEPENDENCY_FAILED);
    MESSAGE_HAS("job \"collide\", failed: crash");
    /* Outside a job (here, and in a release callback) jobsys_fail is an error. */
    EXPECT(jobsys_fail("not in a job"), JOBSYS_ERR_BAD_STATE);
    jobsys_error from_release = JOBSYS_OK;
    jobsys_job_desc fail_in_release = desc_of(NULL, JOBSYS_PRIORITY_NORMAL, fail_outside_job);
    OK(jobsys_schedule(sys, &fail_in_release, count_job, &from_release, &ok));
    OK(jobsys_complete(sys, ok));
    CHECK(from_release == JOBSYS_ERR_BAD_STATE);
    EXPECT(jobsys_fail(NULL), JOBSYS_ERR_BAD_STATE);
    check_usable(sys);
}

static void test_calls_from_jobs(void) {
    /* No workers: a job runs only when this thread completes it. */
    jobsys_system *sys = create(0);
    struct call_from_job c = {sys, {0, 0}, JOBSYS_OK};
    jobsys_handle h;
    OK(jobsys_schedule(sys, NULL, complete_from_job, &c, &h));
    c.target = h;
    OK(jobsys_complete(sys, h));
    CHECK(c.result == JOBSYS_ERR_WAIT_ON_SELF);

    /* Waiting, inside a job, on a job that depends on it. */
    jobsys_handle dependent;
    OK(jobsys_schedule(sys, NULL, complete_from_job, &c, &h));
    OK(schedule_after(sys, NULL, &h, 1, count_job, NULL, &dependent));
    c.target = dependent;
    c.result = JOBSYS_OK;
    OK(jobsys_complete(sys, dependent));
    CHECK(c.result == JOBSYS_ERR_WAIT_ON_SELF);

    OK(jobsys_schedule(sys, NULL, destroy_from_job, &c, &h));
    OK(jobsys_complete(sys, h));
    CHECK(c.result == JOBSYS_ERR_BAD_STATE);
    check_usable(sys);
    OK(jobsys_destroy(sys));
}

static void test_batching_hot_zones_stats(jobsys_system *sys) {
    jobsys_handle hs[16], all, after;
    int before = atomic_load(&ran);
    OK(jobsys_hot_zone_begin(sys));
    OK(jobsys_hot_zone_begin(sys));
    for (int i = 0; i < 16; i++) OK(schedule_batched(sys, NULL, count_job, NULL, &hs[i]));
    OK(schedule_batched_after(sys, NULL, hs, 16, count_job, NULL, &after));
    uint32_t woken = 99;
    OK(jobsys_flush(sys, &woken));
    CHECK(woken <= 16);
    OK(jobsys_flush(sys, NULL));
    OK(jobsys_combine(sys, hs, 16, &all));
    OK(jobsys_complete(sys, all));
    OK(jobsys_complete(sys, after));
    CHECK(atomic_load(&ran) == before + 17);
    OK(jobsys_hot_zone_end(sys));
    OK(jobsys_hot_zone_end(sys));
    EXPECT(jobsys_hot_zone_end(sys), JOBSYS_ERR_BAD_STATE);
    MESSAGE_HAS("no hot zone is open");

    jobsys_stats st, frame, w0;
    OK(jobsys_get_stats(sys, &st));
    CHECK(st.workers == 2 && st.jobs_scheduled >= 17 && st.jobs_finished >= 17);
    OK(jobsys_take_stats(sys, &frame));
    OK(jobsys_take_stats(sys, &frame));
    CHECK(frame.jobs_scheduled < st.jobs_scheduled);
    /* Workers by thread index: 1 and 2; 0 (this thread) and 3 are none. */
    OK(jobsys_get_worker_stats(sys, 1, &w0));
    CHECK(w0.workers == 1);
    OK(jobsys_get_worker_stats(sys, 2, &w0));
    EXPECT(jobsys_get_worker_stats(sys, 0, &w0), JOBSYS_ERR_INVALID_ARGUMENT);
    MESSAGE_HAS("thread indices 1..=2");
    EXPECT(jobsys_get_worker_stats(sys, 3, &w0), JOBSYS_ERR_INVALID_ARGUMENT);
    check_usable(sys);
}

static void test_trace(void) {
    jobsys_config cfg;
    OK(jobsys_config_init(&cfg));
    cfg.workers = 1;
    cfg.trace = true; /* recording from the start */
    jobsys_system *sys;
    OK(jobsys_create(&cfg, &sys));
    EXPECT(jobsys_trace_write(sys, "unused.json"), JOBSYS_ERR_BAD_STATE);
    MESSAGE_HAS("no capture to write");
    EXPECT(jobsys_trace_start(sys), JOBSYS_ERR_BAD_STATE);
    jobsys_job_desc named = desc_of("traced job", JOBSYS_PRIORITY_NORMAL, NULL);
    jobsys_handle h;
    /* Two frames (tests/c_programs.rs finds both in the capture). */
    for (int frame = 0; frame < 2; frame++) {
        OK(jobsys_frame_begin(sys));
        OK(jobsys_schedule(sys, &named, count_job, NULL, &h));
        OK(jobsys_complete(sys, h));
        OK(jobsys_frame_end(sys));
    }
    EXPECT(jobsys_frame_begin(NULL), JOBSYS_ERR_NULL_ARGUMENT);
    EXPECT(jobsys_frame_end(NULL), JOBSYS_ERR_NULL_ARGUMENT);
    OK(jobsys_trace_stop(sys));
    /* Not recording: frame marks are no-ops. */
    OK(jobsys_frame_begin(sys));
    OK(jobsys_frame_end(sys));
    EXPECT(jobsys_trace_stop(sys), JOBSYS_ERR_BAD_STATE);
    EXPECT(jobsys_trace_start(NULL), JOBSYS_ERR_NULL_ARGUMENT);
    EXPECT(jobsys_trace_stop(NULL), JOBSYS_ERR_NULL_ARGUMENT);
    EXPECT(jobsys_trace_write(NULL, "x.json"), JOBSYS_ERR_NULL_ARGUMENT);
    EXPECT(jobsys_trace_write(sys, NULL), JOBSYS_ERR_NULL_ARGUMENT);
    EXPECT(jobsys_trace_write(sys, "/nonexistent-dir/trace.json"), JOBSYS_ERR_IO);
    MESSAGE_HAS("/nonexistent-dir/trace.json");
    const char *path = getenv("JOBSYS_TEST_TRACE");
    if (path != NULL) {
        OK(jobsys_trace_write(sys, path));
        FILE *f = fopen(path, "r");
        CHECK(f != NULL);
        char head[32] = {0};
        CHECK(fread(head, 1, 28, f) == 28);
        fclose(f);
        CHECK(strcmp(head, "{\"format\":\"jobsys-raw-trace\"") == 0);
    }
    /* A second capture replaces the first. */
    OK(jobsys_trace_start(sys));
    OK(jobsys_trace_stop(sys));
    check_usable(sys);
    OK(jobsys_destroy(sys));
}

/* ---- Pinned jobs, thread indices, cancellation, active workers ---------- */

/* Where a job ran: its thread and the system's index for that thread. */
struct where {
    jobsys_system *sys;
    pthread_t thread;
    int32_t index;
    atomic_int calls;
};

static void record_where(void *data) {
    struct where *w = data;
    w->thread = pthread_self();
    CHECK(jobsys_thread_index(w->sys, &w->index) == JOBSYS_OK);
    atomic_fetch_add(&w->calls, 1);
}

static void register_in_job(void *data) {
    struct call_from_job *c = data;
    uint32_t index;
    c->result = jobsys_register_thread(c->sys, &index);
    jobsys_pin pin;
    CHECK(jobsys_register_thread_pin(c->sys, &pin) == c->result);
}

/* A thread the program starts: registers (or not), then runs the jobs the
 * main thread pins to it when told to. Handshakes by mutex and condition
 * variable only. */
struct render_thread {
    jobsys_system *sys;
    bool do_register;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int step;          /* 1: registered (index set); 2: main queued the jobs; 3: ran them */
    uint32_t index;    /* from jobsys_register_thread */
    jobsys_pin pin;    /* from jobsys_register_thread_pin */
    int32_t seen;      /* jobsys_thread_index on the thread */
    uint32_t ran[2];   /* two jobsys_run_pinned counts */
    pthread_t self;
};

static void set_step(struct render_thread *r, int step) {
    pthread_mutex_lock(&r->mu);
    r->step = step;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

static void wait_step(struct render_thread *r, int step) {
    pthread_mutex_lock(&r->mu);
    while (r->step < step) pthread_cond_wait(&r->cv, &r->mu);
    pthread_mutex_unlock(&r->mu);
}

static void *render_main(void *data) {
    struct render_thread *r = data;
    r->self = pthread_self();
    if (r->do_register) {
        CHECK(jobsys_register_thread(r->sys, &r->index) == JOBSYS_OK);
        uint32_t again = 0;
        CHECK(jobsys_register_thread(r->sys, &again) == JOBSYS_OK && again == r->index);
        CHECK(jobsys_register_thread_pin(r->sys, &r->pin) == JOBSYS_OK);
        CHECK(r->pin.kind == JOBSYS_PIN_REGISTERED);
    }
    CHECK(jobsys_thread_index(r->sys, &r->seen) == JOBSYS_OK);
    set_step(r, 1);
    wait_step(r, 2);
    CHECK(jobsys_run_pinned(r->sys, &r->ran[0]) == JOBSYS_OK);
    CHECK(jobsys_run_pinned(r->sys, &r->ran[1]) == JOBSYS_OK);
    set_step(r, 3);
    return NULL;
}

static void render_start(struct render_thread *r, jobsys_system *sys, bool do_register) {
    memset(r, 0, sizeof *r);
    r->sys = sys;
    r->do_register = do_register;
    CHECK(pthread_mutex_init(&r->mu, NULL) == 0);
    CHECK(pthread_cond_init(&r->cv, NULL) == 0);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, render_main, r) == 0);
    wait_step(r, 1);
    r->self = t;
}

static void render_join(struct render_thread *r) {
    CHECK(pthread_join(r->self, NULL) == 0);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
}

static void test_pinned(void) {
    jobsys_system *sys = create(2);
    int32_t index = 99;
    uint32_t n = 99;
    OK(jobsys_thread_index(sys, &index));
    CHECK(index == 0); /* the thread that called jobsys_create */
    OK(jobsys_register_thread(sys, &n));
    CHECK(n == 0);
    OK(jobsys_register_thread(sys, NULL));
    jobsys_pin mine = {JOBSYS_PIN_THREAD, 9};
    OK(jobsys_register_thread_pin(sys, &mine));
    CHECK(mine.kind == JOBSYS_PIN_MAIN && mine.index == 0);
    OK(jobsys_run_pinned(sys, &n));
    CHECK(n == 0);
    OK(jobsys_run_pinned(sys, NULL));

    /* Pinned to main: runs on this thread, while it waits in complete. */
    struct where on_main = {sys, pthread_self(), -1, 0};
    jobsys_pin main_pin = {JOBSYS_PIN_MAIN, 0};
    jobsys_handle h, dep;
    jobsys_job_desc named = desc_of("on main", JOBSYS_PRIORITY_HIGH, NULL);
    OK(jobsys_schedule(sys, NULL, count_job, NULL, &dep));
    OK(schedule_pinned_after(sys, main_pin, &named, &dep, 1, record_where, &on_main, &h));
    OK(jobsys_complete(sys, h));
    CHECK(pthread_equal(on_main.thread, pthread_self()) && on_main.index == 0);
    CHECK(atomic_load(&on_main.calls) == 1);
    /* ... or in jobsys_run_pinned, which says how many ran. */
    OK(schedule_pinned(sys, main_pin, NULL, record_where, &on_main, &h));
    OK(schedule_pinned(sys, main_pin, NULL, record_where, &on_main, NULL));
    OK(jobsys_run_pinned(sys, &n));
    CHECK(n == 2 && atomic_load(&on_main.calls) == 3);
    OK(jobsys_run_pinned(sys, &n));
    CHECK(n == 0);
    OK(jobsys_complete(sys, h));

    /* Pinned to worker w (its thread index, 1..workers): runs on the thread
     * whose index is w, never here; JOBSYS_PIN_THREAD with a worker's index
     * is the same thread. */
    for (uint32_t w = 1; w <= 2; w++) {
        struct where a = {sys, pthread_self(), -1, 0}, b = {sys, pthread_self(), -1, 0};
        jobsys_pin worker = {JOBSYS_PIN_WORKER, w}, by_index = {JOBSYS_PIN_THREAD, w};
        jobsys_handle ha, hb;
        OK(schedule_pinned(sys, worker, NULL, record_where, &a, &ha));
        OK(schedule_pinned_after(sys, by_index, NULL, &ha, 1, record_where, &b, &hb));
        OK(jobsys_complete(sys, hb));
        CHECK(a.index == (int32_t)w && b.index == (int32_t)w);
        CHECK(!pthread_equal(a.thread, pthread_self()) && pthread_equal(a.thread, b.thread));
    }

    /* A registered thread: index workers + 1, runs its pinned jobs in
     * jobsys_run_pinned (as many as were queued), and nowhere else. */
    struct render_thread r;
    render_start(&r, sys, true);
    CHECK(r.index == 3 && r.seen == 3);
    struct where on_render = {sys, pthread_self(), -1, 0};
    jobsys_pin render_pin = {JOBSYS_PIN_THREAD, r.index};
    jobsys_handle hs[3];
    for (int i = 0; i < 3; i++) OK(schedule_pinned(sys, render_pin, NULL, record_where, &on_render, &hs[i]));
    bool done = true;
    OK(jobsys_is_complete(sys, hs[0], &done));
    CHECK(!done); /* nobody else runs it */
    set_step(&r, 2);
    wait_step(&r, 3);
    CHECK(r.ran[0] == 3 && r.ran[1] == 0);
    CHECK(atomic_load(&on_render.calls) == 3 && on_render.index == 3);
    CHECK(pthread_equal(on_render.thread, r.self));
    for (int i = 0; i < 3; i++) OK(jobsys_complete(sys, hs[i]));
    render_join(&r);

    /* The thread exited: a job pinned to its index now is cancelled; its
     * release runs once, its function never. */
    atomic_store(&released, 0);
    jobsys_job_desc rel = desc_of(NULL, JOBSYS_PRIORITY_NORMAL, count_release);
    OK(schedule_pinned(sys, render_pin, &rel, record_where, &on_render, &h));
    EXPECT(jobsys_complete(sys, h), JOBSYS_ERR_CANCELLED);
    MESSAGE_HAS("cancelled");
    CHECK(atomic_load(&on_render.calls) == 3 && atomic_load(&released) == 1);

    /* A thread that never registered: index -1, nothing to run. */
    render_start(&r, sys, false);
    CHECK(r.seen == -1);
    set_step(&r, 2);
    wait_step(&r, 3);
    CHECK(r.ran[0] == 0);
    render_join(&r);

    /* register_thread on a worker is refused. */
    struct call_from_job c = {sys, {0, 0}, JOBSYS_OK};
    jobsys_pin worker1 = {JOBSYS_PIN_WORKER, 1};
    OK(schedule_pinned(sys, worker1, NULL, register_in_job, &c, &h));
    OK(jobsys_complete(sys, h));
    CHECK(c.result == JOBSYS_ERR_BAD_STATE);

    /* Bad pins: nothing scheduled, release not called. */
    atomic_store(&released, 0);
    jobsys_pin bad_worker = {JOBSYS_PIN_WORKER, 3}, bad_main = {JOBSYS_PIN_MAIN, 1};
    jobsys_pin worker_zero = {JOBSYS_PIN_WORKER, 0}; /* index 0 is this thread, no worker */
    jobsys_pin bad_thread = {JOBSYS_PIN_THREAD, 99}, bad_kind = {(jobsys_pin_kind)7, 0};
    jobsys_pin bad_registered = {JOBSYS_PIN_REGISTERED, 3u | (7u << 10)}; /* index 3 had 1 */
    EXPECT(schedule_pinned(sys, bad_worker, &rel, count_job, NULL, &h), JOBSYS_ERR_INVALID_ARGUMENT);
    MESSAGE_HAS("thread indices 1..=2");
    EXPECT(schedule_pinned(sys, worker_zero, &rel, count_job, NULL, &h), JOBSYS_ERR_INVALID_ARGUMENT);
    MESSAGE_HAS("{JOBSYS_PIN_WORKER, 0}: not a worker's thread index");
    EXPECT(schedule_pinned(sys, bad_main, &rel, count_job, NULL, &h), JOBSYS_ERR_INVALID_ARGUMENT);
    EXPECT(schedule_pinned_after(sys, bad_thread, &rel, NULL, 0, count_job, NULL, &h), JOBSYS_ERR_INVALID_ARGUMENT);
    MESSAGE_HAS("no thread registered with index 99");
    EXPECT(schedule_pinned(sys, bad_kind, &rel, count_job, NULL, &h), JOBSYS_ERR_INVALID_ARGUMENT);
    MESSAGE_HAS("pin kind 7");
    EXPECT(schedule_pinned(sys, bad_registered, &rel, count_job, NULL, &h), JOBSYS_ERR_INVALID_ARGUMENT);
    MESSAGE_HAS("not a registration this system gave out");
    CHECK(atomic_load(&released) == 0);
    check_usable(sys);
    OK(jobsys_destroy(sys));
}

/* Thread indices stay dense whatever the order of threads: a thread that
 * only calls in (and takes over what an exited registered thread left)
 * does not push the next registered thread's index past workers + 1 + the
 * registered threads. And the pin from jobsys_register_thread_pin names
 * its thread only: once it exited, a job pinned with it is cancelled, never
 * run by the thread that took its index; {JOBSYS_PIN_THREAD, index} names
 * that new holder. */
static void test_dense_thread_indices(void) {
    jobsys_system *sys = create(2);
    struct render_thread first, idle, next;
    render_start(&first, sys, true);
    CHECK(first.index == 3 && first.seen == 3);
    jobsys_pin first_pin = first.pin;
    set_step(&first, 2);
    wait_step(&first, 3);
    render_join(&first);
    /* Calls in (jobsys_thread_index), never registers, stays alive. */
    render_start(&idle, sys, false);
    CHECK(idle.seen == -1);
    /* One registered thread at a time: 2 + 1 + 1 array entries cover it. */
    render_start(&next, sys, true);
    CHECK(next.index == 3 && next.seen == 3);
    CHECK(next.pin.index != first_pin.index);

    atomic_store(&released, 0);
    struct where stale = {sys, pthread_self(), -1, 0}, by_index = {sys, pthread_self(), -1, 0};
    jobsys_job_desc rel = desc_of(NULL, JOBSYS_PRIORITY_NORMAL, count_release);
    jobsys_handle hs, hi;
    OK(schedule_pinned(sys, first_pin, &rel, record_where, &stale, &hs));
    jobsys_pin index_pin = {JOBSYS_PIN_THREAD, 3};
    OK(schedule_pinned(sys, index_pin, NULL, record_where, &by_index, &hi));
    set_step(&next, 2);
    wait_step(&next, 3);
    EXPECT(jobsys_complete(sys, hs), JOBSYS_ERR_CANCELLED);
    MESSAGE_HAS("cancelled");
    CHECK(atomic_load(&stale.calls) == 0 && atomic_load(&released) == 1);
    OK(jobsys_complete(sys, hi));
    CHECK(next.ran[0] == 1 && atomic_load(&by_index.calls) == 1);
    CHECK(pthread_equal(by_index.thread, next.self) && by_index.index == 3);
    render_join(&next);
    set_step(&idle, 2);
    wait_step(&idle, 3);
    render_join(&idle);
    OK(jobsys_destroy(sys));
}

/* Runs until jobsys_cancel is called on it (tells the test it started). */
struct cancel_me {
    atomic_int started;
    atomic_int saw_cancel;
};

static void wait_for_cancel(void *data) {
    struct cancel_me *c = data;
    CHECK(!jobsys_is_cancelled());
    atomic_store(&c->started, 1);
    while (!jobsys_is_cancelled()) {
    }
    atomic_store(&c->saw_cancel, 1);
}

static void test_cancel(void) {
    CHECK(!jobsys_is_cancelled()); /* outside a job */
    /* No workers: nothing runs until this thread waits, so every job below
     * is still unstarted when it is cancelled. */
    jobsys_system *sys = create(0);
    atomic_store(&ran, 0);
    atomic_store(&released, 0);
    jobsys_job_desc rel = desc_of("cancelled", JOBSYS_PRIORITY_NORMAL, count_release);
    jobsys_handle gate, a, b, q;
    bool stopped = false;
    OK(jobsys_schedule(sys, NULL, count_job, NULL, &gate));
    OK(schedule_after(sys, &rel, &gate, 1, count_job, NULL, &a));
    OK(schedule_after(sys, &rel, &a, 1, count_job, NULL, &b));
    OK(jobsys_cancel(sys, a, &stopped));
    CHECK(stopped);
    /* a's release ran in the call, on this thread; its function never will. */
    CHECK(atomic_load(&released) == 1 && atomic_load(&ran) == 0);
    EXPECT(jobsys_complete(sys, b), JOBSYS_ERR_CANCELLED); /* its dependent */
    MESSAGE_HAS("was cancelled");
    MESSAGE_HAS("(job \"cancelled\")"); /* the cancelled job, by name */
    EXPECT(jobsys_complete(sys, a), JOBSYS_ERR_CANCELLED);
    MESSAGE_HAS("(job \"cancelled\")");
    EXPECT(jobsys_complete(sys, a), JOBSYS_ERR_CANCELLED); /* reported again */
    OK(jobsys_complete(sys, gate)); /* the dependency is not touched */
    CHECK(atomic_load(&ran) == 1 && atomic_load(&released) == 2);
    /* Cancelling again, or a finished job: false, results unchanged. */
    OK(jobsys_cancel(sys, a, &stopped));
    CHECK(!stopped);
    OK(jobsys_cancel(sys, gate, &stopped));
    CHECK(!stopped);
    OK(jobsys_complete(sys, gate));

    /* A queued job; stopped may be NULL. */
    OK(jobsys_schedule(sys, &rel, count_job, NULL, &q));
    OK(jobsys_cancel(sys, q, NULL));
    EXPECT(jobsys_complete(sys, q), JOBSYS_ERR_CANCELLED);
    CHECK(atomic_load(&ran) == 1 && atomic_load(&released) == 3);

    /* A combine group: its members are cancelled. */
    jobsys_handle members[2], group;
    OK(jobsys_schedule(sys, &rel, count_job, NULL, &members[0]));
    OK(schedule_pinned(sys, (jobsys_pin){JOBSYS_PIN_MAIN, 0}, &rel, count_job, NULL, &members[1]));
    OK(jobsys_combine(sys, members, 2, &group));
    OK(jobsys_cancel(sys, group, &stopped));
    CHECK(stopped && atomic_load(&released) == 5);
    EXPECT(jobsys_complete(sys, group), JOBSYS_ERR_CANCELLED);
    EXPECT(jobsys_complete(sys, members[0]), JOBSYS_ERR_CANCELLED);
    EXPECT(jobsys_complete(sys, members[1]), JOBSYS_ERR_CANCELLED);

    /* A parallel_for not started: no piece runs, release once. */
    atomic_uint_fast64_t sum = 0;
    jobsys_handle pf;
    OK(jobsys_parallel_for(sys, &rel, 0, 100, 10, sum_range, &sum, &pf));
    OK(jobsys_cancel(sys, pf, &stopped));
    CHECK(stopped);
    EXPECT(jobsys_complete(sys, pf), JOBSYS_ERR_CANCELLED);
    CHECK(atomic_load(&sum) == 0 && atomic_load(&released) == 6);
    CHECK(atomic_load(&ran) == 1);

    /* A handle of a job long finished (its entry recycled): false. */
    jobsys_handle old;
    OK(jobsys_schedule(sys, NULL, count_job, NULL, &old));
    OK(jobsys_complete(sys, old));
    for (int i = 0; i < 50; i++) check_usable(sys);
    OK(jobsys_cancel(sys, old, &stopped));
    CHECK(!stopped);
    OK(jobsys_complete(sys, old));

    /* The zeroed handle: nothing to cancel. A handle of another system. */
    stopped = true;
    OK(jobsys_cancel(sys, JOBSYS_HANDLE_NONE, &stopped));
    CHECK(!stopped);
    jobsys_system *other = create(0);
    jobsys_handle theirs;
    OK(jobsys_schedule(other, NULL, count_job, NULL, &theirs));
    EXPECT(jobsys_cancel(sys, theirs, &stopped), JOBSYS_ERR_FOREIGN_HANDLE);
    OK(jobsys_complete(other, theirs));
    OK(jobsys_destroy(other));
    check_usable(sys);
    OK(jobsys_destroy(sys));

    /* A running job: false; it sees jobsys_is_cancelled(), ends as
     * cancelled, and so does its dependent (which never runs). */
    sys = create(1);
    struct cancel_me c = {0, 0};
    jobsys_handle running, after;
    int before = atomic_load(&ran);
    OK(schedule_pinned(sys, (jobsys_pin){JOBSYS_PIN_WORKER, 1}, NULL, wait_for_cancel, &c, &running));
    OK(schedule_after(sys, NULL, &running, 1, count_job, NULL, &after));
    while (!atomic_load(&c.started)) {
    }
    OK(jobsys_cancel(sys, running, &stopped));
    CHECK(!stopped);
    EXPECT(jobsys_complete(sys, after), JOBSYS_ERR_CANCELLED);
    EXPECT(jobsys_complete(sys, running), JOBSYS_ERR_CANCELLED);
    CHECK(atomic_load(&c.saw_cancel) == 1 && atomic_load(&ran) == before);
    check_usable(sys);
    OK(jobsys_destroy(sys));
}

/* A job that says it started, then waits for `go`. */
struct held {
    atomic_int started, go;
};
static void hold(void *p) {
    struct held *h = p;
    atomic_store(&h->started, 1);
    while (!atomic_load(&h->go)) sched_yield();
}

static void test_complete_timeout(void) {
    jobsys_system *sys = create(1);
    struct held held = {0, 0};
    jobsys_handle h;
    OK(jobsys_schedule(sys, NULL, hold, &held, &h));
    while (!atomic_load(&held.started)) sched_yield(); /* on the worker */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    EXPECT(jobsys_complete_timeout(sys, h, 20 * 1000 * 1000), JOBSYS_ERR_TIMEOUT);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double waited_ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
    CHECK(waited_ms >= 20.0); /* not before the timeout */
    MESSAGE_HAS("timed out");
    bool done = true;
    OK(jobsys_is_complete(sys, h, &done));
    CHECK(!done); /* not cancelled, not finished */
    EXPECT(jobsys_complete_timeout(sys, h, 0), JOBSYS_ERR_TIMEOUT);
    CHECK(strcmp(jobsys_error_name(JOBSYS_ERR_TIMEOUT), "JOBSYS_ERR_TIMEOUT") == 0);
    atomic_store(&held.go, 1);
    OK(jobsys_complete_timeout(sys, h, UINT64_MAX)); /* no deadline in reach: a plain wait */
    OK(jobsys_complete_timeout(sys, h, 0));          /* finished: OK even with no time */
    jobsys_handle none = {0, 0};
    OK(jobsys_complete_timeout(sys, none, 0));
    EXPECT(jobsys_complete_timeout(NULL, h, 0), JOBSYS_ERR_NULL_ARGUMENT);
    OK(jobsys_destroy(sys));
}

/* jobsys_wait_any: the first to finish, a zeroed handle counts as finished, bad input refused. */
static void test_wait_any(void) {
    jobsys_system *sys = create(2);
    struct held held = {0, 0};
    jobsys_handle hs[2];
    OK(jobsys_schedule(sys, NULL, hold, &held, &hs[0]));
    while (!atomic_load(&held.started)) sched_yield(); /* on a worker */
    atomic_int count = 0;
    OK(jobsys_schedule(sys, NULL, count_into, &count, &hs[1]));
    size_t index = 99;
    OK(jobsys_wait_any(sys, hs, 2, &index));
    CHECK(index == 1);
    CHECK(atomic_load(&count) == 1);
    bool done = true;
    OK(jobsys_is_complete(sys, hs[0], &done));
    CHECK(!done); /* the other job goes on */
    jobsys_handle with_none[2] = {hs[0], {0, 0}};
    OK(jobsys_wait_any(sys, with_none, 2, &index));
    CHECK(index == 1);
    EXPECT(jobsys_wait_any(sys, hs, 0, &index), JOBSYS_ERR_INVALID_ARGUMENT);
    MESSAGE_HAS("at least one handle");
    EXPECT(jobsys_wait_any(sys, NULL, 2, &index), JOBSYS_ERR_NULL_ARGUMENT);
    EXPECT(jobsys_wait_any(sys, hs, 2, NULL), JOBSYS_ERR_NULL_ARGUMENT);
    jobsys_handle forged = {hs[1].id + 8, hs[1].gen};
    EXPECT(jobsys_wait_any(sys, &forged, 1, &index), JOBSYS_ERR_INVALID_HANDLE);
    atomic_store(&held.go, 1);
    OK(jobsys_complete(sys, hs[0]));
    OK(jobsys_wait_any(sys, hs, 2, &index));
    CHECK(index == 0); /* both finished: the lowest */
    OK(jobsys_destroy(sys));
}

/* A limited job: counts itself in and out, checks its seat is its own. */
struct seats {
    atomic_int now, most, runs;
    atomic_int taken[2];
};
static void seated(void *p) {
    struct seats *s = p;
    size_t seat = jobsys_limiter_slot();
    CHECK(seat < 2);
    CHECK(atomic_exchange(&s->taken[seat], 1) == 0);
    int n = atomic_fetch_add(&s->now, 1) + 1;
    int m = atomic_load(&s->most);
    while (n > m && !atomic_compare_exchange_weak(&s->most, &m, n)) {}
    for (volatile int i = 0; i < 2000; i++) {}
    atomic_fetch_sub(&s->now, 1);
    atomic_store(&s->taken[seat], 0);
    atomic_fetch_add(&s->runs, 1);
}

static void blocking_fn(void *p) {
    atomic_int *n = p;
    /* A blocking job runs on a blocking thread: no seat, no job of ours around it. */
    CHECK(jobsys_limiter_slot() == JOBSYS_NO_SEAT);
    atomic_fetch_add(n, 1);
}

/* jobsys_limiter and JOBSYS_JOB_BLOCKING. */
static void test_limiter_and_blocking(void) {
    jobsys_system *sys = create(3);
    jobsys_limiter *lim = NULL;
    EXPECT(jobsys_limiter_create(0, &lim), JOBSYS_ERR_INVALID_ARGUMENT);
    EXPECT(jobsys_limiter_create(2, NULL), JOBSYS_ERR_NULL_ARGUMENT);
    OK(jobsys_limiter_create(2, &lim));
    CHECK(jobsys_limiter_slot() == JOBSYS_NO_SEAT);
    struct seats s = {0};
    jobsys_job_desc d = JOBSYS_JOB_DESC_INIT;
    d.limiter = lim;
    jobsys_handle hs[64], all;
    for (int i = 0; i < 64; i++) OK(jobsys_schedule(sys, &d, seated, &s, &hs[i]));
    OK(jobsys_limiter_destroy(lim)); /* its jobs keep what they need */
    OK(jobsys_combine(sys, hs, 64, &all));
    OK(jobsys_complete(sys, all));
    CHECK(atomic_load(&s.runs) == 64);
    CHECK(atomic_load(&s.most) <= 2);
    OK(jobsys_limiter_destroy(NULL));

    atomic_int n = 0;
    jobsys_job_desc b = JOBSYS_JOB_DESC_INIT;
    b.flags = JOBSYS_JOB_BLOCKING;
    jobsys_handle h;
    OK(jobsys_schedule(sys, &b, blocking_fn, &n, &h));
    OK(jobsys_complete(sys, h));
    CHECK(atomic_load(&n) == 1);
    b.flags = JOBSYS_JOB_BLOCKING | JOBSYS_JOB_PINNED;
    EXPECT(jobsys_schedule(sys, &b, blocking_fn, &n, &h), JOBSYS_ERR_INVALID_ARGUMENT);
    MESSAGE_HAS("JOBSYS_JOB_PINNED");
    b.flags = JOBSYS_JOB_BLOCKING;
    EXPECT(jobsys_parallel_for(sys, &b, 0, 10, 1, sum_range, &n, &h), JOBSYS_ERR_INVALID_ARGUMENT);
    MESSAGE_HAS("jobsys_parallel_for");
    OK(jobsys_destroy(sys));
}

static void test_active_workers(void) {
    jobsys_system *sys = create(2);
    uint32_t n = 99;
    jobsys_stats st;
    OK(jobsys_active_workers(sys, &n));
    CHECK(n == 2);
    OK(jobsys_get_stats(sys, &st));
    CHECK(st.active_workers == 2);
    EXPECT(jobsys_set_active_workers(sys, 3), JOBSYS_ERR_INVALID_ARGUMENT);
    MESSAGE_HAS("n = 3: the system has 2 workers");
    OK(jobsys_active_workers(sys, &n));
    CHECK(n == 2);

    /* To 0 and back with jobs in flight: every job still runs once. */
    atomic_int count = 0;
    jobsys_handle hs[200], all;
    for (int i = 0; i < 100; i++) OK(jobsys_schedule(sys, NULL, count_into, &count, &hs[i]));
    OK(jobsys_set_active_workers(sys, 0));
    OK(jobsys_active_workers(sys, &n));
    CHECK(n == 0);
    OK(jobsys_take_stats(sys, &st));
    CHECK(st.active_workers == 0); /* a gauge, also in take_stats */
    OK(jobsys_get_worker_stats(sys, 1, &st));
    CHECK(st.active_workers == 0);
    for (int i = 100; i < 200; i++) OK(jobsys_schedule(sys, NULL, count_into, &count, &hs[i]));
    /* A benched worker still runs the jobs pinned to it. */
    struct where w = {sys, pthread_self(), -1, 0};
    jobsys_handle pinned;
    OK(schedule_pinned(sys, (jobsys_pin){JOBSYS_PIN_WORKER, 2}, NULL, record_where, &w, &pinned));
    OK(jobsys_complete(sys, pinned));
    CHECK(w.index == 2);
    OK(jobsys_set_active_workers(sys, 2));
    OK(jobsys_combine(sys, hs, 200, &all));
    OK(jobsys_complete(sys, all));
    CHECK(atomic_load(&count) == 200);
    OK(jobsys_set_active_workers(sys, 1));
    OK(jobsys_get_worker_stats(sys, 1, &st));
    CHECK(st.active_workers == 1);
    OK(jobsys_get_stats(sys, &st));
    CHECK(st.active_workers == 1);
    check_usable(sys);
    OK(jobsys_destroy(sys));

    /* follow_cpus: off by default, accepted on; the active count never
     * exceeds the workers. */
    jobsys_config cfg;
    OK(jobsys_config_init(&cfg));
    CHECK(!cfg.follow_cpus);
    cfg.workers = 2;
    cfg.follow_cpus = true;
    OK(jobsys_create(&cfg, &sys));
    check_usable(sys);
    OK(jobsys_active_workers(sys, &n));
    CHECK(n <= 2);
    OK(jobsys_set_active_workers(sys, 1));
    check_usable(sys);
    OK(jobsys_active_workers(sys, &n));
    CHECK(n <= 1);
    OK(jobsys_destroy(sys));
}

/* ---- The desc: size versioning, flags ------------------------------------ */

static void test_desc_size_and_flags(jobsys_system *sys) {
    atomic_int count = 0;
    jobsys_handle h;
    atomic_uint_fast64_t sum = 0;
    /* size 0 (a desc not from JOBSYS_JOB_DESC_INIT) or too small: refused. */
    jobsys_job_desc d;
    memset(&d, 0, sizeof d);
    EXPECT(jobsys_schedule(sys, &d, count_into, &count, &h), JOBSYS_ERR_INVALID_ARGUMENT);
    MESSAGE_HAS("desc->size = 0");
    EXPECT(jobsys_parallel_for(sys, &d, 0, 10, 0, sum_range, &sum, &h), JOBSYS_ERR_INVALID_ARGUMENT);
    d = (jobsys_job_desc)JOBSYS_JOB_DESC_INIT;
    CHECK(d.size == sizeof(jobsys_job_desc));
    d.size = sizeof(jobsys_job_desc) - 1;
    EXPECT(jobsys_schedule(sys, &d, count_into, &count, &h), JOBSYS_ERR_INVALID_ARGUMENT);
    MESSAGE_HAS("less than sizeof(jobsys_job_desc)");
    d.size = 4;
    EXPECT(jobsys_schedule(sys, &d, count_into, &count, &h), JOBSYS_ERR_INVALID_ARGUMENT);

    /* A desc from a newer header: fields this library does not know after
     * it. Zero: accepted (the defaults); set: refused, not dropped. */
    struct {
        jobsys_job_desc d;
        uint64_t newer[3];
    } big;
    memset(&big, 0, sizeof big);
    big.d = (jobsys_job_desc)JOBSYS_JOB_DESC_INIT;
    big.d.size = (uint32_t)sizeof big;
    big.d.name = "newer header";
    OK(jobsys_schedule(sys, &big.d, count_into, &count, &h));
    OK(jobsys_complete(sys, h));
    OK(jobsys_parallel_for(sys, &big.d, 0, 10, 0, sum_range, &sum, &h));
    OK(jobsys_complete(sys, h));
    CHECK(atomic_load(&count) == 1 && atomic_load(&sum) == 45);
    big.newer[2] = 1; /* the last byte-group of the newer fields */
    EXPECT(jobsys_schedule(sys, &big.d, count_into, &count, &h), JOBSYS_ERR_INVALID_ARGUMENT);
    MESSAGE_HAS("a field this version of jobsys does not know");
    big.newer[2] = 0;
    big.newer[0] = UINT64_C(1) << 56;
    EXPECT(jobsys_parallel_for(sys, &big.d, 0, 10, 0, sum_range, &sum, &h), JOBSYS_ERR_INVALID_ARGUMENT);

    /* Unknown flag bits are refused; so is a flag beside known ones. */
    d = (jobsys_job_desc)JOBSYS_JOB_DESC_INIT;
    d.flags = 8;
    EXPECT(jobsys_schedule(sys, &d, count_into, &count, &h), JOBSYS_ERR_INVALID_ARGUMENT);
    MESSAGE_HAS("desc->flags");
    d.flags = JOBSYS_JOB_BATCHED | JOBSYS_JOB_PINNED | 0x80000000u;
    EXPECT(jobsys_schedule(sys, &d, count_into, &count, &h), JOBSYS_ERR_INVALID_ARGUMENT);
    EXPECT(jobsys_parallel_for(sys, &d, 0, 10, 0, sum_range, &sum, &h), JOBSYS_ERR_INVALID_ARGUMENT);
    /* Without JOBSYS_JOB_PINNED the pin is ignored, even a bad one. */
    d.flags = 0;
    d.pin = (jobsys_pin){JOBSYS_PIN_WORKER, 99};
    OK(jobsys_schedule(sys, &d, count_into, &count, &h));
    OK(jobsys_complete(sys, h));
    d.flags = JOBSYS_JOB_PINNED;
    EXPECT(jobsys_schedule(sys, &d, count_into, &count, &h), JOBSYS_ERR_INVALID_ARGUMENT);
    CHECK(atomic_load(&count) == 2 && atomic_load(&sum) == 45);
    check_usable(sys);
}

/* ---- Inline data: the job's own copy ----------------------------------- */

/* What the calls on one copy saw. */
struct copy_seen {
    atomic_int calls, releases;
    atomic_uintptr_t call_at, release_at; /* the addresses fn and release got */
    atomic_uint_fast64_t sum;             /* of the words the calls read */
};

/* 40 bytes, JOBSYS_INLINE_DATA: the whole inline room. */
struct payload {
    struct copy_seen *seen;
    uint64_t words[4];
};

static void payload_job(void *data) {
    const struct payload *p = data;
    CHECK((uintptr_t)data % 8 == 0);
    atomic_store(&p->seen->call_at, (uintptr_t)data);
    atomic_fetch_add(&p->seen->sum, p->words[0] + p->words[1] + p->words[2] + p->words[3]);
    atomic_fetch_add(&p->seen->calls, 1);
}

static void payload_release(void *data) {
    const struct payload *p = data;
    atomic_store(&p->seen->release_at, (uintptr_t)data);
    atomic_fetch_add(&p->seen->releases, 1);
}

static void payload_range(void *data, size_t begin, size_t end) {
    const struct payload *p = data;
    CHECK((uintptr_t)data % 8 == 0);
    atomic_store(&p->seen->call_at, (uintptr_t)data);
    for (size_t i = begin; i < end; i++) atomic_fetch_add(&p->seen->sum, p->words[i % 4]);
    atomic_fetch_add(&p->seen->calls, 1);
}

/* A larger copy: allocated by jobsys, otherwise the same. */
struct big_payload {
    struct copy_seen *seen;
    uint64_t words[30];
};

static void big_job(void *data) {
    const struct big_payload *p = data;
    CHECK((uintptr_t)data % 8 == 0);
    uint64_t s = 0;
    for (int i = 0; i < 30; i++) s += p->words[i];
    atomic_store(&p->seen->call_at, (uintptr_t)data);
    atomic_fetch_add(&p->seen->sum, s);
    atomic_fetch_add(&p->seen->calls, 1);
}

static void big_release(void *data) {
    const struct big_payload *p = data;
    atomic_store(&p->seen->release_at, (uintptr_t)data);
    atomic_fetch_add(&p->seen->releases, 1);
}

/* An odd size: 13 bytes, read byte by byte. */
static void bytes_job(void *data) {
    const unsigned char *b = data;
    struct copy_seen *seen;
    memcpy(&seen, b, sizeof seen);
    uint64_t s = 0;
    for (size_t i = sizeof seen; i < sizeof seen + 5; i++) s += b[i];
    atomic_fetch_add(&seen->sum, s);
    atomic_fetch_add(&seen->calls, 1);
}

static void test_inline_data(void) {
    CHECK(sizeof(struct payload) == JOBSYS_INLINE_DATA);
    /* No workers: nothing runs until this thread completes it, so every
     * change to the caller's buffer below happens before the job reads. */
    jobsys_system *sys = create(0);
    jobsys_job_desc d = JOBSYS_JOB_DESC_INIT;
    d.data_size = sizeof(struct payload);
    d.release = payload_release;
    jobsys_handle h;

    /* The job reads its copy, not the caller's buffer (changed after the call). */
    struct copy_seen seen = {0};
    struct payload p = {&seen, {1, 2, 3, 4}};
    OK(jobsys_schedule(sys, &d, payload_job, &p, &h));
    p.words[0] = 1000;
    p.seen = NULL;
    OK(jobsys_complete(sys, h));
    CHECK(atomic_load(&seen.calls) == 1 && atomic_load(&seen.sum) == 10);
    CHECK(atomic_load(&seen.releases) == 1);
    uintptr_t at = atomic_load(&seen.call_at);
    CHECK(at != 0 && at != (uintptr_t)&p);
    CHECK(atomic_load(&seen.release_at) == at); /* release gets the copy too */

    /* Cancelled before it ran: release once with the copy, fn never. */
    struct copy_seen cancelled = {0};
    p = (struct payload){&cancelled, {1, 1, 1, 1}};
    bool stopped = false;
    OK(jobsys_schedule(sys, &d, payload_job, &p, &h));
    memset(&p, 0, sizeof p);
    OK(jobsys_cancel(sys, h, &stopped));
    CHECK(stopped);
    CHECK(atomic_load(&cancelled.releases) == 1 && atomic_load(&cancelled.calls) == 0);
    CHECK(atomic_load(&cancelled.release_at) != 0);
    CHECK(atomic_load(&cancelled.release_at) != (uintptr_t)&p);
    CHECK(atomic_load(&cancelled.release_at) % 8 == 0);
    EXPECT(jobsys_complete(sys, h), JOBSYS_ERR_CANCELLED);
    CHECK(atomic_load(&cancelled.releases) == 1);

    /* A dependency failed: release once with the copy, fn never. */
    struct copy_seen skipped = {0};
    p = (struct payload){&skipped, {1, 1, 1, 1}};
    jobsys_handle bad;
    OK(jobsys_schedule(sys, NULL, fail_job, "the dependency", &bad));
    jobsys_job_desc after_bad = d;
    after_bad.deps = &bad;
    after_bad.ndeps = 1;
    OK(jobsys_schedule(sys, &after_bad, payload_job, &p, &h));
    memset(&p, 0, sizeof p);
    EXPECT(jobsys_complete(sys, h), JOBSYS_ERR_DEPENDENCY_FAILED);
    CHECK(atomic_load(&skipped.releases) == 1 && atomic_load(&skipped.calls) == 0);
    CHECK(atomic_load(&skipped.release_at) != 0 && atomic_load(&skipped.release_at) % 8 == 0);

    /* More than JOBSYS_INLINE_DATA: allocated, the same otherwise. */
    struct copy_seen big_seen = {0};
    struct big_payload big;
    big.seen = &big_seen;
    for (int i = 0; i < 30; i++) big.words[i] = (uint64_t)i + 1;
    jobsys_job_desc bd = JOBSYS_JOB_DESC_INIT;
    bd.data_size = sizeof big;
    bd.release = big_release;
    OK(jobsys_schedule(sys, &bd, big_job, &big, &h));
    memset(&big, 0xff, sizeof big);
    OK(jobsys_complete(sys, h));
    CHECK(atomic_load(&big_seen.calls) == 1 && atomic_load(&big_seen.sum) == 30 * 31 / 2);
    CHECK(atomic_load(&big_seen.releases) == 1);
    CHECK(atomic_load(&big_seen.release_at) == atomic_load(&big_seen.call_at));
    CHECK(atomic_load(&big_seen.call_at) != (uintptr_t)&big);
    /* ... also when cancelled. */
    big_seen = (struct copy_seen){0};
    big.seen = &big_seen;
    OK(jobsys_schedule(sys, &bd, big_job, &big, &h));
    OK(jobsys_cancel(sys, h, &stopped));
    CHECK(stopped && atomic_load(&big_seen.releases) == 1 && atomic_load(&big_seen.calls) == 0);

    /* An odd size is copied exactly (13 bytes: a pointer and 5 bytes). */
    struct copy_seen odd = {0};
    unsigned char bytes[16];
    struct copy_seen *odd_ptr = &odd;
    memcpy(bytes, &odd_ptr, sizeof odd_ptr);
    for (int i = 0; i < 5; i++) bytes[sizeof odd_ptr + (size_t)i] = (unsigned char)(10 + i);
    jobsys_job_desc od = JOBSYS_JOB_DESC_INIT;
    od.data_size = sizeof odd_ptr + 5;
    OK(jobsys_schedule(sys, &od, bytes_job, bytes, &h));
    memset(bytes, 0, sizeof bytes);
    OK(jobsys_complete(sys, h));
    CHECK(atomic_load(&odd.calls) == 1 && atomic_load(&odd.sum) == 10 + 11 + 12 + 13 + 14);

    /* A parallel_for: every piece reads the one copy; release once. */
    OK(jobsys_destroy(sys));
    sys = create(2);
    struct copy_seen loop = {0};
    p = (struct payload){&loop, {1, 2, 3, 4}};
    OK(jobsys_parallel_for(sys, &d, 0, 400, 7, payload_range, &p, &h));
    memset(&p, 0, sizeof p);
    OK(jobsys_complete(sys, h));
    CHECK(atomic_load(&loop.sum) == 100 * (1 + 2 + 3 + 4));
    CHECK(atomic_load(&loop.calls) == (400 + 6) / 7);
    CHECK(atomic_load(&loop.releases) == 1);
    CHECK(atomic_load(&loop.call_at) == atomic_load(&loop.release_at));
    OK(jobsys_destroy(sys));
}

/* ---- Pinned, batched, deps: the flags of the desc -------------------------- */

/* Where each piece of a pinned parallel_for ran, in the order they ran. */
struct pieces {
    jobsys_system *sys;
    int32_t index[64];
    size_t begin[64], end[64];
    atomic_int n;
};

static void record_piece(void *data, size_t begin, size_t end) {
    struct pieces *p = data;
    int k = atomic_fetch_add(&p->n, 1);
    CHECK(k < 64);
    CHECK(jobsys_thread_index(p->sys, &p->index[k]) == JOBSYS_OK);
    p->begin[k] = begin;
    p->end[k] = end;
}

/* A pinned parallel_for ran all its pieces on thread `index`, in order,
 * covering [0, 100) once. */
static void check_pieces(const struct pieces *p, int32_t index) {
    int n = atomic_load(&p->n);
    CHECK(n == 10);
    for (int k = 0; k < n; k++) {
        CHECK(p->index[k] == index);
        CHECK(p->begin[k] == (k == 0 ? 0 : p->end[k - 1]));
        CHECK(p->end[k] == p->begin[k] + 10);
    }
    CHECK(p->end[n - 1] == 100);
}

/* Records that `before` had run when it ran. */
struct ordered {
    atomic_int *before;
    int saw;
};

static void check_order(void *data) {
    struct ordered *o = data;
    o->saw = atomic_load(o->before);
}

static void test_flags_pin_batched_deps(void) {
    jobsys_system *sys = create(2);
    jobsys_handle h;

    /* JOBSYS_JOB_PINNED parallel_for: every piece on the pinned worker. */
    for (uint32_t w = 1; w <= 2; w++) {
        struct pieces p;
        memset(&p, 0, sizeof p);
        p.sys = sys;
        jobsys_job_desc d = JOBSYS_JOB_DESC_INIT;
        d.flags = JOBSYS_JOB_PINNED;
        d.pin = (jobsys_pin){JOBSYS_PIN_WORKER, w};
        OK(jobsys_parallel_for(sys, &d, 0, 100, 10, record_piece, &p, &h));
        OK(jobsys_complete(sys, h));
        check_pieces(&p, (int32_t)w);
    }
    /* ... or on this thread (the main pin), run while it waits. */
    struct pieces mine;
    memset(&mine, 0, sizeof mine);
    mine.sys = sys;
    jobsys_job_desc on_main = JOBSYS_JOB_DESC_INIT;
    on_main.flags = JOBSYS_JOB_PINNED;
    OK(jobsys_parallel_for(sys, &on_main, 0, 100, 10, record_piece, &mine, &h));
    OK(jobsys_complete(sys, h));
    check_pieces(&mine, 0);

    /* A pinned single job, after a dependency given in the same desc. */
    atomic_int first = 0;
    jobsys_handle dep;
    OK(jobsys_schedule(sys, NULL, slow_count, &first, &dep));
    struct where w = {sys, pthread_self(), -1, 0};
    jobsys_job_desc pd = JOBSYS_JOB_DESC_INIT;
    pd.flags = JOBSYS_JOB_PINNED;
    pd.pin = (jobsys_pin){JOBSYS_PIN_WORKER, 2};
    pd.deps = &dep;
    pd.ndeps = 1;
    OK(jobsys_schedule(sys, &pd, record_where, &w, &h));
    OK(jobsys_complete(sys, h));
    CHECK(w.index == 2 && atomic_load(&first) == 1);

    /* Dependencies in the desc: the job runs after all of them. */
    atomic_int done_before = 0;
    jobsys_handle deps[8];
    for (int i = 0; i < 8; i++) OK(jobsys_schedule(sys, NULL, slow_count, &done_before, &deps[i]));
    struct ordered o = {&done_before, -1};
    jobsys_job_desc dd = JOBSYS_JOB_DESC_INIT;
    dd.deps = deps;
    dd.ndeps = 8;
    OK(jobsys_schedule(sys, &dd, check_order, &o, &h));
    OK(jobsys_complete(sys, h));
    CHECK(o.saw == 8);

    /* BATCHED: published by jobsys_flush; then a worker runs it without
     * this thread completing it (jobsys_is_complete never runs a job). */
    atomic_int batched = 0;
    jobsys_job_desc bd = JOBSYS_JOB_DESC_INIT;
    bd.flags = JOBSYS_JOB_BATCHED;
    jobsys_handle bh[4];
    for (int i = 0; i < 4; i++) OK(jobsys_schedule(sys, &bd, count_into, &batched, &bh[i]));
    uint32_t woken = 99;
    OK(jobsys_flush(sys, &woken));
    CHECK(woken <= 2);
    for (int i = 0; i < 4; i++) {
        bool done = false;
        struct timespec t0, t;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (;;) {
            OK(jobsys_is_complete(sys, bh[i], &done));
            if (done) break;
            clock_gettime(CLOCK_MONOTONIC, &t);
            CHECK(t.tv_sec - t0.tv_sec < 30); /* a lost job, not a slow one */
            sleep_ms(1);
        }
    }
    CHECK(atomic_load(&batched) == 4);
    /* BATCHED and PINNED together, and a batched parallel_for. */
    bd.flags = JOBSYS_JOB_BATCHED | JOBSYS_JOB_PINNED;
    bd.pin = (jobsys_pin){JOBSYS_PIN_WORKER, 1};
    struct where bw = {sys, pthread_self(), -1, 0};
    OK(jobsys_schedule(sys, &bd, record_where, &bw, &h));
    OK(jobsys_flush(sys, NULL));
    OK(jobsys_complete(sys, h));
    CHECK(bw.index == 1);
    atomic_uint_fast64_t sum = 0;
    bd.flags = JOBSYS_JOB_BATCHED;
    OK(jobsys_parallel_for(sys, &bd, 0, 100, 0, sum_range, &sum, &h));
    OK(jobsys_complete(sys, h)); /* flushes this thread's batch first */
    CHECK(atomic_load(&sum) == 99 * 100 / 2);
    check_usable(sys);
    OK(jobsys_destroy(sys));
}

/* ---- jobsys_join --------------------------------------------------------- */

struct fib {
    jobsys_system *sys;
    unsigned n;
    uint64_t result;
};

static void fib_job(void *data) {
    struct fib *f = data;
    if (f->n < 2) {
        f->result = f->n;
        return;
    }
    struct fib a = {f->sys, f->n - 1, 0}, b = {f->sys, f->n - 2, 0};
    if (f->n < 8) { /* the leaves serially: cheap, and the recursion still nests */
        fib_job(&a);
        fib_job(&b);
    } else {
        CHECK(jobsys_join(f->sys, fib_job, &a, fib_job, &b) == JOBSYS_OK);
    }
    f->result = a.result + b.result;
}

/* Records which thread ran it, and fails when its data says so. */
struct half {
    jobsys_system *sys;
    const char *fail_with; /* NULL: succeed */
    atomic_int calls;
    pthread_t thread;
};

static void half_job(void *data) {
    struct half *h = data;
    h->thread = pthread_self();
    atomic_fetch_add(&h->calls, 1);
    if (h->fail_with != NULL) CHECK(jobsys_fail(h->fail_with) == JOBSYS_OK);
}

/* A job that joins two halves (join inside a job) and reports what it got. */
struct join_in_job {
    jobsys_system *sys;
    struct half a, b;
    jobsys_error result;
};

static void joining_job(void *data) {
    struct join_in_job *j = data;
    j->result = jobsys_join(j->sys, half_job, &j->a, half_job, &j->b);
}

static void test_join(void) {
    for (int32_t workers = 0; workers <= 2; workers += 2) {
        jobsys_system *sys = create(workers);
        /* Both run once; b on the calling thread. */
        struct half a = {sys, NULL, 0, pthread_self()}, b = {sys, NULL, 0, pthread_self()};
        OK(jobsys_join(sys, half_job, &a, half_job, &b));
        CHECK(atomic_load(&a.calls) == 1 && atomic_load(&b.calls) == 1);
        CHECK(pthread_equal(b.thread, pthread_self()));
        if (workers == 0) CHECK(pthread_equal(a.thread, pthread_self()));

        /* A failure of either is JOB_FAILED, after both returned. */
        a = (struct half){sys, "a failed", 0, pthread_self()};
        b = (struct half){sys, NULL, 0, pthread_self()};
        EXPECT(jobsys_join(sys, half_job, &a, half_job, &b), JOBSYS_ERR_JOB_FAILED);
        MESSAGE_HAS("a failed");
        CHECK(atomic_load(&a.calls) == 1 && atomic_load(&b.calls) == 1);
        a = (struct half){sys, NULL, 0, pthread_self()};
        b = (struct half){sys, "b failed", 0, pthread_self()};
        EXPECT(jobsys_join(sys, half_job, &a, half_job, &b), JOBSYS_ERR_JOB_FAILED);
        MESSAGE_HAS("b failed");
        CHECK(atomic_load(&a.calls) == 1 && atomic_load(&b.calls) == 1);
        a = (struct half){sys, "first", 0, pthread_self()};
        b = (struct half){sys, "second", 0, pthread_self()};
        EXPECT(jobsys_join(sys, half_job, &a, half_job, &b), JOBSYS_ERR_JOB_FAILED);
        MESSAGE_HAS("first"); /* a's message when both failed */
        CHECK(atomic_load(&a.calls) == 1 && atomic_load(&b.calls) == 1);

        /* Inside a job: a failed half is the join's result there, and does
         * not fail the job that joined (it returned normally). */
        struct join_in_job j;
        memset(&j, 0, sizeof j);
        j.sys = sys;
        j.a.fail_with = "inner";
        jobsys_handle h;
        OK(jobsys_schedule(sys, NULL, joining_job, &j, &h));
        OK(jobsys_complete(sys, h));
        CHECK(j.result == JOBSYS_ERR_JOB_FAILED);
        CHECK(atomic_load(&j.a.calls) == 1 && atomic_load(&j.b.calls) == 1);

        /* Nested: recursive Fibonacci by join, from this thread and from a job. */
        struct fib f = {sys, 24, 0};
        OK(jobsys_join(sys, fib_job, &f, count_job, NULL));
        CHECK(f.result == 46368);
        struct fib g = {sys, 20, 0};
        OK(jobsys_schedule(sys, NULL, fib_job, &g, &h));
        OK(jobsys_complete(sys, h));
        CHECK(g.result == 6765);
        check_usable(sys);
        OK(jobsys_destroy(sys));
    }
}

static void test_destroy_while_running(void) {
    jobsys_system *sys = create(2);
    atomic_store(&ran, 0);
    atomic_store(&released, 0);
    jobsys_job_desc rel = desc_of(NULL, JOBSYS_PRIORITY_LOW, count_release);
    jobsys_handle prev;
    OK(jobsys_schedule(sys, &rel, slow_job, NULL, &prev));
    for (int i = 0; i < 20; i++) {
        jobsys_handle h;
        OK(schedule_after(sys, &rel, &prev, 1, slow_job, NULL, &h));
        prev = h;
    }
    for (int i = 0; i < 10; i++) OK(jobsys_schedule(sys, NULL, spawning_job, sys, NULL));
    OK(schedule_batched(sys, NULL, count_job, NULL, NULL)); /* never flushed */
    OK(jobsys_hot_zone_begin(sys));                              /* never closed */
    /* destroy runs every job (21 chained + 10 spawning + 20 spawned + 1
     * batched), then joins the workers. */
    OK(jobsys_destroy(sys));
    CHECK(atomic_load(&ran) == 21 + 10 + 20 + 1);
    CHECK(atomic_load(&released) == 21);
}

/* ---- Unobserved failures -------------------------------------------------
 * A failure no jobsys_complete read reaches on_unobserved_panic (with the
 * job's name and message) once the system can no longer report it: here at
 * jobsys_destroy. One that was read does not. */

typedef struct {
    atomic_int calls;
    char text[256];
} unobserved_log;

static void on_unobserved(void *user, const char *message, size_t len) {
    unobserved_log *log = (unobserved_log *)user;
    if (atomic_fetch_add(&log->calls, 1) == 0) {
        size_t n = len < sizeof log->text - 1 ? len : sizeof log->text - 1;
        memcpy(log->text, message, n);
        log->text[n] = 0;
    }
}

static void test_unobserved_failure(void) {
    static unobserved_log log;
    jobsys_config cfg;
    OK(jobsys_config_init(&cfg));
    CHECK(cfg.on_unobserved_panic == NULL && cfg.on_unobserved_panic_user == NULL);
    cfg.workers = 1;
    cfg.on_unobserved_panic = on_unobserved;
    cfg.on_unobserved_panic_user = &log;
    jobsys_system *sys;
    OK(jobsys_create(&cfg, &sys));
    jobsys_job_desc named = desc_of("orphan", JOBSYS_PRIORITY_NORMAL, NULL);
    jobsys_handle orphan, seen;
    OK(jobsys_schedule(sys, &named, fail_job, "nobody looked", &orphan));
    OK(jobsys_schedule(sys, NULL, fail_job, "looked at", &seen));
    EXPECT(jobsys_complete(sys, seen), JOBSYS_ERR_JOB_FAILED);
    OK(jobsys_destroy(sys));
    CHECK(atomic_load(&log.calls) == 1);
    CHECK(strstr(log.text, "orphan") != NULL);
    CHECK(strstr(log.text, "nobody looked") != NULL);
}

/* ---- Frame graphs ----------------------------------------------------------
 * input -> physics -> render, and input -> particles (a loop node) ->
 * render: each node checks that what it runs after has run as often as it
 * has, in every run; a node's data copy and release; a failing node fails
 * its run and its dependents, and the next run starts clean; bad input. */

typedef struct {
    atomic_int runs;      /* times this node ran */
    atomic_int *before;   /* the runs of a node it runs after (NULL: none) */
    atomic_int *before2;
    atomic_int out_of_order;
    int fail_on_run;      /* jobsys_fail in this run (1-based; 0: never) */
} graph_node_state;

static void graph_node(void *p) {
    graph_node_state *s = p;
    int mine = atomic_fetch_add(&s->runs, 1) + 1;
    if ((s->before && atomic_load(&s->before[0]) < mine) ||
        (s->before2 && atomic_load(&s->before2[0]) < mine))
        atomic_fetch_add(&s->out_of_order, 1);
    if (s->fail_on_run == mine) jobsys_fail("the node failed on purpose");
}

static atomic_long graph_sum;
static void graph_piece(void *p, size_t b, size_t e) {
    const long *step = p; /* a copy (data_size): the caller's variable is gone */
    for (size_t i = b; i < e; i++) atomic_fetch_add(&graph_sum, *step);
}

static atomic_int graph_released;
static void graph_release(void *p) {
    const long *step = p;
    CHECK(*step == 3);
    atomic_fetch_add(&graph_released, 1);
}

/* A core class: a bad value is refused; on a machine whose workers do
 * not span two classes (this one: unpinned workers) a class job runs
 * anywhere, like any job. */
static void test_core_class(void) {
    jobsys_system *sys = create(2);
    jobsys_job_desc d = JOBSYS_JOB_DESC_INIT;
    d.core_class = (jobsys_core_class)7;
    EXPECT(jobsys_schedule(sys, &d, count_job, NULL, NULL), JOBSYS_ERR_INVALID_ARGUMENT);
    MESSAGE_HAS("not a jobsys_core_class");
    int before = atomic_load(&ran);
    jobsys_handle hs[2];
    d.core_class = JOBSYS_CORE_PERFORMANCE;
    OK(jobsys_schedule(sys, &d, count_job, NULL, &hs[0]));
    d.core_class = JOBSYS_CORE_EFFICIENCY;
    OK(jobsys_schedule(sys, &d, count_job, NULL, &hs[1]));
    OK(jobsys_complete(sys, hs[0]));
    OK(jobsys_complete(sys, hs[1]));
    CHECK(atomic_load(&ran) == before + 2);
    OK(jobsys_destroy(sys));
}

static void test_graph(void) {
    jobsys_system *sys = create(2);
    graph_node_state input = {0}, physics = {0}, render = {0};
    physics.before = &input.runs;
    physics.fail_on_run = 2;
    render.before = &physics.runs;
    render.before2 = &input.runs;
    atomic_store(&graph_sum, 0);
    atomic_store(&graph_released, 0);

    jobsys_graph_builder *b = NULL;
    OK(jobsys_graph_builder_create(sys, &b));
    jobsys_node n_input, n_physics, n_particles, n_render;
    OK(jobsys_graph_add(sys, b, NULL, NULL, 0, graph_node, &input, &n_input));
    jobsys_job_desc named = desc_of("physics", JOBSYS_PRIORITY_HIGH, NULL);
    OK(jobsys_graph_add(sys, b, &named, &n_input, 1, graph_node, &physics, &n_physics));
    {
        long step = 3; /* copied when the node is added */
        jobsys_job_desc copy = desc_of("particles", JOBSYS_PRIORITY_NORMAL, graph_release);
        copy.data_size = sizeof step;
        OK(jobsys_graph_add_for(sys, b, &copy, &n_input, 1, 0, 1000, 0, graph_piece, &step,
                                &n_particles));
    }
    jobsys_node render_after[1] = {n_physics};
    OK(jobsys_graph_add(sys, b, NULL, render_after, 1, graph_node, &render, &n_render));
    OK(jobsys_graph_edge(b, n_particles, n_render));

    /* Bad input, the builder still usable after each. */
    jobsys_node made_up = {n_input.index, n_input.graph + 1000};
    EXPECT(jobsys_graph_add(sys, b, NULL, &made_up, 1, graph_node, &input, NULL),
           JOBSYS_ERR_INVALID_ARGUMENT);
    MESSAGE_HAS("not a node of this graph");
    jobsys_node beyond = {99, n_input.graph};
    EXPECT(jobsys_graph_edge(b, beyond, n_render), JOBSYS_ERR_INVALID_ARGUMENT);
    jobsys_handle a_job;
    OK(jobsys_schedule(sys, NULL, graph_node, &(graph_node_state){0}, &a_job));
    OK(jobsys_complete(sys, a_job));
    jobsys_job_desc with_deps = with(NULL, 0, no_pin, &a_job, 1);
    EXPECT(jobsys_graph_add(sys, b, &with_deps, NULL, 0, graph_node, &input, NULL),
           JOBSYS_ERR_INVALID_ARGUMENT);
    MESSAGE_HAS("pass them as `after`");
    jobsys_job_desc batched = with(NULL, JOBSYS_JOB_BATCHED, no_pin, NULL, 0);
    EXPECT(jobsys_graph_add(sys, b, &batched, NULL, 0, graph_node, &input, NULL),
           JOBSYS_ERR_INVALID_ARGUMENT);
    EXPECT(jobsys_graph_add(sys, b, NULL, NULL, 0, NULL, &input, NULL), JOBSYS_ERR_NULL_ARGUMENT);
    EXPECT(jobsys_graph_add_for(sys, b, NULL, NULL, 0, 5, 4, 0, graph_piece, NULL, NULL),
           JOBSYS_ERR_INVALID_ARGUMENT);
    jobsys_system *other = create(0);
    EXPECT(jobsys_graph_add(other, b, NULL, NULL, 0, graph_node, &input, NULL),
           JOBSYS_ERR_INVALID_ARGUMENT);
    MESSAGE_HAS("another system");

    jobsys_graph *g = NULL;
    OK(jobsys_graph_build(b, 2, &g));
    OK(jobsys_graph_sync(sys, g, n_physics)); /* before the first run: at once */
    {
        uint64_t frame;
        EXPECT(jobsys_graph_report(sys, g, &frame, NULL, 0, NULL), JOBSYS_ERR_BAD_STATE);
        MESSAGE_HAS("no run of the graph has finished yet");
    }
    EXPECT(jobsys_graph_run(other, g, NULL), JOBSYS_ERR_INVALID_ARGUMENT);
    OK(jobsys_destroy(other));

    for (int run = 1; run <= 4; run++) {
        jobsys_handle h;
        OK(jobsys_graph_run(sys, g, &h));
        if (run == 2) {
            EXPECT(jobsys_graph_sync(sys, g, n_physics), JOBSYS_ERR_JOB_FAILED);
            EXPECT(jobsys_graph_sync(sys, g, n_render), JOBSYS_ERR_DEPENDENCY_FAILED);
            /* The run's handle is a group: its failure is a member's. */
            EXPECT(jobsys_complete(sys, h), JOBSYS_ERR_DEPENDENCY_FAILED);
            MESSAGE_HAS("job \"physics\", failed: the node failed on purpose");
        } else {
            OK(jobsys_graph_sync(sys, g, n_physics));
            OK(jobsys_complete(sys, h));
        }
    }
    CHECK(atomic_load(&input.runs) == 4);
    CHECK(atomic_load(&physics.runs) == 4);
    CHECK(atomic_load(&render.runs) == 3); /* not in the failed run */
    CHECK(atomic_load(&graph_sum) == 4 * 1000 * 3);
    CHECK(atomic_load(&physics.out_of_order) == 0);
    CHECK(atomic_load(&render.out_of_order) == 0);

    /* The newest finished run's report: every node measured, a path from input to render. */
    {
        jobsys_node_report nodes[8];
        uint64_t frame = 0, faster = 0;
        size_t count = 0;
        EXPECT(jobsys_graph_report(sys, g, NULL, nodes, 8, &count), JOBSYS_ERR_NULL_ARGUMENT);
        EXPECT(jobsys_graph_report(sys, g, &frame, NULL, 8, &count), JOBSYS_ERR_NULL_ARGUMENT);
        OK(jobsys_graph_report(sys, g, &frame, NULL, 0, &count));
        CHECK(count == 4);
        OK(jobsys_graph_report(sys, g, &frame, nodes, 8, &count));
        CHECK(frame > 0);
        uint32_t on_path = 0;
        for (size_t i = 0; i < count; i++) {
            CHECK(nodes[i].node.index == i && nodes[i].node.graph == n_input.graph);
            CHECK(nodes[i].duration_ns <= frame);
            CHECK(nodes[i].critical == 0 || nodes[i].slack_ns == 0); /* the path has no slack */
            CHECK(nodes[i].slack_ns <= frame - nodes[i].duration_ns);
            if (nodes[i].critical) on_path++;
        }
        CHECK(nodes[n_input.index].critical == 1); /* every path starts at input */
        CHECK(on_path >= 2 && nodes[n_render.index].critical == on_path); /* ... ends at render */
        OK(jobsys_graph_what_if(sys, g, n_render, 0.0, &faster));
        CHECK(faster <= frame && faster + nodes[n_render.index].duration_ns == frame);
        OK(jobsys_graph_what_if(sys, g, n_input, 1.0, &faster));
        CHECK(faster == frame);
        EXPECT(jobsys_graph_what_if(sys, g, n_input, -1.0, &faster), JOBSYS_ERR_INVALID_ARGUMENT);
        MESSAGE_HAS("at least 0");
        jobsys_node made_up2 = {0, n_input.graph + 7};
        EXPECT(jobsys_graph_what_if(sys, g, made_up2, 1.0, &faster), JOBSYS_ERR_INVALID_ARGUMENT);
    }

    /* Two runs in flight, then destroyed: the data is released once, after both. */
    jobsys_handle r1, r2;
    OK(jobsys_graph_run(sys, g, &r1));
    OK(jobsys_graph_run(sys, g, &r2));
    CHECK(atomic_load(&graph_released) == 0);
    jobsys_graph_destroy(g);
    OK(jobsys_complete(sys, r2));
    OK(jobsys_complete(sys, r1));
    CHECK(atomic_load(&input.runs) == 6);
    /* A node's job drops its closure (and with the last one the graph's
     * nodes) before it finishes, so before the run's handle completes. */
    CHECK(atomic_load(&graph_released) == 1);

    /* A cycle is refused at build (and the builder freed, its data released). */
    OK(jobsys_graph_builder_create(sys, &b));
    jobsys_node x, y;
    long step = 3;
    jobsys_job_desc copy = desc_of(NULL, JOBSYS_PRIORITY_NORMAL, graph_release);
    copy.data_size = sizeof step;
    OK(jobsys_graph_add(sys, b, &copy, NULL, 0, graph_node, &step, &x));
    OK(jobsys_graph_add(sys, b, NULL, &x, 1, graph_node, &input, &y));
    OK(jobsys_graph_edge(b, y, x));
    EXPECT(jobsys_graph_build(b, 0, &g), JOBSYS_ERR_INVALID_ARGUMENT);
    MESSAGE_HAS("cycle");
    CHECK(atomic_load(&graph_released) == 2);
    /* A builder destroyed unbuilt releases its data too. */
    OK(jobsys_graph_builder_create(sys, &b));
    OK(jobsys_graph_add(sys, b, &copy, NULL, 0, graph_node, &step, NULL));
    jobsys_graph_builder_destroy(b);
    CHECK(atomic_load(&graph_released) == 3);
    jobsys_graph_builder_destroy(NULL);
    jobsys_graph_destroy(NULL);
    EXPECT(jobsys_graph_builder_create(sys, NULL), JOBSYS_ERR_NULL_ARGUMENT);
    OK(jobsys_destroy(sys));
}

/* JOBSYS_JOB_KEEP_PRIORITY: a job refuses it; a graph node takes it. With no
 * worker the frame's thread runs one node at a time, the higher priority
 * first: a chain of 4 LOW nodes (2 ms each, added after a chain of 5
 * trivial NORMAL ones beside it, the longer path in nodes) runs last in
 * the first run (nothing measured) and first once the measured critical
 * path raises it, unless its nodes keep their priority. */
static char chain_order[16];
static atomic_int chain_ran;
static void chain_mark(void *p) {
    const char *what = p;
    if (*what == 'c') {
        struct timespec t0, t;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        do {
            clock_gettime(CLOCK_MONOTONIC, &t);
        } while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 2000000L);
    }
    int i = atomic_fetch_add(&chain_ran, 1);
    if (i < 15) chain_order[i] = *what;
}

static void chain_runs(int keep, const char *second) {
    jobsys_system *sys = create(0);
    jobsys_graph_builder *b = NULL;
    OK(jobsys_graph_builder_create(sys, &b));
    static char beside = 'b', chain = 'c';
    jobsys_node prev = {0, 0};
    for (int i = 0; i < 5; i++) {
        OK(jobsys_graph_add(sys, b, NULL, &prev, i == 0 ? 0 : 1, chain_mark, &beside, &prev));
    }
    jobsys_job_desc low = desc_of("chain", JOBSYS_PRIORITY_LOW, NULL);
    if (keep) low.flags |= JOBSYS_JOB_KEEP_PRIORITY;
    for (int i = 0; i < 4; i++) {
        OK(jobsys_graph_add(sys, b, &low, &prev, i == 0 ? 0 : 1, chain_mark, &chain, &prev));
    }
    jobsys_graph *g = NULL;
    OK(jobsys_graph_build(b, 1, &g));
    for (int run = 1; run <= 2; run++) {
        memset(chain_order, 0, sizeof chain_order);
        atomic_store(&chain_ran, 0);
        jobsys_handle h;
        OK(jobsys_graph_run(sys, g, &h));
        OK(jobsys_complete(sys, h));
        const char *want = run == 1 ? "bbbbbcccc" : second;
        if (strcmp(chain_order, want) != 0) {
            fprintf(stderr, "keep %d, run %d: order %s, expected %s\n", keep, run, chain_order, want);
            CHECK(0);
        }
    }
    jobsys_graph_destroy(g);
    OK(jobsys_destroy(sys));
}

static void test_graph_keep_priority(void) {
    jobsys_system *sys = create(0);
    jobsys_job_desc keep = with(NULL, JOBSYS_JOB_KEEP_PRIORITY, no_pin, NULL, 0);
    jobsys_handle h;
    EXPECT(jobsys_schedule(sys, &keep, chain_mark, "b", &h), JOBSYS_ERR_INVALID_ARGUMENT);
    MESSAGE_HAS("graph nodes only");
    OK(jobsys_destroy(sys));
    chain_runs(0, "ccccbbbbb");
    chain_runs(1, "bbbbbcccc");
}

int main(void) {
    printf("sizes: config=%zu handle=%zu job_desc=%zu stats=%zu pin=%zu profiler=%zu "
           "node_report=%zu\n",
           sizeof(jobsys_config), sizeof(jobsys_handle), sizeof(jobsys_job_desc),
           sizeof(jobsys_stats), sizeof(jobsys_pin), sizeof(jobsys_profiler_callbacks),
           sizeof(jobsys_node_report));
    CHECK(strcmp(jobsys_last_error_message(), "") == 0);

    test_errors_and_config();
    test_environment();
    test_shuffle_environment();
    jobsys_system *sys = create(2);
    test_null_arguments(sys);
    test_invalid_handles(sys);
    test_parallel_for(sys);
    test_descs(sys);
    test_failures(sys);
    test_batching_hot_zones_stats(sys);
    OK(jobsys_destroy(sys));
    test_calls_from_jobs();
    test_trace();
    test_destroy_while_running();
    test_pinned();
    test_dense_thread_indices();
    test_cancel();
    test_active_workers();
    test_complete_timeout();
    test_wait_any();
    test_limiter_and_blocking();
    jobsys_system *again = create(2);
    test_desc_size_and_flags(again);
    OK(jobsys_destroy(again));
    test_inline_data();
    test_flags_pin_batched_deps();
    test_join();
    test_unobserved_failure();
    test_graph();
    test_graph_keep_priority();
    test_core_class();

    printf("api_test: ok\n");
    return 0;
}
