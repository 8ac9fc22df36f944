// The render thread of examples/c/pinned.c through the C++ wrapper
// (include/jobsys.hpp): the same jobs, pins, cancelled frame and checksum,
// with lambdas, std::thread and a std::shared_ptr for the frame data (a
// lambda holding a shared_ptr is not trivially copyable, so it is boxed;
// the callables of cancelled jobs are freed too, so the last reference
// goes).
//
//   main thread (game loop), each frame:      render thread, each frame:
//     simulate (parallel_for, any thread)       run_pinned(): what is ready
//     upload  ----pinned to render------+        complete(present): helps with
//     draw (after simulate) --pinned----+          simulate, runs draw and
//     present (after draw) ---pinned----+          present when they are ready
//
// Build (after `cargo build -p jobsys-capi --release`, from crates/jobsys-capi):
//   c++ -std=c++17 -Wall -Wextra -Werror -Iinclude examples/cpp/pinned.cpp
//       ../../target/release/libjobsys_capi.a -lpthread -ldl -lm -o pinned
#include "jobsys.hpp"

#include <atomic>
#include <cinttypes>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace {

constexpr uint32_t kObjects = 4096;
constexpr uint64_t kFrames = 8;
constexpr uint64_t kCancelledFrame = 5;

struct Frame {
    explicit Frame(uint64_t n) : number(n) {}
    uint64_t number;
    std::vector<uint64_t> objects = std::vector<uint64_t>(kObjects);
    uint64_t uploaded = 0;
    uint64_t drawn = 0;
};

// The mailbox main posts each frame's `present` handle to.
struct Mailbox {
    std::mutex mu;
    std::condition_variable cv;
    int posted = 0; // frames posted; -1: quit
    int presented = 0;
    bool registered = false;
    jobsys::Handle present;
};

} // namespace

int main() {
    try {
        jobsys::System js; // the default configuration
        Mailbox box;
        uint32_t render_index = 0;
        std::atomic<unsigned> pinned_ran{0}, pinned_elsewhere{0};
        uint64_t checksum = 0;
        unsigned drawn = 0, cancelled = 0;

        auto on_render_thread = [&] {
            if (js.thread_index() != std::optional<uint32_t>(render_index)) ++pinned_elsewhere;
            ++pinned_ran;
        };

        std::thread render([&] {
            uint32_t index = js.register_thread();
            std::unique_lock<std::mutex> l(box.mu);
            render_index = index;
            box.registered = true;
            box.cv.notify_all();
            for (int frame = 0;; frame++) {
                box.cv.wait(l, [&] { return box.posted != frame; });
                if (box.posted < 0) break;
                jobsys::Handle present = box.present;
                l.unlock();
                js.run_pinned(); // the frame's upload, at least
                try {
                    js.complete(present);
                    drawn++;
                } catch (const jobsys::Cancelled &) {
                    cancelled++;
                }
                l.lock();
                box.presented = frame + 1;
                box.cv.notify_all();
            }
        });
        {
            std::unique_lock<std::mutex> l(box.mu);
            box.cv.wait(l, [&] { return box.registered; });
        }
        const jobsys::Pin on_render = jobsys::Pin::thread(render_index);

        for (uint64_t n = 0; n < kFrames; n++) {
            auto f = std::make_shared<Frame>(n);
            auto sim = js.job().name("simulate").priority(jobsys::Priority::High).parallel_for(
                0, kObjects, 256,
                [f](size_t i) { f->objects[i] = (f->number + 1) * 0x9E3779B97F4A7C15ull ^ (uint64_t(i) * i); });
            auto upload = js.job().pin(on_render).schedule([f, &on_render_thread] {
                on_render_thread();
                f->uploaded = f->number * 3 + 1;
            });
            auto draw = js.job().pin(on_render).after(sim, upload).schedule([f, &on_render_thread] {
                on_render_thread();
                uint64_t h = f->uploaded;
                for (uint64_t o : f->objects) h = (h ^ o) * 0x100000001b3ull;
                f->drawn = h;
            });
            auto present = js.job().name("present").pin(on_render).after(draw).schedule(
                [f, &on_render_thread, &checksum] {
                    on_render_thread();
                    checksum = (checksum ^ f->drawn) * 0x100000001b3ull;
                });
            if (n == kCancelledFrame) {
                // The render thread has not seen this frame yet: nothing of it started.
                if (!js.cancel(js.combine({upload, draw, present}))) return 1;
            }
            std::unique_lock<std::mutex> l(box.mu);
            box.present = present;
            box.posted = int(n) + 1;
            box.cv.notify_all();
            box.cv.wait(l, [&] { return box.presented == int(n) + 1; });
        }
        {
            std::lock_guard<std::mutex> g(box.mu);
            box.posted = -1;
        }
        box.cv.notify_all();
        render.join();

        std::printf("pinned (C++): %u frames, %u drawn, %u cancelled, %u pinned jobs on the render thread, "
                    "%u elsewhere, checksum %016" PRIx64 "\n",
                    unsigned(kFrames), drawn, cancelled, pinned_ran.load(), pinned_elsewhere.load(), checksum);
    } catch (const jobsys::Error &e) {
        std::fprintf(stderr, "jobsys error: %s\n", e.what());
        return 1;
    }
    return 0;
}
