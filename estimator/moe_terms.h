#ifndef MEMGATE_ESTIMATOR_MOE_TERMS_H_
#define MEMGATE_ESTIMATOR_MOE_TERMS_H_

// The terms of mixture-of-experts layers and multi-latent attention, one
// function each, used by memory_model.cc. Internal to the estimator. All
// figures are for one GPU (one tensor- and expert-parallel rank) and, for
// activations, one micro-batch, in bytes; parameters are counts.

#include "estimator/memory_model.h"

namespace memgate {

// ---- Shapes ----

// Matrices of an MLP: 3 (gated: SwiGLU, quick-GeGLU) or 2 (GeLU, squared
// ReLU).
double Gated(const ModelShape& m);
// A routed expert's FFN width (--moe-ffn-hidden-size, else the dense one).
double ExpertFfn(const ModelShape& m);

// Bytes an MLP stores per token per unit of FFN width, beside its input
// (16-bit training): SwiGLU 8 [K], GeLU 4, quick-GeGLU and GeGLU 10
// (moe_terms.cc).
double MlpWidthBytes(const ModelShape& m, const Layout& l);
// Bytes the dense MLP and the shared experts of this job store per token
// per unit of FFN width, beside their input, at the job's element size
// (x2 in fp32): MlpWidthBytes, 6 for SwiGLU when the activation saves only
// its input (Layout::fused_swiglu), 4 when it saves it in fp8
// (Layout::activation_fp8_input_store).
double DenseMlpBytes(const ModelShape& m, const Layout& l);

// ---- Which layers are MoE ----

// MoE layers among layers [first, first + count) of the model.
double MoeLayersIn(const ModelShape& m, double first, double count);

// ---- Parameters on one rank ----

// Multi-latent attention: the down projections of Q and KV and their
// norms are replicated over TP (TELinear, parallel_mode "duplicated"), the
// up projections and the output projection split over t.
double MlaParameters(const ModelShape& m, const Layout& l);

// MLA's GEMM weights alone (MlaParameters less the latent norms): what
// runs in fp8.
double MlaLinearParameters(const ModelShape& m, const Layout& l);

// An MoE layer's MLP side that is not routed experts: shared experts
// (split over t), the router (h x E) and the shared-expert gate
// (replicated); with biases, the router's and the shared experts'.
double MoeDenseParameters(const ModelShape& m, const Layout& l);

// The routed experts of one MoE layer held by this rank: E / EP experts,
// each split over ETP (with biases, FC2's whole on every ETP rank).
double RoutedExpertParameters(const ModelShape& m, const Layout& l);

// ---- Activations of one layer, one micro-batch ----

// What routing keeps a MoE layer (moe_terms.cc [RS]): the router's
// scores and losses, and the dispatcher's permutation map.
double RouterActivations(const ModelShape& m, const Layout& l);

// What an MoE layer's MLP side stores in place of a dense MLP: routing
// (RouterActivations), the routed token copies' expert activations, the
// combine's saved expert outputs, the shared experts.
double MoeMlpActivations(const ModelShape& m, const Layout& l);

// The most an expert-parallel rank's dropless load can exceed its balanced
// share: a token's k copies go to k distinct experts (top-k), so a rank
// holding E/EP experts receives at most min(k, E/EP) copies of each token,
// EP x min(k, E/EP) / k times its share. 1 with EP = 1: every expert is
// local and the rank always processes all T x k copies.
double MaxExpertLoad(const ModelShape& m, const Layout& l);

// What multi-latent attention stores in place of grouped-query attention.
double MlaActivations(const ModelShape& m, const Layout& l);

// The token dispatcher's transient buffers while one micro-batch is in an
// MoE layer (counted once a stage).
double DispatchWorkingSet(const ModelShape& m, const Layout& l);

}  // namespace memgate

#endif  // MEMGATE_ESTIMATOR_MOE_TERMS_H_
