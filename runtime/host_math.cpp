#include "runtime/host_math.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "runtime/head_shard_carry.h"

namespace ps::rt {

namespace {
// Block sizes: a packed B panel of kKc×kNc floats (128 KiB) stays in L2, an A row of kKc in L1.
constexpr int kMc = 64;
constexpr int kKc = 128;
constexpr int kNc = 256;
constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kGeluCubic = 0.044715f;
}  // namespace

void host_gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
               const float* b, float beta, float* c) {
  const size_t mn = static_cast<size_t>(m) * static_cast<size_t>(n);
  if (beta == 0.0f) {
    std::fill(c, c + mn, 0.0f);
  } else if (beta != 1.0f) {
    for (size_t i = 0; i < mn; ++i) c[i] *= beta;
  }
  if (m == 0 || n == 0 || k == 0 || alpha == 0.0f) return;
  // op(A)[i][p] and op(B)[p][j] in row-major storage.
  auto a_at = [&](int i, int p) {
    return trans_a ? a[static_cast<size_t>(p) * m + i] : a[static_cast<size_t>(i) * k + p];
  };
  auto b_at = [&](int p, int j) {
    return trans_b ? b[static_cast<size_t>(j) * k + p] : b[static_cast<size_t>(p) * n + j];
  };
  std::vector<float> bp(static_cast<size_t>(kKc) * kNc);
  std::vector<float> ap(static_cast<size_t>(kMc) * kKc);
  for (int p0 = 0; p0 < k; p0 += kKc) {
    const int kc = std::min(kKc, k - p0);
    for (int j0 = 0; j0 < n; j0 += kNc) {
      const int nc = std::min(kNc, n - j0);
      for (int p = 0; p < kc; ++p)
        for (int j = 0; j < nc; ++j) bp[static_cast<size_t>(p) * nc + j] = b_at(p0 + p, j0 + j);
      for (int i0 = 0; i0 < m; i0 += kMc) {
        const int mc = std::min(kMc, m - i0);
        for (int i = 0; i < mc; ++i)
          for (int p = 0; p < kc; ++p) ap[static_cast<size_t>(i) * kc + p] = alpha * a_at(i0 + i, p0 + p);
        for (int i = 0; i < mc; ++i) {
          float* crow = c + static_cast<size_t>(i0 + i) * n + j0;
          const float* arow = ap.data() + static_cast<size_t>(i) * kc;
          for (int p = 0; p < kc; ++p) {
            const float av = arow[p];
            const float* brow = bp.data() + static_cast<size_t>(p) * nc;
            for (int j = 0; j < nc; ++j) crow[j] += av * brow[j];
          }
        }
      }
    }
  }
}

float gelu_value(float x) {
  const float u = kSqrt2OverPi * (x + kGeluCubic * x * x * x);
  return 0.5f * x * (1.0f + std::tanh(u));
}

float gelu_derivative(float x) {
  const float u = kSqrt2OverPi * (x + kGeluCubic * x * x * x);
  const float t = std::tanh(u);
  const float du = kSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * x * x);
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du;
}

void host_gelu_forward(const float* h, float* a, size_t n) {
  for (size_t i = 0; i < n; ++i) a[i] = gelu_value(h[i]);
}

void host_gelu_backward(const float* h, const float* da, float* dh, size_t n) {
  for (size_t i = 0; i < n; ++i) dh[i] = da[i] * gelu_derivative(h[i]);
}

void host_embedding_forward(const float* table, const int32_t* tokens, size_t num_tokens, int dim,
                            float* out) {
  for (size_t t = 0; t < num_tokens; ++t) {
    const float* row = table + static_cast<size_t>(tokens[t]) * dim;
    std::copy(row, row + dim, out + t * dim);
  }
}

void host_embedding_backward(const float* dout, const int32_t* tokens, size_t num_tokens, int dim,
                             float* dtable) {
  for (size_t t = 0; t < num_tokens; ++t) {
    float* row = dtable + static_cast<size_t>(tokens[t]) * dim;
    const float* g = dout + t * dim;
    for (int j = 0; j < dim; ++j) row[j] += g[j];
  }
}

namespace {

// Softmax of one row of logits into p; returns the row's log-sum-exp.
float row_softmax(const float* l, int classes, float* p) {
  float mx = l[0];
  for (int j = 1; j < classes; ++j) mx = std::max(mx, l[j]);
  float sum = 0.0f;
  for (int j = 0; j < classes; ++j) {
    p[j] = std::exp(l[j] - mx);
    sum += p[j];
  }
  const float inv = 1.0f / sum;
  for (int j = 0; j < classes; ++j) p[j] *= inv;
  return std::log(sum) + mx;
}

}  // namespace

void host_softmax_xent_forward(const float* logits, const int32_t* targets, int rows, int classes,
                               float* probs, float* loss) {
  for (int r = 0; r < rows; ++r) {
    const float* l = logits + static_cast<size_t>(r) * classes;
    loss[r] = row_softmax(l, classes, probs + static_cast<size_t>(r) * classes) - l[targets[r]];
  }
}

void host_softmax_xent_backward(const float* probs, const int32_t* targets, int rows, int classes,
                                float scale, float* dlogits) {
  for (int r = 0; r < rows; ++r) {
    const float* p = probs + static_cast<size_t>(r) * classes;
    float* d = dlogits + static_cast<size_t>(r) * classes;
    for (int j = 0; j < classes; ++j) d[j] = scale * p[j];
    d[targets[r]] -= scale;
  }
}

void host_head_shard_forward(const float* logits, const int32_t* targets, int rows, int classes,
                             int class_offset, const float* carry_in, float* probs, float* weights,
                             float* carry_out, float* loss) {
  for (int r = 0; r < rows; ++r) {
    const float* l = logits + static_cast<size_t>(r) * classes;
    // Softmax and log-sum-exp of the shard's logits, as host_softmax_xent_forward computes them.
    const float s = row_softmax(l, classes, probs + static_cast<size_t>(r) * classes);
    head_shard_row_carry(l, classes, targets[r] - class_offset, s, r, rows, carry_in, weights, carry_out, loss);
  }
}

void host_head_shard_backward(const float* probs, const int32_t* targets, const float* weights,
                              const float* dcarry_out, int rows, int classes, int class_offset,
                              float scale, float* dlogits, float* dcarry_in) {
  for (int r = 0; r < rows; ++r) {
    const float dl = dcarry_out != nullptr ? dcarry_out[r] : scale;
    const float dt = dcarry_out != nullptr ? dcarry_out[rows + r] : -scale;
    const float ds = dl * weights[rows + r];
    const float* p = probs + static_cast<size_t>(r) * classes;
    float* d = dlogits + static_cast<size_t>(r) * classes;
    for (int j = 0; j < classes; ++j) d[j] = ds * p[j];
    const int local = targets[r] - class_offset;
    if (local >= 0 && local < classes) d[local] += dt;
    if (dcarry_in != nullptr) {
      dcarry_in[r] = dl * weights[r];
      dcarry_in[rows + r] = dt;
    }
  }
}

}  // namespace ps::rt
