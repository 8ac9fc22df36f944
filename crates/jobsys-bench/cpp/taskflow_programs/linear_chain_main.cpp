// linear_chain of Taskflow's benchmarks (their taskflow.cpp and tbb.cpp,
// vendored) beside the same graph on jobsys, in one process: for each
// length 2^1 .. 2^log_length, the median over `rounds` of each library,
// alternating within a round. Usage: linear_chain THREADS LOG_LENGTH ROUNDS
#include "jobsys_programs.hpp"
#include "programs_main.hpp"
#include "linear_chain.hpp"

int main(int argc, char **argv) {
    Args a = parse(argc, argv, 20);
    auto &js = jobsys_programs::system_for(a.threads);
    print_header("linear_chain", "length", a);
    for (unsigned i = 10; i <= a.log_size; ++i) {
        std::size_t len = std::size_t(1) << i;
        run_row(len, a, [&] { return measure_time_taskflow(len, a.threads); },
#ifdef JOBSYS_PROGRAMS_TBB
                [&] { return measure_time_tbb(len, a.threads); },
#else
                nullptr,
#endif
                [&] { return jobsys_programs::timed([&] { jobsys_programs::linear_chain(js, len); }); });
    }
}
