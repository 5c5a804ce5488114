//! The Elo estimate: a maximum-likelihood Bradley-Terry fit over all games of a tournament
//! (draws count as half a win), with a weak prior, anchored so the bots' mean is 1500, and a 95%
//! interval from the Fisher information.
//!
//! Model: P(i beats j) = 1 / (1 + 10^((R_j - R_i) / 400)). Prior: each bot is credited with
//! `prior_draws` virtual draws against a fixed opponent at the anchor, so a bot that won (or
//! lost) every game still gets a finite rating. The fit is Newton's method on the concave
//! log-likelihood; the interval is ±1.96 standard errors of the rating relative to the field's
//! mean, from the inverse of the observed information matrix.

/// Natural-log units per Elo point: R = θ · 400 / ln 10.
fn elo_per_theta() -> f64 {
    400.0 / std::f64::consts::LN_10
}

/// How the ratings are fitted.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EloOptions {
    /// Virtual draws per bot against an opponent at the anchor (must be > 0 to keep undefeated
    /// and winless bots finite; 1 is weak and the default).
    pub prior_draws: f64,
    /// The mean of the reported ratings.
    pub anchor: f64,
}

impl Default for EloOptions {
    fn default() -> Self {
        EloOptions {
            prior_draws: 1.0,
            anchor: 1500.0,
        }
    }
}

/// One bot's rating and its 95% interval.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct EloEstimate {
    pub rating: f64,
    /// Standard error in Elo points.
    pub standard_error: f64,
    pub low: f64,
    pub high: f64,
}

fn logistic(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// The log-likelihood (including the prior) of strengths `theta`.
fn log_likelihood(theta: &[f64], games: &[(usize, usize, f64)], prior: f64) -> f64 {
    let term = |d: f64, s: f64| {
        // s·ln σ(d) + (1−s)·ln σ(−d), written to stay finite for large |d|.
        let ln_sigma = |x: f64| -> f64 {
            if x > 0.0 {
                -(-x).exp().ln_1p()
            } else {
                x - x.exp().ln_1p()
            }
        };
        s * ln_sigma(d) + (1.0 - s) * ln_sigma(-d)
    };
    let mut total = 0.0;
    for &(a, b, s) in games {
        if let (Some(ta), Some(tb)) = (theta.get(a), theta.get(b)) {
            if a != b {
                total += term(ta - tb, s);
            }
        }
    }
    for t in theta {
        total += prior * term(*t, 0.5);
    }
    total
}

/// Gradient and the negative Hessian (observed information) at `theta`.
fn gradient_and_information(
    theta: &[f64],
    games: &[(usize, usize, f64)],
    prior: f64,
) -> (Vec<f64>, Vec<Vec<f64>>) {
    let n = theta.len();
    let mut gradient = vec![0.0; n];
    let mut info = vec![vec![0.0; n]; n];
    for &(a, b, s) in games {
        if a == b || a >= n || b >= n {
            continue;
        }
        let p = logistic(theta[a] - theta[b]);
        let w = p * (1.0 - p);
        gradient[a] += s - p;
        gradient[b] -= s - p;
        info[a][a] += w;
        info[b][b] += w;
        info[a][b] -= w;
        info[b][a] -= w;
    }
    for i in 0..n {
        let p = logistic(theta[i]);
        gradient[i] += prior * (0.5 - p);
        info[i][i] += prior * p * (1.0 - p);
    }
    (gradient, info)
}

/// The inverse of a symmetric positive-definite matrix by Gauss-Jordan elimination with partial
/// pivoting; `None` if it is (numerically) singular.
fn invert(matrix: &[Vec<f64>]) -> Option<Vec<Vec<f64>>> {
    let n = matrix.len();
    let mut a: Vec<Vec<f64>> = matrix
        .iter()
        .enumerate()
        .map(|(i, row)| {
            let mut r = row.clone();
            r.extend((0..n).map(|j| if i == j { 1.0 } else { 0.0 }));
            r
        })
        .collect();
    for col in 0..n {
        let pivot = (col..n).max_by(|&x, &y| a[x][col].abs().total_cmp(&a[y][col].abs()))?;
        if a[pivot][col].abs() < 1e-12 {
            return None;
        }
        a.swap(col, pivot);
        let p = a[col][col];
        for v in a[col].iter_mut() {
            *v /= p;
        }
        let pivot_row = a[col].clone();
        for (r, row) in a.iter_mut().enumerate() {
            if r != col {
                let f = row[col];
                if f != 0.0 {
                    for (v, pv) in row.iter_mut().zip(&pivot_row) {
                        *v -= f * pv;
                    }
                }
            }
        }
    }
    Some(a.into_iter().map(|row| row[n..].to_vec()).collect())
}

/// Fits ratings for `players` bots from `games` = (first index, second index, first's score
/// 1 / 0.5 / 0). Games naming an index ≥ `players`, or a bot against itself, are ignored.
pub fn estimate(
    players: usize,
    games: &[(usize, usize, f64)],
    options: &EloOptions,
) -> Vec<EloEstimate> {
    if players == 0 {
        return Vec::new();
    }
    let prior = if options.prior_draws.is_finite() && options.prior_draws > 0.0 {
        options.prior_draws
    } else {
        1e-6
    };
    let n = players;
    let mut theta = vec![0.0; n];
    let mut current = log_likelihood(&theta, games, prior);
    for _ in 0..200 {
        let (gradient, info) = gradient_and_information(&theta, games, prior);
        let Some(inverse) = invert(&info) else { break };
        let step: Vec<f64> = inverse
            .iter()
            .map(|row| row.iter().zip(&gradient).map(|(x, g)| x * g).sum())
            .collect();
        // Damped Newton: halve the step until the likelihood does not decrease.
        let mut scale = 1.0;
        let mut accepted = false;
        for _ in 0..40 {
            let candidate: Vec<f64> = theta
                .iter()
                .zip(&step)
                .map(|(t, s)| t + scale * s)
                .collect();
            let value = log_likelihood(&candidate, games, prior);
            if value >= current - 1e-12 {
                theta = candidate;
                current = value;
                accepted = true;
                break;
            }
            scale /= 2.0;
        }
        let largest = step.iter().fold(0.0_f64, |m, s| m.max((scale * s).abs()));
        if !accepted || largest < 1e-10 {
            break;
        }
    }
    let (_, info) = gradient_and_information(&theta, games, prior);
    let covariance = invert(&info);
    let mean = theta.iter().sum::<f64>() / n as f64;
    let k = elo_per_theta();
    (0..n)
        .map(|i| {
            // Var(θ_i − mean θ) = cᵀ Σ c with c = e_i − 1/n.
            let variance = covariance.as_ref().map_or(0.0, |cov| {
                let c = |j: usize| if j == i { 1.0 } else { 0.0 } - 1.0 / n as f64;
                let mut v = 0.0;
                for (j, row) in cov.iter().enumerate() {
                    for (l, x) in row.iter().enumerate() {
                        v += c(j) * x * c(l);
                    }
                }
                v.max(0.0)
            });
            let rating = options.anchor + (theta[i] - mean) * k;
            let standard_error = variance.sqrt() * k;
            EloEstimate {
                rating,
                standard_error,
                low: rating - 1.96 * standard_error,
                high: rating + 1.96 * standard_error,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Solves f(x) = 0 by bisection for an f that decreases from positive to negative on [lo, hi].
    fn bisect(f: impl Fn(f64) -> f64, mut lo: f64, mut hi: f64) -> f64 {
        for _ in 0..200 {
            let mid = (lo + hi) / 2.0;
            if f(mid) > 0.0 {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        (lo + hi) / 2.0
    }

    fn three_one() -> Vec<(usize, usize, f64)> {
        vec![(0, 1, 1.0), (1, 0, 0.0), (0, 1, 1.0), (1, 0, 1.0)]
    }

    #[test]
    fn three_to_one_with_a_negligible_prior_is_400_log10_3() {
        let options = EloOptions {
            prior_draws: 1e-6,
            ..EloOptions::default()
        };
        let r = estimate(2, &three_one(), &options);
        let difference = r[0].rating - r[1].rating;
        let expected = 400.0 * 3f64.log10();
        assert!((difference - expected).abs() < 0.05, "{difference}");
        assert!((r[0].rating + r[1].rating - 3000.0).abs() < 1e-6);
    }

    #[test]
    fn three_to_one_with_the_default_prior_solves_the_score_equation() {
        let r = estimate(2, &three_one(), &EloOptions::default());
        let difference = r[0].rating - r[1].rating;
        // By symmetry θ_a = d/2 = −θ_b; bot a's score equation with one virtual draw at θ = 0:
        // 3 − 4σ(d) + (0.5 − σ(d/2)) = 0.
        let d = bisect(
            |d| 3.0 - 4.0 * logistic(d) + 0.5 - logistic(d / 2.0),
            0.0,
            10.0,
        );
        let expected = d * elo_per_theta();
        assert!(
            (difference - expected).abs() < 0.01,
            "{difference} vs {expected}"
        );
        assert!(
            difference < 400.0 * 3f64.log10(),
            "the prior pulls towards equality"
        );
    }

    #[test]
    fn a_cycle_and_equal_records_give_equal_ratings() {
        let cycle = [(0, 1, 1.0), (1, 2, 1.0), (2, 0, 1.0)];
        for r in estimate(3, &cycle, &EloOptions::default()) {
            assert!((r.rating - 1500.0).abs() < 1e-6, "{r:?}");
        }
        let drawn = [(0, 1, 0.5), (1, 0, 0.5)];
        let r = estimate(2, &drawn, &EloOptions::default());
        assert!((r[0].rating - r[1].rating).abs() < 1e-9);
        assert!((r[0].standard_error - r[1].standard_error).abs() < 1e-9);
    }

    #[test]
    fn undefeated_and_winless_bots_stay_finite() {
        let games = vec![(0, 1, 1.0); 20];
        let r = estimate(2, &games, &EloOptions::default());
        assert!(r.iter().all(|e| e.rating.is_finite() && e.high.is_finite()));
        assert!(r[0].rating > r[1].rating + 400.0, "{r:?}");
    }

    #[test]
    fn intervals_shrink_with_more_games() {
        let small = estimate(2, &three_one(), &EloOptions::default());
        let many: Vec<_> = three_one().into_iter().cycle().take(40).collect();
        let large = estimate(2, &many, &EloOptions::default());
        let width = |e: &EloEstimate| e.high - e.low;
        assert!(width(&large[0]) < width(&small[0]) / 2.0);
        assert!(width(&small[0]) > 0.0);
    }

    #[test]
    fn stronger_records_rank_higher_and_the_mean_is_the_anchor() {
        // 0 beats everyone, 1 beats 2 and 3, 2 beats 3.
        let games = [
            (0, 1, 1.0),
            (0, 2, 1.0),
            (0, 3, 1.0),
            (1, 2, 1.0),
            (1, 3, 1.0),
            (2, 3, 1.0),
        ];
        let r = estimate(4, &games, &EloOptions::default());
        assert!(
            r[0].rating > r[1].rating && r[1].rating > r[2].rating && r[2].rating > r[3].rating
        );
        let mean = r.iter().map(|e| e.rating).sum::<f64>() / 4.0;
        assert!((mean - 1500.0).abs() < 1e-6);
        assert!(estimate(0, &games, &EloOptions::default()).is_empty());
    }
}
