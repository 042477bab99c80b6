// attention: flash attention forward and backward over contiguous [B, H, L, E] queries and
// [B, Hk, S, E] keys and values (docs/attention.md, "The XPU kernels"). Each work-item owns one
// row (a query in the forward and the query gradient, a key in the key/value gradient); its
// work-group brings tiles of the other side into local memory, so each of their rows is read
// from global memory once per group, not once per row. The softmax is online (a running
// maximum and sum per query; the row's accumulator, in a global opmath scratch row, rescaled
// when the maximum grows), so no L x S matrix exists. Host side: kernels/xpu/ops/attention.cpp.
#include "common.h"

// Elements of a local tile: rows = ATT_TILE / max(E, Ev), at least 4 (the host limits E to 1024).
#define ATT_TILE 4096

// The score of query i and key j of (b, h) after the mask: mask_kind 0 none, 1 bool (false is
// -inf), 2 additive (the query's dtype); causal: j > i is -inf.
#define ATT_MASKED(T, s, b, h, i, j)                                                               \
  if (causal && (j) > (i)) {                                                                       \
    s = -INFINITY;                                                                                 \
  } else if (mask_kind != 0) {                                                                     \
    const long mo = (b) * ms0 + (h) * ms1 + (i) * ms2 + (j) * ms3;                                 \
    if (mask_kind == 1) {                                                                          \
      if (!mask[mo]) s = -INFINITY;                                                                \
    } else {                                                                                       \
      s += T##_load((global const T##_t*)mask, mo);                                                \
    }                                                                                              \
  }

#define ATT_MASK_PARAMS                                                                            \
  global const uchar *mask, int mask_kind, long ms0, long ms1, long ms2, long ms3, int causal

// A query kernel's work-item: group (bh, tile of XTEN_GROUP_SIZE queries from i0) and its
// query i (b, h; hk its key/value head), `active` when i < L.
#define ATT_QUERY_ROW                                                                              \
  const long tiles = (L + XTEN_GROUP_SIZE - 1) / XTEN_GROUP_SIZE;                                  \
  const long bh = get_group_id(0) / tiles, i0 = get_group_id(0) % tiles * XTEN_GROUP_SIZE;         \
  const long b = bh / H, h = bh % H, hk = h / (H / Hk);                                            \
  const int l = (int)get_local_id(0);                                                              \
  const long i = i0 + l;                                                                           \
  const bool active = i < L;
// A key kernel's work-item: group (bhk, tile of keys from j0) and its key j, row krow of k and
// v, `active` when j < S; `group` query heads share the key head.
#define ATT_KEY_ROW                                                                                \
  const long tiles = (S + XTEN_GROUP_SIZE - 1) / XTEN_GROUP_SIZE;                                  \
  const long bhk = get_group_id(0) / tiles, j0 = get_group_id(0) % tiles * XTEN_GROUP_SIZE;        \
  const long b = bhk / Hk, hk = bhk % Hk, group = H / Hk;                                          \
  const int l = (int)get_local_id(0);                                                              \
  const long j = j0 + l;                                                                           \
  const bool active = j < S;                                                                       \
  const long krow = bhk * S + (active ? j : 0);
// A key work-group's walk over the query tiles of the query heads sharing its key head: each
// tile's queries (qt), output gradients (gt), logsumexp (lt) and D (dt) loaded into local memory
// by the whole group; then for each query ii of the tile (i = i0 + ii, head h), the code between
// ATT_QUERY_TILES_BEGIN and ATT_QUERY_TILES_END (nothing runs where `active` is false).
#define ATT_QUERY_TILES_BEGIN(T)                                                                   \
  long rows = ATT_TILE / (E > Ev ? E : Ev);                                                        \
  if (rows > XTEN_GROUP_SIZE) rows = XTEN_GROUP_SIZE;                                              \
  /* causal: queries before the group's first key see none of its keys */                          \
  const long i_start = causal ? (j0 < L ? j0 : L) : 0;                                             \
  for (long h = hk * group; h < (hk + 1) * group; ++h) {                                           \
    const long bh = b * H + h;                                                                     \
    for (long i0 = i_start; i0 < L; i0 += rows) {                                                  \
      const long nq = L - i0 < rows ? L - i0 : rows;                                               \
      barrier(CLK_LOCAL_MEM_FENCE);                                                                \
      for (long x = l; x < nq * E; x += XTEN_GROUP_SIZE)                                           \
        qt[x] = T##_load(q, (bh * L + i0) * E + x);                                                \
      for (long x = l; x < nq * Ev; x += XTEN_GROUP_SIZE)                                          \
        gt[x] = T##_load(go, (bh * L + i0) * Ev + x);                                              \
      if (l < nq) {                                                                                \
        lt[l] = lse[bh * L + i0 + l];                                                              \
        dt[l] = dsum[bh * L + i0 + l];                                                             \
      }                                                                                            \
      barrier(CLK_LOCAL_MEM_FENCE);                                                                \
      for (long ii = 0; active && ii < nq; ++ii) {                                                 \
        const long i = i0 + ii;
#define ATT_QUERY_TILES_END                                                                        \
  }                                                                                                \
  }                                                                                                \
  }

// A query work-group's walk over the key tiles of its (b, hk) (kb, vb), up to the causal end:
// each tile of keys and values is loaded into local kt and vt by the whole group; then for each
// key j of the tile, the code between ATT_KEY_TILES_BEGIN and ATT_KEY_TILES_END sees the masked,
// scaled score s of this work-item's query i (row qr; nothing runs where `active` is false).
#define ATT_KEY_TILES_BEGIN(T, SCORE)                                                              \
  const long rows = ATT_TILE / (E > Ev ? E : Ev);                                                  \
  const long i_last = (i0 + XTEN_GROUP_SIZE < L ? i0 + XTEN_GROUP_SIZE : L) - 1;                   \
  const long kv_end = causal ? (i_last + 1 < S ? i_last + 1 : S) : S;                              \
  for (long j0 = 0; j0 < kv_end; j0 += rows) {                                                     \
    const long nk = kv_end - j0 < rows ? kv_end - j0 : rows;                                       \
    barrier(CLK_LOCAL_MEM_FENCE);                                                                  \
    for (long x = l; x < nk * E; x += XTEN_GROUP_SIZE) kt[x] = T##_load(kb, j0 * E + x);           \
    for (long x = l; x < nk * Ev; x += XTEN_GROUP_SIZE) vt[x] = T##_load(vb, j0 * Ev + x);         \
    barrier(CLK_LOCAL_MEM_FENCE);                                                                  \
    for (long jj = 0; active && jj < nk; ++jj) {                                                   \
      const long j = j0 + jj;                                                                      \
      T##_m s = 0;                                                                                 \
      SCORE(T);                                                                                    \
      s *= scale;                                                                                  \
      ATT_MASKED(T, s, b, h, i, j)
// The score of this work-item's query row qr and key jj of the tile, one element at a time.
#define ATT_SCORE_SCALAR(T) for (long c = 0; c < E; ++c) s += T##_load(qr, c) * kt[jj * E + c]
#define ATT_KEY_TILES_END                                                                          \
  }                                                                                                \
  }

// out at ((b * os0 + h * os1 + i * os2) + c); lse [B, H, L]; acc [B * H * L, Ev] scratch.
#define ATTENTION_FORWARD(T, unused)                                                               \
  KERNEL attention_forward_##T(global T##_t* out, global T##_m* lse, global T##_m* acc,            \
                               global const T##_t* q, global const T##_t* k,                       \
                               global const T##_t* v, ATT_MASK_PARAMS, long H, long Hk, long L,    \
                               long S, long E, long Ev, long os0, long os1, long os2, T##_m scale) { \
    local T##_m kt[ATT_TILE];                                                                      \
    local T##_m vt[ATT_TILE];                                                                      \
    ATT_QUERY_ROW                                                                                  \
    global const T##_t* qr = q + (bh * L + (active ? i : 0)) * E;                                  \
    global T##_m* ar = acc + (bh * L + (active ? i : 0)) * Ev;                                     \
    global const T##_t* kb = k + (b * Hk + hk) * S * E;                                            \
    global const T##_t* vb = v + (b * Hk + hk) * S * Ev;                                           \
    for (long c = 0; active && c < Ev; ++c) ar[c] = 0;                                             \
    T##_m m = -INFINITY, sum = 0;                                                                  \
    ATT_KEY_TILES_BEGIN(T, ATT_SCORE_SCALAR)                                                        \
        if (s == -INFINITY) continue;                                                              \
        if (s > m) {                                                                               \
          const T##_m alpha = exp(m - s); /* m = -inf: 0 */                                        \
          sum *= alpha;                                                                            \
          for (long c = 0; c < Ev; ++c) ar[c] *= alpha;                                            \
          m = s;                                                                                   \
        }                                                                                          \
        const T##_m p = exp(s - m);                                                                \
        sum += p;                                                                                  \
        for (long c = 0; c < Ev; ++c) ar[c] += p * vt[jj * Ev + c];                                \
    ATT_KEY_TILES_END                                                                              \
    if (!active) return;                                                                           \
    const T##_m inv = sum > 0 ? 1 / sum : 0; /* a row that attends nothing gives 0 */              \
    global T##_t* orow = out + b * os0 + h * os1 + i * os2;                                        \
    for (long c = 0; c < Ev; ++c) T##_store(orow, c, ar[c] * inv);                                 \
    lse[bh * L + i] = sum > 0 ? m + log(sum) : -INFINITY;                                          \
  }

XTEN_FLOAT_DTYPES(ATTENTION_FORWARD, _)

// The probability of query i (logsumexp li) for a masked score s: 0 where the query attended
// nothing.
#define ATT_PROB(s, li) ((li) == -INFINITY || (s) == -INFINITY ? 0 : exp((s) - (li)))

// The query gradient, one work-item per query: D = rowsum(dO * O) (kept in dsum for the
// key/value kernel), then over key tiles dS = P (dO . V - D), dQ += dS K, times scale.
#define ATTENTION_BACKWARD_Q(T, unused)                                                            \
  KERNEL attention_backward_q_##T(global T##_t* dq, global T##_m* dsum, global T##_m* acc,         \
                                  global const T##_t* go, global const T##_t* q,                   \
                                  global const T##_t* k, global const T##_t* v,                    \
                                  global const T##_t* o, global const T##_m* lse,                  \
                                  ATT_MASK_PARAMS, long H, long Hk, long L, long S, long E,        \
                                  long Ev, T##_m scale) {                                          \
    local T##_m kt[ATT_TILE];                                                                      \
    local T##_m vt[ATT_TILE];                                                                      \
    ATT_QUERY_ROW                                                                                  \
    const long row = bh * L + (active ? i : 0);                                                    \
    global const T##_t* qr = q + row * E;                                                          \
    global const T##_t* gr = go + row * Ev;                                                        \
    global T##_m* ar = acc + row * E;                                                              \
    global const T##_t* kb = k + (b * Hk + hk) * S * E;                                            \
    global const T##_t* vb = v + (b * Hk + hk) * S * Ev;                                           \
    T##_m d = 0;                                                                                   \
    for (long c = 0; active && c < Ev; ++c) d += T##_load(gr, c) * T##_load(o, row * Ev + c);      \
    for (long c = 0; active && c < E; ++c) ar[c] = 0;                                              \
    if (active) dsum[row] = d;                                                                     \
    const T##_m li = active ? lse[row] : 0;                                                        \
    ATT_KEY_TILES_BEGIN(T, ATT_SCORE_SCALAR)                                                        \
        const T##_m p = ATT_PROB(s, li);                                                           \
        if (p == 0) continue;                                                                      \
        T##_m dp = 0;                                                                              \
        for (long c = 0; c < Ev; ++c) dp += T##_load(gr, c) * vt[jj * Ev + c];                     \
        const T##_m ds = p * (dp - d);                                                             \
        for (long c = 0; c < E; ++c) ar[c] += ds * kt[jj * E + c];                                 \
    ATT_KEY_TILES_END                                                                              \
    if (!active) return;                                                                           \
    for (long c = 0; c < E; ++c) T##_store(dq, row * E + c, ar[c] * scale);                        \
  }

XTEN_FLOAT_DTYPES(ATTENTION_BACKWARD_Q, _)

// The key and value gradients, one work-item per key of (b, hk): over the group's query heads
// and their query tiles (queries, their output gradients, logsumexp and D in local memory),
// dV += P dO and dK += dS Q, dK times scale. Each key has one writer: no atomics.
#define ATTENTION_BACKWARD_KV(T, unused)                                                           \
  KERNEL attention_backward_kv_##T(global T##_t* dk, global T##_t* dv, global T##_m* acck,         \
                                   global T##_m* accv, global const T##_t* go,                     \
                                   global const T##_t* q, global const T##_t* k,                   \
                                   global const T##_t* v, global const T##_m* lse,                 \
                                   global const T##_m* dsum, ATT_MASK_PARAMS, long H, long Hk,     \
                                   long L, long S, long E, long Ev, T##_m scale) {                 \
    local T##_m qt[ATT_TILE];                                                                      \
    local T##_m gt[ATT_TILE];                                                                      \
    local T##_m lt[XTEN_GROUP_SIZE];                                                               \
    local T##_m dt[XTEN_GROUP_SIZE];                                                               \
    ATT_KEY_ROW                                                                                    \
    global const T##_t* kr = k + krow * E;                                                         \
    global const T##_t* vr = v + krow * Ev;                                                        \
    global T##_m* ak = acck + krow * E;                                                            \
    global T##_m* av = accv + krow * Ev;                                                           \
    for (long c = 0; active && c < E; ++c) ak[c] = 0;                                              \
    for (long c = 0; active && c < Ev; ++c) av[c] = 0;                                             \
    ATT_QUERY_TILES_BEGIN(T)                                                                       \
        T##_m s = 0;                                                                               \
        for (long c = 0; c < E; ++c) s += qt[ii * E + c] * T##_load(kr, c);                        \
        s *= scale;                                                                                \
        ATT_MASKED(T, s, b, h, i, j)                                                               \
        const T##_m p = ATT_PROB(s, lt[ii]);                                                       \
        if (p == 0) continue;                                                                      \
        T##_m dp = 0;                                                                              \
        for (long c = 0; c < Ev; ++c) {                                                            \
          const T##_m g = gt[ii * Ev + c];                                                         \
          av[c] += p * g;                                                                          \
          dp += g * T##_load(vr, c);                                                               \
        }                                                                                          \
        const T##_m ds = p * (dp - dt[ii]);                                                        \
        for (long c = 0; c < E; ++c) ak[c] += ds * qt[ii * E + c];                                 \
    ATT_QUERY_TILES_END                                                                            \
    if (!active) return;                                                                           \
    for (long c = 0; c < E; ++c) T##_store(dk, krow * E + c, ak[c] * scale);                       \
    for (long c = 0; c < Ev; ++c) T##_store(dv, krow * Ev + c, av[c]);                             \
  }

XTEN_FLOAT_DTYPES(ATTENTION_BACKWARD_KV, _)

// Note [Attention rows in vector registers]: for head sizes that are multiples of 16 up to 64
// (the usual 16, 32, 64), the same three walks keep each work-item's rows (its query, output
// gradient or key and value, and its accumulators) in four float16 registers each instead of
// global scratch rows, and take each inner product 16 elements at a time from the local tiles.
// PoCL runs the scalar kernels above one element at a time, with the accumulator row read and
// written in global memory for every key. The float64 kernels and other head sizes keep the
// scalar forms. Inner products add 16 lanes and then the lanes, so the last bits differ from
// the scalar kernels' (both are within the CPU's tolerance: docs/attention.md).
#define ATT_CHUNKS(X) X(0) X(1) X(2) X(3)
// Chunk c of a row of n chunks: 16 elements, or zeros past the row.
#define ATT_ZERO(c) float16 q##c = (float16)(0.0f), a##c = (float16)(0.0f);
static inline float att_dot(float16 x0, float16 x1, float16 x2, float16 x3, local const float* y,
                            int n) {
  float16 p = x0 * vload16(0, y);
  if (n > 1) p += x1 * vload16(1, y);
  if (n > 2) p += x2 * vload16(2, y);
  if (n > 3) p += x3 * vload16(3, y);
  return hsum16(p);
}
#define ATT_LOAD_ROW(T, x, row, n)                                                                 \
  if (n > 0) x##0 = T##_load16(row);                                                               \
  if (n > 1) x##1 = T##_load16(row + 16);                                                          \
  if (n > 2) x##2 = T##_load16(row + 32);                                                          \
  if (n > 3) x##3 = T##_load16(row + 48);
// x += f * y[0..16n) (y local)
#define ATT_AXPY(x, f, y, n)                                                                       \
  x##0 += (f) * vload16(0, y);                                                                     \
  if (n > 1) x##1 += (f) * vload16(1, y);                                                          \
  if (n > 2) x##2 += (f) * vload16(2, y);                                                          \
  if (n > 3) x##3 += (f) * vload16(3, y);
#define ATT_STORE_ROW(T, x, dst, n, f)                                                             \
  {                                                                                                \
    float vals[64];                                                                                \
    global T##_t* to = (dst);                                                                      \
    vstore16(x##0 * (f), 0, vals);                                                                 \
    vstore16(x##1 * (f), 1, vals);                                                                 \
    vstore16(x##2 * (f), 2, vals);                                                                 \
    vstore16(x##3 * (f), 3, vals);                                                                 \
    for (int c = 0; c < 16 * (n); ++c) T##_store(to, c, vals[c]);                                  \
  }
#define ATT_SCORE_VEC(T) s = att_dot(q0, q1, q2, q3, kt + jj * E, ne)

#define ATTENTION_FORWARD_VEC(T, unused)                                                           \
  KERNEL attention_forward_vec_##T(global T##_t* out, global float* lse, global float* acc,        \
                                   global const T##_t* q, global const T##_t* k,                   \
                                   global const T##_t* v, ATT_MASK_PARAMS, long H, long Hk,        \
                                   long L, long S, long E, long Ev, long os0, long os1, long os2,  \
                                   float scale) {                                                  \
    local float kt[ATT_TILE];                                                                      \
    local float vt[ATT_TILE];                                                                      \
    ATT_QUERY_ROW                                                                                  \
    const int ne = (int)(E / 16), nv = (int)(Ev / 16);                                             \
    global const T##_t* kb = k + (b * Hk + hk) * S * E;                                            \
    global const T##_t* vb = v + (b * Hk + hk) * S * Ev;                                           \
    ATT_CHUNKS(ATT_ZERO)                                                                           \
    if (active) {                                                                                  \
      ATT_LOAD_ROW(T, q, q + (bh * L + i) * E, ne)                                                 \
    }                                                                                              \
    float m = -INFINITY, sum = 0;                                                                  \
    ATT_KEY_TILES_BEGIN(T, ATT_SCORE_VEC)                                                          \
        if (s == -INFINITY) continue;                                                              \
        if (s > m) {                                                                               \
          const float alpha = exp(m - s); /* m = -inf: 0 */                                        \
          sum *= alpha;                                                                            \
          a0 *= alpha, a1 *= alpha, a2 *= alpha, a3 *= alpha;                                      \
          m = s;                                                                                   \
        }                                                                                          \
        const float p = exp(s - m);                                                                \
        sum += p;                                                                                  \
        ATT_AXPY(a, p, vt + jj * Ev, nv)                                                           \
    ATT_KEY_TILES_END                                                                              \
    if (!active) return;                                                                           \
    const float inv = sum > 0 ? 1 / sum : 0; /* a row that attends nothing gives 0 */              \
    ATT_STORE_ROW(T, a, out + b * os0 + h * os1 + i * os2, nv, inv)                                \
    lse[bh * L + i] = sum > 0 ? m + log(sum) : -INFINITY;                                          \
  }

#define ATTENTION_BACKWARD_Q_VEC(T, unused)                                                        \
  KERNEL attention_backward_q_vec_##T(global T##_t* dq, global float* dsum, global float* acc,     \
                                      global const T##_t* go, global const T##_t* q,               \
                                      global const T##_t* k, global const T##_t* v,                \
                                      global const T##_t* o, global const float* lse,              \
                                      ATT_MASK_PARAMS, long H, long Hk, long L, long S, long E,    \
                                      long Ev, float scale) {                                      \
    local float kt[ATT_TILE];                                                                      \
    local float vt[ATT_TILE];                                                                      \
    ATT_QUERY_ROW                                                                                  \
    const long row = bh * L + (active ? i : 0);                                                    \
    const int ne = (int)(E / 16), nv = (int)(Ev / 16);                                             \
    global const T##_t* gr = go + row * Ev;                                                        \
    global const T##_t* kb = k + (b * Hk + hk) * S * E;                                            \
    global const T##_t* vb = v + (b * Hk + hk) * S * Ev;                                           \
    ATT_CHUNKS(ATT_ZERO)                                                                           \
    float16 g0 = 0, g1 = 0, g2 = 0, g3 = 0;                                                        \
    float d = 0;                                                                                   \
    if (active) {                                                                                  \
      for (long c = 0; c < Ev; ++c) d += T##_load(gr, c) * T##_load(o, row * Ev + c);             \
      dsum[row] = d;                                                                               \
      ATT_LOAD_ROW(T, q, q + row * E, ne)                                                          \
      ATT_LOAD_ROW(T, g, gr, nv)                                                                   \
    }                                                                                              \
    const float li = active ? lse[row] : 0;                                                        \
    ATT_KEY_TILES_BEGIN(T, ATT_SCORE_VEC)                                                          \
        const float p = ATT_PROB(s, li);                                                           \
        if (p == 0) continue;                                                                      \
        const float dp = att_dot(g0, g1, g2, g3, vt + jj * Ev, nv);                                \
        const float ds = p * (dp - d);                                                             \
        ATT_AXPY(a, ds, kt + jj * E, ne)                                                           \
    ATT_KEY_TILES_END                                                                              \
    if (!active) return;                                                                           \
    ATT_STORE_ROW(T, a, dq + row * E, ne, scale)                                                   \
  }

#define ATTENTION_BACKWARD_KV_VEC(T, unused)                                                       \
  KERNEL attention_backward_kv_vec_##T(global T##_t* dk, global T##_t* dv, global float* acck,     \
                                       global float* accv, global const T##_t* go,                 \
                                       global const T##_t* q, global const T##_t* k,               \
                                       global const T##_t* v, global const float* lse,             \
                                       global const float* dsum, ATT_MASK_PARAMS, long H, long Hk, \
                                       long L, long S, long E, long Ev, float scale) {             \
    local float qt[ATT_TILE];                                                                      \
    local float gt[ATT_TILE];                                                                      \
    local float lt[XTEN_GROUP_SIZE];                                                               \
    local float dt[XTEN_GROUP_SIZE];                                                               \
    ATT_KEY_ROW                                                                                    \
    const int ne = (int)(E / 16), nv = (int)(Ev / 16);                                             \
    /* q: this key's row; g: its value row; a: dK; w: dV */                                        \
    ATT_CHUNKS(ATT_ZERO)                                                                           \
    float16 g0 = 0, g1 = 0, g2 = 0, g3 = 0, w0 = 0, w1 = 0, w2 = 0, w3 = 0;                        \
    if (active) {                                                                                  \
      ATT_LOAD_ROW(T, q, k + krow * E, ne)                                                         \
      ATT_LOAD_ROW(T, g, v + krow * Ev, nv)                                                        \
    }                                                                                              \
    ATT_QUERY_TILES_BEGIN(T)                                                                       \
        float s = att_dot(q0, q1, q2, q3, qt + ii * E, ne) * scale;                                \
        ATT_MASKED(T, s, b, h, i, j)                                                               \
        const float p = ATT_PROB(s, lt[ii]);                                                       \
        if (p == 0) continue;                                                                      \
        ATT_AXPY(w, p, gt + ii * Ev, nv)                                                           \
        const float dp = att_dot(g0, g1, g2, g3, gt + ii * Ev, nv);                                \
        const float ds = p * (dp - dt[ii]);                                                        \
        ATT_AXPY(a, ds, qt + ii * E, ne)                                                           \
    ATT_QUERY_TILES_END                                                                            \
    if (!active) return;                                                                           \
    ATT_STORE_ROW(T, a, dk + krow * E, ne, scale)                                                  \
    ATT_STORE_ROW(T, w, dv + krow * Ev, nv, 1.0f)                                                  \
  }

#ifndef XTEN_F64
ATTENTION_FORWARD_VEC(f32, _)
ATTENTION_FORWARD_VEC(bf16, _)
ATTENTION_FORWARD_VEC(f16, _)
ATTENTION_BACKWARD_Q_VEC(f32, _)
ATTENTION_BACKWARD_Q_VEC(bf16, _)
ATTENTION_BACKWARD_Q_VEC(f16, _)
ATTENTION_BACKWARD_KV_VEC(f32, _)
ATTENTION_BACKWARD_KV_VEC(bf16, _)
ATTENTION_BACKWARD_KV_VEC(f16, _)
#endif
