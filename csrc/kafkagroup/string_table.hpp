// StringTable: string -> dense int32 id, open addressing with linear probing over (hash, id) slots.
// Why not std::unordered_map<std::string_view, ...>: the batch builder hashes every topic name a
// fleet's members send (about 40 per group of the small-group fleet); the node-based map costs an
// allocation per distinct name and a pointer chase per probe, and measured about twice the time of this
// table for that work. Keys are views: the caller keeps the bytes alive as long as the table.
// Capacity: up to 2^30 distinct strings (slots are a power of two, at most half full).
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

class StringTable {
public:
    explicit StringTable(std::size_t expected = 16) { rehash(expected * 2 + 16); }

    // Id of `s`, or -1.
    int32_t find(std::string_view s) const {
        const uint64_t h = hash_bytes(s);
        for (std::size_t i = h & mask_;; i = (i + 1) & mask_) {
            const Slot& slot = slots_[i];
            if (slot.id < 0) return -1;
            if (slot.hash == h && keys_[slot.id] == s) return slot.id;
        }
    }

    // Id of `s`, adding it (id = size() before the call) when new; `fresh` says which.
    int32_t insert(std::string_view s, bool& fresh) {
        if ((keys_.size() + 1) * 2 > slots_.size()) rehash(slots_.size() * 2);
        const uint64_t h = hash_bytes(s);
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

    std::size_t size() const { return keys_.size(); }
    std::string_view key(int32_t id) const { return keys_[id]; }

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
