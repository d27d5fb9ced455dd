//! Channel 3's scoring: cosine similarity of stored rows to a query vector.

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

/// The dot product in f64 (each f32 product is exact there). Eight running sums, so the
/// compiler can keep them in vector registers; a sum in one order would forbid it.
pub fn dot(a: &[f32], b: &[f32]) -> f64 {
    const LANES: usize = 8;
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut sums = [0.0f64; LANES];
    let chunks = a.chunks_exact(LANES).zip(b.chunks_exact(LANES));
    for (x, y) in chunks {
        for lane in 0..LANES {
            sums[lane] += f64::from(x[lane]) * f64::from(y[lane]);
        }
    }
    let tail = n - n % LANES;
    let rest: f64 = a[tail..]
        .iter()
        .zip(&b[tail..])
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum();
    sums.iter().sum::<f64>() + rest
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

    #[test]
    fn the_lane_wise_dot_product_equals_the_plain_one() {
        let a: Vec<f32> = (0..389)
            .map(|i| ((i * 7919) % 113) as f32 / 57.0 - 1.0)
            .collect();
        let b: Vec<f32> = (0..389)
            .map(|i| ((i * 104_729) % 97) as f32 / 31.0 - 1.5)
            .collect();
        let plain: f64 = a
            .iter()
            .zip(&b)
            .map(|(x, y)| f64::from(*x) * f64::from(*y))
            .sum();
        assert!((dot(&a, &b) - plain).abs() < 1e-9);
        assert_eq!(
            dot(&a[..3], &b[..3]),
            f64::from(a[0]) * f64::from(b[0])
                + f64::from(a[1]) * f64::from(b[1])
                + f64::from(a[2]) * f64::from(b[2])
        );
    }
}
