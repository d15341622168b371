#include "kernels/reference.h"

#include <algorithm>
#include <cmath>

namespace ps::kern::ref {

void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const std::vector<float>& a,
          const std::vector<float>& b, float beta, std::vector<float>& c) {
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double acc = 0;
      for (int p = 0; p < k; ++p) {
        const double av = trans_a ? a[static_cast<size_t>(p) * m + i] : a[static_cast<size_t>(i) * k + p];
        const double bv = trans_b ? b[static_cast<size_t>(j) * k + p] : b[static_cast<size_t>(p) * n + j];
        acc += av * bv;
      }
      float& out = c[static_cast<size_t>(i) * n + j];
      out = static_cast<float>(alpha * acc + (beta == 0.0f ? 0.0 : static_cast<double>(beta) * out));
    }
}

float gelu(float x) {
  const double xd = x;
  const double u = std::sqrt(2.0 / M_PI) * (xd + 0.044715 * xd * xd * xd);
  return static_cast<float>(0.5 * xd * (1.0 + std::tanh(u)));
}

float gelu_grad(float x) {
  const double xd = x;
  const double c = std::sqrt(2.0 / M_PI);
  const double u = c * (xd + 0.044715 * xd * xd * xd);
  const double t = std::tanh(u);
  return static_cast<float>(0.5 * (1.0 + t) + 0.5 * xd * (1.0 - t * t) * c * (1.0 + 3.0 * 0.044715 * xd * xd));
}

void gelu_forward(const std::vector<float>& h, std::vector<float>& a) {
  a.resize(h.size());
  for (size_t i = 0; i < h.size(); ++i) a[i] = gelu(h[i]);
}

void gelu_backward(const std::vector<float>& h, const std::vector<float>& da, std::vector<float>& dh) {
  dh.resize(h.size());
  for (size_t i = 0; i < h.size(); ++i) dh[i] = da[i] * gelu_grad(h[i]);
}

void add(const std::vector<float>& x, std::vector<float>& y) {
  for (size_t i = 0; i < x.size(); ++i) y[i] += x[i];
}

void embedding_forward(const std::vector<float>& table, const std::vector<int32_t>& tokens, int dim,
                       std::vector<float>& out) {
  out.assign(tokens.size() * dim, 0.0f);
  for (size_t t = 0; t < tokens.size(); ++t)
    for (int j = 0; j < dim; ++j) out[t * dim + j] = table[static_cast<size_t>(tokens[t]) * dim + j];
}

void embedding_backward(const std::vector<float>& dout, const std::vector<int32_t>& tokens, int dim,
                        std::vector<float>& dtable) {
  for (size_t t = 0; t < tokens.size(); ++t)
    for (int j = 0; j < dim; ++j) dtable[static_cast<size_t>(tokens[t]) * dim + j] += dout[t * dim + j];
}

void softmax_xent_forward(const std::vector<float>& logits, const std::vector<int32_t>& targets, int rows,
                          int classes, std::vector<float>& probs, std::vector<float>& loss) {
  probs.assign(logits.size(), 0.0f);
  loss.assign(rows, 0.0f);
  for (int r = 0; r < rows; ++r) {
    const float* l = &logits[static_cast<size_t>(r) * classes];
    double mx = l[0];
    for (int j = 1; j < classes; ++j) mx = std::max(mx, static_cast<double>(l[j]));
    double sum = 0;
    for (int j = 0; j < classes; ++j) sum += std::exp(l[j] - mx);
    for (int j = 0; j < classes; ++j) probs[static_cast<size_t>(r) * classes + j] = static_cast<float>(std::exp(l[j] - mx) / sum);
    loss[r] = static_cast<float>(std::log(sum) + mx - l[targets[r]]);
  }
}

void softmax_xent_backward(const std::vector<float>& probs, const std::vector<int32_t>& targets, int rows,
                           int classes, float scale, std::vector<float>& dlogits) {
  dlogits.assign(probs.size(), 0.0f);
  for (int r = 0; r < rows; ++r)
    for (int j = 0; j < classes; ++j) {
      const size_t i = static_cast<size_t>(r) * classes + j;
      dlogits[i] = scale * (probs[i] - (j == targets[r] ? 1.0f : 0.0f));
    }
}

double max_rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return INFINITY;
  double diff = 0, mag = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = std::fabs(static_cast<double>(a[i]) - b[i]);
    diff = std::isnan(d) ? INFINITY : std::max(diff, d);
    mag = std::max(mag, std::fabs(static_cast<double>(b[i])));
  }
  return diff / std::max(mag, 1e-30);
}

}  // namespace ps::kern::ref
