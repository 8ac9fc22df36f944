/* Linked through CMake's jobsys::jobsys (tests/cmake.rs): two jobs, the
 * second after the first, completed and checked. */
#include "jobsys.h"

#include <stdio.h>

static void add_one(void *data) { *(int *)data += 1; }
static void times_ten(void *data) { *(int *)data *= 10; }

int main(void) {
    jobsys_config cfg;
    jobsys_system *js = NULL;
    jobsys_handle a, b;
    jobsys_job_desc after_a = JOBSYS_JOB_DESC_INIT;
    int value = 4;
    after_a.deps = &a; /* read when b is scheduled, after a's handle is written */
    after_a.ndeps = 1;
    if (jobsys_config_init(&cfg) != JOBSYS_OK) return 1;
    cfg.workers = 2;
    if (jobsys_create(&cfg, &js) != JOBSYS_OK ||
        jobsys_schedule(js, NULL, add_one, &value, &a) != JOBSYS_OK ||
        jobsys_schedule(js, &after_a, times_ten, &value, &b) != JOBSYS_OK ||
        jobsys_complete(js, b) != JOBSYS_OK) {
        fprintf(stderr, "cmake test (C): %s\n", jobsys_last_error_message());
        return 1;
    }
    jobsys_destroy(js);
    if (value != 50) {
        printf("cmake test (C): wrong result %d\n", value);
        return 1;
    }
    printf("cmake test (C): ok, %d\n", value);
    return 0;
}
