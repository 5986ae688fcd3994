// Block Attention Residuals of Kimi K3 (Attention Residuals, arXiv 2603.15031; numerics as K3's HF
// `modeling_kimi_linear.py` `_apply_attn_res`, and the paper's two-phase form): the tensor
// passed between decoder layers is the partial block sum P; every `block_size` layers P is
// committed to the list of block vectors B, and each sublayer's input is a softmax over depth of
// [B..., P] with one folded pseudo-query per sublayer (RMS-normed keys, raw values, no 1/sqrt(d)).
// Owns: the commit schedule, the mixer math (f32) and the agreement of its two evaluation forms.
#pragma once

#include <span>
#include <vector>

namespace ds {

// Folded query of one mixer: q[d] = res_norm.weight[d] * res_proj.weight[0, d] (f32 [D]).
std::vector<float> fold_attn_res_query(std::span<const float> norm_weight,
                                       std::span<const float> proj_weight);

// The model's folded queries, one per sublayer plus the output mixer.
struct AttnResQueries {
  int n_layer = 0;
  int hidden = 0;
  std::vector<float> attn;  // f32 [L, D]  from self_attention_res_{norm,proj}
  std::vector<float> mlp;   // f32 [L, D]  from mlp_res_{norm,proj}
  std::vector<float> out;   // f32 [D]     from output_attn_res_{norm,proj}
  const float* attn_query(int layer) const { return attn.data() + size_t(layer) * hidden; }
  const float* mlp_query(int layer) const { return mlp.data() + size_t(layer) * hidden; }
  void validate() const;  // sizes consistent; throws ds::Error naming the field
};

// Reference mixer (as the HF code runs it), per token t: k_i = V_i·rsqrt(mean(V_i²)+eps); logit_i = k_i·q;
// out = Σ softmax(logit)_i V_i. sources[i] f32 [T, D] (committed blocks first, then P); out f32 [T, D]
// (must not alias a source).
void attn_res_mix(std::span<const float* const> sources, int n_tokens, int d, const float* query, float eps,
                  float* out);

// Phase 1 of the two-phase form for one block: over the committed vectors B (fixed for the block), per query
// j and token t keep m = max_i logit, s = Σ_i e^(logit-m), o = Σ_i e^(logit-m) B_i.
class AttnResBlockScores {
 public:
  // blocks[i] f32 [T, D]; queries[j] f32 [D]. Memory: queries × T × D floats.
  void compute(std::span<const float* const> blocks, int n_tokens, int d,
               std::span<const float* const> queries, float eps);
  // Phase 2 for query j: online-softmax merge of the block scores with the partial sum
  // P f32 [T, D]; P == nullptr means no partial term (h = o/s). out f32 [T, D].
  void merge(int j, const float* partial, float* out) const;
  int n_queries() const { return n_queries_; }

 private:
  int n_tokens_ = 0, d_ = 0, n_queries_ = 0;
  float eps_ = 1e-5f;
  std::vector<float> m_;        // f32 [Q, T]
  std::vector<float> s_;        // f32 [Q, T]
  std::vector<float> o_;        // f32 [Q, T, D]
  std::vector<float> queries_;  // f32 [Q, D]
};

enum class AttnResMode { Reference, TwoPhase };

// The per-forward stream for a batch of T tokens (AttnRes is per token: no state carries
// across forwards). Call order per layer l: attn_input, add_attn_output, mlp_input,
// add_mlp_output; after the last layer final_output. Out-of-order calls throw ds::Error.
class AttnResStream {
 public:
  // `queries` must outlive the stream.
  AttnResStream(const AttnResQueries& queries, int block_size, float eps, AttnResMode mode);

  void start(const float* embeddings, int n_tokens);  // P <- token embeddings f32 [T, D]
  void attn_input(int layer, float* h);               // h f32 [T, D]: input of input_layernorm
  void add_attn_output(int layer, const float* a);    // P <- P + a (P <- a right after a commit)
  void mlp_input(int layer, float* h);                // h f32 [T, D]: input of post_attention_layernorm
  void add_mlp_output(int layer, const float* m);     // P <- P + m
  void final_output(float* h);                        // h f32 [T, D]: input of the final norm

  const float* partial() const { return partial_.data(); }  // P f32 [T, D]
  int n_blocks() const { return int(blocks_.size()); }
  int n_tokens() const { return n_tokens_; }

 private:
  enum class Step { Idle, AttnIn, AttnOut, MlpIn, MlpOut, Done };
  void expect(int layer, Step want, const char* what) const;
  void commit();
  void mix(const float* query, int query_index, bool with_partial, float* h) const;

  const AttnResQueries& q_;
  int block_size_;
  float eps_;
  AttnResMode mode_;
  int n_tokens_ = 0;
  int layer_ = 0;        // the layer the next call belongs to
  int block_start_ = 0;  // layer index of the most recent commit
  Step step_ = Step::Idle;
  bool has_partial_ = false;
  std::vector<std::vector<float>> blocks_;  // committed B_i, each f32 [T, D]
  std::vector<float> partial_;              // P f32 [T, D]
  AttnResBlockScores scores_;               // two-phase: phase 1 of the current block
};

}  // namespace ds
