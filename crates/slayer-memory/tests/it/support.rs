//! slayer-memory's helpers on top of the test kit: a temp store loaded with the resolution
//! fixture, and the binaries on it.

pub use crate::kit::{Out, TempStore};

impl TempStore {
    /// A store holding the resolution catalog.
    pub fn with_catalog() -> TempStore {
        let s = TempStore::new();
        let out = s.index(
            &["load", "crates/slayer-memory/tests/fixtures/catalog.jsonl"],
            None,
        );
        assert_eq!(out.code, 0, "{}", out.stderr);
        s
    }

    pub fn memory(&self, args: &[&str], stdin: Option<&str>) -> Out {
        self.run("slayer-memory", args, &[], stdin)
    }

    pub fn index(&self, args: &[&str], stdin: Option<&str>) -> Out {
        self.run("slayer-index", args, &[], stdin)
    }

    /// Saves a learning tagged with `entities`; the resolved entities and warnings, or the error.
    pub fn resolve(&self, entities: &str) -> Result<(Vec<String>, Vec<String>), String> {
        let out = self.memory(
            &[
                "save",
                "--learning",
                "t",
                "--entities",
                entities,
                "--format",
                "json",
            ],
            None,
        );
        if out.code != 0 {
            assert_eq!(out.code, 1, "{}", out.stderr);
            let message = out
                .stderr
                .trim_end()
                .strip_prefix("Error: ")
                .unwrap_or_else(|| panic!("{}", out.stderr));
            return Err(message.to_owned());
        }
        let v = out.json();
        let strings = |k: &str| {
            v[k].as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_str().unwrap().to_owned())
                .collect()
        };
        Ok((strings("resolved_entities"), strings("warnings")))
    }
}
