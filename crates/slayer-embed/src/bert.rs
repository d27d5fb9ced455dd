//! A BERT encoder (sentence-transformers' mean pooling, unit length) that reads its weights
//! straight from the mapped `model.safetensors`: nothing is copied, and the pages a text never
//! touches (most of the word-embedding table) are never read. It embeds one text at a time,
//! with no padding: a search embeds one question, where loading candle's copy of the weights
//! costs ten times the forward pass. Batches of documents stay on candle (`local`), whose
//! blocked matrix products win there; tests check both give the same vectors.

use std::ops::Range;
use std::path::{Path, PathBuf};

use crate::halves_file;
use rayon::prelude::*;
use serde::Deserialize;
use slayer_common::mapped::{HugePageBuffer, MappedFile};
use slayer_common::simd::{
    dot_f32 as dot, dot_half_rows_by_tokens, dot_rounded_rows_by_tokens, dot_rows_by_tokens,
    to_half,
};

/// The `config.json` fields the encoder reads.
#[derive(Debug, Clone, Deserialize)]
pub struct Config {
    hidden_size: usize,
    num_attention_heads: usize,
    num_hidden_layers: usize,
    intermediate_size: usize,
    max_position_embeddings: usize,
    vocab_size: usize,
    type_vocab_size: usize,
    layer_norm_eps: f64,
    hidden_act: String,
    #[serde(default = "absolute")]
    position_embedding_type: String,
}

fn absolute() -> String {
    "absolute".into()
}

/// A tensor's place in the data section, in f32s.
type Span = Range<usize>;

struct Linear {
    weight: Span,
    bias: Span,
    inputs: usize,
    outputs: usize,
}

struct Norm {
    weight: Span,
    bias: Span,
}

struct Layer {
    query: Linear,
    key: Linear,
    value: Linear,
    attention_out: Linear,
    attention_norm: Norm,
    up: Linear,
    down: Linear,
    output_norm: Norm,
}

impl Layer {
    fn spans(&self) -> impl Iterator<Item = &Span> {
        let linears = [
            &self.query,
            &self.key,
            &self.value,
            &self.attention_out,
            &self.up,
            &self.down,
        ];
        let norms = [&self.attention_norm, &self.output_norm];
        linears
            .into_iter()
            .flat_map(|l| [&l.weight, &l.bias])
            .chain(norms.into_iter().flat_map(|n| [&n.weight, &n.bias]))
    }
}

/// The encoder over its mapped weights.
pub struct Bert {
    file: MappedFile,
    /// The weights file, whose folder keeps the halves file.
    weights: PathBuf,
    /// Where the data section starts in the file.
    data: usize,
    config: Config,
    words: Span,
    positions: Span,
    types: Span,
    embedding_norm: Norm,
    layers: Vec<Layer>,
    /// Every span the layers read.
    encoder: Span,
    /// The layers' weights in half precision, made on the first question, in large pages
    /// (21 MB read whole by every question: [`HugePageBuffer`]).
    halves: std::sync::OnceLock<Halves>,
    /// Whether the mapped f32 weights of the layers were mapped in whole, for a text embedded
    /// at full precision.
    paged_in: std::sync::OnceLock<()>,
}

/// The half-precision weights: in large pages, on the heap where the kernel refused a map, or
/// mapped from the cache file ([`crate::halves_file`]).
enum Halves {
    Paged(HugePageBuffer),
    Heap(Vec<u16>),
    Mapped(MappedFile),
}

impl Halves {
    fn as_slice(&self) -> &[u16] {
        match self {
            Halves::Paged(buffer) => bytemuck::cast_slice(buffer.bytes()),
            Halves::Heap(halves) => halves,
            Halves::Mapped(file) => bytemuck::cast_slice(&file.bytes()[halves_file::HEADER..]),
        }
    }
}

/// Which copy of the layers' weights a forward pass reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    /// The mapped f32 weights: the vectors that are stored.
    Full,
    /// The mapped f32 weights rounded to half precision as they are read
    /// ([`dot_rounded_rows_by_tokens`]): [`Precision::Half`]'s vector, bit for bit, without
    /// making the copy, for a process that embeds one question.
    Rounded,
    /// A half-precision copy (IEEE binary16): half the bytes, for a question. Its vector is
    /// within about 1e-3 of the full one per dimension, far inside the int8 rows it is
    /// compared with; a served search reads 21 MB of weights per question instead of 42, so
    /// they stay in cache beside the vector scan.
    Half,
}

#[derive(Deserialize)]
struct Entry {
    dtype: String,
    shape: Vec<usize>,
    data_offsets: [usize; 2],
}

/// Why a model folder cannot be read by [`Bert`], or a text cannot be embedded by it.
#[derive(Debug, thiserror::Error)]
pub enum BertError {
    /// A file cannot be read.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// `config.json` or a tensor entry is not of the expected shape.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// A configuration this encoder does not implement.
    #[error("{0}")]
    Unsupported(&'static str),
    /// The safetensors file is cut short or not laid out as mapped reading needs.
    #[error("{0}")]
    Layout(&'static str),
    /// A tensor the encoder reads is missing.
    #[error("no tensor {0}")]
    MissingTensor(String),
    /// A tensor of another type or shape.
    #[error("tensor {name} is not F32 {shape:?}")]
    TensorType {
        /// The tensor.
        name: String,
        /// The shape it should have.
        shape: Vec<usize>,
    },
    /// A tensor outside the data section or unaligned.
    #[error("tensor {0} is misplaced")]
    Misplaced(String),
    /// A text of no tokens or more than the model's positions.
    #[error("{tokens} tokens: between 1 and {max} fit")]
    Length {
        /// The text's tokens.
        tokens: usize,
        /// The most the model takes.
        max: usize,
    },
    /// A token id outside the vocabulary.
    #[error("token id {0} is outside the vocabulary")]
    UnknownToken(usize),
}

impl Bert {
    /// Maps `model.safetensors` and checks every tensor the encoder reads (names, shapes,
    /// f32, aligned). `Err` says why the file cannot be read this way.
    pub fn load(weights: &Path, config: Config) -> Result<Bert, BertError> {
        if config.hidden_act != "gelu" || config.position_embedding_type != "absolute" {
            return Err(BertError::Unsupported(
                "only gelu activations and absolute positions are supported",
            ));
        }
        if config.num_attention_heads == 0
            || !config
                .hidden_size
                .is_multiple_of(config.num_attention_heads)
        {
            return Err(BertError::Unsupported(
                "hidden size not a multiple of the heads",
            ));
        }
        let file = MappedFile::open(weights)?;
        let bytes = file.bytes();
        let header_len = bytes
            .get(..8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap_or_default()) as usize)
            .ok_or(BertError::Layout("truncated safetensors file"))?;
        let data = 8usize.saturating_add(header_len);
        let header: rustc_hash::FxHashMap<String, serde_json::Value> = bytes
            .get(8..data)
            .ok_or(BertError::Layout("truncated safetensors header"))
            .and_then(|h| {
                serde_json::from_slice(h)
                    .map_err(|_| BertError::Layout("unreadable safetensors header"))
            })?;
        if data % 4 != 0 {
            return Err(BertError::Layout("tensor data not aligned to 4 bytes"));
        }
        let data_len = bytes.len() - data;
        let prefix = if header.contains_key("bert.embeddings.word_embeddings.weight") {
            "bert."
        } else {
            ""
        };
        let span = |name: &str, shape: &[usize]| -> Result<Span, BertError> {
            let value = header
                .get(&format!("{prefix}{name}"))
                .ok_or_else(|| BertError::MissingTensor(name.to_owned()))?;
            let entry: Entry = serde_json::from_value(value.clone())?;
            let [begin, end] = entry.data_offsets;
            if entry.dtype != "F32" || entry.shape != shape {
                return Err(BertError::TensorType {
                    name: name.to_owned(),
                    shape: shape.to_vec(),
                });
            }
            let len: usize = shape.iter().product();
            if begin % 4 != 0 || end != begin + 4 * len || end > data_len {
                return Err(BertError::Misplaced(name.to_owned()));
            }
            Ok(begin / 4..end / 4)
        };
        let h = config.hidden_size;
        let linear = |name: &str, inputs: usize, outputs: usize| -> Result<Linear, BertError> {
            Ok(Linear {
                weight: span(&format!("{name}.weight"), &[outputs, inputs])?,
                bias: span(&format!("{name}.bias"), &[outputs])?,
                inputs,
                outputs,
            })
        };
        let norm = |name: &str| -> Result<Norm, BertError> {
            Ok(Norm {
                weight: span(&format!("{name}.weight"), &[h])?,
                bias: span(&format!("{name}.bias"), &[h])?,
            })
        };
        let layers = (0..config.num_hidden_layers)
            .map(|i| {
                let at = |part: &str| format!("encoder.layer.{i}.{part}");
                Ok(Layer {
                    query: linear(&at("attention.self.query"), h, h)?,
                    key: linear(&at("attention.self.key"), h, h)?,
                    value: linear(&at("attention.self.value"), h, h)?,
                    attention_out: linear(&at("attention.output.dense"), h, h)?,
                    attention_norm: norm(&at("attention.output.LayerNorm"))?,
                    up: linear(&at("intermediate.dense"), h, config.intermediate_size)?,
                    down: linear(&at("output.dense"), config.intermediate_size, h)?,
                    output_norm: norm(&at("output.LayerNorm"))?,
                })
            })
            .collect::<Result<Vec<_>, BertError>>()?;
        let spans = layers.iter().flat_map(Layer::spans);
        let (lo, hi) = spans.fold((usize::MAX, 0), |(lo, hi), s| {
            (lo.min(s.start), hi.max(s.end))
        });
        let (lo, hi) = (lo.min(hi), hi);
        Ok(Bert {
            words: span("embeddings.word_embeddings.weight", &[config.vocab_size, h])?,
            positions: span(
                "embeddings.position_embeddings.weight",
                &[config.max_position_embeddings, h],
            )?,
            types: span(
                "embeddings.token_type_embeddings.weight",
                &[config.type_vocab_size, h],
            )?,
            embedding_norm: norm("embeddings.LayerNorm")?,
            layers,
            encoder: lo..hi,
            halves: std::sync::OnceLock::new(),
            paged_in: std::sync::OnceLock::new(),
            weights: weights.to_owned(),
            file,
            data,
            config,
        })
    }

    /// Lets go of the pages of the layers' mapped f32 weights ([`MappedFile::release`]), and of
    /// the halves file where it was mapped: a process done with them (one that embedded its
    /// one question, or made the half-precision copy) need not hold 42 MB of them in its
    /// memory. A later read maps them in again.
    pub fn release_weights(&self) {
        if self.encoder.start < self.encoder.end {
            self.file.release(self.file_range(self.encoder.clone()));
        }
        // The halves file's pages too: a one-shot's scan comes next (100,000 memories, all
        // channels: 93 MiB peak with them held, 73 without).
        if let Some(Halves::Mapped(file)) = self.halves.get() {
            file.release(0..file.bytes().len());
        }
    }

    /// The bytes of the file that hold these floats of the data section.
    fn file_range(&self, floats: Range<usize>) -> Range<usize> {
        self.data + floats.start * 4..self.data + floats.end * 4
    }

    /// The most tokens one text may have.
    pub fn max_positions(&self) -> usize {
        self.config.max_position_embeddings
    }

    /// The data section as f32s; `load` checked it is aligned.
    fn floats(&self) -> &[f32] {
        let bytes = &self.file.bytes()[self.data..];
        bytemuck::cast_slice(&bytes[..bytes.len() / 4 * 4])
    }

    /// The layers' weights in half precision, converted on the first call (on every core).
    /// The mapped f32 weights are let go after (unless a full-precision text mapped them in):
    /// a long-lived search reads the copy, and the biases and norms it reads at f32 map a few
    /// pages back in.
    fn halves(&self) -> &[u16] {
        let halves = self.halves.get_or_init(|| {
            let len = self.encoder.len();
            let halves = match HugePageBuffer::zeroed(len * 2) {
                Ok(mut buffer) => {
                    self.round_encoder(bytemuck::cast_slice_mut(buffer.bytes_mut()));
                    Halves::Paged(buffer)
                }
                Err(_) => {
                    let mut heap = vec![0u16; len];
                    self.round_encoder(&mut heap);
                    Halves::Heap(heap)
                }
            };
            if self.paged_in.get().is_none() {
                self.release_weights();
            }
            halves
        });
        halves.as_slice()
    }

    /// The layers' f32 weights rounded to half precision into `to`, on every core.
    fn round_encoder(&self, to: &mut [u16]) {
        const CHUNK: usize = 1 << 16;
        let floats = &self.floats()[self.encoder.clone()];
        to.par_chunks_mut(CHUNK)
            .zip(floats.par_chunks(CHUNK))
            .for_each(|(to, from)| to_half(from, to));
    }

    /// One question, in a process that embeds no other (a one-shot search): read at
    /// [`Precision::Half`] from the halves file ([`crate::halves_file`]) when one was made from
    /// these weights (mapped, no copy), else at [`Precision::Rounded`] (the same vector), after
    /// which the file is written for the next such process. The weights' pages are let go
    /// after either way ([`Bert::release_weights`]).
    pub fn embed_once(&self, ids: &[u32]) -> Result<Vec<f32>, BertError> {
        let key = halves_file::Key::of(&self.weights, self.encoder.clone());
        let places = halves_file::places(self.weights.parent().unwrap_or(Path::new(".")));
        let has_halves = self.halves.get().is_some()
            || match key.as_ref().and_then(|key| halves_file::open(&places, key)) {
                Some(file) => {
                    file.prefault(halves_file::HEADER..file.bytes().len());
                    let _ = self.halves.set(Halves::Mapped(file));
                    true
                }
                None => false,
            };
        let precision = match has_halves {
            true => Precision::Half,
            false => Precision::Rounded,
        };
        let embedded = self.embed_in(ids, precision);
        if !has_halves && embedded.is_ok() {
            if let Some(key) = key.filter(|_| halves_file::writable(&places)) {
                let mut halves = vec![0u16; self.encoder.len()];
                self.round_encoder(&mut halves);
                halves_file::write(&places, &key, &halves);
            }
        }
        self.release_weights();
        embedded
    }

    /// Whether the half-precision weights are the cache file's (tests).
    #[cfg(test)]
    pub(crate) fn halves_are_mapped(&self) -> bool {
        matches!(self.halves.get(), Some(Halves::Mapped(_)))
    }

    /// The layers' f32 weights, mapped in with one call the first time a text is embedded at
    /// full precision (every such text reads all of them).
    fn page_in_full(&self) {
        self.paged_in.get_or_init(|| {
            if self.encoder.start < self.encoder.end {
                self.file.prefault(self.file_range(self.encoder.clone()));
            }
        });
    }

    /// The unit-length mean of the last hidden states of one text's token ids (special tokens
    /// included, no padding). `Err` for an id outside the vocabulary or too many tokens.
    pub fn embed(&self, ids: &[u32]) -> Result<Vec<f32>, BertError> {
        self.embed_in(ids, Precision::Full)
    }

    /// [`Bert::embed`], reading the layers' weights at `precision`.
    pub fn embed_in(&self, ids: &[u32], precision: Precision) -> Result<Vec<f32>, BertError> {
        // On a pool thread, each layer's products split across the pool and the calling
        // thread takes its share; called from outside, every one of the forty-odd products
        // would hand its work over and sleep until it came back (measured: 7.3 against
        // 3.2 ms a question on one thread, 3.4 against 2.8 on two).
        rayon::scope(|_| self.forward(ids, precision))
    }

    fn forward(&self, ids: &[u32], precision: Precision) -> Result<Vec<f32>, BertError> {
        if precision != Precision::Half {
            self.page_in_full();
        }
        let w = self.floats();
        let h = self.config.hidden_size;
        let tokens = ids.len();
        if tokens == 0 || tokens > self.config.max_position_embeddings {
            return Err(BertError::Length {
                tokens,
                max: self.max_positions(),
            });
        }
        let mut x = vec![0f32; tokens * h];
        for (t, &id) in ids.iter().enumerate() {
            let id = id as usize;
            if id >= self.config.vocab_size {
                return Err(BertError::UnknownToken(id));
            }
            let word = &w[self.words.start + id * h..][..h];
            let position = &w[self.positions.start + t * h..][..h];
            let kind = &w[self.types.start..][..h];
            for (i, out) in x[t * h..][..h].iter_mut().enumerate() {
                *out = word[i] + position[i] + kind[i];
            }
        }
        self.norm(&mut x, &self.embedding_norm);
        for layer in &self.layers {
            x = self.layer(layer, x, tokens, precision);
        }
        let mut pooled = vec![0f32; h];
        for row in x.chunks_exact(h) {
            for (p, v) in pooled.iter_mut().zip(row) {
                *p += v;
            }
        }
        // The mean's direction is the sum's: scaling the sum to unit length is the same.
        let norm = pooled.iter().map(|v| v * v).sum::<f32>().sqrt();
        if norm > 0.0 {
            pooled.iter_mut().for_each(|v| *v /= norm);
        }
        Ok(pooled)
    }

    fn layer(&self, layer: &Layer, x: Vec<f32>, tokens: usize, precision: Precision) -> Vec<f32> {
        let h = self.config.hidden_size;
        let heads = self.config.num_attention_heads;
        let head = h / heads;
        let q = self.linear(&layer.query, &x, tokens, precision);
        let k = self.linear(&layer.key, &x, tokens, precision);
        let v = self.linear(&layer.value, &x, tokens, precision);
        let scale = 1.0 / (head as f32).sqrt();
        let mut context = vec![0f32; tokens * h];
        let mut weights = vec![0f32; tokens];
        for hd in 0..heads {
            let part = hd * head..(hd + 1) * head;
            for t in 0..tokens {
                let qt = &q[t * h..][part.clone()];
                for (s, weight) in weights.iter_mut().enumerate() {
                    *weight = dot(qt, &k[s * h..][part.clone()]) * scale;
                }
                softmax(&mut weights);
                let out = &mut context[t * h..][part.clone()];
                for (s, weight) in weights.iter().enumerate() {
                    for (o, vs) in out.iter_mut().zip(&v[s * h..][part.clone()]) {
                        *o += weight * vs;
                    }
                }
            }
        }
        let mut attended = self.linear(&layer.attention_out, &context, tokens, precision);
        add(&mut attended, &x);
        self.norm(&mut attended, &layer.attention_norm);
        let mut up = self.linear(&layer.up, &attended, tokens, precision);
        up.iter_mut().for_each(|u| *u = gelu(*u));
        let mut out = self.linear(&layer.down, &up, tokens, precision);
        add(&mut out, &attended);
        self.norm(&mut out, &layer.output_norm);
        out
    }

    /// `x W^T + b` for `tokens` rows: blocks of weight rows split across the cores, each
    /// block dotted with every token at once (the tokens stay in cache).
    fn linear(&self, linear: &Linear, x: &[f32], tokens: usize, precision: Precision) -> Vec<f32> {
        let w = self.floats();
        let bias = &w[linear.bias.clone()];
        let (inputs, outputs) = (linear.inputs, linear.outputs);
        const ROWS: usize = 64;
        let mut by_output = vec![0f32; outputs * tokens];
        let blocks = by_output.par_chunks_mut(ROWS * tokens);
        match precision {
            Precision::Full => blocks
                .zip(w[linear.weight.clone()].par_chunks(ROWS * inputs))
                .for_each(|(out, rows)| dot_rows_by_tokens(rows, x, inputs, out)),
            Precision::Rounded => blocks
                .zip(w[linear.weight.clone()].par_chunks(ROWS * inputs))
                .for_each(|(out, rows)| dot_rounded_rows_by_tokens(rows, x, inputs, out)),
            Precision::Half => {
                let start = linear.weight.start - self.encoder.start;
                let weight = &self.halves()[start..start + linear.weight.len()];
                blocks
                    .zip(weight.par_chunks(ROWS * inputs))
                    .for_each(|(out, rows)| dot_half_rows_by_tokens(rows, x, inputs, out));
            }
        }
        let mut y = vec![0f32; tokens * outputs];
        for (o, column) in by_output.chunks_exact(tokens).enumerate() {
            for (t, v) in column.iter().enumerate() {
                y[t * outputs + o] = *v + bias[o];
            }
        }
        y
    }

    /// Layer normalisation of each row in place.
    fn norm(&self, x: &mut [f32], norm: &Norm) {
        let w = self.floats();
        let (gamma, beta) = (&w[norm.weight.clone()], &w[norm.bias.clone()]);
        let h = self.config.hidden_size;
        let eps = self.config.layer_norm_eps as f32;
        for row in x.chunks_exact_mut(h) {
            let mean = row.iter().sum::<f32>() / h as f32;
            let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / h as f32;
            let inv = 1.0 / (var + eps).sqrt();
            for ((v, g), b) in row.iter_mut().zip(gamma).zip(beta) {
                *v = (*v - mean) * inv * g + b;
            }
        }
    }
}

/// Loads `config.json` and maps the weights of a model folder.
pub fn open(dir: &Path) -> Result<Bert, BertError> {
    let config = std::fs::read(dir.join("config.json"))?;
    let config: Config = serde_json::from_slice(&config)?;
    Bert::load(&dir.join("model.safetensors"), config)
}

fn add(x: &mut [f32], y: &[f32]) {
    x.iter_mut().zip(y).for_each(|(a, b)| *a += b);
}

fn softmax(x: &mut [f32]) {
    let max = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0;
    for v in x.iter_mut() {
        *v = (*v - max).exp();
        sum += *v;
    }
    x.iter_mut().for_each(|v| *v /= sum);
}

/// GELU as BERT's `gelu` defines it, with the error function (not the tanh approximation).
fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + libm::erff(x * std::f32::consts::FRAC_1_SQRT_2))
}
