// The frame graph of examples/c/frame.c through the C++ wrapper
// (include/jobsys.hpp): the same jobs, dependencies and checksum, with
// lambdas and the job builder instead of C callbacks and descs.
//
//   input --> physics (parallel_for) --> animation (parallel_for) --+
//     |                                                              +--> render
//     +-----> ai ----------------------------------------------------+
//
// Build (after `cargo build -p jobsys-capi --release`, from crates/jobsys-capi):
//   c++ -std=c++17 -Wall -Wextra -Werror -Iinclude examples/cpp/frame.cpp
//       ../../target/release/libjobsys_capi.a -lpthread -ldl -lm -o frame
#include "jobsys.hpp"

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace {

constexpr uint32_t kParticles = 10000;
constexpr uint32_t kFrames = 10;

struct World {
    std::vector<uint64_t> pos = std::vector<uint64_t>(kParticles);
    std::vector<uint64_t> vel = std::vector<uint64_t>(kParticles);
    uint64_t seed = 0;
    uint64_t ai = 1;
    uint64_t checksum = 0xcbf29ce484222325ull;
};

} // namespace

int main() {
    try {
        jobsys::System js; // the default configuration
        World w;
        for (uint32_t i = 0; i < kParticles; i++) {
            w.pos[i] = i;
            w.vel[i] = uint64_t(i) * i;
        }

        for (uint64_t frame = 0; frame < kFrames; frame++) {
            // Every lambda below captures a reference or two (and `frame`):
            // it is kept in its job, so scheduling allocates nothing.
            auto input = js.job().name("input").priority(jobsys::Priority::High).schedule([&w, frame] {
                w.seed = w.checksum ^ ((frame + 1) * 0x9E3779B97F4A7C15ull);
            });
            auto physics = js.job()
                               .name("physics")
                               .priority(jobsys::Priority::High)
                               .after(input)
                               .parallel_for(0, kParticles, 0, [&w](size_t i) {
                                   w.vel[i] = w.vel[i] * 6364136223846793005ull + (w.seed ^ i);
                               });
            auto ai = js.job().name("ai").priority(jobsys::Priority::Low).after(input).schedule([&w] {
                for (int k = 0; k < 256; k++) w.ai = w.ai * 2862933555777941757ull + 3037000493ull + w.seed;
            });
            // A piece-wise callable: called once per piece of 256 indices.
            auto animation =
                js.job().name("animation").after(physics).parallel_for(0, kParticles, 256, [&w](size_t begin, size_t end) {
                    for (size_t i = begin; i < end; i++) w.pos[i] += (w.vel[i] >> 17) + i;
                });
            auto render = js.job().after(animation, ai).schedule([&w] {
                uint64_t h = w.checksum;
                for (uint64_t p : w.pos) h = (h ^ p) * 0x100000001b3ull;
                w.checksum = h ^ w.ai;
            });
            js.complete(render);
        }

        jobsys_stats stats = js.stats();
        std::printf("frame graph (C++): %u frames, %u particles, %" PRIu64 " jobs, checksum %016" PRIx64 "\n",
                    kFrames, kParticles, stats.jobs_scheduled, w.checksum);
    } catch (const jobsys::Error &e) {
        std::fprintf(stderr, "jobsys error: %s\n", e.what());
        return 1;
    }
    return 0;
}
