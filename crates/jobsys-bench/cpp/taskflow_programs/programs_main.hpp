// The harness of the *_main.cpp programs: arguments, one table row per size
// (median and range over the rounds of each library, microseconds, and
// jobsys / Taskflow), libraries alternating within each round.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

struct Args {
    unsigned threads = 1, log_size = 0, rounds = 5;
};

inline Args parse(int argc, char **argv, unsigned default_log) {
    Args a;
    a.threads = argc > 1 ? unsigned(std::atoi(argv[1])) : 1;
    a.log_size = argc > 2 ? unsigned(std::atoi(argv[2])) : default_log;
    a.rounds = argc > 3 ? unsigned(std::atoi(argv[3])) : 5;
    if (a.threads < 1 || a.threads > 63 || a.rounds < 1) {
        std::fprintf(stderr, "usage: %s THREADS(1..63) LOG_SIZE ROUNDS\n", argv[0]);
        std::exit(2);
    }
    return a;
}

inline void print_header(const char *name, const char *size, const Args &a) {
    std::printf("%s, %u thread(s) each (jobsys: the caller + %u workers), median of %u rounds "
                "[min-max], microseconds\n",
                name, a.threads, a.threads - 1, a.rounds);
    std::printf("%10s %22s %22s %22s %8s\n", size, "taskflow", "onetbb", "jobsys", "js/tf");
}

using Measure = std::function<std::chrono::microseconds()>;

inline void run_row(std::size_t size, const Args &a, Measure tf, Measure tbb, Measure js) {
    std::vector<double> t[3];
    Measure m[3] = {tf, tbb, js};
    for (unsigned r = 0; r < a.rounds; ++r) {
        for (int k = 0; k < 3; ++k) {
            int i = r % 2 ? 2 - k : k; // alternate the order
            if (m[i]) t[i].push_back(double(m[i]().count()));
        }
    }
    char cell[3][64];
    double med[3] = {0, 0, 0};
    for (int i = 0; i < 3; ++i) {
        if (t[i].empty()) {
            std::snprintf(cell[i], sizeof cell[i], "-");
            continue;
        }
        std::sort(t[i].begin(), t[i].end());
        med[i] = t[i][t[i].size() / 2];
        std::snprintf(cell[i], sizeof cell[i], "%.0f [%.0f-%.0f]", med[i], t[i].front(), t[i].back());
    }
    std::printf("%10zu %22s %22s %22s %8.2f\n", size, cell[0], cell[1], cell[2],
                med[0] > 0 ? med[2] / med[0] : 0.0);
    std::fflush(stdout);
}
