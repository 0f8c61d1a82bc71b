// A slow, obvious double-precision forward of the whole model, composed of
// kernels/ref.h ops only. The tests compare the engines' float forward with it
// and check the hand-written backward against its finite differences.
#pragma once

#include <cstdint>
#include <vector>

#include "core/model/params.h"
#include "kernels/ref.h"

namespace mlk::reftest {

// logp[b*T+t] = log p(tokens[b,t] | prefix) for t >= 1; routes[i][m*k+j]
// (i: the i-th MoE layer, as the engines index them) fixes the MoE experts
// when non-null (finite differences must not flip a top-k), else each MoE
// layer uses its own top-k and reports it there.
inline std::vector<double> ref_model_logp(const ModelConfig& c, const std::vector<double>& P,
                                          const std::vector<int32_t>& tokens, int B, int T, double inv_temp,
                                          std::vector<std::vector<int32_t>>* routes, bool fixed_routes) {
    const ParamLayout L = make_param_layout(c);
    auto W = [&](const std::string& n) { return P.data() + L.find(n)->offset; };
    const int M = B * T, D = c.hidden_size, H = c.num_heads, Hkv = c.num_kv_heads, hd = c.head_dim, V = c.vocab_size,
              k = c.num_experts_per_tok;
    std::vector<int32_t> pos(M);
    for (int m = 0; m < M; ++m) pos[m] = m % T;
    std::vector<double> x((size_t)M * D), ln((size_t)M * D);
    ref::embedding_forward(x.data(), tokens.data(), W("model.embed_tokens.weight"), M, D);
    if (routes && !fixed_routes) routes->assign(c.num_moe_layers(), {});
    for (int l = 0, mi = 0; l < c.num_layers; ++l) {
        std::string p = "model.layers." + std::to_string(l) + ".";
        ref::rmsnorm_forward(ln.data(), (double*)nullptr, x.data(), W(p + "input_layernorm.weight"),
                             (double)c.rms_norm_eps, M, D);
        std::vector<double> q((size_t)M * H * hd), kk((size_t)M * Hkv * hd), v((size_t)M * Hkv * hd);
        ref::matmul_forward(q.data(), ln.data(), W(p + "self_attn.q_proj.weight"), (double*)nullptr, M, D, H * hd);
        ref::matmul_forward(kk.data(), ln.data(), W(p + "self_attn.k_proj.weight"), (double*)nullptr, M, D, Hkv * hd);
        ref::matmul_forward(v.data(), ln.data(), W(p + "self_attn.v_proj.weight"), (double*)nullptr, M, D, Hkv * hd);
        std::vector<double> qn(q.size()), kn(kk.size());
        ref::rmsnorm_forward(qn.data(), (double*)nullptr, q.data(), W(p + "self_attn.q_norm.weight"),
                             (double)c.rms_norm_eps, M * H, hd);
        ref::rmsnorm_forward(kn.data(), (double*)nullptr, kk.data(), W(p + "self_attn.k_norm.weight"),
                             (double)c.rms_norm_eps, M * Hkv, hd);
        ref::rope_forward(qn.data(), pos.data(), M, H, hd, (double)c.rope_theta);
        ref::rope_forward(kn.data(), pos.data(), M, Hkv, hd, (double)c.rope_theta);
        std::vector<double> y((size_t)M * H * hd), o((size_t)M * D);
        ref::attention_forward(y.data(), (double*)nullptr, qn.data(), kn.data(), v.data(), B, T, H, Hkv, hd);
        ref::matmul_forward(o.data(), y.data(), W(p + "self_attn.o_proj.weight"), (double*)nullptr, M, H * hd, D);
        for (size_t i = 0; i < x.size(); ++i) x[i] += o[i];
        ref::rmsnorm_forward(ln.data(), (double*)nullptr, x.data(), W(p + "post_attention_layernorm.weight"),
                             (double)c.rms_norm_eps, M, D);
        std::vector<double> f((size_t)M * D, 0.0);
        auto swiglu_mlp = [&](const double* in, int Mr, const std::string& q, int F, double* out) {
            std::vector<double> g((size_t)Mr * F), u((size_t)Mr * F), a((size_t)Mr * F);
            ref::matmul_forward(g.data(), in, W(q + "gate_proj.weight"), (double*)nullptr, Mr, D, F);
            ref::matmul_forward(u.data(), in, W(q + "up_proj.weight"), (double*)nullptr, Mr, D, F);
            ref::swiglu_forward(a.data(), g.data(), u.data(), (int64_t)Mr * F);
            ref::matmul_forward(out, a.data(), W(q + "down_proj.weight"), (double*)nullptr, Mr, F, D);
        };
        if (!c.is_moe_layer(l)) {
            swiglu_mlp(ln.data(), M, p + "mlp.", c.intermediate_size, f.data());
        } else {
            const int E = c.num_experts;
            std::vector<double> rl((size_t)M * E), wts((size_t)M * k);
            std::vector<int32_t> ids((size_t)M * k);
            ref::matmul_forward(rl.data(), ln.data(), W(p + "mlp.gate.weight"), (double*)nullptr, M, D, E);
            if (fixed_routes) {
                ids = (*routes)[mi];
                ref::router_replay_forward(wts.data(), rl.data(), ids.data(), M, E, k);
            } else {
                ref::router_topk_forward(ids.data(), wts.data(), rl.data(), M, E, k);
                if (routes) (*routes)[mi] = ids;
            }
            ++mi;
            std::vector<double> ye(D);
            for (int m = 0; m < M; ++m)
                for (int j = 0; j < k; ++j) {
                    swiglu_mlp(&ln[(size_t)m * D], 1, p + "mlp.experts." + std::to_string(ids[(size_t)m * k + j]) + ".",
                               c.moe_intermediate_size, ye.data());
                    for (int d = 0; d < D; ++d) f[(size_t)m * D + d] += wts[(size_t)m * k + j] * ye[d];
                }
        }
        for (size_t i = 0; i < x.size(); ++i) x[i] += f[i];
    }
    ref::rmsnorm_forward(ln.data(), (double*)nullptr, x.data(), W("model.norm.weight"), (double)c.rms_norm_eps, M, D);
    std::vector<double> head((size_t)D * V);
    if (c.tie_word_embeddings) {
        const double* e = W("model.embed_tokens.weight");
        for (int vv = 0; vv < V; ++vv)
            for (int d = 0; d < D; ++d) head[(size_t)d * V + vv] = e[(size_t)vv * D + d];
    } else {
        const double* h = W("lm_head.weight");
        head.assign(h, h + (size_t)D * V);
    }
    std::vector<double> logits((size_t)M * V), lp((size_t)M * V);
    ref::matmul_forward(logits.data(), ln.data(), head.data(), (double*)nullptr, M, D, V);
    ref::logsoftmax_forward(lp.data(), logits.data(), inv_temp, M, V);
    std::vector<double> out(M, 0.0);
    for (int b = 0; b < B; ++b)
        for (int t = 1; t < T; ++t)
            out[(size_t)b * T + t] = lp[((size_t)b * T + t - 1) * V + tokens[(size_t)b * T + t]];
    return out;
}

}  // namespace mlk::reftest
