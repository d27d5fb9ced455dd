//! The two hot loops of a dense search, with AVX2/FMA kernels chosen at run time: the f32 dot
//! product of the question's forward pass and the i16 × i8 dot product of the vector scan;
//! and [`dot_f64`], the portable f64 dot product of cosines between stored rows.
//! Release builds target baseline x86-64 (SSE2), where neither loop vectorises well; calling a
//! `#[target_feature]` function is `unsafe`, so this module (with [`crate::mapped`]) is where
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
    if avx2_fma() {
        // SAFETY: the CPU has AVX2 (checked above), the feature the kernel uses.
        return unsafe { x86::dot_i16_i8(&a[..n], &b[..n]) };
    }
    portable_dot_i16_i8(&a[..n], &b[..n])
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
