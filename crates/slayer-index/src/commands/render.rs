//! `slayer-index render`: catalog records rendered to search docs, without a store.

use std::path::Path;

use anyhow::Result;
use slayer_common::exit::ExitStatus;
use slayer_index::{read_records, render_records};

use slayer_common::cli::Output;
use slayer_common::jsonl::open_input;

use crate::output::{self, report_line_errors};

pub(super) fn render(file: &Path, out: &mut Output) -> Result<ExitStatus> {
    match read_records(open_input(file)?)? {
        Ok(records) => {
            output::doc_texts(out, &render_records(&records))?;
            Ok(ExitStatus::Success)
        }
        Err(errors) => {
            report_line_errors(&errors);
            Ok(ExitStatus::Usage)
        }
    }
}
