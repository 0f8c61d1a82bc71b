// 16-lane vector type for the AVX2 path (two ymm: lanes 0-7 and 8-15).
// Included only by isa/avx2.cpp inside its `#pragma GCC target` region.

struct V {
    __m256 lo, hi;
    struct Mask {
        __m256i lo, hi;
    };
    static constexpr int kMR = 4;
    static constexpr int kNV = 1;
    static constexpr int kNV1 = 3;
    static constexpr int kNVreg = 0;

    static Mask mask(int n) {
        const __m256i iota_lo = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        const __m256i iota_hi = _mm256_setr_epi32(8, 9, 10, 11, 12, 13, 14, 15);
        __m256i nn = _mm256_set1_epi32(n);
        return {_mm256_cmpgt_epi32(nn, iota_lo), _mm256_cmpgt_epi32(nn, iota_hi)};
    }
    static V zero() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
    static V set1(float x) {
        __m256 b = _mm256_set1_ps(x);
        return {b, b};
    }
    // r[i] lane j <- r[j] lane i: the four 8 x 8 blocks transposed in
    // registers, the off-diagonal two trading places.
    static void transpose8(__m256 (&r)[8]) {
        __m256 t[8], u[8];
        for (int i = 0; i < 8; i += 2) {
            t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
            t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
        }
        for (int i = 0; i < 8; i += 4) {
            u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
            u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
            u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
            u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
        }
        for (int i = 0; i < 4; ++i) {
            r[i] = _mm256_permute2f128_ps(u[i], u[4 + i], 0x20);
            r[4 + i] = _mm256_permute2f128_ps(u[i], u[4 + i], 0x31);
        }
    }
    static void transpose16(V (&r)[16]) {
        __m256 a[8], b[8], c[8], d[8];  // rows 0-7 lanes 0-7, 8-15; rows 8-15 lanes 0-7, 8-15
        for (int i = 0; i < 8; ++i) a[i] = r[i].lo, b[i] = r[i].hi, c[i] = r[8 + i].lo, d[i] = r[8 + i].hi;
        transpose8(a), transpose8(b), transpose8(c), transpose8(d);
        for (int i = 0; i < 8; ++i) r[i] = {a[i], c[i]}, r[8 + i] = {b[i], d[i]};
    }
    V swap_halves() const { return {hi, lo}; }  // lanes 8-15, 0-7
    static V load(const float* p) { return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
    static V loadm(const float* p, const Mask& m) {
        return {_mm256_maskload_ps(p, m.lo), _mm256_maskload_ps(p + 8, m.hi)};
    }
    void store(float* p) const {
        _mm256_storeu_ps(p, lo);
        _mm256_storeu_ps(p + 8, hi);
    }
    void storem(float* p, const Mask& m) const {
        _mm256_maskstore_ps(p, m.lo, lo);
        _mm256_maskstore_ps(p + 8, m.hi, hi);
    }

    static V fma(V a, V b, V c) { return {_mm256_fmadd_ps(a.lo, b.lo, c.lo), _mm256_fmadd_ps(a.hi, b.hi, c.hi)}; }
    static V max(V a, V b) { return {_mm256_max_ps(a.lo, b.lo), _mm256_max_ps(a.hi, b.hi)}; }
    static V select(const Mask& m, V a, V b) {
        return {_mm256_blendv_ps(b.lo, a.lo, _mm256_castsi256_ps(m.lo)),
                _mm256_blendv_ps(b.hi, a.hi, _mm256_castsi256_ps(m.hi))};
    }

    __attribute__((always_inline)) static __m256 exp8(__m256 xv) {
        __m256 n =
            _mm256_round_ps(_mm256_mul_ps(xv, _mm256_set1_ps(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        __m256 r = _mm256_fmadd_ps(n, _mm256_set1_ps(-kExpC1), xv);
        r = _mm256_fmadd_ps(n, _mm256_set1_ps(-kExpC2), r);
        __m256 y = _mm256_set1_ps(kExpP0);
        y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(kExpP1));
        y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(kExpP2));
        y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(kExpP3));
        y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(kExpP4));
        y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(kExpP5));
        __m256 z = _mm256_mul_ps(r, r);
        y = _mm256_fmadd_ps(y, z, r);
        y = _mm256_add_ps(y, _mm256_set1_ps(1.0f));
        __m256i ni = _mm256_cvtps_epi32(n);
        ni = _mm256_max_epi32(_mm256_min_epi32(ni, _mm256_set1_epi32(128)), _mm256_set1_epi32(-126));
        __m256i n1 = _mm256_srai_epi32(ni, 1);
        __m256i n2 = _mm256_sub_epi32(ni, n1);
        const __m256i bias = _mm256_set1_epi32(127);
        __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
        __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
        __m256 res = _mm256_mul_ps(_mm256_mul_ps(y, s1), s2);
        res = _mm256_blendv_ps(res, _mm256_set1_ps(std::numeric_limits<float>::infinity()),
                               _mm256_cmp_ps(xv, _mm256_set1_ps(kExpHi), _CMP_GT_OQ));
        res = _mm256_blendv_ps(res, _mm256_setzero_ps(), _mm256_cmp_ps(xv, _mm256_set1_ps(kExpLo), _CMP_LT_OQ));
        res = _mm256_blendv_ps(res, xv, _mm256_cmp_ps(xv, xv, _CMP_UNORD_Q));
        return res;
    }
    __attribute__((always_inline)) static V exp(V x) { return {exp8(x.lo), exp8(x.hi)}; }

    float sum_tree() const {
        __m256 s8 = _mm256_add_ps(lo, hi);  // lane i += lane i+8
        __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
        __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
        __m128 s1 = _mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1));
        return _mm_cvtss_f32(s1);
    }
    float max_all() const {
        __m256 m8 = _mm256_max_ps(lo, hi);
        __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m8), _mm256_extractf128_ps(m8, 1));
        __m128 m2 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
        __m128 m1 = _mm_max_ss(m2, _mm_shuffle_ps(m2, m2, 1));
        return _mm_cvtss_f32(m1);
    }
    // As in simd_scalar.h; lane by lane through memory (AVX2 machines are not
    // where the fast decode's scores need the transposes).
    static V sum_tree_lanes(const V* x, int n) {
        alignas(32) float r[16] = {};
        for (int b = 0; b < n; ++b) r[b] = x[b].sum_tree();
        return load(r);
    }

    __attribute__((always_inline)) static __m256 round8(__m256 v, Dtype dt) {
        if (dt == Dtype::bf16) {
            __m256i u = _mm256_castps_si256(v);
            __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
            __m256i r = _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb);
            r = _mm256_and_si256(r, _mm256_set1_epi32((int)0xffff0000u));
            __m256i qnan =
                _mm256_and_si256(_mm256_or_si256(u, _mm256_set1_epi32(0x400000)), _mm256_set1_epi32((int)0xffff0000u));
            __m256 isnan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
            return _mm256_blendv_ps(_mm256_castsi256_ps(r), _mm256_castsi256_ps(qnan), isnan);
        }
        if (dt == Dtype::f16) {
            __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            return _mm256_cvtph_ps(h);
        }
        if (dt == Dtype::fp8_e4m3) return fp8_round8<true>(v);
        if (dt == Dtype::fp8_e5m2) return fp8_round8<false>(v);
        return v;
    }
    // fp8_round_as (dtype.h) on 8 lanes, the same steps (simd_avx512.h's fp8_round16).
    template <bool E4M3>
    __attribute__((always_inline)) static __m256 fp8_round8(__m256 x) {
        constexpr int kShift = 23 - (E4M3 ? 3 : 2);
        const __m256 min_normal = _mm256_set1_ps(E4M3 ? 0x1p-6f : 0x1p-14f);
        const __m256 max = _mm256_set1_ps(E4M3 ? 448.0f : 57344.0f);
        const __m256 shift = _mm256_set1_ps(E4M3 ? 0x1p14f : 0x1p7f);
        const __m256i u = _mm256_castps_si256(x);
        const __m256i sign = _mm256_and_si256(u, _mm256_set1_epi32((int)0x80000000u));
        const __m256i ua = _mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff));
        const __m256 a = _mm256_castsi256_ps(ua);
        __m256i n = _mm256_add_epi32(ua, _mm256_set1_epi32((1 << (kShift - 1)) - 1));
        n = _mm256_add_epi32(n, _mm256_and_si256(_mm256_srli_epi32(ua, kShift), _mm256_set1_epi32(1)));
        n = _mm256_and_si256(n, _mm256_set1_epi32(~((1 << kShift) - 1)));
        __m256 r = _mm256_min_ps(_mm256_castsi256_ps(n), max);  // saturates, infinity from a carry too
        if (!E4M3) r = _mm256_blendv_ps(r, a, _mm256_cmp_ps(a, _mm256_set1_ps(INFINITY), _CMP_EQ_OQ));
        const __m256 sub = _mm256_sub_ps(_mm256_add_ps(a, shift), shift);
        r = _mm256_blendv_ps(sub, r, _mm256_cmp_ps(a, min_normal, _CMP_GE_OQ));
        r = _mm256_castsi256_ps(_mm256_or_si256(_mm256_castps_si256(r), sign));
        return _mm256_blendv_ps(r, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
    }
    __attribute__((always_inline)) V round(Dtype dt) const {
        if (dt == Dtype::f32) return *this;
        return {round8(lo, dt), round8(hi, dt)};
    }
};

// (free functions: GCC does not apply `#pragma GCC target` to in-class friends)
inline V operator+(V a, V b) { return {_mm256_add_ps(a.lo, b.lo), _mm256_add_ps(a.hi, b.hi)}; }
inline V operator-(V a, V b) { return {_mm256_sub_ps(a.lo, b.lo), _mm256_sub_ps(a.hi, b.hi)}; }
inline V operator*(V a, V b) { return {_mm256_mul_ps(a.lo, b.lo), _mm256_mul_ps(a.hi, b.hi)}; }
inline V operator/(V a, V b) { return {_mm256_div_ps(a.lo, b.lo), _mm256_div_ps(a.hi, b.hi)}; }
