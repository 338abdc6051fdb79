// labs/permutation_case.h — Module 6, Exercise 4: without positions and without a mask,
// self-attention is permutation equivariant.
//
// A reordering of the T tokens is written as `order`: the token now at position i was at
// order[i]. Π is the matrix whose row i is e_order[i], so ΠX = X[order] and ΠᵀΠ = I. Then
//
//   S' = ΠQ (ΠK)ᵀ · scale = Π S Πᵀ     rows and columns of the scores both reordered
//   P' = softmax(Π S Πᵀ) = Π P Πᵀ       a row's softmax does not depend on the order of its entries
//   O' = P' ΠV = Π P Πᵀ Π V = Π O       each output moves with its token, unchanged
//
// and the backward of L = sum(W ⊙ O), with W moved alongside (W' = ΠW, so dO' = Π dO), moves the
// same way: dQ' = Π dQ, dK' = Π dK, dV' = Π dV. Whatever ties a result to a place breaks this:
//   causal mask        hides keys j > i by position, and Π M Πᵀ ≠ M
//   RoPE               rotates q_t and k_t by angles proportional to the position t
//   learned positions  adds row t of a table to whichever token sits at position t
//
// Each function draws its inputs on the CPU from a seeded Generator, moves them to `device`, and
// runs the attention, the tape's backward and the comparisons there (float64).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "handgrad.h"

namespace hg::lab {

// What, if anything, tells attention where a token sits.
enum class OrderSignal { none, causal_mask, rope, learned_positions };
inline constexpr OrderSignal kOrderSignals[] = {OrderSignal::none, OrderSignal::causal_mask, OrderSignal::rope,
                                                OrderSignal::learned_positions};
// "no mask, no positions", "causal mask", "RoPE", "learned positions"
std::string order_signal_name(OrderSignal s);

using Order = std::vector<int64_t>;  // order[i] = the position, before, of the token now at i (0-based)
std::string order_str(const Order& order);  // 1-based, as the text counts tokens: "(3 1 2)"
// Every order of T tokens, the identity first, then lexicographically (T! of them; T <= 8).
std::vector<Order> all_orders(int64_t T);
// `count` orders of T >= 2 tokens drawn uniformly (Fisher–Yates), each redrawn until it is not the identity.
std::vector<Order> random_orders(int64_t T, int64_t count, Generator& gen);
// X[order]: row i of the result is row order[i] of x (x is (T, ...)); not recorded on the tape.
Tensor reorder_rows(const Tensor& x, const Order& order);

// One attention's inputs in their first order, float64, on the device, none requiring grad.
struct AttentionInputs {
  Tensor Q, K, V;     // (T, d_k), (T, d_k), (T, d_v)
  Tensor W;           // (T, d_v): the loss L = sum(W ⊙ O); moves with the tokens
  Tensor EQ, EK, EV;  // learned position tables, shaped as Q, K, V: row t is added to the token at
                      // position t (as adding one table E to X before the projections adds E W_Q,
                      // E W_K, E W_V); they stay with the positions when the tokens move
};
// Q, K, V, W and the three tables drawn N(0, 1) from `seed`, in that order. T >= 2, d even (RoPE).
AttentionInputs random_attention_inputs(int64_t T, int64_t d, uint64_t seed, Device device = Device::cpu);
// Section 3's three tokens (Q = K = [[1,0],[0,1],[1,1]], V = [[1,0],[0,2],[3,3]]), with W and the
// tables drawn N(0, 1) from `seed`.
AttentionInputs three_token_attention_inputs(uint64_t seed, Device device = Device::cpu);
// The same inputs with the tokens reordered: Q, K, V and W move; the position tables do not.
AttentionInputs reorder_tokens(const AttentionInputs& in, const Order& order);

// The outputs, and the tape's gradients of L = sum(W ⊙ O) with respect to the leaves Q, K, V.
struct AttentionRun {
  Tensor O, dQ, dK, dV;  // (T, d_v), (T, d_k), (T, d_k), (T, d_v)
};
// O = attention(q, k, v) (scaled by the default 1/√d_k) with the signal applied: q, k, v are Q, K, V
// (none), with the causal mask, rope(Q) and rope(K), or Q + EQ, K + EK, V + EV.
AttentionRun run_attention(const AttentionInputs& in, OrderSignal s);

// One order: the run on the reordered inputs against the first run's results reordered,
// max |X' − ΠX| for each.
struct OrderDiff {
  Order order;
  AttentionRun run;  // on the reordered inputs
  double O = 0, dQ = 0, dK = 0, dV = 0;
  double gradients() const;  // the largest of dQ, dK, dV
};

struct SignalCheck {
  OrderSignal signal = OrderSignal::none;
  AttentionRun first;  // in the first order
  std::vector<OrderDiff> orders;
  double outputs() const;    // largest O difference over the orders
  double gradients() const;  // largest dQ, dK or dV difference over the orders
};

struct PermutationCheck {
  AttentionInputs inputs;
  std::vector<SignalCheck> signals;  // in kOrderSignals' order
  const SignalCheck& at(OrderSignal s) const;
};
PermutationCheck permutation_check(const AttentionInputs& in, const std::vector<Order>& orders);

// "the pressure exceeds the limit" and "the limit exceeds the pressure": token ids through an
// embedding table (4 words, d) and one self-attention layer, O = attention(X W_Q, X W_K, X W_V) W_O,
// single head, every matrix (d, d) drawn N(0, 1/d) and the table N(0, 1) from the seed. With a
// signal: the causal mask; RoPE on the queries and keys; or a learned position table (5, d), N(0, 1),
// added to X.
struct Sentence {
  std::string text;
  std::vector<std::string> words;
  Tensor O;  // (T, d), one output per token
};
struct WordDiff {
  std::string word;
  double diff = 0;  // max |o − o'| over every occurrence of the word in one sentence and in the other
};
struct SentencePair {
  OrderSignal signal = OrderSignal::none;
  Sentence a, b;
  std::vector<WordDiff> words;  // each distinct word once, in the order of its first use in a
  double max_diff() const;
};
struct PressureLimit {
  int64_t d = 0;
  std::vector<std::string> vocab;    // the table's rows
  std::vector<SentencePair> pairs;   // in kOrderSignals' order
  const SentencePair& at(OrderSignal s) const;
};
PressureLimit pressure_limit(uint64_t seed, int64_t d = 4, Device device = Device::cpu);

}  // namespace hg::lab
