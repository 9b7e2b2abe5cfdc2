// GEMM family formulas: mm, bmm, addmm, baddbmm, addbmm, matmul, linear, mv, addmv, dot.
// Convention (DeepSpeed, fvcore): MACs = output elements x contraction length; FLOPs = 2 x MACs,
// plus one FLOP per output element for an added bias / beta*input term.
// Bytes: every input read once, the output written once ([M,N], [B,M,N], ...); in-place forms
// (addmm_) write self.
#include <algorithm>

#include "formulas/common.h"

namespace flopsprof::detail {
namespace {

uint64_t mul3(int64_t a, int64_t b, int64_t c) {
  return checked_mul(checked_mul(u(a), u(b)), u(c));
}

bool beta_is_zero(const OpInputs& in, size_t i) {
  auto beta = in.scalar(i);
  return beta && *beta == 0.0;
}

// mm(a[M,K], b[K,N]): MACs = M*N*K
std::optional<FlopCount> mm(const OpInputs& in) {
  IntSpan a = in.shape(0), b = in.shape(1);
  if (a.size() != 2 || b.size() != 2) return std::nullopt;
  return gemm_count(mul3(a[0], b[1], a[1]), 0);
}

// addmm(input, a[M,K], b[K,N], beta, alpha): MACs = M*N*K; FLOPs = 2*M*N*K + M*N (beta*input)
std::optional<FlopCount> addmm(const OpInputs& in) {
  IntSpan a = in.shape(1), b = in.shape(2);
  if (a.size() != 2 || b.size() != 2) return std::nullopt;
  uint64_t out = checked_mul(u(a[0]), u(b[1]));
  return gemm_count(checked_mul(out, u(a[1])), beta_is_zero(in, 3) ? 0 : out);
}

// bmm(a[B,M,K], b[B,K,N]): MACs = B*M*N*K
std::optional<FlopCount> bmm(const OpInputs& in) {
  IntSpan a = in.shape(0), b = in.shape(1);
  if (a.size() != 3 || b.size() != 3) return std::nullopt;
  return gemm_count(checked_mul(mul3(a[0], a[1], b[2]), u(a[2])), 0);
}

// baddbmm(input, a[B,M,K], b[B,K,N], beta, alpha): 2*B*M*N*K + B*M*N
std::optional<FlopCount> baddbmm(const OpInputs& in) {
  IntSpan a = in.shape(1), b = in.shape(2);
  if (a.size() != 3 || b.size() != 3) return std::nullopt;
  uint64_t out = mul3(a[0], a[1], b[2]);
  return gemm_count(checked_mul(out, u(a[2])), beta_is_zero(in, 3) ? 0 : out);
}

// addbmm(input, a[B,M,K], b[B,K,N], beta, alpha): 2*B*M*N*K + M*N (the batch is summed into M*N)
std::optional<FlopCount> addbmm(const OpInputs& in) {
  IntSpan a = in.shape(1), b = in.shape(2);
  if (a.size() != 3 || b.size() != 3) return std::nullopt;
  uint64_t out = checked_mul(u(a[1]), u(b[2]));
  return gemm_count(checked_mul(checked_mul(out, u(a[0])), u(a[2])), beta_is_zero(in, 3) ? 0 : out);
}

// matmul(a, b) with numpy semantics: MACs = broadcast(batch dims) * M * N * K
std::optional<FlopCount> matmul(const OpInputs& in) {
  IntSpan a = in.shape(0), b = in.shape(1);
  if (a.empty() || b.empty()) return std::nullopt;
  int64_t k = a.back(0);
  int64_t m = a.size() >= 2 ? a.back(1) : 1;
  int64_t n = b.size() >= 2 ? b.back(0) : 1;
  if ((b.size() >= 2 ? b.back(1) : b.back(0)) != k) return std::nullopt;
  IntSpan a_batch(a.begin(), a.size() >= 2 ? a.size() - 2 : 0);
  IntSpan b_batch(b.begin(), b.size() >= 2 ? b.size() - 2 : 0);
  auto batch = broadcast_numel({a_batch, b_batch});
  if (!batch) return std::nullopt;
  return gemm_count(checked_mul(*batch, mul3(m, n, k)), 0);
}

// linear(x[..., K], w[N, K], bias[N]?): MACs = numel(x)/K * N * K = numel(x) * N;
// FLOPs = 2 * MACs + numel(output) when a bias is given
std::optional<FlopCount> linear(const OpInputs& in) {
  IntSpan x = in.shape(0), w = in.shape(1);
  if (x.empty() || w.empty() || w.size() > 2) return std::nullopt;
  uint64_t n = w.size() == 2 ? u(w[0]) : 1;
  uint64_t k = u(x.back(0));
  uint64_t rows = 1;  // product of the leading dims (not numel/K: K may be 0)
  for (size_t d = 0; d + 1 < x.size(); ++d) rows = checked_mul(rows, u(x[d]));
  uint64_t out = checked_mul(rows, n);
  return gemm_count(checked_mul(out, k), in.is_tensor(2) ? out : 0);
}

// mv(A[M,K], x[K]): MACs = M*K
std::optional<FlopCount> mv(const OpInputs& in) {
  IntSpan a = in.shape(0);
  if (a.size() != 2) return std::nullopt;
  return gemm_count(checked_mul(u(a[0]), u(a[1])), 0);
}

// addmv(input[M], A[M,K], x[K], beta, alpha): 2*M*K + M
std::optional<FlopCount> addmv(const OpInputs& in) {
  IntSpan a = in.shape(1);
  if (a.size() != 2) return std::nullopt;
  return gemm_count(checked_mul(u(a[0]), u(a[1])), beta_is_zero(in, 3) ? 0 : u(a[0]));
}

// dot(a[K], b[K]) / vdot: MACs = K
std::optional<FlopCount> dot(const OpInputs& in) {
  IntSpan a = in.shape(0);
  if (a.size() != 1) return std::nullopt;
  return gemm_count(u(a[0]), 0);
}

// ---- Bytes ----

// Reads the inputs; writes the product of `dims` elements of the dtype of tensor `like`.
std::optional<ByteCount> writes(const OpInputs& in, std::initializer_list<int64_t> dims,
                                size_t like) {
  uint64_t n = 1;
  for (int64_t d : dims) n = sat_mul(n, u(d));
  return reads_inputs_writes(in, n, in[like].dtype);
}

// mm(a[M,K], b[K,N]) -> [M,N]
std::optional<ByteCount> mm_bytes(const OpInputs& in) {
  IntSpan a = in.shape(0), b = in.shape(1);
  if (a.size() != 2 || b.size() != 2) return std::nullopt;
  return writes(in, {a[0], b[1]}, 0);
}

// addmm(input, a[M,K], b[K,N]) -> [M,N]
std::optional<ByteCount> addmm_bytes(const OpInputs& in) {
  IntSpan a = in.shape(1), b = in.shape(2);
  if (a.size() != 2 || b.size() != 2) return std::nullopt;
  return writes(in, {a[0], b[1]}, 1);
}

// bmm(a[B,M,K], b[B,K,N]) -> [B,M,N]
std::optional<ByteCount> bmm_bytes(const OpInputs& in) {
  IntSpan a = in.shape(0), b = in.shape(1);
  if (a.size() != 3 || b.size() != 3) return std::nullopt;
  return writes(in, {a[0], a[1], b[2]}, 0);
}

// baddbmm(input, a[B,M,K], b[B,K,N]) -> [B,M,N]; addbmm -> [M,N]
std::optional<ByteCount> baddbmm_bytes(const OpInputs& in) {
  IntSpan a = in.shape(1), b = in.shape(2);
  if (a.size() != 3 || b.size() != 3) return std::nullopt;
  return writes(in, {a[0], a[1], b[2]}, 1);
}
std::optional<ByteCount> addbmm_bytes(const OpInputs& in) {
  IntSpan a = in.shape(1), b = in.shape(2);
  if (a.size() != 3 || b.size() != 3) return std::nullopt;
  return writes(in, {a[1], b[2]}, 1);
}

// matmul(a, b): broadcast batch dims x [M] x [N] (a 1-d operand drops its dimension)
std::optional<ByteCount> matmul_bytes(const OpInputs& in) {
  IntSpan a = in.shape(0), b = in.shape(1);
  if (a.empty() || b.empty()) return std::nullopt;
  IntSpan a_batch(a.begin(), a.size() >= 2 ? a.size() - 2 : 0);
  IntSpan b_batch(b.begin(), b.size() >= 2 ? b.size() - 2 : 0);
  uint64_t n = 1;
  const size_t rank = std::max(a_batch.size(), b_batch.size());
  for (size_t k = 0; k < rank; ++k) {
    const int64_t x = k < a_batch.size() ? a_batch.back(k) : 1;
    const int64_t y = k < b_batch.size() ? b_batch.back(k) : 1;
    n = sat_mul(n, u(x == 1 ? y : x));
  }
  if (a.size() >= 2) n = sat_mul(n, u(a.back(1)));
  if (b.size() >= 2) n = sat_mul(n, u(b.back(0)));
  return reads_inputs_writes(in, n, promote(in[0].dtype, in[1].dtype));
}

// linear(x[..., K], w[N, K], bias) -> [..., N]
std::optional<ByteCount> linear_bytes(const OpInputs& in) {
  IntSpan x = in.shape(0), w = in.shape(1);
  if (x.empty() || w.empty() || w.size() > 2) return std::nullopt;
  uint64_t rows = 1;
  for (size_t d = 0; d + 1 < x.size(); ++d) rows = sat_mul(rows, u(x[d]));
  return reads_inputs_writes(in, sat_mul(rows, w.size() == 2 ? u(w[0]) : 1), in[0].dtype);
}

// mv(A[M,K], x[K]) -> [M]; addmv(input, A, x) -> [M]; dot -> a scalar
std::optional<ByteCount> mv_bytes(const OpInputs& in) {
  IntSpan a = in.shape(0);
  if (a.size() != 2) return std::nullopt;
  return writes(in, {a[0]}, 0);
}
std::optional<ByteCount> addmv_bytes(const OpInputs& in) {
  IntSpan a = in.shape(1);
  if (a.size() != 2) return std::nullopt;
  return writes(in, {a[0]}, 1);
}
std::optional<ByteCount> dot_bytes(const OpInputs& in) {
  if (!in.is_tensor(0)) return std::nullopt;
  return writes(in, {}, 0);
}
std::optional<ByteCount> matmul_in_place(const OpInputs& in) {
  if (!in.is_tensor(0)) return std::nullopt;
  return in_place(in, 0);
}

}  // namespace

void register_matmul_bytes() {
  add_builtin_bytes("aten::mm", mm_bytes);
  add_builtin_bytes("aten::addmm", addmm_bytes);
  add_builtin_bytes("aten::addmm_", matmul_in_place);
  add_builtin_bytes("aten::bmm", bmm_bytes);
  add_builtin_bytes("aten::baddbmm", baddbmm_bytes);
  add_builtin_bytes("aten::baddbmm_", matmul_in_place);
  add_builtin_bytes("aten::addbmm", addbmm_bytes);
  add_builtin_bytes("aten::matmul", matmul_bytes);
  add_builtin_bytes("aten::linear", linear_bytes);
  add_builtin_bytes("aten::mv", mv_bytes);
  add_builtin_bytes("aten::addmv", addmv_bytes);
  add_builtin_bytes("aten::addmv_", matmul_in_place);
  add_builtin_bytes("aten::dot", dot_bytes);
  add_builtin_bytes("aten::vdot", dot_bytes);
}

void register_matmul_formulas() {
  add_builtin_formula("aten::mm", mm);
  add_builtin_formula("aten::addmm", addmm);
  add_builtin_formula("aten::addmm_", addmm);
  add_builtin_formula("aten::bmm", bmm);
  add_builtin_formula("aten::baddbmm", baddbmm);
  add_builtin_formula("aten::baddbmm_", baddbmm);
  add_builtin_formula("aten::addbmm", addbmm);
  add_builtin_formula("aten::matmul", matmul);
  add_builtin_formula("aten::linear", linear);
  add_builtin_formula("aten::mv", mv);
  add_builtin_formula("aten::addmv", addmv);
  add_builtin_formula("aten::addmv_", addmv);
  add_builtin_formula("aten::dot", dot);
  add_builtin_formula("aten::vdot", dot);
}

}  // namespace flopsprof::detail
