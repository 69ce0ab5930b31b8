// Running one work loop on several threads, the calling thread among them: the one home of how the batch
// planners (batch.cpp, plan_batch.cpp) start and join their threads.
#pragma once

#include <cstddef>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace kafkagroup {

// Starts a std::thread running work(w); the default for run_workers' `start` (a test passes one that fails).
struct StartThread {
    template <class Work>
    std::thread operator()(Work& work, int w) const { return std::thread(work, w); }
};

// Runs work(w) for w = 0 .. workers-1: w = 0 on the calling thread, the others on threads it starts, and joins
// every thread it started before it returns or throws. `work` must take its items from a queue shared by all
// loops (each of ours takes the next index from one atomic counter) and must not throw. A thread that cannot
// be started (std::system_error: the process's or the machine's thread limit) is not retried and no later one
// is tried: the loops already running, the caller's at least, take the whole queue between them, so the
// result is the same with fewer threads. (Before, a failed start destroyed the joinable threads already
// started, and std::thread's destructor ends the process.) Returns how many loops ran.
template <class Work, class Start = StartThread>
int run_workers(int workers, Work&& work, Start&& start = Start{}) {
    std::vector<std::thread> pool;
    pool.reserve(workers > 1 ? static_cast<std::size_t>(workers - 1) : 0);   // (no reallocation below)
    for (int w = 1; w < workers; ++w) {
        try {
            pool.push_back(start(work, w));
        } catch (const std::system_error&) {
            break;
        }
    }
    struct JoinAll {
        std::vector<std::thread>& threads;
        ~JoinAll() {
            for (auto& t : threads)
                if (t.joinable()) t.join();
        }
    } join_all{pool};
    work(0);
    return 1 + static_cast<int>(pool.size());
}

}  // namespace kafkagroup
