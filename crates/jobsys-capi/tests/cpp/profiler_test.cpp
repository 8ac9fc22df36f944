// jobsys::ProfilerHooks (jobsys.hpp), the C++ mirror of profiler_test.c:
// - only the methods a class overrides become callbacks (the others NULL);
// - a recording subclass sees every worker's start ("jobsys-worker-<w>")
//   and stop once, every named job's begin and end once each, with the
//   same id on the same OS thread, its body inside its own begin; begins
//   and ends of jobs, waits and sleeps nest per OS thread; frames 0 and 1
//   from System::frame();
// - with the argument "throw": a hook that throws aborts the process with
//   "jobsys: a ProfilerHooks method threw (boom)" (checked by c_programs.rs).
// Prints "profiler_test (C++): ok".
#include "jobsys.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "../c/check.h" // CHECK: prints the failed expression and jobsys's last error, exits 1

namespace {

enum Kind { START, STOP, BEGIN, END, WAIT_BEGIN, WAIT_END, SLEEP_BEGIN, SLEEP_END, FBEGIN, FEND };

struct Event {
    Kind kind;
    uint32_t thread;
    std::thread::id os;
    uint64_t value;
    std::string name;
};

thread_local std::vector<std::string_view> open_jobs;

struct Recorder final : jobsys::ProfilerHooks {
    std::mutex m;
    std::vector<Event> events;
    std::atomic<int> worker_sleeps{0};
    uint32_t workers = 0;

    void add(Kind k, uint32_t t, uint64_t v, std::string_view name = {}) {
        std::lock_guard<std::mutex> g(m);
        events.push_back(Event{k, t, std::this_thread::get_id(), v, std::string(name)});
    }
    void thread_start(uint32_t t, std::string_view name) override { add(START, t, 0, name); }
    void thread_stop(uint32_t t) override { add(STOP, t, 0); }
    void job_begin(uint32_t t, uint64_t job, std::string_view name) override {
        open_jobs.push_back(name);
        add(BEGIN, t, job, name);
    }
    void job_end(uint32_t t, uint64_t job, std::string_view name) override {
        open_jobs.pop_back();
        add(END, t, job, name);
    }
    void wait_begin(uint32_t t, uint64_t job) override { add(WAIT_BEGIN, t, job); }
    void wait_end(uint32_t t, uint64_t job) override { add(WAIT_END, t, job); }
    void sleep_begin(uint32_t t) override {
        if (t >= 1 && t <= workers) worker_sleeps++;
        add(SLEEP_BEGIN, t, 0);
    }
    void sleep_end(uint32_t t) override { add(SLEEP_END, t, 0); }
    void frame_begin(uint32_t t, uint64_t f) override { add(FBEGIN, t, f); }
    void frame_end(uint32_t t, uint64_t f) override { add(FEND, t, f); }
};

struct OnlyBegin : jobsys::ProfilerHooks {
    std::atomic<int> begins{0};
    void job_begin(uint32_t, uint64_t, std::string_view) override { begins++; }
};

struct OnlyPreempted : jobsys::ProfilerHooks {
    uint32_t thread = 0;
    uint64_t ns = 0;
    void preempted(uint32_t t, uint64_t wait_ns) override { thread = t, ns = wait_ns; }
};

struct Thrower : jobsys::ProfilerHooks {
    void job_begin(uint32_t, uint64_t, std::string_view) override { throw std::runtime_error("boom"); }
};

void only_overridden_methods_are_installed() {
    OnlyBegin hooks;
    jobsys_profiler_callbacks cb = jobsys::detail::profiler_callbacks(hooks);
    CHECK(cb.size == sizeof cb && cb.user_data == &hooks);
    CHECK(cb.job_begin != nullptr);
    CHECK(cb.job_end == nullptr && cb.thread_start == nullptr && cb.thread_stop == nullptr &&
          cb.job_ready == nullptr && cb.steal == nullptr && cb.wait_begin == nullptr &&
          cb.wait_end == nullptr && cb.sleep_begin == nullptr && cb.sleep_end == nullptr &&
          cb.wake == nullptr && cb.frame_begin == nullptr && cb.frame_end == nullptr &&
          cb.active_workers == nullptr && cb.preempted == nullptr);
    OnlyPreempted p;
    jobsys_profiler_callbacks pc = jobsys::detail::profiler_callbacks(p);
    CHECK(pc.preempted != nullptr && pc.job_begin == nullptr && pc.user_data == &p);
    pc.preempted(pc.user_data, 2, 900); // what the library calls: forwarded to the override
    CHECK(p.thread == 2 && p.ns == 900);
    Recorder r;
    jobsys_profiler_callbacks all = jobsys::detail::profiler_callbacks(r);
    CHECK(all.thread_start && all.thread_stop && all.job_begin && all.job_end && all.wait_begin &&
          all.wait_end && all.sleep_begin && all.sleep_end && all.frame_begin && all.frame_end);
    CHECK(all.job_ready == nullptr && all.steal == nullptr && all.wake == nullptr &&
          all.active_workers == nullptr);
    {
        jobsys::System js(jobsys::default_config(), hooks);
        js.complete(js.job().name("one").schedule([] {}));
    }
    CHECK(hooks.begins == 1);
}

void recorded() {
    const uint32_t W = 3;
    Recorder rec;
    rec.workers = W;
    jobsys_config c = jobsys::default_config();
    c.workers = int32_t(W);
    c.idle_policy = JOBSYS_IDLE_SPIN_THEN_SLEEP;
    c.spin_us = 0;
    const int N = 100;
    std::vector<std::string> names(N);
    std::vector<std::atomic<int>> inside(N);
    std::thread::id main_os = std::this_thread::get_id();
    {
        jobsys::System js(c, rec);
        for (int frame = 0; frame < 2; frame++) {
            auto f = js.frame();
            std::vector<jobsys::Handle> hs;
            for (int i = frame * N / 2; i < (frame + 1) * N / 2; i++) {
                names[i] = "cpp-job-" + std::to_string(i);
                hs.push_back(js.job().name(names[i].c_str()).schedule([&, i] {
                    if (!open_jobs.empty() && open_jobs.back() == names[i]) inside[i]++;
                }));
            }
            js.complete(js.combine(hs));
        }
        // Wait (bounded) for a worker to sleep: spin_us = 0.
        for (int i = 0; rec.worker_sleeps == 0; i++) {
            CHECK(i < 30000);
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
    }
    // Workers: start and stop once each.
    std::map<uint32_t, int> starts, stops;
    std::map<std::thread::id, uint32_t> index;
    for (const Event &e : rec.events) {
        if (e.kind == START) {
            CHECK(index.count(e.os) == 0);
            index[e.os] = e.thread;
            if (e.thread >= 1 && e.thread <= W) CHECK(e.name == "jobsys-worker-" + std::to_string(e.thread));
            starts[e.thread]++;
        } else {
            CHECK(index.count(e.os) == 1 && index[e.os] == e.thread);
        }
        if (e.kind == STOP) stops[e.thread]++;
    }
    // Workers are thread indices 1..W, the creating thread 0.
    for (uint32_t w = 1; w <= W; w++) CHECK(starts[w] == 1 && stops[w] == 1);
    CHECK(index.count(main_os) == 1 && index[main_os] == 0);
    // Brackets per OS thread.
    for (auto &[os, _] : index) {
        std::vector<const Event *> stack;
        for (const Event &e : rec.events) {
            if (e.os != os) continue;
            if (e.kind == BEGIN || e.kind == WAIT_BEGIN || e.kind == SLEEP_BEGIN) {
                stack.push_back(&e);
            } else if (e.kind == END || e.kind == WAIT_END || e.kind == SLEEP_END) {
                CHECK(!stack.empty());
                CHECK(stack.back()->kind == e.kind - 1 && stack.back()->value == e.value);
                stack.pop_back();
            }
        }
        CHECK(stack.empty());
    }
    // Jobs: one begin and one end each, paired on one thread; body inside.
    for (int i = 0; i < N; i++) {
        CHECK(inside[i] == 1);
        const Event *b = nullptr, *en = nullptr;
        int nb = 0, ne = 0;
        for (const Event &e : rec.events) {
            if (e.name != names[i]) continue;
            if (e.kind == BEGIN) nb++, b = &e;
            if (e.kind == END) ne++, en = &e;
        }
        CHECK(nb == 1 && ne == 1 && b->value == en->value && b->os == en->os);
    }
    // Frames 0 and 1, in order, on this thread.
    std::vector<std::pair<Kind, uint64_t>> frames;
    for (const Event &e : rec.events)
        if (e.kind == FBEGIN || e.kind == FEND) {
            CHECK(e.os == main_os);
            frames.emplace_back(e.kind, e.value);
        }
    CHECK((frames == std::vector<std::pair<Kind, uint64_t>>{{FBEGIN, 0}, {FEND, 0}, {FBEGIN, 1}, {FEND, 1}}));
}

} // namespace

int main(int argc, char **argv) {
    if (argc > 1 && std::strcmp(argv[1], "throw") == 0) {
        Thrower t;
        jobsys::System js(jobsys::default_config(), t);
        js.complete(js.schedule([] {}));
        std::puts("not aborted");
        return 0;
    }
    only_overridden_methods_are_installed();
    recorded();
    std::puts("profiler_test (C++): ok");
    return 0;
}
