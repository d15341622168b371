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

namespace {

// Softmax of one row (in double) into p; returns the row's log-sum-exp.
double row_softmax(const float* l, int classes, float* p) {
  double mx = l[0];
  for (int j = 1; j < classes; ++j) mx = std::max(mx, static_cast<double>(l[j]));
  double sum = 0;
  for (int j = 0; j < classes; ++j) sum += std::exp(l[j] - mx);
  for (int j = 0; j < classes; ++j) p[j] = static_cast<float>(std::exp(l[j] - mx) / sum);
  return std::log(sum) + mx;
}

}  // namespace

void softmax_xent_forward(const std::vector<float>& logits, const std::vector<int32_t>& targets, int rows,
                          int classes, std::vector<float>& probs, std::vector<float>& loss) {
  probs.assign(logits.size(), 0.0f);
  loss.assign(rows, 0.0f);
  for (int r = 0; r < rows; ++r) {
    const float* l = &logits[static_cast<size_t>(r) * classes];
    loss[r] = static_cast<float>(row_softmax(l, classes, &probs[static_cast<size_t>(r) * classes]) - l[targets[r]]);
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

void head_shard_forward(const std::vector<float>& logits, const std::vector<int32_t>& targets, int rows, int classes,
                        int class_offset, const std::vector<float>& carry_in, bool with_loss,
                        std::vector<float>& probs, std::vector<float>& weights, std::vector<float>& carry_out,
                        std::vector<float>& loss) {
  probs.assign(logits.size(), 0.0f);
  weights.assign(2 * static_cast<size_t>(rows), 0.0f);
  carry_out.assign(2 * static_cast<size_t>(rows), 0.0f);
  loss.assign(with_loss ? rows : 0, 0.0f);
  for (int r = 0; r < rows; ++r) {
    const float* l = &logits[static_cast<size_t>(r) * classes];
    const double s = row_softmax(l, classes, &probs[static_cast<size_t>(r) * classes]);  // the shard's log-sum-exp
    double lse = s, w_prev = 0, w_self = 1, t = 0;
    if (!carry_in.empty()) {
      const double l_in = carry_in[r];
      t = carry_in[rows + r];
      const double m = std::max(l_in, s);
      lse = m + std::log(std::exp(l_in - m) + std::exp(s - m));  // logaddexp(L_in, S)
      w_prev = std::exp(l_in - lse);
      w_self = std::exp(s - lse);
    }
    const int local = targets[r] - class_offset;
    if (local >= 0 && local < classes) t += l[local];
    carry_out[r] = static_cast<float>(lse);
    carry_out[rows + r] = static_cast<float>(t);
    weights[r] = static_cast<float>(w_prev);
    weights[rows + r] = static_cast<float>(w_self);
    if (with_loss) loss[r] = static_cast<float>(lse - t);
  }
}

void head_shard_backward(const std::vector<float>& probs, const std::vector<int32_t>& targets,
                         const std::vector<float>& weights, const std::vector<float>& dcarry_out, int rows, int classes,
                         int class_offset, float scale, std::vector<float>& dlogits, std::vector<float>& dcarry_in) {
  dlogits.assign(probs.size(), 0.0f);
  dcarry_in.assign(2 * static_cast<size_t>(rows), 0.0f);
  for (int r = 0; r < rows; ++r) {
    const double dl = dcarry_out.empty() ? scale : dcarry_out[r];
    const double dt = dcarry_out.empty() ? -scale : dcarry_out[rows + r];
    for (int j = 0; j < classes; ++j) {
      const size_t i = static_cast<size_t>(r) * classes + j;
      dlogits[i] = static_cast<float>(dl * weights[rows + r] * probs[i] + (j == targets[r] - class_offset ? dt : 0.0));
    }
    dcarry_in[r] = static_cast<float>(dl * weights[r]);
    dcarry_in[rows + r] = static_cast<float>(dt);
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
