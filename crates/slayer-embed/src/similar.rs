//! Channel 3's scoring: cosine similarity of stored rows to a query vector.

/// The dot product in f64, the workspace's one kernel for it ([`slayer_common::simd::dot_f64`]).
pub use slayer_common::simd::dot_f64 as dot;

/// `v` scaled to unit length (a zero vector stays zero).
pub fn normalized(v: &[f32]) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm == 0.0 {
        return v.to_vec();
    }
    v.iter().map(|x| x / norm).collect()
}

/// Positions of `rows` ranked by cosine to `query`, best first, equal scores in row order; the
/// query and the rows already scaled by [`normalized`] (a long-lived caller scales its rows
/// once, not per query).
pub fn rank_unit<'a>(
    query: &[f32],
    rows: impl IntoIterator<Item = &'a [f32]>,
) -> Vec<(usize, f64)> {
    let mut scored: Vec<(usize, f64)> = rows
        .into_iter()
        .enumerate()
        .map(|(i, row)| (i, dot(query, row)))
        .collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1));
    scored
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Cosine ranking of raw vectors.
    fn rank<'a>(query: &[f32], rows: impl IntoIterator<Item = &'a [f32]>) -> Vec<(usize, f64)> {
        let rows: Vec<Vec<f32>> = rows.into_iter().map(normalized).collect();
        rank_unit(&normalized(query), rows.iter().map(Vec::as_slice))
    }

    #[test]
    fn ranks_by_cosine_with_stable_ties() {
        let rows: [&[f32]; 4] = [&[0.0, 1.0], &[2.0, 0.0], &[1.0, 1.0], &[4.0, 0.0]];
        let ranked = rank(&[1.0, 0.0], rows);
        let order: Vec<usize> = ranked.iter().map(|r| r.0).collect();
        assert_eq!(order, [1, 3, 2, 0]);
        assert!((ranked[2].1 - std::f64::consts::FRAC_1_SQRT_2).abs() < 1e-6);
        let zero: [&[f32]; 1] = [&[1.0, 0.0]];
        assert_eq!(rank(&[0.0, 0.0], zero)[0].1, 0.0);
    }
}
