// wavefront of Taskflow's benchmarks beside the same graph on jobsys (see
// linear_chain_main.cpp): an S x S matrix in 8 x 8 blocks, S = 2^8 .. 2^LOG.
// Usage: wavefront THREADS LOG_SIZE ROUNDS
#include "jobsys_programs.hpp"
#include "programs_main.hpp"
#include "matrix.hpp"

int M = 0, N = 0, B = 0, MB = 0, NB = 0;
double **matrix = nullptr;

std::chrono::microseconds measure_time_taskflow(unsigned);
std::chrono::microseconds measure_time_tbb(unsigned);

int main(int argc, char **argv) {
    Args a = parse(argc, argv, 11);
    auto &js = jobsys_programs::system_for(a.threads);
    print_header("wavefront", "blocks", a);
    for (unsigned l = 8; l <= a.log_size; ++l) {
        M = N = 1 << l;
        B = 8;
        MB = (M / B) + (M % B > 0);
        NB = (N / B) + (N % B > 0);
        init_matrix();
        run_row(std::size_t(MB) * NB, a, [&] { return measure_time_taskflow(a.threads); },
#ifdef JOBSYS_PROGRAMS_TBB
                [&] { return measure_time_tbb(a.threads); },
#else
                nullptr,
#endif
                [&] {
                    return jobsys_programs::timed(
                        [&] { jobsys_programs::wavefront(js, MB, NB, &block_computation); });
                });
        destroy_matrix();
    }
}
