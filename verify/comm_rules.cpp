// comm_rules.cpp — see comm_rules.h.
#include "verify/comm_rules.h"

#include <fmt/format.h>

#include <map>
#include <utility>

#include "verify/diag.h"
#include "verify/rules.h"

namespace ps::verify_detail {

namespace {

std::string ordinal(int k) {  // 1 → "1st"
  const char* suf = "th";
  if (k % 100 < 11 || k % 100 > 13) {
    if (k % 10 == 1) suf = "st";
    if (k % 10 == 2) suf = "nd";
    if (k % 10 == 3) suf = "rd";
  }
  return fmt::format("{}{}", k, suf);
}

}  // namespace

CommRuleSummary check_comm_rules(const Schedule& s, const OpTable& t, std::vector<Violation>& out) {
  CommRuleSummary sum;
  const Problem& pb = s.problem;
  const int S = pb.num_stages();
  const int M = pb.microbatches;

  // Per op: the partner must be able to exist, sit on another device, and exist.
  for (int d = 0; d < s.num_devices(); ++d) {
    for (int i = 0; i < static_cast<int>(s.programs[d].size()); ++i) {
      const Action& a = s.programs[d][i];
      if (!is_comm(a.type)) continue;
      const Action want = partner_action(a);
      const bool send = is_send(a.type);
      const std::string_view rule = send ? rules::kUnmatchedSend : rules::kUnmatchedRecv;
      if (want.stage.value() < 0 || want.stage.value() >= S) {
        std::string why;
        if (a.type == OpType::SEND_F) why = fmt::format("stage {} is the last stage: no stage {} receives its output", a.stage, a.stage.value() + 1);
        if (a.type == OpType::RECV_F) why = "stage 0 is the first stage: nothing sends it a forward input";
        if (a.type == OpType::SEND_B) why = "stage 0 is the first stage: no stage before it receives a gradient";
        if (a.type == OpType::RECV_B) why = fmt::format("stage {} is the last stage: nothing sends it a gradient", a.stage);
        out.push_back(op_violation(
            rule, d, i, a,
            fmt::format("'{}' can never be matched: {}{}", to_string(a), why,
                        send ? "" : "; the device would wait forever")));
        continue;
      }
      const int peer_dev = pb.device_of(want.stage);
      if (peer_dev == d) {
        sum.same_device_ok = false;
        out.push_back(op_violation(
            rules::kCommSameDevice, d, i, a,
            fmt::format("'{}' {} stage {}, which is on the same device {}: tensors between stages on "
                        "one device are not sent",
                        to_string(a), send ? "sends to" : "receives from", want.stage, d)));
        continue;
      }
      if (t.find(want.type, want.stage, want.mb) == kNoOp) {
        out.push_back(op_violation(
            rule, d, i, a,
            fmt::format("'{}' has no matching '{}' on device {}{}", to_string(a), to_string(want),
                        peer_dev, send ? "" : ": the device would wait forever"),
            {fmt::format("device {}'s program has no '{}'", peer_dev, to_string(want))}));
      }
    }
  }

  // comm.missing: cross-device edges with neither side present.
  for (int b = 0; b + 1 < S; ++b) {
    const int lo = pb.device_of(StageId{b}), hi = pb.device_of(StageId{b + 1});
    if (lo == hi) continue;
    for (int m = 0; m < M; ++m) {
      if (t.find(OpType::SEND_F, b, m) == kNoOp && t.find(OpType::RECV_F, b + 1, m) == kNoOp) {
        const int c = t.find(OpType::F, b + 1, m);
        const int p = t.find(OpType::F, b, m);
        out.push_back(op_violation(
            rules::kCommMissing, t.device(c), t.index(c), t.op(c),
            fmt::format("'{}' needs the output of '{}' from device {}, but there is no '{}SEND_F{}' / "
                        "'{}RECV_F{}' pair",
                        to_string(t.op(c)), to_string(t.op(p)), lo, b, m, b + 1, m),
            {fmt::format("the producer is {}", describe_op_on(t.device(p), t.index(p), t.op(p)))}));
      }
      if (t.find(OpType::SEND_B, b + 1, m) == kNoOp && t.find(OpType::RECV_B, b, m) == kNoOp) {
        const int c = t.bwd(b, m);
        const int p = t.bwd(b + 1, m);
        out.push_back(op_violation(
            rules::kCommMissing, t.device(c), t.index(c), t.op(c),
            fmt::format("'{}' needs the gradient from '{}' on device {}, but there is no '{}SEND_B{}' "
                        "/ '{}RECV_B{}' pair",
                        to_string(t.op(c)), to_string(t.op(p)), hi, b + 1, m, b, m),
            {fmt::format("the producer is {}", describe_op_on(t.device(p), t.index(p), t.op(p)))}));
      }
    }
  }

  // comm.order: per ordered device pair, k-th SEND ↔ k-th RECV.
  struct Channel {
    std::vector<int> sends;  // flat ids on the sender, program order
    std::vector<int> recvs;  // flat ids on the receiver, program order
  };
  std::map<std::pair<int, int>, Channel> channels;
  for (int id = 0; id < t.size(); ++id) {
    const Action& a = t.op(id);
    if (!is_comm(a.type)) continue;
    const int p = t.partner(id);
    if (p == kNoOp || t.device(p) == t.device(id)) continue;
    if (t.find(a.type, a.stage, a.mb) != id) continue;  // duplicates were reported already
    if (is_send(a.type))
      channels[{t.device(id), t.device(p)}].sends.push_back(id);
    else
      channels[{t.device(p), t.device(id)}].recvs.push_back(id);
  }
  for (const auto& [key, ch] : channels) {
    const auto [from, to] = key;
    const size_t n = std::min(ch.sends.size(), ch.recvs.size());
    size_t bad = 0, first = n;
    for (size_t k = 0; k < n; ++k) {
      if (t.partner(ch.sends[k]) != ch.recvs[k]) {
        ++bad;
        if (first == n) first = k;
      }
    }
    if (bad == 0) continue;
    sum.order_ok = false;
    const int sid = ch.sends[first], rid = ch.recvs[first];
    const int own = t.partner(sid);
    size_t own_k = 0;
    while (own_k < ch.recvs.size() && ch.recvs[own_k] != own) ++own_k;
    const int k1 = static_cast<int>(first) + 1;
    out.push_back(op_violation(
        rules::kCommOrder, from, t.index(sid), t.op(sid),
        fmt::format("the {} SEND from device {} to device {} is '{}', but the {} RECV on device {} "
                    "from device {} is '{}': NCCL pairs them by order, so the transfers would mix up "
                    "tensors",
                    ordinal(k1), from, to, to_string(t.op(sid)), ordinal(k1), to, from,
                    to_string(t.op(rid))),
        {fmt::format("the {} RECV from device {} is {}", ordinal(k1), from,
                     describe_op_on(to, t.index(rid), t.op(rid))),
         fmt::format("'{}' is received by {}, the {} RECV from device {}", to_string(t.op(sid)),
                     describe_op_on(to, t.index(own), t.op(own)),
                     ordinal(static_cast<int>(own_k) + 1), from),
         fmt::format("{} of the {} transfers from device {} to device {} are out of order", bad, n,
                     from, to)}));
  }
  return sum;
}

}  // namespace ps::verify_detail
