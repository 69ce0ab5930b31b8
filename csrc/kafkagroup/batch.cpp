// assign_batch(): G groups in one call. Checks the batch's own layout once (O(G + M + P) offsets),
// then hands each group to assign() as a Problem of views into the flat arrays. The only per-group
// copies are the rebased CSR offsets (O(M_g + P_g) with replica racks) and owner[] into place.
#include "kafkagroup/batch.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <stdexcept>

#include "kafkagroup/engine.hpp"
#include "kafkagroup/worker_pool.hpp"

namespace kafkagroup {
namespace {

[[noreturn]] void fail(const std::string& message) { throw std::invalid_argument(message); }

// Offsets over `rows` rows must start at 0, never decrease and end at `total`.
void check_offsets(const View<int64_t>& offsets, std::size_t rows, std::size_t total, const char* what) {
    if (offsets.size != rows + 1)
        fail(std::string("batch ") + what + ": expected " + std::to_string(rows + 1) + " offsets, got " +
             std::to_string(offsets.size));
    if (offsets[0] != 0) fail(std::string("batch ") + what + ": first offset must be 0");
    for (std::size_t i = 0; i < rows; ++i)
        if (offsets[i + 1] < offsets[i])
            fail(std::string("batch ") + what + ": offsets decrease at " + std::to_string(i));
    if (static_cast<uint64_t>(offsets[rows]) != total)
        fail(std::string("batch ") + what + ": last offset " + std::to_string(offsets[rows]) + " != " +
             std::to_string(total) + " entries");
}

template <class T>
View<T> slice(const View<T>& v, int64_t begin, int64_t end) {
    return View<T>{v.data + begin, static_cast<std::size_t>(end - begin)};
}

// offsets[begin..end] shifted to start at 0, into `scratch`; returns a view of it.
View<int64_t> rebased(const View<int64_t>& offsets, int64_t begin, int64_t end, std::vector<int64_t>& scratch) {
    scratch.resize(static_cast<std::size_t>(end - begin + 1));
    const int64_t base = offsets[begin];
    for (int64_t i = begin; i <= end; ++i) scratch[i - begin] = offsets[i] - base;
    return View<int64_t>{scratch.data(), scratch.size()};
}

// A group's metrics into its place of the column-major metrics array: metric k at first[k * groups].
void store_metrics(const Metrics& m, int64_t* first, std::size_t groups) {
    const int64_t values[kMetricCount] = {m.balance_gap, m.max_load, m.min_load,  m.assigned,
                                          m.unassigned,  m.withheld, m.moved,     m.moved_lower_bound};
    for (int k = 0; k < kMetricCount; ++k) first[static_cast<std::size_t>(k) * groups] = values[k];
}

struct Scratch {
    std::vector<int64_t> sub_offsets, owned_offsets, replica_offsets;
};

class BatchRunner {
public:
    BatchRunner(const std::string& strategy, const GroupBatch& batch, BatchResult& out)
        : strategy_(strategy), b_(batch), out_(out), G_(static_cast<int64_t>(batch.topic_offsets.size) - 1) {
        withheld_.resize(static_cast<std::size_t>(G_));
    }

    // Runs groups [g0, g1); group errors go to `errors`.
    void run(int64_t g0, int64_t g1, Scratch& s, std::vector<GroupError>& errors) {
        for (int64_t g = g0; g < g1; ++g) run_group(g, s, errors);
    }

    // Moves the per-group withheld lists into the flat result.
    void gather_withheld() {
        out_.withheld_offsets.assign(static_cast<std::size_t>(G_ + 1), 0);
        std::size_t total = 0;
        for (int64_t g = 0; g < G_; ++g) {
            total += withheld_[g].size();
            out_.withheld_offsets[g + 1] = static_cast<int64_t>(total);
        }
        out_.withheld.reserve(total);
        for (auto& w : withheld_) out_.withheld.insert(out_.withheld.end(), w.begin(), w.end());
    }

private:
    bool uses(int64_t g, uint8_t input) const { return b_.group_inputs.empty() || (b_.group_inputs[g] & input); }

    void run_group(int64_t g, Scratch& s, std::vector<GroupError>& errors) {
        if (!b_.group_inputs.empty() && (b_.group_inputs[g] & kSkipGroup)) return;
        const int64_t t0 = b_.topic_offsets[g], t1 = b_.topic_offsets[g + 1];
        const int64_t m0 = b_.member_offsets[g], m1 = b_.member_offsets[g + 1];
        const int64_t p0 = out_.part_offsets[g], p1 = out_.part_offsets[g + 1];
        Problem p;
        p.partition_count = slice(b_.partition_count, t0, t1);
        p.sub_offsets = rebased(b_.sub_offsets, m0, m1, s.sub_offsets);
        p.sub_topics = slice(b_.sub_topics, b_.sub_offsets[m0], b_.sub_offsets[m1]);
        if (!b_.owned_offsets.empty() && uses(g, kInputOwned)) {
            p.owned_offsets = rebased(b_.owned_offsets, m0, m1, s.owned_offsets);
            p.owned_partitions = slice(b_.owned_partitions, b_.owned_offsets[m0], b_.owned_offsets[m1]);
        }
        if (!b_.generation.empty() && uses(g, kInputGeneration)) p.generation = slice(b_.generation, m0, m1);
        if (!b_.member_rack.empty() && uses(g, kInputMemberRack)) p.member_rack = slice(b_.member_rack, m0, m1);
        if (!b_.replica_offsets.empty() && uses(g, kInputReplicaRacks)) {
            p.replica_offsets = rebased(b_.replica_offsets, p0, p1, s.replica_offsets);
            p.replica_racks = slice(b_.replica_racks, b_.replica_offsets[p0], b_.replica_offsets[p1]);
        }
        const auto start = std::chrono::steady_clock::now();
        try {
            AssignResult r = assign(strategy_, p);
            // prepare() accepted the counts, so owner[] has exactly the group's p1 - p0 entries
            std::copy(r.owner.begin(), r.owner.end(), out_.owner.begin() + p0);
            store_metrics(r.metrics, out_.metrics.data() + g, out_.engine_us.size());
            withheld_[g] = std::move(r.withheld);
        } catch (const std::invalid_argument& e) {   // before logic_error: it is one
            errors.push_back(GroupError{g, GroupError::kInvalidInput, e.what()});
        } catch (const std::logic_error& e) {
            errors.push_back(GroupError{g, GroupError::kInvariant, e.what()});
        }
        out_.engine_us[g] =
            std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    }

    const std::string& strategy_;
    const GroupBatch& b_;
    BatchResult& out_;
    const int64_t G_;
    std::vector<std::vector<int32_t>> withheld_;
};

// Validates the batch layout (not the groups: prepare() does that per group) and sizes `out`.
void lay_out(const GroupBatch& b, BatchResult& out) {
    if (b.topic_offsets.size == 0) fail("batch topic_offsets: expected G+1 offsets, got 0");
    const std::size_t G = b.topic_offsets.size - 1;
    if (b.member_offsets.size == 0) fail("batch member_offsets: expected G+1 offsets, got 0");
    const std::size_t M = b.member_offsets[b.member_offsets.size - 1] < 0
                              ? 0 : static_cast<std::size_t>(b.member_offsets[b.member_offsets.size - 1]);
    check_offsets(b.topic_offsets, G, b.partition_count.size, "topic_offsets");
    check_offsets(b.member_offsets, G, M, "member_offsets");
    check_offsets(b.sub_offsets, M, b.sub_topics.size, "sub_offsets");
    if (!b.owned_offsets.empty()) check_offsets(b.owned_offsets, M, b.owned_partitions.size, "owned_offsets");
    else if (!b.owned_partitions.empty()) fail("batch owned_partitions given without owned_offsets");
    if (!b.generation.empty() && b.generation.size != M)
        fail("batch generation: expected " + std::to_string(M) + " entries, got " + std::to_string(b.generation.size));
    if (!b.member_rack.empty() && b.member_rack.size != M)
        fail("batch member_rack: expected " + std::to_string(M) + " entries, got " + std::to_string(b.member_rack.size));
    if (!b.group_inputs.empty() && b.group_inputs.size != G)
        fail("batch group_inputs: expected " + std::to_string(G) + " entries, got " + std::to_string(b.group_inputs.size));
    // A group's room is the sum of its non-negative counts, or none when that sum is over the engine's
    // bound (nothing is allocated for it); prepare() then reports the negative count or the bound as
    // that group's error.
    out.part_offsets.assign(G + 1, 0);
    int64_t total = 0;
    for (std::size_t g = 0; g < G; ++g) {
        int64_t room = 0;
        for (int64_t t = b.topic_offsets[g]; t < b.topic_offsets[g + 1] && room <= kMaxPartitions; ++t)
            room += std::max<int32_t>(b.partition_count[t], 0);
        total += room <= kMaxPartitions ? room : 0;
        out.part_offsets[g + 1] = total;
    }
    if (!b.replica_offsets.empty())
        check_offsets(b.replica_offsets, static_cast<std::size_t>(total), b.replica_racks.size, "replica_offsets");
    else if (!b.replica_racks.empty()) fail("batch replica_racks given without replica_offsets");
    out.owner.assign(static_cast<std::size_t>(total), kUnassigned);
    out.metrics.assign(G * kMetricCount, 0);
    out.engine_us.assign(G, 0.0);
}

}  // namespace

std::vector<std::string> metric_names() {
    return {"balance_gap", "max_load", "min_load", "assigned", "unassigned", "withheld", "moved", "moved_lower_bound"};
}

BatchResult assign_batch(const std::string& strategy, const GroupBatch& batch, int threads) {
    const std::vector<std::string> names = strategy_names();
    if (std::find(names.begin(), names.end(), strategy) == names.end())
        fail("unknown assignment strategy '" + strategy + "'");
    BatchResult out;
    lay_out(batch, out);
    const int64_t G = static_cast<int64_t>(batch.topic_offsets.size) - 1;
    BatchRunner runner(strategy, batch, out);

    // Work of a group ~ members + partitions + subscriptions, plus a fixed cost. Chunks of about
    // total / (8 * threads) let fast threads take more of them when groups differ wildly in size.
    const int workers = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(threads, G)));
    if (workers == 1) {
        Scratch scratch;
        runner.run(0, G, scratch, out.errors);
    } else {
        std::vector<int64_t> chunk_start{0};
        {
            auto work = [&](int64_t g) {
                const int64_t m0 = batch.member_offsets[g], m1 = batch.member_offsets[g + 1];
                return 16 + (m1 - m0) + (out.part_offsets[g + 1] - out.part_offsets[g]) +
                       (batch.sub_offsets[m1] - batch.sub_offsets[m0]);
            };
            int64_t total = 0;
            for (int64_t g = 0; g < G; ++g) total += work(g);
            const int64_t target = std::max<int64_t>(1, total / (8 * workers));
            int64_t acc = 0;
            for (int64_t g = 0; g < G; ++g) {
                acc += work(g);
                if (acc >= target) {
                    chunk_start.push_back(g + 1);
                    acc = 0;
                }
            }
            if (chunk_start.back() != G) chunk_start.push_back(G);
        }
        const int64_t chunks = static_cast<int64_t>(chunk_start.size()) - 1;
        std::atomic<int64_t> next{0};
        std::vector<std::vector<GroupError>> errors(static_cast<std::size_t>(workers));
        std::vector<std::exception_ptr> failures(static_cast<std::size_t>(workers));
        auto work_loop = [&](int w) {
            try {
                Scratch scratch;
                for (int64_t c = next++; c < chunks; c = next++)
                    runner.run(chunk_start[c], chunk_start[c + 1], scratch, errors[w]);
            } catch (...) {   // e.g. bad_alloc: stop everyone, rethrow on the calling thread
                failures[w] = std::current_exception();
                next = chunks;
            }
        };
        run_workers(workers, work_loop);
        for (auto& f : failures)
            if (f) std::rethrow_exception(f);
        for (auto& e : errors) out.errors.insert(out.errors.end(), e.begin(), e.end());
        std::sort(out.errors.begin(), out.errors.end(),
                  [](const GroupError& a, const GroupError& b) { return a.group < b.group; });
    }
    runner.gather_withheld();
    return out;
}

}  // namespace kafkagroup
