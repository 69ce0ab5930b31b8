#include "kafkagroup/huge_pages.hpp"

#include <cstdint>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace kafkagroup {

void advise_huge_pages(const void* data, std::size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (data == nullptr || bytes < kHugePageAdviceBytes) return;
    const long page_size = sysconf(_SC_PAGESIZE);
    if (page_size <= 0) return;
    const uintptr_t page = static_cast<uintptr_t>(page_size);
    const uintptr_t start = reinterpret_cast<uintptr_t>(data);
    const uintptr_t begin = (start + page - 1) / page * page;   // madvise takes whole pages
    const uintptr_t end = (start + bytes) / page * page;
    if (end > begin) (void)madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);   // advice only
#else
    (void)data;
    (void)bytes;
#endif
}

}  // namespace kafkagroup
