// The buffers between kernels: a PagedFloats arena starts at zero, becomes
// resident only where written, and hands its pages back when it goes.
#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "core/model/buffers.h"

using namespace mlk;

namespace {

// Pages of [p, p + bytes) the kernel reports resident (mincore).
size_t resident_pages(const void* p, size_t bytes) {
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    std::vector<unsigned char> in((bytes + page - 1) / page);
    if (mincore(const_cast<void*>(p), bytes, in.data()) != 0) return (size_t)-1;
    return (size_t)std::count_if(in.begin(), in.end(), [](unsigned char c) { return (c & 1) != 0; });
}

}  // namespace

TEST(PagedFloats, StartsAtZeroAndKeepsWhatIsWritten) {
    PagedFloats a(3000);
    ASSERT_EQ(a.size(), 3000u);
    ASSERT_NE(a.data(), nullptr);
    for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a.data()[i], 0.0f) << i;
    for (size_t i = 0; i < a.size(); ++i) a.data()[i] = (float)i;
    EXPECT_EQ(a.span()[2999], 2999.0f);
    EXPECT_EQ(PagedFloats().size(), 0u);
    EXPECT_EQ(PagedFloats().data(), nullptr);
}

TEST(PagedFloats, MovingHandsOverTheSameFloats) {
    PagedFloats a(1000);
    a.data()[7] = 7.0f;
    const float* where = a.data();
    PagedFloats b(std::move(a));
    EXPECT_EQ(a.data(), nullptr);
    EXPECT_EQ(a.size(), 0u);
    EXPECT_EQ(b.data(), where);
    EXPECT_EQ(b.data()[7], 7.0f);
    PagedFloats c(10);
    c = std::move(b);
    EXPECT_EQ(c.size(), 1000u);
    EXPECT_EQ(c.data()[7], 7.0f);
    EXPECT_EQ(b.size(), 0u);
}

// The point of the type: a 64 MB gradient arena costs memory only where a
// backward has written it (where the system makes transparent huge pages of
// its own accord, up to 2 MB around a write), and its pages go back to the
// system when it is destroyed.
TEST(PagedFloats, OnlyWrittenPagesBecomeResident) {
    const size_t n = size_t{16} << 20, bytes = n * sizeof(float);
    const size_t page = (size_t)sysconf(_SC_PAGESIZE), pages = bytes / page;
    PagedFloats a(n);
    EXPECT_EQ(resident_pages(a.data(), bytes), 0u);
    a.data()[0] = 1.0f;
    a.data()[n / 2] = 2.0f;
    const size_t after_two_writes = resident_pages(a.data(), bytes);
    EXPECT_GE(after_two_writes, 2u);
    EXPECT_LE(after_two_writes, 2 * ((size_t{2} << 20) / page));
    std::fill(a.data(), a.data() + n, 3.0f);
    EXPECT_EQ(resident_pages(a.data(), bytes), pages);
    // Once destroyed the range is unmapped: mincore refuses it.
    const float* gone = a.data();
    a = PagedFloats();
    std::vector<unsigned char> in(1);
    EXPECT_NE(mincore(const_cast<float*>(gone), page, in.data()), 0);
}

// Prefaulting makes exactly the pages under the range resident (the pages
// holding its first and last float included) and changes no value: zeros
// stay zero, written floats keep their bits, and memory outside the range
// stays unmapped. On a heap vector, already resident, it changes nothing.
TEST(PagedFloats, PrefaultingForWriteMapsTheRangesPagesAndKeepsTheirValues) {
    const size_t page = (size_t)sysconf(_SC_PAGESIZE), per_page = page / sizeof(float);
    const size_t pages = 64, n = pages * per_page;
    PagedFloats a(n);
    a.data()[3 * per_page + 5] = -1.5f;  // one page written before
    // From the middle of page 2 to the middle of page 9: pages 2..9.
    prefault_for_write(a.data() + 2 * per_page + 7, 7 * per_page);
    const size_t bytes = n * sizeof(float);
    EXPECT_EQ(resident_pages(a.data(), bytes), 8u);
    EXPECT_EQ(resident_pages(a.data(), 2 * page), 0u);
    EXPECT_EQ(resident_pages(a.data() + 2 * per_page, 8 * page), 8u);
    EXPECT_EQ(resident_pages(a.data() + 10 * per_page, (pages - 10) * page), 0u);
    prefault_for_write(a.data(), 0);  // an empty range maps nothing
    EXPECT_EQ(resident_pages(a.data(), bytes), 8u);
    // (reading maps the rest to the zero page, which mincore counts: last)
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(a.data()[i], i == 3 * per_page + 5 ? -1.5f : 0.0f) << i;

    std::vector<float> heap(3 * per_page);
    for (size_t i = 0; i < heap.size(); ++i) heap[i] = (float)i * 0.25f - 7.0f;
    const std::vector<float> before = heap;
    prefault_for_write(heap.data() + 1, heap.size() - 2);
    EXPECT_EQ(heap, before);
}
