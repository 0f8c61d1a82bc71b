// 16-lane "vector" of plain floats: the portable fallback, and the definition
// of what every lane of the SIMD types computes. Included only by
// cpu_isa_scalar.cpp. fma is the correctly rounded fmaf.

struct V {
    float f[16];
    using Mask = uint32_t;  // bit i = lane i active
    static constexpr int kMR = 4;
    static constexpr int kNV = 1;
    static constexpr int kNV1 = 2;

    static Mask mask(int n) { return n >= 16 ? 0xffffu : (n <= 0 ? 0u : ((1u << n) - 1u)); }
    static V zero() {
        V r;
        _Pragma("GCC unroll 16") for (int i = 0; i < 16; ++i) r.f[i] = 0.0f;
        return r;
    }
    static V set1(float x) {
        V r;
        _Pragma("GCC unroll 16") for (int i = 0; i < 16; ++i) r.f[i] = x;
        return r;
    }
    static V load(const float* p) {
        V r;
        _Pragma("GCC unroll 16") for (int i = 0; i < 16; ++i) r.f[i] = p[i];
        return r;
    }
    static V loadm(const float* p, Mask m) {
        V r;
        _Pragma("GCC unroll 16") for (int i = 0; i < 16; ++i) r.f[i] = (m >> i) & 1u ? p[i] : 0.0f;
        return r;
    }
    void store(float* p) const { _Pragma("GCC unroll 16") for (int i = 0; i < 16; ++i) p[i] = f[i]; }
    void storem(float* p, Mask m) const {
        _Pragma("GCC unroll 16") for (int i = 0; i < 16; ++i) if ((m >> i) & 1u) p[i] = f[i];
    }
    static V gatherm(const float* base, int stride, Mask m) {
        V r;
        _Pragma("GCC unroll 16") for (int i = 0; i < 16; ++i) r.f[i] = (m >> i) & 1u ? base[(int64_t)i * stride] : 0.0f;
        return r;
    }

#define MLK_V_BINOP(op)                                                                  \
    friend V operator op(const V& a, const V& b) {                                       \
        V r;                                                                             \
        _Pragma("GCC unroll 16") for (int i = 0; i < 16; ++i) r.f[i] = a.f[i] op b.f[i]; \
        return r;                                                                        \
    }
    MLK_V_BINOP(+)
    MLK_V_BINOP(-)
    MLK_V_BINOP(*)
    MLK_V_BINOP(/)
#undef MLK_V_BINOP
    static V fma(const V& a, const V& b, const V& c) {
        V r;
        _Pragma("GCC unroll 16") for (int i = 0; i < 16; ++i) r.f[i] = __builtin_fmaf(a.f[i], b.f[i], c.f[i]);
        return r;
    }
    static V max(const V& a, const V& b) {  // same NaN/zero convention as maxps: a > b ? a : b
        V r;
        _Pragma("GCC unroll 16") for (int i = 0; i < 16; ++i) r.f[i] = a.f[i] > b.f[i] ? a.f[i] : b.f[i];
        return r;
    }
    static V select(Mask m, const V& a, const V& b) {
        V r;
        _Pragma("GCC unroll 16") for (int i = 0; i < 16; ++i) r.f[i] = (m >> i) & 1u ? a.f[i] : b.f[i];
        return r;
    }
    static V exp(const V& x) {
        V r;
        _Pragma("GCC unroll 16") for (int i = 0; i < 16; ++i) r.f[i] = exp_s(x.f[i]);
        return r;
    }
    float sum_tree() const {
        float l[16];
        _Pragma("GCC unroll 16") for (int i = 0; i < 16; ++i) l[i] = f[i];
        for (int s = 8; s > 0; s >>= 1)
            for (int i = 0; i < s; ++i) l[i] = l[i] + l[i + s];
        return l[0];
    }
    float max_all() const {
        float m = f[0];
        for (int i = 1; i < 16; ++i) m = f[i] > m ? f[i] : m;
        return m;
    }
    V round(Dtype dt) const {
        if (dt == Dtype::f32) return *this;
        V r;
        _Pragma("GCC unroll 16") for (int i = 0; i < 16; ++i) r.f[i] = round_to(f[i], dt);
        return r;
    }
};
