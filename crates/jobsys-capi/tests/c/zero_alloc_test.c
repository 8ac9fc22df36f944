/*
 * jobsys_schedule with inline data (desc.data_size <= JOBSYS_INLINE_DATA)
 * and jobsys_join allocate nothing, counted from C: this program defines
 * malloc, calloc, realloc, free and the aligned allocators itself, so every
 * allocation of the process (the library's Rust code, its workers, glibc)
 * comes through them; they count and forward to glibc's __libc_* functions.
 *
 * Why a warm-up: the first calls on a thread may allocate once for good
 * (the thread's context in the system, its first slot pages, the interned
 * job name, stdio buffers), and so may a worker's first job. Those are
 * per-thread or per-system costs, not per-job ones, so the count starts
 * after a warm-up of the same loop, and must then stay at 0 for every
 * schedule + complete (and join) that follows.
 *
 * A control shows the counter sees the library's allocations: a copy
 * larger than JOBSYS_INLINE_DATA allocates, at least once per job.
 *
 * Run by tests/c_programs.rs; glibc only (the __libc_* entry points).
 * Prints "zero_alloc_test: ok"; a failed check exits with status 1.
 */
#define _POSIX_C_SOURCE 200112L /* posix_memalign */
#include "jobsys.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"

/* ---- The counting allocator ---------------------------------------------- */

void *__libc_malloc(size_t size);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t size);
void *__libc_memalign(size_t align, size_t size);
void __libc_free(void *p);

static atomic_ulong allocations;

void *malloc(size_t size) {
    atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
    return __libc_malloc(size);
}

void *calloc(size_t n, size_t size) {
    atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t size) {
    atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
    return __libc_realloc(p, size);
}

void free(void *p) { __libc_free(p); }

void *memalign(size_t align, size_t size);
void *memalign(size_t align, size_t size) {
    atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
    return __libc_memalign(align, size);
}

void *aligned_alloc(size_t align, size_t size) {
    atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
    return __libc_memalign(align, size);
}

int posix_memalign(void **out, size_t align, size_t size) {
    atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
    void *p = __libc_memalign(align, size);
    if (p == NULL) return ENOMEM;
    *out = p;
    return 0;
}

static unsigned long allocated(void) { return atomic_load(&allocations); }

/* ---- The jobs ------------------------------------------------------------ */

/* The job's data: five words, the whole inline room. */
struct payload {
    atomic_uint_fast64_t *sum;
    uint64_t words[4];
};

static void add(void *data) {
    const struct payload *p = data;
    atomic_fetch_add(p->sum, p->words[0] + p->words[1] + p->words[2] + p->words[3]);
}

/* One word more than fits inline (the control). */
struct big_payload {
    struct payload p;
    uint64_t extra;
};

static void add_big(void *data) {
    const struct big_payload *b = data;
    atomic_fetch_add(b->p.sum, b->p.words[0] + b->extra);
}

static void noop(void *data) { (void)data; }

static jobsys_system *create(int32_t workers) {
    jobsys_config cfg;
    OK(jobsys_config_init(&cfg));
    cfg.workers = workers;
    jobsys_system *sys = NULL;
    OK(jobsys_create(&cfg, &sys));
    return sys;
}

#define ROUNDS 2000

/* Schedule `add` with a copy of {sum, i, 1, 2, 3} after `dep` (and a zeroed
 * handle, skipped), named; its handle. */
static jobsys_handle schedule_inline(jobsys_system *sys, atomic_uint_fast64_t *sum, jobsys_handle dep,
                                     uint64_t i) {
    struct payload p = {sum, {i, 1, 2, 3}};
    jobsys_handle deps[2] = {dep, JOBSYS_HANDLE_NONE};
    jobsys_job_desc d = JOBSYS_JOB_DESC_INIT;
    d.name = "inline";
    d.deps = deps;
    d.ndeps = 2;
    d.data_size = sizeof p;
    jobsys_handle h;
    OK(jobsys_schedule(sys, &d, add, &p, &h));
    return h;
}

/* Allocations in ROUNDS schedule + complete + join rounds after a warm-up
 * of the same rounds, on a system with `workers` workers. */
static unsigned long allocations_per_rounds(int32_t workers) {
    CHECK(sizeof(struct payload) == JOBSYS_INLINE_DATA);
    jobsys_system *sys = create(workers);
    atomic_uint_fast64_t sum = 0;
    jobsys_handle last = JOBSYS_HANDLE_NONE;
    for (uint64_t i = 0; i < ROUNDS; i++) { /* warm-up (see the top) */
        last = schedule_inline(sys, &sum, last, i);
        OK(jobsys_complete(sys, last));
        OK(jobsys_join(sys, noop, NULL, noop, NULL));
    }
    unsigned long before = allocated();
    for (uint64_t i = 0; i < ROUNDS; i++) {
        last = schedule_inline(sys, &sum, last, i);
        OK(jobsys_complete(sys, last));
        OK(jobsys_join(sys, noop, NULL, noop, NULL));
    }
    unsigned long during = allocated() - before;
    /* Every job ran once, with its own copy. */
    CHECK(atomic_load(&sum) == 2 * ((uint64_t)ROUNDS * (ROUNDS - 1) / 2 + 6u * ROUNDS));
    OK(jobsys_destroy(sys));
    return during;
}

/* The control: a copy one word past the inline room is allocated. */
static unsigned long allocations_of_big_copies(void) {
    jobsys_system *sys = create(0);
    atomic_uint_fast64_t sum = 0;
    jobsys_job_desc d = JOBSYS_JOB_DESC_INIT;
    d.data_size = sizeof(struct big_payload);
    CHECK(d.data_size > JOBSYS_INLINE_DATA);
    jobsys_handle h;
    for (int warm = 0; warm < 2; warm++) {
        unsigned long before = allocated();
        for (uint64_t i = 0; i < ROUNDS; i++) {
            struct big_payload b = {{&sum, {i, 0, 0, 0}}, 1};
            OK(jobsys_schedule(sys, &d, add_big, &b, &h));
            OK(jobsys_complete(sys, h));
        }
        if (warm == 1) {
            unsigned long during = allocated() - before;
            CHECK(atomic_load(&sum) == 2 * ((uint64_t)ROUNDS * (ROUNDS - 1) / 2 + ROUNDS));
            OK(jobsys_destroy(sys));
            return during;
        }
    }
    return 0;
}

int main(void) {
    unsigned long start = allocated();
    jobsys_system *probe = create(0); /* the counter sees jobsys_create's allocations */
    CHECK(allocated() > start);
    OK(jobsys_destroy(probe));

    unsigned long big = allocations_of_big_copies();
    CHECK(big >= ROUNDS);
    unsigned long none = allocations_per_rounds(0);
    unsigned long one = allocations_per_rounds(1);
    unsigned long two = allocations_per_rounds(2);
    if (none != 0 || one != 0 || two != 0) {
        fprintf(stderr, "allocations in %d inline schedules + joins: %lu (0 workers), %lu (1), %lu (2)\n",
                ROUNDS, none, one, two);
        return 1;
    }
    printf("zero_alloc_test: ok\n");
    return 0;
}
