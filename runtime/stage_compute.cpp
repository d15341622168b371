#include "runtime/stage_compute.h"

#include <fmt/format.h>

namespace ps::rt {

// The vocabulary-parallel head (K shards; exec_model.h). Shard i has W_i [classes_i × d] and, per row,
// maps (x, L_{i−1}, t_{i−1}) to (x, L_i, t_i):
//   z_i = x·W_iᵀ,  S_i = log Σ_j exp z_ij,  L_i = logaddexp(L_{i−1}, S_i),  t_i = t_{i−1} + z_i[y] (y in shard i)
// with L_0 = −inf, t_0 = 0 before the first shard; the last shard's output is the loss ℓ = c·Σ_rows (L_K − t_K),
// c = 1/(T·M) the scale the loss gets in the objective (the same reduction as an ordinary head).
//
// Gradient (reverse mode through that chain; per row, "d" = ∂ℓ/∂·):
//   at the end                dL_K = c,  dt_K = −c
//   t_i = t_{i−1} + z_i[y]     ⇒ dt_{i−1} = dt_i,  dz_i[y] += dt_i
//   L_i = logaddexp(L_{i−1}, S_i)  (∂L_i/∂L_{i−1} = exp(L_{i−1} − L_i), ∂L_i/∂S_i = exp(S_i − L_i))
//                             ⇒ dL_{i−1} = dL_i·exp(L_{i−1} − L_i),  dS_i = dL_i·exp(S_i − L_i)
//   S_i = LSE(z_i)            ⇒ dz_i += dS_i·softmax(z_i)
//   z_i = x·W_iᵀ, x also passed on unchanged
//                             ⇒ dx_{in} = dx_{out} + dz_i·W_i (I),  dW_i = dz_iᵀ·x (W)
// By induction dL_i = c·exp(L_i − L_K) (a telescoping product), so dS_i·softmax(z_i) = c·exp(z_i − L_K):
// dz_i = c·(exp(z_i − L_K) − onehot_i(y)), the global softmax minus the one-hot restricted to shard i, and
// the sum of the shards' dx contributions is the unsharded head's dX = dz·W. The gradient message between
// shards is (dx, dL, dt); the two exponentials are computed in F (host_head_shard_forward's `weights`)
// and saved for I, so that each shard needs only its own L_{i−1}, S_i, L_i and never L_K.
// Messages: at a boundary inside the chain, [x (T·d) | L (T) | t (T)] forward and [dx | dL | dt] backward.

namespace {
Status runtime_error(std::string msg) { return Status::error(ErrorCode::kRuntime, std::move(msg)); }

int params_per_block(BlockKind k) { return k == BlockKind::kMlp ? 2 : 1; }
// Splits a head-chain message [main | carry] (n values, then 2·T) into its two parts.
void split_chain_message(Ops& ops, Tensor msg, size_t n, size_t T, Tensor& main, Tensor& carry) {
  main = ops.alloc(n, DType::kF32);
  ops.copy(msg, 0, main, 0, n);
  carry = ops.alloc(2 * T, DType::kF32);
  ops.copy(msg, n, carry, 0, carry.count());
}

}  // namespace

Status StageCompute::add_stage(int stage) {
  if (stage < 0 || stage >= model_.num_stages())
    return runtime_error(fmt::format("stage {} does not exist (the model has {})", stage, model_.num_stages()));
  if (params_.count(stage)) return Status::ok();
  std::vector<Tensor> ps;
  const auto& blocks = model_.stages[stage];
  for (int b = 0; b < static_cast<int>(blocks.size()); ++b) {
    const auto specs = model_.block_params(stage, b);
    for (int p = 0; p < static_cast<int>(specs.size()); ++p) {
      std::vector<float> v = init_param(model_, blocks[b], p, specs[p]);
      Tensor t = ops_.alloc(v.size(), DType::kF32);
      ops_.upload(t, v.data());
      ps.push_back(std::move(t));
    }
  }
  params_[stage] = std::move(ps);
  for (int m = 0; m < model_.microbatches; ++m) {
    if (blocks.front().kind == BlockKind::kEmbedding) {
      const std::vector<int32_t> ids = microbatch_tokens(model_, m);
      Tensor t = ops_.alloc(ids.size(), DType::kI32);
      ops_.upload(t, ids.data());
      tokens_[{stage, m}] = std::move(t);
    }
    if (blocks.back().kind == BlockKind::kHead) {  // (every block after a head shard is one too)
      const std::vector<int32_t> tv = microbatch_targets(model_, m);
      Tensor t = ops_.alloc(tv.size(), DType::kI32);
      ops_.upload(t, tv.data());
      targets_[{stage, m}] = std::move(t);
    }
  }
  return ops_.status();
}

Status StageCompute::check_stage(int stage, const char* op, int mb) const {
  if (!params_.count(stage))
    return runtime_error(fmt::format("{}({},{}): stage {} is not held by this device", op, stage, mb, stage));
  if (mb < 0 || mb >= model_.microbatches)
    return runtime_error(fmt::format("{}({},{}): microbatch {} out of range (0..{})", op, stage, mb, mb,
                                     model_.microbatches - 1));
  return Status::ok();
}

Result<Tensor> StageCompute::forward(int stage, int mb, Tensor input, bool drop) {
  PS_RETURN_IF_ERROR(check_stage(stage, "F", mb));
  const Key key{stage, mb};
  if (slots_.count(key) || mb_grads_.count(key))
    return runtime_error(fmt::format("F({},{}) runs a second time", stage, mb));
  if (drop) {
    // Run the forward, then keep only its input (the prefetched token ids / targets go back).
    auto find_or_empty = [&](const std::map<Key, Tensor>& m) {
      auto it = m.find(key);
      return it == m.end() ? Tensor() : it->second;
    };
    Tensor kept = input;
    Tensor tokens = find_or_empty(tokens_), targets = find_or_empty(targets_);
    auto out = forward(stage, mb, std::move(input), false);
    if (!out.ok()) return out;
    Slot dropped;
    dropped.phase = Phase::kDropped;
    if (!kept.empty()) dropped.blocks.push_back({std::move(kept)});
    slots_[key] = std::move(dropped);
    if (!tokens.empty()) tokens_[key] = std::move(tokens);
    if (!targets.empty()) targets_[key] = std::move(targets);
    return out;
  }
  const int T = model_.tokens, D = model_.d_model;
  const auto& blocks = model_.stages[stage];
  const std::vector<Tensor>& w = params_.at(stage);
  Slot slot;
  Tensor x = std::move(input);
  if (blocks.front().kind == BlockKind::kEmbedding) {
    if (!x.empty()) return runtime_error(fmt::format("F({},{}) got an input activation, but stage {} starts with the embedding", stage, mb, stage));
  } else if (x.empty()) {
    return runtime_error(fmt::format("F({},{}) has no input activation", stage, mb));
  } else if (x.count() != model_.boundary_count(stage - 1)) {
    return runtime_error(fmt::format("F({},{}): input has {} elements, expected {}", stage, mb, x.count(),
                                     model_.boundary_count(stage - 1)));
  }
  Tensor carry;          // (L, t) of the head chain so far; empty before its first shard
  Tensor shard_targets;  // this stage's targets, shared by its head shards
  if (blocks.front().is_head_shard() && blocks.front().shard > 0) {  // unpack [x | L | t]
    Tensor msg = std::move(x);
    split_chain_message(ops_, std::move(msg), model_.boundary_count(), static_cast<size_t>(T), x, carry);
  }
  int pi = 0;
  for (const BlockSpec& b : blocks) {
    std::vector<Tensor> saved;
    switch (b.kind) {
      case BlockKind::kEmbedding: {
        auto it = tokens_.find(key);
        if (it == tokens_.end()) return runtime_error(fmt::format("F({},{}): no token ids for microbatch {}", stage, mb, mb));
        Tensor tokens = std::move(it->second);
        tokens_.erase(it);
        Tensor out = ops_.alloc(static_cast<size_t>(T) * D, DType::kF32);
        ops_.embedding_forward(w[pi], tokens, D, out);
        saved = {tokens};
        x = std::move(out);
        break;
      }
      case BlockKind::kMlp: {
        const int H = b.hidden;
        Tensor h = ops_.alloc(static_cast<size_t>(T) * H, DType::kF32);
        ops_.gemm(false, true, T, H, D, 1.0f, x, w[pi], 0.0f, h);  // H = X·W1ᵀ
        Tensor a = ops_.alloc(h.count(), DType::kF32);
        ops_.gelu_forward(h, a);
        Tensor y = ops_.alloc(static_cast<size_t>(T) * D, DType::kF32);
        ops_.gemm(false, true, T, D, H, 1.0f, a, w[pi + 1], 0.0f, y);  // Y = A·W2ᵀ
        ops_.add(x, y);                                                  //   + X
        saved = {x, h, a};
        x = std::move(y);
        break;
      }
      case BlockKind::kHead: {
        const int V = b.classes;
        Tensor logits = ops_.alloc(static_cast<size_t>(T) * V, DType::kF32);
        ops_.gemm(false, true, T, V, D, 1.0f, x, w[pi], 0.0f, logits);
        if (b.is_head_shard()) {
          if (shard_targets.empty()) {
            auto it = targets_.find(key);
            if (it == targets_.end())
              return runtime_error(fmt::format("F({},{}): no targets for microbatch {}", stage, mb, mb));
            shard_targets = std::move(it->second);
            targets_.erase(it);
          }
          Tensor probs = ops_.alloc(logits.count(), DType::kF32);
          Tensor weights = ops_.alloc(2 * static_cast<size_t>(T), DType::kF32);
          Tensor carry_out = ops_.alloc(2 * static_cast<size_t>(T), DType::kF32);
          Tensor loss = b.is_loss() ? ops_.alloc(static_cast<size_t>(T), DType::kF32) : Tensor();
          ops_.head_shard_forward(logits, shard_targets, T, V, b.class_offset, carry, probs, weights, carry_out,
                                  loss);
          saved = {x, shard_targets, probs, weights};  // x is shared by the stage's shards (counted once)
          carry = std::move(carry_out);
          if (b.is_loss()) {
            losses_[mb] = std::move(loss);
            x = Tensor();
            carry = Tensor();
          }
          break;
        }
        auto it = targets_.find(key);
        if (it == targets_.end()) return runtime_error(fmt::format("F({},{}): no targets for microbatch {}", stage, mb, mb));
        Tensor targets = std::move(it->second);
        targets_.erase(it);
        Tensor probs = ops_.alloc(logits.count(), DType::kF32);
        Tensor loss = ops_.alloc(static_cast<size_t>(T), DType::kF32);
        ops_.softmax_xent_forward(logits, targets, T, V, probs, loss);
        losses_[mb] = std::move(loss);
        saved = {x, targets, probs};
        x = Tensor();
        break;
      }
    }
    slot.blocks.push_back(std::move(saved));
    pi += params_per_block(b.kind);
  }
  if (!carry.empty()) {  // the chain continues on the next stage: pack [x | L | t]
    Tensor msg = ops_.alloc(model_.boundary_count(stage), DType::kF32);
    ops_.copy(x, 0, msg, 0, x.count());
    ops_.copy(carry, 0, msg, x.count(), carry.count());
    x = std::move(msg);
  }
  slots_[key] = std::move(slot);
  PS_RETURN_IF_ERROR(ops_.status());
  return x;  // empty after the loss
}

Status StageCompute::recompute(int stage, int mb) {
  PS_RETURN_IF_ERROR(check_stage(stage, "R", mb));
  const Key key{stage, mb};
  auto it = slots_.find(key);
  if (it == slots_.end())
    return runtime_error(fmt::format("R({},{}) runs before F({},{})", stage, mb, stage, mb));
  if (it->second.phase != Phase::kDropped)
    return runtime_error(fmt::format("R({},{}): F({},{}) kept its activations (the stage does not recompute), "
                                     "or R already ran",
                                     stage, mb, stage, mb));
  Tensor input = it->second.blocks.empty() ? Tensor() : std::move(it->second.blocks.front().front());
  slots_.erase(it);
  auto out = forward(stage, mb, std::move(input), false);  // the output message is not needed again
  return out.ok() ? Status::ok() : out.status();
}

Result<Tensor> StageCompute::backward_input(int stage, int mb, Tensor grad_output) {
  PS_RETURN_IF_ERROR(check_stage(stage, "I", mb));
  const Key key{stage, mb};
  auto it = slots_.find(key);
  if (it == slots_.end()) return runtime_error(fmt::format("I({},{}) runs before F({},{})", stage, mb, stage, mb));
  if (it->second.phase == Phase::kDropped)
    return runtime_error(fmt::format("I({},{}) runs before R({},{}): F dropped the activations it reads", stage, mb,
                                     stage, mb));
  if (it->second.phase != Phase::kForward)
    return runtime_error(fmt::format("I({},{}) runs a second time", stage, mb));
  const int T = model_.tokens, D = model_.d_model;
  const auto& blocks = model_.stages[stage];
  const std::vector<Tensor>& w = params_.at(stage);
  const bool ends_with_loss = blocks.back().is_loss();
  if (ends_with_loss && !grad_output.empty())
    return runtime_error(fmt::format("I({},{}) got an output gradient, but stage {} ends with the loss", stage, mb, stage));
  if (!ends_with_loss && grad_output.empty())
    return runtime_error(fmt::format("I({},{}) has no output gradient", stage, mb));
  if (!ends_with_loss && grad_output.count() != model_.boundary_count(stage))
    return runtime_error(fmt::format("I({},{}): output gradient has {} elements, expected {}", stage, mb,
                                     grad_output.count(), model_.boundary_count(stage)));
  Slot& slot = it->second;
  Tensor dy = std::move(grad_output);
  Tensor dcarry;  // (dL, dt) of the head chain; empty after the last shard
  if (blocks.back().is_head_shard() && !ends_with_loss) {  // unpack [dx | dL | dt]
    Tensor msg = std::move(dy);
    split_chain_message(ops_, std::move(msg), model_.boundary_count(), static_cast<size_t>(T), dy, dcarry);
  }
  // Parameter index of each block.
  std::vector<int> first_param;
  int pi = 0;
  for (const BlockSpec& b : blocks) {
    first_param.push_back(pi);
    pi += params_per_block(b.kind);
  }
  const float loss_scale = 1.0f / (static_cast<float>(T) * static_cast<float>(model_.microbatches));
  for (int bi = static_cast<int>(blocks.size()) - 1; bi >= 0; --bi) {
    const BlockSpec& b = blocks[bi];
    std::vector<Tensor>& saved = slot.blocks[bi];
    const int p0 = first_param[bi];
    switch (b.kind) {
      case BlockKind::kHead: {  // saved {X, targets, P} (a shard: {X, targets, P, weights})
        const int V = b.classes;
        if (b.is_head_shard()) {  // dz = dL·w_self·P + dt·onehot; dX_in = dX_out + dz·W (see the top)
          Tensor dlogits = ops_.alloc(saved[2].count(), DType::kF32);
          Tensor dcarry_in = b.shard > 0 ? ops_.alloc(2 * static_cast<size_t>(T), DType::kF32) : Tensor();
          ops_.head_shard_backward(saved[2], saved[1], saved[3], dcarry, T, V, b.class_offset, loss_scale, dlogits,
                                   dcarry_in);
          Tensor dx = ops_.alloc(static_cast<size_t>(T) * D, DType::kF32);
          if (!dy.empty()) ops_.add(dy, dx);                                                 // dX = dX_out
          ops_.gemm(false, false, T, D, V, 1.0f, dlogits, w[p0], dy.empty() ? 0.0f : 1.0f, dx);  //  + dz·W
          saved = {saved[0], dlogits};  // stash {X, dlogits}
          dy = std::move(dx);
          dcarry = std::move(dcarry_in);
          break;
        }
        Tensor dlogits = ops_.alloc(saved[2].count(), DType::kF32);
        ops_.softmax_xent_backward(saved[2], saved[1], T, V, loss_scale, dlogits);
        Tensor dx = ops_.alloc(static_cast<size_t>(T) * D, DType::kF32);
        ops_.gemm(false, false, T, D, V, 1.0f, dlogits, w[p0], 0.0f, dx);  // dX = dL·Wh
        saved = {saved[0], dlogits};                                      // stash {X, dlogits}
        dy = std::move(dx);
        break;
      }
      case BlockKind::kMlp: {  // saved {X, H, A}
        const int H = b.hidden;
        Tensor da = ops_.alloc(static_cast<size_t>(T) * H, DType::kF32);
        ops_.gemm(false, false, T, H, D, 1.0f, dy, w[p0 + 1], 0.0f, da);  // dA = dY·W2
        Tensor dh = ops_.alloc(da.count(), DType::kF32);
        ops_.gelu_backward(saved[1], da, dh);
        Tensor dx = ops_.alloc(static_cast<size_t>(T) * D, DType::kF32);
        ops_.add(dy, dx);                                                 // dX = dY
        ops_.gemm(false, false, T, D, H, 1.0f, dh, w[p0], 1.0f, dx);      //    + dH·W1
        saved = {saved[0], saved[2], dy, dh};                             // stash {X, A, dY, dH}
        dy = std::move(dx);
        break;
      }
      case BlockKind::kEmbedding: {  // saved {tokens}
        saved = {saved[0], dy};  // stash {tokens, dY}
        dy = Tensor();
        break;
      }
    }
  }
  if (!dcarry.empty()) {  // the chain's earlier shards are on the previous stage: pack [dx | dL | dt]
    Tensor msg = ops_.alloc(model_.boundary_count(stage - 1), DType::kF32);
    ops_.copy(dy, 0, msg, 0, dy.count());
    ops_.copy(dcarry, 0, msg, dy.count(), dcarry.count());
    dy = std::move(msg);
  }
  slot.phase = Phase::kInput;
  PS_RETURN_IF_ERROR(ops_.status());
  return dy;
}

Status StageCompute::backward_weight(int stage, int mb) {
  PS_RETURN_IF_ERROR(check_stage(stage, "W", mb));
  const Key key{stage, mb};
  auto it = slots_.find(key);
  if (it == slots_.end() || it->second.phase != Phase::kInput)
    return runtime_error(fmt::format("W({},{}) runs before I({},{})", stage, mb, stage, mb));
  const int T = model_.tokens, D = model_.d_model;
  const auto& blocks = model_.stages[stage];
  std::vector<Tensor> grads;
  for (int bi = 0; bi < static_cast<int>(blocks.size()); ++bi) {
    const BlockSpec& b = blocks[bi];
    const std::vector<Tensor>& st = it->second.blocks[bi];
    switch (b.kind) {
      case BlockKind::kEmbedding: {  // stash {tokens, dY}
        Tensor dtable = ops_.alloc(static_cast<size_t>(b.classes) * D, DType::kF32);
        ops_.embedding_backward(st[1], st[0], D, dtable);
        grads.push_back(std::move(dtable));
        break;
      }
      case BlockKind::kMlp: {  // stash {X, A, dY, dH}
        const int H = b.hidden;
        Tensor dw1 = ops_.alloc(static_cast<size_t>(H) * D, DType::kF32);
        ops_.gemm(true, false, H, D, T, 1.0f, st[3], st[0], 0.0f, dw1);  // dW1 = dHᵀ·X
        Tensor dw2 = ops_.alloc(static_cast<size_t>(D) * H, DType::kF32);
        ops_.gemm(true, false, D, H, T, 1.0f, st[2], st[1], 0.0f, dw2);  // dW2 = dYᵀ·A
        grads.push_back(std::move(dw1));
        grads.push_back(std::move(dw2));
        break;
      }
      case BlockKind::kHead: {  // stash {X, dlogits}
        const int V = b.classes;
        Tensor dw = ops_.alloc(static_cast<size_t>(V) * D, DType::kF32);
        ops_.gemm(true, false, V, D, T, 1.0f, st[1], st[0], 0.0f, dw);  // dWh = dLᵀ·X
        grads.push_back(std::move(dw));
        break;
      }
    }
  }
  mb_grads_[key] = std::move(grads);
  slots_.erase(it);
  return ops_.status();
}

void StageCompute::collect_storages(std::set<const Storage*>& seen, size_t& bytes) const {
  for (const auto& [key, slot] : slots_)
    for (const auto& ts : slot.blocks)
      for (const Tensor& t : ts)
        if (!t.empty() && seen.insert(t.storage_id()).second) bytes += t.storage()->bytes();
}

size_t StageCompute::held_bytes() const {
  std::set<const Storage*> seen;
  size_t bytes = 0;
  collect_storages(seen, bytes);
  return bytes;
}

std::vector<std::string> StageCompute::live_slots() const {
  std::vector<std::string> out;
  for (const auto& [key, slot] : slots_)
    out.push_back(fmt::format("{}({},{})", slot.phase == Phase::kInput ? "I" : "F", key.first, key.second));
  return out;
}

Result<std::vector<std::vector<float>>> StageCompute::gradients(int stage) {
  if (!params_.count(stage)) return runtime_error(fmt::format("stage {} is not held by this device", stage));
  const size_t n_params = params_.at(stage).size();
  std::vector<Tensor> total;
  for (size_t p = 0; p < n_params; ++p) total.push_back(ops_.alloc(params_.at(stage)[p].count(), DType::kF32));
  for (int mb = 0; mb < model_.microbatches; ++mb) {
    auto it = mb_grads_.find({stage, mb});
    if (it == mb_grads_.end())
      return runtime_error(fmt::format("stage {} has no weight gradient for microbatch {} (W({},{}) never ran)",
                                       stage, mb, stage, mb));
    for (size_t p = 0; p < n_params; ++p) ops_.add(it->second[p], total[p]);
  }
  std::vector<std::vector<float>> out(n_params);
  for (size_t p = 0; p < n_params; ++p) {
    out[p].resize(total[p].count());
    ops_.download(total[p], out[p].data());
  }
  PS_RETURN_IF_ERROR(ops_.status());
  return out;
}

Result<double> StageCompute::loss(int mb) {
  auto it = losses_.find(mb);
  if (it == losses_.end()) return runtime_error(fmt::format("no loss for microbatch {} on this device", mb));
  std::vector<float> v(it->second.count());
  ops_.download(it->second, v.data());
  PS_RETURN_IF_ERROR(ops_.status());
  double sum = 0;
  for (float x : v) sum += x;
  return sum / static_cast<double>(v.size());
}

std::vector<std::vector<float>> StageCompute::parameters(int stage) {
  std::vector<std::vector<float>> out;
  for (const Tensor& t : params_.at(stage)) {
    out.emplace_back(t.count());
    ops_.download(t, out.back().data());
  }
  return out;
}

Status StageCompute::set_parameter(int stage, int index, const std::vector<float>& values) {
  auto it = params_.find(stage);
  if (it == params_.end() || index < 0 || index >= static_cast<int>(it->second.size()) ||
      it->second[index].count() != values.size())
    return runtime_error(fmt::format("no parameter {} of stage {} with {} elements", index, stage, values.size()));
  ops_.upload(it->second[index], values.data());
  return ops_.status();
}

}  // namespace ps::rt
