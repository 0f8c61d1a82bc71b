// 16-lane "vector" of plain floats: the portable fallback, and the definition
// of what every lane of the SIMD types computes. Included only by
// isa/scalar.cpp. fma is the correctly rounded fmaf.

// The lane masks are returned by value inside this file only; their ABI never
// crosses it.
#pragma GCC diagnostic ignored "-Wpsabi"

struct V {
    // GCC's generic vectors: +, -, *, / and compares are lane-wise IEEE
    // operations, lowered to whatever the baseline ISA has, so the compiler
    // sees 16 lanes as one value instead of 16 unrolled scalars.
    typedef float Lanes __attribute__((vector_size(64)));
    typedef int32_t ILanes __attribute__((vector_size(64)));
    Lanes f;
    using Mask = uint32_t;  // bit i = lane i active
    static constexpr int kMR = 4;
    static constexpr int kNV = 1;
    static constexpr int kNV1 = 2;
    static constexpr int kNVreg = 0;

    static Mask mask(int n) { return n >= 16 ? 0xffffu : (n <= 0 ? 0u : ((1u << n) - 1u)); }
    static ILanes lanes(Mask m) {
        const ILanes bit = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768};
        return ((ILanes{} + (int32_t)m) & bit) != 0;
    }
    static V zero() { return V{Lanes{}}; }
    static V set1(float x) { return V{Lanes{} + x}; }
    static V load(const float* p) {
        V r;
        __builtin_memcpy(&r.f, p, sizeof r.f);
        return r;
    }
    static V loadm(const float* p, Mask m) {
        V r{Lanes{}};
        for (int i = 0; i < 16; ++i)
            if ((m >> i) & 1u) r.f[i] = p[i];
        return r;
    }
    void store(float* p) const { __builtin_memcpy(p, &f, sizeof f); }
    void storem(float* p, Mask m) const {
        for (int i = 0; i < 16; ++i)
            if ((m >> i) & 1u) p[i] = f[i];
    }
    static void transpose16(V (&r)[16]) {  // r[i] lane j <- r[j] lane i
        for (int i = 0; i < 16; ++i)
            for (int j = i + 1; j < 16; ++j) {
                const float x = r[i].f[j];
                r[i].f[j] = r[j].f[i];
                r[j].f[i] = x;
            }
    }
    friend V operator+(const V& a, const V& b) { return V{a.f + b.f}; }
    friend V operator-(const V& a, const V& b) { return V{a.f - b.f}; }
    friend V operator*(const V& a, const V& b) { return V{a.f * b.f}; }
    friend V operator/(const V& a, const V& b) { return V{a.f / b.f}; }
    static V fma(const V& a, const V& b, const V& c) {
        V r;
        for (int i = 0; i < 16; ++i) r.f[i] = __builtin_fmaf(a.f[i], b.f[i], c.f[i]);
        return r;
    }
    static V max(const V& a, const V& b) { return V{a.f > b.f ? a.f : b.f}; }  // maxps' NaN/zero convention
    V swap_halves() const {                                                    // lanes 8-15, 0-7
        const ILanes idx = {8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7};
        return V{__builtin_shuffle(f, idx)};
    }
    static V select(Mask m, const V& a, const V& b) { return V{lanes(m) ? a.f : b.f}; }
    static V exp(const V& x) {
        V r;
        for (int i = 0; i < 16; ++i) r.f[i] = exp_s(x.f[i]);
        return r;
    }
    float sum_tree() const {
        float l[16];
        for (int i = 0; i < 16; ++i) l[i] = f[i];
        for (int s = 8; s > 0; s >>= 1)
            for (int i = 0; i < s; ++i) l[i] = l[i] + l[i + s];
        return l[0];
    }
    float max_all() const {
        float m = f[0];
        for (int i = 1; i < 16; ++i) m = f[i] > m ? f[i] : m;
        return m;
    }
    // Up to sixteen reductions side by side (lane b < n of the result is
    // x[b]'s; the other lanes are unspecified, here 0): the same tree as
    // sum_tree, for the SIMD types to run as a transpose instead of n
    // horizontal reductions.
    static V sum_tree_lanes(const V* x, int n) {
        V r = zero();
        for (int b = 0; b < n; ++b) r.f[b] = x[b].sum_tree();
        return r;
    }
    V round(Dtype dt) const {
        if (dt == Dtype::f32) return *this;
        V r;
        for (int i = 0; i < 16; ++i) r.f[i] = round_to(f[i], dt);
        return r;
    }
};
