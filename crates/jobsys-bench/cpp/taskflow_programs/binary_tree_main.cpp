// binary_tree of Taskflow's benchmarks beside the same graph on jobsys (see
// linear_chain_main.cpp). Usage: binary_tree THREADS LOG_LAYERS ROUNDS
#include "jobsys_programs.hpp"
#include "programs_main.hpp"
#include "binary_tree.hpp"

int main(int argc, char **argv) {
    Args a = parse(argc, argv, 20);
    auto &js = jobsys_programs::system_for(a.threads);
    print_header("binary_tree", "tasks", a);
    for (unsigned l = 10; l <= a.log_size; ++l) {
        run_row((std::size_t(1) << l) - 1, a, [&] { return measure_time_taskflow(l, a.threads); },
#ifdef JOBSYS_PROGRAMS_TBB
                [&] { return measure_time_tbb(l, a.threads); },
#else
                nullptr,
#endif
                [&] { return jobsys_programs::timed([&] { jobsys_programs::binary_tree(js, l); }); });
    }
}
