// StringTable: string -> dense int32 id, open addressing with linear probing over (hash, id) slots.
// Why not std::unordered_map<std::string_view, ...>: the batch builder hashes every topic name a
// fleet's members send (about 40 per group of the small-group fleet); the node-based map costs an
// allocation per distinct name and a pointer chase per probe, and measured about twice the time of this
// table for that work. Keys are views: the caller keeps the bytes alive as long as the table.
// Capacity: up to 2^30 distinct strings (slots are a power of two, at most half full).
// Many lookups at once (a batch's names against a fleet's catalog of a million topics, whose slots do not
// fit the cache) go through the *_hashed calls: hash everything first, then touch(h) a slot a few lookups
// ahead, so that the cache misses of consecutive lookups overlap instead of following one another.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace kafkagroup {

// 64-bit hash of a byte string, 8 bytes per step (a multiply-xorshift mix; not for adversarial input:
// a collision costs probes, never a wrong answer).
inline uint64_t hash_bytes(std::string_view s) {
    constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;
    uint64_t h = s.size() * kMul;
    const char* p = s.data();
    std::size_t n = s.size();
    while (n >= 8) {
        uint64_t w;
        std::memcpy(&w, p, 8);
        h = (h ^ w) * kMul;
        h ^= h >> 29;
        p += 8;
        n -= 8;
    }
    if (n) {
        uint64_t w = 0;
        std::memcpy(&w, p, n);
        h = (h ^ w) * kMul;
    }
    h ^= h >> 32;
    h *= kMul;
    return h ^ (h >> 29);
}

// A hint to load the cache line at p (a no-op where the compiler has no prefetch builtin).
inline void prefetch(const void* p) {
#if defined(__GNUC__) || defined(__clang__)
    __builtin_prefetch(p);
#else
    (void)p;
#endif
}

class StringTable {
public:
    explicit StringTable(std::size_t expected = 16) {
        rehash(expected * 2 + 16);
        keys_.reserve(expected);   // no regrowth (copies, fresh pages) while the expected keys arrive
    }

    // Id of `s`, or -1.
    int32_t find(std::string_view s) const { return find_hashed(s, hash_bytes(s)); }

    // find() / insert() of a string whose hash_bytes() the caller already has.
    int32_t find_hashed(std::string_view s, uint64_t h) const {
        for (std::size_t i = h & mask_;; i = (i + 1) & mask_) {
            const Slot& slot = slots_[i];
            if (slot.id < 0) return -1;
            if (slot.hash == h && keys_[slot.id] == s) return slot.id;
        }
    }

    // Id of `s`, adding it (id = size() before the call) when new; `fresh` says which.
    int32_t insert(std::string_view s, bool& fresh) { return insert_hashed(s, hash_bytes(s), fresh); }

    int32_t insert_hashed(std::string_view s, uint64_t h, bool& fresh) {
        if ((keys_.size() + 1) * 2 > slots_.size()) rehash(slots_.size() * 2);
        for (std::size_t i = h & mask_;; i = (i + 1) & mask_) {
            Slot& slot = slots_[i];
            if (slot.id < 0) {
                slot = Slot{h, static_cast<int32_t>(keys_.size())};
                keys_.push_back(s);
                fresh = true;
                return slot.id;
            }
            if (slot.hash == h && keys_[slot.id] == s) {
                fresh = false;
                return slot.id;
            }
        }
    }

    // Prefetch hints (no effect on results): the first slot probed for hash h; then, once that slot is
    // cached, the key its id names (both the view and its first bytes). Returns that id, or -1.
    void touch(uint64_t h) const { prefetch(&slots_[h & mask_]); }
    int32_t touch_key(uint64_t h) const {
        const Slot& slot = slots_[h & mask_];
        if (slot.id < 0 || slot.hash != h) return -1;
        prefetch(&keys_[slot.id]);
        return slot.id;
    }
    void touch_bytes(int32_t id) const { prefetch(keys_[id].data()); }

    std::size_t size() const { return keys_.size(); }
    std::string_view key(int32_t id) const { return keys_[id]; }
    const std::vector<std::string_view>& keys() const { return keys_; }

private:
    struct Slot {
        uint64_t hash = 0;
        int32_t id = -1;
    };
    void rehash(std::size_t want) {
        std::size_t cap = 16;
        while (cap < want) cap <<= 1;
        std::vector<Slot> old;
        old.swap(slots_);
        slots_.assign(cap, Slot{});
        mask_ = cap - 1;
        for (const Slot& s : old)
            if (s.id >= 0) {
                std::size_t i = s.hash & mask_;
                while (slots_[i].id >= 0) i = (i + 1) & mask_;
                slots_[i] = s;
            }
    }
    std::vector<Slot> slots_;
    std::vector<std::string_view> keys_;
    std::size_t mask_ = 0;
};

}  // namespace kafkagroup
