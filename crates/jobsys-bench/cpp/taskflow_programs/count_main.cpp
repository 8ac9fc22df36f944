// One graph of Taskflow's benchmark programs on jobsys through jobsys.hpp,
// run ROUNDS times at one thread, for scripts/taskflow-instructions.sh,
// which counts the instructions of 1 and 3 rounds under callgrind: the
// difference over two rounds is the steady cost per task (the first round
// also pays for the slot pages, the deques and the names).
//
// Usage: taskflow_count PROGRAM SIZE ROUNDS
//   PROGRAM: linear_chain (SIZE tasks), binary_tree (2^SIZE - 1 tasks) or
//   wavefront (SIZE x SIZE blocks)
#include "jobsys_programs.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>

static int no_work(int, int) { return 0; }

int main(int argc, char **argv) {
    if (argc != 4) {
        std::fprintf(stderr, "usage: %s linear_chain|binary_tree|wavefront SIZE ROUNDS\n", argv[0]);
        return 2;
    }
    const char *program = argv[1];
    std::size_t size = std::strtoul(argv[2], nullptr, 10);
    int rounds = std::atoi(argv[3]);
    jobsys::System &js = jobsys_programs::system_for(1);
    for (int r = 0; r < rounds; ++r) {
        if (!std::strcmp(program, "linear_chain")) {
            jobsys_programs::linear_chain(js, size);
        } else if (!std::strcmp(program, "binary_tree")) {
            jobsys_programs::binary_tree(js, size);
        } else if (!std::strcmp(program, "wavefront")) {
            jobsys_programs::wavefront(js, int(size), int(size), no_work);
        } else {
            std::fprintf(stderr, "unknown program %s\n", program);
            return 2;
        }
    }
    return 0;
}
