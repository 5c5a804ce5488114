//! Match statistics, pure arithmetic: Elo difference from a score with its 95% interval, the
//! likelihood of superiority (LOS), and the sequential probability ratio test (SPRT) on the
//! pentanomial counts of game pairs, as fastchess and OpenBench compute them (the "normalised"
//! GSPRT: the log-likelihood ratio is approximated from the mean and variance of the pair
//! scores). No I/O, no clocks.

/// The standard normal quantile of 97.5% (two-sided 95% interval).
pub const Z_95: f64 = 1.959_963_984_540_054;

/// Win, draw and loss counts, seen from the first engine.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Wdl {
    pub wins: u32,
    pub draws: u32,
    pub losses: u32,
}

impl Wdl {
    pub fn games(&self) -> u32 {
        self.wins + self.draws + self.losses
    }

    /// Points over games (0 to 1); 0.5 with no games.
    pub fn score(&self) -> f64 {
        let n = self.games();
        if n == 0 {
            return 0.5;
        }
        (f64::from(self.wins) + 0.5 * f64::from(self.draws)) / f64::from(n)
    }
}

/// Game pairs (the two games of one opening, colours reversed) by the first engine's points in
/// the pair: `[0, 0.5, 1, 1.5, 2]` points, i.e. LL, LD, (WL or DD), WD, WW.
pub type Pentanomial = [u32; 5];

/// The per-sample scores of a pentanomial pair, as a fraction of the pair's two games.
const PAIR_SCORES: [f64; 5] = [0.0, 0.25, 0.5, 0.75, 1.0];

/// Mean and variance of one sample (a game or a pair), and how many samples there are.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Moments {
    pub mean: f64,
    /// Variance of one sample's score.
    pub variance: f64,
    pub samples: f64,
}

impl Moments {
    fn of(counts: &[u32], scores: &[f64]) -> Option<Moments> {
        let counts: Vec<f64> = counts.iter().map(|&c| f64::from(c)).collect();
        Moments::of_real(&counts, scores)
    }

    fn of_real(counts: &[f64], scores: &[f64]) -> Option<Moments> {
        let samples: f64 = counts.iter().sum();
        if samples <= 0.0 {
            return None;
        }
        let mean = counts.iter().zip(scores).map(|(c, s)| c * s).sum::<f64>() / samples;
        let variance = counts
            .iter()
            .zip(scores)
            .map(|(c, s)| c * (s - mean).powi(2))
            .sum::<f64>()
            / samples;
        Some(Moments {
            mean,
            variance,
            samples,
        })
    }

    /// From win/draw/loss counts (one sample per game).
    pub fn trinomial(wdl: Wdl) -> Option<Moments> {
        Moments::of(&[wdl.losses, wdl.draws, wdl.wins], &[0.0, 0.5, 1.0])
    }

    /// From pentanomial counts (one sample per game pair, scored 0 to 1).
    pub fn pentanomial(pairs: &Pentanomial) -> Option<Moments> {
        Moments::of(pairs, &PAIR_SCORES)
    }

    /// As [`Moments::pentanomial`], each empty count taken as 0.001 pairs (OpenBench's
    /// regularisation for the SPRT).
    pub fn regularized(pairs: &Pentanomial) -> Option<Moments> {
        let counts: Vec<f64> = pairs.iter().map(|&c| f64::from(c).max(1e-3)).collect();
        Moments::of_real(&counts, &PAIR_SCORES)
    }

    /// Standard error of the mean.
    pub fn std_error(&self) -> f64 {
        (self.variance / self.samples).sqrt()
    }
}

/// The logistic Elo difference of a score (0 to 1); infinite at 0 and 1.
pub fn elo_of_score(score: f64) -> f64 {
    if score <= 0.0 {
        return f64::NEG_INFINITY;
    }
    if score >= 1.0 {
        return f64::INFINITY;
    }
    -400.0 * (1.0 / score - 1.0).log10()
}

/// The expected score of a logistic Elo difference.
pub fn score_of_elo(elo: f64) -> f64 {
    1.0 / (1.0 + 10f64.powf(-elo / 400.0))
}

/// Φ, the standard normal distribution function.
fn normal_cdf(x: f64) -> f64 {
    0.5 * (1.0 + erf(x / std::f64::consts::SQRT_2))
}

/// The error function, from the Chebyshev fit of erfc in Numerical Recipes (fractional error
/// below 1.2e-7 everywhere).
fn erf(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t
        * (-z * z - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98
                                    + t * (1.488_515_87
                                        + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    if x >= 0.0 {
        1.0 - r
    } else {
        r - 1.0
    }
}

/// Elo difference, its 95% interval and the likelihood of superiority.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EloEstimate {
    pub elo: f64,
    pub low: f64,
    pub high: f64,
    /// Probability (0 to 1) that the first engine is the stronger.
    pub los: f64,
}

impl EloEstimate {
    /// From the moments of the samples: the interval is the score's mean ± 1.96 standard
    /// errors, turned into Elo; LOS is Φ((mean − ½) / standard error).
    pub fn of(m: Moments) -> EloEstimate {
        let se = m.std_error();
        let los = if se > 0.0 {
            normal_cdf((m.mean - 0.5) / se)
        } else if m.mean > 0.5 {
            1.0
        } else if m.mean < 0.5 {
            0.0
        } else {
            0.5
        };
        EloEstimate {
            elo: elo_of_score(m.mean),
            low: elo_of_score(m.mean - Z_95 * se),
            high: elo_of_score(m.mean + Z_95 * se),
            los,
        }
    }
}

/// Which Elo the SPRT bounds are in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SprtModel {
    /// Normalised Elo (fastchess's default, OpenBench): bounds scale with the observed spread.
    Normalized,
    /// Plain logistic Elo.
    Logistic,
}

/// `--sprt elo0=…,elo1=…,alpha=…,beta=…[,model=normalized|logistic]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SprtSpec {
    pub elo0: f64,
    pub elo1: f64,
    pub alpha: f64,
    pub beta: f64,
    pub model: SprtModel,
}

/// Why an SPRT spec was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--sprt: {0}")]
pub struct SprtSpecError(String);

impl std::str::FromStr for SprtSpec {
    type Err = SprtSpecError;
    fn from_str(text: &str) -> Result<SprtSpec, SprtSpecError> {
        let mut spec = SprtSpec {
            elo0: 0.0,
            elo1: 5.0,
            alpha: 0.05,
            beta: 0.05,
            model: SprtModel::Normalized,
        };
        let pairs =
            crate::options_text::read_list(text).map_err(|e| SprtSpecError(e.to_string()))?;
        for crate::options_text::Pair { key, value, .. } in pairs {
            if key == "model" {
                spec.model = match value {
                    "normalized" | "normalised" => SprtModel::Normalized,
                    "logistic" => SprtModel::Logistic,
                    _ => {
                        return Err(SprtSpecError(format!(
                            "model {value:?}: expected normalized or logistic"
                        )))
                    }
                };
                continue;
            }
            let number: f64 = value
                .parse()
                .ok()
                .filter(|v: &f64| v.is_finite())
                .ok_or_else(|| SprtSpecError(format!("{key}: {value:?} is not a number")))?;
            match key {
                "elo0" => spec.elo0 = number,
                "elo1" => spec.elo1 = number,
                "alpha" => spec.alpha = number,
                "beta" => spec.beta = number,
                _ => {
                    return Err(SprtSpecError(format!(
                        "unknown key {key:?} (expected elo0, elo1, alpha, beta, model)"
                    )))
                }
            }
        }
        if spec.elo1 <= spec.elo0 {
            return Err(SprtSpecError(format!(
                "elo1 ({}) must be greater than elo0 ({}); a key left out takes its default \
                 (elo0=0, elo1=5, alpha=0.05, beta=0.05)",
                spec.elo1, spec.elo0
            )));
        }
        for (name, p) in [("alpha", spec.alpha), ("beta", spec.beta)] {
            if !(p > 0.0 && p < 0.5) {
                return Err(SprtSpecError(format!("{name} must be between 0 and 0.5")));
            }
        }
        Ok(spec)
    }
}

/// The test's state: log-likelihood ratio, its bounds and the decision.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SprtResult {
    pub llr: f64,
    pub lower: f64,
    pub upper: f64,
    /// `Some(false)`: H0 accepted (not stronger by elo1), `Some(true)`: H1 accepted.
    pub decision: Option<bool>,
}

impl SprtSpec {
    /// ln(β / (1 − α)): at or below it, H0 is accepted.
    pub fn lower(&self) -> f64 {
        (self.beta / (1.0 - self.alpha)).ln()
    }

    /// ln((1 − β) / α): at or above it, H1 is accepted.
    pub fn upper(&self) -> f64 {
        ((1.0 - self.beta) / self.alpha).ln()
    }

    /// The log-likelihood ratio of the pentanomial counts (0 while there is no pair). As
    /// OpenBench does, every empty count is taken as 0.001 pairs, so that a one-sided run (every
    /// pair won twice: no spread at all) still builds evidence instead of staying at 0:
    /// `LLR = N · (s1 − s0) · (2·mean − s0 − s1) / (2·variance)`, with the pair scores' mean and
    /// variance, and s0, s1 the scores of elo0, elo1 (normalised: `s = ½ + nElo · √(2·variance)
    /// · ln10 / 800`, per-game spread being √2 times the pair's).
    pub fn llr(&self, pairs: &Pentanomial) -> f64 {
        if pairs.iter().all(|&c| c == 0) {
            return 0.0;
        }
        let Some(m) = Moments::regularized(pairs) else {
            return 0.0;
        };
        if m.variance <= 0.0 {
            return 0.0;
        }
        let (s0, s1) = match self.model {
            SprtModel::Normalized => {
                let scale = (2.0 * m.variance).sqrt() * std::f64::consts::LN_10 / 800.0;
                (0.5 + self.elo0 * scale, 0.5 + self.elo1 * scale)
            }
            SprtModel::Logistic => (score_of_elo(self.elo0), score_of_elo(self.elo1)),
        };
        m.samples * (s1 - s0) * (2.0 * m.mean - s0 - s1) / (2.0 * m.variance)
    }

    pub fn result(&self, pairs: &Pentanomial) -> SprtResult {
        let llr = self.llr(pairs);
        let (lower, upper) = (self.lower(), self.upper());
        let decision = if llr >= upper {
            Some(true)
        } else if llr <= lower {
            Some(false)
        } else {
            None
        };
        SprtResult {
            llr,
            lower,
            upper,
            decision,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tolerance: f64) -> bool {
        (a - b).abs() <= tolerance
    }

    #[test]
    fn elo_and_score_invert_each_other() {
        assert!(close(elo_of_score(0.5), 0.0, 1e-12));
        // 0.75 = 1 / (1 + 10^(-elo/400)) → elo = 400·log10(3) = 190.848...
        assert!(close(elo_of_score(0.75), 190.848_501_887_864_9, 1e-9));
        assert!(close(score_of_elo(190.848_501_887_864_9), 0.75, 1e-12));
        assert_eq!(elo_of_score(1.0), f64::INFINITY);
        assert_eq!(elo_of_score(0.0), f64::NEG_INFINITY);
    }

    #[test]
    fn normal_cdf_matches_tables() {
        assert!(close(normal_cdf(0.0), 0.5, 1e-7));
        assert!(close(normal_cdf(1.0), 0.841_344_746, 1e-6));
        assert!(close(normal_cdf(-1.959_964), 0.025, 1e-6));
        assert!(close(normal_cdf(3.0), 0.998_650_102, 1e-6));
    }

    /// 6 wins, 2 draws, 2 losses: mean 0.7, per-game variance
    /// (6·0.3² + 2·0.2² + 2·0.7²)/10 = (0.54 + 0.08 + 0.98)/10 = 0.16, se = √(0.016) = 0.126491;
    /// interval 0.7 ± 0.247918 = [0.452082, 0.947918] = [-33.40, +504.03] Elo; Elo 400·log10(7/3) =
    /// 147.19;
    /// LOS Φ(0.2 / 0.126491) = Φ(1.581139) = 0.943077.
    #[test]
    fn trinomial_estimate_by_hand() {
        let m = Moments::trinomial(Wdl {
            wins: 6,
            draws: 2,
            losses: 2,
        })
        .unwrap();
        assert!(close(m.mean, 0.7, 1e-12));
        assert!(close(m.variance, 0.16, 1e-12));
        let e = EloEstimate::of(m);
        assert!(close(e.elo, 147.190_714, 1e-5), "{}", e.elo);
        assert!(close(e.low, -33.399_35, 1e-4), "{}", e.low);
        assert!(close(e.high, 504.033_29, 1e-4), "{}", e.high);
        assert!(close(e.los, 0.943_077, 1e-5), "{}", e.los);
    }

    /// Pairs LL 1, LD 2, WL/DD 3, WD 2, WW 2 (10 pairs): mean (0 + 0.5 + 1.5 + 1.5 + 2)/10 =
    /// 0.55; variance (1·0.3025 + 2·0.09 + 3·0.0025 + 2·0.04 + 2·0.2025)/10 = 0.0975.
    #[test]
    fn pentanomial_moments_by_hand() {
        let m = Moments::pentanomial(&[1, 2, 3, 2, 2]).unwrap();
        assert!(close(m.mean, 0.55, 1e-12));
        assert!(close(m.variance, 0.0975, 1e-12));
        assert_eq!(m.samples, 10.0);
        assert!(Moments::pentanomial(&[0; 5]).is_none());
    }

    #[test]
    fn sprt_bounds_are_walds() {
        let spec: SprtSpec = "elo0=0,elo1=5,alpha=0.05,beta=0.05".parse().unwrap();
        // ln(0.05/0.95) = -2.944439, ln(0.95/0.05) = 2.944439.
        assert!(close(spec.lower(), -2.944_438_979, 1e-8));
        assert!(close(spec.upper(), 2.944_438_979, 1e-8));
        let spec: SprtSpec = "elo0=-1,elo1=4,alpha=0.1,beta=0.2".parse().unwrap();
        assert!(close(spec.lower(), (0.2f64 / 0.9).ln(), 1e-12));
        assert!(close(spec.upper(), (0.8f64 / 0.1).ln(), 1e-12));
    }

    /// Second implementation (worked in Python, independently of this code):
    /// counts [1,2,3,2,2], mean 0.55, variance 0.0975; normalised elo0=0, elo1=5:
    /// scale = √0.195 · ln10 / 800 = 0.001270959...; s0 = 0.5, s1 = 0.506354797;
    /// LLR = 10 · 0.006354797 · (1.1 − 1.006354797) / 0.195 = 0.030518...
    #[test]
    fn normalised_llr_matches_a_second_implementation() {
        let spec: SprtSpec = "elo0=0,elo1=5,alpha=0.05,beta=0.05".parse().unwrap();
        let llr = spec.llr(&[1, 2, 3, 2, 2]);
        let scale = 0.195f64.sqrt() * std::f64::consts::LN_10 / 800.0;
        let s1 = 0.5 + 5.0 * scale;
        let by_hand = 10.0 * (s1 - 0.5) * (1.1 - 0.5 - s1) / 0.195;
        assert!(close(llr, by_hand, 1e-12));
        assert!(close(llr, 0.030_518, 2e-6), "{llr}");
    }

    /// Logistic bounds: elo0=0 → 0.5, elo1=10 → 0.514387; with [1,2,3,2,2]:
    /// LLR = 10 · 0.014387 · (1.1 − 1.014387) / 0.195 = 0.063166...
    #[test]
    fn logistic_llr_by_hand() {
        let spec: SprtSpec = "elo0=0,elo1=10,model=logistic".parse().unwrap();
        let s1 = score_of_elo(10.0);
        assert!(close(s1, 0.514_387_4, 1e-6));
        let llr = spec.llr(&[1, 2, 3, 2, 2]);
        assert!(close(llr, 10.0 * (s1 - 0.5) * (0.6 - s1) / 0.195, 1e-12));
        assert!(close(llr, 0.063_166, 5e-6), "{llr}");
    }

    #[test]
    fn a_lopsided_run_accepts_h1_and_a_losing_one_h0() {
        let spec: SprtSpec = "elo0=0,elo1=10,alpha=0.05,beta=0.05".parse().unwrap();
        // Mostly WW pairs with a few WL: far above elo1.
        let strong = spec.result(&[0, 0, 3, 0, 30]);
        assert_eq!(strong.decision, Some(true), "{strong:?}");
        let weak = spec.result(&[30, 0, 3, 0, 0]);
        assert_eq!(weak.decision, Some(false), "{weak:?}");
        let early = spec.result(&[0, 0, 1, 0, 1]);
        assert_eq!(early.decision, None, "{early:?}");
        assert_eq!(spec.llr(&[0; 5]), 0.0);
        // Every pair won twice: no spread, but the regularised counts still decide, within a
        // handful of pairs (1 pair: LLR ≈ 0.47, not yet).
        assert_eq!(spec.result(&[0, 0, 0, 0, 1]).decision, None);
        assert_eq!(spec.result(&[0, 0, 0, 0, 6]).decision, Some(true));
        assert_eq!(spec.result(&[6, 0, 0, 0, 0]).decision, Some(false));
    }

    #[test]
    fn an_elo0_alone_above_the_default_elo1_says_the_defaults() {
        let err = "elo0=10".parse::<SprtSpec>().unwrap_err().to_string();
        assert!(
            err.contains("elo1 (5) must be greater than elo0 (10)"),
            "{err}"
        );
        assert!(err.contains("elo1=5, alpha=0.05"), "{err}");
    }

    #[test]
    fn bad_specs_are_refused() {
        for bad in [
            "elo0=5,elo1=0",
            "alpha=0.7",
            "beta=0",
            "elo0=x",
            "gamma=1",
            "elo0",
            "model=bayes",
        ] {
            assert!(bad.parse::<SprtSpec>().is_err(), "{bad}");
        }
    }
}
