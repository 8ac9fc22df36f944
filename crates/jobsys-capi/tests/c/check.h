/* Checks shared by the C test programs in this directory: each failure
 * prints the file, line, the failed expression and jobsys's last error
 * message, and exits with status 1. */
#ifndef JOBSYS_TEST_CHECK_H
#define JOBSYS_TEST_CHECK_H

#include "jobsys.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                              \
    do {                                                                         \
        if (!(cond)) {                                                           \
            fprintf(stderr, "%s:%d: check failed: %s (last error: %s)\n",        \
                    __FILE__, __LINE__, #cond, jobsys_last_error_message());     \
            exit(1);                                                             \
        }                                                                        \
    } while (0)

#define EXPECT(call, code)                                                       \
    do {                                                                         \
        jobsys_error e_ = (call);                                                \
        if (e_ != (code)) {                                                      \
            fprintf(stderr, "%s:%d: %s returned %s, expected %s (last error: %s)\n", \
                    __FILE__, __LINE__, #call, jobsys_error_name(e_),            \
                    jobsys_error_name(code), jobsys_last_error_message());       \
            exit(1);                                                             \
        }                                                                        \
    } while (0)

#define OK(call) EXPECT(call, JOBSYS_OK)

/* The last error message contains `text`. */
#define MESSAGE_HAS(text) CHECK(strstr(jobsys_last_error_message(), (text)) != NULL)

#endif
