// Linked through CMake's jobsys::jobsys (tests/cmake.rs): a small graph
// with a dependency, a parallel_for after it and a combine, checked.
#include "jobsys.hpp"

#include <atomic>
#include <cstdio>
#include <vector>

int main() {
    jobsys::System js(2);
    std::vector<uint64_t> v(1000, 0);
    std::atomic<int> order{0};
    int first = -1;
    auto fill = js.schedule([&] {
        for (size_t i = 0; i < v.size(); i++) v[i] = i;
        first = order.fetch_add(1);
    });
    auto square = js.job().after(fill).parallel_for(0, v.size(), 0, [&](size_t i) { v[i] *= v[i]; });
    auto other = js.schedule([&] { order.fetch_add(1); });
    js.complete(js.combine({square, other}));
    uint64_t sum = 0;
    for (uint64_t x : v) sum += x;
    // sum of i^2 for i < 1000
    if (sum != 332833500 || first < 0 || order.load() != 2) {
        std::printf("cmake test (C++): wrong result: sum %llu\n", (unsigned long long)sum);
        return 1;
    }
    std::printf("cmake test (C++): ok, sum %llu\n", (unsigned long long)sum);
    return 0;
}
