// 16-lane vector type for the AVX-512 path (one zmm). Included only by
// isa/avx512.cpp, inside its `#pragma GCC target` region and namespace.
// Every operation is the lane-wise IEEE operation of the scalar V (simd_scalar.h).

struct V {
    __m512 v;
    using Mask = __mmask16;
    static constexpr int kMR = 6;     // GEMM micro-tile rows
    static constexpr int kNV = 4;     // GEMM micro-tile vectors (16 columns each)
    static constexpr int kNV1 = 8;    // vectors for single-row tiles (more independent chains)
    static constexpr int kNVreg = 2;  // K-blocked tiles with the total in registers (0: total in C)

    static Mask mask(int n) { return n >= 16 ? (Mask)0xffff : (Mask)((1u << (n > 0 ? n : 0)) - 1u); }
    static V zero() { return {_mm512_setzero_ps()}; }
    static V set1(float x) { return {_mm512_set1_ps(x)}; }
    static V load(const float* p) { return {_mm512_loadu_ps(p)}; }
    static V loadm(const float* p, Mask m) { return {_mm512_maskz_loadu_ps(m, p)}; }
    void store(float* p) const { _mm512_storeu_ps(p, v); }
    void storem(float* p, Mask m) const { _mm512_mask_storeu_ps(p, m, v); }

    // r[i] lane j <- r[j] lane i: four rounds of in-register shuffles, a
    // sixteenth of the loads and stores of sixteen gathers.
    static void transpose16(V (&r)[16]) {
        __m512 t[16], u[16];
        for (int i = 0; i < 16; i += 2) {
            t[i] = _mm512_unpacklo_ps(r[i].v, r[i + 1].v);
            t[i + 1] = _mm512_unpackhi_ps(r[i].v, r[i + 1].v);
        }
        for (int i = 0; i < 16; i += 4) {
            u[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
            u[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xEE);
            u[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
            u[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
        }
        for (int h = 0; h < 16; h += 8)
            for (int i = 0; i < 4; ++i) {
                t[h + i] = _mm512_shuffle_f32x4(u[h + i], u[h + 4 + i], 0x88);
                t[h + 4 + i] = _mm512_shuffle_f32x4(u[h + i], u[h + 4 + i], 0xdd);
            }
        for (int i = 0; i < 8; ++i) {
            r[i].v = _mm512_shuffle_f32x4(t[i], t[8 + i], 0x88);
            r[8 + i].v = _mm512_shuffle_f32x4(t[i], t[8 + i], 0xdd);
        }
    }
    V swap_halves() const { return {_mm512_shuffle_f32x4(v, v, _MM_SHUFFLE(1, 0, 3, 2))}; }  // lanes 8-15, 0-7
    static V fma(V a, V b, V c) { return {_mm512_fmadd_ps(a.v, b.v, c.v)}; }
    static V max(V a, V b) { return {_mm512_max_ps(a.v, b.v)}; }
    static V select(Mask m, V a, V b) { return {_mm512_mask_blend_ps(m, b.v, a.v)}; }  // m ? a : b

    __attribute__((always_inline)) static V exp(V x) {
        const __m512 xv = x.v;
        __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(xv, _mm512_set1_ps(kLog2e)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        __m512 r = _mm512_fmadd_ps(n, _mm512_set1_ps(-kExpC1), xv);
        r = _mm512_fmadd_ps(n, _mm512_set1_ps(-kExpC2), r);
        __m512 y = _mm512_set1_ps(kExpP0);
        y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(kExpP1));
        y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(kExpP2));
        y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(kExpP3));
        y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(kExpP4));
        y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(kExpP5));
        __m512 z = _mm512_mul_ps(r, r);
        y = _mm512_fmadd_ps(y, z, r);
        y = _mm512_add_ps(y, _mm512_set1_ps(1.0f));
        __m512i ni = _mm512_cvtps_epi32(n);
        ni = _mm512_max_epi32(_mm512_min_epi32(ni, _mm512_set1_epi32(128)), _mm512_set1_epi32(-126));
        __m512i n1 = _mm512_srai_epi32(ni, 1);
        __m512i n2 = _mm512_sub_epi32(ni, n1);
        const __m512i bias = _mm512_set1_epi32(127);
        __m512 s1 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(n1, bias), 23));
        __m512 s2 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(n2, bias), 23));
        __m512 res = _mm512_mul_ps(_mm512_mul_ps(y, s1), s2);
        res = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(xv, _mm512_set1_ps(kExpHi), _CMP_GT_OQ), res,
                                   _mm512_set1_ps(std::numeric_limits<float>::infinity()));
        res =
            _mm512_mask_blend_ps(_mm512_cmp_ps_mask(xv, _mm512_set1_ps(kExpLo), _CMP_LT_OQ), res, _mm512_setzero_ps());
        res = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(xv, xv, _CMP_UNORD_Q), res, xv);
        return {res};
    }

    // The fixed tree: lane i += lane i+8, i+4, i+2, i+1; returns lane 0.
    float sum_tree() const {
        __m256 lo = _mm512_castps512_ps256(v);
        __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
        __m256 s8 = _mm256_add_ps(lo, hi);
        __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
        __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
        __m128 s1 = _mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1));
        return _mm_cvtss_f32(s1);
    }
    float max_all() const { return _mm512_reduce_max_ps(v); }

    // Up to sixteen reductions side by side: lane b < n of the result is
    // x[b].sum_tree(), the same tree run as a transpose:
    // each level adds the halves sum_tree adds, two vectors' worth per
    // instruction, so 16 trees cost 15 adds instead of 60 dependent horizontal
    // steps. The last level leaves x[q + 4c] in lane 4q + c, put in order by
    // one permute. Lanes b >= n are unspecified; x is read up to 4, 8 or 16
    // vectors, the first that holds n (fewer inputs skip the unused levels).
    template <int N>
    __attribute__((always_inline)) static V sum_tree_lanes(const V* x) {
        constexpr int ny = N / 2, nz = N / 4, nw = N > 8 ? 2 : 1;
        __m512 y[8], z[4], w[2];
        for (int k = 0; k < ny; ++k)  // lane i of each 8: lane i + lane i+8
            y[k] = _mm512_add_ps(_mm512_shuffle_f32x4(x[2 * k].v, x[2 * k + 1].v, 0x44),
                                 _mm512_shuffle_f32x4(x[2 * k].v, x[2 * k + 1].v, 0xEE));
        for (int k = 0; k < nz; ++k)  // each 4: lane i + lane i+4
            z[k] = _mm512_add_ps(_mm512_shuffle_f32x4(y[2 * k], y[2 * k + 1], 0x88),
                                 _mm512_shuffle_f32x4(y[2 * k], y[2 * k + 1], 0xDD));
        if (nz == 1) z[1] = z[0];     // stands in for inputs past n
        for (int k = 0; k < nw; ++k)  // each 2: lane i + lane i+2
            w[k] = _mm512_add_ps(_mm512_shuffle_ps(z[2 * k], z[2 * k + 1], 0x44),
                                 _mm512_shuffle_ps(z[2 * k], z[2 * k + 1], 0xEE));
        if (nw == 1) w[1] = w[0];
        const __m512 r = _mm512_add_ps(_mm512_shuffle_ps(w[0], w[1], 0x88), _mm512_shuffle_ps(w[0], w[1], 0xDD));
        const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
        return {_mm512_permutexvar_ps(order, r)};
    }
    __attribute__((always_inline)) static V sum_tree_lanes(const V* x, int n) {
        return n <= 4 ? sum_tree_lanes<4>(x) : n <= 8 ? sum_tree_lanes<8>(x) : sum_tree_lanes<16>(x);
    }

    __attribute__((always_inline)) V round(Dtype dt) const {
        if (dt == Dtype::bf16) {
            __m512i u = _mm512_castps_si512(v);
            __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
            __m512i r = _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lsb);
            r = _mm512_and_si512(r, _mm512_set1_epi32((int)0xffff0000u));
            __m512i qnan =
                _mm512_and_si512(_mm512_or_si512(u, _mm512_set1_epi32(0x400000)), _mm512_set1_epi32((int)0xffff0000u));
            __mmask16 isnan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
            return {_mm512_castsi512_ps(_mm512_mask_blend_epi32(isnan, r, qnan))};
        }
        if (dt == Dtype::f16) {
            __m256i h = _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            return {_mm512_cvtph_ps(h)};
        }
        if (dt == Dtype::fp8_e4m3) return {fp8_round16<true>(v)};
        if (dt == Dtype::fp8_e5m2) return {fp8_round16<false>(v)};
        return *this;
    }
    // fp8_round_as (dtype.h) on 16 lanes, the same steps: an fp8 rollout
    // rounds every GEMM input (a sixth of fp8-rollout-moe-deep's step lane by lane).
    template <bool E4M3>
    __attribute__((always_inline)) static __m512 fp8_round16(__m512 x) {
        constexpr int kShift = 23 - (E4M3 ? 3 : 2);
        const __m512 min_normal = _mm512_set1_ps(E4M3 ? 0x1p-6f : 0x1p-14f);
        const __m512 max = _mm512_set1_ps(E4M3 ? 448.0f : 57344.0f);
        const __m512 shift = _mm512_set1_ps(E4M3 ? 0x1p14f : 0x1p7f);
        const __m512i u = _mm512_castps_si512(x);
        const __m512i sign = _mm512_and_si512(u, _mm512_set1_epi32((int)0x80000000u));
        const __m512i ua = _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff));
        const __m512 a = _mm512_castsi512_ps(ua);
        __m512i n = _mm512_add_epi32(ua, _mm512_set1_epi32((1 << (kShift - 1)) - 1));
        n = _mm512_add_epi32(n, _mm512_and_si512(_mm512_srli_epi32(ua, kShift), _mm512_set1_epi32(1)));
        n = _mm512_and_si512(n, _mm512_set1_epi32(~((1 << kShift) - 1)));
        // Saturates from kMax on (a carry past the largest float gives infinity: kMax too).
        __m512 r = _mm512_min_ps(_mm512_castsi512_ps(n), max);
        if (!E4M3) r = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, _mm512_set1_ps(INFINITY), _CMP_EQ_OQ), r, a);
        const __m512 sub = _mm512_sub_ps(_mm512_add_ps(a, shift), shift);
        r = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, min_normal, _CMP_GE_OQ), sub, r);
        r = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(r), sign));
        return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), r, x);
    }
};

// (free functions: GCC does not apply `#pragma GCC target` to in-class friends)
inline V operator+(V a, V b) { return {_mm512_add_ps(a.v, b.v)}; }
inline V operator-(V a, V b) { return {_mm512_sub_ps(a.v, b.v)}; }
inline V operator*(V a, V b) { return {_mm512_mul_ps(a.v, b.v)}; }
inline V operator/(V a, V b) { return {_mm512_div_ps(a.v, b.v)}; }
