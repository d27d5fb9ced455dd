//! The two hot loops of a dense search, with AVX2/FMA kernels chosen at run time: the f32 dot
//! product of the question's forward pass and the i16 × i8 dot product of the vector scan;
//! and [`dot_f64`], the portable f64 dot product of cosines between stored rows.
//! Release builds target baseline x86-64 (SSE2), where neither loop vectorises well; calling a
//! `#[target_feature]` function is `unsafe`, so this module (with [`crate::mapped`], [`crate::shutdown`]) is where
//! the workspace allows it. Each `unsafe` call is made only after the CPU reported the
//! features the kernel was compiled for; elsewhere, and on other architectures, the portable
//! loops run. The integer kernel is exact, so scan scores do not depend on the CPU.
#![allow(unsafe_code)]

/// `Σ a·b` over the shorter length, in f32.
pub fn dot_f32(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    #[cfg(target_arch = "x86_64")]
    if avx2_fma() {
        // SAFETY: the CPU has AVX2 and FMA (checked above), the features the kernel uses.
        return unsafe { x86::dot_f32(&a[..n], &b[..n]) };
    }
    portable_dot_f32(&a[..n], &b[..n])
}

/// A block of a linear layer: `out[r·T + t] = Σ_i rows[r·n + i] · xs[t·n + i]` for every
/// weight row `r` of `rows` and every token `t` of `xs` (`T` of them), both row-major and
/// `n = inputs` wide. Each weight is loaded once for several tokens and several rows share
/// each token's load, where a dot product per (row, token) loaded both for every product.
///
/// # Panics
/// When `rows` or `xs` is not whole rows of `inputs`, or `out` is not one value per pair.
pub fn dot_rows_by_tokens(rows: &[f32], xs: &[f32], inputs: usize, out: &mut [f32]) {
    assert!(inputs > 0 && rows.len().is_multiple_of(inputs) && xs.len().is_multiple_of(inputs));
    assert_eq!(out.len(), rows.len() / inputs * (xs.len() / inputs));
    #[cfg(target_arch = "x86_64")]
    if avx512() {
        // SAFETY: the CPU has AVX-512 F and BW (checked above); the shapes were checked.
        return unsafe { x86::dot_rows_by_tokens_512(rows, xs, inputs, out) };
    }
    #[cfg(target_arch = "x86_64")]
    if avx2_fma() {
        // SAFETY: the CPU has AVX2 and FMA (checked above); the shapes were checked.
        return unsafe { x86::dot_rows_by_tokens(rows, xs, inputs, out) };
    }
    let tokens = xs.len() / inputs;
    for (row, out_row) in rows.chunks_exact(inputs).zip(out.chunks_exact_mut(tokens)) {
        for (x, y) in xs.chunks_exact(inputs).zip(out_row) {
            *y = portable_dot_f32(row, x);
        }
    }
}

/// [`dot_rows_by_tokens`] with the weights in half precision (IEEE binary16 bits, as
/// [`to_half`] makes them): half the bytes to read, for a forward pass whose weights no longer
/// fit in cache beside a vector scan.
///
/// # Panics
/// As [`dot_rows_by_tokens`].
pub fn dot_half_rows_by_tokens(rows: &[u16], xs: &[f32], inputs: usize, out: &mut [f32]) {
    assert!(inputs > 0 && rows.len().is_multiple_of(inputs) && xs.len().is_multiple_of(inputs));
    assert_eq!(out.len(), rows.len() / inputs * (xs.len() / inputs));
    #[cfg(target_arch = "x86_64")]
    if avx512() {
        // SAFETY: the CPU has AVX-512 F and BW (checked above); the shapes were checked.
        return unsafe { x86::dot_half_rows_by_tokens_512(rows, xs, inputs, out) };
    }
    #[cfg(target_arch = "x86_64")]
    if avx2_fma() && std::arch::is_x86_feature_detected!("f16c") {
        // SAFETY: the CPU has AVX2, FMA and F16C (checked above); the shapes were checked.
        return unsafe { x86::dot_half_rows_by_tokens(rows, xs, inputs, out) };
    }
    let tokens = xs.len() / inputs;
    let mut row_f32 = vec![0f32; inputs];
    for (row, out_row) in rows.chunks_exact(inputs).zip(out.chunks_exact_mut(tokens)) {
        for (w, h) in row_f32.iter_mut().zip(row) {
            *w = half::f16::from_bits(*h).to_f32();
        }
        for (x, y) in xs.chunks_exact(inputs).zip(out_row.iter_mut()) {
            *y = portable_dot_f32(&row_f32, x);
        }
    }
}

/// [`dot_half_rows_by_tokens`] of `to_half(rows)`, bit for bit, without the copy: each f32
/// weight is rounded to half precision as it is read. For a process that embeds one question:
/// its vector is the one a long-lived search makes from its half-precision copy, and making
/// that copy would read every weight once more and write half as many again.
///
/// # Panics
/// As [`dot_rows_by_tokens`].
pub fn dot_rounded_rows_by_tokens(rows: &[f32], xs: &[f32], inputs: usize, out: &mut [f32]) {
    assert!(inputs > 0 && rows.len().is_multiple_of(inputs) && xs.len().is_multiple_of(inputs));
    assert_eq!(out.len(), rows.len() / inputs * (xs.len() / inputs));
    #[cfg(target_arch = "x86_64")]
    if avx512() {
        // SAFETY: the CPU has AVX-512 F and BW (checked above); the shapes were checked.
        return unsafe { x86::dot_rounded_rows_by_tokens_512(rows, xs, inputs, out) };
    }
    #[cfg(target_arch = "x86_64")]
    if avx2_fma() && std::arch::is_x86_feature_detected!("f16c") {
        // SAFETY: the CPU has AVX2, FMA and F16C (checked above); the shapes were checked.
        return unsafe { x86::dot_rounded_rows_by_tokens(rows, xs, inputs, out) };
    }
    let tokens = xs.len() / inputs;
    let mut row_f32 = vec![0f32; inputs];
    for (row, out_row) in rows.chunks_exact(inputs).zip(out.chunks_exact_mut(tokens)) {
        for (w, f) in row_f32.iter_mut().zip(row) {
            *w = half::f16::from_f32(*f).to_f32();
        }
        for (x, y) in xs.chunks_exact(inputs).zip(out_row.iter_mut()) {
            *y = portable_dot_f32(&row_f32, x);
        }
    }
}

/// `src` rounded to half precision (to nearest, ties to even), as IEEE binary16 bits.
///
/// # Panics
/// When the lengths differ.
pub fn to_half(src: &[f32], dst: &mut [u16]) {
    use half::slice::HalfFloatSliceExt;
    assert_eq!(src.len(), dst.len());
    let halves: &mut [half::f16] = half::slice::HalfBitsSliceExt::reinterpret_cast_mut(dst);
    halves.convert_from_f32_slice(src);
}

/// `Σ a·b` over the shorter length, in f64 (each f32 product is exact there): the cosine of
/// two stored unit vectors. Eight running sums, so the compiler can keep them in vector
/// registers even on baseline x86-64; a sum in one order would forbid it.
pub fn dot_f64(a: &[f32], b: &[f32]) -> f64 {
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

/// `Σ a·b` over the shorter length, in i32 (exact: 32767 × 127 × 2^15 products fit).
pub fn dot_i16_i8(a: &[i16], b: &[i8]) -> i32 {
    let n = a.len().min(b.len());
    #[cfg(target_arch = "x86_64")]
    if avx512() {
        // SAFETY: the CPU has AVX-512 F and BW (checked above), the features the kernel uses.
        return unsafe { x86::dot_i16_i8_512(&a[..n], &b[..n]) };
    }
    #[cfg(target_arch = "x86_64")]
    if avx2_fma() {
        // SAFETY: the CPU has AVX2 (checked above), the feature the kernel uses.
        return unsafe { x86::dot_i16_i8(&a[..n], &b[..n]) };
    }
    portable_dot_i16_i8(&a[..n], &b[..n])
}

/// Asks the CPU to start loading `data` into its caches: a hint, with no effect on results
/// (nothing on targets without one). A scan that is bound by memory, not arithmetic, asks for
/// the rows a few ahead of the one it scores.
pub fn prefetch<T>(data: &[T]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let bytes = std::mem::size_of_val(data);
        let start = data.as_ptr().cast::<i8>();
        for offset in (0..bytes).step_by(64) {
            // SAFETY: a prefetch never faults, and `offset` is inside `data`.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(start.add(offset)) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = data;
}

#[cfg(target_arch = "x86_64")]
fn avx2_fma() -> bool {
    use std::sync::OnceLock;
    static HAS: OnceLock<bool> = OnceLock::new();
    *HAS.get_or_init(|| {
        std::env::var_os(crate::env::NO_SIMD).is_none()
            && std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma")
    })
}

/// AVX-512 F and BW, where the CPU has them: twice the lanes of AVX2 for the two kernels that
/// a dense search spends most of its time in.
#[cfg(target_arch = "x86_64")]
fn avx512() -> bool {
    use std::sync::OnceLock;
    static HAS: OnceLock<bool> = OnceLock::new();
    *HAS.get_or_init(|| {
        std::env::var_os(crate::env::NO_SIMD).is_none()
            && std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
    })
}

fn portable_dot_f32(a: &[f32], b: &[f32]) -> f32 {
    const LANES: usize = 16;
    let mut sums = [0f32; LANES];
    let (ca, cb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let tail: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        for lane in 0..LANES {
            sums[lane] += x[lane] * y[lane];
        }
    }
    sums.iter().sum::<f32>() + tail
}

fn portable_dot_i16_i8(a: &[i16], b: &[i8]) -> i32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| i32::from(*x) * i32::from(*y))
        .sum()
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    /// Four 8-lane FMA accumulators, then the tail.
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn dot_f32(a: &[f32], b: &[f32]) -> f32 {
        let n = a.len().min(b.len());
        let mut acc = [_mm256_setzero_ps(); 4];
        let mut i = 0;
        while i + 32 <= n {
            for (k, sum) in acc.iter_mut().enumerate() {
                // SAFETY: i + 8k + 8 <= n, so both loads are in bounds.
                let (x, y) = unsafe {
                    (
                        _mm256_loadu_ps(a.as_ptr().add(i + 8 * k)),
                        _mm256_loadu_ps(b.as_ptr().add(i + 8 * k)),
                    )
                };
                *sum = _mm256_fmadd_ps(x, y, *sum);
            }
            i += 32;
        }
        while i + 8 <= n {
            // SAFETY: i + 8 <= n.
            let (x, y) = unsafe {
                (
                    _mm256_loadu_ps(a.as_ptr().add(i)),
                    _mm256_loadu_ps(b.as_ptr().add(i)),
                )
            };
            acc[0] = _mm256_fmadd_ps(x, y, acc[0]);
            i += 8;
        }
        let sum = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
        let mut lanes = [0f32; 8];
        // SAFETY: `lanes` holds eight f32s.
        unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), sum) };
        let tail: f32 = a[i..n].iter().zip(&b[i..n]).map(|(x, y)| x * y).sum();
        lanes.iter().sum::<f32>() + tail
    }

    /// A linear layer's block kernel ([`super::dot_rows_by_tokens`]) for one vector width and
    /// weight type: `$driver` walks blocks of two rows by `tokens` tokens (four: eight
    /// accumulators, enough to keep both FMA ports busy; eight where AVX-512's 32 registers
    /// hold sixteen, so each pair of weight rows is read once for a short question's tokens),
    /// then the leftover tokens and row; `$block` is one
    /// block of rows `r0..r0 + R` by tokens `t0..t0 + T`. `load_w` turns a pointer to `$lanes`
    /// weights into a vector of f32s, `reduce` sums a vector's lanes, `widen` one weight.
    macro_rules! rows_by_tokens {
        (
            $driver:ident, $block:ident, $features:literal, $weight:ty, $lanes:literal,
            tokens: $tb:literal,
            zero: $zero:ident, load_x: $load_x:ident, fma: $fma:ident,
            load_w: |$p:ident| $load_w:expr,
            reduce: |$v:ident| $reduce:expr,
            widen: |$a:ident| $widen:expr $(,)?
        ) => {
            #[target_feature(enable = $features)]
            pub(super) fn $driver(rows: &[$weight], xs: &[f32], n: usize, out: &mut [f32]) {
                let (row_count, tokens) = (rows.len() / n, xs.len() / n);
                let mut put = |r0: usize, t0: usize, sums: &[&[f32]]| {
                    for (r, row) in sums.iter().enumerate() {
                        out[(r0 + r) * tokens + t0..][..row.len()].copy_from_slice(row);
                    }
                };
                let mut r = 0;
                while r + 2 <= row_count {
                    let mut t = 0;
                    while t + $tb <= tokens {
                        let s = $block::<2, $tb>(rows, xs, n, r, t);
                        put(r, t, &[&s[0], &s[1]]);
                        t += $tb;
                    }
                    while t + 4 <= tokens {
                        let s = $block::<2, 4>(rows, xs, n, r, t);
                        put(r, t, &[&s[0], &s[1]]);
                        t += 4;
                    }
                    while t < tokens {
                        let s = $block::<2, 1>(rows, xs, n, r, t);
                        put(r, t, &[&s[0], &s[1]]);
                        t += 1;
                    }
                    r += 2;
                }
                if r < row_count {
                    let mut t = 0;
                    while t + 4 <= tokens {
                        let s = $block::<1, 4>(rows, xs, n, r, t);
                        put(r, t, &[&s[0]]);
                        t += 4;
                    }
                    while t < tokens {
                        let s = $block::<1, 1>(rows, xs, n, r, t);
                        put(r, t, &[&s[0]]);
                        t += 1;
                    }
                }
            }

            // Register blocking indexes the accumulators by row and token together.
            #[allow(clippy::needless_range_loop)]
            #[target_feature(enable = $features)]
            #[inline]
            fn $block<const R: usize, const T: usize>(
                rows: &[$weight],
                xs: &[f32],
                n: usize,
                r0: usize,
                t0: usize,
            ) -> [[f32; T]; R] {
                assert!((r0 + R) * n <= rows.len() && (t0 + T) * n <= xs.len());
                let mut acc = [[$zero(); T]; R];
                let mut i = 0;
                while i + $lanes <= n {
                    let mut w = [$zero(); R];
                    for (r, w) in w.iter_mut().enumerate() {
                        // SAFETY: (r0 + r) * n + i + $lanes <= (r0 + R) * n <= rows.len()
                        // (asserted): the pointer and the lanes read from it are in bounds.
                        let $p = unsafe { rows.as_ptr().add((r0 + r) * n + i) };
                        *w = $load_w;
                    }
                    for t in 0..T {
                        // SAFETY: (t0 + t) * n + i + $lanes <= (t0 + T) * n <= xs.len()
                        // (asserted).
                        let x = unsafe { $load_x(xs.as_ptr().add((t0 + t) * n + i)) };
                        for r in 0..R {
                            acc[r][t] = $fma(w[r], x, acc[r][t]);
                        }
                    }
                    i += $lanes;
                }
                let mut sums = [[0f32; T]; R];
                for r in 0..R {
                    let row = &rows[(r0 + r) * n..][..n];
                    for t in 0..T {
                        let x = &xs[(t0 + t) * n..][..n];
                        let tail: f32 =
                            row[i..].iter().zip(&x[i..]).map(|($a, b)| $widen * b).sum();
                        let $v = acc[r][t];
                        sums[r][t] = $reduce + tail;
                    }
                }
                sums
            }
        };
    }

    /// The sum of an AVX register's eight f32 lanes.
    #[target_feature(enable = "avx2")]
    fn sum_256(v: __m256) -> f32 {
        let mut lanes = [0f32; 8];
        // SAFETY: `lanes` holds eight f32s.
        unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), v) };
        lanes.iter().sum()
    }

    rows_by_tokens!(
        dot_rows_by_tokens, block, "avx2,fma", f32, 8,
        tokens: 4,
        zero: _mm256_setzero_ps, load_x: _mm256_loadu_ps, fma: _mm256_fmadd_ps,
        load_w: |p| unsafe { _mm256_loadu_ps(p) },
        reduce: |v| sum_256(v),
        widen: |a| *a,
    );
    rows_by_tokens!(
        dot_rows_by_tokens_512, block_512, "avx512f,avx512bw", f32, 16,
        tokens: 8,
        zero: _mm512_setzero_ps, load_x: _mm512_loadu_ps, fma: _mm512_fmadd_ps,
        load_w: |p| unsafe { _mm512_loadu_ps(p) },
        reduce: |v| _mm512_reduce_add_ps(v),
        widen: |a| *a,
    );
    rows_by_tokens!(
        dot_half_rows_by_tokens, half_block, "avx2,fma,f16c", u16, 8,
        tokens: 4,
        zero: _mm256_setzero_ps, load_x: _mm256_loadu_ps, fma: _mm256_fmadd_ps,
        load_w: |p| _mm256_cvtph_ps(unsafe { _mm_loadu_si128(p.cast()) }),
        reduce: |v| sum_256(v),
        widen: |a| half::f16::from_bits(*a).to_f32(),
    );
    rows_by_tokens!(
        dot_half_rows_by_tokens_512, half_block_512, "avx512f,avx512bw", u16, 16,
        tokens: 8,
        zero: _mm512_setzero_ps, load_x: _mm512_loadu_ps, fma: _mm512_fmadd_ps,
        load_w: |p| _mm512_cvtph_ps(unsafe { _mm256_loadu_si256(p.cast()) }),
        reduce: |v| _mm512_reduce_add_ps(v),
        widen: |a| half::f16::from_bits(*a).to_f32(),
    );

    rows_by_tokens!(
        dot_rounded_rows_by_tokens, rounded_block, "avx2,fma,f16c", f32, 8,
        tokens: 4,
        zero: _mm256_setzero_ps, load_x: _mm256_loadu_ps, fma: _mm256_fmadd_ps,
        load_w: |p| _mm256_cvtph_ps(_mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(unsafe {
            _mm256_loadu_ps(p)
        })),
        reduce: |v| sum_256(v),
        widen: |a| half::f16::from_f32(*a).to_f32(),
    );
    rows_by_tokens!(
        dot_rounded_rows_by_tokens_512, rounded_block_512, "avx512f,avx512bw", f32, 16,
        tokens: 8,
        zero: _mm512_setzero_ps, load_x: _mm512_loadu_ps, fma: _mm512_fmadd_ps,
        load_w: |p| _mm512_cvtph_ps(_mm512_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(unsafe {
            _mm512_loadu_ps(p)
        })),
        reduce: |v| _mm512_reduce_add_ps(v),
        widen: |a| half::f16::from_f32(*a).to_f32(),
    );

    /// [`dot_i16_i8`] in thirty-two lanes.
    #[target_feature(enable = "avx512f,avx512bw")]
    pub(super) fn dot_i16_i8_512(a: &[i16], b: &[i8]) -> i32 {
        let n = a.len().min(b.len());
        let mut acc = _mm512_setzero_si512();
        let mut i = 0;
        while i + 32 <= n {
            // SAFETY: i + 32 <= n: thirty-two i16 (64 bytes) and thirty-two i8 (32 bytes) in
            // bounds.
            let (x, y) = unsafe {
                (
                    _mm512_loadu_si512(a.as_ptr().add(i).cast()),
                    _mm256_loadu_si256(b.as_ptr().add(i).cast()),
                )
            };
            acc = _mm512_add_epi32(acc, _mm512_madd_epi16(x, _mm512_cvtepi8_epi16(y)));
            i += 32;
        }
        let tail: i32 = a[i..n]
            .iter()
            .zip(&b[i..n])
            .map(|(x, y)| i32::from(*x) * i32::from(*y))
            .sum();
        _mm512_reduce_add_epi32(acc) + tail
    }

    /// Sixteen i8 widened to i16 per step, multiplied and pair-summed into eight i32 lanes.
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn dot_i16_i8(a: &[i16], b: &[i8]) -> i32 {
        let n = a.len().min(b.len());
        let mut acc = _mm256_setzero_si256();
        let mut i = 0;
        while i + 16 <= n {
            // SAFETY: i + 16 <= n: sixteen i16 (32 bytes) and sixteen i8 (16 bytes) in bounds.
            let (x, y) = unsafe {
                (
                    _mm256_loadu_si256(a.as_ptr().add(i).cast()),
                    _mm_loadu_si128(b.as_ptr().add(i).cast()),
                )
            };
            acc = _mm256_add_epi32(acc, _mm256_madd_epi16(x, _mm256_cvtepi8_epi16(y)));
            i += 16;
        }
        let mut lanes = [0i32; 8];
        // SAFETY: `lanes` holds eight i32s.
        unsafe { _mm256_storeu_si256(lanes.as_mut_ptr().cast(), acc) };
        let tail: i32 = a[i..n]
            .iter()
            .zip(&b[i..n])
            .map(|(x, y)| i32::from(*x) * i32::from(*y))
            .sum();
        lanes.iter().sum::<i32>() + tail
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two f32 vectors of length `n` with values of both signs, and their plain f64 dot product.
    fn vectors(n: i32) -> (Vec<f32>, Vec<f32>, f64) {
        let a: Vec<f32> = (0..n)
            .map(|i| ((i * 7919) % 113) as f32 / 57.0 - 1.0)
            .collect();
        let b: Vec<f32> = (0..n)
            .map(|i| ((i * 104_729) % 97) as f32 / 31.0 - 1.5)
            .collect();
        let plain = a
            .iter()
            .zip(&b)
            .map(|(x, y)| f64::from(*x) * f64::from(*y))
            .sum();
        (a, b, plain)
    }

    #[test]
    fn the_lane_wise_f64_dot_product_equals_the_plain_one() {
        let (a, b, plain) = vectors(389);
        assert!((dot_f64(&a, &b) - plain).abs() < 1e-9);
        assert_eq!(
            dot_f64(&a[..3], &b[..3]),
            f64::from(a[0]) * f64::from(b[0])
                + f64::from(a[1]) * f64::from(b[1])
                + f64::from(a[2]) * f64::from(b[2])
        );
    }

    /// Rounding the f32 weights as they are read is the half-precision copy's product, bit for
    /// bit, on every block shape, values that round up, down and to even, and tiny ones.
    #[test]
    fn rounded_rows_equal_the_half_copy_s_bit_for_bit() {
        for inputs in [1usize, 8, 13, 17, 384] {
            for row_count in [1usize, 2, 3, 5] {
                for tokens in [1usize, 3, 4, 8, 9, 13] {
                    let (mut rows, _, _) = vectors((row_count * inputs) as i32);
                    for (i, w) in rows.iter_mut().enumerate() {
                        // Some weights between halves, some below half's normal range.
                        *w = match i % 5 {
                            0 => *w * 1.000_3,
                            1 => *w * 1e-6,
                            _ => *w,
                        };
                    }
                    let (_, xs, _) = vectors((tokens * inputs) as i32);
                    let mut halves = vec![0u16; rows.len()];
                    to_half(&rows, &mut halves);
                    let mut want = vec![0f32; row_count * tokens];
                    dot_half_rows_by_tokens(&halves, &xs, inputs, &mut want);
                    let mut got = vec![0f32; row_count * tokens];
                    dot_rounded_rows_by_tokens(&rows, &xs, inputs, &mut got);
                    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(&got), bits(&want), "{inputs} {row_count} {tokens}");
                }
            }
        }
    }

    /// Every block shape (row and token counts on both sides of the 2 × 4 and 2 × 8 blocks,
    /// widths with and without a tail) against one dot product per pair.
    #[test]
    fn rows_by_tokens_is_a_dot_product_per_pair() {
        for inputs in [1usize, 8, 13, 384] {
            for row_count in [1usize, 2, 3, 5] {
                for tokens in [1usize, 3, 4, 5, 8, 9, 13, 17] {
                    let (rows, _, _) = vectors((row_count * inputs) as i32);
                    let (_, xs, _) = vectors((tokens * inputs) as i32);
                    let mut out = vec![0f32; row_count * tokens];
                    dot_rows_by_tokens(&rows, &xs, inputs, &mut out);
                    for r in 0..row_count {
                        for t in 0..tokens {
                            let want = portable_dot_f32(
                                &rows[r * inputs..][..inputs],
                                &xs[t * inputs..][..inputs],
                            );
                            let got = out[r * tokens + t];
                            assert!((got - want).abs() < 1e-3, "{inputs} {row_count} {tokens}");
                        }
                    }
                }
            }
        }
    }

    /// The half-precision kernel is the f32 one on the rounded weights, every block shape.
    #[test]
    fn half_rows_by_tokens_is_the_f32_kernel_on_rounded_weights() {
        for inputs in [1usize, 13, 16, 384] {
            for row_count in [1usize, 2, 3] {
                for tokens in [1usize, 4, 5, 8, 13] {
                    let (rows, _, _) = vectors((row_count * inputs) as i32);
                    let (_, xs, _) = vectors((tokens * inputs) as i32);
                    let mut halves = vec![0u16; rows.len()];
                    to_half(&rows, &mut halves);
                    let rounded: Vec<f32> = halves
                        .iter()
                        .map(|h| half::f16::from_bits(*h).to_f32())
                        .collect();
                    assert!(rows
                        .iter()
                        .zip(&rounded)
                        .all(|(a, b)| (a - b).abs() <= 1e-3));
                    let (mut got, mut want) = (
                        vec![0f32; row_count * tokens],
                        vec![0f32; row_count * tokens],
                    );
                    dot_half_rows_by_tokens(&halves, &xs, inputs, &mut got);
                    dot_rows_by_tokens(&rounded, &xs, inputs, &mut want);
                    for (g, w) in got.iter().zip(&want) {
                        assert!((g - w).abs() < 1e-3, "{inputs} {row_count} {tokens}");
                    }
                }
            }
        }
    }

    /// The AVX2 kernels, which the dispatch skips on a CPU with AVX-512, against the portable
    /// loops (and the AVX-512 ones where the CPU has them).
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn every_x86_kernel_agrees_with_the_portable_loops() {
        if !avx2_fma() || !std::arch::is_x86_feature_detected!("f16c") {
            return;
        }
        let (inputs, row_count, tokens) = (389, 3, 5);
        let (rows, _, _) = vectors((row_count * inputs) as i32);
        let (_, xs, _) = vectors((tokens * inputs) as i32);
        let mut halves = vec![0u16; rows.len()];
        to_half(&rows, &mut halves);
        let rounded: Vec<f32> = halves
            .iter()
            .map(|h| half::f16::from_bits(*h).to_f32())
            .collect();
        let want = |w: &[f32]| -> Vec<f32> {
            let mut out = Vec::new();
            for r in w.chunks_exact(inputs) {
                for x in xs.chunks_exact(inputs) {
                    out.push(portable_dot_f32(r, x));
                }
            }
            out
        };
        let close = |a: &[f32], b: &[f32]| a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-3);
        let mut out = vec![0f32; row_count * tokens];
        // SAFETY: the CPU has AVX2, FMA and F16C (checked above); the shapes are whole rows.
        unsafe { x86::dot_rows_by_tokens(&rows, &xs, inputs, &mut out) };
        assert!(close(&out, &want(&rows)));
        // SAFETY: as above.
        unsafe { x86::dot_half_rows_by_tokens(&halves, &xs, inputs, &mut out) };
        assert!(close(&out, &want(&rounded)));
        let mut on_the_fly = vec![0f32; row_count * tokens];
        // SAFETY: as above.
        unsafe { x86::dot_rounded_rows_by_tokens(&rows, &xs, inputs, &mut on_the_fly) };
        assert_eq!(
            on_the_fly, out,
            "AVX2: rounding as read is the copy's product"
        );
        let q: Vec<i16> = (0..389)
            .map(|i| ((i * 7919) % 65_535 - 32_767) as i16)
            .collect();
        let c: Vec<i8> = (0..389)
            .map(|i| ((i * 104_729) % 255 - 127) as i8)
            .collect();
        // SAFETY: as above.
        let exact = unsafe { x86::dot_i16_i8(&q, &c) };
        assert_eq!(exact, portable_dot_i16_i8(&q, &c));
        if avx512() {
            // SAFETY: the CPU has AVX-512 F and BW (checked); the shapes are whole rows.
            unsafe { x86::dot_rows_by_tokens_512(&rows, &xs, inputs, &mut out) };
            assert!(close(&out, &want(&rows)));
            // SAFETY: as above.
            unsafe { x86::dot_half_rows_by_tokens_512(&halves, &xs, inputs, &mut out) };
            assert!(close(&out, &want(&rounded)));
            // SAFETY: as above.
            assert_eq!(unsafe { x86::dot_i16_i8_512(&q, &c) }, exact);
        }
    }

    #[test]
    fn kernels_agree_with_the_portable_loops() {
        for n in [0i32, 1, 7, 8, 15, 16, 31, 33, 384, 389] {
            let (a, b, plain) = vectors(n);
            assert!((f64::from(dot_f32(&a, &b)) - plain).abs() < 1e-3, "{n}");
            let q: Vec<i16> = (0..n)
                .map(|i| (((i * 7919) % 65_535) - 32_767) as i16)
                .collect();
            let c: Vec<i8> = (0..n)
                .map(|i| (((i * 104_729) % 255) - 127) as i8)
                .collect();
            assert_eq!(dot_i16_i8(&q, &c), portable_dot_i16_i8(&q, &c), "{n}");
        }
    }
}
