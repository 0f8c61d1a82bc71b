// The slow, obvious reference for every op in kernels.h: plain loops, one
// sequential accumulation per output, templated on the scalar so the same code
// runs in double for finite-difference gradient checks. Every fast kernel is
// tested against this (tests/kernels/kernels_*_test.cpp). Nothing here is optimised and
// nothing here rounds to bf16/fp16: the tests do that where they need it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

namespace mlk::ref {

// out[M,N] = inp[M,K] @ w[K,N] + bias; one sequential FMA chain over k per output.
template <class T>
void matmul_forward(T* out, const T* inp, const T* w, const T* bias, int M, int K, int N) {
    for (int m = 0; m < M; ++m)
        for (int n = 0; n < N; ++n) {
            T acc = 0;
            for (int k = 0; k < K; ++k) acc = std::fma(inp[(int64_t)m * K + k], w[(int64_t)k * N + n], acc);
            out[(int64_t)m * N + n] = bias ? acc + bias[n] : acc;
        }
}

template <class T>
void matmul_backward(T* dinp, T* dw, T* dbias, const T* dout, const T* inp, const T* w, int M, int K, int N) {
    for (int m = 0; m < M; ++m)
        for (int n = 0; n < N; ++n) {
            T g = dout[(int64_t)m * N + n];
            if (dbias) dbias[n] += g;
            for (int k = 0; k < K; ++k) {
                if (dinp) dinp[(int64_t)m * K + k] += g * w[(int64_t)k * N + n];
                if (dw) dw[(int64_t)k * N + n] += g * inp[(int64_t)m * K + k];
            }
        }
}

template <class T>
void rmsnorm_forward(T* out, T* rstd, const T* inp, const T* weight, T eps, int M, int C) {
    for (int m = 0; m < M; ++m) {
        const T* x = inp + (int64_t)m * C;
        T ss = 0;
        for (int c = 0; c < C; ++c) ss += x[c] * x[c];
        T r = T(1) / std::sqrt(ss / C + eps);
        if (rstd) rstd[m] = r;
        for (int c = 0; c < C; ++c) out[(int64_t)m * C + c] = x[c] * r * weight[c];
    }
}

template <class T>
void rmsnorm_backward(T* dinp, T* dweight, const T* dout, const T* inp, const T* weight, const T* rstd, int M, int C) {
    for (int m = 0; m < M; ++m) {
        const T* x = inp + (int64_t)m * C;
        const T* g = dout + (int64_t)m * C;
        T r = rstd[m];
        T dot = 0;  // sum_c g*w*x
        for (int c = 0; c < C; ++c) dot += g[c] * weight[c] * x[c];
        for (int c = 0; c < C; ++c) {
            if (dweight) dweight[c] += g[c] * x[c] * r;
            dinp[(int64_t)m * C + c] += r * g[c] * weight[c] - r * r * r * x[c] * dot / C;
        }
    }
}

// Rotate-half RoPE, angle(pos, i) = pos * theta^(-2i/D), computed in double.
template <class T>
void rope_forward(T* x, const int32_t* pos, int M, int H, int D, double theta) {
    int half = D / 2;
    for (int m = 0; m < M; ++m)
        for (int h = 0; h < H; ++h) {
            T* v = x + ((int64_t)m * H + h) * D;
            for (int i = 0; i < half; ++i) {
                double a = pos[m] * std::pow(theta, -2.0 * i / D);
                T c = (T)std::cos(a), s = (T)std::sin(a);
                T x1 = v[i], x2 = v[i + half];
                v[i] = x1 * c - x2 * s;
                v[i + half] = x2 * c + x1 * s;
            }
        }
}

template <class T>
void rope_backward(T* dx, const int32_t* pos, int M, int H, int D, double theta) {
    int half = D / 2;
    for (int m = 0; m < M; ++m)
        for (int h = 0; h < H; ++h) {
            T* v = dx + ((int64_t)m * H + h) * D;
            for (int i = 0; i < half; ++i) {
                double a = pos[m] * std::pow(theta, -2.0 * i / D);
                T c = (T)std::cos(a), s = (T)std::sin(a);
                T g1 = v[i], g2 = v[i + half];
                v[i] = g1 * c + g2 * s;
                v[i + half] = g2 * c - g1 * s;
            }
        }
}

// Causal attention, q[B,T,H,D], k,v[B,T,Hkv,D]; att[B,H,T,T] probabilities.
template <class T>
void attention_forward(T* out, T* att, const T* q, const T* k, const T* v, int B, int T_, int H, int Hkv, int D) {
    T scale = T(1) / std::sqrt((T)D);
    int group = H / Hkv;
    std::vector<T> p(T_);
    for (int b = 0; b < B; ++b)
        for (int h = 0; h < H; ++h) {
            int hk = h / group;
            for (int t = 0; t < T_; ++t) {
                const T* qv = q + (((int64_t)b * T_ + t) * H + h) * D;
                T mx = -INFINITY;
                for (int j = 0; j <= t; ++j) {
                    const T* kv = k + (((int64_t)b * T_ + j) * Hkv + hk) * D;
                    T s = 0;
                    for (int d = 0; d < D; ++d) s += qv[d] * kv[d];
                    p[j] = s * scale;
                    mx = std::max(mx, p[j]);
                }
                T sum = 0;
                for (int j = 0; j <= t; ++j) {
                    p[j] = std::exp(p[j] - mx);
                    sum += p[j];
                }
                T* o = out + (((int64_t)b * T_ + t) * H + h) * D;
                for (int d = 0; d < D; ++d) o[d] = 0;
                for (int j = 0; j < T_; ++j) {
                    T pj = j <= t ? p[j] / sum : T(0);
                    if (att) att[(((int64_t)b * H + h) * T_ + t) * T_ + j] = pj;
                    if (j > t) continue;
                    const T* vv = v + (((int64_t)b * T_ + j) * Hkv + hk) * D;
                    for (int d = 0; d < D; ++d) o[d] += pj * vv[d];
                }
            }
        }
}

template <class T>
void attention_backward(T* dq, T* dk, T* dv, const T* dout, const T* att, const T* q, const T* k, const T* v, int B,
                        int T_, int H, int Hkv, int D) {
    T scale = T(1) / std::sqrt((T)D);
    int group = H / Hkv;
    std::vector<T> dp(T_);
    for (int b = 0; b < B; ++b)
        for (int h = 0; h < H; ++h) {
            int hk = h / group;
            for (int t = 0; t < T_; ++t) {
                const T* a = att + (((int64_t)b * H + h) * T_ + t) * T_;
                const T* go = dout + (((int64_t)b * T_ + t) * H + h) * D;
                T dot = 0;
                for (int j = 0; j <= t; ++j) {
                    const T* vv = v + (((int64_t)b * T_ + j) * Hkv + hk) * D;
                    T* dvv = dv + (((int64_t)b * T_ + j) * Hkv + hk) * D;
                    T s = 0;
                    for (int d = 0; d < D; ++d) {
                        s += go[d] * vv[d];
                        dvv[d] += a[j] * go[d];
                    }
                    dp[j] = s;
                    dot += a[j] * s;
                }
                const T* qv = q + (((int64_t)b * T_ + t) * H + h) * D;
                T* dqv = dq + (((int64_t)b * T_ + t) * H + h) * D;
                for (int j = 0; j <= t; ++j) {
                    T ds = a[j] * (dp[j] - dot) * scale;
                    const T* kv = k + (((int64_t)b * T_ + j) * Hkv + hk) * D;
                    T* dkv = dk + (((int64_t)b * T_ + j) * Hkv + hk) * D;
                    for (int d = 0; d < D; ++d) {
                        dqv[d] += ds * kv[d];
                        dkv[d] += ds * qv[d];
                    }
                }
            }
        }
}

template <class T>
void logsoftmax_forward(T* lp, const T* logits, T inv_temp, int M, int V) {
    for (int m = 0; m < M; ++m) {
        const T* z = logits + (int64_t)m * V;
        T mx = -INFINITY;
        for (int i = 0; i < V; ++i) mx = std::max(mx, z[i] * inv_temp);
        T sum = 0;
        for (int i = 0; i < V; ++i) sum += std::exp(z[i] * inv_temp - mx);
        T lse = mx + std::log(sum);
        for (int i = 0; i < V; ++i) lp[(int64_t)m * V + i] = z[i] * inv_temp - lse;
    }
}

template <class T>
void logsoftmax_backward(T* dlogits, const T* dlp, const T* lp, T inv_temp, int M, int V) {
    for (int m = 0; m < M; ++m) {
        T s = 0;
        for (int i = 0; i < V; ++i) s += dlp[(int64_t)m * V + i];
        for (int i = 0; i < V; ++i)
            dlogits[(int64_t)m * V + i] += inv_temp * (dlp[(int64_t)m * V + i] - std::exp(lp[(int64_t)m * V + i]) * s);
    }
}

template <class T>
void entropy_forward(T* ent, const T* lp, int M, int V) {
    for (int m = 0; m < M; ++m) {
        T e = 0;
        for (int i = 0; i < V; ++i) {
            T l = lp[(int64_t)m * V + i];
            e -= std::exp(l) * l;
        }
        ent[m] = e;
    }
}

template <class T>
T silu(T x) {
    return x / (T(1) + std::exp(-x));
}

template <class T>
void swiglu_forward(T* out, const T* gate, const T* up, int64_t n) {
    for (int64_t i = 0; i < n; ++i) out[i] = silu(gate[i]) * up[i];
}

template <class T>
void swiglu_backward(T* dgate, T* dup, const T* dout, const T* gate, const T* up, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        T g = gate[i];
        T sig = T(1) / (T(1) + std::exp(-g));
        dup[i] += dout[i] * g * sig;
        dgate[i] += dout[i] * up[i] * sig * (T(1) + g * (T(1) - sig));
    }
}

template <class T>
void embedding_forward(T* out, const int32_t* tok, const T* table, int M, int C) {
    for (int m = 0; m < M; ++m)
        for (int c = 0; c < C; ++c) out[(int64_t)m * C + c] = table[(int64_t)tok[m] * C + c];
}

template <class T>
void embedding_backward(T* dtable, const T* dout, const int32_t* tok, int M, int C) {
    for (int m = 0; m < M; ++m)
        for (int c = 0; c < C; ++c) dtable[(int64_t)tok[m] * C + c] += dout[(int64_t)m * C + c];
}

// Top-k by descending logit (= descending softmax probability), ties to the
// lower expert id; weights = softmax over the selected logits.
template <class T>
void router_topk_forward(int32_t* ids, T* weights, const T* logits, int M, int E, int k) {
    std::vector<int32_t> order(E);
    for (int m = 0; m < M; ++m) {
        const T* z = logits + (int64_t)m * E;
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return z[a] > z[b]; });
        T mx = z[order[0]], sum = 0;
        for (int j = 0; j < k; ++j) sum += std::exp(z[order[j]] - mx);
        for (int j = 0; j < k; ++j) {
            ids[(int64_t)m * k + j] = order[j];
            weights[(int64_t)m * k + j] = std::exp(z[order[j]] - mx) / sum;
        }
    }
}

template <class T>
void router_replay_forward(T* weights, const T* logits, const int32_t* ids, int M, int E, int k) {
    for (int m = 0; m < M; ++m) {
        const T* z = logits + (int64_t)m * E;
        const int32_t* id = ids + (int64_t)m * k;
        T mx = -INFINITY, sum = 0;
        for (int j = 0; j < k; ++j) mx = std::max(mx, z[id[j]]);
        for (int j = 0; j < k; ++j) sum += std::exp(z[id[j]] - mx);
        for (int j = 0; j < k; ++j) weights[(int64_t)m * k + j] = std::exp(z[id[j]] - mx) / sum;
    }
}

// out[m,d] = sum over slots j in order of w[m,j] * slot_rows[m*k+j][d] (T arithmetic).
template <class T>
void moe_combine_forward(T* out, const T* const* slot_rows, const T* weights, int M, int k, int D) {
    for (int m = 0; m < M; ++m)
        for (int d = 0; d < D; ++d) {
            T acc = 0;
            for (int j = 0; j < k; ++j)
                acc = std::fma(weights[(int64_t)m * k + j], slot_rows[(int64_t)m * k + j][d], acc);
            out[(int64_t)m * D + d] = acc;
        }
}

// dy[r] = w[slot] * dout[token]; dweights[slot] = dout[token] . y[r] in double, d ascending.
inline void moe_combine_backward(float* dy, float* dweights, const float* dout, const float* y, const float* weights,
                                 const int32_t* slots, int n, int k, int D) {
    for (int r = 0; r < n; ++r) {
        const float* g = dout + (int64_t)(slots[r] / k) * D;
        double dot = 0;
        for (int d = 0; d < D; ++d) {
            dy[(int64_t)r * D + d] = weights[slots[r]] * g[d];
            dot += (double)g[d] * (double)y[(int64_t)r * D + d];
        }
        dweights[slots[r]] = (float)dot;
    }
}

template <class T>
void router_backward(T* dlogits, const T* dweights, const T* weights, const int32_t* ids, int M, int E, int k) {
    for (int m = 0; m < M; ++m) {
        const T* w = weights + (int64_t)m * k;
        const T* g = dweights + (int64_t)m * k;
        T dot = 0;
        for (int j = 0; j < k; ++j) dot += w[j] * g[j];
        for (int j = 0; j < k; ++j) dlogits[(int64_t)m * E + ids[(int64_t)m * k + j]] += w[j] * (g[j] - dot);
    }
}

// One AdamW step, the order kernels.h states, element by element in double.
inline void adamw_update(float* p, float* m, float* v, const float* g, int64_t n, double grad_scale, double beta1,
                         double beta2, double eps, double weight_decay, double lr, double bc1, double bc2) {
    for (int64_t i = 0; i < n; ++i) {
        const double gi = g[i] * grad_scale;
        const double mi = beta1 * m[i] + (1.0 - beta1) * gi;
        const double vi = beta2 * v[i] + (1.0 - beta2) * gi * gi;
        m[i] = (float)mi;
        v[i] = (float)vi;
        double pi = p[i];
        pi -= lr * weight_decay * pi;
        pi -= lr * (mi / bc1) / (std::sqrt(vi / bc2) + eps);
        p[i] = (float)pi;
    }
}

// sum_squares: the eight chains kernels.h states, element by element.
inline double sum_squares(const float* x, int64_t n) {
    double c[8] = {};
    for (int64_t i = 0; i < n; ++i) c[i % 8] += (double)x[i] * (double)x[i];
    return ((c[0] + c[1]) + (c[2] + c[3])) + ((c[4] + c[5]) + (c[6] + c[7]));
}

}  // namespace mlk::ref
